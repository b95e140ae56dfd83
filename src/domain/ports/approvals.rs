//! Where approval requests are kept (SPEC E3): opened once per call of a turn, decided once
//! (the first decision stands), read back by a resumed turn and by whichever process waits.

use async_trait::async_trait;

use super::PortError;
pub use crate::domain::approvals::{
    ApprovalId, ApprovalRequest, Approvers, Decision, StoredApproval,
};
use crate::domain::scope::MessageId;

#[async_trait]
pub trait ApprovalStore: Send + Sync {
    /// Stores `request` unless one with its id is there; returns the stored one (an earlier
    /// run's, with its deadline, card and decision, when there is one).
    async fn open(
        &self,
        request: &ApprovalRequest,
        at_ms: i64,
    ) -> Result<StoredApproval, PortError>;
    /// Notes where the request's card was posted.
    async fn set_card(&self, id: ApprovalId, card: MessageId) -> Result<(), PortError>;
    /// Decides a pending request; `false` when it was decided already (that decision stands).
    async fn decide(
        &self,
        id: ApprovalId,
        decision: Decision,
        at_ms: i64,
    ) -> Result<bool, PortError>;
    async fn get(&self, id: ApprovalId) -> Result<Option<StoredApproval>, PortError>;
}
