//! Deliberate tool mode (SPEC T4): when a server turns it on, a gated tool is offered only when
//! the user's message contains one of its trigger phrases: the keyword packs of every locale
//! (config `deliberate.keywords`) plus the server's own phrases. Tools the mode does not gate
//! (read-only lookups, `submit_*`) stay offered.

use std::collections::HashMap;

use crate::config::DeliberateConfig;
pub use crate::domain::ports::DeliberateSettings;
use crate::domain::role::Role;
use crate::domain::turn::ToolAdmission;
use crate::tools::Registry;

/// The built-in trigger phrases, lower-cased once, per tool (all locales together: a user may
/// write in any language).
#[derive(Debug, Clone, Default)]
pub struct KeywordPacks {
    by_tool: HashMap<String, Vec<String>>,
}

impl KeywordPacks {
    pub fn from_config(config: &DeliberateConfig) -> Self {
        let by_tool = config
            .keywords
            .iter()
            .map(|(tool, packs)| {
                let phrases = packs
                    .values()
                    .flatten()
                    .map(|p| p.trim().to_lowercase())
                    .filter(|p| !p.is_empty())
                    .collect();
                (tool.clone(), phrases)
            })
            .collect();
        Self { by_tool }
    }

    fn phrases(&self, tool: &str) -> &[String] {
        self.by_tool.get(tool).map_or(&[], Vec::as_slice)
    }
}

/// Decides which of `role`'s tools this message admits.
pub fn admit(
    registry: &Registry,
    role: Role,
    packs: &KeywordPacks,
    settings: &DeliberateSettings,
    message: &str,
) -> ToolAdmission {
    if !settings.enabled {
        return ToolAdmission::Open;
    }
    let message = message.to_lowercase();
    let mut admitted = HashMap::new();
    for tool in registry.for_role(role) {
        if !tool.gated {
            admitted.insert(tool.name.to_owned(), None);
            continue;
        }
        let custom = settings
            .custom_phrases
            .get(tool.name)
            .into_iter()
            .flatten()
            .map(|p| p.trim().to_lowercase())
            .filter(|p| !p.is_empty());
        let builtin = packs.phrases(tool.name).iter().cloned();
        if let Some(trigger) = custom.chain(builtin).find(|p| message.contains(p.as_str())) {
            admitted.insert(tool.name.to_owned(), Some(trigger));
        }
    }
    ToolAdmission::Deliberate { admitted }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn setup() -> (Registry, KeywordPacks) {
        let config = Config::shipped_defaults();
        (
            Registry::builtin(&config),
            KeywordPacks::from_config(&config.deliberate),
        )
    }

    // SPEC T4: off means every tool is offered.
    #[test]
    fn disabled_mode_admits_everything() {
        let (registry, packs) = setup();
        let admission = admit(
            &registry,
            Role::Persona,
            &packs,
            &DeliberateSettings::default(),
            "hi",
        );
        assert_eq!(admission, ToolAdmission::Open);
        assert!(admission.admits("plan_image"));
    }

    // SPEC T4: a gated tool is admitted only by a trigger, in any locale; ungated tools stay.
    #[test]
    fn gated_tools_need_a_trigger_in_any_locale() {
        let (registry, packs) = setup();
        let on = DeliberateSettings {
            enabled: true,
            ..Default::default()
        };
        let plain = admit(&registry, Role::Persona, &packs, &on, "how are you?");
        assert!(!plain.admits("plan_image"));
        assert!(!plain.admits("remember_fact"));
        assert!(plain.admits("recall_facts"));
        assert!(plain.admits("update_short_term_memory"));
        let drawn = admit(&registry, Role::Persona, &packs, &on, "猫の絵を描いて！");
        assert!(drawn.admits("plan_image"));
        assert_eq!(drawn.trigger_for("plan_image"), Some("描いて"));
        let english = admit(&registry, Role::Persona, &packs, &on, "Please DRAW a cat");
        assert_eq!(english.trigger_for("plan_image"), Some("draw"));
    }

    // SPEC T4: a server's custom phrases admit too, and are named as the trigger.
    #[test]
    fn custom_phrases_admit_their_tool() {
        let (registry, packs) = setup();
        let mut settings = DeliberateSettings {
            enabled: true,
            ..Default::default()
        };
        settings
            .custom_phrases
            .insert("select_sticker_for_response".into(), vec!["Boop".into()]);
        let admission = admit(&registry, Role::Persona, &packs, &settings, "boop me");
        assert_eq!(
            admission.trigger_for("select_sticker_for_response"),
            Some("boop")
        );
        assert!(!admission.admits("plan_image"));
    }
}
