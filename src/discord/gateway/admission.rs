//! Admission of a gateway message: whether it starts a turn (SPEC C1: a trigger, the
//! requester speaking in their own turn, a random quiet turn; SPEC C2: the server's access
//! rules, the user's rate) and, if so, queueing it for the orchestrator as a
//! [`NewQueuedMessage`]. A refusal closes a message spoken to the bot (SPEC D12) and tells a user
//! past their rate, once; a server whose settings cannot be read is not answered, and who spoke
//! to the bot is told why. A message a catch-up found goes through the same door ([`Origin`]).

use serde_json::Value;
use serenity::all::Message;

use super::message::{Addressing, addressing_of, as_queued, attachments_of, name_of, named_users};
use crate::discord::data::BotData;
use crate::discord::rest::ratelimit::Route;
use crate::domain::admission::{MessageFacts, RateLimit, Refusal, addressed, admit, triggers};
use crate::domain::ports::{
    Clock, NewQueuedMessage, Persona, Pings, ServerSettings, SystemClock, close_unanswered,
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
        content_hidden: !data
            .message_content
            .load(std::sync::atomic::Ordering::Relaxed),
    };
    let persona = data.personas.of_server(&settings);
    // Without the text a follow-up or a random turn would answer an empty line (SPEC D14).
    let follow_up = origin == Origin::Gateway
        && !facts.content_hidden
        && speaks_in_own_turn(data, message, &facts, &settings).await;
    let (triggered, random) = match origin {
        Origin::Gateway => {
            let triggered = follow_up || triggers(&facts, &settings, &persona.trigger_words);
            (
                triggered,
                !triggered
                    && !facts.content_hidden
                    && rolls_random(data, &facts, &settings, server),
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

/// The question *Again* answers anew (SPEC E2), as a message admission would queue it, under
/// its server's persona; `None` when the server's settings cannot be read.
pub(super) async fn queued_again(data: &BotData, message: &Message) -> Option<NewQueuedMessage> {
    let server = message.guild_id.map(|g| ServerId(g.get()));
    let settings = settings_of(data, server).await?;
    let persona = data.personas.of_server(&settings);
    let content = as_queued(
        data,
        &persona.display_name,
        &message.content,
        &message.mentions,
    );
    Some(queued(data, message, server, persona, content, false))
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
            member_roles(data, server, message.author.id.get()).await
        }
        _ => Some(Vec::new()),
    }
}

/// The roles of a member (`GET /guilds/{id}/members/{user}`), or `None` when Discord does not
/// say (left the server, or the request failed).
pub async fn member_roles(data: &BotData, server: ServerId, user: u64) -> Option<Vec<u64>> {
    let route = Route {
        template: "GET /guilds/{}/members/{}",
        major: server.0,
        local_per_5s: None,
    };
    let path = format!("/guilds/{}/members/{user}", server.0);
    match data.rest.get(route, &path).await {
        Ok(member) => Some(
            member
                .get("roles")
                .and_then(Value::as_array)
                .map(|roles| {
                    roles
                        .iter()
                        .take(1000)
                        .filter_map(|r| r.as_str().and_then(|r| r.parse().ok()))
                        .collect()
                })
                .unwrap_or_default(),
        ),
        Err(error) => {
            tracing::warn!(%server, %error, "could not read a member's roles; their missed message is not answered");
            None
        }
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
