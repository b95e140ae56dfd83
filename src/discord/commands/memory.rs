//! `/memory show|server|forget` and `/forget-me`: what the persona remembers about a user (or,
//! for moderators, a member or the server), and forgetting it.

use serenity::all::Permissions;

use super::shared::{locale_of, managed_server, permissions, reply};
use crate::discord::data::{Context, Error};
use crate::domain::scope::{ServerId, UserId};
use crate::locale::{self, Locale};

/// What the bot remembers about you (or, for moderators, about the server), and forgetting it.
#[poise::command(
    slash_command,
    subcommands("memory_show", "memory_server", "memory_forget")
)]
pub async fn memory(_ctx: Context<'_>) -> Result<(), Error> {
    // Discord only invokes the subcommands.
    Ok(())
}

/// Most facts one `/memory` answer lists (the newest), within a message's length.
const FACTS_LISTED: u32 = 20;

/// A list of facts, or the line saying there are none.
fn fact_list(locale: Locale, facts: &[crate::domain::ports::Fact]) -> String {
    if facts.is_empty() {
        return locale::text(locale, "memory-none");
    }
    let mut lines = vec![locale::text(locale, "memory-title")];
    lines.extend(facts.iter().map(|f| {
        locale::text_with(
            locale,
            "memory-line",
            &[
                ("id", f.id.to_string()),
                ("text", crate::domain::thought_log::cut(&f.text, 90)),
            ],
        )
    }));
    lines.join("\n")
}

/// What the persona remembers about you here (in a DM: in DMs); moderators: about a member.
#[poise::command(slash_command, rename = "show")]
pub async fn memory_show(
    ctx: Context<'_>,
    member: Option<serenity::all::UserId>,
) -> Result<(), Error> {
    let caller = UserId(ctx.author().id.get());
    let server = ctx.guild_id().map(|g| ServerId(g.get()));
    let user = member.map_or(caller, |m| UserId(m.get()));
    // Another member's facts are for the server's moderators only.
    if user != caller && managed_server(ctx).await?.is_none() {
        return Ok(());
    }
    let facts = ctx
        .data()
        .memory
        .list_facts(server, Some(user), user == caller, FACTS_LISTED)
        .await?;
    reply(ctx, fact_list(locale_of(ctx), &facts)).await
}

/// What the persona remembers about this server (Manage Server).
#[poise::command(
    slash_command,
    rename = "server",
    default_member_permissions = "MANAGE_GUILD"
)]
pub async fn memory_server(ctx: Context<'_>) -> Result<(), Error> {
    let Some(server) = managed_server(ctx).await? else {
        return Ok(());
    };
    let facts = ctx
        .data()
        .memory
        .list_facts(Some(server), None, false, FACTS_LISTED)
        .await?;
    reply(ctx, fact_list(locale_of(ctx), &facts)).await
}

/// Forget a fact by its number, or `all` of yours. With Manage Server: any fact of this server.
#[poise::command(slash_command, rename = "forget")]
pub async fn memory_forget(ctx: Context<'_>, target: String) -> Result<(), Error> {
    let locale = locale_of(ctx);
    let user = UserId(ctx.author().id.get());
    let server = ctx.guild_id().map(|g| ServerId(g.get()));
    let id = match target.trim() {
        "all" => None,
        number => match number.trim_start_matches('#').parse::<i64>() {
            Ok(id) if id > 0 => Some(id),
            _ => return reply(ctx, locale::text(locale, "memory-forget-what")).await,
        },
    };
    // "all" is always your own; a number is yours, or any of the server's for a moderator.
    let manager = server.is_some() && permissions(ctx).contains(Permissions::MANAGE_GUILD);
    let about = (!manager || id.is_none()).then_some(user);
    let count = ctx.data().memory.delete_facts(server, id, about).await?;
    tracing::info!(user = %user, count, "facts forgotten by /memory forget");
    let key = if count == 0 {
        "memory-forgot-nothing"
    } else {
        "memory-forgotten"
    };
    reply(
        ctx,
        locale::text_with(locale, key, &[("count", count.to_string())]),
    )
    .await
}

// Also for user install (SPEC A5): anywhere the user is.
/// Forget everything the bot remembers about you, in every server and DM.
#[poise::command(
    slash_command,
    rename = "forget-me",
    install_context = "Guild|User",
    interaction_context = "Guild|BotDm|PrivateChannel"
)]
pub async fn forget_me(ctx: Context<'_>) -> Result<(), Error> {
    let user = UserId(ctx.author().id.get());
    let count = ctx.data().memory.forget_user(user).await?;
    tracing::info!(user = %user, count, "facts forgotten by /forget-me");
    reply(
        ctx,
        locale::text_with(
            locale_of(ctx),
            "forget-me-done",
            &[("count", count.to_string())],
        ),
    )
    .await
}
