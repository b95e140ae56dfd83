//! What turns hand the background batch writer ([`super::writer`]): a deferred write (a tool
//! event, a usage increment, a tool outcome) and the queue handle they enqueue it through, never
//! waiting. The writer drains the queue; the tables' own modules say how each kind is written.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{mpsc, oneshot};

use crate::domain::ports::{StoredOutcome, ToolEvent, UsageRecord};
use crate::domain::turn::TurnId;

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

pub(super) enum Message {
    Write(Write),
    /// Answered once everything enqueued before it is written.
    Flush(oneshot::Sender<()>),
}

/// Counters an operator (or a test) can read.
#[derive(Debug, Default)]
pub struct WriterStats {
    /// Writes committed.
    pub written: AtomicU64,
    /// Writes dropped: queue full, or a row the database refuses while it takes others.
    pub dropped: AtomicU64,
    /// Batch attempts that failed (and were retried).
    pub failed_attempts: AtomicU64,
}

/// The handle turns enqueue through. Cheap to clone.
#[derive(Clone)]
pub struct WriteQueue {
    tx: mpsc::Sender<Message>,
    stats: Arc<WriterStats>,
    /// The writer task, joined by [`WriteQueue::stop`].
    task: Arc<std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>>,
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

    /// Waits until every write enqueued before this call is committed (or dropped as refused).
    /// Used at shutdown and by tests.
    pub async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Message::Flush(tx)).await.is_ok() {
            let _ = rx.await;
        }
    }

    /// Ends the writer task and waits for it (shutdown, after [`WriteQueue::flush`]): what was
    /// not flushed by then is not written.
    pub(crate) async fn stop(&self) {
        let task = self
            .task
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(task) = task {
            task.abort();
            let _ = task.await;
        }
    }

    pub fn stats(&self) -> &WriterStats {
        &self.stats
    }

    /// Writes enqueued and not yet taken by the writer (the batch it is writing, or retrying
    /// while the database is away, is not counted): 0 when it keeps up, `buffer_max` when full.
    pub fn backlog(&self) -> usize {
        self.tx.max_capacity().saturating_sub(self.tx.capacity())
    }

    /// The handle of a writer task just started ([`super::writer::spawn`]).
    pub(super) fn new(
        tx: mpsc::Sender<Message>,
        stats: Arc<WriterStats>,
        task: tokio::task::JoinHandle<()>,
    ) -> Self {
        Self {
            tx,
            stats,
            task: Arc::new(std::sync::Mutex::new(Some(task))),
        }
    }
}
