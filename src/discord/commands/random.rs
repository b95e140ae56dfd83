//! `/random on|off`: random quiet turns for a server, a chance per message, bounded per hour.

use super::shared::{State, locale_of, managed_server, reply};
use crate::discord::data::{Context, Error};
use crate::domain::ports::SettingsChange;
use crate::locale;

/// Turn random quiet turns on or off for this server: a chance per message, bounded per hour.
#[poise::command(slash_command, default_member_permissions = "MANAGE_GUILD")]
pub async fn random(
    ctx: Context<'_>,
    state: State,
    #[min = 1]
    #[max = 100]
    percent: Option<u8>,
    #[min = 1]
    #[max = 60]
    per_hour: Option<u32>,
) -> Result<(), Error> {
    let Some(server) = managed_server(ctx).await? else {
        return Ok(());
    };
    // Discord enforces the bounds; a hand-made request is clamped to them.
    let change = SettingsChange::Random {
        enabled: state == State::On,
        percent,
        per_hour,
    };
    let settings = ctx.data().settings.update(server, change).await?;
    let random = &settings.random;
    let text = if random.enabled {
        locale::text_with(
            locale_of(ctx),
            "random-on",
            &[
                ("percent", random.percent.to_string()),
                ("per_hour", random.per_hour.to_string()),
            ],
        )
    } else {
        locale::text(locale_of(ctx), "random-off")
    };
    reply(ctx, text).await
}
