//! Every numeric setting's allowed range, declared once beside its section (each section file's
//! `BOUNDS`), and what is made from those declarations: the check at load, its error line, and
//! the table in `docs/configuration.md`. Rules between two settings (a lease longer than a
//! timeout) are not bounds; they stay with the rest of the validation.

use super::{Config, ConfigError};

/// A week, in seconds: no duration may be longer, so arithmetic on a time plus a setting (or
/// ten times one, for a key's cooldown) cannot overflow at run time.
pub(super) const WEEK_SECS: u64 = 7 * 24 * 60 * 60;
/// A week, in milliseconds.
pub(super) const WEEK_MS: u64 = WEEK_SECS * 1000;
/// A day, in seconds.
pub(super) const DAY_SECS: u64 = 24 * 60 * 60;

/// One setting's inclusive range.
pub struct Bound {
    /// `section.key`; for a table of entries (`Read::Each`), the table's path.
    pub key: &'static str,
    pub least: u64,
    pub most: u64,
    pub unit: Unit,
    /// Where the value is in a loaded configuration.
    pub read: Read,
}

/// How a bounded setting is read from a loaded configuration.
pub enum Read {
    One(fn(&Config) -> u64),
    /// A table whose every entry has the same range, such as per-tool timeouts.
    Each(fn(&Config) -> Vec<(&str, u64)>),
}

/// What a bounded number counts; durations show it in their error line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Count,
    Chars,
    Bytes,
    Tokens,
    Secs,
    Millis,
}

impl Unit {
    fn name(self) -> &'static str {
        match self {
            Self::Count => "count",
            Self::Chars => "characters",
            Self::Bytes => "bytes",
            Self::Tokens => "tokens",
            Self::Secs => "seconds",
            Self::Millis => "milliseconds",
        }
    }

    /// Appended to a number in an error line: durations say their unit, counts need none.
    fn suffix(self) -> &'static str {
        match self {
            Self::Secs => " s",
            Self::Millis => " ms",
            _ => "",
        }
    }
}

/// Every section's bounds, file by file (listed in the parent module, which knows the sections:
/// a section uses this module, so this one names none of them).
pub fn all() -> impl Iterator<Item = &'static Bound> {
    super::SECTION_BOUNDS.iter().copied().flatten()
}

impl Bound {
    /// The error line's problem: the range, so the operator need not look it up.
    pub fn problem(&self) -> String {
        let unit = self.unit.suffix();
        format!("must be from {} to {}{unit}", self.least, self.most)
    }

    /// Each value this bound covers in `config`, with the key an error names.
    pub(super) fn values(&self, config: &Config) -> Vec<(String, u64)> {
        match self.read {
            Read::One(read) => vec![(self.key.to_owned(), read(config))],
            Read::Each(read) => read(config)
                .into_iter()
                .map(|(name, value)| (format!("{}.{}", self.key, super::cut(name)), value))
                .collect(),
        }
    }

    /// The key as the documentation shows it: a table's entries as `table.<name>`.
    fn shown_key(&self) -> String {
        match self.read {
            Read::One(_) => self.key.to_owned(),
            Read::Each(_) => format!("{}.<name>", self.key),
        }
    }
}

/// The first value outside its bound, as the error naming its key and range.
pub(super) fn check(config: &Config) -> Result<(), ConfigError> {
    for bound in all() {
        for (key, value) in bound.values(config) {
            if !(bound.least..=bound.most).contains(&value) {
                return Err(ConfigError::Key {
                    key,
                    problem: bound.problem(),
                });
            }
        }
    }
    Ok(())
}

/// The bounds as the Markdown table `docs/configuration.md` holds (a test keeps the two equal).
pub fn markdown_table() -> String {
    let mut table = String::from("| Setting | From | To | Unit |\n|---|---:|---:|---|\n");
    for bound in all() {
        table.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            bound.shown_key(),
            bound.least,
            bound.most,
            bound.unit.name()
        ));
    }
    table
}

#[cfg(test)]
mod tests;
