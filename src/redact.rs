//! Secret redaction: one redactor for everything moderators, operators and the model's
//! reviewers read. Tool arguments (JSON: secret-named keys and secret-looking values), tool
//! failure reasons and messages, provider error text and progress text all pass through here
//! before they reach the thought log, a tool event or a log line. Config uses
//! [`is_secret_key`] to refuse secrets written in files. Every URL a log line, an error or a
//! printed line shows goes through [`shown_url`] (SPEC D13).

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

/// A webhook's token in its URL (`.../webhooks/ID/TOKEN`, on Discord or a proxy): the id is
/// kept, the token masked, however short it is.
static WEBHOOK_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(/webhooks/[0-9]{5,}/)[A-Za-z0-9_\-]{8,}")
        .unwrap_or_else(|e| unreachable!("static regex: {e}"))
});

/// Masks the secrets this module knows by their shape: webhook tokens, then keys and tokens.
fn mask_known(text: &str) -> String {
    let text = WEBHOOK_TOKEN.replace_all(text, format!("${{1}}{REDACTED}"));
    SECRET_VALUE.replace_all(&text, REDACTED).into_owned()
}

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
    cut(&mask_known(s), max)
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
    let masked = mask_known(text);
    OPAQUE_RUN
        .replace_all(&masked, |caps: &regex::Captures<'_>| {
            let run = caps.get(0).map_or("", |m| m.as_str());
            // A URL (after "scheme:") is read part by part: its path is no credential, but an
            // opaque part of it is (a token in a path).
            if run.starts_with("//") {
                mask_segments(run)
            } else if looks_opaque(run) {
                REDACTED.to_owned()
            } else {
                run.to_owned()
            }
        })
        .into_owned()
}

/// `a/b/c` with each opaque part masked.
fn mask_segments(path: &str) -> String {
    path.split('/')
        .map(|part| if looks_opaque(part) { REDACTED } else { part })
        .collect::<Vec<_>>()
        .join("/")
}

/// A URL as a log line, an error or a printed line shows it (SPEC D13): its scheme, host, port
/// and path (opaque parts of the path, such as a webhook's token, masked), with any userinfo
/// and every query value and fragment replaced by [`REDACTED`]. Text that does not parse as a
/// URL loses everything between `://` and `@` and everything from `?` or `#` on.
pub fn shown_url(raw: &str) -> String {
    use std::fmt::Write as _;
    let Ok(url) = url::Url::parse(raw.trim()) else {
        return shown_unparsed(raw);
    };
    let mut shown = format!("{}:", url.scheme());
    if url.has_authority() {
        shown.push_str("//");
    }
    if !url.username().is_empty() || url.password().is_some() {
        let _ = write!(shown, "{REDACTED}@");
    }
    shown.push_str(url.host_str().unwrap_or_default());
    if let Some(port) = url.port() {
        let _ = write!(shown, ":{port}");
    }
    shown.push_str(&mask_segments(&mask_known(url.path())));
    if let Some(query) = url.query() {
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) if is_plain_name(key) => format!("{key}={REDACTED}"),
                _ => REDACTED.to_owned(),
            })
            .collect();
        let _ = write!(shown, "?{}", pairs.join("&"));
    }
    if url.fragment().is_some() {
        let _ = write!(shown, "#{REDACTED}");
    }
    shown
}

/// A query parameter's name shown as it is: short, plain, and no value in disguise.
fn is_plain_name(key: &str) -> bool {
    (1..=32).contains(&key.len())
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.[]".contains(c))
        && mask_known(key) == key
}

/// [`shown_url`] for text that is no URL.
fn shown_unparsed(raw: &str) -> String {
    static USERINFO: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"://[^/?#\s]*@").unwrap_or_else(|e| unreachable!("static regex: {e}"))
    });
    let before = raw.split(['?', '#']).next().unwrap_or_default();
    let mut shown = USERINFO
        .replace_all(before, format!("://{REDACTED}@"))
        .into_owned();
    if before.len() < raw.len() {
        shown.push('?');
        shown.push_str(REDACTED);
    }
    redact_text(&shown)
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

    // SPEC D13: a webhook URL's token is masked wherever the URL starts (`https://`, `//`, a
    // proxy's host) and however short the token; the webhook's id stays, to say which one. A
    // bot token is masked too.
    #[test]
    fn webhook_urls_lose_their_token() {
        let token = format!("{}_-{}", "AbCdEfGhIj".repeat(6), "xyz123");
        for url in [
            format!("https://discord.com/api/webhooks/123456789012345678/{token}"),
            format!("//discord.com/api/v10/webhooks/123456789012345678/{token}?wait=true"),
            "//proxy.internal/api/webhooks/1234567/short_tok3n".to_owned(),
        ] {
            let out = redact_text(&format!("posting through {url} failed"));
            assert!(
                !out.contains(&token) && !out.contains("short_tok3n"),
                "{out}"
            );
            assert!(out.contains("/webhooks/1234567"), "{out}");
            assert!(out.starts_with("posting through ") && out.ends_with(" failed"));
        }
        let bot = "MTE0NjM4MjY0NzY3ODQwMjU5Mg.GhIjKl.abcdefghijklmnopqrstuvwxyz0123456789AB";
        let out = redact_text(&format!("//gateway.discord.gg/?v=10 token {bot}"));
        assert!(!out.contains(bot), "{out}");
    }

    // SPEC D13: a run that starts with `//` (a URL after its scheme) used to pass whole, so an
    // opaque token in its path did too; each opaque part is masked, the rest of the path kept.
    #[test]
    fn an_opaque_part_of_a_url_path_is_masked() {
        let token = "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8";
        let out = redact_text(&format!("GET https://hooks.example.com/services/{token}/x"));
        assert_eq!(
            out,
            format!("GET https://hooks.example.com/services/{REDACTED}/x")
        );
        let out = redact_text(&format!("see //example.com/{token}"));
        assert_eq!(out, format!("see //example.com/{REDACTED}"));
        let plain = "https://cdn.discordapp.com/attachments/123456789012/987654321098/cat.png";
        assert_eq!(redact_text(plain), plain);
    }

    // SPEC D13: a URL is shown without its userinfo, query values or fragment, whatever it is
    // (a proxy, a provider, a database), parsed or not; scheme, host, port and path stay.
    #[test]
    fn shown_urls_keep_no_credentials() {
        for (raw, shown) in [
            (
                "https://bot:hunter2@proxy.example:8443/api?token=abc&v=10#frag",
                "https://[redacted]@proxy.example:8443/api?token=[redacted]&v=[redacted]#[redacted]",
            ),
            (
                "postgres://bot:hunter2@db.internal/bot?sslmode=verify-full&password=hunter2",
                "postgres://[redacted]@db.internal/bot?sslmode=[redacted]&password=[redacted]",
            ),
            (
                "sqlite://data/persona-bot.db",
                "sqlite://data/persona-bot.db",
            ),
            (
                "http://127.0.0.1:9/v1?hunter2",
                "http://127.0.0.1:9/v1?[redacted]",
            ),
            (
                "not a url://bot:hunter2@host/x?key=hunter2",
                "not a url://[redacted]@host/x?[redacted]",
            ),
        ] {
            assert_eq!(shown_url(raw), shown, "{raw}");
            assert!(!shown_url(raw).contains("hunter2"), "{raw}");
        }
        let webhook = format!(
            "https://discord.com/api/webhooks/123456789012345678/{}",
            "T0k".repeat(20)
        );
        assert!(!shown_url(&webhook).contains("T0kT0k"), "{webhook}");
    }
}
