//! Gateway events into the core: each message joins the channel's recent history
//! ([`crate::discord::recent`]) and goes to admission ([`super::admission`]); edits and deletes are
//! followed in the history and (but for a bulk delete) by the orchestrator. A new gateway session
//! clears what the history held and starts a catch-up of what was missed (SPEC D9,
//! [`super::catch_up`]), as a task of the app's tracker.

use std::sync::Arc;

use serenity::all::{FullEvent, Http, Interaction, Message};

use super::admission::{Origin, on_message};
use super::message::{as_queued, attachments_of, by_own_webhook, name_of};
use crate::discord::data::BotData;
use crate::domain::catch_up::Seen;
use crate::domain::ports::HistoryMessage;
use crate::domain::scope::{ChannelId, MessageId, ServerId};

/// Handles one gateway event.
pub async fn handle(event: &FullEvent, data: &Arc<BotData>, http: &Http) {
    match event {
        FullEvent::InteractionCreate {
            interaction: Interaction::Component(press),
        } => super::presses::on_press(data, http, press).await,
        FullEvent::Ready { data_about_bot } => {
            data.bot.set(data_about_bot.user.id.get());
            // A new session: messages sent while disconnected were never delivered.
            data.recent.clear();
            data.seen.begin_session();
            // Discord sends every DM to shard 0.
            if data_about_bot.shard.is_none_or(|s| s.id.0 == 0) {
                spawn_catch_up(data, super::catch_up::direct_messages(data.clone()));
            }
        }
        // A guild of a new session (not one just joined): read what the gap missed in it.
        FullEvent::GuildCreate { guild, is_new } if *is_new != Some(true) => {
            let candidates = super::catch_up::candidates(guild);
            spawn_catch_up(data, super::catch_up::guild(data.clone(), candidates));
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

/// Runs a catch-up as a task of the app's tracker: a stop waits for it, and ends it where it is
/// rather than let it read on and queue more.
fn spawn_catch_up(data: &BotData, run: impl Future<Output = ()> + Send + 'static) {
    let stop = data.shutdown.token().clone();
    data.shutdown.spawn(async move {
        tokio::select! {
            () = stop.cancelled() => {}
            () = run => {}
        }
    });
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
        data.personas.name_in(server).await
    } else {
        String::new()
    };
    as_queued(data, &name, content, mentions)
}
