//! The chat-facing ports on Discord: posting text and stickers (SPEC C4, T9), typing, channel
//! history and the server's stickers. Messages go out with `@everyone`, `@here` and role pings
//! disabled.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use serde_json::{Value, json};

use super::client::{DiscordRest, SendError, nonce};
use super::ratelimit::Route;
use super::webhooks::Webhooks;
use crate::discord::gateway::recent::RecentMessages;
use crate::discord::guild::CacheCell;
use crate::domain::ports::{
    ATTACHMENTS_PER_MESSAGE, Attachment, ChannelHistory, ChatSink, HistoryMessage, Pings,
    PortError, Sticker, StickerCatalog, StickerSend, Voice,
};
use crate::domain::scope::{ChannelId, MessageId, ServerId, UserId};

/// The bot's own user id, known once the gateway says READY (0 before).
#[derive(Debug, Default, Clone)]
pub struct BotId(Arc<AtomicU64>);

impl BotId {
    pub fn set(&self, id: u64) {
        self.0.store(id, Ordering::Release);
    }

    pub fn get(&self) -> Option<u64> {
        let id = self.0.load(Ordering::Acquire);
        (id != 0).then_some(id)
    }
}

pub struct DiscordSink {
    rest: Arc<DiscordRest>,
    bot: BotId,
    recent: Arc<RecentMessages>,
    cache: CacheCell,
    /// The bot's channel webhooks, to post as a server's persona (none: always the bot user).
    webhooks: Option<Arc<Webhooks>>,
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
    ) -> Option<Result<MessageId, PortError>> {
        let webhooks = self.webhooks.as_ref()?;
        let bot = self.bot.get()?;
        if !self.cache.bot_can_webhook(voice.server, channel, bot) {
            return None;
        }
        let hook = webhooks.hook(channel.0).await?;
        let body = json!({
            "content": text,
            "username": voice.name,
            "avatar_url": voice.avatar_url.clone().or_else(|| self.cache.bot_avatar()),
            "allowed_mentions": allowed_mentions(pings, false),
        });
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

    /// Reads server names from the gateway's cache (without it, no server is named).
    pub fn with_cache(mut self, cache: CacheCell) -> Self {
        self.cache = cache;
        self
    }
}

/// Only `pings` (and, on a reply, the replied-to author) get a notification: another user the
/// text names shows as a mention without one; `@everyone`, `@here` and roles never notify.
fn allowed_mentions(pings: &Pings, replying: bool) -> Value {
    let users: Vec<String> = pings.users.iter().map(|user| user.0.to_string()).collect();
    json!({ "parse": [], "users": users, "replied_user": replying })
}

fn port_error(error: SendError) -> PortError {
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
        if let Some(voice) = voice
            && let Some(posted) = self.post_as(voice, channel, &text, pings).await
        {
            return posted;
        }
        self.send_text(channel, text, reply_to, pings, key).await
    }

    async fn send_text(
        &self,
        channel: ChannelId,
        text: String,
        reply_to: Option<MessageId>,
        pings: &Pings,
        key: Option<&str>,
    ) -> Result<MessageId, PortError> {
        let reference = reply_to.map(|reply_to| {
            json!({
                "message_id": reply_to.0.to_string(),
                "fail_if_not_exists": false,
            })
        });
        let mut body = json!({
            "content": text,
            "allowed_mentions": allowed_mentions(pings, reply_to.is_some()),
            "nonce": key.map_or_else(nonce, keyed_nonce),
            "enforce_nonce": true,
        });
        if let (Some(reference), Some(map)) = (reference, body.as_object_mut()) {
            map.insert("message_reference".to_owned(), reference);
        }
        let posted = self
            .rest
            .create_message(channel.0, &body)
            .await
            .map_err(port_error)?;
        Ok(MessageId(
            posted.get("id").and_then(snowflake).unwrap_or_default(),
        ))
    }

    async fn typing(&self, channel: ChannelId) {
        self.rest.trigger_typing(channel.0).await;
    }

    async fn send_sticker(
        &self,
        channel: ChannelId,
        sticker: &Sticker,
        key: Option<&str>,
    ) -> StickerSend {
        let body = json!({
            "sticker_ids": [sticker.id.to_string()],
            "allowed_mentions": { "parse": [] },
            "nonce": key.map_or_else(nonce, keyed_nonce),
            "enforce_nonce": true,
        });
        match self.rest.create_message(channel.0, &body).await {
            Ok(_) => StickerSend::Confirmed,
            Err(SendError::Refused {
                status,
                code,
                message,
            }) => StickerSend::Refused {
                reason: format!("{status} ({code}): {message}"),
            },
            Err(SendError::Unconfirmed(why)) => {
                tracing::warn!(%channel, %why, "sticker delivery unconfirmed");
                StickerSend::Unconfirmed
            }
        }
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

/// A snowflake from a JSON string (or number).
pub fn snowflake(value: &Value) -> Option<u64> {
    match value {
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.as_u64(),
        _ => None,
    }
}

fn timestamp_ms(value: &Value) -> i64 {
    value
        .as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map_or(0, |t| t.timestamp_millis())
}

/// The name to show for a message author: server nickname, display name, user name.
pub fn author_name(message: &Value) -> String {
    let text = |pointer: &str| message.pointer(pointer).and_then(Value::as_str);
    text("/member/nick")
        .or_else(|| text("/author/global_name"))
        .or_else(|| text("/author/username"))
        .unwrap_or("someone")
        .to_owned()
}

#[async_trait]
impl ChannelHistory for DiscordSink {
    async fn older(
        &self,
        channel: ChannelId,
        before: Option<MessageId>,
        limit: u8,
        bot_name: &str,
    ) -> Result<Vec<HistoryMessage>, PortError> {
        let wanted = usize::from(limit.clamp(1, 100));
        let before_id = before.map(|b| b.0);
        if let Some(page) = self.recent.older(channel.0, before_id, wanted) {
            return Ok(page);
        }
        let mut path = format!(
            "/channels/{}/messages?limit={}",
            channel.0,
            limit.clamp(1, 100)
        );
        if let Some(before) = before {
            path.push_str(&format!("&before={}", before.0));
        }
        let messages = self
            .rest
            .get(
                Route {
                    template: "GET /channels/{}/messages",
                    major: channel.0,
                    local_per_5s: None,
                },
                &path,
            )
            .await
            .map_err(|detail| PortError::Unavailable {
                what: "discord",
                detail,
            })?;
        let bot = self.bot.get().map(|id| (id, bot_name));
        let ours = self.own_webhooks(channel, &messages).await;
        let page = history_page(&messages, bot, &ours, limit);
        self.recent.learn(channel.0, before_id, wanted, &page);
        Ok(page)
    }
}

impl DiscordSink {
    /// The webhooks among a page's authors that are the bot's own (the persona's posts).
    async fn own_webhooks(&self, channel: ChannelId, messages: &Value) -> Vec<u64> {
        let Some(webhooks) = &self.webhooks else {
            return Vec::new();
        };
        let mut seen: Vec<u64> = Vec::new();
        let mut ours = Vec::new();
        let ids = messages.as_array().into_iter().flatten();
        for id in ids.filter_map(|m| m.get("webhook_id").and_then(snowflake)) {
            if !seen.contains(&id) {
                seen.push(id);
                if webhooks.is_ours(channel.0, id).await {
                    ours.push(id);
                }
            }
        }
        ours
    }
}

/// A page of channel messages (Discord's JSON, newest first) as history: at most `limit`, so a
/// proxy that ignores `limit` cannot flood the model's context. A post of one of `webhooks` is
/// the bot's own.
fn history_page(
    messages: &Value,
    bot: Option<(u64, &str)>,
    webhooks: &[u64],
    limit: u8,
) -> Vec<HistoryMessage> {
    messages
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| history_message(m, bot, webhooks))
        .take(usize::from(limit))
        .collect()
}

/// One message in Discord's JSON as history.
fn history_message(
    m: &Value,
    bot: Option<(u64, &str)>,
    webhooks: &[u64],
) -> Option<HistoryMessage> {
    let id = snowflake(m.get("id")?)?;
    let author = m.pointer("/author/id").and_then(snowflake);
    let content = m.get("content").and_then(Value::as_str).unwrap_or_default();
    let by_webhook = m
        .get("webhook_id")
        .and_then(snowflake)
        .is_some_and(|w| webhooks.contains(&w));
    Some(HistoryMessage {
        id: MessageId(id),
        author: author_name(m),
        from_bot: by_webhook || (author.is_some() && author == bot.map(|(id, _)| id)),
        content: readable(content, bot, m),
        at_ms: m.get("timestamp").map_or(0, timestamp_ms),
        attachments: m
            .get("attachments")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(attachment)
            .take(ATTACHMENTS_PER_MESSAGE)
            .collect(),
    })
}

/// A history message's text with its mentions as `@name`: the bot's as the persona's name
/// (when known), each user its `mentions` name as theirs.
fn readable(content: &str, bot: Option<(u64, &str)>, m: &Value) -> String {
    let named: Vec<(u64, String)> = m
        .get("mentions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|user| Some((snowflake(user.get("id")?)?, author_name_of_user(user))))
        .collect();
    let bot = bot.filter(|(_, name)| !name.is_empty());
    crate::discord::mentions::readable(
        content,
        bot.into_iter()
            .chain(named.iter().map(|(id, name)| (*id, name.as_str()))),
    )
}

/// A mentioned user's name in Discord's JSON: their server nickname, display name or username.
fn author_name_of_user(user: &Value) -> String {
    let text = |pointer: &str| user.pointer(pointer).and_then(Value::as_str);
    text("/member/nick")
        .or_else(|| text("/global_name"))
        .or_else(|| text("/username"))
        .unwrap_or("someone")
        .to_owned()
}

/// One attachment object of Discord's JSON; one without a name or URL is left out.
fn attachment(a: &Value) -> Option<Attachment> {
    let text = |key: &str| a.get(key).and_then(Value::as_str).map(str::to_owned);
    Some(Attachment {
        filename: text("filename")?,
        url: text("url")?,
        size: a.get("size").and_then(Value::as_u64).unwrap_or(0),
        content_type: text("content_type"),
    })
}

#[async_trait]
impl StickerCatalog for DiscordSink {
    fn server_name(&self, server: ServerId) -> Option<String> {
        self.cache.name(server)
    }

    /// From the gateway's cache (GUILD_CREATE and sticker updates keep it current); asked of
    /// Discord only when the cache does not hold the server.
    async fn stickers(&self, server: ServerId) -> Result<Vec<Sticker>, PortError> {
        if let Some(cached) = self.cache.stickers(server) {
            return Ok(cached);
        }
        let stickers = self
            .rest
            .get(
                Route {
                    template: "GET /guilds/{}/stickers",
                    major: server.0,
                    local_per_5s: None,
                },
                &format!("/guilds/{}/stickers", server.0),
            )
            .await
            .map_err(|detail| PortError::Unavailable {
                what: "discord",
                detail,
            })?;
        Ok(stickers
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| s["available"].as_bool() != Some(false))
            .filter_map(|s| {
                Some(Sticker {
                    id: snowflake(&s["id"])?,
                    name: s["name"].as_str()?.to_owned(),
                })
            })
            .collect())
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::scope::UserId;

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

    // History feeds the prompt, so a page is cut at the limit asked for, whatever the server sent;
    // the bot's own messages are told apart.
    #[test]
    fn a_history_page_is_cut_at_the_limit() {
        let page: Vec<Value> = (0..300)
            .map(|n| {
                json!({
                    "id": (1000 - n).to_string(),
                    "author": { "id": if n % 2 == 0 { "7" } else { "8" }, "username": "u" },
                    "content": format!("m{n}"),
                })
            })
            .collect();
        let history = history_page(&Value::Array(page), Some((7, "Aria")), &[], 30);
        assert_eq!(history.len(), 30);
        assert_eq!(
            history[0].content, "m0",
            "newest first, as Discord sends it"
        );
        assert!(history[0].from_bot && !history[1].from_bot);
        assert!(history_page(&json!({"message": "no"}), None, &[], 30).is_empty());
    }

    // One mention form: a history page reads mentions as `@name`, the bot's as the persona's name,
    // as the gateway's messages do; its files come along.
    #[test]
    fn history_reads_mentions_as_names_and_keeps_files() {
        let page = json!([{
            "id": "5",
            "author": { "id": "8", "username": "bob" },
            "content": "<@7> ask <@!9>",
            "mentions": [
                { "id": "7", "username": "aria-bot" },
                { "id": "9", "username": "carol", "global_name": "Carol" },
            ],
            "attachments": [{ "id": "1", "filename": "a.png", "size": 3,
                "url": "https://cdn.discordapp.com/a.png", "proxy_url": "x" }],
        }]);
        let history = history_page(&page, Some((7, "Aria")), &[], 30);
        assert_eq!(history[0].content, "@Aria ask @Carol");
        assert_eq!(history[0].attachments[0].filename, "a.png");
    }
}
