//! The chat service's ports (Discord): where the persona speaks, the server's stickers and
//! older channel history.

use async_trait::async_trait;
use serde::Serialize;

use super::PortError;
use crate::domain::scope::{ChannelId, MessageId, ServerId};

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
