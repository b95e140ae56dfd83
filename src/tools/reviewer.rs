//! The private reviewer of Response Drafting (SPEC C8, R1-R5), as the tool layer sees it: it
//! reviews exactly the prepared request a session would run, or a held reply.

use async_trait::async_trait;

use super::{PreparedCall, ToolSession};
use crate::domain::review::ReviewOutcome;

/// The private reviewer.
#[async_trait]
pub trait Reviewer: Send + Sync {
    /// Reviews the prepared request the author proposed: exactly what would run (SPEC R1). The
    /// reviewer also sees the turn's earlier calls with their real outcomes (SPEC R2).
    async fn review_request(&self, author: &ToolSession, request: &PreparedCall) -> ReviewOutcome;
    /// Reviews a held reply draft.
    async fn review_reply(&self, author: &ToolSession, draft: &str) -> ReviewOutcome;
}
