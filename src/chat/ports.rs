//! The ports: the traits the core needs from the outside world, and the plain data crossing them.
//!
//! Adapters implement them: `discord/` for the chat sink, sticker catalog, channel history and
//! thought log; `storage/` for memories, plans, stats and events. Tests use the in-process
//! fakes in `crate::testkit` (the `testkit` feature). No Discord, HTTP or SQL type appears here.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Serialize;

use super::role::Role;
use super::scope::{ChannelId, MessageId, PersonaId, ServerId, UserId};
use super::stores::{OutcomeStore, ReminderStore};
use super::turn::TurnId;
use crate::thought_log::Notice;

/// A port's backing service failed. The detail is for operators (logs); the model and users get
/// a fixed message instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PortError {
    #[error("{what} is unavailable: {detail}")]
    Unavailable { what: &'static str, detail: String },
}

/// A server sticker the persona may send.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sticker {
    pub id: u64,
    pub name: String,
}

/// What Discord said to a sticker send (SPEC T9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StickerSend {
    /// Discord answered with the created message.
    Confirmed,
    /// Discord definitely refused (a 4xx other than 429): nothing was posted.
    Refused { reason: String },
    /// No answer we can trust (timeout, 5xx, connection lost): it may or may not be posted.
    Unconfirmed,
}

/// Where the persona speaks.
#[async_trait]
pub trait ChatSink: Send + Sync {
    /// Posts one message (at most 2000 characters), as a reply to `reply_to` when given. The
    /// adapter waits out rate limits itself; an error means Discord would not take it.
    async fn send_text(
        &self,
        channel: ChannelId,
        text: String,
        reply_to: Option<MessageId>,
    ) -> Result<(), PortError>;
    /// Shows the typing indicator (Discord keeps it about 10 s).
    async fn typing(&self, channel: ChannelId);
    /// Posts a sticker in the channel and reports what Discord said.
    async fn send_sticker(&self, channel: ChannelId, sticker: &Sticker) -> StickerSend;
    /// Posts a short progress line ("Planning an image...") in the conversation. Failures are
    /// the adapter's to log: progress is best effort.
    async fn send_progress(&self, channel: ChannelId, text: String);
}

/// The moderators' hidden channel. Posting is best effort and never fails the turn.
#[async_trait]
pub trait ThoughtLog: Send + Sync {
    async fn post(&self, server: ServerId, notice: Notice);
}

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
    TimedOut,
    Cancelled,
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
    /// The failure code, when there is one.
    pub code: Option<String>,
    pub duration_ms: u64,
    pub at_ms: i64,
}

/// Where tool events are kept.
#[async_trait]
pub trait ToolEvents: Send + Sync {
    async fn record(&self, event: ToolEvent);
}

/// Wall-clock time, as unix milliseconds.
pub trait Clock: Send + Sync {
    fn now_ms(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
    }
}

/// A long-term fact the persona remembers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fact {
    pub id: i64,
    /// `None`: about the server; `Some`: about that user.
    pub about: Option<UserId>,
    pub text: String,
    pub at_ms: i64,
}

/// A fact to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewFact {
    /// `None` in a DM.
    pub server: Option<ServerId>,
    pub persona: PersonaId,
    pub about: Option<UserId>,
    pub text: String,
    pub at_ms: i64,
}

/// The result of storing a fact under a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FactAdded {
    Stored {
        id: i64,
    },
    /// The bucket (server-wide, or about this user) is full; nothing was stored.
    LimitReached {
        limit: u32,
    },
}

/// Short-term channel summaries and long-term facts.
#[async_trait]
pub trait MemoryStore: Send + Sync {
    /// Replaces the channel's working summary for the persona.
    async fn set_summary(
        &self,
        channel: ChannelId,
        persona: &PersonaId,
        summary: &str,
        at_ms: i64,
    ) -> Result<(), PortError>;
    async fn summary(
        &self,
        channel: ChannelId,
        persona: &PersonaId,
    ) -> Result<Option<String>, PortError>;
    /// Stores a fact unless its bucket already holds `limit` facts; the check and the insert
    /// are one step.
    async fn add_fact(&self, fact: NewFact, limit: u32) -> Result<FactAdded, PortError>;
    /// Facts about the server plus, when `about` is set, facts about that user; newest first.
    async fn facts(
        &self,
        server: Option<ServerId>,
        persona: &PersonaId,
        about: Option<UserId>,
        limit: u32,
    ) -> Result<Vec<Fact>, PortError>;
}

/// A stored image plan's id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct PlanId(pub String);

/// One part of a promised set of images ("3 pictures"): the set's key, this part and the total.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanPart {
    pub set: String,
    pub index: u8,
    pub total: u8,
}

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
    pub visibility: super::scope::Visibility,
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

/// The server's stickers.
#[async_trait]
pub trait StickerCatalog: Send + Sync {
    async fn stickers(&self, server: ServerId) -> Result<Vec<Sticker>, PortError>;
}

/// A channel message brought into context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HistoryMessage {
    pub id: MessageId,
    pub author: String,
    /// Written by this bot (its persona): shown to the model as its own words.
    pub from_bot: bool,
    pub content: String,
    pub at_ms: i64,
}

/// Older channel history.
#[async_trait]
pub trait ChannelHistory: Send + Sync {
    /// Up to `limit` messages older than `before` (or the newest when `None`), newest first.
    async fn older(
        &self,
        channel: ChannelId,
        before: Option<MessageId>,
        limit: u8,
    ) -> Result<Vec<HistoryMessage>, PortError>;
}

/// Every port the tool stage and the built-in tools use.
#[derive(Clone)]
pub struct Ports {
    pub sink: Arc<dyn ChatSink>,
    pub thought_log: Arc<dyn ThoughtLog>,
    pub stats: Arc<dyn UsageStats>,
    pub events: Arc<dyn ToolEvents>,
    pub clock: Arc<dyn Clock>,
    pub memory: Arc<dyn MemoryStore>,
    pub stickers: Arc<dyn StickerCatalog>,
    pub plans: Arc<dyn PlanStore>,
    pub history: Arc<dyn ChannelHistory>,
    /// Completed tool outcomes, so reuse survives a restart (SPEC R4).
    pub outcomes: Arc<dyn OutcomeStore>,
    pub reminders: Arc<dyn ReminderStore>,
}

/// The ports that face the chat service (Discord), to combine with storage-backed ones.
#[derive(Clone)]
pub struct ChatPorts {
    pub sink: Arc<dyn ChatSink>,
    pub thought_log: Arc<dyn ThoughtLog>,
    pub stickers: Arc<dyn StickerCatalog>,
    pub history: Arc<dyn ChannelHistory>,
    pub clock: Arc<dyn Clock>,
}
