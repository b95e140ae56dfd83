//! Moderator notices for the hidden thought-log channel: what they carry, how they render
//! (localized), and how tool arguments are redacted before they go anywhere a human reads.
//!
//! The core decides *whether* a notice is posted (never from a DM or a private channel, SPEC
//! T11); the Discord adapter turns a rendered [`Card`] into an embed.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::chat::scope::ChannelId;
use crate::locale::{self, Locale};

/// What kind of failure a notice reports. The model and the thought log can tell these apart
/// (SPEC S4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureKind {
    UnknownTool,
    InvalidArguments,
    Denied,
    Truncated,
    /// Refused before running by deliberate tool mode or a per-turn rule.
    Blocked,
    /// The tool ran and failed.
    Execution,
    /// A valid call about something that does not exist (an unknown sticker name).
    Business,
    TimedOut,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnknownTool => "unknown_tool",
            Self::InvalidArguments => "invalid_arguments",
            Self::Denied => "tool_denied",
            Self::Truncated => "truncated_arguments",
            Self::Blocked => "blocked",
            Self::Execution => "execution_failed",
            Self::Business => "business_error",
            Self::TimedOut => "timed_out",
        }
    }

    fn label_key(self) -> &'static str {
        match self {
            Self::UnknownTool => "notice-kind-unknown-tool",
            Self::InvalidArguments => "notice-kind-invalid-arguments",
            Self::Denied => "notice-kind-denied",
            Self::Truncated => "notice-kind-truncated",
            Self::Blocked => "notice-kind-blocked",
            Self::Execution => "notice-kind-execution",
            Self::Business => "notice-kind-business",
            Self::TimedOut => "notice-kind-timed-out",
        }
    }
}

/// A notice for the thought log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A tool call failed or was refused. `arguments` are already redacted.
    ToolFailed {
        tool: String,
        kind: FailureKind,
        code: String,
        reason: String,
        arguments: String,
        /// A timed-out tool may still finish its external work: its effect is unknown (T5).
        effect_unknown: bool,
    },
    /// Deliberate tool mode admitted a tool because the user's message matched a trigger.
    DeliberateTrigger { tool: String, trigger: String },
    /// A quiet turn's progress, as a full card instead of a line in the conversation.
    Progress {
        channel: ChannelId,
        tool: String,
        text: String,
    },
    /// What one turn did: its end, passes, tool calls, time and tokens.
    TurnSummary {
        channel: ChannelId,
        status: String,
        passes: u32,
        tool_calls: u32,
        duration_ms: u64,
        prompt_tokens: u32,
        completion_tokens: u32,
        /// Each review verdict, one line each (`plan_image: reject (too graphic)`).
        reviews: Vec<String>,
    },
}

/// A rendered notice: the adapter maps it to an embed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Card {
    pub title: String,
    pub fields: Vec<(String, String)>,
    /// Embed colour (0xRRGGBB).
    pub colour: u32,
}

const RED: u32 = 0xD9_3F_3F;
const BLUE: u32 = 0x3F_7F_D9;
const GREY: u32 = 0x80_80_80;

/// Renders a notice in the server's locale.
pub fn render(notice: &Notice, locale: Locale) -> Card {
    let t = |key: &str| locale::text(locale, key);
    match notice {
        Notice::ToolFailed {
            tool,
            kind,
            code,
            reason,
            arguments,
            effect_unknown,
        } => {
            let mut fields = vec![
                (t("notice-field-tool"), format!("`{tool}`")),
                (t("notice-field-kind"), t(kind.label_key())),
                (t("notice-field-code"), format!("`{code}`")),
                (t("notice-field-reason"), reason.clone()),
                (
                    t("notice-field-arguments"),
                    format!("```json\n{arguments}\n```"),
                ),
            ];
            if *effect_unknown {
                fields.push((t("notice-field-effect"), t("notice-effect-unknown")));
            }
            Card {
                title: t("notice-tool-failed-title"),
                fields,
                colour: RED,
            }
        }
        Notice::DeliberateTrigger { tool, trigger } => Card {
            title: t("notice-deliberate-title"),
            fields: vec![
                (t("notice-field-tool"), format!("`{tool}`")),
                (t("notice-field-trigger"), format!("\"{trigger}\"")),
            ],
            colour: BLUE,
        },
        Notice::Progress {
            channel,
            tool,
            text,
        } => Card {
            title: t("notice-progress-title"),
            fields: vec![
                (t("notice-field-channel"), format!("<#{channel}>")),
                (t("notice-field-tool"), format!("`{tool}`")),
                (t("notice-field-progress"), text.clone()),
            ],
            colour: GREY,
        },
        Notice::TurnSummary {
            channel,
            status,
            passes,
            tool_calls,
            duration_ms,
            prompt_tokens,
            completion_tokens,
            reviews,
        } => {
            let mut fields = vec![
                (t("notice-field-channel"), format!("<#{channel}>")),
                (t("notice-field-status"), format!("`{status}`")),
                (t("notice-field-passes"), passes.to_string()),
                (t("notice-field-tool-calls"), tool_calls.to_string()),
                (
                    t("notice-field-duration"),
                    format!("{:.1} s", *duration_ms as f64 / 1000.0),
                ),
                (
                    t("notice-field-tokens"),
                    format!("{prompt_tokens} / {completion_tokens}"),
                ),
            ];
            if !reviews.is_empty() {
                fields.push((t("notice-field-reviews"), reviews.join("\n")));
            }
            Card {
                title: t("notice-turn-title"),
                fields,
                colour: GREY,
            }
        }
    }
}

/// The placeholder for a redacted value.
pub const REDACTED: &str = "[redacted]";

/// Whether an argument or config key names a secret: it mentions a password, secret, credential,
/// authorization, API key or cookie anywhere, or ends in `token` or `key`
/// (`discord_token`, `openai_key`; not `max_tokens` or `first_token_timeout_secs`).
pub fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    const ANYWHERE: &[&str] = &[
        "secret",
        "password",
        "passwd",
        "apikey",
        "api_key",
        "api-key",
        "authorization",
        "credential",
        "cookie",
        "session_id",
    ];
    ANYWHERE.iter().any(|n| key.contains(n)) || key.ends_with("token") || key.ends_with("key")
}

static SECRET_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    // Provider keys (sk-...), bearer tokens, Discord bot tokens, GitHub and Slack tokens, AWS
    // access keys.
    Regex::new(
        r"(?x)
        sk-[A-Za-z0-9_\-]{16,}
        | (?i:bearer)\s+[A-Za-z0-9_\-\.=+/]{8,}
        | [MNO][A-Za-z0-9_\-]{23,}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,}
        | gh[pousr]_[A-Za-z0-9]{20,}
        | xox[abprs]-[A-Za-z0-9\-]{10,}
        | AKIA[0-9A-Z]{16}
        ",
    )
    .unwrap_or_else(|e| unreachable!("static regex: {e}"))
});

/// A long opaque string (letters and digits, no spaces) is treated as a credential.
fn looks_opaque(s: &str) -> bool {
    s.len() >= 32
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.=+/".contains(c))
        && s.chars().any(|c| c.is_ascii_digit())
        && s.chars().any(|c| c.is_ascii_alphabetic())
}

/// Cuts `s` to `max` characters, saying how much was cut.
pub fn cut(s: &str, max: usize) -> String {
    let total = s.chars().count();
    if total <= max {
        return s.to_owned();
    }
    let kept: String = s.chars().take(max).collect();
    format!("{kept}… (+{} chars)", total - max)
}

fn redact_str(s: &str, max: usize) -> String {
    if looks_opaque(s) {
        return REDACTED.to_owned();
    }
    let masked = SECRET_VALUE.replace_all(s, REDACTED);
    cut(&masked, max)
}

fn redact_value(value: &Value, max: usize) -> Value {
    match value {
        Value::String(s) => Value::String(redact_str(s, max)),
        Value::Array(items) => Value::Array(items.iter().map(|v| redact_value(v, max)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if is_secret_key(k) {
                        Value::String(REDACTED.to_owned())
                    } else {
                        redact_value(v, max)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Redacts tool arguments for notices, events and logs: secret keys and secret-looking values
/// become `[redacted]`, long free text is cut to `max` characters. Text that is not JSON is
/// masked and cut as a whole.
pub fn redact_arguments(raw: &str, max: usize) -> String {
    match serde_json::from_str::<Value>(raw) {
        Ok(value) => redact_value(&value, max).to_string(),
        Err(_) => redact_str(raw, max),
    }
}

/// Redacts an already parsed argument value.
pub fn redact_parsed(value: &Value, max: usize) -> String {
    redact_value(value, max).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    // SPEC T11: secrets, tokens and keys are redacted; long free text is cut.
    #[test]
    fn arguments_are_redacted_and_cut() {
        let raw = r#"{"api_key":"abc","note":"my key is sk-abcdefghijklmnopqrstuv ok",
            "auth":{"token":"t"},"text":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa aaaa",
            "n":3,"opaque":"a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6"}"#;
        let out = redact_arguments(raw, 20);
        let v: Value = serde_json::from_str(&out).expect("json");
        assert_eq!(v["api_key"], REDACTED);
        assert_eq!(v["auth"]["token"], REDACTED);
        assert_eq!(v["note"], "my key is [redacted]… (+3 chars)");
        assert_eq!(v["text"], "aaaaaaaaaaaaaaaaaaaa… (+37 chars)");
        assert_eq!(v["n"], 3);
        assert_eq!(v["opaque"], REDACTED);
        assert!(!out.contains("sk-abc"));
    }

    // SPEC T11: a Discord token or bearer header in non-JSON text is masked too.
    #[test]
    fn non_json_text_is_masked_and_cut() {
        let token = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GaBcDe.abcdefghijklmnopqrstuvwxyz0123";
        let out = redact_arguments(&format!("{{\"broken\": \"{token} Bearer abcdefgh12"), 500);
        assert!(!out.contains(token), "{out}");
        assert!(!out.contains("abcdefgh12"), "{out}");
        assert!(out.contains(REDACTED));
    }

    #[test]
    fn secret_keys_are_recognised() {
        for key in [
            "token",
            "DISCORD_TOKEN",
            "api_key",
            "apiKey",
            "password",
            "key",
            "openai_key",
        ] {
            assert!(is_secret_key(key), "{key}");
        }
        for key in [
            "keyword",
            "name",
            "sticker",
            "max_tokens",
            "first_token_timeout_secs",
            "keys_used",
        ] {
            assert!(!is_secret_key(key), "{key}");
        }
    }

    // SPEC T11, D3: notices render in the server's language.
    #[test]
    fn notices_render_localized() {
        let notice = Notice::ToolFailed {
            tool: "plan_image".into(),
            kind: FailureKind::TimedOut,
            code: "tool_timeout".into(),
            reason: "timed out".into(),
            arguments: "{}".into(),
            effect_unknown: true,
        };
        let en = render(&notice, Locale::En);
        let ja = render(&notice, Locale::Ja);
        assert_ne!(en.title, ja.title);
        assert_eq!(en.fields.len(), 6);
        assert!(
            en.fields
                .iter()
                .all(|(k, v)| !k.starts_with("notice-") && !v.starts_with("notice-"))
        );
    }
}
