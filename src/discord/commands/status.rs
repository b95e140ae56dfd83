//! `/status` (how the bot is set up here: persona, model, drafting, thought log, queue,
//! reminders) and `/help` (what it does, and the commands a member may use).

use serenity::all::Permissions;

use super::shared::{locale_of, permissions, reply};
use crate::discord::data::{Context, Error};
use crate::domain::scope::{ChannelId, ServerId, UserId};
use crate::locale;

/// How the bot is set up here: persona, model, drafting, thought log, queue, reminders.
#[poise::command(slash_command)]
pub async fn status(ctx: Context<'_>) -> Result<(), Error> {
    let data = ctx.data();
    let locale = locale_of(ctx);
    let channel = ChannelId(ctx.channel_id().get());
    let server = ctx.guild_id().map(|g| ServerId(g.get()));
    let settings = match server {
        Some(server) => data.settings.settings(server).await?,
        None => Default::default(),
    };
    let (running, waiting) = data.orchestrator.load_of(channel).await;
    let can_post = match (server, data.bot.get()) {
        (Some(server), Some(bot)) => data.cache.bot_can_send(server, channel, bot),
        (None, _) => true,
        (Some(_), None) => false,
    };
    let reminders = data
        .reminders
        .for_user(UserId(ctx.author().id.get()))
        .await?
        .len();
    let yes_no = |on: bool| locale::text(locale, if on { "status-yes" } else { "status-no" });
    let args = [
        (
            "persona",
            data.personas.of_server(&settings).display_name.clone(),
        ),
        ("model", data.model_name.clone()),
        ("drafting", yes_no(settings.drafting)),
        (
            "thought_log",
            settings
                .thought_log_channel
                .map_or_else(|| "-".to_owned(), |c| format!("<#{}>", c.0)),
        ),
        (
            "summaries",
            super::thoughtlog::summaries_text(locale, settings.summaries),
        ),
        (
            "replies",
            super::replies::style_text(locale, settings.reply_style, data.reply_style),
        ),
        ("reactions", yes_no(settings.status_reactions)),
        ("buttons", yes_no(!settings.hide_buttons)),
        ("running", yes_no(running)),
        ("waiting", waiting.to_string()),
        ("can_post", yes_no(can_post)),
        ("reminders", reminders.to_string()),
    ];
    let mut text = locale::text_with(locale, "status-text", &args);
    // Without the Message Content intent, what is off, for everyone to see (SPEC D14).
    if !data
        .message_content
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        text.push_str(&format!("\n{}", locale::text(locale, "status-no-content")));
    }
    // Moderators see how members rated the replies here (SPEC E2).
    if let Some(server) = server
        && permissions(ctx).contains(Permissions::MANAGE_GUILD)
    {
        let tally = data.feedback.server_tally(server).await?;
        let counts = [
            ("up", tally.up.to_string()),
            ("down", tally.down.to_string()),
        ];
        text.push('\n');
        text.push_str(&locale::text_with(locale, "status-feedback", &counts));
        // And how each MCP server is doing, and whether its tools are on here (SPEC E4).
        if let Some(outside) = &data.outside {
            let health = outside.health();
            text.push('\n');
            text.push_str(&super::tools::mcp_list(
                locale,
                &health,
                &settings.mcp_servers,
            ));
        }
    }
    reply(ctx, text).await
}

// Also for user install (SPEC A5): anywhere the user is, the bot a member there or not.
/// What the bot does, how to talk to it, and the commands you may use.
#[poise::command(
    slash_command,
    install_context = "Guild|User",
    interaction_context = "Guild|BotDm|PrivateChannel"
)]
pub async fn help(ctx: Context<'_>) -> Result<(), Error> {
    let locale = locale_of(ctx);
    // Run through a user's own install, in a server that did not install the bot, the
    // server's settings and moderators' commands do not exist there (SPEC A5).
    let server = ctx
        .guild_id()
        .filter(|_| server_install(ctx))
        .map(|g| ServerId(g.get()));
    let manager = server.is_some() && permissions(ctx).contains(Permissions::MANAGE_GUILD);
    let name = ctx.data().personas.name_in(server).await;
    let mut text = locale::text_with(locale, "help-text", &[("persona", name)]);
    if manager {
        text.push('\n');
        text.push_str(&locale::text(locale, "help-managers"));
    }
    reply(ctx, text).await
}

/// Whether the command came through the server's install of the app (not only a user's own).
fn server_install(ctx: Context<'_>) -> bool {
    match ctx {
        poise::Context::Application(app) => {
            matches!(
                super::ask::Place::of(app.interaction),
                super::ask::Place::Server(_)
            )
        }
        poise::Context::Prefix(_) => true,
    }
}
