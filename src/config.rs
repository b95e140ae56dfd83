//! Typed settings and their layered loading.
//!
//! Layers, later ones winning: the built-in defaults (`config/default.toml`, compiled into the
//! binary; every key is documented there), then, in the config directory when there is one, a
//! `default.toml` and a `local.toml` (both optional; `local.toml` is for one deployment), then
//! environment variables named
//! `PERSONA_BOT_<SECTION>__<KEY>`. Secrets (tokens, provider keys) come only from the environment
//! ([`Secrets`]); a secret-looking key in a file is refused. Any missing, unknown or invalid key
//! stops start-up with one line naming it ([`ConfigError`]).

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::providers::{Env, Format, Toml};
use figment::value::{Dict, Value};
use figment::{Figment, Provider};
use secrecy::SecretString;
use serde::Deserialize;

use crate::locale::Locale;

mod urls;

/// The built-in defaults: `config/default.toml` itself, compiled in, so the binary runs from any
/// directory (an installed binary, a container without the folder). The file stays the commented
/// reference; being the same file, the two cannot drift apart.
pub const BUILT_IN_DEFAULTS: &str = include_str!("../config/default.toml");

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

/// The files of messages in a turn's context: which are read, how much, and from where.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttachmentsConfig {
    /// The only origins (scheme, host, port) a file is downloaded from: Discord's CDN.
    pub origins: Vec<String>,
    /// Most pictures in one request (the trigger's first, then the newest in history).
    pub max_images: u8,
    /// A picture larger than this is named, not downloaded.
    pub image_max_bytes: u64,
    /// Most text files read into one request.
    pub max_text_files: u8,
    /// Most bytes read of one text file; a longer one is cut, saying so.
    pub text_max_bytes: u64,
    /// Longest time one download may take.
    pub fetch_timeout_secs: u64,
}

/// Catch-up after a gap in the gateway session (SPEC D9).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatchUpConfig {
    /// How far back, in seconds, messages are caught up; 0: off.
    pub window_secs: u64,
    /// Most messages read in one channel.
    pub max_messages: u8,
    /// Most channels read in one catch-up.
    pub max_channels: u16,
}

impl DatabaseConfig {
    pub fn connect_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.connect_timeout_secs)
    }
}

/// How the process stops (SIGTERM, Ctrl-C).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShutdownConfig {
    /// Longest a stop may take, in seconds, from the signal to the exit.
    pub grace_secs: u64,
}

/// Which backend makes planned images.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageBackendKind {
    Comfyui,
    Openai,
    /// Plans are kept; every task fails with a clear reason.
    None,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageWorkerConfig {
    pub backend: ImageBackendKind,
    pub comfyui_url: String,
    /// The ComfyUI workflow file (API format) with `{{prompt}}`, `{{width}}`, `{{height}}` and
    /// `{{seed}}` placeholders.
    pub comfyui_workflow: String,
    pub openai_url: String,
    pub openai_model: String,
    /// Longest time one image may take.
    pub timeout_secs: u64,
    /// Attempts for passing failures before a task fails.
    pub max_attempts: u32,
    /// First wait before a retry, doubled each time.
    pub retry_backoff_secs: u64,
    /// A claimed task is taken over by another worker after this long.
    pub lease_secs: u64,
    /// How often an idle worker looks for tasks.
    pub poll_ms: u64,
    /// Whether `persona-bot run` runs a worker too (`persona-bot worker` runs one alone).
    pub run_in_bot: bool,
    /// Largest image answer read from a backend, in bytes; a larger one fails the task.
    pub max_image_bytes: usize,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemindersConfig {
    /// How often due reminders are looked for.
    pub poll_ms: u64,
    /// Most active reminders one user may have created.
    pub max_per_user: u32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsConfig {
    /// Where `/metrics` and `/healthz` are served (`host:port`); empty: not served.
    pub listen: String,
    /// A connection whose request headers have not all arrived this long after it opened is
    /// closed.
    pub header_timeout_secs: u64,
    /// Longest one connection lasts: its one request and the answer.
    pub request_timeout_secs: u64,
    /// Most connections open at once; one more is closed as soon as it is accepted.
    pub max_open_connections: u32,
}

impl MetricsConfig {
    /// The address to serve on, or `None` when off. [`Config`] has checked it parses.
    pub fn listen_addr(&self) -> Option<SocketAddr> {
        let listen = self.listen.trim();
        if listen.is_empty() {
            return None;
        }
        listen.parse().ok()
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let listen = self.listen.trim();
        if listen.is_empty() || listen.parse::<SocketAddr>().is_ok() {
            return Ok(());
        }
        Err(ConfigError::Key {
            key: "metrics.listen".to_owned(),
            problem: "must be empty (off) or an IP address and port, such as 127.0.0.1:9100"
                .to_owned(),
        })
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewConfig {
    /// The reviewer's models, in fallback order (the provider's endpoint and keys).
    pub models: Vec<String>,
    /// The reviewer's instructions (a server may store its own).
    pub prompt: String,
    /// Longest time one review may take; past it the reviewer is unavailable for the turn.
    pub timeout_secs: u64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscordConfig {
    /// Base URL all REST traffic (and the gateway lookup) goes to; empty means Discord itself.
    pub api_base_url: String,
    /// Messages the bot allows itself per channel in any 5 seconds while Discord's rate-limit
    /// headers say nothing (before a channel's first answer, or behind a proxy that drops them).
    pub channel_messages_per_5s: u32,
    /// Requests the bot allows itself in any second, over every REST request of the process
    /// (Discord's global limit is 50).
    pub global_requests_per_second: u32,
    /// Most times one message is re-sent after a 429 before it is reported lost.
    pub max_rate_limit_waits: u32,
    /// A bucket's rate-limit state unused this long (and with its window over) is forgotten.
    pub rate_bucket_idle_secs: u64,
    /// Longest time one REST request may take.
    pub request_timeout_secs: u64,
    /// Longest pause between tries to reach Discord at start.
    pub reconnect_max_secs: u64,
    /// A gateway with no shard connected this long ends the process.
    pub gateway_stuck_secs: u64,
    /// Which gateway shards this process runs: "auto" or a range (see [`ShardPlan`]).
    pub shards: String,
}

/// Which gateway shards a process runs (SPEC D6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardPlan {
    /// Every shard, as many as Discord recommends: the process is the only one.
    Auto,
    /// Shards `first..=last` of `total`, the others run by other processes.
    Range { first: u32, last: u32, total: u32 },
}

/// The longest any duration setting may be, in seconds.
const WEEK_SECS: u64 = 7 * 24 * 60 * 60;

/// Most shards a setting may name (Discord's own largest bots run a few thousand).
const SHARDS_MAX: u32 = 16_384;

impl ShardPlan {
    /// Parses `auto`, `ID/TOTAL` or `FIRST-LAST/TOTAL` (ids from 0).
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text == "auto" {
            return Ok(Self::Auto);
        }
        let bad = || {
            "must be \"auto\", \"ID/TOTAL\" or \"FIRST-LAST/TOTAL\" (ids from 0, below TOTAL)"
                .to_owned()
        };
        let (ids, total) = text.split_once('/').ok_or_else(bad)?;
        let number = |s: &str| s.trim().parse::<u32>().map_err(|_| bad());
        let total = number(total)?;
        let (first, last) = match ids.split_once('-') {
            Some((first, last)) => (number(first)?, number(last)?),
            None => (number(ids)?, number(ids)?),
        };
        if total == 0 || total > SHARDS_MAX || first > last || last >= total {
            return Err(bad());
        }
        Ok(Self::Range { first, last, total })
    }

    /// The name this process's queue claims go under: the same after a restart.
    pub fn owner(&self) -> String {
        match self {
            Self::Auto => "shards:all".to_owned(),
            Self::Range { first, last, total } => format!("shards:{first}-{last}/{total}"),
        }
    }
}

impl DiscordConfig {
    /// The shards setting, parsed (checked at load; "auto" if it were not).
    pub fn shard_plan(&self) -> ShardPlan {
        ShardPlan::parse(&self.shards).unwrap_or(ShardPlan::Auto)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneralConfig {
    /// Locale for servers and users whose own locale is unknown or not translated.
    pub default_locale: Locale,
    /// `tracing` filter used when `RUST_LOG` is not set.
    pub log_filter: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsConfig {
    /// Watchdog timeout for a tool without its own entry in `timeouts_secs`.
    pub default_timeout_secs: u64,
    /// Per-tool watchdog timeouts, by tool name.
    pub timeouts_secs: BTreeMap<String, u64>,
    /// Most messages one `fetch_older_messages` call may bring into context.
    pub older_messages_max: u8,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryConfig {
    /// Longest short-term (channel working) summary, in characters.
    pub summary_max_chars: usize,
    /// Longest single long-term fact, in characters.
    pub fact_max_chars: usize,
    /// Most server-wide facts a persona keeps per server.
    pub facts_per_server: u32,
    /// Most facts a persona keeps about one user.
    pub facts_per_user: u32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageConfig {
    /// Most distinct image plans one turn may record.
    pub max_plans_per_turn: u32,
    /// Longest image prompt, in characters.
    pub prompt_max_chars: usize,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThoughtLogConfig {
    /// Free-text argument values longer than this are cut in notices and tool events.
    pub argument_max_chars: usize,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeliberateConfig {
    /// Keyword packs: tool name, then locale tag, then trigger phrases.
    pub keywords: BTreeMap<String, BTreeMap<String, Vec<String>>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatabaseConfig {
    /// `sqlite://path` (created at start) or `postgres://user@host/db` (no password here).
    pub url: String,
    /// Most pooled connections.
    pub max_connections: u32,
    /// Longest wait for the database to answer when opened, and for a pooled connection.
    pub connect_timeout_secs: u64,
    /// Background writes are flushed at least this often.
    pub flush_interval_ms: u64,
    /// ... or as soon as this many are waiting.
    pub batch_max: usize,
    /// Writes kept in memory while the database is unreachable.
    pub buffer_max: usize,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnConfig {
    /// The time zone the system prompt tells the date and time in (IANA name).
    pub time_zone: String,
    /// How long a process's claim on its queued messages lasts without renewal (SPEC D6).
    pub queue_lease_secs: u64,
    /// Most provider passes per turn (SPEC C9).
    pub max_passes: u32,
    /// Most consecutive failed tool calls before the turn ends (SPEC C9).
    pub max_consecutive_failures: u32,
    /// Most follow-ups one requester may send during their own turn (SPEC C7).
    pub max_follow_ups: u32,
    /// Most messages waiting in one channel (SPEC C3).
    pub queue_limit: usize,
    /// A turn with no progress this long outside a provider call or a tool is released (C10).
    pub stale_after_secs: u64,
    /// How often the typing indicator is renewed while a turn works.
    pub typing_interval_secs: u64,
    /// The first typing indicator waits this long, and is not sent if the turn has posted by
    /// then (a quick reply costs no typing request). At most a minute.
    pub typing_delay_ms: u64,
    /// A channel's worker with nothing running and nothing waiting for this long is stopped
    /// (a new message starts a new one), so idle channels hold no memory.
    pub worker_idle_secs: u64,
    /// Recent channel messages given to the model.
    pub history_messages: u8,
    /// How long `/kill` waits for the stopped turn to wind down before dropping it.
    pub kill_grace_ms: u64,
    /// The persona that answers unless a server picks another.
    pub default_persona: String,
    /// Who may `/kill` a turn: "requester_or_manager", "managers_only" or "anyone".
    pub kill_permission: KillPermission,
    /// Most messages one user may start turns with in any 60 s (SPEC C2); 0: no limit.
    pub user_messages_per_minute: u32,
    /// How a reply is cut into messages (SPEC C4).
    pub reply_style: ReplyStyle,
    /// Most messages a reply takes beyond what its length needs (one per ~1,900 characters).
    pub max_messages_per_reply: u32,
    /// A paragraph shorter than this many characters waits for the next one (`paragraphs`).
    pub short_paragraph_chars: u32,
    /// A waiting short paragraph is posted when the stream pauses this long, in milliseconds.
    pub paragraph_wait_ms: u64,
}

/// How a reply is cut into messages (SPEC C4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplyStyle {
    /// A message a paragraph, as a person texting, short paragraphs together, and at most
    /// `turn.max_messages_per_reply` messages beyond what the reply's length needs.
    Paragraphs,
    /// As few messages as the reply's length needs (one per ~1,900 characters).
    Compact,
}

impl ReplyStyle {
    /// Its name in settings, commands and `/status`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Paragraphs => "paragraphs",
            Self::Compact => "compact",
        }
    }

    /// From its stored name; `None` for anything else.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "paragraphs" => Some(Self::Paragraphs),
            "compact" => Some(Self::Compact),
            _ => None,
        }
    }
}

/// Who may stop a turn with `/kill` (SPEC C6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KillPermission {
    /// The author of the turn's trigger, and members with Manage Messages.
    RequesterOrManager,
    /// Only members with Manage Messages.
    ManagersOnly,
    /// Anyone in the channel.
    Anyone,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// The OpenAI-compatible endpoint, up to `/v1` (OpenAI, OpenRouter, Ollama, vLLM, ...).
    pub base_url: String,
    /// Models in fallback order.
    pub models: Vec<String>,
    /// Longest wait for the first streamed chunk.
    pub first_token_timeout_secs: u64,
    /// Longest wait between two chunks.
    pub idle_timeout_secs: u64,
    /// How long a key rests after a rate limit or error (longer for balance/auth failures).
    pub key_cooldown_secs: u64,
    /// Send `parallel_tool_calls: false` (for servers that reject the field, turn it off).
    pub send_parallel_tool_calls: bool,
    /// Most tokens per pass.
    pub max_tokens: u32,
    /// Most bytes of one streamed answer; past it the pass fails as `reply_too_long`.
    pub stream_max_bytes: usize,
    /// Longest one streamed answer may go on; past it the pass fails as `reply_too_long`.
    pub stream_max_secs: u64,
    /// Every model in `models` sees pictures.
    pub vision: bool,
    /// These models (of `models`) see pictures even when `vision` is off.
    pub vision_models: Vec<String>,
    /// One leading system message and alternating roles in every request (SPEC C12).
    pub strict_roles: bool,
    /// Context windows, in tokens, of models in `models` (optional per model).
    pub context_tokens: std::collections::BTreeMap<String, u32>,
}

impl ProviderConfig {
    /// Whether `model` is sent pictures as image parts.
    pub fn sees(&self, model: &str) -> bool {
        self.vision || self.vision_models.iter().any(|m| m == model)
    }

    /// Whether any model may be sent pictures (otherwise none are downloaded).
    pub fn any_sees(&self) -> bool {
        self.vision || !self.vision_models.is_empty()
    }

    /// Most tokens a request to `model` may take: its context window less the reply's
    /// `max_tokens`, when `context_tokens` names it.
    pub fn input_budget(&self, model: &str) -> Option<u32> {
        let window = *self.context_tokens.get(model)?;
        Some(window.saturating_sub(self.max_tokens).max(window / 4))
    }
}

/// A persona shipped in configuration.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersonaConfig {
    pub id: String,
    pub display_name: String,
    pub system_prompt: String,
    #[serde(default)]
    pub trigger_words: Vec<String>,
    #[serde(default)]
    pub avatar_url: Option<String>,
}

/// Why the configuration could not be loaded. Its `Display` is one line naming the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// The config directory named on the command line does not exist.
    MissingDir(PathBuf),
    /// A key is missing, unknown, malformed or out of range.
    Key { key: String, problem: String },
    /// A secret was put in a file instead of the environment.
    SecretInFile { key: String },
    /// A file could not be read or parsed.
    File { problem: String },
    /// A secret from the environment cannot be used (its value is never shown).
    Secret {
        variable: &'static str,
        problem: String,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingDir(path) => write!(
                f,
                "config: directory {} does not exist (leave out --config-dir to use the built-in \
                 defaults)",
                path.display()
            ),
            Self::Key { key, problem } => write!(f, "config: `{key}`: {problem}"),
            Self::SecretInFile { key } => write!(
                f,
                "config: `{key}` looks like a secret; secrets come only from the environment \
                 ({DISCORD_TOKEN_ENV}, {PROVIDER_KEYS_ENV})"
            ),
            Self::File { problem } => write!(f, "config: {problem}"),
            Self::Secret { variable, problem } => write!(f, "config: {variable}: {problem}"),
        }
    }
}

impl std::error::Error for ConfigError {}

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

impl DatabaseConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        let key = |k: &str, problem: &str| ConfigError::Key {
            key: format!("database.{k}"),
            problem: problem.to_owned(),
        };
        if let Some(problem) = database_url_problem(&self.url) {
            return Err(key("url", problem));
        }
        // From the environment too (PERSONA_BOT_DATABASE__URL): the database's own variable
        // is the one for credentials.
        if let Some(problem) = urls::credential_in(&self.url) {
            return Err(key(
                "url",
                &format!("{problem}; put the whole URL in the DATABASE_URL environment variable"),
            ));
        }
        if self.max_connections == 0 {
            return Err(key("max_connections", "must be greater than 0"));
        }
        if self.flush_interval_ms == 0 || self.batch_max == 0 {
            return Err(key(
                "flush_interval_ms",
                "and batch_max must be greater than 0",
            ));
        }
        if self.buffer_max < self.batch_max {
            return Err(key("buffer_max", "must be at least batch_max"));
        }
        Ok(())
    }
}

/// Turns figment's (possibly chained) error into one line naming the first bad key.
fn from_figment(error: &figment::Error) -> ConfigError {
    use figment::error::Kind;
    let mut path = error.path.clone();
    let mut name = |field: &str| {
        if path.last().map(String::as_str) != Some(field) {
            path.push(field.to_owned());
        }
    };
    let problem = match &error.kind {
        Kind::MissingField(field) => {
            name(field);
            "is missing".to_owned()
        }
        Kind::UnknownField(field, _) => {
            name(field);
            let lower = field.to_ascii_lowercase();
            if ["token", "key", "secret", "password"]
                .iter()
                .any(|s| lower.contains(s))
            {
                format!(
                    "is not a known setting; secrets come only from {DISCORD_TOKEN_ENV}, \
                     {PROVIDER_KEYS_ENV}, {IMAGES_KEY_ENV} and {DATABASE_URL_ENV}"
                )
            } else {
                "is not a known setting".to_owned()
            }
        }
        Kind::InvalidType(actual, expected) => {
            format!("must be {}, not {}", cut(expected), shown(actual))
        }
        Kind::InvalidValue(actual, expected) => {
            format!("must be {}, not {}", cut(expected), shown(actual))
        }
        Kind::UnknownVariant(_, expected) => {
            // The value is not shown: a string in the wrong place may be a secret.
            cut(&format!("must be one of {}", expected.join(", ")))
        }
        // A message of a type's own may quote the value: whatever looks like a secret goes.
        other => crate::redact::redact_text(&problem_of_kind(other)),
    };
    let source = error
        .metadata
        .as_ref()
        .and_then(|md| md.source.as_ref().map(|s| format!(" (in {s})")))
        .unwrap_or_default();
    if path.is_empty() {
        ConfigError::File {
            problem: format!("{problem}{source}"),
        }
    } else {
        ConfigError::Key {
            key: path.join("."),
            problem: format!("{problem}{source}"),
        }
    }
}

/// What a file's read or parse error says, on one line.
fn problem_of(error: &figment::Error) -> String {
    problem_of_kind(&error.kind)
}

/// A parse or read error spans lines: where (the first) and why (the last), without the quoted
/// source in between.
fn problem_of_kind(kind: &figment::error::Kind) -> String {
    let text = kind.to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or_default();
    match lines.next_back() {
        Some(last) if !last.starts_with('|') => format!("{}: {}", cut(first), cut(last)),
        _ => cut(first),
    }
}

/// Why `url` is no http(s) URL with a host, if it is not.
fn http_url_problem(url: &str) -> Option<&'static str> {
    match url::Url::parse(url) {
        Err(_) => Some("is not a URL (expected http://host... or https://host...)"),
        Ok(parsed) if !matches!(parsed.scheme(), "http" | "https") => {
            Some("must start with http:// or https://")
        }
        Ok(parsed) if parsed.host_str().is_none_or(str::is_empty) => Some("names no host"),
        Ok(_) => None,
    }
}

/// Why `url` is no database URL the bot opens, if it is not: the one rule for the setting,
/// `DATABASE_URL`, `check-config`, `migrate` and `run`.
pub fn database_url_problem(url: &str) -> Option<&'static str> {
    let ok = ["sqlite://", "postgres://", "postgresql://"]
        .iter()
        .any(|s| url.starts_with(s));
    (!ok).then_some("must start with sqlite:// or postgres://")
}

/// At most 80 characters of a text from a configuration error.
fn cut(text: &str) -> String {
    let mut cut: String = text.chars().take(80).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}

/// A wrong value as an error shows it: its kind, and the value itself only when it is short and
/// cannot be a secret (a string is never shown: it may be a key put under the wrong name).
fn shown(actual: &figment::error::Actual) -> String {
    use figment::error::Actual;
    match actual {
        Actual::Str(text) => format!("a string of {} characters", text.chars().count()),
        Actual::Bytes(_) => "bytes".to_owned(),
        Actual::Other(_) => "another kind of value".to_owned(),
        other => cut(&other.to_string()),
    }
}

fn find_secret_key(dict: &Dict, prefix: &str) -> Option<String> {
    for (key, value) in dict {
        let full = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        if crate::redact::is_secret_key(key) {
            return Some(full);
        }
        if let Value::Dict(_, inner) = value
            && let Some(found) = find_secret_key(inner, &full)
        {
            return Some(found);
        }
    }
    None
}

/// Secrets, read from the environment only. `Debug` never shows their values.
#[derive(Debug, Default)]
pub struct Secrets {
    pub discord_token: Option<SecretString>,
    pub provider_keys: Vec<SecretString>,
    /// A database URL with credentials, overriding `database.url`.
    pub database_url: Option<SecretString>,
    /// The images endpoint's own key.
    pub images_key: Option<SecretString>,
}

impl Secrets {
    /// The database to use: [`DATABASE_URL_ENV`] when set, else `database.url`.
    pub fn database_url_or(&self, database: &DatabaseConfig) -> String {
        self.database_url.as_ref().map_or_else(
            || database.url.clone(),
            |url| secrecy::ExposeSecret::expose_secret(url).to_owned(),
        )
    }

    /// Reads [`DISCORD_TOKEN_ENV`], [`PROVIDER_KEYS_ENV`], [`DATABASE_URL_ENV`] and
    /// [`IMAGES_KEY_ENV`]; empty
    /// values count as unset.
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Checks that every secret given can be sent: a token or key goes in an HTTP header, which
    /// carries only visible ASCII (a pasted line break or a non-ASCII character would otherwise
    /// fail the first request, or panic inside a client library). The error names the variable
    /// and the position, never the value.
    pub fn check(&self) -> Result<(), ConfigError> {
        use secrecy::ExposeSecret as _;
        let mut given: Vec<(&'static str, Option<usize>, &SecretString)> = Vec::new();
        if let Some(token) = &self.discord_token {
            given.push((DISCORD_TOKEN_ENV, None, token));
        }
        for (n, key) in self.provider_keys.iter().enumerate() {
            given.push((PROVIDER_KEYS_ENV, Some(n + 1), key));
        }
        if let Some(key) = &self.images_key {
            given.push((IMAGES_KEY_ENV, None, key));
        }
        for (variable, nth, secret) in given {
            let bad = secret
                .expose_secret()
                .chars()
                .position(|c| !c.is_ascii_graphic());
            if let Some(at) = bad {
                let which = nth.map_or_else(String::new, |n| format!("key {n} "));
                return Err(ConfigError::Secret {
                    variable,
                    problem: format!(
                        "{which}has a character an HTTP header cannot carry (character {}); \
                         copy it again without spaces, line breaks or non-ASCII characters",
                        at + 1
                    ),
                });
            }
        }
        Ok(())
    }

    fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let secret = |name: &str| {
            lookup(name)
                .map(|t| t.trim().to_owned())
                .filter(|t| !t.is_empty())
                .map(SecretString::from)
        };
        let discord_token = secret(DISCORD_TOKEN_ENV);
        let database_url = secret(DATABASE_URL_ENV);
        let images_key = secret(IMAGES_KEY_ENV);
        let provider_keys = lookup(PROVIDER_KEYS_ENV)
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(|k| SecretString::from(k.to_owned()))
            .collect();
        Self {
            discord_token,
            provider_keys,
            database_url,
            images_key,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret;

    fn shipped_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("config")
    }

    fn temp_config(local: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::copy(
            shipped_dir().join("default.toml"),
            dir.path().join("default.toml"),
        )
        .expect("copy defaults");
        if let Some(text) = local {
            std::fs::write(dir.path().join("local.toml"), text).expect("write local");
        }
        dir
    }

    fn no_env() -> Env {
        Env::prefixed("PERSONA_BOT_TEST_UNUSED_PREFIX_").split("__")
    }

    // SPEC D2: the shipped defaults load, and every key in them is documented by a comment.
    #[test]
    fn shipped_defaults_load_and_every_key_is_commented() {
        let config = Config::load_with_env(Some(&shipped_dir()), no_env()).expect("defaults load");
        assert_eq!(config.tools.default_timeout_secs, 300);
        let text = std::fs::read_to_string(shipped_dir().join("default.toml")).expect("read");
        let mut previous = "";
        for line in text.lines() {
            let trimmed = line.trim();
            let is_key = !trimmed.is_empty()
                && !trimmed.starts_with('#')
                && !trimmed.starts_with('[')
                && trimmed.contains('=');
            if is_key {
                assert!(
                    previous.trim_start().starts_with('#'),
                    "key without a comment above it: {trimmed}"
                );
            }
            if !trimmed.is_empty() {
                previous = line;
            }
        }
    }

    // SPEC D2: a local file overrides the defaults.
    #[test]
    fn local_file_overrides_defaults() {
        let dir = temp_config(Some("[tools]\ndefault_timeout_secs = 42\n"));
        let config = Config::load_with_env(Some(dir.path()), no_env()).expect("load");
        assert_eq!(config.tools.default_timeout_secs, 42);
    }

    // SPEC D2: the environment overrides files.
    #[test]
    #[allow(clippy::result_large_err)] // figment's Jail closure returns figment's own error type
    fn environment_overrides_files() {
        let dir = temp_config(Some("[tools]\ndefault_timeout_secs = 42\n"));
        figment::Jail::expect_with(|jail| {
            jail.set_env("PBTEST_TOOLS__DEFAULT_TIMEOUT_SECS", "7");
            let env = Env::prefixed("PBTEST_").split("__");
            let config = Config::load_with_env(Some(dir.path()), env).expect("load");
            assert_eq!(config.tools.default_timeout_secs, 7);
            Ok(())
        });
    }

    // SPEC D2: an invalid value stops start-up with one line naming the key.
    #[test]
    fn invalid_value_is_one_line_naming_the_key() {
        let dir = temp_config(Some("[tools]\ndefault_timeout_secs = \"soon\"\n"));
        let err = Config::load_with_env(Some(dir.path()), no_env()).unwrap_err();
        let line = err.to_string();
        assert!(line.contains("`tools.default_timeout_secs`"), "{line}");
        assert!(!line.contains('\n'), "{line}");
    }

    // SPEC D2: a missing key is named (a configuration given whole, without the built-in layer).
    #[test]
    fn missing_key_is_named() {
        let without: String = BUILT_IN_DEFAULTS
            .lines()
            .filter(|l| !l.starts_with("fact_max_chars"))
            .collect::<Vec<_>>()
            .join("\n");
        let err = Config::from_toml(&without).unwrap_err();
        let ConfigError::Key { key, problem } = &err else {
            panic!("expected a key error, got {err:?}");
        };
        assert_eq!(key, "memory.fact_max_chars");
        assert!(problem.starts_with("is missing"), "{problem}");
    }

    // SPEC D2: an unknown key (a typo) is named rather than ignored.
    #[test]
    fn unknown_key_is_named() {
        let dir = temp_config(Some("[tools]\ndefault_timeout_sec = 5\n"));
        let err = Config::load_with_env(Some(dir.path()), no_env()).unwrap_err();
        assert!(
            err.to_string().contains("`tools.default_timeout_sec`"),
            "{err}"
        );
    }

    // SPEC D2: background loops refuse a zero interval (a busy loop), and a worker lease must
    // outlast the image timeout (else a second worker takes a task the first still works on).
    #[test]
    fn background_intervals_and_the_worker_lease_are_checked() {
        for (toml, named) in [
            (
                "[image_worker]\npoll_ms = 0\n",
                "`image_worker.poll_ms`: must be greater than 0",
            ),
            (
                "[reminders]\npoll_ms = 0\n",
                "`reminders.poll_ms`: must be greater than 0",
            ),
            (
                "[review]\ntimeout_secs = 0\n",
                "`review.timeout_secs`: must be greater than 0",
            ),
            (
                "[provider]\nstream_max_bytes = 0\n",
                "`provider.stream_max_bytes`: must be greater than 0",
            ),
            (
                "[provider]\nstream_max_secs = 0\n",
                "`provider.stream_max_secs`: must be greater than 0",
            ),
            (
                "[image_worker]\nmax_image_bytes = 0\n",
                "`image_worker.max_image_bytes`: must be greater than 0",
            ),
            (
                "[discord]\nrate_bucket_idle_secs = 0\n",
                "`discord.rate_bucket_idle_secs`: must be greater than 0",
            ),
            (
                "[image_worker]\ntimeout_secs = 600\nlease_secs = 600\n",
                "`image_worker.lease_secs`: must be longer than image_worker.timeout_secs",
            ),
        ] {
            let dir = temp_config(Some(toml));
            let err = Config::load_with_env(Some(dir.path()), no_env()).unwrap_err();
            assert!(err.to_string().contains(named), "{toml}: {err}");
        }
    }

    // Metrics are off by default; a listen address that is not an IP and port is
    // refused by name (a host name would need a lookup; a port alone says no interface).
    #[test]
    fn the_metrics_listen_address_is_checked() {
        let config = Config::load_with_env(None, no_env()).expect("built-in defaults load");
        assert_eq!(config.metrics.listen_addr(), None, "off by default");
        for bad in [
            "localhost:9100",
            "9100",
            "127.0.0.1",
            "127.0.0.1:99999",
            "on",
        ] {
            let dir = temp_config(Some(&format!("[metrics]\nlisten = \"{bad}\"\n")));
            let err = Config::load_with_env(Some(dir.path()), no_env()).unwrap_err();
            assert!(err.to_string().contains("`metrics.listen`"), "{bad}: {err}");
        }
        let dir = temp_config(Some("[metrics]\nlisten = \"0.0.0.0:9100\"\n"));
        let config = Config::load_with_env(Some(dir.path()), no_env()).expect("load");
        assert_eq!(
            config.metrics.listen_addr(),
            Some(SocketAddr::from(([0, 0, 0, 0], 9100)))
        );
    }

    // SPEC D2: zero is out of range for a timeout.
    #[test]
    fn zero_timeout_is_refused() {
        let dir = temp_config(Some("[tools.timeouts_secs]\nplan_image = 0\n"));
        let err = Config::load_with_env(Some(dir.path()), no_env()).unwrap_err();
        assert!(
            err.to_string()
                .contains("`tools.timeouts_secs.plan_image`: must be greater than 0"),
            "{err}"
        );
    }

    // SPEC D2: secrets only from the environment; a token in a file is refused by name.
    #[test]
    fn secret_in_file_is_refused() {
        let dir = temp_config(Some("[general]\ndiscord_token = \"abc\"\n"));
        let err = Config::load_with_env(Some(dir.path()), no_env()).unwrap_err();
        assert_eq!(
            err,
            ConfigError::SecretInFile {
                key: "general.discord_token".into()
            }
        );
        assert!(!err.to_string().contains("abc"));
    }

    // SPEC D10: every count and size has an upper bound, named in the error when passed; the
    // shipped comment of each states it.
    #[test]
    fn every_count_has_a_documented_bound() {
        let config = Config::shipped_defaults();
        for (name, _, most) in config.counts() {
            let (section, key) = name.split_once('.').unwrap();
            let documented = BUILT_IN_DEFAULTS
                .split(&format!("\n{key} = "))
                .next()
                .and_then(|before| before.rsplit("\n\n").next())
                .is_some_and(|comment| comment.contains(&format!("At most {most}.")));
            assert!(documented, "{name}: its comment should say At most {most}.");
            let dir = temp_config(Some(&format!("[{section}]\n{key} = {most}\n")));
            if let Err(err) = Config::load_with_env(Some(dir.path()), no_env()) {
                assert!(
                    !err.to_string().contains("at most"),
                    "{name} at {most}: {err}"
                );
            }
            let dir = temp_config(Some(&format!("[{section}]\n{key} = {}\n", most + 1)));
            let err = Config::load_with_env(Some(dir.path()), no_env())
                .expect_err(name)
                .to_string();
            assert!(err.contains(&format!("`{name}`")), "{name}: {err}");
        }
    }

    // SPEC D10: every duration is at most a week, so no time computed from one overflows
    // (`turn.typing_interval_secs = 9223372036854775807` used to panic at the first typing
    // pulse); the error names the key.
    #[test]
    fn every_duration_is_at_most_a_week() {
        let config = Config::shipped_defaults();
        let durations = config.durations();
        assert!(durations.len() >= 21);
        for (name, _, ms) in durations {
            let (section, key) = name.split_once('.').unwrap();
            let (section, key) = match key.split_once('.') {
                Some((table, tool)) => (format!("{section}.{table}"), tool.to_owned()),
                None => (section.to_owned(), key.to_owned()),
            };
            let most = if ms { WEEK_SECS * 1000 } else { WEEK_SECS };
            for (value, ok) in [(most, true), (most + 1, false), (u64::MAX / 2, false)] {
                let dir = temp_config(Some(&format!("[{section}]\n{key} = {value}\n")));
                let loaded = Config::load_with_env(Some(dir.path()), no_env());
                if ok {
                    // At the bound it may still fail a rule of its own (a lease shorter than a
                    // timeout), but never the week.
                    if let Err(err) = loaded {
                        assert!(!err.to_string().contains("a week"), "{name}: {err}");
                    }
                } else {
                    let err = loaded.expect_err(&name).to_string();
                    assert!(err.contains(&format!("`{name}`")), "{name}: {err}");
                    assert!(err.len() <= 200, "{err}");
                }
            }
        }
    }

    // SPEC D10: a wrong value is named but not shown when it is a string (a key put under the
    // wrong name), and never makes a long line; a syntax error names the file, where and why.
    #[test]
    fn errors_never_echo_a_string_value_and_stay_short() {
        let dir = temp_config(Some(
            "[provider]\nmax_tokens = \"sk-live-abcdefghijklmnop\"\n",
        ));
        let err = Config::load_with_env(Some(dir.path()), no_env())
            .unwrap_err()
            .to_string();
        assert!(err.contains("`provider.max_tokens`"), "{err}");
        assert!(!err.contains("sk-live"), "{err}");
        let huge = "x".repeat(100_000);
        let dir = temp_config(Some(&format!("[memory]\nfacts_per_user = \"{huge}\"\n")));
        let err = Config::load_with_env(Some(dir.path()), no_env())
            .unwrap_err()
            .to_string();
        assert!(err.len() <= 300, "{} characters", err.len());
        let dir = temp_config(Some("[memory\nfacts_per_user = 3\n"));
        let err = Config::load_with_env(Some(dir.path()), no_env())
            .unwrap_err()
            .to_string();
        assert!(err.contains("local.toml"), "{err}");
        assert!(err.contains("line 1"), "{err}");
        assert!(!err.contains('\n'), "{err}");
    }

    /// Every leaf setting of the built-in defaults (`section.key`, tables nested), but the
    /// personas (an array of tables), with whether it is a number.
    fn every_leaf_setting() -> Vec<(String, bool)> {
        use figment::value::Value;
        fn walk(prefix: &str, value: &Value, out: &mut Vec<(String, bool)>) {
            match value {
                Value::Dict(_, map) => {
                    for (key, inner) in map {
                        let path = if prefix.is_empty() {
                            key.clone()
                        } else {
                            format!("{prefix}.{key}")
                        };
                        walk(&path, inner, out);
                    }
                }
                Value::Array(..) if prefix == "personas" => {}
                Value::Num(..) => out.push((prefix.to_owned(), true)),
                _ => out.push((prefix.to_owned(), false)),
            }
        }
        let defaults: Value = figment::Figment::from(Toml::string(BUILT_IN_DEFAULTS))
            .extract()
            .expect("defaults parse");
        let mut out = Vec::new();
        walk("", &defaults, &mut out);
        out
    }

    // SPEC D10: every setting, given a hostile value (0, -1, the largest integer, a key-like
    // string, 100 kB of text), either loads or fails in one line of at most 200 characters that
    // names a setting and never shows the key-like value; nothing panics.
    #[test]
    fn every_setting_survives_hostile_values() {
        let settings = every_leaf_setting();
        assert!(settings.len() > 80, "{}", settings.len());
        let planted = "sk-live-abcdefghijklmnopqrstuvwx";
        let huge = format!("\"{}\"", "x".repeat(100_000));
        for (path, numeric) in settings {
            let (section, key) = path.rsplit_once('.').expect("a section");
            let mut values = vec![format!("\"{planted}\""), huge.clone()];
            if numeric {
                values.extend(["0", "-1", "9223372036854775807"].map(str::to_owned));
            }
            for value in values {
                let dir = temp_config(Some(&format!("[{section}]\n{key} = {value}\n")));
                let Err(err) = Config::load_with_env(Some(dir.path()), no_env()) else {
                    continue;
                };
                let err = err.to_string();
                let shown: String = value.chars().take(40).collect();
                assert!(
                    err.len() <= 200,
                    "{path} = {shown}: {} characters",
                    err.len()
                );
                assert!(!err.contains('\n'), "{path} = {shown}: {err}");
                assert!(
                    err.contains('`'),
                    "{path} = {shown} names no setting: {err}"
                );
                assert!(!err.contains("sk-live"), "{path}: {err}");
            }
        }
    }

    // SPEC D10: a file that does not read names itself: invalid UTF-8, and a `default.toml`
    // that is not a file (it used to be passed over without a word).
    #[test]
    fn a_file_that_does_not_read_is_named() {
        let dir = temp_config(None);
        std::fs::write(
            dir.path().join("local.toml"),
            b"[memory]\nfact_max_chars = \"\xff\xfe\"\n",
        )
        .expect("write");
        let err = Config::load_with_env(Some(dir.path()), no_env())
            .unwrap_err()
            .to_string();
        assert!(err.contains("local.toml"), "{err}");
        assert!(!err.contains('\n') && err.len() <= 200, "{err}");
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("default.toml")).expect("mkdir");
        let err = Config::load_with_env(Some(dir.path()), no_env())
            .unwrap_err()
            .to_string();
        assert!(err.contains("default.toml: is not a file"), "{err}");
    }

    // SPEC D10: every setting with a range of its own states it in its comment, loads at both
    // ends and is refused just past each, naming the key.
    #[test]
    fn every_range_is_documented_and_enforced_at_both_ends() {
        for (name, _, (least, most)) in Config::shipped_defaults().ranges() {
            let (section, key) = name.split_once('.').unwrap();
            let comment = BUILT_IN_DEFAULTS
                .split(&format!("\n{key} = "))
                .next()
                .and_then(|before| before.rsplit("\n\n").next())
                .unwrap_or_default();
            assert!(
                comment.contains(&format!("{least} to {most}")),
                "{name}: its comment should say {least} to {most}"
            );
            let load = |value: u64| {
                let dir = temp_config(Some(&format!("[{section}]\n{key} = {value}\n")));
                Config::load_with_env(Some(dir.path()), no_env()).map_err(|e| e.to_string())
            };
            for value in [least, most] {
                if let Err(err) = load(value) {
                    assert!(
                        !err.contains(&format!("`{name}`")),
                        "{name} = {value}: {err}"
                    );
                }
            }
            let mut past = vec![most + 1];
            if least > 0 {
                past.push(least - 1);
            }
            for value in past {
                let err = load(value).expect_err(name);
                assert!(
                    err.contains(&format!("`{name}`: must be from")),
                    "{name}: {err}"
                );
            }
        }
    }

    // SPEC D10: a secret-looking setting name that is not a setting points to the variables.
    #[test]
    #[allow(clippy::result_large_err)] // figment's Jail closure returns figment's own error type
    fn a_token_setting_points_to_the_environment_variable() {
        figment::Jail::expect_with(|jail| {
            jail.set_env("PBTEST2_DISCORD__TOKEN", "abc");
            let env = Env::prefixed("PBTEST2_").split("__");
            let err = Config::load_with_env(None, env).unwrap_err().to_string();
            assert!(
                err.contains("`discord.token`") && err.contains("DISCORD_TOKEN,"),
                "{err}"
            );
            assert!(!err.contains("abc"), "{err}");
            Ok(())
        });
    }

    // SPEC D10: URLs are parsed as URLs, the ComfyUI workflow must exist when ComfyUI is used,
    // and the database URL follows the rule storage opens by.
    #[test]
    fn urls_files_and_the_database_url_are_checked() {
        for (toml, named) in [
            (
                "[provider]\nbase_url = \"http://\"\n",
                "`provider.base_url`",
            ),
            (
                "[provider]\nbase_url = \"http://exa mple/v1\"\n",
                "`provider.base_url`",
            ),
            (
                "[provider]\nbase_url = \"ftp://host/v1\"\n",
                "`provider.base_url`",
            ),
            (
                "[discord]\napi_base_url = \"proxy:3000\"\n",
                "`discord.api_base_url`",
            ),
            (
                "[image_worker]\ncomfyui_url = \"127.0.0.1:8188\"\n",
                "`image_worker.comfyui_url`",
            ),
            (
                "[image_worker]\nopenai_url = \"https://\"\n",
                "`image_worker.openai_url`",
            ),
            (
                "[image_worker]\nbackend = \"comfyui\"\ncomfyui_workflow = \"/nowhere.json\"\n",
                "`image_worker.comfyui_workflow`",
            ),
            ("[database]\nurl = \"sqlite:file.db\"\n", "`database.url`"),
            (
                "[provider]\nmodels = [\"a\"]\nvision_models = [\"b\"]\n",
                "`provider.vision_models`",
            ),
            (
                "[attachments]\norigins = [\"https://cdn.discordapp.com/attachments\"]\n",
                "`attachments.origins`",
            ),
            (
                "[provider]\nmodels = [\"a\"]\ncontext_tokens = { b = 4096 }\n",
                "`provider.context_tokens`",
            ),
            (
                "[provider]\nmodels = [\"a\"]\ncontext_tokens = { a = 100 }\n",
                "`provider.context_tokens`",
            ),
            (
                "[attachments]\norigins = [\"cdn.discordapp.com\"]\n",
                "`attachments.origins`",
            ),
        ] {
            let dir = temp_config(Some(toml));
            let err = Config::load_with_env(Some(dir.path()), no_env()).unwrap_err();
            assert!(err.to_string().contains(named), "{toml}: {err}");
        }
        assert_eq!(database_url_problem("postgres://u@h/db"), None);
        assert!(database_url_problem("sqlite:file.db").is_some());
    }

    // Pictures go to every model with `vision`, else only to those named.
    #[test]
    fn vision_is_per_model() {
        let mut p = Config::shipped_defaults().provider;
        assert!(!p.any_sees(), "shipped off");
        p.models = vec!["blind".into(), "seeing".into()];
        p.vision_models = vec!["seeing".into()];
        assert!(p.any_sees() && p.sees("seeing") && !p.sees("blind"));
        p.vision = true;
        assert!(p.sees("blind"));
    }

    // The context budget: a model's input budget is its window less the reply's
    // max_tokens, never under a quarter of the window; none when the window is not given.
    #[test]
    fn the_input_budget_leaves_room_for_the_reply() {
        let mut p = Config::shipped_defaults().provider;
        p.max_tokens = 1024;
        p.context_tokens.insert("small".into(), 4096);
        p.context_tokens.insert("tiny".into(), 1200);
        assert_eq!(p.input_budget("small"), Some(3072));
        assert_eq!(p.input_budget("tiny"), Some(300));
        assert_eq!(p.input_budget("unknown"), None);
    }

    // SPEC D10: a secret a header cannot carry is refused by its variable, never shown.
    #[test]
    fn secrets_a_header_cannot_carry_are_refused_by_name() {
        let env = |token: &str, keys: &str| {
            let (token, keys) = (token.to_owned(), keys.to_owned());
            Secrets::from_lookup(move |name| match name {
                DISCORD_TOKEN_ENV => Some(token.clone()),
                PROVIDER_KEYS_ENV => Some(keys.clone()),
                _ => None,
            })
        };
        assert_eq!(env("abc.DEF-123_x", "sk-1,sk-2").check(), Ok(()));
        let err = env("abc\u{7f}def", "sk-1").check().unwrap_err().to_string();
        assert!(
            err.contains("DISCORD_TOKEN") && err.contains("character 4"),
            "{err}"
        );
        assert!(!err.contains("abc"), "{err}");
        let err = env("ok", "sk-1, sk-ü2").check().unwrap_err().to_string();
        assert!(err.contains("PROVIDER_API_KEYS: key 2 "), "{err}");
        assert!(!err.contains("sk-"), "{err}");
        let err = env("in side", "").check().unwrap_err().to_string();
        assert!(err.contains("DISCORD_TOKEN"), "{err}");
    }

    // SPEC D6: the shards setting: "auto", one shard or a range of one total; anything else is
    // refused by name, and each range has its own stable claim name.
    #[test]
    fn shard_settings_parse_and_bad_ones_are_refused() {
        assert_eq!(ShardPlan::parse("auto"), Ok(ShardPlan::Auto));
        assert_eq!(
            ShardPlan::parse("1/2"),
            Ok(ShardPlan::Range {
                first: 1,
                last: 1,
                total: 2
            })
        );
        let range = ShardPlan::parse(" 4-7/8 ").unwrap();
        assert_eq!(range.owner(), "shards:4-7/8");
        for bad in [
            "", "2/2", "3-1/4", "0/0", "1-/2", "x/2", "0/99999", "-1/2", "0-1",
        ] {
            assert!(ShardPlan::parse(bad).is_err(), "{bad:?}");
        }
        let dir = temp_config(Some("[discord]\nshards = \"2/2\"\n"));
        let err = Config::load_with_env(Some(dir.path()), no_env()).unwrap_err();
        assert!(err.to_string().contains("`discord.shards`"), "{err}");
    }

    // SPEC D2: a config directory named on the command line that does not exist is one line
    // naming it.
    #[test]
    fn a_missing_config_dir_is_named() {
        let dir = tempfile::tempdir().expect("temp dir");
        let gone = dir.path().join("nowhere");
        let err = Config::load_with_env(Some(&gone), no_env()).unwrap_err();
        assert_eq!(err, ConfigError::MissingDir(gone));
        assert!(err.to_string().contains("does not exist"), "{err}");
    }

    // The binary runs from anywhere. Without a config directory, or with one that holds
    // only a local.toml, the built-in defaults fill every key.
    #[test]
    fn the_built_in_defaults_need_no_files() {
        let config = Config::load_with_env(None, no_env()).expect("built-in defaults load");
        assert_eq!(config.tools.default_timeout_secs, 300);
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(
            dir.path().join("local.toml"),
            "[memory]\nfacts_per_user = 9\n",
        )
        .expect("write local");
        let config = Config::load_with_env(Some(dir.path()), no_env()).expect("local only");
        assert_eq!(config.memory.facts_per_user, 9);
        assert_eq!(config.tools.default_timeout_secs, 300);
    }

    // A default.toml in the config directory is a layer over the built-in one (an operator's
    // edited copy), and local.toml wins over it.
    #[test]
    fn a_default_file_in_the_dir_overrides_the_built_in_one() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(
            dir.path().join("default.toml"),
            "[memory]\nfacts_per_user = 9\nfacts_per_server = 10\n",
        )
        .expect("write defaults");
        std::fs::write(
            dir.path().join("local.toml"),
            "[memory]\nfacts_per_user = 8\n",
        )
        .expect("write local");
        let config = Config::load_with_env(Some(dir.path()), no_env()).expect("load");
        assert_eq!(config.memory.facts_per_user, 8);
        assert_eq!(config.memory.facts_per_server, 10);
    }

    // SPEC D2: a database password in a file is refused; it belongs in DATABASE_URL.
    #[test]
    fn database_password_in_file_is_refused() {
        let dir = temp_config(Some(
            "[database]\nurl = \"postgres://bot:hunter2@db/bot\"\n",
        ));
        let err = Config::load_with_env(Some(dir.path()), no_env()).unwrap_err();
        assert!(err.to_string().contains("`database.url`"), "{err}");
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }

    /// Every way a secret is written into a URL: the userinfo's password, an HTTP user name, a
    /// secret-named query parameter (alone or after another), a key-like query value.
    fn planted(base: &str, secret: &str) -> Vec<String> {
        let (scheme, rest) = base.split_once("://").expect("a URL");
        let mut urls = vec![format!("{scheme}://bot:{secret}@{rest}")];
        if scheme.starts_with("http") {
            urls.push(format!("{scheme}://{secret}@{rest}"));
        }
        for name in [
            "password", "PASSWORD", "pass", "pwd", "token", "secret", "key", "api_key", "auth",
        ] {
            urls.push(format!("{base}?{name}={secret}"));
            urls.push(format!("{base}?v=1&{name}={secret}"));
        }
        urls.push(format!("{base}?note=sk-{secret}{secret}"));
        urls
    }

    // SPEC D13: a credential in any part of any URL setting read from a file (the userinfo, a
    // query parameter) is refused, naming the setting and the environment variable that may
    // carry it instead, never the secret. A query password in database.url used to pass.
    #[test]
    fn a_credential_in_any_part_of_a_url_in_a_file_is_refused() {
        let secret = "hunter2hunter2";
        let settings = [
            (
                "database",
                "url",
                "postgres://bot@db.internal/bot",
                "DATABASE_URL",
            ),
            (
                "discord",
                "api_base_url",
                "https://proxy.example",
                "PERSONA_BOT_DISCORD__API_BASE_URL",
            ),
            (
                "provider",
                "base_url",
                "https://api.example/v1",
                "PERSONA_BOT_PROVIDER__BASE_URL",
            ),
            (
                "image_worker",
                "comfyui_url",
                "http://127.0.0.1:8188",
                "PERSONA_BOT_IMAGE_WORKER__COMFYUI_URL",
            ),
            (
                "image_worker",
                "openai_url",
                "https://api.example/v1",
                "PERSONA_BOT_IMAGE_WORKER__OPENAI_URL",
            ),
        ];
        for (section, key, base, variable) in settings {
            for url in planted(base, secret) {
                let dir = temp_config(Some(&format!("[{section}]\n{key} = \"{url}\"\n")));
                let err = Config::load_with_env(Some(dir.path()), no_env())
                    .expect_err(&url)
                    .to_string();
                assert!(err.contains(&format!("`{section}.{key}`")), "{url}: {err}");
                assert!(err.contains(variable), "{url}: {err}");
                assert!(!err.contains(secret), "{url}: {err}");
            }
        }
        // Lists: no credentials in them at all.
        for url in planted("https://cdn.example", secret) {
            for toml in [
                format!("[attachments]\norigins = [\"{url}\"]\n"),
                format!(
                    "[[personas]]\nid = \"p\"\ndisplay_name = \"P\"\nsystem_prompt = \"x\"\n\
                     avatar_url = \"{url}/a.png\"\n"
                ),
            ] {
                let dir = temp_config(Some(&toml));
                let err = Config::load_with_env(Some(dir.path()), no_env())
                    .expect_err(&toml)
                    .to_string();
                assert!(err.contains("takes no credentials"), "{toml}: {err}");
                assert!(!err.contains(secret), "{toml}: {err}");
            }
        }
        // Paths to files are no secrets.
        let dir = temp_config(Some(
            "[database]\nurl = \"postgres://bot@db/bot?sslmode=verify-full&sslrootcert=/ca.pem\"\n",
        ));
        Config::load_with_env(Some(dir.path()), no_env()).expect("a CA file is no secret");
    }

    // SPEC D13: the variable the refusal names is taken: a URL with credentials from the
    // environment loads; only the database's goes in DATABASE_URL, not its setting's override.
    #[test]
    #[allow(clippy::result_large_err)] // figment's Jail closure returns figment's own error type
    fn credentials_in_a_url_come_from_the_environment() {
        figment::Jail::expect_with(|jail| {
            jail.set_env(
                "PBTEST3_DISCORD__API_BASE_URL",
                "https://bot:hunter2@proxy.example/?token=hunter2",
            );
            let env = Env::prefixed("PBTEST3_").split("__");
            let config = Config::load_with_env(None, env).expect("from the environment");
            assert!(config.discord.api_base_url.contains("hunter2"));
            jail.set_env(
                "PBTEST3_DATABASE__URL",
                "postgres://bot@db/bot?password=hunter2",
            );
            let env = Env::prefixed("PBTEST3_").split("__");
            let err = Config::load_with_env(None, env).unwrap_err().to_string();
            assert!(err.contains("DATABASE_URL"), "{err}");
            assert!(!err.contains("hunter2"), "{err}");
            Ok(())
        });
    }

    // SPEC D10: a refused attachment origin is named without its credentials.
    #[test]
    fn a_refused_origin_is_shown_without_credentials() {
        let config = Config::shipped_defaults();
        let mut bad = config.clone();
        bad.attachments.origins = vec!["https://bot:hunter2@cdn.example/x?token=hunter2".into()];
        let err = bad.check_vision_and_origins().unwrap_err().to_string();
        assert!(err.contains("`attachments.origins`"), "{err}");
        assert!(err.contains("cdn.example"), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
    }

    #[test]
    fn secrets_come_from_the_environment_and_never_print() {
        let secrets = Secrets::from_lookup(|name| match name {
            DISCORD_TOKEN_ENV => Some(" tok-123 ".into()),
            PROVIDER_KEYS_ENV => Some("k1, ,k2".into()),
            IMAGES_KEY_ENV => Some("img-9".into()),
            _ => None,
        });
        assert_eq!(
            secrets.images_key.as_ref().map(|k| k.expose_secret()),
            Some("img-9")
        );
        assert_eq!(
            secrets.discord_token.as_ref().map(|t| t.expose_secret()),
            Some("tok-123")
        );
        assert_eq!(secrets.provider_keys.len(), 2);
        let shown = format!("{secrets:?}");
        assert!(
            !shown.contains("tok-123") && !shown.contains("k1") && !shown.contains("img-9"),
            "{shown}"
        );
    }
}
