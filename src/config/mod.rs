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

pub mod bound;
mod content;
mod database;
mod discord;
mod error;
mod general;
mod mcp;
mod provider;
mod secrets;
mod service;
mod turn;
mod urls;

#[cfg(test)]
mod tests;

pub use content::{DeliberateConfig, ImageConfig, MemoryConfig, ThoughtLogConfig, ToolsConfig};
pub use database::{DatabaseConfig, database_url_problem};
pub use discord::{AttachmentsConfig, CatchUpConfig, DiscordConfig, MessageContent, ShardPlan};
pub use error::ConfigError;
use error::{cut, from_figment, problem_of};
pub use general::{GeneralConfig, PersonaConfig};
pub use mcp::{ApprovalPolicy, HeaderFromEnv, McpConfig, McpServerConfig};
pub use provider::{ProviderConfig, ReviewConfig};
pub use secrets::Secrets;
use secrets::find_secret_key;
pub use service::{
    ImageBackendKind, ImageWorkerConfig, MetricsConfig, RemindersConfig, ShutdownConfig,
};
pub use turn::{KillPermission, ReplyStyle, TurnConfig};
use urls::http_url_problem;

/// Each section's numeric bounds ([`bound::Bound`]), file by file.
const SECTION_BOUNDS: [&[bound::Bound]; 7] = [
    content::BOUNDS,
    database::BOUNDS,
    turn::BOUNDS,
    provider::BOUNDS,
    discord::BOUNDS,
    service::BOUNDS,
    mcp::BOUNDS,
];

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
    pub mcp: McpConfig,
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
        // Each window's range is a bound; here, that it names a model in use.
        if let Some(model) = p.context_tokens.keys().find(|m| !p.models.contains(m)) {
            return Err(ConfigError::Key {
                key: "provider.context_tokens".to_owned(),
                problem: format!("names {}, which is not in provider.models", cut(model)),
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

    /// How the process runs as a service: its time zone, its shards.
    fn check_service_settings(&self) -> Result<(), ConfigError> {
        let key = |k: &str, problem: &str| ConfigError::Key {
            key: k.to_owned(),
            problem: problem.to_owned(),
        };
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

    fn validate(&self) -> Result<(), ConfigError> {
        let key = |k: &str, problem: &str| ConfigError::Key {
            key: k.to_owned(),
            problem: problem.to_owned(),
        };
        let (t, w) = (&self.turn, &self.image_worker);
        bound::check(self)?;
        self.check_service_settings()?;
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
        self.mcp.validate()?;
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
