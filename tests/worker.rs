//! The image worker against the fake ComfyUI and the fake images endpoint on 127.0.0.1, with the
//! real storage (a SQLite file; PostgreSQL for the two-worker test): every failure class reaches
//! the stored result (what the model sees next), the thought log and the channel as SPEC S5, T8
//! and T11 say; crashes are taken over without posting twice.

// The shared fakes this binary uses (tests/support/). Public, so that what it leaves
// unused of them is not dead code.
pub mod support {
    pub mod db;
    pub mod fake_images;
}

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use persona_bot::config::{Config, ImageWorkerConfig};
use persona_bot::domain::ports::{
    GeneratedImage, ImageBackend, ImagePoster, ImageRequest, NewImagePlan, PlanId, PlanStore,
    Posted, TaskStore,
};
use persona_bot::domain::scope::{ChannelId, MessageId, PersonaId, ServerId, UserId, Visibility};
use persona_bot::domain::thought_log::Notice;
use persona_bot::domain::turn::TurnId;
use persona_bot::engine::image_worker::{Handled, ImageWorker, WorkerPorts};
use persona_bot::locale::Locale;
use persona_bot::media::comfyui::ComfyUi;
use persona_bot::media::openai_images::OpenAiImages;
use persona_bot::storage::Storage;
use persona_bot::testkit::{ManualClock, RecordingSink, RecordingThoughtLog};
use secrecy::SecretString;
use serde_json::Value;
use support::db::TestDb;
use support::fake_images::{COMFY_SECRET_MODEL, ComfyMode, FakeComfy, FakeImages, ImagesMode};
use tokio_util::sync::CancellationToken;

const CHANNEL: ChannelId = ChannelId(20);

/// Posts like Discord: a repeated nonce is not posted again.
#[derive(Default)]
struct Poster {
    posts: Mutex<Vec<(ChannelId, usize, Option<String>)>>,
    nonces: Mutex<HashSet<String>>,
}

impl Poster {
    fn posts(&self) -> Vec<(ChannelId, usize, Option<String>)> {
        self.posts.lock().unwrap().clone()
    }
}

#[async_trait]
impl ImagePoster for Poster {
    async fn post_image(
        &self,
        channel: ChannelId,
        image: &GeneratedImage,
        caption: Option<&str>,
        nonce: &str,
    ) -> Posted {
        let id = MessageId(5_000 + self.posts.lock().unwrap().len() as u64);
        if self.nonces.lock().unwrap().insert(nonce.to_owned()) {
            self.posts.lock().unwrap().push((
                channel,
                image.bytes.len(),
                caption.map(str::to_owned),
            ));
        }
        Posted::Confirmed(id)
    }
}

struct Rig {
    storage: Storage,
    poster: Arc<Poster>,
    sink: Arc<RecordingSink>,
    thought_log: Arc<RecordingThoughtLog>,
    clock: Arc<ManualClock>,
    config: ImageWorkerConfig,
    _db: TestDb,
}

fn worker_config() -> ImageWorkerConfig {
    persona_bot::app::install_crypto_provider();
    let mut config = Config::shipped_defaults().image_worker;
    config.timeout_secs = 1;
    config.lease_secs = 60;
    config.max_attempts = 2;
    config.retry_backoff_secs = 10;
    config
}

impl Rig {
    async fn new(db: TestDb) -> Self {
        persona_bot::telemetry::init_for_tests();
        let storage = db.open().await;
        let clock = Arc::new(ManualClock::default());
        clock.set(1_000_000);
        Self {
            storage,
            poster: Arc::default(),
            sink: Arc::default(),
            thought_log: Arc::default(),
            clock,
            config: worker_config(),
            _db: db,
        }
    }

    fn worker(&self, id: &str, backend: Arc<dyn ImageBackend>) -> ImageWorker {
        ImageWorker::new(
            id,
            WorkerPorts {
                tasks: self.storage.plans.clone(),
                plans: self.storage.plans.clone(),
                backend,
                poster: self.poster.clone(),
                sink: self.sink.clone(),
                thought_log: self.thought_log.clone(),
                clock: self.clock.clone(),
            },
            self.config.clone(),
        )
    }

    async fn plan(&self, prompt: &str, visibility: Visibility) -> PlanId {
        let id = PlanId(uuid::Uuid::now_v7().to_string());
        self.storage
            .plans
            .record_plan(NewImagePlan {
                id: id.clone(),
                turn: TurnId::new(),
                server: Some(ServerId(10)),
                channel: CHANNEL,
                user: UserId(30),
                persona: PersonaId("aria".into()),
                prompt: prompt.into(),
                caption: Some("Here you go".into()),
                aspect: "landscape".into(),
                part: None,
                at_ms: self.clock_now(),
                visibility,
                locale: Locale::Ja,
            })
            .await
            .unwrap();
        id
    }

    fn clock_now(&self) -> i64 {
        use persona_bot::domain::ports::Clock;
        self.clock.now_ms()
    }

    async fn result_of(&self, plan: &PlanId) -> (String, Option<Value>) {
        let results = self
            .storage
            .plans
            .results_since(CHANNEL, 0, 100)
            .await
            .unwrap();
        let r = results
            .into_iter()
            .find(|r| &r.plan == plan)
            .expect("a finished task");
        (r.status, r.result)
    }
}

/// The shipped image bound.
const IMAGE_MAX: usize = 16 << 20;

fn comfy(fake: &FakeComfy) -> Arc<dyn ImageBackend> {
    persona_bot::app::install_crypto_provider();
    let workflow: Value =
        serde_json::from_str(include_str!("../config/comfyui_workflow.json")).unwrap();
    Arc::new(ComfyUi::new(&fake.base_url, workflow, IMAGE_MAX).unwrap())
}

fn images(fake: &FakeImages) -> Arc<dyn ImageBackend> {
    persona_bot::app::install_crypto_provider();
    Arc::new(
        OpenAiImages::new(
            &fake.base_url,
            "gpt-image-1",
            Some(SecretString::from("img-key".to_owned())),
            IMAGE_MAX,
        )
        .unwrap(),
    )
}

async fn once(worker: &ImageWorker) -> Handled {
    worker.run_once(&CancellationToken::new()).await
}

// SPEC S5: a planned image is made on ComfyUI and posted; the plan's prompt and size reach the
// workflow; the result is kept for the channel's next turn.
#[tokio::test]
async fn a_planned_image_is_made_on_comfyui_and_posted() {
    let rig = Rig::new(TestDb::sqlite().await).await;
    let fake = FakeComfy::start().await;
    let plan = rig.plan("a fox in the snow", Visibility::Public).await;
    let worker = rig.worker("w1", comfy(&fake));
    assert_eq!(once(&worker).await, Handled::Posted);
    assert_eq!(
        rig.poster.posts(),
        vec![(CHANNEL, FakeComfy::png().len(), Some("Here you go".into()))]
    );
    let sent = &fake.prompts()[0]["prompt"];
    assert_eq!(sent["6"]["inputs"]["text"], "a fox in the snow");
    assert_eq!(sent["5"]["inputs"]["width"], 1216);
    assert_eq!(fake.views(), 1);
    let (status, result) = rig.result_of(&plan).await;
    assert_eq!(status, "done");
    assert_eq!(result.unwrap()["status"], "posted");
    assert_eq!(once(&worker).await, Handled::Idle, "nothing left");
}

// SPEC S5: a shutdown mid-generation is not a failure: the task is handed back, due at once,
// with no post, notice or channel line; the next worker makes the image.
#[tokio::test]
async fn a_shutdown_mid_generation_hands_the_task_back() {
    let rig = Rig::new(TestDb::sqlite().await).await;
    let fake = FakeComfy::start().await;
    fake.script(vec![ComfyMode::Slow(Duration::from_secs(30))]);
    let plan = rig.plan("a fox", Visibility::Public).await;
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        stop.cancel();
    });
    let worker = rig.worker("w1", comfy(&fake));
    assert_eq!(worker.run_once(&shutdown).await, Handled::Retrying);
    assert!(rig.poster.posts().is_empty());
    assert!(rig.thought_log.notices().is_empty());
    assert!(rig.sink.texts().is_empty());
    assert_eq!(
        rig.storage
            .plans
            .task_status(&plan)
            .await
            .unwrap()
            .as_deref(),
        Some("pending")
    );
    assert_eq!(once(&rig.worker("w2", comfy(&fake))).await, Handled::Posted);
    assert_eq!(rig.poster.posts().len(), 1);
}

// SPEC T8, T11: a missing ComfyUI model names the workflow's file, never the server's text; the
// failure reaches the stored result, the thought log and the channel (localized).
#[tokio::test]
async fn a_missing_model_names_only_the_workflow_file_everywhere() {
    let rig = Rig::new(TestDb::sqlite().await).await;
    let fake = FakeComfy::start().await;
    fake.set_mode(ComfyMode::MissingModel);
    let plan = rig.plan("a fox", Visibility::Public).await;
    assert_eq!(once(&rig.worker("w1", comfy(&fake))).await, Handled::Failed);
    let (status, result) = rig.result_of(&plan).await;
    assert_eq!(status, "failed");
    let payload = result.unwrap();
    assert_eq!(payload["status"], "tool_execution_failed");
    assert_eq!(payload["code"], "missing_model_file");
    assert!(
        payload["reason"]
            .as_str()
            .unwrap()
            .contains("sd_xl_base_1.0.safetensors")
    );
    assert_eq!(payload["suggested_actions"].as_array().unwrap().len(), 1);
    let everything = format!(
        "{payload} {:?} {:?}",
        rig.thought_log.notices(),
        rig.sink.texts()
    );
    assert!(
        !everything.contains(COMFY_SECRET_MODEL),
        "the endpoint's text leaked: {everything}"
    );
    let notices = rig.thought_log.notices();
    assert!(
        matches!(&notices[..], [(ServerId(10), Notice::ToolFailed { code, .. })] if code == "missing_model_file")
    );
    let told = rig.sink.texts();
    assert_eq!(told.len(), 1);
    assert!(told[0].text.contains("画像"), "Japanese: {}", told[0].text);
    assert!(rig.poster.posts().is_empty());
}

// SPEC T8: every failure class is classified from the backend's message before its status.
#[tokio::test]
async fn each_comfyui_failure_class_reaches_the_payload() {
    for (mode, code) in [
        (ComfyMode::ExhaustedBalance, "insufficient_balance"),
        (ComfyMode::SafetyRefusal, "safety_refusal"),
    ] {
        let rig = Rig::new(TestDb::sqlite().await).await;
        let fake = FakeComfy::start().await;
        fake.set_mode(mode);
        let plan = rig.plan("x", Visibility::Public).await;
        assert_eq!(
            once(&rig.worker("w", comfy(&fake))).await,
            Handled::Failed,
            "{code}: not retried"
        );
        let (_, result) = rig.result_of(&plan).await;
        assert_eq!(result.unwrap()["code"], code);
    }
}

// SPEC T8: passing failures (a 500, a hang) retry with backoff, then fail as themselves.
#[tokio::test]
async fn passing_failures_retry_with_backoff_then_fail() {
    let rig = Rig::new(TestDb::sqlite().await).await;
    let fake = FakeComfy::start().await;
    fake.script(vec![ComfyMode::ServerError, ComfyMode::Hang]);
    let plan = rig.plan("x", Visibility::Public).await;
    let worker = rig.worker("w", comfy(&fake));
    assert_eq!(once(&worker).await, Handled::Retrying);
    assert_eq!(once(&worker).await, Handled::Idle, "backing off");
    rig.clock.set(rig.clock_now() + 10_000);
    let started = std::time::Instant::now();
    assert_eq!(
        once(&worker).await,
        Handled::Failed,
        "the hang times out on the last attempt"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    let (_, result) = rig.result_of(&plan).await;
    assert_eq!(result.unwrap()["code"], "timeout");
}

// Configured durations too long for the clock saturate: a retry far in the future, not an
// arithmetic panic in the worker.
#[tokio::test]
async fn huge_configured_backoff_and_lease_saturate() {
    persona_bot::app::install_crypto_provider();
    let mut rig = Rig::new(TestDb::sqlite().await).await;
    rig.config.retry_backoff_secs = u64::MAX;
    rig.config.lease_secs = u64::MAX;
    let fake = FakeComfy::start().await;
    fake.script(vec![ComfyMode::ServerError]);
    rig.plan("x", Visibility::Public).await;
    let worker = rig.worker("w", comfy(&fake));
    assert_eq!(once(&worker).await, Handled::Retrying);
    rig.clock.set(rig.clock_now() + 86_400_000 * 365);
    assert_eq!(once(&worker).await, Handled::Idle, "still backing off");
}

// An image answer larger than image_worker.max_image_bytes fails the task with a reason that says
// so, from either backend, instead of being read whole.
#[tokio::test]
async fn an_image_past_the_size_bound_fails_and_says_so() {
    persona_bot::app::install_crypto_provider();
    let comfy_fake = FakeComfy::start().await;
    comfy_fake.script(vec![ComfyMode::Success]);
    let workflow: Value =
        serde_json::from_str(include_str!("../config/comfyui_workflow.json")).unwrap();
    let small = FakeComfy::png().len() - 1;
    let comfy = ComfyUi::new(&comfy_fake.base_url, workflow, small).unwrap();
    let images_fake = FakeImages::start().await;
    images_fake.script(vec![ImagesMode::Success]);
    let images = OpenAiImages::new(&images_fake.base_url, "gpt-image-1", None, 64).unwrap();
    let request = ImageRequest {
        prompt: "an owl".into(),
        aspect: "square".into(),
        seed: 1,
    };
    let cancel = CancellationToken::new();
    let comfy_failure = comfy.generate(&request, &cancel).await.unwrap_err();
    assert!(
        comfy_failure
            .message
            .contains(&format!("larger than {small} bytes")),
        "{comfy_failure:?}"
    );
    let images_failure = images.generate(&request, &cancel).await.unwrap_err();
    assert!(
        images_failure.message.contains("larger than 64 bytes"),
        "{images_failure:?}"
    );
    let whole = ComfyUi::new(
        &comfy_fake.base_url,
        serde_json::from_str(include_str!("../config/comfyui_workflow.json")).unwrap(),
        small + 1,
    )
    .unwrap();
    comfy_fake.script(vec![ComfyMode::Success]);
    assert_eq!(
        whole.generate(&request, &cancel).await.unwrap().bytes,
        FakeComfy::png(),
        "an image of exactly the bound is read whole"
    );
}

// SPEC T8: the OpenAI-compatible images endpoint: success, exhausted balance (429), safety.
#[tokio::test]
async fn the_images_endpoint_makes_images_and_classifies_failures() {
    let rig = Rig::new(TestDb::sqlite().await).await;
    let fake = FakeImages::start().await;
    fake.script(vec![
        ImagesMode::Success,
        ImagesMode::ExhaustedBalance,
        ImagesMode::SafetyRefusal,
    ]);
    let worker = rig.worker("w", images(&fake));
    let ok = rig.plan("an owl", Visibility::Public).await;
    assert_eq!(once(&worker).await, Handled::Posted);
    assert_eq!(rig.poster.posts()[0].1, FakeComfy::png().len());
    let balance = rig.plan("two", Visibility::Public).await;
    assert_eq!(once(&worker).await, Handled::Failed);
    let safety = rig.plan("three", Visibility::Public).await;
    assert_eq!(once(&worker).await, Handled::Failed);
    assert_eq!(rig.result_of(&ok).await.0, "done");
    assert_eq!(
        rig.result_of(&balance).await.1.unwrap()["code"],
        "insufficient_balance"
    );
    assert_eq!(
        rig.result_of(&safety).await.1.unwrap()["code"],
        "safety_refusal"
    );
    let (auth, body) = &fake.requests()[0];
    assert_eq!(auth.as_deref(), Some("Bearer img-key"));
    assert_eq!(body["size"], "1536x1024");
}

// SPEC T11: nothing from a private channel is mirrored to the thought log.
#[tokio::test]
async fn a_private_channel_failure_is_not_mirrored() {
    let rig = Rig::new(TestDb::sqlite().await).await;
    let fake = FakeComfy::start().await;
    fake.set_mode(ComfyMode::SafetyRefusal);
    rig.plan("x", Visibility::Private).await;
    assert_eq!(once(&rig.worker("w", comfy(&fake))).await, Handled::Failed);
    assert!(rig.thought_log.notices().is_empty());
    assert_eq!(rig.sink.texts().len(), 1, "the channel is still told");
}

// SPEC S5: a worker that crashes mid-task is taken over after its lease; the image is posted
// once, even when the crash came after the post.
#[tokio::test]
async fn a_crashed_worker_is_taken_over_without_posting_twice() {
    let rig = Rig::new(TestDb::sqlite().await).await;
    let fake = FakeComfy::start().await;
    fake.script(vec![ComfyMode::Slow(Duration::from_secs(30))]);
    let plan = rig.plan("x", Visibility::Public).await;
    let crashed = rig.worker("crashed", comfy(&fake));
    // It claims, starts the image, and dies (its future is dropped).
    let _ = tokio::time::timeout(Duration::from_millis(300), once(&crashed)).await;
    let other = rig.worker("other", comfy(&fake));
    assert_eq!(once(&other).await, Handled::Idle, "still leased");
    rig.clock.set(rig.clock_now() + 61_000);
    assert_eq!(once(&other).await, Handled::Posted);
    assert_eq!(rig.poster.posts().len(), 1);
    assert_eq!(rig.result_of(&plan).await.0, "done");

    // A crash between posting and recording: the taker posts again with the same nonce, which
    // Discord (here, the poster) does not post twice.
    let second = rig.plan("y", Visibility::Public).await;
    let task = rig
        .storage
        .plans
        .claim("dying", rig.clock_now(), 60_000)
        .await
        .unwrap()
        .unwrap();
    rig.poster
        .nonces
        .lock()
        .unwrap()
        .insert(format!("plan-{}", task.id));
    rig.clock.set(rig.clock_now() + 61_000);
    assert_eq!(once(&other).await, Handled::Posted);
    assert_eq!(rig.poster.posts().len(), 1, "not posted a second time");
    assert_eq!(rig.result_of(&second).await.0, "done");
}

// SPEC S5: two workers on one PostgreSQL make each image exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(postgres_tests),
    ignore = "PostgreSQL suite: set TEST_POSTGRES_URL (scripts/test does) to run it"
)]
async fn two_workers_on_one_postgresql_make_each_image_once() {
    let db = TestDb::postgres().await;
    let url = db.url.clone();
    let rig = Rig::new(db).await;
    let second = Storage::open(&url, &support::db::config()).await.unwrap();
    let fake = FakeComfy::start().await;
    for i in 0..8 {
        rig.plan(&format!("image {i}"), Visibility::Public).await;
    }
    let one = Arc::new(rig.worker("p1", comfy(&fake)));
    let other = ImageWorker::new(
        "p2",
        WorkerPorts {
            tasks: second.plans.clone(),
            plans: second.plans.clone(),
            backend: comfy(&fake),
            poster: rig.poster.clone(),
            sink: rig.sink.clone(),
            thought_log: rig.thought_log.clone(),
            clock: rig.clock.clone(),
        },
        rig.config.clone(),
    );
    let other = Arc::new(other);
    let drain = |w: Arc<ImageWorker>| {
        tokio::spawn(async move {
            let mut made = 0;
            while once(&w).await != Handled::Idle {
                made += 1;
            }
            made
        })
    };
    let (a, b) = (drain(one), drain(other));
    let total = a.await.unwrap() + b.await.unwrap();
    assert_eq!(total, 8);
    assert_eq!(rig.poster.posts().len(), 8, "each image once");
    assert_eq!(fake.prompts().len(), 8, "each generated once");
    second.close().await;
}
