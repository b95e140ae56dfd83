//! Usage counters and tool events (SPEC S6).

use async_trait::async_trait;
use serde::Serialize;

use crate::domain::role::Role;
use crate::domain::scope::{ChannelId, PersonaId, ServerId, UserId};
use crate::domain::turn::TurnId;

/// A counted metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// A successful, non-blocked tool call (SPEC T10); the key is the tool name.
    ToolUsed,
}

impl Metric {
    pub fn as_str(self) -> &'static str {
        match self {
            Metric::ToolUsed => "tool_used",
        }
    }
}

/// One increment of a usage counter. Server channels only: DMs are never counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageRecord {
    pub server: ServerId,
    pub channel: ChannelId,
    pub user: UserId,
    pub persona: PersonaId,
    pub metric: Metric,
    pub key: String,
    pub at_ms: i64,
}

/// Usage counters. Adapters keep this off the turn's critical path (batching).
#[async_trait]
pub trait UsageStats: Send + Sync {
    async fn record(&self, usage: UsageRecord);
}

/// How a tool call ended, as stored in tool events (SPEC S6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventOutcome {
    Succeeded,
    /// A recorded outcome was reused instead of dispatching again (SPEC R4).
    Reused,
    /// The tool ran and failed, or refused as a business error.
    Failed,
    /// The caller's role may not call the tool (SPEC S2).
    Denied,
    UnknownTool,
    InvalidArguments,
    Truncated,
    /// Refused by deliberate tool mode or a per-turn limit before running.
    Blocked,
    /// The drafting reviewer rejected the request; nothing ran (SPEC R2).
    ReviewRejected,
    /// The tool outlived its timeout and stopped when told to (SPEC T5).
    TimedOut,
    /// `/kill` (or the process stopping) stopped the tool, and it stopped when told to.
    Cancelled,
    /// The tool was told to stop (by `/kill` or its timeout; the code says which) and was still
    /// running after its grace: it ignored its cancellation and its work may still happen.
    MayStillFinish,
}

impl EventOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Succeeded => "succeeded",
            Self::Reused => "reused",
            Self::Failed => "failed",
            Self::Denied => "tool_denied",
            Self::UnknownTool => "unknown_tool",
            Self::InvalidArguments => "invalid_arguments",
            Self::Truncated => "truncated_arguments",
            Self::Blocked => "blocked",
            Self::ReviewRejected => "review_rejected",
            Self::TimedOut => "timed_out",
            Self::Cancelled => "cancelled",
            Self::MayStillFinish => "may_still_finish",
        }
    }
}

/// One tool event: every call the stage handles, denied ones included (SPEC S6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolEvent {
    pub turn: TurnId,
    pub server: Option<ServerId>,
    pub channel: ChannelId,
    pub user: UserId,
    pub role: Role,
    pub tool: String,
    /// Arguments after redaction ([`crate::redact::redact_arguments`]).
    pub arguments: String,
    pub outcome: EventOutcome,
    /// The failure code, or what stopped the tool (`killed`, `shutdown`), when there is one.
    pub code: Option<String>,
    pub duration_ms: u64,
    pub at_ms: i64,
}

/// Where tool events are kept.
#[async_trait]
pub trait ToolEvents: Send + Sync {
    async fn record(&self, event: ToolEvent);
}
