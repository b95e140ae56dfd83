//! Typed settings and their layered loading.
//!
//! Layers, later ones winning: the built-in defaults (`config/default.toml`, compiled into the
//! binary; every key is documented there), then, in the config directory when there is one, a
//! `default.toml` and a `local.toml` (both optional; `local.toml` is for one deployment), then
//! environment variables named
//! `PERSONA_BOT_<SECTION>__<KEY>`. Secrets (tokens, provider keys) come only from the environment
//! ([`Secrets`]); a secret-looking key in a file is refused. Any missing, unknown or invalid key
//! stops start-up with one line naming it ([`ConfigError`]).

use std::path::Path;

use figment::providers::{Env, Format, Toml};
use figment::{Figment, Provider};
use serde::Deserialize;

use crate::locale::Locale;

mod content;
mod database;
mod discord;
mod error;
mod general;
mod provider;
mod secrets;
mod service;
mod turn;
mod urls;

#[cfg(test)]
mod tests;

pub use content::{DeliberateConfig, ImageConfig, MemoryConfig, ThoughtLogConfig, ToolsConfig};
pub use database::{DatabaseConfig, database_url_problem};
pub use discord::{AttachmentsConfig, CatchUpConfig, DiscordConfig, ShardPlan};
pub use error::ConfigError;
use error::{cut, from_figment, problem_of};
pub use general::{GeneralConfig, PersonaConfig};
pub use provider::{ProviderConfig, ReviewConfig};
pub use secrets::Secrets;
use secrets::find_secret_key;
pub use service::{
    ImageBackendKind, ImageWorkerConfig, MetricsConfig, RemindersConfig, ShutdownConfig,
};
pub use turn::{KillPermission, ReplyStyle, TurnConfig};
use urls::http_url_problem;

/// The longest any duration setting may be, in seconds.
const WEEK_SECS: u64 = 7 * 24 * 60 * 60;

/// The built-in defaults: `config/default.toml` itself, compiled in, so the binary runs from any
/// directory (an installed binary, a container without the folder). The file stays the commented
/// reference; being the same file, the two cannot drift apart.
pub const BUILT_IN_DEFAULTS: &str = include_str!("../../config/default.toml");

/// Environment prefix for overrides: `PERSONA_BOT_TOOLS__DEFAULT_TIMEOUT_SECS=60`.
pub const ENV_PREFIX: &str = "PERSONA_BOT_";
/// The environment variable holding the Discord bot token.
pub const DISCORD_TOKEN_ENV: &str = "DISCORD_TOKEN";
/// The environment variable holding provider API keys, comma-separated (several enable rotation).
pub const PROVIDER_KEYS_ENV: &str = "PROVIDER_API_KEYS";
/// The environment variable holding a database URL with credentials; it overrides `database.url`.
pub const DATABASE_URL_ENV: &str = "DATABASE_URL";
/// The OpenAI-compatible images endpoint's key (else the first provider key is used).
pub const IMAGES_KEY_ENV: &str = "IMAGES_API_KEY";

/// The whole configuration. Every field is required in the merged layers; the defaults live in
/// `config/default.toml`, not in code, so there is one place that documents them.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub general: GeneralConfig,
    pub tools: ToolsConfig,
    pub memory: MemoryConfig,
    pub image: ImageConfig,
    pub thought_log: ThoughtLogConfig,
    pub deliberate: DeliberateConfig,
    pub database: DatabaseConfig,
    pub turn: TurnConfig,
    pub provider: ProviderConfig,
    pub personas: Vec<PersonaConfig>,
    pub discord: DiscordConfig,
    pub review: ReviewConfig,
    pub image_worker: ImageWorkerConfig,
    pub reminders: RemindersConfig,
    pub metrics: MetricsConfig,
    pub shutdown: ShutdownConfig,
    pub catch_up: CatchUpConfig,
    pub attachments: AttachmentsConfig,
}

impl Config {
    /// Loads the built-in defaults, then `dir/default.toml` and `dir/local.toml` where present,
    /// then the environment. `dir` is `None` when there is no config directory: the built-in
    /// defaults and the environment alone. A `dir` that does not exist is an error.
    pub fn load(dir: Option<&Path>) -> Result<Self, ConfigError> {
        Self::load_with_env(dir, Env::prefixed(ENV_PREFIX).split("__"))
    }

    fn load_with_env(dir: Option<&Path>, env: Env) -> Result<Self, ConfigError> {
        let mut files = Figment::new().merge(Toml::string(BUILT_IN_DEFAULTS));
        if let Some(dir) = dir {
            if !dir.is_dir() {
                return Err(ConfigError::MissingDir(dir.to_path_buf()));
            }
            for name in ["default.toml", "local.toml"] {
                let file = dir.join(name);
                if file.exists() && !file.is_file() {
                    return Err(ConfigError::File {
                        problem: format!("{}: is not a file", file.display()),
                    });
                }
                if file.is_file() {
                    // Read alone first, so a file that does not read or parse is named.
                    if let Err(error) = Figment::from(Toml::file_exact(&file)).data() {
                        return Err(ConfigError::File {
                            problem: format!("{}: {}", file.display(), problem_of(&error)),
                        });
                    }
                    files = files.merge(Toml::file_exact(file));
                }
            }
        }
        let files_data = files.data().map_err(|e| from_figment(&e))?;
        for dict in files_data.values() {
            if let Some(key) = find_secret_key(dict, "") {
                return Err(ConfigError::SecretInFile { key });
            }
            urls::refuse_credentials(dict)?;
        }
        let config: Config = files.merge(env).extract().map_err(|e| from_figment(&e))?;
        config.validate()?;
        Ok(config)
    }

    /// Parses a configuration from TOML text alone (tests, benchmarks).
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let figment = Figment::new().merge(Toml::string(text));
        for dict in figment.data().map_err(|e| from_figment(&e))?.values() {
            urls::refuse_credentials(dict)?;
        }
        let config: Config = figment.extract().map_err(|e| from_figment(&e))?;
        config.validate()?;
        Ok(config)
    }

    /// The built-in defaults alone (tests, benchmarks).
    #[allow(
        clippy::expect_used,
        reason = "the shipped file is compiled in and checked by tests"
    )]
    pub fn shipped_defaults() -> Self {
        Self::from_toml(BUILT_IN_DEFAULTS).expect("config/default.toml is valid")
    }

    /// Counts, sizes and durations where 0 would disable a limit or spin a loop: a table.
    fn must_be_positive(&self) -> Vec<(String, u64)> {
        let (t, w) = (&self.turn, &self.image_worker);
        let mut positive: Vec<(String, u64)> = [
            (
                "tools.default_timeout_secs",
                self.tools.default_timeout_secs,
            ),
            (
                "tools.older_messages_max",
                self.tools.older_messages_max.into(),
            ),
            (
                "memory.summary_max_chars",
                self.memory.summary_max_chars as u64,
            ),
            ("memory.fact_max_chars", self.memory.fact_max_chars as u64),
            (
                "image.max_plans_per_turn",
                self.image.max_plans_per_turn.into(),
            ),
            ("image.prompt_max_chars", self.image.prompt_max_chars as u64),
            (
                "thought_log.argument_max_chars",
                self.thought_log.argument_max_chars as u64,
            ),
            ("turn.max_passes", t.max_passes.into()),
            (
                "turn.max_consecutive_failures",
                t.max_consecutive_failures.into(),
            ),
            ("turn.queue_limit", t.queue_limit as u64),
            ("turn.stale_after_secs", t.stale_after_secs),
            ("turn.typing_interval_secs", t.typing_interval_secs),
            ("turn.worker_idle_secs", t.worker_idle_secs),
            ("turn.history_messages", t.history_messages.into()),
            (
                "provider.first_token_timeout_secs",
                self.provider.first_token_timeout_secs,
            ),
            (
                "provider.idle_timeout_secs",
                self.provider.idle_timeout_secs,
            ),
            ("provider.max_tokens", self.provider.max_tokens.into()),
            (
                "provider.stream_max_bytes",
                self.provider.stream_max_bytes as u64,
            ),
            ("provider.stream_max_secs", self.provider.stream_max_secs),
            (
                "discord.channel_messages_per_5s",
                self.discord.channel_messages_per_5s.into(),
            ),
            (
                "discord.global_requests_per_second",
                self.discord.global_requests_per_second.into(),
            ),
            (
                "discord.rate_bucket_idle_secs",
                self.discord.rate_bucket_idle_secs,
            ),
            ("review.timeout_secs", self.review.timeout_secs),
            ("image_worker.timeout_secs", w.timeout_secs),
            ("image_worker.max_attempts", w.max_attempts.into()),
            ("image_worker.poll_ms", w.poll_ms),
            ("image_worker.max_image_bytes", w.max_image_bytes as u64),
            ("reminders.poll_ms", self.reminders.poll_ms),
            ("reminders.max_per_user", self.reminders.max_per_user.into()),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect();
        positive.extend(
            self.tools
                .timeouts_secs
                .iter()
                .map(|(tool, secs)| (format!("tools.timeouts_secs.{tool}"), *secs)),
        );
        positive
    }

    /// Every count and size setting with its largest allowed value (documented in
    /// `config/default.toml`): past it a value is a typo or would make a bound meaningless.
    fn counts(&self) -> Vec<(&'static str, u64, u64)> {
        let mut counts = self.content_counts();
        counts.extend(self.service_counts());
        counts
    }

    /// What a turn may hold: memory, images, notices.
    fn content_counts(&self) -> Vec<(&'static str, u64, u64)> {
        vec![
            (
                "tools.older_messages_max",
                self.tools.older_messages_max as u64,
                100,
            ),
            (
                "memory.summary_max_chars",
                self.memory.summary_max_chars as u64,
                20000,
            ),
            (
                "memory.fact_max_chars",
                self.memory.fact_max_chars as u64,
                2000,
            ),
            (
                "memory.facts_per_server",
                self.memory.facts_per_server as u64,
                10000,
            ),
            (
                "memory.facts_per_user",
                self.memory.facts_per_user as u64,
                1000,
            ),
            (
                "image.max_plans_per_turn",
                self.image.max_plans_per_turn as u64,
                16,
            ),
            (
                "image.prompt_max_chars",
                self.image.prompt_max_chars as u64,
                4000,
            ),
            (
                "thought_log.argument_max_chars",
                self.thought_log.argument_max_chars as u64,
                1000,
            ),
            (
                "attachments.max_images",
                self.attachments.max_images as u64,
                10,
            ),
            (
                "attachments.image_max_bytes",
                self.attachments.image_max_bytes,
                52428800,
            ),
            (
                "attachments.max_text_files",
                self.attachments.max_text_files as u64,
                10,
            ),
            (
                "attachments.text_max_bytes",
                self.attachments.text_max_bytes,
                1048576,
            ),
        ]
    }

    /// What the service may hold: connections, queues, requests, retries.
    fn service_counts(&self) -> Vec<(&'static str, u64, u64)> {
        vec![
            (
                "database.max_connections",
                self.database.max_connections as u64,
                100,
            ),
            ("database.batch_max", self.database.batch_max as u64, 100000),
            (
                "database.buffer_max",
                self.database.buffer_max as u64,
                10000000,
            ),
            ("turn.max_passes", self.turn.max_passes as u64, 100),
            (
                "turn.max_consecutive_failures",
                self.turn.max_consecutive_failures as u64,
                100,
            ),
            ("turn.max_follow_ups", self.turn.max_follow_ups as u64, 20),
            (
                "turn.max_messages_per_reply",
                self.turn.max_messages_per_reply as u64,
                50,
            ),
            (
                "turn.short_paragraph_chars",
                self.turn.short_paragraph_chars as u64,
                2000,
            ),
            (
                "turn.user_messages_per_minute",
                self.turn.user_messages_per_minute as u64,
                1000,
            ),
            ("turn.queue_limit", self.turn.queue_limit as u64, 1000),
            (
                "turn.history_messages",
                self.turn.history_messages as u64,
                100,
            ),
            (
                "provider.max_tokens",
                self.provider.max_tokens as u64,
                1000000,
            ),
            (
                "provider.stream_max_bytes",
                self.provider.stream_max_bytes as u64,
                268435456,
            ),
            (
                "discord.channel_messages_per_5s",
                self.discord.channel_messages_per_5s as u64,
                50,
            ),
            (
                "discord.global_requests_per_second",
                self.discord.global_requests_per_second as u64,
                10000,
            ),
            (
                "discord.max_rate_limit_waits",
                self.discord.max_rate_limit_waits as u64,
                100,
            ),
            (
                "image_worker.max_attempts",
                self.image_worker.max_attempts as u64,
                20,
            ),
            (
                "image_worker.max_image_bytes",
                self.image_worker.max_image_bytes as u64,
                104857600,
            ),
            (
                "reminders.max_per_user",
                self.reminders.max_per_user as u64,
                1000,
            ),
        ]
    }

    /// Every duration setting, in seconds or milliseconds (`true` for milliseconds).
    fn durations(&self) -> Vec<(String, u64, bool)> {
        let (t, p, w) = (&self.turn, &self.provider, &self.image_worker);
        let mut all: Vec<(String, u64, bool)> = [
            (
                "tools.default_timeout_secs",
                self.tools.default_timeout_secs,
                false,
            ),
            (
                "database.flush_interval_ms",
                self.database.flush_interval_ms,
                true,
            ),
            ("turn.queue_lease_secs", t.queue_lease_secs, false),
            ("turn.stale_after_secs", t.stale_after_secs, false),
            ("turn.typing_interval_secs", t.typing_interval_secs, false),
            ("turn.typing_delay_ms", t.typing_delay_ms, true),
            ("turn.paragraph_wait_ms", t.paragraph_wait_ms, true),
            ("turn.worker_idle_secs", t.worker_idle_secs, false),
            ("turn.kill_grace_ms", t.kill_grace_ms, true),
            (
                "provider.first_token_timeout_secs",
                p.first_token_timeout_secs,
                false,
            ),
            ("provider.idle_timeout_secs", p.idle_timeout_secs, false),
            ("provider.key_cooldown_secs", p.key_cooldown_secs, false),
            ("provider.stream_max_secs", p.stream_max_secs, false),
            (
                "discord.rate_bucket_idle_secs",
                self.discord.rate_bucket_idle_secs,
                false,
            ),
            ("review.timeout_secs", self.review.timeout_secs, false),
            ("image_worker.timeout_secs", w.timeout_secs, false),
            (
                "image_worker.retry_backoff_secs",
                w.retry_backoff_secs,
                false,
            ),
            ("image_worker.lease_secs", w.lease_secs, false),
            ("image_worker.poll_ms", w.poll_ms, true),
            ("reminders.poll_ms", self.reminders.poll_ms, true),
            ("shutdown.grace_secs", self.shutdown.grace_secs, false),
        ]
        .into_iter()
        .map(|(k, v, ms)| (k.to_owned(), v, ms))
        .collect();
        for (tool, secs) in &self.tools.timeouts_secs {
            all.push((format!("tools.timeouts_secs.{tool}"), *secs, false));
        }
        all
    }

    /// Every URL setting parses as an http(s) URL with a host (an empty Discord base means
    /// Discord itself), and the ComfyUI workflow file exists when ComfyUI makes the images.
    fn check_urls_and_files(&self) -> Result<(), ConfigError> {
        let w = &self.image_worker;
        let urls = [
            ("discord.api_base_url", &self.discord.api_base_url, true),
            ("provider.base_url", &self.provider.base_url, false),
            ("image_worker.comfyui_url", &w.comfyui_url, false),
            ("image_worker.openai_url", &w.openai_url, false),
        ];
        for (name, value, may_be_empty) in urls {
            if may_be_empty && value.is_empty() {
                continue;
            }
            if let Some(problem) = http_url_problem(value) {
                return Err(ConfigError::Key {
                    key: name.to_owned(),
                    problem: problem.to_owned(),
                });
            }
        }
        self.check_vision_and_origins()?;
        if w.backend == ImageBackendKind::Comfyui && !Path::new(&w.comfyui_workflow).is_file() {
            return Err(ConfigError::Key {
                key: "image_worker.comfyui_workflow".to_owned(),
                problem: format!("names no file ({})", cut(&w.comfyui_workflow)),
            });
        }
        Ok(())
    }

    /// Each vision model is one of the models, and each attachment origin is a bare origin
    /// (`https://cdn.discordapp.com`: no path, query or credentials).
    fn check_vision_and_origins(&self) -> Result<(), ConfigError> {
        let p = &self.provider;
        if let Some((model, tokens)) = p
            .context_tokens
            .iter()
            .find(|(m, t)| !p.models.contains(m) || !(256..=10_000_000).contains(*t))
        {
            let problem = if p.models.contains(model) {
                format!("{}: {tokens} must be from 256 to 10000000", cut(model))
            } else {
                format!("names {}, which is not in provider.models", cut(model))
            };
            return Err(ConfigError::Key {
                key: "provider.context_tokens".to_owned(),
                problem,
            });
        }
        if let Some(model) = p.vision_models.iter().find(|m| !p.models.contains(m)) {
            return Err(ConfigError::Key {
                key: "provider.vision_models".to_owned(),
                problem: format!("names {}, which is not in provider.models", cut(model)),
            });
        }
        for origin in &self.attachments.origins {
            let bare = url::Url::parse(origin).is_ok_and(|u| {
                matches!(u.scheme(), "http" | "https")
                    && u.host().is_some()
                    && u.path() == "/"
                    && u.query().is_none()
                    && u.username().is_empty()
                    && u.password().is_none()
            });
            if !bare {
                return Err(ConfigError::Key {
                    key: "attachments.origins".to_owned(),
                    problem: format!(
                        "{} is not an origin such as https://cdn.discordapp.com",
                        cut(&crate::redact::shown_url(origin))
                    ),
                });
            }
        }
        Ok(())
    }

    /// How the process runs as a service: its queue lease, its shards, its stop.
    fn check_service_settings(&self) -> Result<(), ConfigError> {
        let key = |k: &str, problem: &str| ConfigError::Key {
            key: k.to_owned(),
            problem: problem.to_owned(),
        };
        for (name, value, most) in self.counts() {
            if value > most {
                return Err(key(name, &format!("must be at most {most}")));
            }
        }
        // No duration is longer than a week: arithmetic on a time plus a setting (or ten times
        // one, for a key's cooldown) cannot overflow at run time.
        for (name, value, ms) in self.durations() {
            let (most, unit) = if ms {
                (WEEK_SECS * 1000, "ms")
            } else {
                (WEEK_SECS, "s")
            };
            if value > most {
                return Err(key(
                    &name,
                    &format!("must be at most {most} {unit} (a week)"),
                ));
            }
        }
        for (name, value, (least, most)) in self.ranges() {
            if !(least..=most).contains(&value) {
                return Err(key(name, &format!("must be from {least} to {most}")));
            }
        }
        if self.turn.time_zone.parse::<chrono_tz::Tz>().is_err() {
            return Err(key(
                "turn.time_zone",
                "is not a known time zone (an IANA name such as UTC or Europe/Paris)",
            ));
        }
        if let Err(problem) = ShardPlan::parse(&self.discord.shards) {
            return Err(key("discord.shards", &problem));
        }
        Ok(())
    }

    /// The settings with a range of their own (inclusive), each stated in its comment in
    /// `config/default.toml`.
    fn ranges(&self) -> [(&'static str, u64, (u64, u64)); 13] {
        let (d, c, m, day) = (&self.discord, &self.catch_up, &self.metrics, 86_400);
        [
            (
                "metrics.header_timeout_secs",
                m.header_timeout_secs,
                (1, 60),
            ),
            (
                "metrics.request_timeout_secs",
                m.request_timeout_secs,
                (1, 300),
            ),
            (
                "metrics.max_open_connections",
                m.max_open_connections.into(),
                (1, 10_000),
            ),
            ("catch_up.max_messages", c.max_messages.into(), (1, 100)),
            ("catch_up.max_channels", c.max_channels.into(), (1, 500)),
            (
                "turn.queue_lease_secs",
                self.turn.queue_lease_secs,
                (1, day),
            ),
            (
                "discord.request_timeout_secs",
                d.request_timeout_secs,
                (1, 300),
            ),
            (
                "discord.gateway_stuck_secs",
                d.gateway_stuck_secs,
                (10, day),
            ),
            (
                "discord.reconnect_max_secs",
                d.reconnect_max_secs,
                (1, 3600),
            ),
            (
                "database.connect_timeout_secs",
                self.database.connect_timeout_secs,
                (1, 300),
            ),
            ("catch_up.window_secs", self.catch_up.window_secs, (0, day)),
            ("shutdown.grace_secs", self.shutdown.grace_secs, (2, 3600)),
            (
                "attachments.fetch_timeout_secs",
                self.attachments.fetch_timeout_secs,
                (1, 300),
            ),
        ]
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let key = |k: &str, problem: &str| ConfigError::Key {
            key: k.to_owned(),
            problem: problem.to_owned(),
        };
        let (t, w) = (&self.turn, &self.image_worker);
        let positive = self.must_be_positive();
        if let Some((name, _)) = positive.iter().find(|(_, value)| *value == 0) {
            return Err(key(name, "must be greater than 0"));
        }
        self.check_service_settings()?;
        if t.max_messages_per_reply == 0 {
            return Err(key("turn.max_messages_per_reply", "must be greater than 0"));
        }
        if t.paragraph_wait_ms > 60_000 {
            return Err(key(
                "turn.paragraph_wait_ms",
                "must be at most 60000 (a minute)",
            ));
        }
        if t.typing_delay_ms > 60_000 {
            return Err(key(
                "turn.typing_delay_ms",
                "must be at most 60000 (a minute)",
            ));
        }
        if w.lease_secs <= w.timeout_secs {
            // Otherwise a slow image is taken over by a second worker while the first works.
            return Err(key(
                "image_worker.lease_secs",
                "must be longer than image_worker.timeout_secs",
            ));
        }
        self.check_urls_and_files()?;
        let p = &self.provider;
        if p.models.is_empty() || p.models.iter().any(|m| m.trim().is_empty()) {
            return Err(key("provider.models", "must list at least one model name"));
        }
        if !self
            .personas
            .iter()
            .any(|persona| persona.id == t.default_persona)
        {
            return Err(key(
                "turn.default_persona",
                "names no persona in [[personas]]",
            ));
        }
        self.database.validate()?;
        self.metrics.validate()?;
        for (tool, packs) in &self.deliberate.keywords {
            for tag in packs.keys() {
                if Locale::from_tag(tag).is_none() {
                    return Err(ConfigError::Key {
                        key: format!("deliberate.keywords.{tool}.{tag}"),
                        problem: "unknown locale (expected en, ja, zh-CN or zh-TW)".to_owned(),
                    });
                }
            }
        }
        Ok(())
    }
}
