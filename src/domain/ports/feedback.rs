//! Members' verdicts on replies (SPEC E2): 👍 or 👎, one per member and turn, counted per turn
//! and per server for the moderators.

use async_trait::async_trait;

use super::PortError;
pub use crate::domain::buttons::{Tally, Verdict};
use crate::domain::scope::{ServerId, UserId};
use crate::domain::turn::TurnId;

/// Where verdicts are kept.
#[async_trait]
pub trait FeedbackStore: Send + Sync {
    /// Stores `user`'s verdict on `turn` (replacing their earlier one) and returns the turn's
    /// counts now.
    async fn give(
        &self,
        turn: TurnId,
        server: Option<ServerId>,
        user: UserId,
        verdict: Verdict,
        at_ms: i64,
    ) -> Result<Tally, PortError>;
    /// The counts over every reply in `server`.
    async fn server_tally(&self, server: ServerId) -> Result<Tally, PortError>;
}
