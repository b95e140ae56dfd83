//! Personas the bot can speak as.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::PortError;
use crate::domain::scope::PersonaId;

/// A persona the bot can speak as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Persona {
    pub id: PersonaId,
    pub display_name: String,
    pub system_prompt: String,
    /// Words that start a turn when a message contains them (SPEC C1).
    pub trigger_words: Vec<String>,
    pub avatar_url: Option<String>,
}

/// A persona's bounds: what a Discord webhook's name and a modal's field take.
pub const NAME_MAX_CHARS: usize = 80;
pub const PROMPT_MAX_CHARS: usize = 4000;
pub const TRIGGER_WORDS_MAX: usize = 20;
pub const TRIGGER_WORD_MAX_CHARS: usize = 50;
pub const AVATAR_URL_MAX_CHARS: usize = 512;

/// Why a persona edit is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PersonaProblem {
    /// No name, or only spaces.
    NoName,
    /// No system prompt, or only spaces.
    NoPrompt,
    /// A name Discord refuses for a webhook (it holds "discord" or "clyde", or is a mention
    /// word).
    ReservedName,
    /// The avatar is not an `https://` address.
    AvatarNotHttps,
}

impl Persona {
    /// The persona within its bounds: each field trimmed and cut, trigger words lowercased,
    /// without empty or repeated ones.
    pub fn bounded(self) -> Self {
        let cut = |text: &str, max: usize| text.trim().chars().take(max).collect::<String>();
        let mut words: Vec<String> = Vec::new();
        for word in &self.trigger_words {
            let word = cut(&word.to_lowercase(), TRIGGER_WORD_MAX_CHARS);
            if !word.is_empty() && !words.contains(&word) && words.len() < TRIGGER_WORDS_MAX {
                words.push(word);
            }
        }
        Self {
            id: self.id,
            display_name: cut(&self.display_name, NAME_MAX_CHARS),
            system_prompt: cut(&self.system_prompt, PROMPT_MAX_CHARS),
            trigger_words: words,
            avatar_url: self
                .avatar_url
                .map(|u| cut(&u, AVATAR_URL_MAX_CHARS))
                .filter(|u| !u.is_empty()),
        }
    }

    /// Why this persona cannot be used as it is, if it cannot.
    pub fn problem(&self) -> Option<PersonaProblem> {
        let name = self.display_name.trim().to_lowercase();
        if name.is_empty() {
            return Some(PersonaProblem::NoName);
        }
        if self.system_prompt.trim().is_empty() {
            return Some(PersonaProblem::NoPrompt);
        }
        let reserved = ["discord", "clyde"].iter().any(|w| name.contains(w))
            || ["everyone", "here"].contains(&name.as_str());
        if reserved {
            return Some(PersonaProblem::ReservedName);
        }
        let https = self.avatar_url.as_deref().is_none_or(|u| {
            url::Url::parse(u).is_ok_and(|u| u.scheme() == "https" && u.host().is_some())
        });
        (!https).then_some(PersonaProblem::AvatarNotHttps)
    }
}

impl From<&crate::config::PersonaConfig> for Persona {
    /// A shipped persona as the deployment configures it: the one conversion from the
    /// configuration, for the stored templates and for the fallback when the store fails.
    fn from(p: &crate::config::PersonaConfig) -> Self {
        Self {
            id: PersonaId(p.id.clone()),
            display_name: p.display_name.clone(),
            system_prompt: p.system_prompt.clone(),
            trigger_words: p.trigger_words.clone(),
            avatar_url: p.avatar_url.clone(),
        }
    }
}

/// Trigger words as typed in one field: separated by commas (or new lines).
pub fn parse_trigger_words(text: &str) -> Vec<String> {
    text.split([',', '\n'])
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

#[async_trait]
pub trait PersonaStore: Send + Sync {
    async fn persona(&self, id: &PersonaId) -> Result<Option<Persona>, PortError>;
    async fn personas(&self) -> Result<Vec<Persona>, PortError>;
    async fn save_persona(&self, persona: &Persona) -> Result<(), PortError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn persona(name: &str, avatar: Option<&str>) -> Persona {
        Persona {
            id: PersonaId("aria".into()),
            display_name: name.into(),
            system_prompt: "p".into(),
            trigger_words: Vec::new(),
            avatar_url: avatar.map(str::to_owned),
        }
    }

    // SPEC A1: a name Discord refuses for a webhook, or an avatar that is not https, is refused
    // at the edit rather than failing every post later.
    #[test]
    fn names_and_avatars_discord_refuses_are_caught() {
        assert_eq!(persona("  ", None).problem(), Some(PersonaProblem::NoName));
        let blank = Persona {
            system_prompt: " \n ".into(),
            ..persona("Mira", None)
        };
        assert_eq!(blank.problem(), Some(PersonaProblem::NoPrompt));
        for reserved in ["My Discord Pal", "clyde", "everyone", "Here"] {
            let problem = persona(reserved, None).problem();
            assert_eq!(problem, Some(PersonaProblem::ReservedName), "{reserved}");
        }
        let http = persona("Mira", Some("http://example.com/a.png")).problem();
        assert_eq!(http, Some(PersonaProblem::AvatarNotHttps));
        assert_eq!(
            persona("Mira", Some("https://example.com/a.png")).problem(),
            None
        );
        assert_eq!(persona("Mira", None).problem(), None);
    }

    proptest! {
        // Whatever a moderator types, the persona stays within its bounds: at most 20 trigger
        // words of at most 50 characters, none empty or repeated, a name of at most 80.
        #[test]
        fn any_edit_stays_within_bounds(name in ".{0,200}", words in ".{0,2000}") {
            let edited = Persona {
                trigger_words: parse_trigger_words(&words),
                ..persona(&name, None)
            }
            .bounded();
            prop_assert!(edited.display_name.chars().count() <= NAME_MAX_CHARS);
            prop_assert!(edited.trigger_words.len() <= TRIGGER_WORDS_MAX);
            for (n, word) in edited.trigger_words.iter().enumerate() {
                prop_assert!(!word.is_empty() && word.chars().count() <= TRIGGER_WORD_MAX_CHARS);
                prop_assert!(!edited.trigger_words[..n].contains(word));
            }
        }
    }
}
