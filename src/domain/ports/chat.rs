//! The chat service's ports (Discord): where the persona speaks and reacts, the server's
//! stickers and emoji, and older channel history.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::PortError;
pub use crate::domain::buttons::Buttons;
use crate::domain::scope::{ChannelId, MessageId, ServerId, UserId};
use crate::domain::turn::ExpressionId;
pub use crate::domain::turn::Voice;

/// A server sticker the persona may send.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sticker {
    pub id: u64,
    pub name: String,
}

/// A server's own emoji, which the persona may react with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CustomEmoji {
    pub id: u64,
    pub name: String,
    pub animated: bool,
}

/// What a reaction is made of (SPEC E1): a Unicode emoji, or one of the server's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Emoji {
    Unicode(String),
    Custom(CustomEmoji),
}

impl Emoji {
    /// How the model and the thought log read it: the emoji itself, or `:name:`.
    pub fn shown(&self) -> String {
        match self {
            Self::Unicode(emoji) => emoji.clone(),
            Self::Custom(custom) => format!(":{}:", custom.name),
        }
    }

    /// The same number for the same emoji in every run: what a turn's record of its reaction
    /// holds (SPEC D5), so a resumed turn knows which reaction it made.
    pub fn key(&self) -> u64 {
        use sha2::Digest as _;
        let id = match self {
            Self::Unicode(emoji) => format!("u:{emoji}"),
            Self::Custom(custom) => format!("c:{}", custom.id),
        };
        super::outcomes::leading_u64(&sha2::Sha256::digest(id.as_bytes()))
    }
}

/// An expression a tool asks the stage to deliver now (SPEC T9, E1): a turn delivers one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expression {
    Sticker(Sticker),
    /// A reaction on `message` (the turn's trigger).
    Reaction {
        message: MessageId,
        emoji: Emoji,
    },
}

impl Expression {
    pub fn id(&self) -> ExpressionId {
        match self {
            Self::Sticker(sticker) => ExpressionId::Sticker(sticker.id),
            Self::Reaction { emoji, .. } => ExpressionId::Reaction(emoji.key()),
        }
    }

    /// What the model calls it ("sticker", "reaction").
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Sticker(_) => "sticker",
            Self::Reaction { .. } => "reaction",
        }
    }
}

/// What Discord said to an expression's send, a sticker or a reaction (SPEC T9, E1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpressionSend {
    /// Discord confirmed it (the created message, or the reaction's 204).
    Confirmed,
    /// Discord definitely refused (a 4xx other than 429): nothing was posted.
    Refused { reason: String },
    /// No answer we can trust (timeout, 5xx, connection lost): it may or may not be posted.
    Unconfirmed,
}

/// An approval card (SPEC E3): what will happen, in the bot's words, and whose buttons.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalCard {
    pub id: crate::domain::approvals::ApprovalId,
    /// The whole card text (what, who may decide, until when).
    pub text: String,
    /// The language of the buttons' labels.
    pub locale: crate::locale::Locale,
}

/// A user a message names, under the name the model reads for them (`@name`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mention {
    pub user: UserId,
    pub name: String,
}

/// Longest name kept for a named user, in characters (Discord's own names are at most 32).
pub const MENTION_NAME_MAX: usize = 100;

/// Who a message may notify: the replied-to author (when it replies) and these users. Anyone
/// else the text names (`<@id>`) shows as a mention without a notification; `@everyone`,
/// `@here` and roles never notify.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pings {
    pub users: Vec<UserId>,
    /// Of `users`, those whose `@name` in the text becomes their mention ([`Self::link_names`]).
    pub named: Vec<Mention>,
}

/// Most users one message may notify (Discord's own limit for `allowed_mentions.users`).
pub const PINGS_MAX: usize = 100;

impl Pings {
    /// Nobody but a replied-to author.
    pub fn none() -> Self {
        Self::default()
    }

    /// A reply to `author`'s message, which named `named` (Discord's `mentions` of it, never
    /// its text, which the model reads as `@name`): the author and those users may be notified,
    /// nobody else (SPEC C4).
    pub fn answering(author: Mention, named: &[Mention]) -> Self {
        let mut pings = Self::none();
        for mention in std::iter::once(&author).chain(named) {
            if pings.users.len() >= PINGS_MAX {
                break;
            }
            if !pings.users.contains(&mention.user) {
                pings.users.push(mention.user);
                pings.named.push(Mention {
                    user: mention.user,
                    name: mention.name.chars().take(MENTION_NAME_MAX).collect(),
                });
            }
        }
        pings
    }

    /// `text` with each `@name` of [`Self::named`] as that user's mention (`<@id>`): whole names
    /// only (`@Bobby` is not `@Bob`; `a@Bob` and `https://x.social/@Bob` are no mentions), ASCII
    /// case ignored, longest names first, while the text stays within `max_chars`. Any other
    /// `@word` stays as written.
    pub fn link_names(&self, text: &str, max_chars: usize) -> String {
        let mut names: Vec<&Mention> = self.named.iter().filter(|m| !m.name.is_empty()).collect();
        if names.is_empty() || !text.contains('@') {
            return text.to_owned();
        }
        names.sort_by_key(|m| std::cmp::Reverse(m.name.len()));
        let mut room = max_chars.saturating_sub(text.chars().count());
        let mut linked = String::with_capacity(text.len());
        let mut copied = 0;
        for (at, c) in text.char_indices() {
            let starts_word = || text[..at].chars().next_back().is_none_or(opens_mention);
            if c != '@' || at < copied || !starts_word() {
                continue;
            }
            let after = &text[at + 1..];
            let Some(mention) = names.iter().find(|m| names_whole(after, &m.name)) else {
                continue;
            };
            let id = format!("<@{}>", mention.user.0);
            let grows = id.len().saturating_sub(mention.name.chars().count() + 1);
            if grows > room {
                break;
            }
            room -= grows;
            linked.push_str(&text[copied..at]);
            linked.push_str(&id);
            copied = at + 1 + mention.name.len();
        }
        linked.push_str(&text[copied..]);
        linked
    }
}

/// A character an `@name` may follow: a space or a Markdown opener, never a letter (`a@Bob`
/// is an address) or a slash (`https://x.social/@Bob` is a link).
fn opens_mention(c: char) -> bool {
    c.is_whitespace() || "([{\"'*_~>|".contains(c)
}

/// A character that continues a name: `@Bob` ends before a space or a comma, not before `by`.
fn in_name(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `text` starts with `name` (ASCII case ignored) as a whole word.
fn names_whole(text: &str, name: &str) -> bool {
    text.get(..name.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(name))
        && text[name.len()..]
            .chars()
            .next()
            .is_none_or(|c| !in_name(c))
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
    /// [`Self::send_as`] carrying `buttons` (SPEC E2). An adapter without buttons posts the
    /// text alone (the default).
    #[allow(clippy::too_many_arguments)]
    async fn send_with_buttons(
        &self,
        voice: Option<&Voice>,
        channel: ChannelId,
        text: String,
        reply_to: Option<MessageId>,
        pings: &Pings,
        key: Option<&str>,
        buttons: &Buttons,
    ) -> Result<MessageId, PortError> {
        let _ = buttons;
        self.send_as(voice, channel, text, reply_to, pings, key)
            .await
    }
    /// Replaces the buttons of a reply's message (SPEC E2): `Shown::Nothing` takes them off.
    async fn set_buttons(
        &self,
        channel: ChannelId,
        message: MessageId,
        buttons: &Buttons,
    ) -> Result<(), PortError> {
        let _ = (channel, message, buttons);
        Ok(())
    }
    /// Deletes one of the persona's messages (an answer *Again* replaced, SPEC E2).
    async fn delete_message(
        &self,
        channel: ChannelId,
        message: MessageId,
    ) -> Result<(), PortError> {
        let _ = (channel, message);
        Ok(())
    }
    /// Posts an approval card with Approve and Deny (SPEC E3); its id. An adapter without
    /// buttons cannot ask: the call is then not approved.
    async fn post_approval(
        &self,
        channel: ChannelId,
        card: &ApprovalCard,
    ) -> Result<MessageId, PortError> {
        let _ = (channel, card);
        Err(PortError::Unavailable {
            what: "chat",
            detail: "no approval cards here".into(),
        })
    }
    /// Closes an approval card: its buttons off, `outcome` below its text.
    async fn close_approval(
        &self,
        channel: ChannelId,
        message: MessageId,
        card: &ApprovalCard,
        outcome: String,
    ) -> Result<(), PortError> {
        let _ = (channel, message, card, outcome);
        Ok(())
    }
    /// Shows `text`, the reply's message still being written, where the destination shows a
    /// reply as it is written (an interaction's answer, by edits, SPEC A5). Best effort, and
    /// the destination keeps to its own pace; a channel shows nothing (the default).
    async fn draft(&self, channel: ChannelId, text: &str) {
        let _ = (channel, text);
    }
    /// Whether [`Self::draft`] shows anything: a turn builds no draft for a destination that
    /// shows none (the default).
    fn shows_drafts(&self) -> bool {
        false
    }
    /// The turn's reply is over (`stopped`: by `/kill`, *Stop* or the end of its time): a
    /// destination that showed a draft settles it, and one that showed nothing says so.
    /// Nothing to do in a channel (the default).
    async fn reply_over(&self, channel: ChannelId, stopped: bool) {
        let _ = (channel, stopped);
    }
    /// Shows the typing indicator (Discord keeps it about 10 s).
    async fn typing(&self, channel: ChannelId);
    /// Posts a sticker in the channel and reports what Discord said; `key` as for
    /// [`Self::send_text`].
    async fn send_sticker(
        &self,
        channel: ChannelId,
        sticker: &Sticker,
        key: Option<&str>,
    ) -> ExpressionSend;
    /// Adds the bot's reaction `emoji` to `message` and reports what Discord said. A reaction
    /// is idempotent on Discord's side: adding it again changes nothing.
    async fn react(&self, channel: ChannelId, message: MessageId, emoji: &Emoji) -> ExpressionSend;
    /// Removes the bot's own reaction `emoji` from `message` (a status reaction, SPEC E1).
    /// Removing one that is not there changes nothing.
    async fn unreact(
        &self,
        channel: ChannelId,
        message: MessageId,
        emoji: &Emoji,
    ) -> Result<(), PortError>;
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
    /// The server's own emoji that can be used now (SPEC E1).
    async fn emojis(&self, server: ServerId) -> Result<Vec<CustomEmoji>, PortError>;
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

/// No history: a channel the bot may not read (an `/ask` where the bot is not a member, SPEC
/// A5).
pub struct NoHistory;

#[async_trait]
impl ChannelHistory for NoHistory {
    async fn older(
        &self,
        _channel: ChannelId,
        _before: Option<MessageId>,
        _limit: u8,
        _bot_name: &str,
    ) -> Result<Vec<HistoryMessage>, PortError> {
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn mention(user: u64, name: &str) -> Mention {
        Mention {
            user: UserId(user),
            name: name.to_owned(),
        }
    }

    fn ids(pings: &Pings) -> Vec<u64> {
        pings.users.iter().map(|user| user.0).collect()
    }

    // SPEC C4: an answer may notify its asker and the users their message named (Discord's mentions
    // of it), each once, at most Discord's 100.
    #[test]
    fn an_answer_may_notify_the_asker_and_the_users_they_named() {
        let named = [mention(11, "bob"), mention(12, "carol"), mention(11, "bob")];
        let pings = Pings::answering(mention(7, "alice"), &named);
        assert_eq!(ids(&pings), vec![7, 11, 12]);
        let many: Vec<Mention> = (0..300).map(|n| mention(n, "x")).collect();
        assert_eq!(
            Pings::answering(mention(7, "a"), &many).users.len(),
            PINGS_MAX
        );
    }

    // SPEC C4: the model's `@name` for a named user becomes their mention; a name the message did
    // not name, a longer name, or an address stays text and notifies nobody.
    #[test]
    fn only_named_users_become_mentions() {
        let pings = Pings::answering(mention(7, "alice"), &[mention(301, "Bob")]);
        let text = pings.link_names(
            "@bob and @Alice, ask @Carol, @Bobby or bob@Bob.org (https://x.social/@Bob); @Bob's turn",
            2000,
        );
        assert_eq!(
            text,
            "<@301> and <@7>, ask @Carol, @Bobby or bob@Bob.org (https://x.social/@Bob); <@301>'s turn"
        );
        assert_eq!(ids(&pings), vec![7, 301], "Carol is not notified");
        let nobody = Pings::none().link_names("@Bob", 2000);
        assert_eq!(nobody, "@Bob");
    }

    // SPEC C4: a mention is longer than the name it replaces; the message stays within the limit.
    #[test]
    fn linking_stays_within_the_message_limit() {
        let pings = Pings::answering(mention(7, "a"), &[mention(301, "Bob")]);
        let text = format!("{} @Bob @Bob", "x".repeat(1988));
        let linked = pings.link_names(&text, 2000);
        assert!(linked.chars().count() <= 2000, "{}", linked.len());
        assert!(linked.ends_with("<@301> @Bob"), "{linked}");
    }

    proptest! {
        // Whatever the text and names, linking ends, keeps text without `@` whole, and stays
        // within the limit a text within it had.
        #[test]
        fn any_text_links_safely(
            text in ".{0,300}",
            names in proptest::collection::vec("[a-zA-Z_ ]{0,6}", 0..5),
        ) {
            let named: Vec<Mention> = names
                .iter()
                .enumerate()
                .map(|(n, name)| mention(n as u64 + 1, name))
                .collect();
            let pings = Pings::answering(mention(99, "asker"), &named);
            let linked = pings.link_names(&text, 320);
            if !text.contains('@') {
                prop_assert_eq!(&linked, &text);
            }
            prop_assert!(linked.chars().count() <= 320);
        }
    }
}
