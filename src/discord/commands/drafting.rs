//! `/drafting` (SPEC C8, A2): Response Drafting on or off for a server, what its reviewer
//! checks, its prompt (in a modal) and its model. The model is one of the operator's
//! (`review.models`, then `provider.models`): offered by autocomplete, checked on the server, and
//! a name outside them is refused with nothing stored; the reviewer ignores a stored name that
//! is no longer configured.

use serenity::all::{AutocompleteChoice, CreateAutocompleteResponse};

use super::modal::conclude;
use super::shared::{State, locale_of, log_change, managed_server, reply};
use crate::discord::data::{Context, Error};
use crate::domain::ports::SettingsChange;
use crate::domain::review::ModelChoice;
use crate::domain::scope::ServerId;
use crate::domain::thought_log::cut;
use crate::locale;

/// Most choices Discord shows for an autocompleted option.
const CHOICES_MAX: usize = 25;
/// Longest choice name or value Discord takes, in characters.
const CHOICE_MAX_CHARS: usize = 100;
/// How much of the refused name the refusal quotes, in characters.
const ASKED_SHOWN: usize = 60;
/// How much of the list of allowed models the refusal shows, in characters.
const ALLOWED_SHOWN: usize = 1500;

/// `default` and the configured reviewer models whose names hold what was typed (any case),
/// within Discord's limits.
fn offered(models: &[String], partial: &str) -> Vec<String> {
    let partial = partial.trim().to_lowercase();
    std::iter::once("default")
        .chain(models.iter().map(String::as_str))
        .filter(|model| model.chars().count() <= CHOICE_MAX_CHARS)
        .filter(|model| model.to_lowercase().contains(&partial))
        .take(CHOICES_MAX)
        .map(str::to_owned)
        .collect()
}

/// The autocomplete of `/drafting model`: the configured models (a suggestion only; the
/// command checks what it is sent).
async fn configured_models(ctx: Context<'_>, partial: &str) -> CreateAutocompleteResponse {
    let choices = offered(&ctx.data().review_models, partial)
        .into_iter()
        .map(AutocompleteChoice::from)
        .collect();
    CreateAutocompleteResponse::new().set_choices(choices)
}

/// The refusal of a reviewer model that is not configured, naming the allowed ones (both
/// bounded: the name is the moderator's text, the list the operator's).
fn model_refused(ctx: Context<'_>, asked: &str) -> String {
    let mut allowed = ctx.data().review_models.join(", ");
    if allowed.is_empty() {
        allowed = "-".to_owned();
    }
    let asked: String = asked.trim().replace('`', "");
    let args = [
        ("model", cut(&asked, ASKED_SHOWN)),
        ("allowed", cut(&allowed, ALLOWED_SHOWN)),
    ];
    locale::text_with(locale_of(ctx), "drafting-model-refused", &args)
}

/// What Response Drafting reviews.
#[derive(Debug, Clone, Copy, PartialEq, Eq, poise::ChoiceParameter)]
pub enum Checks {
    #[name = "tools"]
    Tools,
    #[name = "replies"]
    Replies,
    #[name = "both"]
    Both,
}

/// What `/drafting prompt` does with the server's reviewer prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, poise::ChoiceParameter)]
pub enum PromptChoice {
    /// A modal shows the prompt to edit.
    #[name = "edit"]
    Edit,
    /// The configured prompt again.
    #[name = "default"]
    Default,
}

/// Turn Response Drafting on or off for this server; optionally what it checks, model and prompt
///
/// One change: the check, the reviewer's model and (in a modal) its prompt with it. The model is
/// one of the configured ones (offered as the moderator types); any other is refused and
/// nothing changes.
#[poise::command(slash_command, default_member_permissions = "MANAGE_GUILD")]
pub async fn drafting(
    ctx: Context<'_>,
    state: State,
    check: Option<Checks>,
    #[autocomplete = "configured_models"] model: Option<String>,
    prompt: Option<PromptChoice>,
) -> Result<(), Error> {
    let Some(server) = managed_server(ctx).await? else {
        return Ok(());
    };
    // "default" (or nothing but spaces) gives the configured reviewer models back.
    let model = match model
        .as_deref()
        .map(|asked| ModelChoice::read(asked, &ctx.data().review_models))
    {
        None => None,
        Some(ModelChoice::Configured) => Some(None),
        Some(ModelChoice::Model(model)) => Some(Some(model)),
        Some(ModelChoice::Unknown) => {
            let asked = model.unwrap_or_default();
            return reply(ctx, model_refused(ctx, &asked)).await;
        }
    };
    let (prompt, submitted) = match prompt {
        Some(PromptChoice::Edit) => match review_prompt_modal(ctx, server).await? {
            Some(submitted) => {
                let text = submitted.value(REVIEW_PROMPT_FIELD).to_owned();
                (Some(Some(text)), Some(submitted))
            }
            // Closed without a submit: nothing changes.
            None => return Ok(()),
        },
        Some(PromptChoice::Default) => (Some(None), None),
        None => (None, None),
    };
    let checks = check.map(|c| (c != Checks::Replies, c != Checks::Tools));
    let change = SettingsChange::Review {
        drafting: state == State::On,
        checks,
        model,
        prompt,
    };
    let outcome = match ctx.data().settings.update(server, change).await {
        Ok(settings) => Ok(drafting_changed(ctx, server, &settings)),
        Err(error) => Err(error.into()),
    };
    conclude(ctx, submitted, outcome).await
}

/// The reviewer-prompt modal's one field.
const REVIEW_PROMPT_FIELD: &str = "prompt";

/// Shows the server's reviewer prompt in a modal and waits for its submit.
async fn review_prompt_modal(
    ctx: Context<'_>,
    server: ServerId,
) -> Result<Option<super::modal::Submitted>, Error> {
    let locale = locale_of(ctx);
    let current = ctx.data().settings.settings(server).await?.review.prompt;
    let field = super::modal::Field {
        id: REVIEW_PROMPT_FIELD,
        label: locale::text(locale, "drafting-prompt-label"),
        paragraph: true,
        max: super::modal::TEXT_MAX,
        value: current.unwrap_or_default(),
        required: false,
    };
    let title = locale::text(locale, "drafting-prompt-title");
    super::modal::ask(ctx, &title, vec![field]).await
}

/// Logs a `/drafting` change to the thought log and says what is set now.
fn drafting_changed(
    ctx: Context<'_>,
    server: ServerId,
    settings: &crate::domain::ports::ServerSettings,
) -> String {
    let locale = locale_of(ctx);
    let key = if settings.drafting {
        "drafting-on"
    } else {
        "drafting-off"
    };
    let review = &settings.review;
    let checked = match (review.tool_calls, review.replies) {
        (true, false) => "tools",
        (false, true) => "replies",
        _ => "both",
    };
    let model = review.model.clone().unwrap_or_else(|| "-".to_owned());
    let own_prompt = if review.prompt.is_some() {
        "own"
    } else {
        "default"
    };
    let change = format!("/drafting {key} check:{checked} model:{model} prompt:{own_prompt}");
    log_change(ctx, server, change.replace("drafting-", ""));
    let prompt = locale::text(locale, &format!("drafting-prompt-{own_prompt}"));
    let details = [
        ("check", checked.to_owned()),
        ("model", model),
        ("prompt", prompt),
    ];
    format!(
        "{}\n{}",
        locale::text(locale, key),
        locale::text_with(locale, "drafting-details", &details)
    )
}

#[cfg(test)]
mod tests {
    use super::offered;

    // SPEC C8, A2: the autocomplete offers `default` and the configured models that hold what was
    // typed, at most Discord's 25, none longer than Discord takes.
    #[test]
    fn only_configured_models_are_offered() {
        let models: Vec<String> = ["review-model", "gpt-4o", "GPT-4o-mini"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        assert_eq!(
            offered(&models, ""),
            ["default", "review-model", "gpt-4o", "GPT-4o-mini"]
        );
        assert_eq!(offered(&models, " gpt"), ["gpt-4o", "GPT-4o-mini"]);
        assert!(offered(&models, "rogue").is_empty());
        let many: Vec<String> = (0..40)
            .map(|n| format!("m{n}"))
            .chain(["x".repeat(101)])
            .collect();
        let shown = offered(&many, "");
        assert_eq!(shown.len(), 25);
        assert!(shown.iter().all(|m| m.len() <= 100));
    }
}
