//! Secret redaction: one redactor for everything moderators, operators and the model's
//! reviewers read. Tool arguments (JSON: secret-named keys and secret-looking values), tool
//! failure reasons and messages, provider error text and progress text all pass through here
//! before they reach the thought log, a tool event or a log line. Config uses
//! [`is_secret_key`] to refuse secrets written in files.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

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

/// Masks every secret-looking value inside free text (a reason, an error message, a progress
/// line): provider keys, bearer tokens, Discord and other service tokens, and long opaque
/// strings of letters and digits (not a URL's path). The text is otherwise unchanged.
pub fn redact_text(text: &str) -> String {
    let masked = SECRET_VALUE.replace_all(text, REDACTED);
    OPAQUE_RUN
        .replace_all(&masked, |caps: &regex::Captures<'_>| {
            let run = caps.get(0).map_or("", |m| m.as_str());
            // A URL's path (after "://") is not a credential.
            if looks_opaque(run) && !run.starts_with("//") {
                REDACTED.to_owned()
            } else {
                run.to_owned()
            }
        })
        .into_owned()
}

/// A run of characters a credential is made of, long enough to be one.
static OPAQUE_RUN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[A-Za-z0-9_\-\.=+/]{32,}").unwrap_or_else(|e| unreachable!("static regex: {e}"))
});

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

    // SPEC T11: a tool's own reason quoting a key-like argument is masked (it once reached the
    // thought log as "No sticker named `sk-...`").
    #[test]
    fn free_text_is_masked_where_it_quotes_a_secret() {
        let key = "sk-proj-abcdefghijklmnopqrstuvwxyz012345";
        let out = redact_text(&format!("No sticker named `{key}`; try another"));
        assert_eq!(out, "No sticker named `[redacted]`; try another");
        let opaque = "a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6";
        assert_eq!(
            redact_text(&format!("id: {opaque}.")),
            format!("id: {REDACTED}")
        );
        let plain = "https://cdn.example.com/attachments/123456789012/987654321098/cat.png ok";
        assert_eq!(redact_text(plain), plain);
    }
}
