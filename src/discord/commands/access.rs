//! `/channels`, `/roles` and `/access`: where and whom the bot answers in a server (allow,
//! block, always answer a channel, or clear a rule), and the rules as they apply.

use serenity::all::ChannelId as SerenityChannelId;

use super::shared::{locale_of, log_change, managed_server, reply};
use crate::discord::data::{Context, Error};
use crate::domain::ports::{ChannelRule, RoleRule, SettingsChange};
use crate::domain::scope::ChannelId;
use crate::locale;

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
