//! The bot end to end, for tests and benches: the real `persona-bot` start-up (`app::start`), the
//! real serenity client and poise against the fake Discord on 127.0.0.1, the real provider
//! client against the fake OpenAI-compatible server, and a real SQLite file.

use std::sync::Arc;
use std::time::{Duration, Instant};

use persona_bot::app::RunningBot;
use persona_bot::config::{Config, Secrets};
use secrecy::SecretString;
use serde_json::{Value, json};

use super::fake_discord::{FakeDiscord, Incoming, Slash, World};
use super::fake_openai::{FakeOpenAi, Reply};
use super::harness::{Behaviour, Probe, ProbeTool};

pub const GUILD: u64 = 100;
pub const GENERAL: u64 = 200;
pub const THOUGHTS: u64 = 201;
pub const PUBLIC_MODS: u64 = 202;
pub const BOT: u64 = 900;
pub const ALICE: u64 = 300;
pub const BOB: u64 = 301;
pub const MODERATOR: u64 = 302;
pub const MANAGE_MESSAGES: u64 = 1 << 13;
pub const MANAGE_GUILD: u64 = 1 << 5;
/// The drafting reviewer's model on the fake server (the author's is `test-model`).
pub const REVIEW_MODEL: &str = "review-model";
/// The test probe's progress line (it borrows plan_image's).
pub const PROGRESS: &str = "🎨 Planning an image…";

pub struct E2e {
    pub discord: FakeDiscord,
    pub openai: FakeOpenAi,
    pub running: Option<RunningBot>,
    pub probe: Arc<Probe>,
    _dir: tempfile::TempDir,
}

impl E2e {
    /// Every paragraph a message of its own, up to 50 (SPEC C4's pacing let go): for tests of
    /// how single messages are delivered.
    pub fn every_paragraph_a_message(config: &mut Config) {
        config.turn.short_paragraph_chars = 0;
        config.turn.max_messages_per_reply = 50;
    }

    pub async fn start(probe: Behaviour, replies: Vec<Reply>) -> Self {
        Self::start_with(probe, replies, |_| {}).await
    }

    /// Starts the bot with the test configuration, changed by `configure`.
    pub async fn start_with(
        probe: Behaviour,
        replies: Vec<Reply>,
        configure: impl FnOnce(&mut Config),
    ) -> Self {
        Self::start_in(World::simple(), probe, replies, configure).await
    }

    /// Starts the bot in `world` with the test configuration, changed by `configure`.
    pub async fn start_in(
        world: World,
        probe: Behaviour,
        replies: Vec<Reply>,
        configure: impl FnOnce(&mut Config),
    ) -> Self {
        Self::start_on(FakeDiscord::start(world).await, probe, replies, configure).await
    }

    /// Starts the bot against `discord` (a fake the test set up first) with the test
    /// configuration, changed by `configure`.
    pub async fn start_on(
        discord: FakeDiscord,
        probe: Behaviour,
        replies: Vec<Reply>,
        configure: impl FnOnce(&mut Config),
    ) -> Self {
        persona_bot::telemetry::init_for_tests();
        let openai = FakeOpenAi::start().await;
        for reply in replies {
            openai.push(reply);
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = Config::shipped_defaults();
        config.discord.api_base_url = discord.base_url.clone();
        config.provider.base_url = openai.base_url.clone();
        // The fake serves attachments where Discord's CDN would.
        config.attachments.origins = vec![discord.base_url.clone()];
        config.provider.models = vec!["test-model".into()];
        config.review.models = vec![REVIEW_MODEL.into()];
        config.provider.first_token_timeout_secs = 5;
        config.provider.idle_timeout_secs = 5;
        config.database.url = format!("sqlite://{}/bot.db", dir.path().display());
        configure(&mut config);
        let secrets = Secrets {
            discord_token: Some(SecretString::from("test-token".to_owned())),
            provider_keys: vec![SecretString::from("provider-key".to_owned())],
            ..Secrets::default()
        };
        let probe_state = Arc::new(Probe::default());
        let tool = ProbeTool {
            probe: probe_state.clone(),
            behaviour: probe,
        };
        persona_bot::app::install_crypto_provider();
        let running = persona_bot::app::start(Arc::new(config), &secrets, |r| r.with(tool))
            .await
            .expect("bot starts");
        discord.wait_ready().await;
        let e2e = Self {
            discord,
            openai,
            running: Some(running),
            probe: probe_state,
            _dir: dir,
        };
        // The bot registers its commands once it has the READY; wait until the fake stored them
        // (a request is recorded as it arrives, before the fake has handled it).
        e2e.until("commands registered", |e| !e.discord.commands().is_empty())
            .await;
        e2e
    }

    pub fn running(&self) -> &RunningBot {
        self.running.as_ref().expect("running")
    }

    pub async fn until(&self, what: &str, done: impl Fn(&Self) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(15);
        while !done(self) {
            assert!(Instant::now() < deadline, "timed out waiting for: {what}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Asks `/status` in #general until it says `waiting` messages wait there (5 s at most), and
    /// returns its last answer: messages are handled concurrently with each other and with
    /// commands, so a test that needs one queued first waits for it.
    pub async fn until_waiting(&self, waiting: usize) -> String {
        let expected = format!("waiting here: {waiting}");
        let mut status = String::new();
        for _ in 0..50 {
            status = content_of(&self.slash(ALICE, "status", 0, json!([])).await);
            if status.contains(&expected) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        status
    }

    pub async fn mention(&self, author: u64, name: &str, text: &str) -> u64 {
        self.mention_in(GENERAL, author, name, text).await
    }

    /// A mention of the bot by `author` in `channel` of the guild; returns the message id.
    pub async fn mention_in(&self, channel: u64, author: u64, name: &str, text: &str) -> u64 {
        let mut m = Incoming::new(
            channel,
            Some(GUILD),
            author,
            name,
            &format!("<@{BOT}> {text}"),
        );
        m.mentions = vec![(BOT, "Aria".into())];
        self.discord.send_message(m).await
    }

    /// Message bodies the bot posted in a channel.
    pub fn posted(&self, channel: u64) -> Vec<Value> {
        self.discord.messages_in(channel)
    }

    /// The persona's text messages in a channel (tool progress lines left out).
    pub fn texts(&self, channel: u64) -> Vec<String> {
        self.posted(channel)
            .iter()
            .filter_map(|m| m["content"].as_str().map(str::to_owned))
            .filter(|t| t != PROGRESS)
            .collect()
    }

    pub async fn slash(&self, user: u64, name: &str, permissions: u64, options: Value) -> Value {
        self.slash_with_id(user, name, permissions, options).await.1
    }

    /// [`Self::slash`], with the interaction's id (a modal it shows is submitted by it).
    pub async fn slash_with_id(
        &self,
        user: u64,
        name: &str,
        permissions: u64,
        options: Value,
    ) -> (u64, Value) {
        let id = self
            .discord
            .slash(Slash {
                name: name.into(),
                options,
                guild_id: Some(GUILD),
                channel_id: GENERAL,
                user_id: user,
                user_name: format!("user{user}"),
                permissions,
                locale: "en-US".into(),
            })
            .await;
        (id, self.answer_to(id).await)
    }

    /// The callback body the bot sent for interaction `id`, once it has.
    pub async fn answer_to(&self, id: u64) -> Value {
        self.until("the interaction is answered", |e| {
            e.discord
                .interaction_responses()
                .iter()
                .any(|(i, _)| *i == id)
        })
        .await;
        let (_, body) = self
            .discord
            .interaction_responses()
            .into_iter()
            .find(|(i, _)| *i == id)
            .expect("response");
        body
    }

    /// The user submits the modal interaction `shown_by` showed, with `values`; returns the
    /// bot's answer to the submit.
    pub async fn submit_modal(&self, shown_by: u64, values: &[(&str, &str)]) -> Value {
        self.submit_modal_as(shown_by, None, values).await
    }

    /// [`Self::submit_modal`] by a member whose permissions changed since the command
    /// (`None`: unchanged).
    pub async fn submit_modal_as(
        &self,
        shown_by: u64,
        permissions: Option<u64>,
        values: &[(&str, &str)],
    ) -> Value {
        let id = self
            .discord
            .submit_modal_as(shown_by, permissions, values)
            .unwrap_or_else(|why| panic!("fake Discord: {why}"));
        self.answer_to(id).await
    }

    /// `/thoughtlog set` by the moderator (Manage Server), pointing at the hidden THOUGHTS
    /// channel; checks the answer names it.
    pub async fn set_thought_log(&self) {
        let set = self
            .slash(
                MODERATOR,
                "thoughtlog",
                MANAGE_GUILD,
                thought_log_set(THOUGHTS),
            )
            .await;
        assert!(
            content_of(&set).contains(&format!("<#{THOUGHTS}>")),
            "{set}"
        );
    }

    /// Sets which turns the thought log summarizes, in storage (no "setting changed" card).
    pub async fn set_summaries(&self, mode: persona_bot::domain::ports::SummaryMode) {
        use persona_bot::domain::ports::{SettingsChange, SettingsStore as _};
        let server = persona_bot::domain::scope::ServerId(GUILD);
        let change = SettingsChange::Summaries(mode);
        let settings = &self.running().storage.settings;
        settings.update(server, change).await.expect("settings");
    }

    /// The "Turn summary" cards posted to the thought log, as JSON text.
    pub fn summaries(&self) -> Vec<String> {
        self.posted(THOUGHTS)
            .iter()
            .map(Value::to_string)
            .filter(|m| m.contains("Turn summary"))
            .collect()
    }

    /// The system message of the model's `n`-th request.
    pub fn system_prompt(&self, n: usize) -> String {
        system_prompt_of(&self.openai.requests()[n])
    }

    /// Stores a fact the persona remembers (`about: None`, server-wide) and returns its id.
    pub async fn store_fact(&self, server: Option<u64>, about: Option<u64>, text: &str) -> i64 {
        use persona_bot::domain::ports::{FactAdded, MemoryStore, NewFact};
        use persona_bot::domain::scope::{PersonaId, ServerId, UserId};
        let at_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let fact = NewFact {
            server: server.map(ServerId),
            persona: PersonaId("aria".into()),
            about: about.map(UserId),
            text: text.into(),
            at_ms,
            private_to: None,
            source: None,
        };
        let memory = &self.running().storage.memory;
        match memory.add_fact(fact, 100).await.unwrap() {
            FactAdded::Stored { id } => id,
            other => panic!("{other:?}"),
        }
    }

    /// The last message of the model's `n`-th request (the trigger, as the model saw it).
    pub fn last_model_message(&self, n: usize) -> Value {
        let request = &self.openai.requests()[n];
        request.body["messages"]
            .as_array()
            .and_then(|messages| messages.last())
            .cloned()
            .unwrap_or_default()
    }

    /// The guild's settings as stored now.
    pub async fn settings(&self) -> persona_bot::domain::ports::ServerSettings {
        use persona_bot::domain::ports::SettingsStore as _;
        let server = persona_bot::domain::scope::ServerId(GUILD);
        let stored = self.running().storage.settings.settings(server).await;
        stored.expect("settings")
    }

    /// The fake Discord answered no request with 429.
    pub fn assert_no_429(&self) {
        assert_eq!(
            self.discord.rate_limited(),
            0,
            "{:?}",
            self.discord.rate_limit_counts()
        );
    }

    /// Both fakes were really used, and nothing unexpected was asked of them.
    pub fn assert_fakes_used(&self) {
        assert!(
            self.discord.gateway_used(),
            "serenity used the fake gateway"
        );
        assert!(
            self.discord.unexpected().is_empty(),
            "unexpected: {:?}",
            self.discord.unexpected()
        );
        assert_eq!(self.openai.unexpected(), 0, "unscripted provider requests");
    }

    pub async fn stop(mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown().await;
        }
    }
}

/// The options of `/thoughtlog set channel:<channel>`.
pub fn thought_log_set(channel: u64) -> Value {
    json!([{
        "name": "set", "type": 1,
        "options": [{ "name": "channel", "type": 7, "value": channel.to_string() }]
    }])
}

pub fn content_of(response: &Value) -> String {
    response["data"]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The system message of a recorded model request.
pub fn system_prompt_of(request: &super::fake_openai::Recorded) -> String {
    request.body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The reviewer's verdict (Response Drafting's `submit_review` call); a rejection allows a
/// correction.
pub fn verdict(decision: &str, findings: &[&str]) -> Reply {
    let args = json!({
        "decision": decision,
        "findings": findings,
        "correction_allowed": decision == "reject",
    });
    Reply::call("v1", "submit_review", &args.to_string())
}
