//! No credential in any URL read from a file (SPEC D13): a URL setting that carries a password,
//! an HTTP user name or a secret-looking query parameter is refused, naming the environment
//! variable that may carry it instead. Values from the environment are not checked here (that
//! is where secrets go); how a URL is shown anywhere is [`crate::redact::shown_url`].

use figment::value::{Dict, Value};

use super::{ConfigError, DATABASE_URL_ENV, ENV_PREFIX};

/// Query parameters whose value is a file's path, not a secret, though their names look like
/// one (a database client's key file).
const PATH_PARAMETERS: &[&str] = &["sslkey", "ssl-key"];

/// Short names for secrets that [`crate::redact::is_secret_key`] leaves alone.
const SECRET_PARAMETERS: &[&str] = &["pass", "pwd", "pw", "sig", "signature", "auth"];

/// What in `url` is a credential, in words that never quote it; `None` for a URL without one,
/// or text that is no URL.
pub(super) fn credential_in(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url.trim()).ok()?;
    if parsed.password().is_some() {
        return Some("holds a password".to_owned());
    }
    if matches!(parsed.scheme(), "http" | "https") && !parsed.username().is_empty() {
        return Some("holds a user name, which an HTTP server takes as a credential".to_owned());
    }
    for (key, value) in parsed.query_pairs() {
        let lower = key.to_ascii_lowercase();
        if PATH_PARAMETERS.contains(&lower.as_str()) {
            continue;
        }
        let named = crate::redact::is_secret_key(&lower) || SECRET_PARAMETERS.contains(&&*lower);
        if named || crate::redact::redact_text(&value) != value {
            // The name is shown when it is a plain one (a name can be a value in disguise).
            let plain = key.len() <= 32
                && key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-".contains(c))
                && crate::redact::redact_text(&key) == key;
            return Some(if plain {
                format!("holds a secret in its query (the value of `{key}`)")
            } else {
                "holds a secret in its query".to_owned()
            });
        }
    }
    None
}

/// The first URL in a file's settings that carries a credential, as the error naming it.
pub(super) fn refuse_credentials(dict: &Dict) -> Result<(), ConfigError> {
    match find(dict, "", false) {
        Some((key, problem, in_list)) => {
            let instead = if in_list {
                "files hold no secrets, and this setting takes no credentials".to_owned()
            } else {
                format!(
                    "files hold no secrets: give the whole URL in the environment variable {} \
                     instead",
                    variable_for(&key)
                )
            };
            Err(ConfigError::Key {
                key,
                problem: format!("{problem}; {instead}"),
            })
        }
        None => Ok(()),
    }
}

/// `(key, problem, inside a list)` of the first string setting that is a URL with a credential.
fn find(dict: &Dict, prefix: &str, in_list: bool) -> Option<(String, String, bool)> {
    dict.iter().find_map(|(key, value)| {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        find_in(value, path, in_list)
    })
}

fn find_in(value: &Value, path: String, in_list: bool) -> Option<(String, String, bool)> {
    match value {
        Value::String(_, text) => credential_in(text).map(|problem| (path, problem, in_list)),
        Value::Dict(_, inner) => find(inner, &path, in_list),
        Value::Array(_, items) => items
            .iter()
            .find_map(|item| find_in(item, path.clone(), true)),
        _ => None,
    }
}

/// The environment variable that sets `key`: `DATABASE_URL` for the database, else the
/// setting's own override (`PERSONA_BOT_DISCORD__API_BASE_URL`).
fn variable_for(key: &str) -> String {
    if key == "database.url" {
        return DATABASE_URL_ENV.to_owned();
    }
    format!(
        "{ENV_PREFIX}{}",
        key.replace('.', "__").to_ascii_uppercase()
    )
}

/// Why `url` is no http(s) URL with a host, if it is not.
pub(super) fn http_url_problem(url: &str) -> Option<&'static str> {
    match url::Url::parse(url) {
        Err(_) => Some("is not a URL (expected http://host... or https://host...)"),
        Ok(parsed) if !matches!(parsed.scheme(), "http" | "https") => {
            Some("must start with http:// or https://")
        }
        Ok(parsed) if parsed.host_str().is_none_or(str::is_empty) => Some("names no host"),
        Ok(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_found_in_every_part_and_paths_are_not_secrets() {
        for url in [
            "postgres://bot:pw@db/bot",
            "https://user@proxy.example/",
            "https://proxy.example/?token=abc",
            "https://proxy.example/?x=1&API_KEY=abc",
            "postgres://bot@db/bot?pwd=abc",
            "postgres://bot@db/bot?password=abc",
            "https://h.example/?note=sk-abcdefghijklmnopqrstuvwx",
        ] {
            let problem = credential_in(url).unwrap_or_else(|| panic!("{url}"));
            assert!(
                !problem.contains("abc") && !problem.contains("pw@"),
                "{problem}"
            );
        }
        for url in [
            "postgres://bot@db/bot?sslmode=verify-full&sslrootcert=/etc/ca.pem",
            "postgres://bot@db/bot?sslmode=verify-full&sslcert=/c.pem&sslkey=/c.key",
            "sqlite://data/persona-bot.db",
            "https://cdn.discordapp.com",
            "not a url, a persona's prompt",
        ] {
            assert_eq!(credential_in(url), None, "{url}");
        }
        assert_eq!(variable_for("database.url"), "DATABASE_URL");
        assert_eq!(
            variable_for("image_worker.openai_url"),
            "PERSONA_BOT_IMAGE_WORKER__OPENAI_URL"
        );
    }
}
