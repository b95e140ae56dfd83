//! `/ask` (SPEC A5): a question to the persona wherever the person is, in a server that added
//! the bot, in a DM with it, and through a user's own install in a server or a private channel
//! the bot is not in. It is a turn like a mention, with the same admission, tools, review and
//! `/kill`, answered in the interaction: deferred at once (Discord's 3 s), then written there
//! as it streams (see `rest::answers`), privately when asked. Where the bot is not a member no
//! channel history is read, nothing is posted in the channel, the server's settings do not
//! exist (the defaults apply) and memory is the asker's own.

use std::sync::Arc;

use serenity::all::{AuthorizingIntegrationOwner, CommandInteraction, InteractionContext};

use super::shared::locale_of;
use crate::discord::data::{BotData, Context, Error};
use crate::discord::rest::answers::{InteractionAnswer, InteractionSink, expires_of};
use crate::discord::rest::client::InteractionToken;
use crate::domain::admission::{MessageFacts, Refusal, admit};
use crate::domain::ports::{Attachment, NewQueuedMessage, ServerSettings};
use crate::domain::scope::{ChannelId, MessageId, ServerId, UserId, Visibility};
use crate::engine::orchestrator::Route;
use crate::locale::{self, Locale};

// Also for user install (SPEC A5): anywhere the user is, the bot a member there or not.
/// Ask the persona something; it answers here.
#[poise::command(
    slash_command,
    install_context = "Guild|User",
    interaction_context = "Guild|BotDm|PrivateChannel"
)]
pub async fn ask(
    ctx: Context<'_>,
    #[max_length = 2000] text: String,
    private: Option<bool>,
) -> Result<(), Error> {
    let poise::Context::Application(app) = ctx else {
        return Ok(());
    };
    let private = private.unwrap_or(false);
    // Within Discord's 3 s, before anything that can wait.
    if private {
        ctx.defer_ephemeral().await?;
    } else {
        ctx.defer().await?;
    }
    let question = Question {
        text,
        attachments: Vec::new(),
        private,
    };
    let on = AnswerOn::command(app.interaction);
    answer(ctx.data(), app.interaction, &on, locale_of(ctx), question).await
}

/// The interaction whose answer is written: the command's, or a modal's submit it showed.
pub struct AnswerOn {
    pub id: u64,
    pub token: InteractionToken,
}

impl AnswerOn {
    pub fn command(interaction: &CommandInteraction) -> Self {
        Self::new(
            interaction.application_id.get(),
            interaction.id.get(),
            &interaction.token,
        )
    }

    pub fn new(application: u64, id: u64, token: &str) -> Self {
        Self {
            id,
            token: InteractionToken {
                application,
                interaction: id,
                token: token.to_owned().into(),
            },
        }
    }
}

/// What is asked: its text (the question, with any message it is about), its files, and
/// whether only the asker sees the answer.
pub struct Question {
    pub text: String,
    pub attachments: Vec<Attachment>,
    pub private: bool,
}

/// Where an interaction came from, as the answer needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A server that added the bot (through its install).
    Server(ServerId),
    /// The bot's own DM with the user.
    BotDm,
    /// A server the bot is not in, or a private channel between users: the user's own install.
    Elsewhere,
}

impl Place {
    pub fn of(interaction: &CommandInteraction) -> Self {
        let server_install = interaction
            .authorizing_integration_owners
            .0
            .iter()
            .any(|owner| matches!(owner, AuthorizingIntegrationOwner::GuildInstall(Some(_))));
        match (interaction.guild_id, interaction.context) {
            (Some(guild), _) if server_install => Self::Server(ServerId(guild.get())),
            (None, Some(InteractionContext::BotDm)) => Self::BotDm,
            // An older payload without a context: a DM without a server is the bot's own.
            (None, None) => Self::BotDm,
            _ => Self::Elsewhere,
        }
    }
}

/// Answers `question`, asked through `interaction`, in `on` (already deferred), as a turn of
/// its channel's: refused with a reason where the server's rules close the channel or the
/// asker's role, or past their rate; else queued, answered in the interaction.
pub async fn answer(
    data: &Arc<BotData>,
    interaction: &CommandInteraction,
    on: &AnswerOn,
    locale: Locale,
    question: Question,
) -> Result<(), Error> {
    let place = Place::of(interaction);
    let settings = match place {
        Place::Server(server) => match data.settings.settings(server).await {
            Ok(settings) => settings,
            Err(error) => {
                tracing::warn!(%server, %error, "settings unavailable; /ask not answered");
                return say(data, on, locale, "settings-unavailable").await;
            }
        },
        Place::BotDm | Place::Elsewhere => ServerSettings::default(),
    };
    if let Err(refusal) = admitted(data, interaction, place, &settings, &question.text) {
        tracing::debug!(?refusal, "/ask not admitted");
        let key = match refusal {
            Refusal::Flooding { .. } => "rate-limited",
            _ => "ask-refused",
        };
        return say(data, on, locale, key).await;
    }
    let route = route_of(data, interaction, on, place, locale, question.private);
    let entry = entry_of(data, interaction, on, place, &settings, locale, question);
    if !data.orchestrator.ask(entry, route) {
        return say(data, on, locale, "ask-stopping").await;
    }
    Ok(())
}

/// The server's rules and the asker's rate, as a message spoken to the bot meets them (SPEC
/// C2); where the bot is not a member only the rate applies.
fn admitted(
    data: &BotData,
    interaction: &CommandInteraction,
    place: Place,
    settings: &ServerSettings,
    text: &str,
) -> Result<(), Refusal> {
    let channel = ChannelId(interaction.channel_id.get());
    let server = match place {
        Place::Server(server) => Some(server),
        Place::BotDm | Place::Elsewhere => None,
    };
    let roles: Vec<u64> = interaction
        .member
        .as_ref()
        .map(|m| m.roles.iter().map(|r| r.get()).collect())
        .unwrap_or_default();
    let facts = MessageFacts {
        content: text,
        channel,
        parent_channel: server.and_then(|s| data.cache.parent(s, channel)),
        is_dm: server.is_none(),
        author: UserId(interaction.user.id.get()),
        from_bot_or_webhook: false,
        mentions_bot: true,
        replies_to_bot: false,
        author_roles: &roles,
        // The answer is the interaction's: the bot need not post in the channel.
        bot_can_send: true,
        content_hidden: false,
    };
    admit(&facts, settings, &data.rate)
}

/// The question as its channel's line holds it: under the id of the interaction it is answered
/// in, by the asker, as the persona of the server (or the deployment's default where the bot is
/// not a member).
fn entry_of(
    data: &BotData,
    interaction: &CommandInteraction,
    on: &AnswerOn,
    place: Place,
    settings: &ServerSettings,
    locale: Locale,
    question: Question,
) -> NewQueuedMessage {
    let channel = ChannelId(interaction.channel_id.get());
    let (server, visibility) = match place {
        Place::Server(server) => (Some(server), data.cache.visibility(server, channel)),
        Place::BotDm => (None, Visibility::Dm),
        // Not everyone there may read what is learned: it stays with the asker, there.
        Place::Elsewhere => (None, Visibility::Private),
    };
    let user = &interaction.user;
    let author_name = interaction
        .member
        .as_ref()
        .and_then(|m| m.nick.clone())
        .or_else(|| user.global_name.clone())
        .unwrap_or_else(|| user.name.clone());
    NewQueuedMessage {
        server,
        channel,
        message: MessageId(on.id),
        author: UserId(user.id.get()),
        author_name,
        content: question.text,
        follow_up: false,
        enqueued_at_ms: crate::domain::ports::Clock::now_ms(&crate::domain::ports::SystemClock),
        persona: data.personas.of_server(settings).id.clone(),
        visibility,
        locale,
        quiet: false,
        attachments: question.attachments,
        mentions: Vec::new(),
    }
}

/// Where the answer goes: the interaction, continuing in the channel past the token's life
/// only when it is public and the bot may post there.
fn route_of(
    data: &BotData,
    interaction: &CommandInteraction,
    on: &AnswerOn,
    place: Place,
    locale: Locale,
    private: bool,
) -> Route {
    let channel = ChannelId(interaction.channel_id.get());
    let may_post = match place {
        Place::Server(server) => data
            .bot
            .get()
            .is_some_and(|bot| data.cache.bot_can_send(server, channel, bot)),
        Place::BotDm => true,
        Place::Elsewhere => false,
    };
    let answer = InteractionAnswer {
        rest: data.rest.clone(),
        token: on.token.clone(),
        ephemeral: private,
        locale,
        expires: expires_of(on.id),
        channel: (may_post && !private).then(|| data.sink.clone()),
        bot: data.sink.clone(),
    };
    let deadline = answer.deadline();
    Route {
        sink: Arc::new(InteractionSink::new(answer)),
        no_history: place == Place::Elsewhere,
        deadline,
    }
}

/// Puts `key`'s text in the deferred answer.
async fn say(data: &BotData, on: &AnswerOn, locale: Locale, key: &str) -> Result<(), Error> {
    let body = serde_json::json!({
        "content": locale::text(locale, key),
        "allowed_mentions": { "parse": [] },
    });
    data.rest
        .interaction_message(
            reqwest::Method::PATCH,
            &on.token,
            Some("@original"),
            Some(&body),
        )
        .await
        .map_err(|error| anyhow::anyhow!("{error}"))?;
    Ok(())
}
