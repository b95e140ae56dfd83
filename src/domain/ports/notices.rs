//! The moderators' hidden thought-log channel.

use async_trait::async_trait;

use crate::domain::scope::ServerId;
use crate::domain::thought_log::Notice;

/// The moderators' hidden channel. Posting is best effort and never fails the turn.
#[async_trait]
pub trait ThoughtLog: Send + Sync {
    async fn post(&self, server: ServerId, notice: Notice);
}
