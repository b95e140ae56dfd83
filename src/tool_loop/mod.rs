//! The tool-call stage: [`execute_tool_call`] takes one function call from the model and, through
//! an ordered series of gates, decides whether and how it runs, then hands the loop exactly one
//! [`ToolCallOutcome`].
//!
//! Gates, in order: payload (SPEC T1), stop request (T2), truncated arguments (T3), deliberate
//! tool mode (T4), role authorization and argument validation (S2, T12), reuse of a completed
//! outcome (R4), review with drafting On (R1-R5, `review_gate`), then the tool under its watchdog
//! (T5). The stage reaches the outside only through the ports on the session's
//! [`crate::tools::ToolEnv`].

pub mod deliberate;
mod execute;
pub mod expression;
pub mod payload;
mod review_gate;
pub mod watchdog;

pub use crate::domain::call::{ToolCallRequest, Truncation};
pub use execute::execute_tool_call;

use crate::domain::history::ToolHistoryEntry;
use crate::domain::turn::TurnStatus;

/// What the loop does after one tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCallOutcome {
    /// A context-restart tool fed the turn new context: reset the error counters and run the
    /// pass again, with no history entry for the call (SPEC T6).
    Restart,
    /// End the turn now with this status.
    Abort { status: TurnStatus },
    /// Append the entry to history and continue the tool chain.
    History { entry: ToolHistoryEntry },
}
