//! Where the next catch-up starts (SPEC D9): the last message seen in each channel, loaded from
//! the store at start (inside the catch-up window), kept up to date in memory as the gateway
//! delivers messages, and stored every few seconds and once more at the stop.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::domain::catch_up::{SeenMarks, snowflake_at};
use crate::domain::ports::{Clock as _, SeenStore, SystemClock};

/// Channels whose last seen message is remembered (the marks of the busiest are kept).
const SEEN_CHANNELS: usize = 10_000;
/// How often changed marks are stored.
const SEEN_SAVE_EVERY: Duration = Duration::from_secs(5);
/// Marks of messages older than this are dropped at start: no catch-up reads back that far.
const SEEN_KEPT_MS: i64 = 24 * 60 * 60 * 1000;

/// The stored marks inside the catch-up window (`window_ms`), after marks too old for any
/// catch-up are dropped; a store that does not answer leaves the marks empty (channels are then
/// read from the window's start).
pub async fn load(store: &dyn SeenStore, window_ms: i64) -> Arc<SeenMarks> {
    let marks = Arc::new(SeenMarks::new(SEEN_CHANNELS));
    let now = SystemClock.now_ms();
    if let Err(error) = store.prune_seen(snowflake_at(now - SEEN_KEPT_MS)).await {
        tracing::warn!(%error, "could not drop old seen-message marks");
    }
    let since = snowflake_at(now.saturating_sub(window_ms));
    match store.seen_since(since, SEEN_CHANNELS).await {
        Ok(stored) => marks.load(stored),
        Err(error) => {
            tracing::warn!(%error, "could not read where the last catch-up left off; channels are read from the window's start")
        }
    }
    marks
}

/// Stores changed marks every few seconds, and at the stop.
pub async fn keep_saved(marks: Arc<SeenMarks>, store: Arc<dyn SeenStore>, stop: CancellationToken) {
    let mut every = tokio::time::interval(SEEN_SAVE_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    loop {
        let stopping = tokio::select! {
            () = stop.cancelled() => true,
            _ = every.tick() => false,
        };
        let changed = marks.take_changed();
        if !changed.is_empty() {
            match store.save_seen(&changed, SystemClock.now_ms()).await {
                Ok(()) => failing = false,
                Err(error) => {
                    if !failing {
                        tracing::warn!(%error, "could not store the last message seen per channel; retrying (a restart meanwhile re-reads a little more)");
                    }
                    failing = true;
                    marks.unsaved(changed);
                }
            }
        }
        if stopping {
            return;
        }
    }
}
