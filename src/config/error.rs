//! Why a configuration could not be loaded, in one line naming the key, and how figment's errors
//! are turned into that line without quoting a value that may be a secret.

use std::fmt;
use std::path::PathBuf;

use super::{DATABASE_URL_ENV, DISCORD_TOKEN_ENV, IMAGES_KEY_ENV, PROVIDER_KEYS_ENV};

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

/// Turns figment's (possibly chained) error into one line naming the first bad key.
pub(super) fn from_figment(error: &figment::Error) -> ConfigError {
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
pub(super) fn problem_of(error: &figment::Error) -> String {
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

/// At most 80 characters of a text from a configuration error.
pub(super) fn cut(text: &str) -> String {
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
