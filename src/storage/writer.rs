//! The background batch writer for hot writes: tool events, usage counters and tool outcomes.
//!
//! A turn only enqueues (a non-blocking `try_send`), so a slow or failing database never stalls
//! it. The writer gathers a batch (up to `batch_max`, or whatever arrived within
//! `flush_interval_ms`), sums usage increments by key, and writes the batch in one transaction.
//! A failed batch is retried with backoff until it goes through; it is never silently dropped.
//! Only writes that can never succeed (a constraint violation) are dropped, one by one, each with
//! an error log. When the queue is full (the database has been down a long time), new writes are
//! dropped and counted, with an error log.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sqlx::error::ErrorKind;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::{Database, events, outcomes, usage};
use crate::chat::ports::{ToolEvent, UsageRecord};
use crate::chat::stores::StoredOutcome;
use crate::chat::turn::TurnId;
use crate::config::DatabaseConfig;

/// One deferred write.
#[derive(Debug, Clone)]
pub(crate) enum Write {
    Event(ToolEvent),
    Usage(UsageRecord),
    Outcome {
        turn: TurnId,
        outcome: StoredOutcome,
        at_ms: i64,
    },
}

enum Message {
    Write(Write),
    /// Answered once everything enqueued before it is written.
    Flush(oneshot::Sender<()>),
}

/// Counters an operator (or a test) can read.
#[derive(Debug, Default)]
pub struct WriterStats {
    /// Writes committed.
    pub written: AtomicU64,
    /// Writes dropped: queue full, or a write that can never succeed.
    pub dropped: AtomicU64,
    /// Batch attempts that failed (and were retried).
    pub failed_attempts: AtomicU64,
}

/// The handle turns enqueue through. Cheap to clone.
#[derive(Clone)]
pub struct WriteQueue {
    tx: mpsc::Sender<Message>,
    stats: Arc<WriterStats>,
}

impl WriteQueue {
    /// Enqueues without waiting.
    pub(crate) fn submit(&self, write: Write) {
        match self.tx.try_send(Message::Write(write)) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                let dropped = self.stats.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                // Logged at every power of two, so a long outage does not flood the log.
                if dropped.is_power_of_two() {
                    tracing::error!(
                        dropped,
                        "database write queue is full (database unreachable?); writes are being dropped"
                    );
                }
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                tracing::error!("database writer has stopped; a write was dropped");
            }
        }
    }

    /// Waits until every write enqueued before this call is committed (or dropped as
    /// impossible). Used at shutdown and by tests.
    pub async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Message::Flush(tx)).await.is_ok() {
            let _ = rx.await;
        }
    }

    pub fn stats(&self) -> &WriterStats {
        &self.stats
    }
}

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
    tokio::spawn(writer.run());
    WriteQueue { tx, stats }
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
/// After this many failed attempts, a batch that failed for a permanent reason is split.
const SPLIT_AFTER: u32 = 3;

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

    async fn write_until_done(&self, batch: &mut Vec<Write>) {
        if batch.is_empty() {
            return;
        }
        let mut backoff = BACKOFF_START;
        let mut attempt = 0;
        loop {
            let error = match write_batch(&self.db, batch).await {
                Ok(()) => {
                    self.stats
                        .written
                        .fetch_add(batch.len() as u64, Ordering::Relaxed);
                    batch.clear();
                    return;
                }
                Err(error) => error,
            };
            attempt += 1;
            self.stats.failed_attempts.fetch_add(1, Ordering::Relaxed);
            if attempt >= SPLIT_AFTER && is_permanent(&error) {
                self.write_one_by_one(batch).await;
                if batch.is_empty() {
                    return;
                }
            }
            tracing::warn!(
                attempt, pending = batch.len(), %error,
                "database write failed; retrying"
            );
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
    }

    /// Writes each item alone: items that fail permanently are dropped (with an error log),
    /// items that fail for a passing reason stay for the next attempt.
    async fn write_one_by_one(&self, batch: &mut Vec<Write>) {
        let mut keep = Vec::new();
        for write in batch.drain(..) {
            match write_batch(&self.db, std::slice::from_ref(&write)).await {
                Ok(()) => {
                    self.stats.written.fetch_add(1, Ordering::Relaxed);
                }
                Err(error) if is_permanent(&error) => {
                    self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                    tracing::error!(%error, ?write, "dropping a write the database can never accept");
                }
                Err(_) => keep.push(write),
            }
        }
        *batch = keep;
    }
}

/// A write the database will refuse however often it is tried.
fn is_permanent(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Database(db) => matches!(
            db.kind(),
            ErrorKind::UniqueViolation
                | ErrorKind::ForeignKeyViolation
                | ErrorKind::NotNullViolation
                | ErrorKind::CheckViolation
        ),
        sqlx::Error::Encode(_) | sqlx::Error::TypeNotFound { .. } => true,
        _ => false,
    }
}

/// Writes one batch in one transaction: usage increments summed by key, events in multi-row
/// inserts, outcomes upserted.
async fn write_batch(db: &Database, batch: &[Write]) -> Result<(), sqlx::Error> {
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
    let mut tx = db.pool().begin().await?;
    usage::upsert(&mut tx, &usage::sum_by_key(&usage_rows)).await?;
    events::insert(&mut tx, &event_rows).await?;
    outcomes::upsert(&mut tx, &outcome_rows).await?;
    tx.commit().await
}
