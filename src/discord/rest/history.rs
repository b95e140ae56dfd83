//! Channel history on Discord (the `ChannelHistory` port): from the messages the gateway
//! delivered when they cover the request ([`crate::discord::recent`]), else a REST page,
//! with mentions read as names (SPEC C12), the persona's webhook posts as the bot's own, and the
//! files each message carries.

use async_trait::async_trait;
use serde_json::Value;

use super::delivery::DiscordSink;
use super::ratelimit::Route;
use crate::discord::ids::snowflake;
use crate::domain::ports::{
    ATTACHMENTS_PER_MESSAGE, Attachment, ChannelHistory, HistoryMessage, PortError,
};
use crate::domain::scope::{ChannelId, MessageId};

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
