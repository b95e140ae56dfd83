//! How a gateway message reads for the core: its author's name, its files, its text with
//! mentions as names (SPEC C12), the users it names, and whether it speaks to the bot (a
//! mention, or a reply to the bot or to the persona's post through the bot's own webhook,
//! SPEC C1).

use serenity::all::Message;

use crate::discord::data::BotData;
use crate::domain::ports::{MENTION_NAME_MAX, Mention, PINGS_MAX};
use crate::domain::scope::{ChannelId, ServerId, UserId};

pub(super) use crate::discord::data::attachments_of;

/// The name shown for the author of a gateway message (as `rest::history` names a message's author read over REST).
pub(super) fn name_of(message: &Message) -> String {
    message
        .member
        .as_ref()
        .and_then(|m| m.nick.clone())
        .or_else(|| message.author.global_name.clone())
        .unwrap_or_else(|| message.author.name.clone())
}

/// [`addressing`], where a reply to the persona's post through the bot's own webhook is a reply
/// to the bot too (SPEC C1).
pub(super) async fn addressing_of(
    data: &BotData,
    server: Option<ServerId>,
    message: &Message,
    bot: u64,
) -> Addressing {
    let mut addressing = addressing(message, bot);
    if let Some(replied) = message.referenced_message.as_deref()
        && !addressing.replies_to_bot
    {
        addressing.replies_to_bot = by_own_webhook(data, server, replied).await;
    }
    addressing
}

/// How a message speaks to the bot (SPEC C1).
pub(super) struct Addressing {
    /// It mentions the bot (in its mentions, or its text holds the mention).
    pub mentions_bot: bool,
    /// It replies to one of the bot's messages.
    pub replies_to_bot: bool,
}

pub(super) fn addressing(message: &Message, bot: u64) -> Addressing {
    Addressing {
        mentions_bot: message.mentions.iter().any(|u| u.id.get() == bot)
            || message.content.contains(&format!("<@{bot}>"))
            || message.content.contains(&format!("<@!{bot}>")),
        replies_to_bot: message
            .referenced_message
            .as_ref()
            .is_some_and(|r| r.author.id.get() == bot),
    }
}

/// Whether a message was posted through the bot's own webhook in its channel: the persona's
/// post. Discord is asked only where the bot may manage webhooks.
pub(super) async fn by_own_webhook(
    data: &BotData,
    server: Option<ServerId>,
    message: &Message,
) -> bool {
    let (Some(webhook), Some(server), Some(bot)) = (message.webhook_id, server, data.bot.get())
    else {
        return false;
    };
    let channel = message.channel_id.get();
    data.cache.bot_can_webhook(server, ChannelId(channel), bot)
        && data.webhooks.is_ours(channel, webhook.get()).await
}

/// A message's text as the model reads it, in history and as a trigger: the bot's mention as
/// the persona's name, each mentioned user's as theirs (SPEC C12: one form in a request).
pub(super) fn as_queued(
    data: &BotData,
    persona_name: &str,
    content: &str,
    mentions: &[serenity::all::User],
) -> String {
    let names: Vec<(u64, String)> = mentions
        .iter()
        .map(|u| (u.id.get(), shown_name(u)))
        .collect();
    let bot = data.bot.get().map(|id| (id, persona_name));
    crate::discord::mentions::readable(
        content,
        bot.into_iter()
            .chain(names.iter().map(|(id, name)| (*id, name.as_str()))),
    )
}

/// The name a mentioned user reads as (`@name`): their nickname here, else their display name,
/// else their username.
fn shown_name(user: &serenity::all::User) -> String {
    let nick = user.member.as_ref().and_then(|m| m.nick.clone());
    nick.or_else(|| user.global_name.clone())
        .unwrap_or_else(|| user.name.clone())
}

/// The users a message names, from Discord's `mentions` of it (not its text, which the model
/// reads as `@name`), under the names the model reads: those its text holds as `<@id>`, not the
/// bot, not the author (the asker, pinged as such), each once, at most Discord's 100.
pub(super) fn named_users(data: &BotData, message: &Message) -> Vec<Mention> {
    let mut named: Vec<Mention> = Vec::new();
    for user in &message.mentions {
        let id = user.id.get();
        let in_text = message.content.contains(&format!("<@{id}>"))
            || message.content.contains(&format!("<@!{id}>"));
        let other = data.bot.get() != Some(id) && id != message.author.id.get();
        if in_text && other && named.iter().all(|m| m.user.0 != id) {
            named.push(Mention {
                user: UserId(id),
                name: shown_name(user).chars().take(MENTION_NAME_MAX).collect(),
            });
        }
        if named.len() >= PINGS_MAX {
            break;
        }
    }
    named
}
