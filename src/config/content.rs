//! What one turn may hold: tool timeouts, memory sizes, image plans, thought-log cuts, and the
//! deliberate-mode keyword packs.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::bound::{Bound, Read, Unit, WEEK_SECS};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsConfig {
    /// Watchdog timeout for a tool without its own entry in `timeouts_secs`.
    pub default_timeout_secs: u64,
    /// Per-tool watchdog timeouts, by tool name.
    pub timeouts_secs: BTreeMap<String, u64>,
    /// Most messages one `fetch_older_messages` call may bring into context.
    pub older_messages_max: u8,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryConfig {
    /// Longest short-term (channel working) summary, in characters.
    pub summary_max_chars: usize,
    /// Longest single long-term fact, in characters.
    pub fact_max_chars: usize,
    /// Most server-wide facts a persona keeps per server.
    pub facts_per_server: u32,
    /// Most facts a persona keeps about one user.
    pub facts_per_user: u32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageConfig {
    /// Most distinct image plans one turn may record.
    pub max_plans_per_turn: u32,
    /// Longest image prompt, in characters.
    pub prompt_max_chars: usize,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThoughtLogConfig {
    /// Free-text argument values longer than this are cut in notices and tool events.
    pub argument_max_chars: usize,
}

/// The ranges of this file's numeric settings ([`super::bound`] checks and documents them).
pub(super) const BOUNDS: &[Bound] = &[
    Bound {
        key: "tools.default_timeout_secs",
        least: 1,
        most: WEEK_SECS,
        unit: Unit::Secs,
        read: Read::One(|c| c.tools.default_timeout_secs),
    },
    Bound {
        key: "tools.older_messages_max",
        least: 1,
        most: 100,
        unit: Unit::Count,
        read: Read::One(|c| c.tools.older_messages_max.into()),
    },
    Bound {
        key: "tools.timeouts_secs",
        least: 1,
        most: WEEK_SECS,
        unit: Unit::Secs,
        read: Read::Each(|c| {
            c.tools
                .timeouts_secs
                .iter()
                .map(|(k, v)| (k.as_str(), *v))
                .collect()
        }),
    },
    Bound {
        key: "memory.summary_max_chars",
        least: 1,
        most: 20000,
        unit: Unit::Chars,
        read: Read::One(|c| c.memory.summary_max_chars as u64),
    },
    Bound {
        key: "memory.fact_max_chars",
        least: 1,
        most: 2000,
        unit: Unit::Chars,
        read: Read::One(|c| c.memory.fact_max_chars as u64),
    },
    Bound {
        key: "memory.facts_per_server",
        least: 0,
        most: 10000,
        unit: Unit::Count,
        read: Read::One(|c| c.memory.facts_per_server.into()),
    },
    Bound {
        key: "memory.facts_per_user",
        least: 0,
        most: 1000,
        unit: Unit::Count,
        read: Read::One(|c| c.memory.facts_per_user.into()),
    },
    Bound {
        key: "image.max_plans_per_turn",
        least: 1,
        most: 16,
        unit: Unit::Count,
        read: Read::One(|c| c.image.max_plans_per_turn.into()),
    },
    Bound {
        key: "image.prompt_max_chars",
        least: 1,
        most: 4000,
        unit: Unit::Chars,
        read: Read::One(|c| c.image.prompt_max_chars as u64),
    },
    Bound {
        key: "thought_log.argument_max_chars",
        least: 1,
        most: 1000,
        unit: Unit::Chars,
        read: Read::One(|c| c.thought_log.argument_max_chars as u64),
    },
];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeliberateConfig {
    /// Keyword packs: tool name, then locale tag, then trigger phrases.
    pub keywords: BTreeMap<String, BTreeMap<String, Vec<String>>>,
}
