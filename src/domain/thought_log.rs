//! Moderator notices for the hidden thought-log channel: what they carry, how they render
//! (localized). Every free-text field is redacted ([`crate::redact`]) as it is rendered.
//!
//! The core decides *whether* a notice is posted (never from a DM or a private channel, SPEC
//! T11); the Discord adapter turns a rendered [`Card`] into an embed.

use crate::domain::scope::{ChannelId, UserId};
use crate::domain::turn::ToolEnding;
use crate::locale::{self, Locale};
pub use crate::redact::cut;
use crate::redact::redact_text;

/// What kind of failure a notice reports. The model and the thought log can tell these apart
/// (SPEC S4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureKind {
    UnknownTool,
    InvalidArguments,
    Denied,
    Truncated,
    /// Refused before running by deliberate tool mode or a per-turn rule.
    Blocked,
    /// The tool ran and failed.
    Execution,
    /// A valid call about something that does not exist (an unknown sticker name).
    Business,
    TimedOut,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnknownTool => "unknown_tool",
            Self::InvalidArguments => "invalid_arguments",
            Self::Denied => "tool_denied",
            Self::Truncated => "truncated_arguments",
            Self::Blocked => "blocked",
            Self::Execution => "execution_failed",
            Self::Business => "business_error",
            Self::TimedOut => "timed_out",
        }
    }

    fn label_key(self) -> &'static str {
        match self {
            Self::UnknownTool => "notice-kind-unknown-tool",
            Self::InvalidArguments => "notice-kind-invalid-arguments",
            Self::Denied => "notice-kind-denied",
            Self::Truncated => "notice-kind-truncated",
            Self::Blocked => "notice-kind-blocked",
            Self::Execution => "notice-kind-execution",
            Self::Business => "notice-kind-business",
            Self::TimedOut => "notice-kind-timed-out",
        }
    }
}

/// A notice for the thought log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A tool call failed or was refused. `arguments` are already redacted.
    ToolFailed {
        tool: String,
        kind: FailureKind,
        code: String,
        reason: String,
        arguments: String,
        /// A timed-out tool, told to stop: how it ended within its grace (SPEC T5, row 30).
        ending: Option<ToolEnding>,
    },
    /// `/kill` stopped a running tool: how it ended within its grace (SPEC C6, T5, row 30).
    /// `arguments` are already redacted.
    ToolStopped {
        tool: String,
        ending: ToolEnding,
        arguments: String,
    },
    /// Deliberate tool mode admitted a tool because the user's message matched a trigger.
    DeliberateTrigger { tool: String, trigger: String },
    /// A quiet turn's progress, as a full card instead of a line in the conversation.
    Progress {
        channel: ChannelId,
        tool: String,
        text: String,
    },
    /// What one turn did: its end, passes, tool calls, time and tokens.
    TurnSummary {
        channel: ChannelId,
        status: String,
        passes: u32,
        tool_calls: u32,
        duration_ms: u64,
        prompt_tokens: u32,
        completion_tokens: u32,
        /// Each review verdict, one line each (`plan_image: reject (too graphic)`).
        reviews: Vec<String>,
    },
    /// A turn the bot would start itself (a due reminder) in a channel the server's rules close
    /// to it: not run (SPEC C2).
    QuietTurnSkipped { channel: ChannelId },
    /// A moderator changed a setting from Discord (a slash command).
    SettingsChanged { by: UserId, change: String },
    /// A reply stopped at the model's token limit (`finish_reason: length`); the reply says so.
    ReplyCut { channel: ChannelId },
    /// Older messages were left out of a request to fit the model's context window.
    ContextTrimmed {
        channel: ChannelId,
        /// Messages left out of the request.
        left_out: u32,
    },
    /// A tool call asked for approval (SPEC E3): what it would do, and what became of it
    /// (`approved`, `denied`, `timed_out`, `pending` when `/kill` withdrew it), and by whom.
    Approval {
        tool: String,
        what: String,
        outcome: String,
        by: Option<UserId>,
    },
    /// A member gave a reply 👍 or 👎 (SPEC E2): who, which, and the reply's counts now.
    Feedback {
        channel: ChannelId,
        by: UserId,
        verdict: crate::domain::buttons::Verdict,
        tally: crate::domain::buttons::Tally,
    },
    /// A catch-up after a gap in the gateway session read what was missed (SPEC D9).
    CaughtUp {
        /// Channels read.
        channels: u32,
        /// Messages addressed to the bot found unanswered.
        found: u32,
        /// Of those, the ones queued to be answered (the rest were not admitted).
        answered: u32,
    },
}

/// A rendered notice: the adapter maps it to an embed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Card {
    pub title: String,
    pub fields: Vec<(String, String)>,
    /// Embed colour (0xRRGGBB).
    pub colour: u32,
}

impl Card {
    /// What a card builder given another kind of notice returns (render never does that).
    fn empty() -> Self {
        Self {
            title: String::new(),
            fields: Vec::new(),
            colour: GREY,
        }
    }
}

const RED: u32 = 0xD9_3F_3F;
const BLUE: u32 = 0x3F_7F_D9;
const GREY: u32 = 0x80_80_80;

/// A tool `/kill` stopped, and how it ended (done, cancelled, may still finish).
fn tool_stopped(notice: &Notice, t: &dyn Fn(&str) -> String) -> Card {
    let Notice::ToolStopped {
        tool,
        ending,
        arguments,
    } = notice
    else {
        unreachable!("tool_stopped renders ToolStopped only");
    };
    Card {
        title: t("notice-tool-stopped-title"),
        fields: vec![
            (t("notice-field-tool"), format!("`{tool}`")),
            (t("notice-field-effect"), t(ending_key(*ending))),
            (
                t("notice-field-arguments"),
                format!("```json\n{arguments}\n```"),
            ),
        ],
        colour: GREY,
    }
}

/// Renders a notice in the server's locale. Every field value passes through the redactor
/// here, once, whatever the notice: free text may quote a secret.
pub fn render(notice: &Notice, locale: Locale) -> Card {
    let t = |key: &str| locale::text(locale, key);
    let mut card = match notice {
        Notice::ToolFailed { .. } => tool_failed(notice, &t),
        Notice::ToolStopped { .. } => tool_stopped(notice, &t),
        Notice::DeliberateTrigger { tool, trigger } => Card {
            title: t("notice-deliberate-title"),
            fields: vec![
                (t("notice-field-tool"), format!("`{tool}`")),
                (t("notice-field-trigger"), format!("\"{trigger}\"")),
            ],
            colour: BLUE,
        },
        Notice::Progress {
            channel,
            tool,
            text,
        } => Card {
            title: t("notice-progress-title"),
            fields: vec![
                (t("notice-field-channel"), format!("<#{channel}>")),
                (t("notice-field-tool"), format!("`{tool}`")),
                (t("notice-field-progress"), text.clone()),
            ],
            colour: GREY,
        },
        Notice::TurnSummary { .. } => turn_summary(notice, &t),
        Notice::QuietTurnSkipped { channel } => Card {
            title: t("notice-quiet-skipped-title"),
            fields: vec![
                (t("notice-field-channel"), format!("<#{channel}>")),
                (t("notice-field-reason"), t("notice-quiet-skipped-reason")),
            ],
            colour: GREY,
        },
        Notice::SettingsChanged { by, change } => Card {
            title: t("notice-settings-title"),
            fields: vec![
                (t("notice-field-by"), format!("<@{by}>")),
                (t("notice-field-change"), cut(change, 200)),
            ],
            colour: GREY,
        },
        Notice::ReplyCut { channel } => Card {
            title: t("notice-reply-cut-title"),
            fields: vec![
                (t("notice-field-channel"), format!("<#{channel}>")),
                (t("notice-field-reason"), t("notice-reply-cut-reason")),
            ],
            colour: GREY,
        },
        Notice::ContextTrimmed { channel, left_out } => Card {
            title: t("notice-context-trimmed-title"),
            fields: vec![
                (t("notice-field-channel"), format!("<#{channel}>")),
                (t("notice-field-left-out"), left_out.to_string()),
            ],
            colour: GREY,
        },
        Notice::Approval { .. } => approval(notice, &t),
        Notice::Feedback { .. } => feedback(notice, &t),
        Notice::CaughtUp {
            channels,
            found,
            answered,
        } => Card {
            title: t("notice-caught-up-title"),
            fields: vec![
                (t("notice-field-channels-read"), channels.to_string()),
                (t("notice-field-missed"), found.to_string()),
                (t("notice-field-answered"), answered.to_string()),
            ],
            colour: BLUE,
        },
    };
    for (_, value) in &mut card.fields {
        *value = redact_text(value);
    }
    card
}

/// The card of a [`Notice::Approval`] (SPEC E3).
fn approval(notice: &Notice, t: &dyn Fn(&str) -> String) -> Card {
    let Notice::Approval {
        tool,
        what,
        outcome,
        by,
    } = notice
    else {
        return Card::empty();
    };
    let outcome = match by {
        Some(by) => format!("{outcome} (<@{by}>)"),
        None => outcome.clone(),
    };
    Card {
        title: t("notice-approval-title"),
        fields: vec![
            (t("notice-field-tool"), format!("`{tool}`")),
            (t("notice-field-what"), cut(what, 300)),
            (t("notice-field-outcome"), outcome),
        ],
        colour: BLUE,
    }
}

/// The card of a [`Notice::Feedback`] (SPEC E2).
fn feedback(notice: &Notice, t: &dyn Fn(&str) -> String) -> Card {
    let Notice::Feedback {
        channel,
        by,
        verdict,
        tally,
    } = notice
    else {
        return Card::empty();
    };
    let verdict = match verdict {
        crate::domain::buttons::Verdict::Up => "👍",
        crate::domain::buttons::Verdict::Down => "👎",
    };
    Card {
        title: t("notice-feedback-title"),
        fields: vec![
            (t("notice-field-channel"), format!("<#{channel}>")),
            (t("notice-field-by"), format!("<@{by}>")),
            (t("notice-field-verdict"), verdict.to_owned()),
            (
                t("notice-field-feedback"),
                format!("👍 {} · 👎 {}", tally.up, tally.down),
            ),
        ],
        colour: BLUE,
    }
}

/// The card of a [`Notice::ToolFailed`].
fn tool_failed(notice: &Notice, t: &dyn Fn(&str) -> String) -> Card {
    let Notice::ToolFailed {
        tool,
        kind,
        code,
        reason,
        arguments,
        ending,
    } = notice
    else {
        return Card::empty();
    };
    let mut fields = vec![
        (t("notice-field-tool"), format!("`{tool}`")),
        (t("notice-field-kind"), t(kind.label_key())),
        (t("notice-field-code"), format!("`{code}`")),
        (t("notice-field-reason"), reason.clone()),
        (
            t("notice-field-arguments"),
            format!("```json\n{arguments}\n```"),
        ),
    ];
    if let Some(ending) = ending {
        fields.push((t("notice-field-effect"), t(ending_key(*ending))));
    }
    Card {
        title: t("notice-tool-failed-title"),
        fields,
        colour: RED,
    }
}

/// What a stopped tool's ending means, for moderators.
fn ending_key(ending: ToolEnding) -> &'static str {
    match ending {
        ToolEnding::Done => "notice-ending-done",
        ToolEnding::Cancelled => "notice-ending-cancelled",
        ToolEnding::MayStillFinish => "notice-ending-may-still-finish",
    }
}

/// The card of a [`Notice::TurnSummary`].
fn turn_summary(notice: &Notice, t: &dyn Fn(&str) -> String) -> Card {
    let Notice::TurnSummary {
        channel,
        status,
        passes,
        tool_calls,
        duration_ms,
        prompt_tokens,
        completion_tokens,
        reviews,
    } = notice
    else {
        return Card::empty();
    };
    let mut fields = vec![
        (t("notice-field-channel"), format!("<#{channel}>")),
        (t("notice-field-status"), format!("`{status}`")),
        (t("notice-field-passes"), passes.to_string()),
        (t("notice-field-tool-calls"), tool_calls.to_string()),
        (
            t("notice-field-duration"),
            format!("{:.1} s", *duration_ms as f64 / 1000.0),
        ),
        (
            t("notice-field-tokens"),
            format!("{prompt_tokens} / {completion_tokens}"),
        ),
    ];
    if !reviews.is_empty() {
        fields.push((t("notice-field-reviews"), reviews.join("\n")));
    }
    Card {
        title: t("notice-turn-title"),
        fields,
        colour: GREY,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // SPEC T11, D3: notices render in the server's language.
    #[test]
    fn notices_render_localized() {
        let notice = Notice::ToolFailed {
            tool: "plan_image".into(),
            kind: FailureKind::TimedOut,
            code: "tool_timeout".into(),
            reason: "timed out".into(),
            arguments: "{}".into(),
            ending: Some(ToolEnding::MayStillFinish),
        };
        let en = render(&notice, Locale::En);
        let ja = render(&notice, Locale::Ja);
        assert_ne!(en.title, ja.title);
        assert_eq!(en.fields.len(), 6);
        assert!(
            en.fields
                .iter()
                .all(|(k, v)| !k.starts_with("notice-") && !v.starts_with("notice-"))
        );
    }
}
