//! Modals: a form Discord shows in answer to a command, for text too long or too many for
//! options (a persona's system prompt, the reviewer's prompt). The modal is the command's first
//! answer; the user's submit is a new interaction, answered here with an ephemeral message
//! ([`conclude`] answers a command whether or not it showed one).

use std::time::Duration;

use serenity::all::{
    ActionRowComponent, CreateActionRow, CreateInputText, CreateInteractionResponse,
    CreateInteractionResponseMessage, CreateModal, InputTextStyle, ModalInteraction,
    ModalInteractionCollector, Permissions,
};

use super::shared::{locale_of, reply};
use crate::discord::data::{Context, Error};
use crate::locale;

/// Discord's limits: a modal's title and a field's label, and a field's text.
const TITLE_MAX: usize = 45;
const LABEL_MAX: usize = 45;
pub const TEXT_MAX: u16 = 4000;
/// How long a shown modal waits for its submit: an interaction's token lives 15 minutes.
const SUBMIT_WAIT: Duration = Duration::from_secs(15 * 60);

/// One text field of a modal.
pub struct Field {
    pub id: &'static str,
    pub label: String,
    /// Several lines (a prompt) rather than one.
    pub paragraph: bool,
    /// Most characters it takes (at most [`TEXT_MAX`]).
    pub max: u16,
    /// What it shows at first (cut to `max`).
    pub value: String,
    pub required: bool,
}

/// A submitted modal: what was typed in each field, and the submit to answer.
pub struct Submitted {
    interaction: ModalInteraction,
    values: Vec<(String, String)>,
}

impl Submitted {
    /// What was typed in field `id` (empty when it was left empty or is unknown).
    pub fn value(&self, id: &str) -> &str {
        self.values
            .iter()
            .find(|(k, _)| k == id)
            .map_or("", |(_, v)| v.as_str())
    }

    /// The submit's interaction id.
    pub fn id(&self) -> u64 {
        self.interaction.id.get()
    }

    /// The submit's token: its answer is written with it.
    pub fn token(&self) -> &str {
        &self.interaction.token
    }

    /// Answers the submit with Discord's "thinking", to be edited later.
    pub async fn defer(&self, ctx: Context<'_>) -> Result<(), Error> {
        let thinking = CreateInteractionResponse::Defer(CreateInteractionResponseMessage::new());
        self.interaction
            .create_response(ctx.http(), thinking)
            .await?;
        Ok(())
    }

    /// Answers the submit with an ephemeral message.
    pub async fn answer(&self, ctx: Context<'_>, text: String) -> Result<(), Error> {
        let message = CreateInteractionResponseMessage::new()
            .content(text)
            .ephemeral(true);
        self.interaction
            .create_response(ctx.http(), CreateInteractionResponse::Message(message))
            .await?;
        Ok(())
    }
}
/// Answers the command, or the submit of the modal it showed: the command has had its answer
/// then, so an error is answered on the submit too (and logged once).
pub(super) async fn conclude(
    ctx: Context<'_>,
    submitted: Option<Submitted>,
    outcome: Result<String, Error>,
) -> Result<(), Error> {
    match (submitted, outcome) {
        (None, Ok(text)) => reply(ctx, text).await,
        (None, Err(error)) => Err(error),
        (Some(submitted), Ok(text)) => submitted.answer(ctx, text).await,
        (Some(submitted), Err(error)) => {
            tracing::error!(
                command = %ctx.command().qualified_name, %error,
                "command failed after its modal"
            );
            let text = locale::text(locale_of(ctx), "command-failed");
            submitted.answer(ctx, text).await
        }
    }
}

fn cut(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// Shows `fields` as a modal titled `title` in answer to the command, and waits for the
/// caller's submit. `None` when the command did not come as an interaction, the user closed
/// the modal (nothing arrives within the token's 15 minutes), or the submitter no longer has
/// Manage Server (every settings modal edits a server's settings, and the submit may come long
/// after the command's check; the refusal is its answer).
pub async fn ask(
    ctx: Context<'_>,
    title: &str,
    fields: Vec<Field>,
) -> Result<Option<Submitted>, Error> {
    let Some(submitted) = show(ctx, title, fields).await? else {
        return Ok(None);
    };
    // Discord sends the member's permissions as they are at the submit.
    let member = submitted.interaction.member.as_ref();
    if !member
        .and_then(|m| m.permissions)
        .is_some_and(|p| p.contains(Permissions::MANAGE_GUILD))
    {
        let locale = locale_of(ctx);
        let refusal = locale::text(locale, "command-needs-manage-server");
        submitted.answer(ctx, refusal).await?;
        return Ok(None);
    }
    Ok(Some(submitted))
}

/// Shows `fields` as a modal titled `title` in answer to the command, and waits for the
/// caller's submit; `None` when the command did not come as an interaction or the user closed
/// the modal (nothing arrives within the token's 15 minutes).
pub async fn show(
    ctx: Context<'_>,
    title: &str,
    fields: Vec<Field>,
) -> Result<Option<Submitted>, Error> {
    let poise::Context::Application(app) = ctx else {
        return Ok(None);
    };
    let custom_id = format!("modal-{}", app.interaction.id);
    let rows = fields
        .into_iter()
        .map(|f| {
            let max = f.max.min(TEXT_MAX);
            let style = if f.paragraph {
                InputTextStyle::Paragraph
            } else {
                InputTextStyle::Short
            };
            let mut input = CreateInputText::new(style, cut(&f.label, LABEL_MAX), f.id)
                .max_length(max)
                .required(f.required);
            if !f.value.is_empty() {
                input = input.value(cut(&f.value, usize::from(max)));
            }
            CreateActionRow::InputText(input)
        })
        .collect();
    // Listening starts before the form is shown, so a submit that comes at once (a busy bot
    // answers the command late) is not missed.
    let mut submits = ModalInteractionCollector::new(&ctx.serenity_context().shard)
        .author_id(app.interaction.user.id)
        .custom_ids(vec![custom_id.clone()])
        .timeout(SUBMIT_WAIT)
        .stream();
    let modal = CreateModal::new(custom_id, cut(title, TITLE_MAX)).components(rows);
    app.interaction
        .create_response(ctx.http(), CreateInteractionResponse::Modal(modal))
        .await?;
    // The command has its answer: an error from here on is not answered as its first one.
    app.has_sent_initial_response
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let submitted = futures::StreamExt::next(&mut submits).await;
    let Some(interaction) = submitted else {
        return Ok(None);
    };
    let values = values_of(&interaction);
    Ok(Some(Submitted {
        interaction,
        values,
    }))
}

/// What was typed in each text field of a submit.
fn values_of(interaction: &ModalInteraction) -> Vec<(String, String)> {
    interaction
        .data
        .components
        .iter()
        .flat_map(|row| row.components.iter())
        .filter_map(|c| match c {
            ActionRowComponent::InputText(input) => Some((
                input.custom_id.clone(),
                input.value.clone().unwrap_or_default(),
            )),
            _ => None,
        })
        .collect()
}
