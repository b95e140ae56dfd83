//! The ports: the traits the core needs from the outside world, and the plain data crossing them,
//! one file per port or small group of ports. Everything is re-exported here, so a user writes
//! `domain::ports::MemoryStore` whichever file it lives in.
//!
//! Adapters implement them: `discord/` for the chat sink, sticker catalog, channel history and
//! thought log; `storage/` for memories, plans, stats and events. Tests use the in-process
//! fakes in `crate::testkit` (the `testkit` feature). No Discord, HTTP or SQL type appears here.

mod approvals;
mod chat;
mod clock;
mod feedback;
mod media;
mod memory;
mod model;
mod notices;
mod outcomes;
mod personas;
mod plans;
mod queue;
mod reminders;
mod seen;
mod settings;
mod stats;

pub use approvals::*;
pub use chat::*;
pub use clock::*;
pub use feedback::*;
pub use media::*;
pub use memory::*;
pub use model::*;
pub use notices::*;
pub use outcomes::*;
pub use personas::*;
pub use plans::*;
pub use queue::*;
pub use reminders::*;
pub use seen::*;
pub use settings::*;
pub use stats::*;

use std::sync::Arc;

/// A port's backing service failed. The detail is for operators (logs); the model and users get
/// a fixed message instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PortError {
    #[error("{what} is unavailable: {detail}")]
    Unavailable { what: &'static str, detail: String },
    /// No answer to trust: the request may have taken effect (a post may be shown), so it is
    /// not made again.
    #[error("{what} did not confirm it: {detail}")]
    Unconfirmed { what: &'static str, detail: String },
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
    /// Discord's CDN, for the files of messages in context.
    pub attachments: Arc<dyn AttachmentFetcher>,
    /// Requests for approval and their decisions (SPEC E3).
    pub approvals: Arc<dyn ApprovalStore>,
}

/// The ports that face the chat service (Discord), to combine with storage-backed ones.
#[derive(Clone)]
pub struct ChatPorts {
    pub sink: Arc<dyn ChatSink>,
    pub thought_log: Arc<dyn ThoughtLog>,
    pub stickers: Arc<dyn StickerCatalog>,
    pub history: Arc<dyn ChannelHistory>,
    pub clock: Arc<dyn Clock>,
    pub attachments: Arc<dyn AttachmentFetcher>,
}
