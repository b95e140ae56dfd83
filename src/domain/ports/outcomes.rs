//! Completed tool outcomes, so reuse survives a restart (SPEC R4).

use async_trait::async_trait;
use serde_json::Value;

use super::PortError;
use crate::domain::turn::TurnId;

/// A completed tool outcome, kept so a retried or resumed turn reuses it (SPEC R4).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredOutcome {
    pub identity: String,
    pub response: Value,
    pub invocation: u32,
}

#[async_trait]
pub trait OutcomeStore: Send + Sync {
    async fn record_outcome(
        &self,
        turn: TurnId,
        outcome: &StoredOutcome,
        at_ms: i64,
    ) -> Result<(), PortError>;
    async fn outcomes(&self, turn: TurnId) -> Result<Vec<StoredOutcome>, PortError>;
}
