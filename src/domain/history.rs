//! Tool history entries: one tool call and its response, as the model will see them in the next
//! pass (SPEC T6).

use serde_json::Value;

/// How an entry counts for the loop's policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryStatus {
    Succeeded,
    /// Counts toward the consecutive-failure cap (SPEC C9), truncated calls included (SPEC T3).
    Failed,
    /// A reviewer rejected the request; nothing ran (SPEC R2).
    ReviewRejected,
}

/// One call and its response, packaged for history.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolHistoryEntry {
    /// The provider's call id (echoed back with the result).
    pub call_id: String,
    pub tool_name: String,
    /// The arguments as history will show them: canonical JSON when they parsed, `{}` when they
    /// did not (a broken string must not be replayed to the provider).
    pub arguments: String,
    /// The payload the model sees: `{result, message?}` or the failure object.
    pub response: Value,
    /// Visible text streamed before the call in the same pass; empty when it was only white space.
    pub pre_tool_text: Vec<String>,
    pub status: EntryStatus,
}
