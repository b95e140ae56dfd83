//! How a turn runs: its passes and failures, the channel queue, typing, `/kill`, and how a reply
//! is cut into messages.

use serde::Deserialize;

use super::bound::{Bound, DAY_SECS, Read, Unit, WEEK_MS, WEEK_SECS};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnConfig {
    /// The time zone the system prompt tells the date and time in (IANA name).
    pub time_zone: String,
    /// How long a process's claim on its queued messages lasts without renewal (SPEC D6).
    pub queue_lease_secs: u64,
    /// Most provider passes per turn (SPEC C9).
    pub max_passes: u32,
    /// Most consecutive failed tool calls before the turn ends (SPEC C9).
    pub max_consecutive_failures: u32,
    /// Most follow-ups one requester may send during their own turn (SPEC C7).
    pub max_follow_ups: u32,
    /// Most messages waiting in one channel (SPEC C3).
    pub queue_limit: usize,
    /// A turn with no progress this long outside a provider call or a tool is released (C10).
    pub stale_after_secs: u64,
    /// How often the typing indicator is renewed while a turn works.
    pub typing_interval_secs: u64,
    /// The first typing indicator waits this long, and is not sent if the turn has posted by
    /// then (a quick reply costs no typing request). At most a minute.
    pub typing_delay_ms: u64,
    /// A channel's worker with nothing running and nothing waiting for this long is stopped
    /// (a new message starts a new one), so idle channels hold no memory.
    pub worker_idle_secs: u64,
    /// Recent channel messages given to the model.
    pub history_messages: u8,
    /// How long `/kill` waits for the stopped turn to wind down before dropping it.
    pub kill_grace_ms: u64,
    /// How long a tool call that needs approval waits for Approve or Deny; no answer by then
    /// is a denial (SPEC E3).
    pub approval_timeout_secs: u64,
    /// The persona that answers unless a server picks another.
    pub default_persona: String,
    /// Who may `/kill` a turn: "requester_or_manager", "managers_only" or "anyone".
    pub kill_permission: KillPermission,
    /// Most messages one user may start turns with in any 60 s (SPEC C2); 0: no limit.
    pub user_messages_per_minute: u32,
    /// How a reply is cut into messages (SPEC C4).
    pub reply_style: ReplyStyle,
    /// Most messages a reply takes beyond what its length needs (one per ~1,900 characters).
    pub max_messages_per_reply: u32,
    /// A paragraph shorter than this many characters waits for the next one (`paragraphs`).
    pub short_paragraph_chars: u32,
    /// A waiting short paragraph is posted when the stream pauses this long, in milliseconds.
    pub paragraph_wait_ms: u64,
}

/// The ranges of this file's numeric settings ([`super::bound`] checks and documents them).
pub(super) const BOUNDS: &[Bound] = &[
    Bound {
        key: "turn.queue_lease_secs",
        least: 1,
        most: DAY_SECS,
        unit: Unit::Secs,
        read: Read::One(|c| c.turn.queue_lease_secs),
    },
    Bound {
        key: "turn.max_passes",
        least: 1,
        most: 100,
        unit: Unit::Count,
        read: Read::One(|c| c.turn.max_passes.into()),
    },
    Bound {
        key: "turn.max_consecutive_failures",
        least: 1,
        most: 100,
        unit: Unit::Count,
        read: Read::One(|c| c.turn.max_consecutive_failures.into()),
    },
    Bound {
        key: "turn.max_follow_ups",
        least: 0,
        most: 20,
        unit: Unit::Count,
        read: Read::One(|c| c.turn.max_follow_ups.into()),
    },
    Bound {
        key: "turn.queue_limit",
        least: 1,
        most: 1000,
        unit: Unit::Count,
        read: Read::One(|c| c.turn.queue_limit as u64),
    },
    Bound {
        key: "turn.stale_after_secs",
        least: 1,
        most: WEEK_SECS,
        unit: Unit::Secs,
        read: Read::One(|c| c.turn.stale_after_secs),
    },
    Bound {
        key: "turn.typing_interval_secs",
        least: 1,
        most: WEEK_SECS,
        unit: Unit::Secs,
        read: Read::One(|c| c.turn.typing_interval_secs),
    },
    Bound {
        key: "turn.typing_delay_ms",
        least: 0,
        most: 60_000,
        unit: Unit::Millis,
        read: Read::One(|c| c.turn.typing_delay_ms),
    },
    Bound {
        key: "turn.worker_idle_secs",
        least: 1,
        most: WEEK_SECS,
        unit: Unit::Secs,
        read: Read::One(|c| c.turn.worker_idle_secs),
    },
    Bound {
        key: "turn.history_messages",
        least: 1,
        most: 100,
        unit: Unit::Count,
        read: Read::One(|c| c.turn.history_messages.into()),
    },
    Bound {
        key: "turn.kill_grace_ms",
        least: 0,
        most: WEEK_MS,
        unit: Unit::Millis,
        read: Read::One(|c| c.turn.kill_grace_ms),
    },
    Bound {
        key: "turn.approval_timeout_secs",
        least: 1,
        most: 3600,
        unit: Unit::Secs,
        read: Read::One(|c| c.turn.approval_timeout_secs),
    },
    Bound {
        key: "turn.user_messages_per_minute",
        least: 0,
        most: 1000,
        unit: Unit::Count,
        read: Read::One(|c| c.turn.user_messages_per_minute.into()),
    },
    Bound {
        key: "turn.max_messages_per_reply",
        least: 1,
        most: 50,
        unit: Unit::Count,
        read: Read::One(|c| c.turn.max_messages_per_reply.into()),
    },
    Bound {
        key: "turn.short_paragraph_chars",
        least: 0,
        most: 2000,
        unit: Unit::Chars,
        read: Read::One(|c| c.turn.short_paragraph_chars.into()),
    },
    Bound {
        key: "turn.paragraph_wait_ms",
        least: 0,
        most: 60_000,
        unit: Unit::Millis,
        read: Read::One(|c| c.turn.paragraph_wait_ms),
    },
];

/// How a reply is cut into messages (SPEC C4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplyStyle {
    /// A message a paragraph, as a person texting, short paragraphs together, and at most
    /// `turn.max_messages_per_reply` messages beyond what the reply's length needs.
    Paragraphs,
    /// As few messages as the reply's length needs (one per ~1,900 characters).
    Compact,
}

impl ReplyStyle {
    /// Its name in settings, commands and `/status`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Paragraphs => "paragraphs",
            Self::Compact => "compact",
        }
    }

    /// From its stored name; `None` for anything else.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "paragraphs" => Some(Self::Paragraphs),
            "compact" => Some(Self::Compact),
            _ => None,
        }
    }
}

/// Who may stop a turn with `/kill` (SPEC C6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KillPermission {
    /// The author of the turn's trigger, and members with Manage Messages.
    RequesterOrManager,
    /// Only members with Manage Messages.
    ManagersOnly,
    /// Anyone in the channel.
    Anyone,
}
