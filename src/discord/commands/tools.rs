//! `/tools deliberate|phrases|show`: deliberate tool mode, where a gated tool is offered only
//! when a message asks for it, and the server's own phrases that ask. `/tools approvals`: who
//! decides a tool call that needs approval (SPEC E3). `/tools mcp`: which MCP servers' tools are
//! offered here (SPEC E4).

use super::shared::{State, locale_of, log_change, managed_server, reply};
use crate::discord::data::{Context, Error};
use crate::domain::ports::SettingsChange;
use crate::locale;

/// A tool deliberate mode can gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, poise::ChoiceParameter)]
pub enum GatedTool {
    #[name = "select_sticker_for_response"]
    Sticker,
    #[name = "remember_fact"]
    Remember,
    #[name = "forget_fact"]
    Forget,
    #[name = "plan_image"]
    Image,
    #[name = "create_reminder"]
    Reminder,
}

impl GatedTool {
    fn name(self) -> &'static str {
        use crate::tools::Tool as _;
        use crate::tools::{create_reminder, forget_fact, plan_image, remember_fact};
        match self {
            Self::Sticker => {
                crate::tools::select_sticker_for_response::SelectStickerForResponse::NAME
            }
            Self::Remember => remember_fact::RememberFact::NAME,
            Self::Forget => forget_fact::ForgetFact::NAME,
            Self::Image => plan_image::PlanImage::NAME,
            Self::Reminder => create_reminder::CreateReminder::NAME,
        }
    }
}

/// Add or remove.
#[derive(Debug, Clone, Copy, PartialEq, Eq, poise::ChoiceParameter)]
pub enum PhraseAction {
    #[name = "add"]
    Add,
    #[name = "remove"]
    Remove,
}

/// Deliberate tool mode: tools offered only when a message asks for them.
#[poise::command(
    slash_command,
    subcommands(
        "tools_deliberate",
        "tools_phrases",
        "tools_show",
        "tools_approvals",
        "tools_mcp"
    ),
    default_member_permissions = "MANAGE_GUILD"
)]
pub async fn tools(_ctx: Context<'_>) -> Result<(), Error> {
    // Discord only invokes the subcommands.
    Ok(())
}

/// Who decides approvals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, poise::ChoiceParameter)]
pub enum ApproversChoice {
    #[name = "requester"]
    Requester,
    #[name = "moderators"]
    Moderators,
}

/// Who approves a tool call that needs approval here.
#[poise::command(slash_command, rename = "approvals")]
pub async fn tools_approvals(ctx: Context<'_>, by: ApproversChoice) -> Result<(), Error> {
    use crate::domain::approvals::Approvers;
    let Some(server) = managed_server(ctx).await? else {
        return Ok(());
    };
    let approvers = match by {
        ApproversChoice::Requester => Approvers::Requester,
        ApproversChoice::Moderators => Approvers::Moderators,
    };
    ctx.data()
        .settings
        .update(server, SettingsChange::Approvers(approvers))
        .await?;
    log_change(
        ctx,
        server,
        format!("/tools approvals {}", approvers.as_str()),
    );
    let key = format!("tools-approvals-{}", approvers.as_str());
    reply(ctx, locale::text(locale_of(ctx), &key)).await
}

/// What `/tools mcp` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, poise::ChoiceParameter)]
pub enum McpAction {
    #[name = "list"]
    List,
    #[name = "enable"]
    Enable,
    #[name = "disable"]
    Disable,
}

/// List the MCP servers, or turn one's tools on or off here (off until turned on).
#[poise::command(slash_command, rename = "mcp")]
pub async fn tools_mcp(
    ctx: Context<'_>,
    action: McpAction,
    server: Option<String>,
) -> Result<(), Error> {
    let Some(guild) = managed_server(ctx).await? else {
        return Ok(());
    };
    let locale = locale_of(ctx);
    let health = ctx
        .data()
        .outside
        .as_ref()
        .map(|o| o.health())
        .unwrap_or_default();
    if health.is_empty() {
        return reply(ctx, locale::text(locale, "tools-mcp-none")).await;
    }
    let settings = ctx.data().settings.settings(guild).await?;
    let on = action == McpAction::Enable;
    let name = match (action, server) {
        (McpAction::List, _) => {
            return reply(ctx, mcp_list(locale, &health, &settings.mcp_servers)).await;
        }
        (_, Some(name)) if health.iter().any(|h| h.name == name.trim()) => name.trim().to_owned(),
        (_, given) => {
            let names = health.iter().map(|h| h.name.as_str()).collect::<Vec<_>>();
            let args = [
                (
                    "server",
                    crate::domain::thought_log::cut(given.as_deref().unwrap_or("-"), 30),
                ),
                ("servers", names.join(", ")),
            ];
            return reply(ctx, locale::text_with(locale, "tools-mcp-unknown", &args)).await;
        }
    };
    let change = SettingsChange::Mcp {
        server: name.clone(),
        on,
    };
    ctx.data().settings.update(guild, change).await?;
    let word = if on { "enable" } else { "disable" };
    log_change(ctx, guild, format!("/tools mcp {word} {name}"));
    let key = if on {
        "tools-mcp-enabled"
    } else {
        "tools-mcp-disabled"
    };
    reply(ctx, locale::text_with(locale, key, &[("server", name)])).await
}

/// One line a server: on or off here, connected or not (and why), its tools.
pub(super) fn mcp_list(
    locale: crate::locale::Locale,
    health: &[crate::tools::outside::ServerHealth],
    enabled: &[String],
) -> String {
    let yes_no = |on: bool| locale::text(locale, if on { "status-yes" } else { "status-no" });
    let lines: Vec<String> = health
        .iter()
        .map(|h| {
            let args = [
                ("server", h.name.clone()),
                ("here", yes_no(enabled.contains(&h.name))),
                ("connected", yes_no(h.connected)),
                ("tools", h.tools.to_string()),
                (
                    "error",
                    h.last_error.clone().unwrap_or_else(|| "-".to_owned()),
                ),
            ];
            locale::text_with(locale, "tools-mcp-line", &args)
        })
        .collect();
    lines.join("\n").chars().take(1900).collect()
}

/// Turn deliberate tool mode on or off for this server.
#[poise::command(slash_command, rename = "deliberate")]
pub async fn tools_deliberate(ctx: Context<'_>, state: State) -> Result<(), Error> {
    let Some(server) = managed_server(ctx).await? else {
        return Ok(());
    };
    let on = state == State::On;
    ctx.data()
        .settings
        .update(server, SettingsChange::Deliberate(on))
        .await?;
    let (word, key) = if on {
        ("on", "tools-deliberate-on")
    } else {
        ("off", "tools-deliberate-off")
    };
    log_change(ctx, server, format!("/tools deliberate {word}"));
    reply(ctx, locale::text(locale_of(ctx), key)).await
}

/// Add or remove a phrase that offers a tool in deliberate mode.
#[poise::command(slash_command, rename = "phrases")]
pub async fn tools_phrases(
    ctx: Context<'_>,
    action: PhraseAction,
    tool: GatedTool,
    phrase: String,
) -> Result<(), Error> {
    let Some(server) = managed_server(ctx).await? else {
        return Ok(());
    };
    let add = action == PhraseAction::Add;
    let change = SettingsChange::Phrase {
        tool: tool.name().to_owned(),
        phrase: phrase.clone(),
        add,
    };
    let settings = ctx.data().settings.update(server, change).await?;
    let has = settings
        .deliberate
        .custom_phrases
        .get(tool.name())
        .is_some_and(|p| p.contains(&phrase.trim().to_lowercase()));
    let shown = crate::domain::thought_log::cut(&phrase, 50);
    let verb = if add { "add" } else { "remove" };
    let change = format!("/tools phrases {verb} {} \"{shown}\"", tool.name());
    log_change(ctx, server, change);
    let key = match (add, has) {
        (true, true) => "tools-phrase-added",
        (true, false) => "tools-phrase-refused",
        (false, _) => "tools-phrase-removed",
    };
    let args = [("tool", tool.name().to_owned()), ("phrase", shown)];
    reply(ctx, locale::text_with(locale_of(ctx), key, &args)).await
}

/// Deliberate tool mode and this server's own phrases.
#[poise::command(slash_command, rename = "show")]
pub async fn tools_show(ctx: Context<'_>) -> Result<(), Error> {
    let Some(server) = managed_server(ctx).await? else {
        return Ok(());
    };
    let locale = locale_of(ctx);
    let settings = ctx.data().settings.settings(server).await?;
    let d = &settings.deliberate;
    let state = locale::text(locale, if d.enabled { "status-yes" } else { "status-no" });
    let mut lines = vec![locale::text_with(locale, "tools-show", &[("state", state)])];
    for (tool, phrases) in &d.custom_phrases {
        lines.push(format!("- {tool}: {}", phrases.join(", ")));
    }
    let text: String = lines.join("\n").chars().take(1900).collect();
    reply(ctx, text).await
}
