//! Catch-up on Discord (SPEC D9). The gateway replays what a session missed only when it
//! resumes; after a start, or a new session that could not resume, this reads it back. Each
//! guild's channels come with the id of their newest message (GUILD_CREATE), DMs with the last
//! message the bot saw in them; [`crate::domain::catch_up::plan`] picks the channels active in
//! the window, each is read once (its newest `catch_up.max_messages`), and the messages
//! addressed to the bot that neither the channel's history shows answered
//! ([`crate::domain::answered`]) nor the database knows as finished go through the usual
//! admission, oldest first. The queue keeps one entry a message and a finished turn is not run
//! again, so a message already answered is never answered twice, whatever the database knows
//! (SPEC D12). A guild's first catch-up of a session reads after the marks the session began
//! with; another one (the guild came back from an outage) after what this process saw since.
//! One thought-log notice per guild says what was found.

use std::sync::Arc;

use serde_json::Value;
use serenity::all::{ChannelType, Guild, GuildId, Message};

use super::admission::{Origin, on_message};
use super::message::{Addressing, addressing_of, by_own_webhook};
use crate::discord::data::BotData;
use crate::discord::rest::ratelimit::Route;
use crate::domain::catch_up::{Candidate, Found, Read, Seen, pick, plan, snowflake_at};
use crate::domain::ports::{Clock, SystemClock, is_closed};
use crate::domain::scope::{ChannelId, MessageId, ServerId, UserId};
use crate::domain::thought_log::Notice;

/// What one catch-up did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Tally {
    channels: u32,
    found: u32,
    answered: u32,
}

/// The channels of a guild a catch-up may read: its text channels (and their kinds that hold
/// messages) and active threads, with their newest message.
pub fn candidates(guild: &Guild) -> (ServerId, Vec<Candidate>) {
    let channels = guild
        .channels
        .values()
        .filter(|c| {
            matches!(
                c.kind,
                ChannelType::Text | ChannelType::News | ChannelType::Voice | ChannelType::Stage
            )
        })
        .map(|c| (c.id, c.last_message_id));
    let threads = guild.threads.iter().map(|t| (t.id, t.last_message_id));
    // A channel Discord sends without its last message is read when the bot saw it active
    // inside the window (as a DM is).
    let candidates = channels
        .chain(threads)
        .map(|(id, last)| Candidate {
            channel: ChannelId(id.get()),
            last_message: last.map(|m| MessageId(m.get())),
        })
        .collect();
    (ServerId(guild.id.get()), candidates)
}

/// Catches up one guild of a new session.
pub async fn guild(data: Arc<BotData>, (server, mut candidates): (ServerId, Vec<Candidate>)) {
    // The thought log holds the bot's own notices: nothing there is addressed to it.
    if let Ok(settings) = data.settings.settings(server).await
        && let Some(thoughts) = settings.thought_log_channel
    {
        candidates.retain(|c| c.channel != thoughts);
    }
    let first = data.seen.first_catch_up(server);
    let tally = run(&data, Some(server), &candidates, |channel| {
        data.seen.catch_up_from(first, channel)
    })
    .await;
    if tally.found > 0 {
        tracing::info!(%server, channels = tally.channels, found = tally.found, answered = tally.answered, "caught up on messages sent while the bot was away");
        data.thought_log
            .post(
                server,
                Notice::CaughtUp {
                    channels: tally.channels,
                    found: tally.found,
                    answered: tally.answered,
                },
            )
            .await;
    }
}

/// Catches up the DMs the bot saw lately (Discord does not list a bot's DM channels).
pub async fn direct_messages(data: Arc<BotData>) {
    let since = snowflake_at(SystemClock.now_ms().saturating_sub(data.catch_up.window_ms));
    let candidates: Vec<Candidate> = data
        .seen
        .direct_messages_since(since)
        .into_iter()
        .map(|channel| Candidate {
            channel,
            last_message: None,
        })
        .collect();
    let tally = run(&data, None, &candidates, |channel| {
        data.seen.at_session_start(channel)
    })
    .await;
    if tally.found > 0 {
        tracing::info!(
            channels = tally.channels,
            found = tally.found,
            answered = tally.answered,
            "caught up on DMs sent while the bot was away"
        );
    }
}

/// Reads the channels worth reading among `candidates`, each after the message `from` names.
async fn run(
    data: &BotData,
    server: Option<ServerId>,
    candidates: &[Candidate],
    from: impl Fn(ChannelId) -> Option<MessageId>,
) -> Tally {
    let reads = plan(candidates, from, SystemClock.now_ms(), data.catch_up);
    let mut tally = Tally::default();
    for read in reads {
        if let Some(server) = server
            && data
                .bot
                .get()
                .is_some_and(|bot| !data.cache.bot_can_catch_up(server, read.channel, bot))
        {
            continue;
        }
        match read_channel(data, server, read).await {
            Ok((found, answered)) => {
                tally.channels += 1;
                tally.found += found;
                tally.answered += answered;
            }
            Err(error) => {
                tracing::warn!(channel = %read.channel, %error, "could not read a channel to catch up; messages sent there while the bot was away are not answered");
            }
        }
    }
    tally
}

/// Reads one channel's newest messages and handles those addressed to the bot after
/// `read.after` that it has not answered. Returns how many were found and how many queued.
async fn read_channel(
    data: &BotData,
    server: Option<ServerId>,
    read: Read,
) -> Result<(u32, u32), String> {
    let route = Route {
        template: "GET /channels/{}/messages",
        major: read.channel.0,
        local_per_5s: None,
    };
    let path = format!(
        "/channels/{}/messages?limit={}",
        read.channel.0,
        data.catch_up.messages.clamp(1, 100)
    );
    let page = data.rest.get(route, &path).await?;
    let messages = parse_page(&page, server);
    let Some(bot) = data.bot.get() else {
        return Ok((0, 0));
    };
    let mut found = Vec::with_capacity(messages.len());
    for message in &messages {
        found.push(found_in(data, server, message, bot).await);
    }
    let picked = unclosed(data, read.channel, pick(&found, read.after)).await;
    let mut answered = 0;
    for id in &picked {
        let Some(message) = messages.iter().find(|m| m.id.get() == id.0) else {
            continue;
        };
        if on_message(data, message, Origin::CatchUp).await {
            answered += 1;
        }
    }
    // What was read is seen: the next catch-up starts after it.
    if let Some(newest) = messages.iter().max_by_key(|m| m.id) {
        data.seen.saw(Seen {
            channel: read.channel,
            server,
            message: MessageId(newest.id.get()),
        });
    }
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    Ok((count(picked.len()), answered))
}

/// The messages of a history page that parse (a malformed one is skipped), with the guild they
/// are in (Discord's REST messages leave it out). Bounded by the page (at most 100).
fn parse_page(page: &Value, server: Option<ServerId>) -> Vec<Message> {
    let Some(items) = page.as_array() else {
        return Vec::new();
    };
    items
        .iter()
        .take(100)
        .filter_map(
            |item| match serde_json::from_value::<Message>(item.clone()) {
                Ok(mut message) => {
                    message.guild_id = server.map(|s| GuildId::new(s.0.max(1)));
                    Some(message)
                }
                Err(error) => {
                    tracing::debug!(%error, "a history message did not parse; skipped");
                    None
                }
            },
        )
        .collect()
}

/// The picked messages the database does not know as finished (answered, or deliberately left
/// unanswered: SPEC D12). One that cannot be looked up is kept: the queue and the turn's own
/// finished record still stand between it and a second answer.
async fn unclosed(data: &BotData, channel: ChannelId, picked: Vec<MessageId>) -> Vec<MessageId> {
    let mut open = Vec::with_capacity(picked.len());
    for message in picked {
        match is_closed(data.outcomes.as_ref(), channel, message).await {
            Ok(true) => tracing::debug!(%channel, %message, "caught-up message already finished"),
            Ok(false) => open.push(message),
            Err(error) => {
                tracing::warn!(%channel, %error, "could not tell whether a missed message was finished");
                open.push(message);
            }
        }
    }
    open
}

/// A history message as [`pick`] sees it: the bot's posts are its user's and its own
/// webhooks' (the server's persona); a reply to either is addressed to it.
async fn found_in(data: &BotData, server: Option<ServerId>, message: &Message, bot: u64) -> Found {
    let by_bot = message.author.id.get() == bot || by_own_webhook(data, server, message).await;
    let person = !message.author.bot && message.webhook_id.is_none();
    let Addressing {
        mentions_bot,
        replies_to_bot,
    } = addressing_of(data, server, message, bot).await;
    Found {
        id: MessageId(message.id.get()),
        author: UserId(message.author.id.get()),
        by_bot,
        reply_to: message
            .message_reference
            .as_ref()
            .and_then(|r| r.message_id)
            .map(|m| MessageId(m.get())),
        addressed: person && (message.guild_id.is_none() || mentions_bot || replies_to_bot),
    }
}
