//! Who speaks and in which language: the fallback locale, the log filter, and the personas
//! shipped in configuration.

use serde::Deserialize;

use crate::locale::Locale;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneralConfig {
    /// Locale for servers and users whose own locale is unknown or not translated.
    pub default_locale: Locale,
    /// `tracing` filter used when `RUST_LOG` is not set.
    pub log_filter: String,
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
