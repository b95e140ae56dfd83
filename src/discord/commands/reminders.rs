//! `/reminders list|cancel`: the reminders a user set or that are for them, and cancelling one
//! (its creator, its target, or in a server anyone with Manage Server).

use serenity::all::Permissions;

use super::shared::{locale_of, permissions, reply};
use crate::discord::data::{Context, Error};
use crate::domain::scope::UserId;
use crate::locale;

/// List or cancel your reminders.
#[poise::command(slash_command, subcommands("list", "cancel"))]
pub async fn reminders(_ctx: Context<'_>) -> Result<(), Error> {
    // Discord only invokes the subcommands.
    Ok(())
}

/// The reminders you set or that are for you.
#[poise::command(slash_command)]
pub async fn list(ctx: Context<'_>) -> Result<(), Error> {
    let locale = locale_of(ctx);
    let user = UserId(ctx.author().id.get());
    let reminders = ctx.data().reminders.for_user(user).await?;
    if reminders.is_empty() {
        return reply(ctx, locale::text(locale, "reminders-none")).await;
    }
    let mut lines = vec![locale::text(locale, "reminders-title")];
    for r in reminders.iter().take(25) {
        let tz: chrono_tz::Tz = r.reminder.time_zone.parse().unwrap_or(chrono_tz::Tz::UTC);
        let when = chrono::TimeZone::timestamp_millis_opt(&tz, r.reminder.due_at_ms)
            .single()
            .map(|t| t.format("%Y-%m-%d %H:%M").to_string())
            .unwrap_or_default();
        lines.push(locale::text_with(
            locale,
            "reminders-line",
            &[
                ("id", r.id.to_string()),
                ("when", when),
                ("zone", tz.name().to_owned()),
                ("repeat", r.reminder.repeat.as_str().to_owned()),
                (
                    "text",
                    crate::domain::thought_log::cut(&r.reminder.text, 80),
                ),
            ],
        ));
    }
    reply(ctx, lines.join("\n")).await
}

/// Cancel one of your reminders.
#[poise::command(slash_command)]
pub async fn cancel(ctx: Context<'_>, id: i64) -> Result<(), Error> {
    let locale = locale_of(ctx);
    let user = UserId(ctx.author().id.get());
    // Its creator or its target may cancel it, and in a server anyone with Manage Server.
    let managed = ctx
        .guild_id()
        .filter(|_| permissions(ctx).contains(Permissions::MANAGE_GUILD))
        .map(|g| crate::domain::scope::ServerId(g.get()));
    let key = if ctx.data().reminders.cancel(id, user, managed).await? {
        "reminders-cancelled"
    } else {
        "reminders-not-yours"
    };
    reply(
        ctx,
        locale::text_with(locale, key, &[("id", id.to_string())]),
    )
    .await
}
