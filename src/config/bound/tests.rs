//! The bounds against what they promise: the checks at load, the shipped defaults, the
//! comments of `config/default.toml` and the table in `docs/configuration.md`.

use figment::Figment;
use figment::providers::{Format, Toml};
use figment::value::Value;

use super::super::tests::{no_env, temp_config};
use super::*;
use crate::config::BUILT_IN_DEFAULTS;

/// The built-in defaults as a tree of values.
fn defaults() -> Value {
    Figment::from(Toml::string(BUILT_IN_DEFAULTS))
        .extract()
        .expect("defaults parse")
}

/// The TOML that sets the bound's setting (or, for a table, one entry `probe`) to `value`, and
/// the key an error about it names.
fn setting(bound: &Bound, value: u64) -> (String, String) {
    match bound.read {
        Read::One(_) => {
            let (section, key) = bound.key.rsplit_once('.').expect("section.key");
            (
                format!("[{section}]\n{key} = {value}\n"),
                bound.key.to_owned(),
            )
        }
        Read::Each(_) => (
            format!("[{}]\nprobe = {value}\n", bound.key),
            format!("{}.probe", bound.key),
        ),
    }
}

fn load(toml: &str) -> Result<Config, String> {
    let dir = temp_config(Some(toml));
    Config::load_with_env(Some(dir.path()), no_env()).map_err(|e| e.to_string())
}

// SPEC D10: every bounded setting loads at both ends of its range (or fails only a rule of
// another kind, never naming its own key) and is refused just past each end, and far past the
// top, in one line naming the key and the range.
#[test]
fn every_bound_is_enforced_at_both_ends_naming_key_and_range() {
    for bound in all() {
        for value in [bound.least, bound.most] {
            let (toml, key) = setting(bound, value);
            if let Err(err) = load(&toml) {
                // At an end it may still fail a rule between settings, never its own range.
                let refused = format!("`{key}`: {}", bound.problem());
                assert!(!err.contains(&refused), "{key} = {value}: {err}");
            }
        }
        let mut past = vec![bound.most + 1, u64::MAX / 2];
        if bound.least > 0 {
            past.push(bound.least - 1);
        }
        for value in past {
            let (toml, key) = setting(bound, value);
            let Err(err) = load(&toml) else {
                panic!("{key} = {value} was accepted");
            };
            // Far past a small field's type, the type error names the setting.
            assert!(
                err.contains(&format!("`{}", bound.key)),
                "{key} = {value}: {err}"
            );
            if value <= u64::from(u32::MAX) {
                let named = format!("`{key}`: {}", bound.problem());
                assert!(err.contains(&named), "{key} = {value}: {err}");
            }
            assert!(err.len() <= 200 && !err.contains('\n'), "{err}");
        }
    }
}

// SPEC D2: every bound names a setting of `config/default.toml`, reads that same setting (the
// shipped value equals what its reader gives), and the shipped value lies within the bound.
#[test]
fn every_bound_names_a_shipped_setting_whose_default_is_within_it() {
    let tree = defaults();
    let config = Config::shipped_defaults();
    let mut count = 0;
    for bound in all() {
        let shipped = tree
            .find_ref(bound.key)
            .unwrap_or_else(|| panic!("{} is not in config/default.toml", bound.key));
        let mut from_file: Vec<(String, u64)> = match (&bound.read, shipped) {
            (Read::One(_), value) => vec![(bound.key.to_owned(), number(bound.key, value))],
            (Read::Each(_), Value::Dict(_, entries)) => entries
                .iter()
                .map(|(name, value)| (format!("{}.{name}", bound.key), number(name, value)))
                .collect(),
            (Read::Each(_), other) => panic!("{} is not a table: {other:?}", bound.key),
        };
        from_file.sort();
        let mut read = bound.values(&config);
        read.sort();
        assert_eq!(read, from_file, "{} reads another setting", bound.key);
        for (key, value) in read {
            assert!(
                (bound.least..=bound.most).contains(&value),
                "{key} = {value} is outside {}..={}",
                bound.least,
                bound.most
            );
        }
        count += 1;
    }
    assert!(count >= 60, "{count} bounds");
}

fn number(key: &str, value: &Value) -> u64 {
    value
        .to_num()
        .and_then(|n| n.to_i128())
        .and_then(|n| u64::try_from(n).ok())
        .unwrap_or_else(|| panic!("{key} is not a whole number: {value:?}"))
}

// SPEC D10: every number in `config/default.toml` has a bound: no setting is left unchecked.
#[test]
fn every_shipped_number_has_a_bound() {
    fn walk(path: &str, value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Dict(_, map) => {
                for (key, inner) in map {
                    let inner_path = if path.is_empty() {
                        key.clone()
                    } else {
                        format!("{path}.{key}")
                    };
                    walk(&inner_path, inner, out);
                }
            }
            Value::Num(..) => out.push(path.to_owned()),
            _ => {}
        }
    }
    let mut numbers = Vec::new();
    walk("", &defaults(), &mut numbers);
    assert!(numbers.len() >= 60, "{}", numbers.len());
    for path in numbers {
        let bounded = all().any(|bound| match bound.read {
            Read::One(_) => bound.key == path,
            Read::Each(_) => path
                .strip_prefix(bound.key)
                .is_some_and(|rest| rest.starts_with('.')),
        });
        assert!(bounded, "{path} has no bound");
    }
}

// SPEC D2: where the comment of a setting in `config/default.toml` states a range narrower than
// the week every duration has, it states the declared one ("At most N." or "FROM to TO").
#[test]
fn the_shipped_comments_state_the_declared_bounds() {
    for bound in all() {
        let week = matches!(
            (bound.unit, bound.most),
            (Unit::Secs, WEEK_SECS) | (Unit::Millis, WEEK_MS)
        );
        if week {
            continue;
        }
        let (section, key) = bound.key.rsplit_once('.').expect("section.key");
        let (_, in_section) = BUILT_IN_DEFAULTS
            .split_once(&format!("\n[{section}]\n"))
            .unwrap_or_else(|| panic!("no [{section}]"));
        let (before, _) = in_section
            .split_once(&format!("\n{key} = "))
            .unwrap_or_else(|| panic!("no {key} in [{section}]"));
        let comment: Vec<&str> = before
            .lines()
            .rev()
            .take_while(|line| line.starts_with('#'))
            .collect();
        let comment = comment.join(" ");
        let states = comment.contains(&format!("At most {}.", bound.most))
            || comment.contains(&format!("{} to {}", bound.least, bound.most));
        assert!(
            states,
            "{}: its comment should say At most {}. or {} to {}",
            bound.key, bound.most, bound.least, bound.most
        );
    }
}

// SPEC D2: the table of ranges in docs/configuration.md is exactly the one the bounds render,
// and the README links to it, so the documentation cannot drift from the checks.
#[test]
fn the_documented_table_is_the_rendered_bounds() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = std::fs::read_to_string(root.join("docs/configuration.md")).expect("read docs");
    let start = "<!-- bounds: generated by config::bound::markdown_table -->\n";
    let (_, rest) = docs.split_once(start).expect("the table's start marker");
    let (table, _) = rest.split_once("<!-- /bounds -->").expect("its end marker");
    let rendered = markdown_table();
    assert!(
        table == rendered,
        "docs/configuration.md's table differs; replace it with:\n{rendered}"
    );
    let readme = std::fs::read_to_string(root.join("README.md")).expect("read README");
    assert!(readme.contains("docs/configuration.md"), "README links it");
}
