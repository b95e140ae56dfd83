//! The message menus (SPEC A5), a message's Apps menu: "Ask about this" (the message and its
//! files as context, the question typed in a modal, answered as `/ask` is), "Remember this" (a
//! fact from the message about its author: stored at once when it is the asker's own, else only
//! when its author allows it by button) and "Forget this" (the facts learned from that message:
//! one's own, or all of them for its author or a moderator). Each works where `/ask` does, the
//! bot a member there or not; where it is not, memory is the asker's own.

use poise::CreateReply;
use serenity::all::{
    ButtonStyle, CreateActionRow, CreateAllowedMentions, CreateButton, Message, Permissions,
};

use super::ask::{AnswerOn, Place, Question};
use super::modal::{self, Field};
use super::shared::{locale_of, permissions, reply};
use crate::discord::data::{BotData, CONSENT_PREFIX, Context, Error};
use crate::domain::ports::{Clock, NewFact, SystemClock};
use crate::domain::scope::{ChannelId, MessageId, UserId, Visibility};
use crate::locale::{self, Locale};

/// The menus' names as registered (English; each is localized from `menu-<key>-name`).
pub const MENUS: [(&str, &str); 3] = [
    ("Ask about this", "menu-ask-name"),
    ("Remember this", "menu-remember-name"),
    ("Forget this", "menu-forget-name"),
];

/// Longest question typed in "Ask about this".
const QUESTION_MAX: u16 = 1000;
/// Longest part of the message quoted to the model with the question.
const QUOTED_MAX: usize = 4000;

// Also for user install (SPEC A5): anywhere the user is, the bot a member there or not.
/// Ask the persona about this message.
#[poise::command(
    context_menu_command = "Ask about this",
    install_context = "Guild|User",
    interaction_context = "Guild|BotDm|PrivateChannel"
)]
pub async fn ask_about(ctx: Context<'_>, message: Message) -> Result<(), Error> {
    let poise::Context::Application(app) = ctx else {
        return Ok(());
    };
    let locale = locale_of(ctx);
    let field = Field {
        id: "question",
        label: locale::text(locale, "menu-ask-question"),
        paragraph: true,
        max: QUESTION_MAX,
        value: String::new(),
        required: true,
    };
    let title = locale::text(locale, "menu-ask-title");
    let Some(submitted) = modal::show(ctx, &title, vec![field]).await? else {
        return Ok(());
    };
    // The submit is a new interaction: deferred within its own 3 s, and answered in it.
    submitted.defer(ctx).await?;
    let on = AnswerOn::new(
        app.interaction.application_id.get(),
        submitted.id(),
        submitted.token(),
    );
    let question = Question {
        text: about(submitted.value("question"), &message),
        attachments: crate::discord::data::attachments_of(&message),
        private: false,
    };
    super::ask::answer(ctx.data(), app.interaction, &on, locale, question).await
}

/// The question with the message it is about, as the model reads it.
fn about(question: &str, message: &Message) -> String {
    let quoted: String = message.content.chars().take(QUOTED_MAX).collect();
    let author = author_name(message);
    format!("{question}\n\n(About this message by {author}: «{quoted}»)")
}

fn author_name(message: &Message) -> String {
    message
        .author
        .global_name
        .clone()
        .unwrap_or_else(|| message.author.name.clone())
}

// Also for user install (SPEC A5): anywhere the user is, the bot a member there or not.
/// Remember what this message says about its author.
#[poise::command(
    context_menu_command = "Remember this",
    install_context = "Guild|User",
    interaction_context = "Guild|BotDm|PrivateChannel"
)]
pub async fn remember_this(ctx: Context<'_>, message: Message) -> Result<(), Error> {
    let poise::Context::Application(app) = ctx else {
        return Ok(());
    };
    let locale = locale_of(ctx);
    let max = ctx.data().fact_max_chars;
    let text: String = message.content.trim().chars().take(max).collect();
    if message.author.bot || text.is_empty() {
        return reply(ctx, locale::text(locale, "menu-remember-nothing")).await;
    }
    let place = Place::of(app.interaction);
    let fact = fact_of(ctx.data(), place, &message, text);
    let asker = ctx.author().id.get();
    if message.author.id.get() == asker {
        let key = ctx.data().remember(fact).await;
        return reply(ctx, locale::text(locale, key)).await;
    }
    ask_consent(ctx, &message, fact, locale).await
}

/// The fact a message gives about its author: in its server (the asker's own memory where the
/// bot is not a member), kept to the channel where not everyone may read it, learned from it.
fn fact_of(data: &BotData, place: Place, message: &Message, text: String) -> NewFact {
    let channel = ChannelId(message.channel_id.get());
    let (server, private) = match place {
        Place::Server(server) => (
            Some(server),
            data.cache.visibility(server, channel) != Visibility::Public,
        ),
        Place::BotDm | Place::Elsewhere => (None, true),
    };
    let settings_default = crate::domain::ports::ServerSettings::default();
    let persona = data.personas.of_server(&settings_default).id.clone();
    NewFact {
        server,
        persona,
        about: Some(UserId(message.author.id.get())),
        text,
        at_ms: SystemClock.now_ms(),
        private_to: private.then_some(channel),
        source: Some(MessageId(message.id.get())),
    }
}

/// Someone else's message: its author is asked, by name and by button, in the channel (the
/// interaction's answer); the fact waits for their answer (see [`crate::discord::data::Consents`]).
async fn ask_consent(
    ctx: Context<'_>,
    message: &Message,
    fact: NewFact,
    locale: Locale,
) -> Result<(), Error> {
    let author = message.author.id;
    let request = ctx.id();
    let text = locale::text_with(
        locale,
        "menu-remember-consent",
        &[
            ("author", format!("<@{author}>")),
            ("asker", ctx.author().name.clone()),
            ("fact", fact.text.clone()),
        ],
    );
    ctx.data().consents.ask(request, fact);
    let buttons = CreateActionRow::Buttons(vec![
        CreateButton::new(format!("{CONSENT_PREFIX}yes:{request}"))
            .label(locale::text(locale, "menu-consent-allow"))
            .style(ButtonStyle::Success),
        CreateButton::new(format!("{CONSENT_PREFIX}no:{request}"))
            .label(locale::text(locale, "menu-consent-decline"))
            .style(ButtonStyle::Secondary),
    ]);
    let reply = CreateReply::default()
        .content(text)
        .components(vec![buttons])
        .allowed_mentions(CreateAllowedMentions::new().users([author]));
    ctx.send(reply).await?;
    Ok(())
}

// Also for user install (SPEC A5): anywhere the user is, the bot a member there or not.
/// Forget what was learned from this message.
#[poise::command(
    context_menu_command = "Forget this",
    install_context = "Guild|User",
    interaction_context = "Guild|BotDm|PrivateChannel"
)]
pub async fn forget_this(ctx: Context<'_>, message: Message) -> Result<(), Error> {
    let poise::Context::Application(app) = ctx else {
        return Ok(());
    };
    let locale = locale_of(ctx);
    let server = match Place::of(app.interaction) {
        Place::Server(server) => Some(server),
        Place::BotDm | Place::Elsewhere => None,
    };
    let asker = ctx.author().id;
    // Its author, or a moderator of the server, forgets all of it; anyone else their own.
    let all = message.author.id == asker
        || (server.is_some() && permissions(ctx).contains(Permissions::MANAGE_MESSAGES));
    let forgotten = ctx
        .data()
        .memory
        .forget_learned_from(
            server,
            MessageId(message.id.get()),
            UserId(asker.get()),
            all,
        )
        .await?;
    let text = locale::text_with(locale, "menu-forgot", &[("count", forgotten.to_string())]);
    reply(ctx, text).await
}
