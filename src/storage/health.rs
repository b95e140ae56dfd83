//! Whether the database answers, as the repositories see it: an outage and the recovery are each
//! logged once, however many reads and writes fail in between (the writer logs its own retries).

use std::sync::Mutex;
use std::time::Instant;

/// The database's reachability, shared by every repository of one [`super::Database`].
#[derive(Debug, Default)]
pub struct Health {
    /// When the current outage began; `None` while the database answers.
    down_since: Mutex<Option<Instant>>,
}

impl Health {
    fn down_since(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.down_since
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Notes a result of a database call: a connection failure starts an outage (logged once,
    /// with its cause and what the bot does meanwhile); any success ends one (logged once).
    /// An error the database itself answered (a constraint, a bad row) says it is reachable.
    pub fn observe<T>(&self, result: &Result<T, sqlx::Error>) {
        match result {
            Err(error) if is_outage(error) => {
                let mut down = self.down_since();
                if down.is_none() {
                    *down = Some(Instant::now());
                    tracing::error!(
                        %error,
                        "database unreachable: messages are still taken and kept in memory, \
                         servers are handled with their last known settings, and writes are \
                         retried; check the database server and DATABASE_URL"
                    );
                }
            }
            _ => {
                if let Some(since) = self.down_since().take() {
                    tracing::info!(
                        down_secs = since.elapsed().as_secs(),
                        "database reachable again"
                    );
                }
            }
        }
    }

    /// Whether an outage is going on.
    pub fn is_down(&self) -> bool {
        self.down_since().is_some()
    }
}

/// A failure to reach the database, as opposed to one it answered.
fn is_outage(error: &sqlx::Error) -> bool {
    matches!(
        error,
        sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::Protocol(_)
            | sqlx::Error::WorkerCrashed
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // An outage starts with the first connection failure and ends with the first success; an error
    // the database answered is no outage.
    #[test]
    fn outages_start_and_end_once() {
        let health = Health::default();
        health.observe::<()>(&Err(sqlx::Error::RowNotFound));
        assert!(!health.is_down());
        health.observe::<()>(&Err(sqlx::Error::PoolTimedOut));
        health.observe::<()>(&Err(sqlx::Error::PoolTimedOut));
        assert!(health.is_down());
        health.observe(&Ok(()));
        assert!(!health.is_down());
    }
}
