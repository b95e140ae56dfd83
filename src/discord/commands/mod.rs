//! The slash commands (poise), one file per command family: `/kill` (SPEC C6), `/random`,
//! `/reminders`, `/channels` `/roles` `/access`, `/tools`, `/status` `/help`, `/memory`
//! `/forget-me`, `/drafting`, `/thoughtlog`, `/persona`, `/replies`. Each parses, calls one core
//! function, and renders a localized, ephemeral reply; what they all use is in [`shared`], the
//! modal that some show in [`modal`]. Here: the list of every command, their names and
//! descriptions localized from `locales/` (SPEC D3), and the one place command errors are
//! reported.

use super::data::{BotData, Error};
use crate::locale::{self, Locale};

pub mod access;
pub mod ask;
pub mod drafting;
pub mod kill;
pub mod memory;
pub mod menus;
pub mod modal;
pub mod persona;
pub mod random;
pub mod reminders;
pub mod replies;
pub mod shared;
pub mod status;
pub mod thoughtlog;
pub mod tools;

/// Every command, localized.
pub fn all() -> Vec<poise::Command<std::sync::Arc<BotData>, Error>> {
    let mut commands = vec![
        kill::kill(),
        ask::ask(),
        drafting::drafting(),
        random::random(),
        thoughtlog::thoughtlog(),
        reminders::reminders(),
        memory::memory(),
        memory::forget_me(),
        access::channels(),
        access::roles(),
        access::access(),
        status::status(),
        status::help(),
        tools::tools(),
        persona::persona(),
        replies::replies(),
        menus::ask_about(),
        menus::remember_this(),
        menus::forget_this(),
    ];
    for command in &mut commands {
        // A message menu is registered under its one name (see [`localize_menu_names`]).
        if command.context_menu_action.is_none() {
            localize(command, "cmd");
        }
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

/// The registered JSON of the menus with their names localized (poise registers a context
/// menu under its one name).
pub fn localize_menu_names(command: &mut serde_json::Value) {
    let Some(name) = command.get("name").and_then(|n| n.as_str()) else {
        return;
    };
    let Some((_, key)) = menus::MENUS.iter().find(|(menu, _)| *menu == name) else {
        return;
    };
    let names: serde_json::Map<String, serde_json::Value> = DISCORD_LOCALES
        .iter()
        .map(|(code, locale)| ((*code).to_owned(), locale::text(*locale, key).into()))
        .collect();
    if let Some(fields) = command.as_object_mut() {
        fields.insert("name_localizations".to_owned(), names.into());
    }
}

/// Errors from commands are reported here, once: logged for operators, a localized line for the
/// user (a failed reply is only logged).
pub async fn on_error(error: poise::FrameworkError<'_, std::sync::Arc<BotData>, Error>) {
    match error {
        poise::FrameworkError::Command { error, ctx, .. } => {
            tracing::error!(command = %ctx.command().qualified_name, %error, "command failed");
            let text = locale::text(shared::locale_of(ctx), "command-failed");
            if let Err(e) = shared::reply(ctx, text).await {
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

    // SPEC D3: command names and descriptions are localized in every language.
    #[test]
    fn commands_are_localized() {
        for command in all().iter().filter(|c| c.context_menu_action.is_none()) {
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
}
