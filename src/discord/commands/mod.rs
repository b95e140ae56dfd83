//! Slash commands (poise): `/kill` (SPEC C6), `/random on|off`, `/reminders list|cancel`,
//! `/status` and the rest; `/drafting` is in `drafting_commands`, `/thoughtlog` in
//! `thoughtlog_commands`, `/persona` in `persona_commands`. Each parses, calls one core function,
//! and renders a localized, ephemeral reply. Names and descriptions are localized from
//! `locales/` (SPEC D3). Permission checks read the member permissions Discord computed for the
//! interaction.

use poise::CreateReply;
use serenity::all::{ChannelId as SerenityChannelId, Permissions};

use super::{BotData, Context, Error};

pub mod drafting;
pub mod modal;
pub mod persona;
pub mod replies;
pub mod thoughtlog;
use crate::domain::ports::{ChannelRule, RoleRule, SettingsChange};
use crate::domain::scope::{ChannelId, ServerId, UserId};
use crate::domain::turn::ToolEnding;
use crate::engine::orchestrator::{KillReach, KillReport};
use crate::locale::{self, Locale};

/// Every command, localized.
pub fn all() -> Vec<poise::Command<std::sync::Arc<BotData>, Error>> {
    let mut commands = vec![
        kill(),
        drafting::drafting(),
        random(),
        thoughtlog::thoughtlog(),
        reminders(),
        memory(),
        forget_me(),
        channels(),
        roles(),
        access(),
        status(),
        help(),
        tools(),
        persona::persona(),
        replies::replies(),
    ];
    for command in &mut commands {
        localize(command, "cmd");
    }
    commands
}

/// Discord locale codes for our languages other than English.
const DISCORD_LOCALES: [(&str, Locale); 3] = [
    ("ja", Locale::Ja),
    ("zh-CN", Locale::ZhCn),
    ("zh-TW", Locale::ZhTw),
];

fn localize(command: &mut poise::Command<std::sync::Arc<BotData>, Error>, parent: &str) {
    let path = format!("{parent}-{}", command.name);
    command.description = Some(locale::text(Locale::En, &format!("{path}-description")).into());
    for (code, locale) in DISCORD_LOCALES {
        command.name_localizations.to_mut().push((
            code.into(),
            locale::text(locale, &format!("{path}-name")).into(),
        ));
        command.description_localizations.to_mut().push((
            code.into(),
            locale::text(locale, &format!("{path}-description")).into(),
        ));
    }
    for parameter in &mut command.parameters {
        let key = format!("{path}-{}", parameter.name);
        parameter.description =
            Some(locale::text(Locale::En, &format!("{key}-description")).into());
        for (code, locale) in DISCORD_LOCALES {
            parameter.name_localizations.to_mut().push((
                code.into(),
                locale::text(locale, &format!("{key}-name")).into(),
            ));
            parameter.description_localizations.to_mut().push((
                code.into(),
                locale::text(locale, &format!("{key}-description")).into(),
            ));
        }
    }
    for sub in &mut command.subcommands {
        localize(sub, &path);
    }
}

/// The invoker's language.
pub(super) fn locale_of(ctx: Context<'_>) -> Locale {
    ctx.locale()
        .map(Locale::from_discord)
        .unwrap_or(ctx.data().default_locale)
}

/// The invoker's permissions in this channel, as Discord computed them (none in a DM).
fn permissions(ctx: Context<'_>) -> Permissions {
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

/// What `/kill` says, in the invoker's language: whose reply it stopped and how many waiting
/// messages it dropped, the requester's own or everyone's (SPEC C6).
pub fn kill_text(report: &KillReport, locale: Locale) -> String {
    let KillReport::Stopped {
        reach,
        turn_stopped,
        tool,
        dropped,
    } = report
    else {
        return match report {
            KillReport::Denied => locale::text(locale, "kill-denied"),
            _ => locale::text(locale, "kill-nothing"),
        };
    };
    let (stopped_key, dropped_key) = match reach {
        KillReach::Own => ("kill-stopped-own", "kill-dropped-own"),
        KillReach::Channel => ("kill-stopped", "kill-dropped-all"),
    };
    let mut lines = Vec::new();
    if *turn_stopped {
        lines.push(locale::text(locale, stopped_key));
    }
    if let Some(tool) = tool {
        let key = match tool.ending {
            ToolEnding::Done => "kill-tool-done",
            ToolEnding::Cancelled => "kill-tool-cancelled",
            ToolEnding::MayStillFinish => "kill-tool-may-still-finish",
        };
        lines.push(locale::text_with(
            locale,
            key,
            &[("tool", tool.name.clone())],
        ));
    }
    if *dropped > 0 || lines.is_empty() {
        lines.push(locale::text_with(
            locale,
            dropped_key,
            &[("count", dropped.to_string())],
        ));
    }
    lines.join("\n")
}

/// Stop the bot's reply in this channel.
#[poise::command(slash_command)]
pub async fn kill(ctx: Context<'_>) -> Result<(), Error> {
    let locale = locale_of(ctx);
    let can_manage = permissions(ctx).contains(Permissions::MANAGE_MESSAGES);
    let report = ctx
        .data()
        .orchestrator
        .kill(
            ChannelId(ctx.channel_id().get()),
            UserId(ctx.author().id.get()),
            can_manage,
        )
        .await;
    reply(ctx, kill_text(&report, locale)).await
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

/// Answers the command, or the submit of the modal it showed: the command has had its answer
/// then, so an error is answered on the submit too (and logged once).
pub(super) async fn conclude(
    ctx: Context<'_>,
    submitted: Option<modal::Submitted>,
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

/// A channel rule `/channels` sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, poise::ChoiceParameter)]
pub enum ChannelChoice {
    #[name = "allow"]
    Allow,
    #[name = "block"]
    Block,
    #[name = "always"]
    Always,
    #[name = "clear"]
    Clear,
}

/// A role rule `/roles` sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, poise::ChoiceParameter)]
pub enum RoleChoice {
    #[name = "allow"]
    Allow,
    #[name = "block"]
    Block,
    #[name = "clear"]
    Clear,
}

/// Tells the server's thought log who changed which setting.
pub(super) fn log_change(ctx: Context<'_>, server: ServerId, change: String) {
    let notice = crate::domain::thought_log::Notice::SettingsChanged {
        by: UserId(ctx.author().id.get()),
        change,
    };
    // Posted beside the answer, not before it: a modal's submit has 3 s to be answered.
    let thought_log = ctx.data().thought_log.clone();
    tokio::spawn(async move { thought_log.post(server, notice).await });
}

/// Where the bot answers: allow, block or always answer a channel, or clear its rule.
#[poise::command(slash_command, default_member_permissions = "MANAGE_GUILD")]
pub async fn channels(
    ctx: Context<'_>,
    rule: ChannelChoice,
    channel: SerenityChannelId,
) -> Result<(), Error> {
    let Some(server) = managed_server(ctx).await? else {
        return Ok(());
    };
    // The rule as the moderator chose it (`allow`), for the reply and the thought log.
    let rule_name = poise::ChoiceParameter::name(&rule).to_owned();
    let rule = match rule {
        ChannelChoice::Allow => ChannelRule::Allow,
        ChannelChoice::Block => ChannelRule::Block,
        ChannelChoice::Always => ChannelRule::Always,
        ChannelChoice::Clear => ChannelRule::Clear,
    };
    let channel = ChannelId(channel.get());
    let change = SettingsChange::Channel { channel, rule };
    let settings = ctx.data().settings.update(server, change).await?;
    let a = &settings.access;
    let lists = [
        &a.allowed_channels,
        &a.blocked_channels,
        &a.always_reply_channels,
    ];
    let took = rule == ChannelRule::Clear || lists.iter().any(|l| l.contains(&channel));
    let key = access_reply(took);
    let mention = format!("<#{}>", channel.0);
    log_change(ctx, server, format!("/channels {rule_name} {mention}"));
    let args = [("target", mention), ("rule", rule_name)];
    reply(ctx, locale::text_with(locale_of(ctx), key, &args)).await
}

/// Whom the bot answers: allow or block a role, or clear its rule.
#[poise::command(slash_command, default_member_permissions = "MANAGE_GUILD")]
pub async fn roles(
    ctx: Context<'_>,
    rule: RoleChoice,
    role: serenity::all::RoleId,
) -> Result<(), Error> {
    let Some(server) = managed_server(ctx).await? else {
        return Ok(());
    };
    let rule_name = poise::ChoiceParameter::name(&rule).to_owned();
    let rule = match rule {
        RoleChoice::Allow => RoleRule::Allow,
        RoleChoice::Block => RoleRule::Block,
        RoleChoice::Clear => RoleRule::Clear,
    };
    let role = role.get();
    let settings = ctx
        .data()
        .settings
        .update(server, SettingsChange::Role { role, rule })
        .await?;
    let a = &settings.access;
    let took = rule == RoleRule::Clear
        || a.allowed_roles.contains(&role)
        || a.blocked_roles.contains(&role);
    let key = access_reply(took);
    let mention = format!("<@&{role}>");
    log_change(ctx, server, format!("/roles {rule_name} {mention}"));
    let args = [("target", mention), ("rule", rule_name)];
    reply(ctx, locale::text_with(locale_of(ctx), key, &args)).await
}

/// The reply key for an access change: done, or refused because its list is full.
fn access_reply(took: bool) -> &'static str {
    if took { "access-set" } else { "access-full" }
}

/// The server's access rules as they apply: block beats allow.
#[poise::command(slash_command, default_member_permissions = "MANAGE_GUILD")]
pub async fn access(ctx: Context<'_>) -> Result<(), Error> {
    let Some(server) = managed_server(ctx).await? else {
        return Ok(());
    };
    let locale = locale_of(ctx);
    let settings = ctx.data().settings.settings(server).await?;
    let a = &settings.access;
    let channels = |list: &[ChannelId]| mentions(list.iter().map(|c| format!("<#{}>", c.0)));
    let roles = |list: &[u64]| mentions(list.iter().map(|r| format!("<@&{r}>")));
    let args = [
        ("allowed_channels", channels(&a.allowed_channels)),
        ("blocked_channels", channels(&a.blocked_channels)),
        ("always_channels", channels(&a.always_reply_channels)),
        ("allowed_roles", roles(&a.allowed_roles)),
        ("blocked_roles", roles(&a.blocked_roles)),
    ];
    let mut text = locale::text_with(locale, "access-show", &args);
    // Discord's message limit; the lists are bounded, but 200 entries would not fit.
    if text.chars().count() > 1900 {
        text = text.chars().take(1900).collect::<String>() + "…";
    }
    reply(ctx, text).await
}

/// A list of mentions, or "-" for none.
fn mentions(items: impl Iterator<Item = String>) -> String {
    let list: Vec<String> = items.collect();
    if list.is_empty() {
        "-".to_owned()
    } else {
        list.join(" ")
    }
}

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
    subcommands("tools_deliberate", "tools_phrases", "tools_show"),
    default_member_permissions = "MANAGE_GUILD"
)]
pub async fn tools(_ctx: Context<'_>) -> Result<(), Error> {
    // Discord only invokes the subcommands.
    Ok(())
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
            crate::domain::ports::Persona::of_server(&settings, &data.persona)
                .display_name
                .clone(),
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
            thoughtlog::summaries_text(locale, settings.summaries),
        ),
        (
            "replies",
            replies::style_text(locale, settings.reply_style, data.reply_style),
        ),
        ("running", yes_no(running)),
        ("waiting", waiting.to_string()),
        ("can_post", yes_no(can_post)),
        ("reminders", reminders.to_string()),
    ];
    reply(ctx, locale::text_with(locale, "status-text", &args)).await
}

/// What the bot does, how to talk to it, and the commands you may use.
#[poise::command(slash_command)]
pub async fn help(ctx: Context<'_>) -> Result<(), Error> {
    let locale = locale_of(ctx);
    let manager = ctx.guild_id().is_some() && permissions(ctx).contains(Permissions::MANAGE_GUILD);
    let server = ctx.guild_id().map(|g| ServerId(g.get()));
    let name = ctx.data().persona_name(server).await;
    let mut text = locale::text_with(locale, "help-text", &[("persona", name)]);
    if manager {
        text.push('\n');
        text.push_str(&locale::text(locale, "help-managers"));
    }
    reply(ctx, text).await
}

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

/// Forget everything the bot remembers about you, in every server and DM.
#[poise::command(slash_command, rename = "forget-me")]
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

/// Errors from commands are reported here, once: logged for operators, a localized line for the
/// user (a failed reply is only logged).
pub async fn on_error(error: poise::FrameworkError<'_, std::sync::Arc<BotData>, Error>) {
    match error {
        poise::FrameworkError::Command { error, ctx, .. } => {
            tracing::error!(command = %ctx.command().qualified_name, %error, "command failed");
            let text = locale::text(locale_of(ctx), "command-failed");
            if let Err(e) = reply(ctx, text).await {
                tracing::warn!(error = %e, "could not report a command error");
            }
        }
        // poise's own handler prints this one with `eprintln!` (no time, no level). The setup
        // does nothing that can fail, so it is not expected.
        poise::FrameworkError::Setup { error, .. } => {
            tracing::error!(%error, "the bot's start-up on Discord failed");
        }
        other => {
            if let Err(e) = poise::builtins::on_error(other).await {
                tracing::warn!(error = %e, "could not report a framework error");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::turn::StoppedTool;

    // SPEC D3: command names and descriptions are localized in every language.
    #[test]
    fn commands_are_localized() {
        for command in all() {
            assert_eq!(command.name_localizations.len(), 3, "{}", command.name);
            assert!(
                command
                    .description
                    .as_deref()
                    .is_some_and(|d| !d.starts_with("cmd-"))
            );
            for (code, name) in command.name_localizations.iter() {
                assert!(!name.starts_with("cmd-"), "{code}: {name}");
                assert_eq!(name, &name.to_lowercase());
                assert!(!name.contains(' '));
            }
            for sub in &command.subcommands {
                assert_eq!(sub.description_localizations.len(), 3);
            }
        }
        let kill = &all()[0];
        let ja = kill
            .name_localizations
            .iter()
            .find(|(code, _)| code == "ja");
        assert_eq!(ja.map(|(_, name)| name.as_ref()), Some("停止"));
    }

    // SPEC C6: the /kill reply says what was stopped, whose, and how many waiting messages went.
    #[test]
    fn kill_replies_say_what_was_stopped() {
        let report = KillReport::Stopped {
            reach: KillReach::Channel,
            turn_stopped: true,
            tool: Some(StoppedTool {
                name: "plan_image".into(),
                ending: ToolEnding::MayStillFinish,
            }),
            dropped: 2,
        };
        let text = kill_text(&report, Locale::En);
        assert!(text.contains("plan_image") && text.contains('2'), "{text}");
        assert!(text.contains("may still finish"), "{text}");
        assert!(text.contains("everyone"), "{text}");
        for locale in Locale::ALL {
            let own = KillReport::Stopped {
                reach: KillReach::Own,
                turn_stopped: true,
                tool: None,
                dropped: 3,
            };
            let own = kill_text(&own, locale);
            assert!(own.contains('3') && !own.contains("kill-"), "{own}");
            assert_ne!(own, kill_text(&report, locale));
        }
        assert!(kill_text(&KillReport::NothingRunning, Locale::Ja).contains("何も"));
        assert!(!kill_text(&KillReport::Denied, Locale::ZhTw).starts_with("kill-"));
    }
}
