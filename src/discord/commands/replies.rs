//! `/replies style` (SPEC C4): how this server's replies are cut into messages. `paragraphs`: a
//! message a paragraph, as a person texting, short paragraphs together and only a few messages
//! beyond what the length needs; `compact`: as few messages as the length needs; `default`: the
//! deployment's `turn.reply_style` again. `/replies reactions` (SPEC E1): status reactions on
//! the message a turn answers, on or off. `/replies buttons` (SPEC E2): Stop, Again and
//! feedback buttons on replies, on (the default) or off.

use super::shared::{State, locale_of, log_change, managed_server, reply};
use crate::config::ReplyStyle;
use crate::discord::data::{Context, Error};
use crate::domain::ports::SettingsChange;
use crate::locale::{self, Locale};

/// A moderator's choice of reply style.
#[derive(Debug, Clone, Copy, PartialEq, Eq, poise::ChoiceParameter)]
pub enum StyleChoice {
    #[name = "paragraphs"]
    Paragraphs,
    #[name = "compact"]
    Compact,
    #[name = "default"]
    Default,
}

/// How replies are cut into messages on this server.
#[poise::command(
    slash_command,
    subcommands("style", "reactions", "buttons"),
    default_member_permissions = "MANAGE_GUILD"
)]
pub async fn replies(_ctx: Context<'_>) -> Result<(), Error> {
    // Discord only invokes the subcommands.
    Ok(())
}

/// Choose how replies are cut: paragraphs, compact, or the deployment's default.
#[poise::command(slash_command)]
pub async fn style(ctx: Context<'_>, style: StyleChoice) -> Result<(), Error> {
    let Some(server) = managed_server(ctx).await? else {
        return Ok(());
    };
    let chosen = match style {
        StyleChoice::Paragraphs => Some(ReplyStyle::Paragraphs),
        StyleChoice::Compact => Some(ReplyStyle::Compact),
        StyleChoice::Default => None,
    };
    let settings = ctx
        .data()
        .settings
        .update(server, SettingsChange::ReplyStyle(chosen))
        .await?;
    log_change(
        ctx,
        server,
        format!(
            "/replies style {}",
            chosen.map_or("default", ReplyStyle::as_str)
        ),
    );
    let locale = locale_of(ctx);
    let args = [(
        "style",
        style_text(locale, settings.reply_style, ctx.data().reply_style),
    )];
    reply(ctx, locale::text_with(locale, "replies-style-set", &args)).await
}

/// Status reactions: 👀 while a turn runs, ⚙️ while a tool runs, ❌ kept on a failed turn.
#[poise::command(slash_command)]
pub async fn reactions(ctx: Context<'_>, state: State) -> Result<(), Error> {
    let Some(server) = managed_server(ctx).await? else {
        return Ok(());
    };
    let on = state == State::On;
    ctx.data()
        .settings
        .update(server, SettingsChange::StatusReactions(on))
        .await?;
    let name = if on { "on" } else { "off" };
    log_change(ctx, server, format!("/replies reactions {name}"));
    let locale = locale_of(ctx);
    let key = if on {
        "replies-reactions-on"
    } else {
        "replies-reactions-off"
    };
    reply(ctx, locale::text(locale, key)).await
}

/// Buttons on replies: Stop while one streams, then Again, 👍 and 👎.
#[poise::command(slash_command)]
pub async fn buttons(ctx: Context<'_>, state: State) -> Result<(), Error> {
    let Some(server) = managed_server(ctx).await? else {
        return Ok(());
    };
    let on = state == State::On;
    ctx.data()
        .settings
        .update(server, SettingsChange::Buttons(on))
        .await?;
    let name = if on { "on" } else { "off" };
    log_change(ctx, server, format!("/replies buttons {name}"));
    let key = if on {
        "replies-buttons-on"
    } else {
        "replies-buttons-off"
    };
    reply(ctx, locale::text(locale_of(ctx), key)).await
}

/// The style in force, in words: the server's own, or the deployment's, said as such (for
/// `/replies style` and `/status`).
pub(super) fn style_text(
    locale: Locale,
    chosen: Option<ReplyStyle>,
    deployment: ReplyStyle,
) -> String {
    let name = |style: ReplyStyle| locale::text(locale, &format!("reply-style-{}", style.as_str()));
    match chosen {
        Some(style) => name(style),
        None => locale::text_with(
            locale,
            "reply-style-default",
            &[("style", name(deployment))],
        ),
    }
}
