//! The model server: its endpoint and models, stream limits, pictures, context windows, and the
//! reviewer that uses the same endpoint.

use serde::Deserialize;

use super::bound::{Bound, Read, Unit, WEEK_SECS};

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

/// The ranges of this file's numeric settings ([`super::bound`] checks and documents them).
pub(super) const BOUNDS: &[Bound] = &[
    Bound {
        key: "provider.first_token_timeout_secs",
        least: 1,
        most: WEEK_SECS,
        unit: Unit::Secs,
        read: Read::One(|c| c.provider.first_token_timeout_secs),
    },
    Bound {
        key: "provider.idle_timeout_secs",
        least: 1,
        most: WEEK_SECS,
        unit: Unit::Secs,
        read: Read::One(|c| c.provider.idle_timeout_secs),
    },
    Bound {
        key: "provider.key_cooldown_secs",
        least: 0,
        most: WEEK_SECS,
        unit: Unit::Secs,
        read: Read::One(|c| c.provider.key_cooldown_secs),
    },
    Bound {
        key: "provider.max_tokens",
        least: 1,
        most: 1_000_000,
        unit: Unit::Tokens,
        read: Read::One(|c| c.provider.max_tokens.into()),
    },
    Bound {
        key: "provider.stream_max_bytes",
        least: 1,
        most: 268_435_456,
        unit: Unit::Bytes,
        read: Read::One(|c| c.provider.stream_max_bytes as u64),
    },
    Bound {
        key: "provider.stream_max_secs",
        least: 1,
        most: WEEK_SECS,
        unit: Unit::Secs,
        read: Read::One(|c| c.provider.stream_max_secs),
    },
    Bound {
        key: "provider.context_tokens",
        least: 256,
        most: 10_000_000,
        unit: Unit::Tokens,
        read: Read::Each(|c| {
            c.provider
                .context_tokens
                .iter()
                .map(|(k, v)| (k.as_str(), u64::from(*v)))
                .collect()
        }),
    },
    Bound {
        key: "review.timeout_secs",
        least: 1,
        most: WEEK_SECS,
        unit: Unit::Secs,
        read: Read::One(|c| c.review.timeout_secs),
    },
];

#[cfg(test)]
mod tests {
    use crate::config::Config;

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
}
