//! The process as a service and its background work: the image worker, reminders, metrics and
//! the stop.

use std::net::SocketAddr;

use serde::Deserialize;

use super::bound::{Bound, Read, Unit, WEEK_MS, WEEK_SECS};

use super::ConfigError;

/// Which backend makes planned images.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageBackendKind {
    Comfyui,
    Openai,
    /// Plans are kept; every task fails with a clear reason.
    None,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageWorkerConfig {
    pub backend: ImageBackendKind,
    pub comfyui_url: String,
    /// The ComfyUI workflow file (API format) with `{{prompt}}`, `{{width}}`, `{{height}}` and
    /// `{{seed}}` placeholders.
    pub comfyui_workflow: String,
    pub openai_url: String,
    pub openai_model: String,
    /// Longest time one image may take.
    pub timeout_secs: u64,
    /// Attempts for passing failures before a task fails.
    pub max_attempts: u32,
    /// First wait before a retry, doubled each time.
    pub retry_backoff_secs: u64,
    /// A claimed task is taken over by another worker after this long.
    pub lease_secs: u64,
    /// How often an idle worker looks for tasks.
    pub poll_ms: u64,
    /// Whether `persona-bot run` runs a worker too (`persona-bot worker` runs one alone).
    pub run_in_bot: bool,
    /// Largest image answer read from a backend, in bytes; a larger one fails the task.
    pub max_image_bytes: usize,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemindersConfig {
    /// How often due reminders are looked for.
    pub poll_ms: u64,
    /// Most active reminders one user may have created.
    pub max_per_user: u32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsConfig {
    /// Where `/metrics` and `/healthz` are served (`host:port`); empty: not served.
    pub listen: String,
    /// A connection whose request headers have not all arrived this long after it opened is
    /// closed.
    pub header_timeout_secs: u64,
    /// Longest one connection lasts: its one request and the answer.
    pub request_timeout_secs: u64,
    /// Most connections open at once; one more is closed as soon as it is accepted.
    pub max_open_connections: u32,
}

impl MetricsConfig {
    /// The address to serve on, or `None` when off. [`Config`] has checked it parses.
    pub fn listen_addr(&self) -> Option<SocketAddr> {
        let listen = self.listen.trim();
        if listen.is_empty() {
            return None;
        }
        listen.parse().ok()
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let listen = self.listen.trim();
        if listen.is_empty() || listen.parse::<SocketAddr>().is_ok() {
            return Ok(());
        }
        Err(ConfigError::Key {
            key: "metrics.listen".to_owned(),
            problem: "must be empty (off) or an IP address and port, such as 127.0.0.1:9100"
                .to_owned(),
        })
    }
}

/// How the process stops (SIGTERM, Ctrl-C).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShutdownConfig {
    /// Longest a stop may take, in seconds, from the signal to the exit.
    pub grace_secs: u64,
}

/// The ranges of this file's numeric settings ([`super::bound`] checks and documents them).
pub(super) const BOUNDS: &[Bound] = &[
    Bound {
        key: "image_worker.timeout_secs",
        least: 1,
        most: WEEK_SECS,
        unit: Unit::Secs,
        read: Read::One(|c| c.image_worker.timeout_secs),
    },
    Bound {
        key: "image_worker.max_attempts",
        least: 1,
        most: 20,
        unit: Unit::Count,
        read: Read::One(|c| c.image_worker.max_attempts.into()),
    },
    Bound {
        key: "image_worker.retry_backoff_secs",
        least: 0,
        most: WEEK_SECS,
        unit: Unit::Secs,
        read: Read::One(|c| c.image_worker.retry_backoff_secs),
    },
    Bound {
        key: "image_worker.lease_secs",
        least: 0,
        most: WEEK_SECS,
        unit: Unit::Secs,
        read: Read::One(|c| c.image_worker.lease_secs),
    },
    Bound {
        key: "image_worker.poll_ms",
        least: 1,
        most: WEEK_MS,
        unit: Unit::Millis,
        read: Read::One(|c| c.image_worker.poll_ms),
    },
    Bound {
        key: "image_worker.max_image_bytes",
        least: 1,
        most: 104_857_600,
        unit: Unit::Bytes,
        read: Read::One(|c| c.image_worker.max_image_bytes as u64),
    },
    Bound {
        key: "reminders.poll_ms",
        least: 1,
        most: WEEK_MS,
        unit: Unit::Millis,
        read: Read::One(|c| c.reminders.poll_ms),
    },
    Bound {
        key: "reminders.max_per_user",
        least: 1,
        most: 1000,
        unit: Unit::Count,
        read: Read::One(|c| c.reminders.max_per_user.into()),
    },
    Bound {
        key: "shutdown.grace_secs",
        least: 2,
        most: 3600,
        unit: Unit::Secs,
        read: Read::One(|c| c.shutdown.grace_secs),
    },
    Bound {
        key: "metrics.header_timeout_secs",
        least: 1,
        most: 60,
        unit: Unit::Secs,
        read: Read::One(|c| c.metrics.header_timeout_secs),
    },
    Bound {
        key: "metrics.request_timeout_secs",
        least: 1,
        most: 300,
        unit: Unit::Secs,
        read: Read::One(|c| c.metrics.request_timeout_secs),
    },
    Bound {
        key: "metrics.max_open_connections",
        least: 1,
        most: 10_000,
        unit: Unit::Count,
        read: Read::One(|c| c.metrics.max_open_connections.into()),
    },
];

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use crate::config::Config;
    use crate::config::tests::{no_env, temp_config};

    // Metrics are off by default; a listen address that is not an IP and port is
    // refused by name (a host name would need a lookup; a port alone says no interface).
    #[test]
    fn the_metrics_listen_address_is_checked() {
        let config = Config::load_with_env(None, no_env()).expect("built-in defaults load");
        assert_eq!(config.metrics.listen_addr(), None, "off by default");
        for bad in [
            "localhost:9100",
            "9100",
            "127.0.0.1",
            "127.0.0.1:99999",
            "on",
        ] {
            let dir = temp_config(Some(&format!("[metrics]\nlisten = \"{bad}\"\n")));
            let err = Config::load_with_env(Some(dir.path()), no_env()).unwrap_err();
            assert!(err.to_string().contains("`metrics.listen`"), "{bad}: {err}");
        }
        let dir = temp_config(Some("[metrics]\nlisten = \"0.0.0.0:9100\"\n"));
        let config = Config::load_with_env(Some(dir.path()), no_env()).expect("load");
        assert_eq!(
            config.metrics.listen_addr(),
            Some(SocketAddr::from(([0, 0, 0, 0], 9100)))
        );
    }
}
