//! Image plans (SPEC S5) and the worker tasks that make them.

use async_trait::async_trait;
use serde_json::Value;

use super::PortError;
pub use crate::domain::ledger::{PlanId, PlanPart};
use crate::domain::scope::{ChannelId, PersonaId, ServerId, UserId, Visibility};
use crate::domain::turn::TurnId;

/// An image plan to store: a request accepted, not an image made (SPEC S5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewImagePlan {
    pub id: PlanId,
    pub turn: TurnId,
    pub server: Option<ServerId>,
    pub channel: ChannelId,
    pub user: UserId,
    pub persona: PersonaId,
    pub prompt: String,
    pub caption: Option<String>,
    pub aspect: String,
    pub part: Option<PlanPart>,
    pub at_ms: i64,
    /// Who may read the channel: decides whether the worker's notices reach the thought log.
    pub visibility: Visibility,
    /// The requester's language, for the worker's notices.
    pub locale: crate::locale::Locale,
}

/// What became of a plan, for the model's next turn in the channel.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanResult {
    pub plan: PlanId,
    pub prompt: String,
    /// `done` or `failed`.
    pub status: String,
    /// The task's result: where it was posted, or the failure payload (SPEC T8).
    pub result: Option<serde_json::Value>,
    pub at_ms: i64,
}

/// Where plans go; a worker picks them up later.
#[async_trait]
pub trait PlanStore: Send + Sync {
    async fn record_plan(&self, plan: NewImagePlan) -> Result<(), PortError>;
    /// A stored plan.
    async fn plan(&self, id: &PlanId) -> Result<Option<NewImagePlan>, PortError>;
    /// The `limit` most recently finished (done or failed) plans of the channel since
    /// `since_ms`, oldest first.
    async fn results_since(
        &self,
        channel: ChannelId,
        since_ms: i64,
        limit: u32,
    ) -> Result<Vec<PlanResult>, PortError>;
}

/// A worker task as claimed: the plan it makes and how often it was tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedTask {
    pub id: i64,
    pub plan: PlanId,
    /// Attempts including this one.
    pub attempts: u32,
}

/// Image-plan worker tasks: claimed by exactly one worker across processes; a crashed worker's
/// claim expires after its lease.
#[async_trait]
pub trait TaskStore: Send + Sync {
    /// Claims the oldest due task, or one whose lease expired.
    async fn claim(
        &self,
        worker: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Option<ClaimedTask>, PortError>;
    /// Marks the task done with its result. False when `worker` no longer holds it.
    async fn complete(
        &self,
        id: i64,
        worker: &str,
        result: &Value,
        now_ms: i64,
    ) -> Result<bool, PortError>;
    /// Puts the task back for a later attempt. False when `worker` no longer holds it.
    async fn retry_at(
        &self,
        id: i64,
        worker: &str,
        error: &str,
        next_attempt_ms: i64,
    ) -> Result<bool, PortError>;
    /// Gives up on the task, keeping the failure payload. False when `worker` no longer
    /// holds it.
    async fn fail(
        &self,
        id: i64,
        worker: &str,
        result: &Value,
        now_ms: i64,
    ) -> Result<bool, PortError>;
}
