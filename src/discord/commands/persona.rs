//! `/persona list|use|show|edit` (SPEC A1): a server speaks as its own copy of one of the
//! deployment's personas (the templates from configuration) and edits it in a modal; an edit
//! never changes another server's persona or the template.

use super::modal::conclude;
use super::modal::{Field, Submitted};
use super::shared::{locale_of, log_change, managed_server, reply};
use crate::discord::data::{Context, Error};
use crate::domain::ports::{
    AVATAR_URL_MAX_CHARS, NAME_MAX_CHARS, PROMPT_MAX_CHARS, Persona, PersonaProblem,
    SettingsChange, parse_trigger_words,
};
use crate::domain::scope::{ChannelId, ServerId};
use crate::domain::thought_log::cut;
use crate::locale::{self, Locale};

/// Most templates one `/persona list` answer names.
const LISTED: usize = 25;
/// How much of the system prompt `/persona show` quotes.
const PROMPT_SHOWN: usize = 1200;

/// This server's persona: choose one, see it, edit it.
#[poise::command(
    slash_command,
    subcommands("persona_list", "persona_use", "persona_show", "persona_edit"),
    default_member_permissions = "MANAGE_GUILD"
)]
pub async fn persona(_ctx: Context<'_>) -> Result<(), Error> {
    // Discord only invokes the subcommands.
    Ok(())
}

/// The persona the server speaks as now: its own copy, else the deployment's default.
async fn current(ctx: Context<'_>, server: ServerId) -> Result<(Persona, bool), Error> {
    let settings = ctx.data().settings.settings(server).await?;
    let persona = ctx.data().personas.of_server(&settings).clone();
    Ok((persona, settings.persona.is_some()))
}

/// The deployment's personas, which a server copies.
async fn templates(ctx: Context<'_>) -> Result<Vec<Persona>, Error> {
    let mut templates = ctx.data().personas.stored().await?;
    if templates.is_empty() {
        templates.push(ctx.data().personas.default_persona().clone());
    }
    Ok(templates)
}

/// The personas this server may speak as.
#[poise::command(slash_command, rename = "list")]
pub async fn persona_list(ctx: Context<'_>) -> Result<(), Error> {
    let Some(server) = managed_server(ctx).await? else {
        return Ok(());
    };
    let locale = locale_of(ctx);
    let (here, _) = current(ctx, server).await?;
    let mut lines = vec![locale::text(locale, "persona-list-title")];
    for template in templates(ctx).await?.iter().take(LISTED) {
        let key = if template.id == here.id {
            "persona-list-line-here"
        } else {
            "persona-list-line"
        };
        let args = [
            ("id", template.id.0.clone()),
            ("name", template.display_name.clone()),
        ];
        lines.push(locale::text_with(locale, key, &args));
    }
    reply(ctx, lines.join("\n")).await
}

/// Speak as one of the deployment's personas here (a fresh copy of it).
#[poise::command(slash_command, rename = "use")]
pub async fn persona_use(ctx: Context<'_>, name: String) -> Result<(), Error> {
    let Some(server) = managed_server(ctx).await? else {
        return Ok(());
    };
    let locale = locale_of(ctx);
    let templates = templates(ctx).await?;
    let wanted = name.trim().to_lowercase();
    let found = templates
        .iter()
        .find(|t| t.id.0.to_lowercase() == wanted)
        .or_else(|| {
            templates
                .iter()
                .find(|t| t.display_name.to_lowercase() == wanted)
        });
    let Some(template) = found.cloned() else {
        let ids: Vec<String> = templates
            .iter()
            .take(LISTED)
            .map(|t| t.id.0.clone())
            .collect();
        let args = [("name", cut(&name, 50)), ("ids", ids.join(", "))];
        return reply(ctx, locale::text_with(locale, "persona-unknown", &args)).await;
    };
    // A template Discord would refuse as a webhook's name is refused here, as an edit is.
    if let Some(problem) = template.problem() {
        return reply(ctx, problem_text(locale, problem)).await;
    }
    let change = SettingsChange::Persona(Some(template.clone()));
    ctx.data().settings.update(server, change).await?;
    log_change(ctx, server, format!("/persona use {}", template.id.0));
    let args = [("name", template.display_name), ("id", template.id.0)];
    reply(ctx, locale::text_with(locale, "persona-used", &args)).await
}

/// Why a persona is refused, in the invoker's language.
fn problem_text(locale: Locale, problem: PersonaProblem) -> String {
    let key = match problem {
        PersonaProblem::NoName => "persona-problem-no-name",
        PersonaProblem::NoPrompt => "persona-problem-no-prompt",
        PersonaProblem::ReservedName => "persona-problem-reserved-name",
        PersonaProblem::AvatarNotHttps => "persona-problem-avatar",
    };
    locale::text(locale, key)
}

/// Whether the bot may post as the persona (a webhook) in `channel`.
fn speaks_by_webhook(ctx: Context<'_>, server: ServerId, channel: ChannelId) -> bool {
    ctx.data()
        .bot
        .get()
        .is_some_and(|bot| ctx.data().cache.bot_can_webhook(server, channel, bot))
}

/// The persona this server speaks as, and how it posts in this channel.
#[poise::command(slash_command, rename = "show")]
pub async fn persona_show(ctx: Context<'_>) -> Result<(), Error> {
    let Some(server) = managed_server(ctx).await? else {
        return Ok(());
    };
    let locale = locale_of(ctx);
    let (persona, own) = current(ctx, server).await?;
    let channel = ChannelId(ctx.channel_id().get());
    let voice = if speaks_by_webhook(ctx, server, channel) {
        "persona-voice-webhook"
    } else {
        "persona-voice-bot"
    };
    let none = || "-".to_owned();
    let words = if persona.trigger_words.is_empty() {
        none()
    } else {
        persona.trigger_words.join(", ")
    };
    let origin = if own {
        "persona-origin-own"
    } else {
        "persona-origin-default"
    };
    let args = [
        ("name", persona.display_name.clone()),
        ("id", persona.id.0.clone()),
        ("origin", locale::text(locale, origin)),
        ("words", words),
        ("avatar", persona.avatar_url.clone().unwrap_or_else(none)),
        ("voice", locale::text(locale, voice)),
    ];
    let quoted: Vec<String> = cut(&persona.system_prompt, PROMPT_SHOWN)
        .lines()
        .map(|line| format!("> {line}"))
        .collect();
    let text = format!(
        "{}\n{}",
        locale::text_with(locale, "persona-show", &args),
        quoted.join("\n")
    );
    reply(ctx, text.chars().take(1900).collect()).await
}

/// The edit modal's fields, shown with the persona as it is.
fn edit_fields(locale: Locale, persona: &Persona) -> Vec<Field> {
    let bound = |max: usize| u16::try_from(max).unwrap_or(super::modal::TEXT_MAX);
    vec![
        Field {
            id: "name",
            label: locale::text(locale, "persona-field-name"),
            paragraph: false,
            max: bound(NAME_MAX_CHARS),
            value: persona.display_name.clone(),
            required: true,
        },
        Field {
            id: "prompt",
            label: locale::text(locale, "persona-field-prompt"),
            paragraph: true,
            max: bound(PROMPT_MAX_CHARS),
            value: persona.system_prompt.clone(),
            required: true,
        },
        Field {
            id: "words",
            label: locale::text(locale, "persona-field-words"),
            paragraph: false,
            max: 1000,
            value: persona.trigger_words.join(", "),
            required: false,
        },
        Field {
            id: "avatar",
            label: locale::text(locale, "persona-field-avatar"),
            paragraph: false,
            max: bound(AVATAR_URL_MAX_CHARS),
            value: persona.avatar_url.clone().unwrap_or_default(),
            required: false,
        },
    ]
}

/// The persona as the modal's submit has it (its id stays the one it was copied from).
fn edited(before: &Persona, submitted: &Submitted) -> Persona {
    let avatar = submitted.value("avatar").trim();
    Persona {
        id: before.id.clone(),
        display_name: submitted.value("name").to_owned(),
        system_prompt: submitted.value("prompt").to_owned(),
        trigger_words: parse_trigger_words(submitted.value("words")),
        avatar_url: (!avatar.is_empty()).then(|| avatar.to_owned()),
    }
    .bounded()
}

/// Edit this server's persona in a form: name, system prompt, trigger words, avatar.
#[poise::command(slash_command, rename = "edit")]
pub async fn persona_edit(ctx: Context<'_>) -> Result<(), Error> {
    let Some(server) = managed_server(ctx).await? else {
        return Ok(());
    };
    let locale = locale_of(ctx);
    let (before, _) = current(ctx, server).await?;
    let title = locale::text(locale, "persona-edit-title");
    let fields = edit_fields(locale, &before);
    let Some(submitted) = super::modal::ask(ctx, &title, fields).await? else {
        return Ok(());
    };
    let persona = edited(&before, &submitted);
    if let Some(problem) = persona.problem() {
        return submitted.answer(ctx, problem_text(locale, problem)).await;
    }
    let name = persona.display_name.clone();
    let change = SettingsChange::Persona(Some(persona));
    let outcome = match ctx.data().settings.update(server, change).await {
        Ok(_) => {
            log_change(ctx, server, format!("/persona edit name:{name}"));
            Ok(locale::text_with(
                locale,
                "persona-saved",
                &[("name", name)],
            ))
        }
        Err(error) => Err(error.into()),
    };
    conclude(ctx, Some(submitted), outcome).await
}
