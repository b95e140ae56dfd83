//! Where the last catch-up left off: the last message the bot saw in each channel, kept across
//! restarts (SPEC D9).

use async_trait::async_trait;

use super::PortError;
use crate::domain::catch_up::Seen;

#[async_trait]
pub trait SeenStore: Send + Sync {
    /// Stores marks; a stored mark only moves forward (an older one is ignored).
    async fn save_seen(&self, marks: &[Seen], at_ms: i64) -> Result<(), PortError>;
    /// The marks of messages at or after the snowflake `since`, at most `limit`, newest first.
    async fn seen_since(&self, since: u64, limit: usize) -> Result<Vec<Seen>, PortError>;
    /// Drops marks of messages before the snowflake `before`; returns how many.
    async fn prune_seen(&self, before: u64) -> Result<u64, PortError>;
}
