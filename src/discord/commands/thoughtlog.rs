//! `/thoughtlog set|off|summaries` (SPEC T11): the hidden channel where moderators see what the
//! bot did, and which finished turns post a summary there (`problems`, the default, only turns that
//! did not end cleanly; `all`; `off`).

use serenity::all::ChannelId as SerenityChannelId;

use super::shared::{locale_of, log_change, managed_server, reply};
use crate::discord::data::{Context, Error};
use crate::domain::ports::{SettingsChange, SummaryMode};
use crate::domain::scope::ChannelId;
use crate::locale::{self, Locale};

/// Choose the hidden channel where moderators see what the bot did.
#[poise::command(
    slash_command,
    subcommands("set", "off", "summaries"),
    default_member_permissions = "MANAGE_GUILD"
)]
pub async fn thoughtlog(_ctx: Context<'_>) -> Result<(), Error> {
    // Discord only invokes the subcommands.
    Ok(())
}

/// Use a channel as the thought log.
#[poise::command(slash_command)]
pub async fn set(ctx: Context<'_>, channel: SerenityChannelId) -> Result<(), Error> {
    let Some(server) = managed_server(ctx).await? else {
        return Ok(());
    };
    let locale = locale_of(ctx);
    let target = ChannelId(channel.get());
    let mention = format!("<#{}>", target.0);
    // Refused when @everyone can view it (or the bot cannot tell), said once, to the setter.
    if ctx.data().cache.everyone_can_view(server, target) != Some(false) {
        return reply(
            ctx,
            locale::text_with(locale, "thoughtlog-public", &[("channel", mention)]),
        )
        .await;
    }
    ctx.data()
        .settings
        .update(server, SettingsChange::ThoughtLog(Some(target)))
        .await?;
    reply(
        ctx,
        locale::text_with(locale, "thoughtlog-set", &[("channel", mention)]),
    )
    .await
}

/// Stop posting to the thought log.
#[poise::command(slash_command)]
pub async fn off(ctx: Context<'_>) -> Result<(), Error> {
    let Some(server) = managed_server(ctx).await? else {
        return Ok(());
    };
    ctx.data()
        .settings
        .update(server, SettingsChange::ThoughtLog(None))
        .await?;
    reply(ctx, locale::text(locale_of(ctx), "thoughtlog-off")).await
}

/// Which finished turns post a summary to the thought log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, poise::ChoiceParameter)]
pub enum SummaryChoice {
    #[name = "off"]
    Off,
    #[name = "problems"]
    Problems,
    #[name = "all"]
    All,
}

/// Which turns post a summary here: `problems` (the default) only those that did not end cleanly.
#[poise::command(slash_command)]
pub async fn summaries(ctx: Context<'_>, mode: SummaryChoice) -> Result<(), Error> {
    let Some(server) = managed_server(ctx).await? else {
        return Ok(());
    };
    let mode = match mode {
        SummaryChoice::Off => SummaryMode::Off,
        SummaryChoice::Problems => SummaryMode::Problems,
        SummaryChoice::All => SummaryMode::All,
    };
    ctx.data()
        .settings
        .update(server, SettingsChange::Summaries(mode))
        .await?;
    log_change(
        ctx,
        server,
        format!("/thoughtlog summaries {}", mode.as_str()),
    );
    let args = [("mode", summaries_text(locale_of(ctx), mode))];
    reply(
        ctx,
        locale::text_with(locale_of(ctx), "thoughtlog-summaries", &args),
    )
    .await
}

/// Which turns the thought log summarizes, in words (for `/thoughtlog summaries` and `/status`).
pub(super) fn summaries_text(locale: Locale, mode: SummaryMode) -> String {
    locale::text(locale, &format!("summaries-{}", mode.as_str()))
}
