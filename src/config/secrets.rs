//! Secrets come only from the environment (SPEC D13): the token and keys, read and checked here,
//! and a secret-looking key in a file found and refused.

use figment::value::{Dict, Value};
use secrecy::SecretString;

use super::{
    ConfigError, DATABASE_URL_ENV, DISCORD_TOKEN_ENV, DatabaseConfig, IMAGES_KEY_ENV,
    PROVIDER_KEYS_ENV,
};

pub(super) fn find_secret_key(dict: &Dict, prefix: &str) -> Option<String> {
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

    pub(super) fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
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
    use secrecy::ExposeSecret;

    use super::*;

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
