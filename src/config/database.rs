//! Where data lives and how it is written: the database URL, the pool, the background batches.

use serde::Deserialize;

use super::bound::{Bound, Read, Unit, WEEK_MS};

use super::{ConfigError, urls};

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

/// The ranges of this file's numeric settings ([`super::bound`] checks and documents them).
pub(super) const BOUNDS: &[Bound] = &[
    Bound {
        key: "database.max_connections",
        least: 1,
        most: 100,
        unit: Unit::Count,
        read: Read::One(|c| c.database.max_connections.into()),
    },
    Bound {
        key: "database.connect_timeout_secs",
        least: 1,
        most: 300,
        unit: Unit::Secs,
        read: Read::One(|c| c.database.connect_timeout_secs),
    },
    Bound {
        key: "database.flush_interval_ms",
        least: 1,
        most: WEEK_MS,
        unit: Unit::Millis,
        read: Read::One(|c| c.database.flush_interval_ms),
    },
    Bound {
        key: "database.batch_max",
        least: 1,
        most: 100_000,
        unit: Unit::Count,
        read: Read::One(|c| c.database.batch_max as u64),
    },
    Bound {
        key: "database.buffer_max",
        least: 0,
        most: 10_000_000,
        unit: Unit::Count,
        read: Read::One(|c| c.database.buffer_max as u64),
    },
];

impl DatabaseConfig {
    pub fn connect_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.connect_timeout_secs)
    }
}

impl DatabaseConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
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
        if self.buffer_max < self.batch_max {
            return Err(key("buffer_max", "must be at least batch_max"));
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use crate::config::tests::{no_env, temp_config};

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
}
