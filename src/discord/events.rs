//! Gateway events into the core: a message that triggers (SPEC C1) and is admitted (SPEC C2)
//! becomes a [`NewQueuedMessage`] for the orchestrator.

use serenity::all::{FullEvent, Message};

use super::BotData;
use crate::domain::admission::{MessageFacts, admit, triggers};
use crate::domain::ports::{
    Clock, HistoryMessage, NewQueuedMessage, Pings, ServerSettings, SystemClock,
};
use crate::domain::scope::{ChannelId, MessageId, ServerId, UserId, Visibility};

/// Handles one gateway event.
pub async fn handle(event: &FullEvent, data: &BotData) {
    match event {
        FullEvent::Ready { data_about_bot } => {
            data.bot.set(data_about_bot.user.id.get());
            // A new session: messages sent while disconnected were never delivered.
            data.recent.clear();
        }
        FullEvent::Message { new_message } => {
            remember(data, new_message);
            on_message(data, new_message).await;
        }
        FullEvent::MessageUpdate { event, .. } => {
            if let Some(content) = &event.content {
                data.recent
                    .edited(event.channel_id.get(), event.id.get(), content);
            }
        }
        FullEvent::MessageDelete {
            channel_id,
            deleted_message_id,
            ..
        } => data
            .recent
            .deleted(channel_id.get(), &[deleted_message_id.get()]),
        FullEvent::MessageDeleteBulk {
            channel_id,
            multiple_deleted_messages_ids,
            ..
        } => {
            let ids: Vec<u64> = multiple_deleted_messages_ids
                .iter()
                .map(|id| id.get())
                .collect();
            data.recent.deleted(channel_id.get(), &ids);
        }
        _ => {}
    }
}

/// Every delivered message (the bot's own and other bots' too) joins the channel's recent
/// history. Its time is the one its id carries (a snowflake holds its creation in ms).
fn remember(data: &BotData, message: &Message) {
    let id = message.id.get();
    data.recent.created(
        message.channel_id.get(),
        HistoryMessage {
            id: MessageId(id),
            author: name_of(message),
            from_bot: data.bot.get() == Some(message.author.id.get()),
            content: message.content.clone(),
            at_ms: i64::try_from((id >> 22) + DISCORD_EPOCH_MS).unwrap_or(i64::MAX),
        },
    );
}

/// Discord's epoch (2015-01-01) in unix milliseconds, the base of a snowflake's time.
const DISCORD_EPOCH_MS: u64 = 1_420_070_400_000;

/// The name shown for the author of a gateway message (as `sink::author_name` does for REST).
fn name_of(message: &Message) -> String {
    message
        .member
        .as_ref()
        .and_then(|m| m.nick.clone())
        .or_else(|| message.author.global_name.clone())
        .unwrap_or_else(|| message.author.name.clone())
}

async fn on_message(data: &BotData, message: &Message) {
    let Some(bot) = data.bot.get() else {
        return;
    };
    // Bots and webhooks never start a turn (SPEC C1); nothing more to read for them.
    let from_bot_or_webhook = message.author.bot || message.webhook_id.is_some();
    if from_bot_or_webhook {
        return;
    }
    let server = message.guild_id.map(|g| ServerId(g.get()));
    let channel = ChannelId(message.channel_id.get());
    let bot_mention = format!("<@{bot}>");
    let bot_nick_mention = format!("<@!{bot}>");
    let mentions_bot = message.mentions.iter().any(|u| u.id.get() == bot)
        || message.content.contains(&bot_mention)
        || message.content.contains(&bot_nick_mention);
    let replies_to_bot = message
        .referenced_message
        .as_ref()
        .is_some_and(|r| r.author.id.get() == bot);
    let Some(settings) = settings_of(data, server).await else {
        if mentions_bot || replies_to_bot {
            tell_settings_unavailable(data, message, server, channel).await;
        }
        return;
    };
    let roles: Vec<u64> = message
        .member
        .as_ref()
        .map(|m| m.roles.iter().map(|r| r.get()).collect())
        .unwrap_or_default();
    let facts = MessageFacts {
        content: &message.content,
        channel,
        parent_channel: server.and_then(|s| data.cache.parent(s, channel)),
        is_dm: server.is_none(),
        author: UserId(message.author.id.get()),
        from_bot_or_webhook,
        mentions_bot,
        replies_to_bot,
        author_roles: &roles,
        bot_can_send: server.is_none_or(|s| data.cache.bot_can_send(s, channel, bot)),
    };
    let triggered = triggers(&facts, &settings, &data.persona.trigger_words);
    // A random quiet turn: never for bots, webhooks, DMs or the thought-log channel.
    let random = !triggered
        && !facts.is_dm
        && !facts.from_bot_or_webhook
        && settings.thought_log_channel != Some(channel)
        && server.is_some_and(|s| {
            data.random.roll(
                s,
                &settings.random,
                rand::random_range(0..100),
                SystemClock.now_ms(),
            )
        });
    if !triggered && !random {
        return;
    }
    if let Err(refusal) = admit(&facts, &settings, &data.cooldowns) {
        tracing::debug!(%channel, ?refusal, "message not admitted");
        if let (true, Some(server)) = (random, server) {
            data.random.refund(server, SystemClock.now_ms());
        }
        return;
    }
    // The model reads the bot's mention as the persona's name.
    let at_name = format!("@{}", data.persona.display_name);
    let content = message
        .content
        .replace(&bot_mention, &at_name)
        .replace(&bot_nick_mention, &at_name);
    data.orchestrator
        .submit(queued(data, message, server, content, random))
        .await;
}

/// Without its access lists the server's rules are unknown: the message is not answered, but
/// someone who spoke to the bot is told why (at most once a minute per channel).
async fn tell_settings_unavailable(
    data: &BotData,
    message: &Message,
    server: Option<ServerId>,
    channel: ChannelId,
) {
    if !data.outage_notices.due(channel) {
        return;
    }
    let notice = crate::locale::text(locale_of(data, server), "settings-unavailable");
    let reply_to = Some(MessageId(message.id.get()));
    if let Err(error) = data
        .sink
        .send_text(channel, notice, reply_to, &Pings::none(), None)
        .await
    {
        tracing::warn!(%channel, %error, "could not post the settings-unavailable notice");
    }
}

/// The locale a message is answered in: its server's, else the configured default (a DM).
fn locale_of(data: &BotData, server: Option<ServerId>) -> crate::locale::Locale {
    server
        .and_then(|s| data.cache.locale(s))
        .unwrap_or(data.default_locale)
}

/// Channels told lately that the bot cannot read its settings: one notice a minute per channel.
#[derive(Debug, Default)]
pub struct OutageNotices {
    told: std::sync::Mutex<std::collections::HashMap<ChannelId, std::time::Instant>>,
}

/// How often one channel is told.
const OUTAGE_NOTICE_EVERY: std::time::Duration = std::time::Duration::from_secs(60);
/// Channels remembered; past it the memory starts over (a few channels told twice).
const OUTAGE_NOTICE_CHANNELS: usize = 1024;

impl OutageNotices {
    /// Whether `channel` is due a notice now (and, if so, counts it as told).
    pub fn due(&self, channel: ChannelId) -> bool {
        let mut told = self
            .told
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = std::time::Instant::now();
        if told
            .get(&channel)
            .is_some_and(|at| now.duration_since(*at) < OUTAGE_NOTICE_EVERY)
        {
            return false;
        }
        if told.len() >= OUTAGE_NOTICE_CHANNELS {
            told.clear();
        }
        told.insert(channel, now);
        true
    }
}

/// The settings a message is handled with: the defaults in a DM; `None` when a server's cannot
/// be read, since without its access lists a blocked channel could be answered (SPEC C2).
async fn settings_of(data: &BotData, server: Option<ServerId>) -> Option<ServerSettings> {
    let Some(server) = server else {
        return Some(ServerSettings::default());
    };
    match data.settings.settings(server).await {
        Ok(settings) => Some(settings),
        Err(error) => {
            tracing::warn!(%server, %error, "settings unavailable; message not handled");
            None
        }
    }
}

/// An admitted message as the orchestrator queues it.
fn queued(
    data: &BotData,
    message: &Message,
    server: Option<ServerId>,
    content: String,
    quiet: bool,
) -> NewQueuedMessage {
    let channel = ChannelId(message.channel_id.get());
    NewQueuedMessage {
        server,
        channel,
        message: MessageId(message.id.get()),
        author: UserId(message.author.id.get()),
        author_name: name_of(message),
        content,
        follow_up: false,
        enqueued_at_ms: SystemClock.now_ms(),
        persona: data.persona.id.clone(),
        visibility: match server {
            None => Visibility::Dm,
            Some(server) => data.cache.visibility(server, channel),
        },
        locale: locale_of(data, server),
        quiet,
    }
}
