//! The chat service's ports (Discord): where the persona speaks, the server's stickers and
//! older channel history.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::PortError;
use crate::domain::scope::{ChannelId, MessageId, ServerId, UserId};

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

/// Who a message may notify: the replied-to author (when it replies) and these users. Anyone
/// else the text names (`<@id>`) shows as a mention without a notification; `@everyone`,
/// `@here` and roles never notify.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pings {
    pub users: Vec<UserId>,
}

/// Most users one message may notify (Discord's own limit for `allowed_mentions.users`).
const PINGS_MAX: usize = 100;

impl Pings {
    /// Nobody but a replied-to author.
    pub fn none() -> Self {
        Self::default()
    }

    /// A reply to `author`'s message: `author` and the users their message mentions
    /// (`<@id>` or `<@!id>`), so the answer can name them with a notification.
    pub fn answering(author: UserId, content: &str) -> Self {
        let mut users = vec![author];
        let mut rest = content;
        while let Some(at) = rest.find("<@") {
            rest = rest.get(at + 2..).unwrap_or_default();
            let digits = rest.strip_prefix('!').unwrap_or(rest);
            let end = digits
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(digits.len());
            let closed = digits
                .get(end..)
                .is_some_and(|after| after.starts_with('>'));
            let id = digits.get(..end).map(str::parse::<u64>);
            if let (true, Some(Ok(id))) = (closed, id)
                && !users.contains(&UserId(id))
            {
                users.push(UserId(id));
            }
            if users.len() >= PINGS_MAX {
                break;
            }
        }
        Self { users }
    }
}

/// Who a persona's message is posted as: its name and avatar in its server (SPEC A1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Voice {
    pub server: ServerId,
    pub name: String,
    pub avatar_url: Option<String>,
}

/// Where the persona speaks.
#[async_trait]
pub trait ChatSink: Send + Sync {
    /// [`Self::send_text`] under `voice` (the persona's name and avatar) where the channel lets
    /// the adapter take them; as the bot user otherwise, or without a voice (the default: an
    /// adapter without voices). Such a post may not reply to `reply_to`; it still notifies only
    /// `pings`.
    async fn send_as(
        &self,
        voice: Option<&Voice>,
        channel: ChannelId,
        text: String,
        reply_to: Option<MessageId>,
        pings: &Pings,
        key: Option<&str>,
    ) -> Result<MessageId, PortError> {
        let _ = voice;
        self.send_text(channel, text, reply_to, pings, key).await
    }
    /// Posts one message (at most 2000 characters), as a reply to `reply_to` when given,
    /// notifying only `pings`, and returns its id. `key`, when given, makes the post idempotent:
    /// a second post with the same key is not shown twice (a turn resumed after a crash, SPEC
    /// D5). The adapter waits out rate limits itself; an error means Discord would not take it.
    async fn send_text(
        &self,
        channel: ChannelId,
        text: String,
        reply_to: Option<MessageId>,
        pings: &Pings,
        key: Option<&str>,
    ) -> Result<MessageId, PortError>;
    /// Shows the typing indicator (Discord keeps it about 10 s).
    async fn typing(&self, channel: ChannelId);
    /// Posts a sticker in the channel and reports what Discord said; `key` as for
    /// [`Self::send_text`].
    async fn send_sticker(
        &self,
        channel: ChannelId,
        sticker: &Sticker,
        key: Option<&str>,
    ) -> StickerSend;
    /// Posts a short progress line ("Planning an image...") in the conversation. Failures are
    /// the adapter's to log: progress is best effort.
    async fn send_progress(&self, channel: ChannelId, text: String);
    /// Sends `text` to `user` in a direct message (one notifying nobody else). An error means
    /// Discord would not take it (the user closed their DMs, for one).
    async fn direct_message(&self, user: UserId, text: String) -> Result<MessageId, PortError>;
}

/// What a server offers a turn: its stickers, and its name.
#[async_trait]
pub trait StickerCatalog: Send + Sync {
    async fn stickers(&self, server: ServerId) -> Result<Vec<Sticker>, PortError>;
    /// The server's name, when known (for the system prompt).
    fn server_name(&self, _server: ServerId) -> Option<String> {
        None
    }
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
    /// Its files, as Discord describes them (nothing fetched yet).
    pub attachments: Vec<Attachment>,
}

/// A file attached to a message, as Discord describes it: where its CDN serves it, its name,
/// size and declared type. Nothing in it is trusted: the bytes decide what a file is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    pub filename: String,
    pub url: String,
    pub size: u64,
    pub content_type: Option<String>,
}

/// Most attachments one message may carry on Discord (10); more in an event are ignored.
pub const ATTACHMENTS_PER_MESSAGE: usize = 10;

/// A downloaded file, or its first bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// At most the `max_bytes` asked for.
    pub bytes: Vec<u8>,
    /// Nothing came after `bytes` (false: the file is longer, and was read no further).
    pub complete: bool,
}

/// Where attachments are downloaded from.
#[async_trait]
pub trait AttachmentFetcher: Send + Sync {
    /// The first `max_bytes` of the file at `url`, when it is on Discord's CDN: any other
    /// address is refused without a request.
    async fn fetch(&self, url: &str, max_bytes: u64) -> Result<Fetched, PortError>;
}

/// Older channel history.
#[async_trait]
pub trait ChannelHistory: Send + Sync {
    /// Up to `limit` messages older than `before` (or the newest when `None`), newest first;
    /// the bot's mention in them reads as `@bot_name` (the persona's name there, SPEC C12).
    async fn older(
        &self,
        channel: ChannelId,
        before: Option<MessageId>,
        limit: u8,
        bot_name: &str,
    ) -> Result<Vec<HistoryMessage>, PortError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ids(pings: &Pings) -> Vec<u64> {
        pings.users.iter().map(|user| user.0).collect()
    }

    #[test]
    fn an_answer_may_notify_the_author_and_the_users_they_named() {
        let pings = Pings::answering(
            UserId(7),
            "ask <@11> and <@!12>, not <@&13> or <#14>; <@11>",
        );
        assert_eq!(ids(&pings), vec![7, 11, 12]);
    }

    #[test]
    fn broken_mentions_notify_nobody() {
        for text in [
            "<@>",
            "<@12",
            "<@!>",
            "<@1x>",
            "<@ 5>",
            "<@99999999999999999999999>",
            "<@<@",
        ] {
            assert_eq!(ids(&Pings::answering(UserId(7), text)), vec![7], "{text}");
        }
    }

    proptest! {
        // The content is the user's: any text ends, stays within Discord's 100 users, and
        // the author comes first.
        #[test]
        fn any_content_gives_a_bounded_list(content in "(<@!?[0-9]{1,4}>|[^<]{0,3}|<){0,400}") {
            let pings = Pings::answering(UserId(1), &content);
            prop_assert!(pings.users.len() <= PINGS_MAX);
            prop_assert_eq!(pings.users.first().copied(), Some(UserId(1)));
        }
    }
}
