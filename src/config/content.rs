//! What one turn may hold: tool timeouts, memory sizes, image plans, thought-log cuts, and the
//! deliberate-mode keyword packs.

use std::collections::BTreeMap;

use serde::Deserialize;

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

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeliberateConfig {
    /// Keyword packs: tool name, then locale tag, then trigger phrases.
    pub keywords: BTreeMap<String, BTreeMap<String, Vec<String>>>,
}
