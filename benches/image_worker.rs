//! The image worker's own cost per task, on a SQLite file and on PostgreSQL: claim, read the
//! plan, generate (an instant in-process backend), post (an in-process poster that keeps one post
//! per nonce, like Discord) and record the result. It reports tasks per second for 1, 2 and 4
//! workers sharing one database, and checks every task was posted exactly once.
//!
//! Run: `cargo bench --bench image_worker`. PostgreSQL comes from `TEST_POSTGRES_URL` (default:
//! the local server); a fresh database is created and dropped.

// Public, so that what this bench leaves unused of it is not dead code.
pub mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use persona_bot::config::Config;
use persona_bot::domain::ports::{
    GeneratedImage, ImageBackend, ImagePoster, ImageRequest, NewImagePlan, PlanId, PlanStore,
    Posted, SystemClock,
};
use persona_bot::domain::provider_failure::ProviderFailure;
use persona_bot::domain::scope::{ChannelId, MessageId, PersonaId, ServerId, UserId, Visibility};
use persona_bot::domain::turn::TurnId;
use persona_bot::engine::image_worker::{Handled, ImageWorker, WorkerPorts};
use persona_bot::locale::Locale;
use persona_bot::storage::Storage;
use persona_bot::testkit::{RecordingSink, RecordingThoughtLog};
use tokio_util::sync::CancellationToken;

const TASKS: usize = 2_000;

struct Instantly;

#[async_trait]
impl ImageBackend for Instantly {
    async fn generate(
        &self,
        _request: &ImageRequest,
        _cancel: &CancellationToken,
    ) -> Result<GeneratedImage, ProviderFailure> {
        Ok(GeneratedImage {
            bytes: vec![0; 70],
            mime: "image/png".into(),
            filename: "image.png".into(),
        })
    }
}

/// One post per nonce, like Discord with `enforce_nonce`; counts repeats.
#[derive(Default)]
struct Poster {
    nonces: Mutex<HashSet<String>>,
    repeats: AtomicUsize,
}

#[async_trait]
impl ImagePoster for Poster {
    async fn post_image(
        &self,
        _channel: ChannelId,
        _image: &GeneratedImage,
        _caption: Option<&str>,
        nonce: &str,
    ) -> Posted {
        let mut nonces = self.nonces.lock().unwrap();
        if !nonces.insert(nonce.to_owned()) {
            self.repeats.fetch_add(1, Ordering::Relaxed);
        }
        Posted::Confirmed(MessageId(nonces.len() as u64))
    }
}

async fn plan_tasks(storage: &Storage) {
    for i in 0..TASKS {
        storage
            .plans
            .record_plan(NewImagePlan {
                id: PlanId(uuid::Uuid::now_v7().to_string()),
                turn: TurnId::new(),
                server: Some(ServerId(1)),
                channel: ChannelId(2 + (i % 100) as u64),
                user: UserId(3),
                persona: PersonaId("aria".into()),
                prompt: format!("a fox in the snow, number {i}"),
                caption: None,
                aspect: "square".into(),
                part: None,
                at_ms: 0,
                visibility: Visibility::Public,
                locale: Locale::En,
            })
            .await
            .expect("plan");
    }
}

async fn measure(label: &str, url: &str, workers: usize) {
    let storage = Storage::open(url, &Config::shipped_defaults().database)
        .await
        .expect("open storage");
    plan_tasks(&storage).await;
    let poster = Arc::new(Poster::default());
    let mut config = Config::shipped_defaults().image_worker;
    config.poll_ms = 1;
    let started = Instant::now();
    let runs: Vec<_> = (0..workers)
        .map(|n| {
            let worker = ImageWorker::new(
                format!("bench-{n}"),
                WorkerPorts {
                    tasks: storage.plans.clone(),
                    plans: storage.plans.clone(),
                    backend: Arc::new(Instantly),
                    poster: poster.clone(),
                    sink: Arc::new(RecordingSink::default()),
                    thought_log: Arc::new(RecordingThoughtLog::default()),
                    clock: Arc::new(SystemClock),
                },
                config.clone(),
            );
            tokio::spawn(async move {
                let cancel = CancellationToken::new();
                let mut handled = 0;
                while worker.run_once(&cancel).await != Handled::Idle {
                    handled += 1;
                }
                handled
            })
        })
        .collect();
    let mut handled = 0;
    for run in runs {
        handled += run.await.expect("worker");
    }
    let elapsed = started.elapsed();
    let posted = poster.nonces.lock().unwrap().len();
    assert_eq!(
        (handled, posted, poster.repeats.load(Ordering::Relaxed)),
        (TASKS, TASKS, 0),
        "every task handled and posted exactly once"
    );
    println!(
        "{label:<10} {workers} worker(s): {:>7.0} tasks/s, {:>7.2?} per task ({TASKS} tasks in {elapsed:.2?})",
        TASKS as f64 / elapsed.as_secs_f64(),
        elapsed / TASKS as u32,
    );
    storage.close().await;
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    // `cargo test --all-targets` runs benches once as tests; keep that quick.
    if !common::benchmarking() {
        println!("image_worker: run with `cargo bench --bench image_worker`");
        return;
    }
    for workers in [1, 2, 4] {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}/bench.db", dir.path().display());
        measure("sqlite", &url, workers).await;
    }
    let admin = common::postgres_admin_url();
    for workers in [1, 2, 4] {
        match common::fresh_postgres(&admin).await {
            Some((url, name)) => {
                measure("postgres", &url, workers).await;
                common::drop_postgres(&admin, &name).await;
            }
            None => {
                println!("postgres   skipped: no PostgreSQL at TEST_POSTGRES_URL");
                return;
            }
        }
    }
}
