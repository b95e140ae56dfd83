//! Gateway events into the core: a message that triggers (SPEC C1) and is admitted (SPEC C2)
//! becomes a [`NewQueuedMessage`] for the orchestrator. A new gateway session starts a catch-up
//! of what was missed (SPEC D9, [`super::catch_up`]).

use std::sync::Arc;

use serenity::all::{FullEvent, Message};

use crate::discord::BotData;
use crate::domain::admission::{MessageFacts, RateLimit, Refusal, addressed, admit, triggers};
use crate::domain::catch_up::Seen;
use crate::domain::ports::{
    ATTACHMENTS_PER_MESSAGE, Attachment, Clock, HistoryMessage, MENTION_NAME_MAX, Mention,
    NewQueuedMessage, PINGS_MAX, Persona, Pings, ServerSettings, SystemClock, close_unanswered,
};
use crate::domain::scope::{ChannelId, MessageId, ServerId, UserId, Visibility};

/// Where a message comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The gateway, as it was sent.
    Gateway,
    /// A catch-up, reading what a gap in the session missed: only messages addressed to the
    /// bot start turns, none at random, and the user cooldown (meant for a burst) is not applied
    /// to what piled up while the bot was away.
    CatchUp,
}

/// Handles one gateway event.
pub async fn handle(event: &FullEvent, data: &Arc<BotData>) {
    match event {
        FullEvent::Ready { data_about_bot } => {
            data.bot.set(data_about_bot.user.id.get());
            // A new session: messages sent while disconnected were never delivered.
            data.recent.clear();
            data.seen.begin_session();
            // Discord sends every DM to shard 0.
            if data_about_bot.shard.is_none_or(|s| s.id.0 == 0) {
                tokio::spawn(super::catch_up::direct_messages(data.clone()));
            }
        }
        // A guild of a new session (not one just joined): read what the gap missed in it.
        FullEvent::GuildCreate { guild, is_new } if *is_new != Some(true) => {
            tokio::spawn(super::catch_up::guild(
                data.clone(),
                super::catch_up::candidates(guild),
            ));
        }
        FullEvent::Message { new_message } => {
            remember(data, new_message).await;
            on_message(data, new_message, Origin::Gateway).await;
        }
        FullEvent::MessageUpdate { event, .. } => {
            if let Some(content) = &event.content {
                let server = event.guild_id.map(|g| ServerId(g.get()));
                let mentions = event.mentions.as_deref().unwrap_or_default();
                let content = as_remembered(data, server, content, mentions).await;
                data.recent
                    .edited(event.channel_id.get(), event.id.get(), &content);
                data.orchestrator.edited(
                    ChannelId(event.channel_id.get()),
                    MessageId(event.id.get()),
                    content,
                );
            }
        }
        FullEvent::MessageDelete {
            channel_id,
            deleted_message_id,
            ..
        } => {
            data.recent
                .deleted(channel_id.get(), &[deleted_message_id.get()]);
            data.orchestrator.deleted(
                ChannelId(channel_id.get()),
                MessageId(deleted_message_id.get()),
            );
        }
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
async fn remember(data: &BotData, message: &Message) {
    let id = message.id.get();
    let server = message.guild_id.map(|g| ServerId(g.get()));
    data.seen.saw(Seen {
        channel: ChannelId(message.channel_id.get()),
        server,
        message: MessageId(id),
    });
    let content = as_remembered(data, server, &message.content, &message.mentions).await;
    data.recent.created(
        message.channel_id.get(),
        HistoryMessage {
            id: MessageId(id),
            author: name_of(message),
            from_bot: data.bot.get() == Some(message.author.id.get())
                || by_own_webhook(data, server, message).await,
            content,
            at_ms: crate::domain::catch_up::snowflake_ms(id),
            attachments: attachments_of(message),
        },
    );
}

/// A message's files as the core describes them (at most Discord's ten).
fn attachments_of(message: &Message) -> Vec<Attachment> {
    message
        .attachments
        .iter()
        .take(ATTACHMENTS_PER_MESSAGE)
        .map(|a| Attachment {
            filename: a.filename.clone(),
            url: a.url.clone(),
            size: u64::from(a.size),
            content_type: a.content_type.clone(),
        })
        .collect()
}

/// The name shown for the author of a gateway message (as `sink::author_name` does for REST).
fn name_of(message: &Message) -> String {
    message
        .member
        .as_ref()
        .and_then(|m| m.nick.clone())
        .or_else(|| message.author.global_name.clone())
        .unwrap_or_else(|| message.author.name.clone())
}

/// Handles a message: queues it for a turn when it triggers and is admitted. Returns whether it
/// was queued.
pub(super) async fn on_message(data: &BotData, message: &Message, origin: Origin) -> bool {
    let Some(bot) = data.bot.get() else {
        return false;
    };
    // Bots and webhooks never start a turn (SPEC C1); nothing more to read for them.
    let from_bot_or_webhook = message.author.bot || message.webhook_id.is_some();
    if from_bot_or_webhook {
        return false;
    }
    let server = message.guild_id.map(|g| ServerId(g.get()));
    let channel = ChannelId(message.channel_id.get());
    let Addressing {
        mentions_bot,
        replies_to_bot,
    } = addressing_of(data, server, message, bot).await;
    let Some(settings) = settings_of(data, server).await else {
        if mentions_bot || replies_to_bot {
            tell_settings_unavailable(data, message, server, channel).await;
        }
        return false;
    };
    let Some(roles) = author_roles(data, message, server, &settings, origin).await else {
        return false;
    };
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
    let persona = Persona::of_server(&settings, &data.persona);
    let follow_up =
        origin == Origin::Gateway && speaks_in_own_turn(data, message, &facts, &settings).await;
    let (triggered, random) = match origin {
        Origin::Gateway => {
            let triggered = follow_up || triggers(&facts, &settings, &persona.trigger_words);
            (
                triggered,
                !triggered && rolls_random(data, &facts, &settings, server),
            )
        }
        Origin::CatchUp => (addressed(&facts, &settings), false),
    };
    if !triggered && !random {
        return false;
    }
    // Follow-ups and what a catch-up found do not count against the user's rate.
    let unlimited = RateLimit::unlimited();
    let rate = if follow_up || origin == Origin::CatchUp {
        &unlimited
    } else {
        &data.rate
    };
    if let Err(refusal) = admit(&facts, &settings, rate) {
        tracing::debug!(%channel, ?refusal, ?origin, "message not admitted");
        refused(data, message, refusal, triggered, random).await;
        return false;
    }
    submit(data, message, persona, origin, random).await;
    true
}

/// A message admission refused: a random roll's budget back, the rate's notice once, and a
/// message spoken to the bot closed, so no catch-up revives it (SPEC C2, D12).
async fn refused(
    data: &BotData,
    message: &Message,
    refusal: Refusal,
    triggered: bool,
    random: bool,
) {
    let server = message.guild_id.map(|g| ServerId(g.get()));
    let channel = ChannelId(message.channel_id.get());
    if let (true, Some(server)) = (random, server) {
        data.random.refund(server, SystemClock.now_ms());
    }
    if refusal == (Refusal::Flooding { tell: true }) {
        tell_rate_limited(data, message, server, channel).await;
    }
    if triggered {
        let id = MessageId(message.id.get());
        let now = SystemClock.now_ms();
        close_unanswered(data.outcomes.as_ref(), channel, id, now).await;
    }
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

/// Queues an admitted message: one the gateway brought as it came, one a catch-up found late.
async fn submit(
    data: &BotData,
    message: &Message,
    persona: &Persona,
    origin: Origin,
    random: bool,
) {
    let server = message.guild_id.map(|g| ServerId(g.get()));
    let content = as_queued(
        data,
        &persona.display_name,
        &message.content,
        &message.mentions,
    );
    let entry = queued(data, message, server, persona, content, random);
    match origin {
        Origin::Gateway => data.orchestrator.submit(entry).await,
        Origin::CatchUp => data.orchestrator.submit_late(entry).await,
    }
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

/// SPEC C7: the requester of a running or waiting turn speaks in it, mention or not (a reply to
/// someone else is a conversation of its own).
async fn speaks_in_own_turn(
    data: &BotData,
    message: &Message,
    facts: &MessageFacts<'_>,
    settings: &ServerSettings,
) -> bool {
    let replies_to_other = message.referenced_message.is_some() && !facts.replies_to_bot;
    !replies_to_other
        && settings.thought_log_channel != Some(facts.channel)
        && data
            .orchestrator
            .has_turn_of(facts.channel, facts.author)
            .await
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

/// [`as_queued`] for recent history, with the bot's mention as the persona's name in `server`:
/// the settings are read for that name only when the text mentions the bot (most messages do
/// not, and are read once, by admission).
async fn as_remembered(
    data: &BotData,
    server: Option<ServerId>,
    content: &str,
    mentions: &[serenity::all::User],
) -> String {
    let mentions_bot = data.bot.get().is_some_and(|bot| {
        content.contains(&format!("<@{bot}>")) || content.contains(&format!("<@!{bot}>"))
    });
    let name = if mentions_bot {
        data.persona_name(server).await
    } else {
        String::new()
    };
    as_queued(data, &name, content, mentions)
}

/// A message's text as the model reads it, in history and as a trigger: the bot's mention as
/// the persona's name, each mentioned user's as theirs (SPEC C12: one form in a request).
fn as_queued(
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
fn named_users(data: &BotData, message: &Message) -> Vec<Mention> {
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

/// A random quiet turn: never for bots, webhooks, DMs or the thought-log channel.
fn rolls_random(
    data: &BotData,
    facts: &MessageFacts<'_>,
    settings: &ServerSettings,
    server: Option<ServerId>,
) -> bool {
    !facts.is_dm
        && !facts.from_bot_or_webhook
        && settings.thought_log_channel != Some(facts.channel)
        && server.is_some_and(|s| {
            data.random.roll(
                s,
                &settings.random,
                rand::random_range(0..100),
                SystemClock.now_ms(),
            )
        })
}

/// The author's roles, for the server's role rules. A gateway message carries its member; one
/// read back from history (a catch-up) does not, so the member is asked for when the server
/// has role rules. `None` when they are needed and Discord does not say: the message is left
/// (a blocked role must not slip through).
async fn author_roles(
    data: &BotData,
    message: &Message,
    server: Option<ServerId>,
    settings: &ServerSettings,
    origin: Origin,
) -> Option<Vec<u64>> {
    if let Some(member) = &message.member {
        return Some(member.roles.iter().map(|r| r.get()).collect());
    }
    let access = &settings.access;
    let needed = !access.allowed_roles.is_empty() || !access.blocked_roles.is_empty();
    match (server, origin) {
        (Some(server), Origin::CatchUp) if needed => {
            super::catch_up::member_roles(data, server, message.author.id.get()).await
        }
        _ => Some(Vec::new()),
    }
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

/// A user past their rate limit is told, once per window, as a reply (SPEC C2: never silent).
async fn tell_rate_limited(
    data: &BotData,
    message: &Message,
    server: Option<ServerId>,
    channel: ChannelId,
) {
    let notice = crate::locale::text(locale_of(data, server), "rate-limited");
    let reply_to = Some(MessageId(message.id.get()));
    if let Err(error) = data
        .sink
        .send_text(channel, notice, reply_to, &Pings::none(), None)
        .await
    {
        tracing::warn!(%channel, %error, "could not tell a user they are past their rate limit");
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
    persona: &Persona,
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
        persona: persona.id.clone(),
        visibility: match server {
            None => Visibility::Dm,
            Some(server) => data.cache.visibility(server, channel),
        },
        locale: locale_of(data, server),
        quiet,
        attachments: attachments_of(message),
        mentions: named_users(data, message),
    }
}
