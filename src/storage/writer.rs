//! The background batch writer for hot writes: tool events, usage counters and tool outcomes.
//!
//! A turn only enqueues (a non-blocking `try_send`), so a slow or failing database never stalls
//! it. The writer gathers a batch (up to `batch_max`, or whatever arrived within
//! `flush_interval_ms`), sums usage increments by key, and writes the batch in one transaction.
//! Text is bound as the database can store it (NUL escaped, [`super::storable`]).
//!
//! A failed batch is never given up as a whole, and one bad row cannot hold back the rest:
//! - A passing failure (connection refused or lost, pool timeout, the database shutting down,
//!   busy or out of disk, a serialization conflict) is retried with backoff for as long as it
//!   takes. Nothing is dropped for it.
//! - A failure that blames the rows (SQLSTATE 54000 too big for an index, 22021 and 22P05 text
//!   the encoding cannot hold, 22001 string too long, class 23 constraint violations; SQLite's
//!   constraint and too-big codes) splits the batch at once.
//! - Any other failure gets one short retry. If that fails too and the database still takes a
//!   probe row of every kind in the batch (written in a transaction that is rolled back), the
//!   batch is split; if a probe fails (a missing table, say), it is an outage, retried as above.
//!
//! Splitting writes the two halves in their own transactions, left before right (order holds),
//! and splits what fails again, until each part has landed or is one row that fails while a
//! probe of its kind lands. That row is dropped, counted in [`WriterStats::dropped`] and logged
//! once at error level with its kind, tool and sizes, never its arguments (they may hold
//! secrets). Splitting stops at the first sign of an outage; what is unwritten goes back to the
//! retry. It always ends: each step writes or drops a part, or splits one of two or more rows.
//!
//! When the queue is full (the database has been down a long time), new writes are dropped and
//! counted, with an error log.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::Value;
use sqlx::AnyConnection;
use sqlx::error::ErrorKind;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::write_queue::{Message, Write, WriteQueue, WriterStats};
use super::{Backend, Database, events, outcomes, usage};
use crate::config::DatabaseConfig;
use crate::domain::ports::{EventOutcome, Metric, StoredOutcome, ToolEvent, UsageRecord};
use crate::domain::role::Role;
use crate::domain::scope::{ChannelId, PersonaId, ServerId, UserId};
use crate::domain::turn::TurnId;

/// Starts the writer task on `db`.
pub(crate) fn spawn(db: Database, config: &DatabaseConfig) -> WriteQueue {
    let (tx, rx) = mpsc::channel(config.buffer_max);
    let stats = Arc::new(WriterStats::default());
    let writer = Writer {
        db,
        rx,
        stats: stats.clone(),
        batch_max: config.batch_max,
        interval: Duration::from_millis(config.flush_interval_ms),
    };
    let task = tokio::spawn(writer.run());
    WriteQueue::new(tx, stats, task)
}

struct Writer {
    db: Database,
    rx: mpsc::Receiver<Message>,
    stats: Arc<WriterStats>,
    batch_max: usize,
    interval: Duration,
}

/// First and longest pause between retries of a failed batch.
const BACKOFF_START: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// A batch that failed this many times for a reason the writer does not know is split (when
/// the database takes probe rows): the first retry, a short one, rules out a passing hiccup.
const SPLIT_AFTER: u32 = 2;

impl Writer {
    async fn run(mut self) {
        let mut batch = Vec::with_capacity(self.batch_max);
        let mut waiters = Vec::new();
        while let Some(first) = self.rx.recv().await {
            let mut flushing = self.take(first, &mut batch, &mut waiters);
            let deadline = Instant::now() + self.interval;
            while !flushing && batch.len() < self.batch_max {
                tokio::select! {
                    message = self.rx.recv() => match message {
                        Some(message) => flushing = self.take(message, &mut batch, &mut waiters),
                        None => break,
                    },
                    () = tokio::time::sleep_until(deadline) => break,
                }
            }
            self.write_until_done(&mut batch).await;
            for waiter in waiters.drain(..) {
                let _ = waiter.send(());
            }
        }
        // Every sender is gone: nothing more will come.
        self.write_until_done(&mut batch).await;
    }

    /// Adds a message to the batch; returns whether it asks for a flush now.
    fn take(
        &self,
        message: Message,
        batch: &mut Vec<Write>,
        waiters: &mut Vec<oneshot::Sender<()>>,
    ) -> bool {
        match message {
            Message::Write(write) => {
                batch.push(write);
                false
            }
            Message::Flush(waiter) => {
                waiters.push(waiter);
                true
            }
        }
    }

    /// Writes the batch, retrying with backoff while the database is away and splitting it when
    /// rows are to blame (see the module doc). Returns once every write has landed or been
    /// dropped as refused; while the database stays away, it keeps trying.
    async fn write_until_done(&self, batch: &mut Vec<Write>) {
        let mut backoff = BACKOFF_START;
        let mut attempt: u32 = 0;
        while !batch.is_empty() {
            let error = match write_batch(&self.db, batch).await {
                Ok(()) => {
                    self.count_written(batch.len());
                    batch.clear();
                    return;
                }
                Err(error) => error,
            };
            attempt = attempt.saturating_add(1);
            self.stats.failed_attempts.fetch_add(1, Ordering::Relaxed);
            let cause = cause(self.db.backend(), &error);
            let split = match cause {
                Cause::Passing => false,
                Cause::Refused => true,
                Cause::Unknown => attempt >= SPLIT_AFTER && self.accepts_every_kind(batch).await,
            };
            if split {
                self.split(batch).await;
                if batch.is_empty() {
                    return;
                }
            }
            tracing::warn!(
                attempt, pending = batch.len(), ?cause, %error,
                "database write failed; retrying"
            );
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
    }

    /// Writes `batch` in ever smaller parts, each in its own transaction, left before right:
    /// a part that fails is halved, a single row that fails while a probe of its kind lands is
    /// dropped. Stops at the first sign of an outage and leaves what is unwritten in `batch`, in
    /// order. Ends: each step writes or drops a part, splits a part of two or more rows into two
    /// non-empty ones (at most n - 1 times), or stops.
    async fn split(&self, batch: &mut Vec<Write>) {
        let mut parts = VecDeque::from([std::mem::take(batch)]);
        while let Some(mut part) = parts.pop_front() {
            let error = match write_batch(&self.db, &part).await {
                Ok(()) => {
                    self.count_written(part.len());
                    continue;
                }
                Err(error) => error,
            };
            let verdict = match (part.as_slice(), cause(self.db.backend(), &error)) {
                (_, Cause::Passing) | ([], _) => BatchVerdict::Outage,
                ([write], Cause::Refused) => BatchVerdict::Refused(write),
                ([write], Cause::Unknown) if self.accepts(write.kind()).await => {
                    BatchVerdict::Refused(write)
                }
                ([_], Cause::Unknown) => BatchVerdict::Outage,
                ([_, _, ..], _) => BatchVerdict::Split,
            };
            match verdict {
                BatchVerdict::Refused(write) => self.drop_refused(write, &error),
                BatchVerdict::Split => {
                    let right = part.split_off(part.len() / 2);
                    parts.push_front(right);
                    parts.push_front(part);
                }
                BatchVerdict::Outage => {
                    parts.push_front(part);
                    break;
                }
            }
        }
        *batch = parts.into_iter().flatten().collect();
    }

    /// Whether the database takes a write of `kind` at all: a harmless row of that kind written
    /// in a transaction that is rolled back, so it leaves nothing behind. A row that fails while
    /// its probe lands is the row's fault; a probe that fails too means an outage.
    async fn accepts(&self, kind: Kind) -> bool {
        let Ok(mut tx) = self.db.pool().begin().await else {
            return false;
        };
        let accepted = write_rows(&mut tx, std::slice::from_ref(&probe(kind)))
            .await
            .is_ok();
        // ignore: a rollback that fails leaves the probe uncommitted all the same
        let _ = tx.rollback().await;
        accepted
    }

    /// Whether the database takes a probe of every kind of write in `batch`.
    async fn accepts_every_kind(&self, batch: &[Write]) -> bool {
        for kind in [Kind::Event, Kind::Usage, Kind::Outcome] {
            if batch.iter().any(|w| w.kind() == kind) && !self.accepts(kind).await {
                return false;
            }
        }
        true
    }

    fn drop_refused(&self, write: &Write, error: &sqlx::Error) {
        self.stats.dropped.fetch_add(1, Ordering::Relaxed);
        let code = match error {
            sqlx::Error::Database(db) => db.code().map(|c| c.into_owned()),
            _ => None,
        };
        tracing::error!(
            write = %Summary(write), code = code.as_deref().unwrap_or("-"), %error,
            "dropping a write the database refuses (it takes others of its kind)"
        );
    }

    fn count_written(&self, rows: usize) {
        self.stats
            .written
            .fetch_add(u64::try_from(rows).unwrap_or(u64::MAX), Ordering::Relaxed);
    }
}

/// What became of a part of a split batch that failed.
enum BatchVerdict<'a> {
    /// One row the database refuses: dropped.
    Refused(&'a Write),
    /// Two or more rows: halved.
    Split,
    /// The database is away: the part and the rest wait for the retry.
    Outage,
}

/// What a failed write says about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    /// The database or the way to it is away for now: retry later, never drop.
    Passing,
    /// The database refuses these rows and always will: split, drop the row.
    Refused,
    /// The error does not tell: a probe decides.
    Unknown,
}

fn cause(backend: Backend, error: &sqlx::Error) -> Cause {
    match error {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => Cause::Passing,
        sqlx::Error::Encode(_) | sqlx::Error::TypeNotFound { .. } => Cause::Refused,
        sqlx::Error::Database(db) => {
            if matches!(
                db.kind(),
                ErrorKind::UniqueViolation
                    | ErrorKind::ForeignKeyViolation
                    | ErrorKind::NotNullViolation
                    | ErrorKind::CheckViolation
            ) {
                return Cause::Refused;
            }
            let code = db.code().unwrap_or_default();
            match backend {
                Backend::Postgres => postgres_cause(&code),
                Backend::Sqlite => code.parse().map_or(Cause::Unknown, sqlite_cause),
            }
        }
        _ => Cause::Unknown,
    }
}

/// By SQLSTATE (PostgreSQL's "Error Codes" appendix).
fn postgres_cause(state: &str) -> Cause {
    match state {
        // too big for an index row; text the encoding cannot hold (NUL); string too long
        "54000" | "22021" | "22P05" | "22001" => Cause::Refused,
        // integrity constraints: unique, foreign key, not null, check, exclusion
        s if s.starts_with("23") => Cause::Refused,
        // connection exceptions
        s if s.starts_with("08") => Cause::Passing,
        // shutting down or starting up; out of disk; too many connections; a serialization
        // failure or deadlock, which a retry resolves
        "57P01" | "57P02" | "57P03" | "53100" | "53300" | "40001" | "40P01" => Cause::Passing,
        _ => Cause::Unknown,
    }
}

/// By SQLite result code: the primary code is the low byte of the extended one. Constraint
/// violations are classified by kind in [`cause`]; a trigger's `RAISE` is left to the probe, as
/// a trigger may refuse every row.
fn sqlite_cause(code: i32) -> Cause {
    match code & 0xff {
        // SQLITE_BUSY, SQLITE_LOCKED, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN
        5 | 6 | 10 | 13 | 14 => Cause::Passing,
        // SQLITE_TOOBIG
        18 => Cause::Refused,
        _ => Cause::Unknown,
    }
}

/// The kinds of write, each one table's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Event,
    Usage,
    Outcome,
}

impl Write {
    fn kind(&self) -> Kind {
        match self {
            Write::Event(_) => Kind::Event,
            Write::Usage(_) => Kind::Usage,
            Write::Outcome { .. } => Kind::Outcome,
        }
    }
}

/// A harmless write of `kind` for [`Writer::accepts`]: small, ASCII, under a fresh turn.
fn probe(kind: Kind) -> Write {
    const NAME: &str = "writer_probe";
    match kind {
        Kind::Event => Write::Event(ToolEvent {
            turn: TurnId::new(),
            server: None,
            channel: ChannelId(0),
            user: UserId(0),
            role: Role::Persona,
            tool: NAME.into(),
            arguments: "{}".into(),
            outcome: EventOutcome::Succeeded,
            code: None,
            duration_ms: 0,
            at_ms: 0,
        }),
        Kind::Usage => Write::Usage(UsageRecord {
            server: ServerId(0),
            channel: ChannelId(0),
            user: UserId(0),
            persona: PersonaId(NAME.into()),
            metric: Metric::ToolUsed,
            key: NAME.into(),
            at_ms: 0,
        }),
        Kind::Outcome => Write::Outcome {
            turn: TurnId::new(),
            outcome: StoredOutcome {
                identity: format!("{NAME}{{}}"),
                response: Value::Null,
                invocation: 0,
            },
            at_ms: 0,
        },
    }
}

/// A write as the log shows it: kind, tool and sizes, never arguments or responses (they may
/// hold secrets).
struct Summary<'a>(&'a Write);

impl fmt::Display for Summary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        /// Tool names may be model text (an unknown tool): the log gets the first 64 characters.
        fn short(name: &str) -> String {
            name.chars().take(64).collect()
        }
        match self.0 {
            Write::Event(e) => write!(
                f,
                "tool event: tool {:?}, outcome {}, {} bytes of arguments",
                short(&e.tool),
                e.outcome.as_str(),
                e.arguments.len()
            ),
            Write::Usage(u) => write!(
                f,
                "usage increment: metric {}, key {:?} ({} bytes)",
                u.metric.as_str(),
                short(&u.key),
                u.key.len()
            ),
            Write::Outcome { outcome, .. } => {
                let tool = outcome.identity.split(['{', '[']).next();
                write!(
                    f,
                    "tool outcome: tool {:?}, {} bytes of identity, {} bytes of response",
                    short(tool.unwrap_or_default()),
                    outcome.identity.len(),
                    outcome.response.to_string().len()
                )
            }
        }
    }
}

/// Writes one batch in one transaction.
async fn write_batch(db: &Database, batch: &[Write]) -> Result<(), sqlx::Error> {
    let mut tx = db.pool().begin().await?;
    write_rows(&mut tx, batch).await?;
    tx.commit().await
}

/// Writes a batch's rows on `conn`: usage increments summed by key, events in multi-row
/// inserts, outcomes upserted.
async fn write_rows(conn: &mut AnyConnection, batch: &[Write]) -> Result<(), sqlx::Error> {
    let mut usage_rows = Vec::new();
    let mut event_rows = Vec::new();
    let mut outcome_rows = Vec::new();
    for write in batch {
        match write {
            Write::Event(event) => event_rows.push(event),
            Write::Usage(record) => usage_rows.push(record),
            Write::Outcome {
                turn,
                outcome,
                at_ms,
            } => outcome_rows.push((*turn, outcome, *at_ms)),
        }
    }
    usage::upsert(conn, &usage::sum_by_key(&usage_rows)).await?;
    events::insert(conn, &event_rows).await?;
    outcomes::upsert(conn, &outcome_rows).await
}

#[cfg(test)]
mod tests {
    use super::{Cause, postgres_cause, sqlite_cause};

    #[test]
    fn known_sqlstates_are_classified() {
        for refused in ["54000", "22021", "22P05", "22001", "23505", "23514"] {
            assert_eq!(postgres_cause(refused), Cause::Refused, "{refused}");
        }
        for passing in ["08006", "57P01", "53300", "40001"] {
            assert_eq!(postgres_cause(passing), Cause::Passing, "{passing}");
        }
        // a missing table, a trigger's exception: the probe decides
        assert_eq!(postgres_cause("42P01"), Cause::Unknown);
        assert_eq!(postgres_cause("P0001"), Cause::Unknown);
    }

    #[test]
    fn sqlite_codes_are_classified_by_their_primary_code() {
        assert_eq!(sqlite_cause(5), Cause::Passing);
        assert_eq!(sqlite_cause(517), Cause::Passing, "SQLITE_BUSY_SNAPSHOT");
        assert_eq!(sqlite_cause(18), Cause::Refused);
        assert_eq!(sqlite_cause(1), Cause::Unknown);
        assert_eq!(
            sqlite_cause(1811),
            Cause::Unknown,
            "SQLITE_CONSTRAINT_TRIGGER"
        );
    }
}
