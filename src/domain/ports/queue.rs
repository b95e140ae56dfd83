//! The per-channel queue of triggering messages (SPEC D4).

use async_trait::async_trait;

use super::{Attachment, Mention, PortError};
use crate::domain::scope::{ChannelId, MessageId, PersonaId, ServerId, UserId, Visibility};
use crate::locale::Locale;

/// A triggering message waiting for its channel's turn (SPEC C3, D4): everything needed to
/// run its turn, even after a restart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewQueuedMessage {
    pub server: Option<ServerId>,
    pub channel: ChannelId,
    pub message: MessageId,
    pub author: UserId,
    pub author_name: String,
    pub content: String,
    /// A follow-up from the requester of the running turn (SPEC C7).
    pub follow_up: bool,
    pub enqueued_at_ms: i64,
    /// Who answers.
    pub persona: PersonaId,
    pub visibility: Visibility,
    /// The author's locale.
    pub locale: Locale,
    /// A turn the bot started itself (reminder, random trigger).
    pub quiet: bool,
    /// The message's files (their descriptions: fetched when its turn starts).
    pub attachments: Vec<Attachment>,
    /// The users the message names (Discord's `mentions` of it, the bot and the author left
    /// out): its reply may notify them (SPEC C4).
    pub mentions: Vec<Mention>,
}

/// A stored queue entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedMessage {
    pub id: i64,
    pub entry: NewQueuedMessage,
}

/// What storing a queued message did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    /// A new entry with this id.
    New(i64),
    /// The message was already queued under this id; it is handled once, from there.
    Existing(i64),
}

impl Pushed {
    pub fn id(self) -> i64 {
        match self {
            Pushed::New(id) | Pushed::Existing(id) => id,
        }
    }
}

#[async_trait]
pub trait QueueStore: Send + Sync {
    /// Stores a message before it is acknowledged, held by this process (SPEC D6). A message
    /// already stored (a redelivered gateway event, or one recovered at start) keeps its one
    /// entry.
    async fn push(&self, message: &NewQueuedMessage) -> Result<Pushed, PortError>;
    /// Removes an answered (or deliberately dropped) entry.
    async fn remove(&self, id: i64) -> Result<(), PortError>;
    /// Marks an entry as a follow-up (SPEC C7), so it keeps its place after a restart.
    async fn mark_follow_up(&self, id: i64) -> Result<(), PortError>;
    /// The entry's message was edited: its text is now `content` (SPEC C7).
    async fn update_content(&self, id: i64, content: &str) -> Result<(), PortError>;
    /// Claims, for this process, the channel's entries it may take (its own, unclaimed ones,
    /// and those whose holder let the lease expire, of the shards it runs), and returns every
    /// entry of the channel it holds, oldest first. Another process's live entries are never
    /// returned.
    async fn pending(&self, channel: ChannelId) -> Result<Vec<QueuedMessage>, PortError>;
    /// Every channel with entries this process may take (start-up recovery).
    async fn channels_with_pending(&self) -> Result<Vec<ChannelId>, PortError>;
    /// Channels with entries of this process's shards that no live process holds: unclaimed, or
    /// left by a process whose lease expired (SPEC D6: a crashed process's messages are taken
    /// over).
    async fn channels_to_take_over(&self) -> Result<Vec<ChannelId>, PortError>;
    /// Renews this process's lease on every entry it holds; returns how many.
    async fn renew_claims(&self) -> Result<u64, PortError>;
    /// Lets go of every entry this process holds (a clean stop): the next process running its
    /// shards takes them at once instead of after the lease. Returns how many.
    async fn release_claims(&self) -> Result<u64, PortError>;
    /// Removes every entry of the channel; returns how many there were (`/kill`).
    async fn clear(&self, channel: ChannelId) -> Result<u64, PortError>;
}
