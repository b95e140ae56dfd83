//! What every command shares: the invoker's language and permissions, the ephemeral reply, the
//! on/off choice, the Manage Server check, and the thought-log line a settings change leaves.

use poise::CreateReply;
use serenity::all::Permissions;

use crate::discord::data::{Context, Error};
use crate::domain::scope::{ServerId, UserId};
use crate::locale::{self, Locale};

/// The invoker's language.
pub(super) fn locale_of(ctx: Context<'_>) -> Locale {
    ctx.locale()
        .map(Locale::from_discord)
        .unwrap_or(ctx.data().default_locale)
}

/// The invoker's permissions in this channel, as Discord computed them (none in a DM).
pub(super) fn permissions(ctx: Context<'_>) -> Permissions {
    match ctx {
        poise::Context::Application(app) => app
            .interaction
            .member
            .as_ref()
            .and_then(|m| m.permissions)
            .unwrap_or_else(Permissions::empty),
        poise::Context::Prefix(_) => Permissions::empty(),
    }
}

pub(super) async fn reply(ctx: Context<'_>, text: String) -> Result<(), Error> {
    ctx.send(CreateReply::default().content(text).ephemeral(true))
        .await?;
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, poise::ChoiceParameter)]
pub enum State {
    #[name = "on"]
    On,
    #[name = "off"]
    Off,
}

/// Checks the guild and Manage Server; replies with the refusal when they fail.
pub(super) async fn managed_server(ctx: Context<'_>) -> Result<Option<ServerId>, Error> {
    let locale = locale_of(ctx);
    let Some(guild) = ctx.guild_id() else {
        reply(ctx, locale::text(locale, "command-server-only")).await?;
        return Ok(None);
    };
    if !permissions(ctx).contains(Permissions::MANAGE_GUILD) {
        reply(ctx, locale::text(locale, "command-needs-manage-server")).await?;
        return Ok(None);
    }
    Ok(Some(ServerId(guild.get())))
}

/// Tells the server's thought log who changed which setting.
pub(super) fn log_change(ctx: Context<'_>, server: ServerId, change: String) {
    let notice = crate::domain::thought_log::Notice::SettingsChanged {
        by: UserId(ctx.author().id.get()),
        change,
    };
    // Posted beside the answer, not before it: a modal's submit has 3 s to be answered.
    // A task of the app's tracker, so a stop waits for the line.
    let thought_log = ctx.data().thought_log.clone();
    ctx.data()
        .shutdown
        .spawn(async move { thought_log.post(server, notice).await });
}
