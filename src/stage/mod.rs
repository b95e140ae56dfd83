//! The tool-call stage: [`execute_tool_call`] takes one function call from the model and, through
//! an ordered series of gates, decides whether and how it runs, then hands the loop exactly one
//! [`ToolCallOutcome`].
//!
//! Gates, in order: payload (SPEC T1), stop request (T2), truncated arguments (T3), deliberate
//! tool mode (T4), role authorization and argument validation (S2, T12), reuse of a completed
//! outcome (R4), review with drafting On (R1-R5, `review_gate`), then the tool under its watchdog
//! (T5). The stage reaches the outside only through the ports on the session's
//! [`crate::tools::ToolEnv`].

mod approval;
pub mod deliberate;
mod execute;
pub mod expression;
pub mod payload;
mod review_gate;
pub mod watchdog;

pub use crate::domain::call::{ToolCallRequest, Truncation};
pub use execute::execute_tool_call;

use crate::domain::history::ToolHistoryEntry;
use crate::domain::ports::HistoryMessage;
use crate::domain::scope::MessageId;
use crate::domain::turn::TurnStatus;

/// What the loop does after one tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCallOutcome {
    /// A context-restart tool brought new context: the turn that owns its context takes it,
    /// resets the error counters and runs the pass again, with no history entry for the call
    /// (SPEC T6).
    Restart(Restart),
    /// End the turn now with this status.
    Abort { status: TurnStatus },
    /// Append the entry to history and continue the tool chain.
    History { entry: ToolHistoryEntry },
}

/// Older messages a context-restart tool fetched, handed back to the turn that owns the context.
#[derive(Debug, Clone, PartialEq)]
pub struct Restart {
    pub messages: Vec<HistoryMessage>,
    /// The oldest of them: where older history now continues.
    pub oldest: MessageId,
}
