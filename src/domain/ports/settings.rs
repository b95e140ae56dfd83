//! Server settings: access lists, deliberate tool mode, random triggers, review (SPEC C1, C2, T4,
//! C8), changed one atomic update at a time.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::PortError;
use super::personas::Persona;
use crate::config::ReplyStyle;
use crate::domain::review::ReviewPolicy;
use crate::domain::scope::{ChannelId, ServerId};

/// A server's deliberate-tool-mode settings (SPEC T4).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliberateSettings {
    pub enabled: bool,
    /// Extra trigger phrases per tool name.
    #[serde(default)]
    pub custom_phrases: BTreeMap<String, Vec<String>>,
}

/// Who may trigger turns where (SPEC C2): block beats allow; empty allow lists allow everyone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessLists {
    #[serde(default)]
    pub allowed_channels: Vec<ChannelId>,
    #[serde(default)]
    pub blocked_channels: Vec<ChannelId>,
    /// Discord role ids.
    #[serde(default)]
    pub allowed_roles: Vec<u64>,
    #[serde(default)]
    pub blocked_roles: Vec<u64>,
    /// Channels where every message triggers a turn (SPEC C1).
    #[serde(default)]
    pub always_reply_channels: Vec<ChannelId>,
}

/// One server's settings; a server never configured has the defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerSettings {
    /// Response Drafting (SPEC C8).
    pub drafting: bool,
    /// The hidden moderators' channel (SPEC T11); `None` means no thought log.
    pub thought_log_channel: Option<ChannelId>,
    pub deliberate: DeliberateSettings,
    pub access: AccessLists,
    /// What Response Drafting's reviewer checks here (SPEC C8).
    pub review: ReviewPolicy,
    /// Random quiet turns (off by default).
    pub random: RandomTriggers,
    /// The server's own persona, a copy of a template it edits freely (SPEC A1); `None`: the
    /// deployment's default persona.
    pub persona: Option<Persona>,
    /// Which finished turns post a summary card to the thought log (SPEC T11).
    pub summaries: SummaryMode,
    /// How replies are cut into messages here (SPEC C4); `None`: the deployment's
    /// `turn.reply_style`.
    pub reply_style: Option<ReplyStyle>,
    /// Status reactions on the message a turn answers: 👀 while it runs, ⚙️ while a tool runs,
    /// ❌ kept on a failed turn (SPEC E1). Off unless a moderator turns them on.
    pub status_reactions: bool,
    /// Replies carry no buttons (SPEC E2): they do unless a moderator turns them off, so the
    /// default (`false`) is "shown".
    pub hide_buttons: bool,
    /// Who decides a tool call that needs approval here (SPEC E3).
    pub approvers: crate::domain::approvals::Approvers,
    /// The MCP servers whose tools are offered here (SPEC E4): none unless a moderator turns
    /// one on. Names of servers the deployment no longer has are kept, and offer nothing.
    pub mcp_servers: Vec<String>,
}

/// An MCP server's tools on or off in a server's list (kept sorted, each name once).
fn turn_mcp(servers: &mut Vec<String>, server: String, on: bool) {
    servers.retain(|s| *s != server);
    if on {
        servers.push(server);
        servers.sort();
    }
}

/// Which finished turns post a "Turn summary" card to the thought log: a busy
/// server's every turn was a post in a channel whose own limit is five posts in five seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SummaryMode {
    /// None.
    Off,
    /// Only turns that did not end cleanly (see [`SummaryMode::posts`]).
    #[default]
    Problems,
    /// Every turn.
    All,
}

impl SummaryMode {
    /// Whether a turn's summary is posted; `troubled`: it did not end cleanly (an error, a
    /// provider failure, a pass or failure limit, `/kill`, an unconfirmed delivery, a release,
    /// review stopping the tool chain).
    pub fn posts(self, troubled: bool) -> bool {
        match self {
            Self::Off => false,
            Self::Problems => troubled,
            Self::All => true,
        }
    }

    /// Its stored and shown name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Problems => "problems",
            Self::All => "all",
        }
    }

    /// From its stored name; anything else is the default.
    pub fn from_name(name: &str) -> Self {
        match name {
            "off" => Self::Off,
            "all" => Self::All,
            _ => Self::Problems,
        }
    }
}

/// One change a moderator makes to a server's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingsChange {
    Drafting(bool),
    ThoughtLog(Option<ChannelId>),
    /// Random quiet turns on or off; a chance or hourly bound given is clamped to its range.
    Random {
        enabled: bool,
        percent: Option<u8>,
        per_hour: Option<u32>,
    },
    /// A channel's rule: allowed, blocked, always answered, or none of these (SPEC C1, C2).
    Channel {
        channel: ChannelId,
        rule: ChannelRule,
    },
    /// A role's rule: allowed, blocked, or neither (SPEC C2).
    Role {
        role: u64,
        rule: RoleRule,
    },
    /// Deliberate tool mode on or off (SPEC T4).
    Deliberate(bool),
    /// Which turns post a summary to the thought log.
    Summaries(SummaryMode),
    /// How replies are cut into messages (`None`: the deployment's style again, SPEC C4).
    ReplyStyle(Option<ReplyStyle>),
    /// Status reactions on or off (SPEC E1).
    StatusReactions(bool),
    /// Buttons on replies shown or not (SPEC E2).
    Buttons(bool),
    /// Who decides approvals (SPEC E3).
    Approvers(crate::domain::approvals::Approvers),
    /// An MCP server's tools on or off here (SPEC E4).
    Mcp {
        server: String,
        on: bool,
    },
    /// What Response Drafting reviews (tool calls, replies) and with which model (`Some(None)`:
    /// the configured ones again); `None` leaves a part as it is (SPEC C8).
    Review {
        drafting: bool,
        checks: Option<(bool, bool)>,
        model: Option<Option<String>>,
        /// The server's own reviewer prompt (`Some(None)`: the configured one again).
        prompt: Option<Option<String>>,
    },
    /// The server's own persona replaced (`None`: the deployment's default again), its fields
    /// cut to their bounds (SPEC A1).
    Persona(Option<Persona>),
    /// A server's own trigger phrase for a tool, added or removed (SPEC T4).
    Phrase {
        tool: String,
        phrase: String,
        add: bool,
    },
}

/// Longest reviewer prompt a server sets, in characters (a modal field's limit).
pub const REVIEW_PROMPT_MAX_CHARS: usize = 4000;

/// Most phrases a server adds for one tool.
pub const PHRASES_PER_TOOL: usize = 20;
/// Longest phrase, in characters.
pub const PHRASE_MAX_CHARS: usize = 50;

/// What `/channels` sets for a channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelRule {
    Allow,
    Block,
    Always,
    Clear,
}

/// What `/roles` sets for a role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleRule {
    Allow,
    Block,
    Clear,
}

/// Most entries in one access list: past it a new entry is refused (the command says so).
pub const ACCESS_LIST_MAX: usize = 200;

/// `list` with `item` in it (`keep`) or out of it; a full list takes nothing new.
fn set_in<T: PartialEq>(list: &mut Vec<T>, item: T, keep: bool) {
    let present = list.contains(&item);
    if keep && !present && list.len() < ACCESS_LIST_MAX {
        list.push(item);
    } else if !keep {
        list.retain(|x| *x != item);
    }
}

/// A `/drafting` change to the review policy: each part given replaces its own.
fn apply_review(
    review: &mut ReviewPolicy,
    checks: Option<(bool, bool)>,
    model: Option<Option<String>>,
    prompt: Option<Option<String>>,
) {
    if let Some(prompt) = prompt {
        review.prompt = prompt
            .map(|p| p.trim().chars().take(REVIEW_PROMPT_MAX_CHARS).collect())
            .filter(|p: &String| !p.is_empty());
    }
    if let Some((tool_calls, replies)) = checks {
        review.tool_calls = tool_calls;
        review.replies = replies;
    }
    if let Some(model) = model {
        review.model = model.map(|m| m.trim().chars().take(100).collect());
    }
}

impl SettingsChange {
    pub fn apply(self, settings: &mut ServerSettings) {
        match self {
            Self::Drafting(on) => settings.drafting = on,
            Self::ThoughtLog(channel) => settings.thought_log_channel = channel,
            Self::Random {
                enabled,
                percent,
                per_hour,
            } => {
                let random = &mut settings.random;
                random.enabled = enabled;
                if let Some(percent) = percent {
                    random.percent = percent.clamp(1, 100);
                }
                if let Some(per_hour) = per_hour {
                    random.per_hour = per_hour.clamp(1, 60);
                }
            }
            Self::Channel { channel, rule } => {
                let a = &mut settings.access;
                // Block beats allow when both are set (SPEC C2); a rule replaces the others,
                // except that an always-answered channel is also allowed.
                let (allow, block, always) = match rule {
                    ChannelRule::Allow => (true, false, false),
                    ChannelRule::Block => (false, true, false),
                    ChannelRule::Always => (!a.allowed_channels.is_empty(), false, true),
                    ChannelRule::Clear => (false, false, false),
                };
                set_in(&mut a.allowed_channels, channel, allow);
                set_in(&mut a.blocked_channels, channel, block);
                set_in(&mut a.always_reply_channels, channel, always);
            }
            Self::Role { role, rule } => {
                let a = &mut settings.access;
                set_in(&mut a.allowed_roles, role, rule == RoleRule::Allow);
                set_in(&mut a.blocked_roles, role, rule == RoleRule::Block);
            }
            Self::Deliberate(on) => settings.deliberate.enabled = on,
            Self::Summaries(mode) => settings.summaries = mode,
            Self::ReplyStyle(style) => settings.reply_style = style,
            Self::StatusReactions(on) => settings.status_reactions = on,
            Self::Buttons(on) => settings.hide_buttons = !on,
            Self::Approvers(approvers) => settings.approvers = approvers,
            Self::Mcp { server, on } => turn_mcp(&mut settings.mcp_servers, server, on),
            Self::Review {
                drafting,
                checks,
                model,
                prompt,
            } => {
                settings.drafting = drafting;
                apply_review(&mut settings.review, checks, model, prompt);
            }
            Self::Persona(persona) => settings.persona = persona.map(Persona::bounded),
            Self::Phrase { tool, phrase, add } => {
                let phrase: String = phrase
                    .trim()
                    .to_lowercase()
                    .chars()
                    .take(PHRASE_MAX_CHARS)
                    .collect();
                let phrases = settings
                    .deliberate
                    .custom_phrases
                    .entry(tool.clone())
                    .or_default();
                let room = phrases.len() < PHRASES_PER_TOOL;
                if add && !phrase.is_empty() && !phrases.contains(&phrase) && room {
                    phrases.push(phrase);
                } else if !add {
                    phrases.retain(|p| *p != phrase);
                }
                if phrases.is_empty() {
                    settings.deliberate.custom_phrases.remove(&tool);
                }
            }
        }
    }
}

/// Random triggers: a small chance per message, in channels the server allows, to start a quiet
/// turn; bounded per server per hour.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RandomTriggers {
    #[serde(default)]
    pub enabled: bool,
    /// Chance per message, in percent.
    #[serde(default = "two")]
    pub percent: u8,
    /// Most random turns per server per hour.
    #[serde(default = "three")]
    pub per_hour: u32,
}

fn two() -> u8 {
    2
}

fn three() -> u32 {
    3
}

impl Default for RandomTriggers {
    fn default() -> Self {
        Self {
            enabled: false,
            percent: two(),
            per_hour: three(),
        }
    }
}

#[async_trait]
pub trait SettingsStore: Send + Sync {
    /// The server's settings, or the defaults when it has none stored.
    async fn settings(&self, server: ServerId) -> Result<ServerSettings, PortError>;
    async fn save_settings(
        &self,
        server: ServerId,
        settings: &ServerSettings,
    ) -> Result<(), PortError>;

    /// Applies one change to the stored settings and returns the result. A store shared by
    /// several processes does it atomically, on the stored row (not a cached copy), so two
    /// moderators changing two settings at once both win. This default (read, change, save)
    /// suits a store only one process uses.
    async fn update(
        &self,
        server: ServerId,
        change: SettingsChange,
    ) -> Result<ServerSettings, PortError> {
        let mut settings = self.settings(server).await?;
        change.apply(&mut settings);
        self.save_settings(server, &settings).await?;
        Ok(settings)
    }
}

#[cfg(test)]
mod access_tests {
    use super::*;

    // Access: a channel has one rule at a time (an always-answered channel stays
    // allowed where an allow list exists); clear removes every rule; a full list takes nothing.
    #[test]
    fn channel_and_role_rules_replace_each_other() {
        let mut s = ServerSettings::default();
        let (a, b) = (ChannelId(1), ChannelId(2));
        SettingsChange::Channel {
            channel: a,
            rule: ChannelRule::Allow,
        }
        .apply(&mut s);
        SettingsChange::Channel {
            channel: a,
            rule: ChannelRule::Block,
        }
        .apply(&mut s);
        assert_eq!(
            (
                s.access.allowed_channels.len(),
                s.access.blocked_channels.clone()
            ),
            (0, vec![a])
        );
        SettingsChange::Channel {
            channel: b,
            rule: ChannelRule::Allow,
        }
        .apply(&mut s);
        SettingsChange::Channel {
            channel: a,
            rule: ChannelRule::Always,
        }
        .apply(&mut s);
        assert!(s.access.allowed_channels.contains(&a) && s.access.blocked_channels.is_empty());
        assert_eq!(s.access.always_reply_channels, vec![a]);
        SettingsChange::Channel {
            channel: a,
            rule: ChannelRule::Clear,
        }
        .apply(&mut s);
        assert_eq!(s.access.allowed_channels, vec![b]);
        assert!(s.access.always_reply_channels.is_empty());
        SettingsChange::Role {
            role: 9,
            rule: RoleRule::Block,
        }
        .apply(&mut s);
        SettingsChange::Role {
            role: 9,
            rule: RoleRule::Allow,
        }
        .apply(&mut s);
        assert_eq!(
            (s.access.allowed_roles.clone(), s.access.blocked_roles.len()),
            (vec![9], 0)
        );
        for role in 100..400 {
            SettingsChange::Role {
                role,
                rule: RoleRule::Block,
            }
            .apply(&mut s);
        }
        assert_eq!(s.access.blocked_roles.len(), ACCESS_LIST_MAX);
    }
}
