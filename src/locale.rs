//! Localized strings. Every user-facing string comes from `locales/<tag>/*.ftl` (Fluent), compiled
//! into the binary. A key missing in one language falls back to English, key by key; a key
//! missing everywhere shows the key itself (and a test keeps that from shipping).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::LazyLock;

use fluent_templates::fluent_bundle::FluentValue;
use fluent_templates::{LanguageIdentifier, static_loader};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

static_loader! {
    static LOCALES = {
        locales: "./locales",
        fallback_language: "en",
        // Isolation marks around arguments show up as stray characters in Discord.
        customise: |bundle| bundle.set_use_isolating(false),
    };
}

/// The languages the bot speaks. Discord locales outside these fall back to English.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Locale {
    #[default]
    En,
    Ja,
    ZhCn,
    ZhTw,
}

static LANG_IDS: LazyLock<[LanguageIdentifier; 4]> = LazyLock::new(|| {
    Locale::ALL.map(|l| {
        l.tag()
            .parse()
            .unwrap_or_else(|_| unreachable!("built-in tags parse"))
    })
});

impl Locale {
    pub const ALL: [Locale; 4] = [Locale::En, Locale::Ja, Locale::ZhCn, Locale::ZhTw];

    /// The tag used for the `locales/` folder and in config.
    pub fn tag(self) -> &'static str {
        match self {
            Locale::En => "en",
            Locale::Ja => "ja",
            Locale::ZhCn => "zh-CN",
            Locale::ZhTw => "zh-TW",
        }
    }

    /// Parses one of our tags exactly (config files).
    pub fn from_tag(tag: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.tag() == tag)
    }

    /// Maps a Discord locale (`en-US`, `ja`, `zh-CN`, `zh-TW`, `fr`, ...) to ours; anything we
    /// do not speak is English.
    pub fn from_discord(tag: &str) -> Self {
        match tag {
            "ja" => Locale::Ja,
            "zh-CN" => Locale::ZhCn,
            "zh-TW" => Locale::ZhTw,
            _ => Locale::En,
        }
    }

    #[allow(
        clippy::indexing_slicing,
        reason = "LANG_IDS has one entry per variant, in order"
    )]
    fn lang_id(self) -> &'static LanguageIdentifier {
        &LANG_IDS[self as usize]
    }
}

impl Serialize for Locale {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.tag())
    }
}

impl<'de> Deserialize<'de> for Locale {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let tag = String::deserialize(d)?;
        // The value is not shown: a string in the wrong place may be a secret.
        Locale::from_tag(&tag).ok_or_else(|| {
            serde::de::Error::custom("unknown locale (expected en, ja, zh-CN or zh-TW)")
        })
    }
}

/// The text for `key` in `locale`, falling back to English for a key that language lacks.
pub fn text(locale: Locale, key: &str) -> String {
    lookup(locale, key, None)
}

/// Like [`text`], with Fluent arguments (`{ $name }`).
pub fn text_with(locale: Locale, key: &str, args: &[(&'static str, String)]) -> String {
    let map: HashMap<Cow<'static, str>, FluentValue<'static>> = args
        .iter()
        .map(|(k, v)| (Cow::Borrowed(*k), FluentValue::from(v.clone())))
        .collect();
    lookup(locale, key, Some(&map))
}

fn lookup(
    locale: Locale,
    key: &str,
    args: Option<&HashMap<Cow<'static, str>, FluentValue<'static>>>,
) -> String {
    for lang in [locale, Locale::En] {
        if let Ok(found) = LOCALES.lookup_single_language(lang.lang_id(), key, args) {
            return found;
        }
    }
    tracing::warn!(key, locale = locale.tag(), "missing locale key");
    key.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::path::Path;

    fn keys_of(tag: &str) -> BTreeSet<String> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("locales")
            .join(tag);
        let mut keys = BTreeSet::new();
        for entry in std::fs::read_dir(&dir).expect("locale dir") {
            let path = entry.expect("entry").path();
            // The fallback probe lives only in English, on purpose (see the fallback test).
            if path.ends_with("test-probe.ftl") {
                continue;
            }
            let text = std::fs::read_to_string(path).expect("ftl");
            for line in text.lines() {
                if let Some((key, _)) = line.split_once(" =")
                    && !key.starts_with(['#', ' ', '.', '-'])
                    && !key.is_empty()
                {
                    keys.insert(key.to_owned());
                }
            }
        }
        keys
    }

    // SPEC D3: every English key exists in the other three languages.
    #[test]
    fn every_locale_defines_every_english_key() {
        let english = keys_of("en");
        assert!(english.len() > 20, "english keys: {}", english.len());
        for locale in [Locale::Ja, Locale::ZhCn, Locale::ZhTw] {
            let theirs = keys_of(locale.tag());
            let missing: Vec<_> = english.difference(&theirs).collect();
            assert!(missing.is_empty(), "{} lacks {missing:?}", locale.tag());
            let extra: Vec<_> = theirs.difference(&english).collect();
            assert!(
                extra.is_empty(),
                "{} has keys English lacks: {extra:?}",
                locale.tag()
            );
        }
    }

    // SPEC D3: lookups are localized and take arguments.
    #[test]
    fn lookups_are_localized_with_arguments() {
        let en = text_with(Locale::En, "notice-field-tool", &[]);
        let ja = text_with(Locale::Ja, "notice-field-tool", &[]);
        assert_ne!(en, ja);
        let args = [("tool", "plan_image".to_owned())];
        for locale in Locale::ALL {
            let line = text_with(locale, "progress-generic", &args);
            assert!(line.contains("plan_image"), "{}: {line}", locale.tag());
        }
    }

    // SPEC D3: per-key fallback: a key one language lacks is shown in English, not as the key.
    #[test]
    fn missing_key_falls_back_to_english_per_key() {
        // `test-fallback-probe` exists only in the English bundle, on purpose, for this test.
        let english = text(Locale::En, "test-fallback-probe");
        assert_eq!(english, "English fallback works");
        for locale in [Locale::Ja, Locale::ZhCn, Locale::ZhTw] {
            assert_eq!(text(locale, "test-fallback-probe"), english);
        }
        assert_eq!(text(Locale::Ja, "no-such-key"), "no-such-key");
    }

    #[test]
    fn discord_locales_map_to_ours_or_english() {
        assert_eq!(Locale::from_discord("ja"), Locale::Ja);
        assert_eq!(Locale::from_discord("zh-TW"), Locale::ZhTw);
        assert_eq!(Locale::from_discord("en-GB"), Locale::En);
        assert_eq!(Locale::from_discord("fr"), Locale::En);
    }
}
