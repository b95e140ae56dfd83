//! Delivery on Discord, the chat-facing ports that post: text as the bot user or through the
//! channel's webhook as the server's persona (SPEC A1, C4), stickers (T9), images, typing, and
//! direct messages. Messages go out with `@everyone`, `@here` and role pings disabled, and only
//! the people a reply answers are notified.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::client::{DiscordRest, SendError, nonce};
use super::webhooks::Webhooks;
use crate::discord::guild::CacheCell;
use crate::discord::ids::{BotId, snowflake};
use crate::discord::recent::RecentMessages;
use crate::domain::ports::{
    Buttons, ChatSink, Emoji, ExpressionSend, Pings, PortError, Sticker, Voice,
};
use crate::domain::scope::{ChannelId, MessageId, UserId};

/// The chat-facing ports on Discord: delivery here; its channel history is in `history.rs`, the
/// server's stickers in `stickers.rs`.
pub struct DiscordSink {
    pub(super) rest: Arc<DiscordRest>,
    pub(super) bot: BotId,
    pub(super) recent: Arc<RecentMessages>,
    pub(super) cache: CacheCell,
    /// The bot's channel webhooks, to post as a server's persona (none: always the bot user).
    pub(super) webhooks: Option<Arc<Webhooks>>,
}

impl DiscordSink {
    pub fn new(rest: Arc<DiscordRest>, bot: BotId, recent: Arc<RecentMessages>) -> Self {
        Self {
            rest,
            bot,
            recent,
            cache: CacheCell::default(),
            webhooks: None,
        }
    }

    /// Posts as a server's persona through these webhooks, where the bot may manage them.
    pub fn with_webhooks(mut self, webhooks: Arc<Webhooks>) -> Self {
        self.webhooks = Some(webhooks);
        self
    }

    /// Posts `text` through the channel's webhook under `voice`; `None` when there is no
    /// webhook to post through, or it refused (the bot user posts instead). An unconfirmed post
    /// is an error: it may be shown already, and is not posted twice.
    async fn post_as(
        &self,
        voice: &Voice,
        channel: ChannelId,
        text: &str,
        pings: &Pings,
        components: Option<Value>,
    ) -> Option<Result<MessageId, PortError>> {
        let webhooks = self.webhooks.as_ref()?;
        let bot = self.bot.get()?;
        if !self.cache.bot_can_webhook(voice.server, channel, bot) {
            return None;
        }
        let hook = webhooks.hook(channel.0).await?;
        let mut body = json!({
            "content": text,
            "username": voice.name,
            "avatar_url": voice.avatar_url.clone().or_else(|| self.cache.bot_avatar()),
            "allowed_mentions": allowed_mentions(pings, false),
        });
        // The bot's own webhooks belong to the application: their posts may carry buttons.
        if let (Some(components), Some(fields)) = (components, body.as_object_mut()) {
            fields.insert("components".to_owned(), components);
        }
        match self.rest.execute_webhook(&hook, &body).await {
            Ok(posted) => Some(Ok(MessageId(
                posted.get("id").and_then(snowflake).unwrap_or_default(),
            ))),
            Err(SendError::Refused {
                status,
                code,
                message,
            }) => {
                // 404: deleted by a moderator, the next post looks again; anything else (a name
                // Discord will not take) would refuse again, so the bot user posts for a while.
                tracing::warn!(%channel, status, code, %message, "webhook post refused; posting as the bot user");
                if status == 404 {
                    webhooks.forget(channel.0);
                } else {
                    webhooks.refused(channel.0);
                }
                None
            }
            Err(error @ SendError::Unconfirmed(_)) => Some(Err(port_error(error))),
        }
    }

    /// A message of the persona's reply, carrying `components` when given: through the
    /// channel's webhook under `voice` where it can, else as the bot user.
    async fn post_reply(
        &self,
        voice: Option<&Voice>,
        channel: ChannelId,
        text: String,
        reply: Reply<'_>,
        components: Option<Value>,
    ) -> Result<MessageId, PortError> {
        if let Some(voice) = voice
            && let Some(posted) = self
                .post_as(voice, channel, &text, reply.pings, components.clone())
                .await
        {
            return posted;
        }
        let mut body = message_body(text, reply.reply_to, reply.pings, reply.key);
        if let Some(components) = components {
            body.insert("components".to_owned(), components);
        }
        self.create(channel, &Value::Object(body)).await
    }

    /// Edits or deletes a message the channel's webhook posted (the persona's).
    async fn through_webhook(
        &self,
        method: reqwest::Method,
        channel: ChannelId,
        message: MessageId,
        body: Option<&Value>,
    ) -> Result<(), PortError> {
        let unavailable = || PortError::Unavailable {
            what: "discord",
            detail: "no webhook of the bot's in the channel".into(),
        };
        let webhooks = self.webhooks.as_ref().ok_or_else(unavailable)?;
        let hook = webhooks.hook(channel.0).await.ok_or_else(unavailable)?;
        self.rest
            .webhook_message(method, &hook, message.0, body)
            .await
            .map_err(port_error)
    }

    /// Posts a message's `body` in `channel`; its id.
    async fn create(&self, channel: ChannelId, body: &Value) -> Result<MessageId, PortError> {
        let posted = self
            .rest
            .create_message(channel.0, body)
            .await
            .map_err(port_error)?;
        Ok(MessageId(
            posted.get("id").and_then(snowflake).unwrap_or_default(),
        ))
    }

    /// Reads server names from the gateway's cache (without it, no server is named).
    pub fn with_cache(mut self, cache: CacheCell) -> Self {
        self.cache = cache;
        self
    }
}

/// What a message of a reply answers, whom it may notify, and its idempotency key.
struct Reply<'a> {
    reply_to: Option<MessageId>,
    pings: &'a Pings,
    key: Option<&'a str>,
}

/// A text message's body: `reply_to` as a reply, notifying only `pings`, with the nonce of
/// `key` (or a fresh one) enforced.
fn message_body(
    text: String,
    reply_to: Option<MessageId>,
    pings: &Pings,
    key: Option<&str>,
) -> serde_json::Map<String, Value> {
    let mut body = serde_json::Map::new();
    body.insert("content".to_owned(), json!(text));
    body.insert(
        "allowed_mentions".to_owned(),
        allowed_mentions(pings, reply_to.is_some()),
    );
    body.insert(
        "nonce".to_owned(),
        json!(key.map_or_else(nonce, keyed_nonce)),
    );
    body.insert("enforce_nonce".to_owned(), json!(true));
    if let Some(reply_to) = reply_to {
        let reference = json!({
            "message_id": reply_to.0.to_string(),
            "fail_if_not_exists": false,
        });
        body.insert("message_reference".to_owned(), reference);
    }
    body
}

/// Only `pings` (and, on a reply, the replied-to author) get a notification: another user the
/// text names shows as a mention without one; `@everyone`, `@here` and roles never notify.
fn allowed_mentions(pings: &Pings, replying: bool) -> Value {
    let users: Vec<String> = pings.users.iter().map(|user| user.0.to_string()).collect();
    json!({ "parse": [], "users": users, "replied_user": replying })
}

/// A send's failure as the core's ports say it.
pub(super) fn port_error(error: SendError) -> PortError {
    match error {
        SendError::Unconfirmed(detail) => PortError::Unconfirmed {
            what: "discord",
            detail,
        },
        refused @ SendError::Refused { .. } => PortError::Unavailable {
            what: "discord",
            detail: refused.to_string(),
        },
    }
}

#[async_trait]
impl ChatSink for DiscordSink {
    async fn send_as(
        &self,
        voice: Option<&Voice>,
        channel: ChannelId,
        text: String,
        reply_to: Option<MessageId>,
        pings: &Pings,
        key: Option<&str>,
    ) -> Result<MessageId, PortError> {
        let reply = Reply {
            reply_to,
            pings,
            key,
        };
        self.post_reply(voice, channel, text, reply, None).await
    }

    /// A reply under a server's persona carries its buttons on the webhook's post (the bot's
    /// webhooks belong to the application, which Discord requires for buttons).
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
        let reply = Reply {
            reply_to,
            pings,
            key,
        };
        let components = super::buttons::components(buttons);
        self.post_reply(voice, channel, text, reply, Some(components))
            .await
    }

    async fn set_buttons(
        &self,
        channel: ChannelId,
        message: MessageId,
        buttons: &Buttons,
    ) -> Result<(), PortError> {
        let body = json!({ "components": super::buttons::components(buttons) });
        match self.rest.edit_message(channel.0, message.0, &body).await {
            // Another author's message: the persona's, posted through the channel's webhook.
            Err(SendError::Refused { status: 403, .. }) => {
                self.through_webhook(reqwest::Method::PATCH, channel, message, Some(&body))
                    .await
            }
            other => other.map_err(port_error),
        }
    }

    async fn post_approval(
        &self,
        channel: ChannelId,
        card: &crate::domain::ports::ApprovalCard,
    ) -> Result<MessageId, PortError> {
        let mut body = message_body(card.text.clone(), None, &Pings::none(), None);
        body.insert(
            "components".to_owned(),
            super::buttons::approval_components(card),
        );
        self.create(channel, &Value::Object(body)).await
    }

    async fn close_approval(
        &self,
        channel: ChannelId,
        message: MessageId,
        card: &crate::domain::ports::ApprovalCard,
        outcome: String,
    ) -> Result<(), PortError> {
        let body = json!({
            "content": format!("{}\n{outcome}", card.text),
            "components": [],
            "allowed_mentions": { "parse": [] },
        });
        self.rest
            .edit_message(channel.0, message.0, &body)
            .await
            .map_err(port_error)
    }

    async fn delete_message(
        &self,
        channel: ChannelId,
        message: MessageId,
    ) -> Result<(), PortError> {
        match self.rest.delete_message(channel.0, message.0).await {
            // The persona's post, and the bot may not manage messages here: its webhook may.
            Err(SendError::Refused { status: 403, .. }) => {
                self.through_webhook(reqwest::Method::DELETE, channel, message, None)
                    .await
            }
            other => other.map_err(port_error),
        }
    }

    async fn send_text(
        &self,
        channel: ChannelId,
        text: String,
        reply_to: Option<MessageId>,
        pings: &Pings,
        key: Option<&str>,
    ) -> Result<MessageId, PortError> {
        let body = message_body(text, reply_to, pings, key);
        self.create(channel, &Value::Object(body)).await
    }

    async fn typing(&self, channel: ChannelId) {
        self.rest.trigger_typing(channel.0).await;
    }

    async fn send_sticker(
        &self,
        channel: ChannelId,
        sticker: &Sticker,
        key: Option<&str>,
    ) -> ExpressionSend {
        let body = json!({
            "sticker_ids": [sticker.id.to_string()],
            "allowed_mentions": { "parse": [] },
            "nonce": key.map_or_else(nonce, keyed_nonce),
            "enforce_nonce": true,
        });
        let sent = self.rest.create_message(channel.0, &body).await;
        expression_send(sent.map(|_| ()), channel, "sticker")
    }

    async fn react(&self, channel: ChannelId, message: MessageId, emoji: &Emoji) -> ExpressionSend {
        let added = self
            .rest
            .reaction(reqwest::Method::PUT, channel.0, message.0, &in_path(emoji))
            .await;
        expression_send(added, channel, "reaction")
    }

    async fn unreact(
        &self,
        channel: ChannelId,
        message: MessageId,
        emoji: &Emoji,
    ) -> Result<(), PortError> {
        self.rest
            .reaction(
                reqwest::Method::DELETE,
                channel.0,
                message.0,
                &in_path(emoji),
            )
            .await
            .map_err(|error| PortError::Unavailable {
                what: "discord",
                detail: error.to_string(),
            })
    }

    async fn send_progress(&self, channel: ChannelId, text: String) {
        if let Err(error) = self
            .send_text(channel, text, None, &Pings::none(), None)
            .await
        {
            tracing::warn!(%channel, %error, "progress line not posted");
        }
    }

    async fn direct_message(&self, user: UserId, text: String) -> Result<MessageId, PortError> {
        let channel = self
            .rest
            .open_dm(user.0)
            .await
            .map_err(|detail| PortError::Unavailable {
                what: "direct message",
                detail,
            })?;
        self.send_text(ChannelId(channel), text, None, &Pings::none(), None)
            .await
    }
}

/// The nonce of an idempotent post: the first 25 hex characters (Discord's nonce limit) of the
/// key's SHA-256, so a resumed turn sends the nonce its first run sent.
fn keyed_nonce(key: &str) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(key.as_bytes());
    let mut hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    hex.truncate(25);
    hex
}

#[async_trait]
impl crate::domain::ports::ImagePoster for DiscordSink {
    async fn post_image(
        &self,
        channel: ChannelId,
        image: &crate::domain::ports::GeneratedImage,
        caption: Option<&str>,
        nonce: &str,
    ) -> crate::domain::ports::Posted {
        use crate::domain::ports::Posted;
        let body = json!({
            "content": caption.unwrap_or_default(),
            "allowed_mentions": { "parse": [] },
            "nonce": nonce,
            "enforce_nonce": true,
        });
        match self
            .rest
            .create_message_with_file(channel.0, &body, &image.bytes, &image.filename, &image.mime)
            .await
        {
            Ok(message) => match message.get("id").and_then(snowflake) {
                Some(id) => Posted::Confirmed(MessageId(id)),
                None => Posted::Unconfirmed("no message id in Discord's answer".into()),
            },
            Err(SendError::Refused {
                status,
                code,
                message,
            }) => Posted::Refused(format!("{status} ({code}): {message}")),
            Err(SendError::Unconfirmed(why)) => Posted::Unconfirmed(why),
        }
    }
}

/// An emoji as a reaction's path names it: a Unicode emoji itself, a server's own as `name:id`.
fn in_path(emoji: &Emoji) -> String {
    match emoji {
        Emoji::Unicode(emoji) => emoji.clone(),
        Emoji::Custom(custom) => format!("{}:{}", custom.name, custom.id),
    }
}

/// What Discord's answer to an expression's request means for the turn (SPEC T9, E1).
fn expression_send(
    answer: Result<(), SendError>,
    channel: ChannelId,
    kind: &'static str,
) -> ExpressionSend {
    match answer {
        Ok(()) => ExpressionSend::Confirmed,
        Err(SendError::Refused {
            status,
            code,
            message,
        }) => ExpressionSend::Refused {
            reason: format!("{status} ({code}): {message}"),
        },
        Err(SendError::Unconfirmed(why)) => {
            tracing::warn!(%channel, kind, %why, "expression delivery unconfirmed");
            ExpressionSend::Unconfirmed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // SPEC D5: a keyed post sends the same nonce in every run of the turn (Discord shows one
    // message per nonce), within Discord's 25 characters; keys differ, nonces differ.
    #[test]
    fn a_keyed_nonce_is_stable_and_fits_discord() {
        let a = keyed_nonce("0190abcd:piece-0");
        assert_eq!(a, keyed_nonce("0190abcd:piece-0"));
        assert_eq!(a.len(), 25);
        assert_ne!(a, keyed_nonce("0190abcd:piece-1"));
    }

    // A reply notifies only the people it answers; no `parse` list, so `<@id>` of anyone else,
    // `@everyone`, `@here` and roles stay silent.
    #[test]
    fn only_the_answered_people_are_notified() {
        let pings = Pings {
            users: vec![UserId(7), UserId(11)],
            ..Pings::none()
        };
        assert_eq!(
            allowed_mentions(&pings, true),
            json!({ "parse": [], "users": ["7", "11"], "replied_user": true })
        );
        assert_eq!(
            allowed_mentions(&Pings::none(), false),
            json!({ "parse": [], "users": [], "replied_user": false })
        );
    }
}
