//! The payloads the model sees for a tool call: success (SPEC T7), failure and refusal (SPEC T8),
//! review rejection (SPEC R2) and the sticker answers (SPEC T9). Every text a model reads as a
//! tool result is built here, for the normal entry, the reusable outcome, the restart entry kept
//! for review, the pass loop's refusals, the reviewer and the hidden image agent alike.

use serde_json::{Value, json};

use crate::domain::ports::Expression;
use crate::domain::provider_failure::recovery_tips;
use crate::domain::thought_log::FailureKind;
use crate::domain::turn::ToolEnding;
use crate::locale::Locale;
use crate::stage::Truncation;
use crate::tools::{SessionError, ToolError, ToolOutput};

/// Delivery instructions that are the stage's business, never the model's.
const INTERNAL_FIELDS: &[&str] = &[
    "response_delivered",
    "responseDelivered",
    "end_turn",
    "endTurn",
    "sticker_selection",
    "stickerSelection",
];

/// `{ result, message? }`: `result` is the tool's data, or `{"status":"completed"}` when it
/// returned none; `message` sits beside `result`, so a data object's own `message` field stays
/// inside `result`.
pub fn success_payload(output: &ToolOutput) -> Value {
    let mut result = output
        .data
        .clone()
        .unwrap_or_else(|| json!({ "status": "completed" }));
    if let Value::Object(map) = &mut result {
        for field in INTERNAL_FIELDS {
            map.remove(*field);
        }
    }
    let mut payload = serde_json::Map::new();
    payload.insert("result".to_owned(), result);
    if let Some(message) = &output.message {
        payload.insert("message".to_owned(), Value::String(message.clone()));
    }
    Value::Object(payload)
}

/// An expression the turn's allowance kept back (SPEC T9, E1): still a success (T7), whose
/// result says nothing was sent, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpressionWithheld {
    /// This same expression was already sent this turn.
    AlreadyDelivered,
    /// A different expression (a sticker or a reaction) was already sent this turn.
    LimitReached,
}

impl ExpressionWithheld {
    /// Replaces the tool's data and message with the answer; `kind` is "sticker" or "reaction".
    pub fn apply(self, kind: &str, output: &mut ToolOutput) {
        let (status, message) = match self {
            Self::AlreadyDelivered => (
                "already_delivered",
                format!("This {kind} was already sent in this reply; it was not sent again."),
            ),
            Self::LimitReached => (
                "limit_reached",
                format!(
                    "Only one expression (a sticker or a reaction) per reply, and one was \
                     already sent; this {kind} was not."
                ),
            ),
        };
        output.data = Some(json!({ "status": status, "sent": false }));
        output.message = Some(message);
    }
}

/// `{ status: "review_rejected", action_executed: false, tool_name, correction_allowed,
/// findings }`: the reviewer stopped the request; nothing ran (SPEC R2).
pub fn review_rejected(tool_name: &str, findings: &[String], correction_allowed: bool) -> Value {
    json!({
        "status": "review_rejected",
        "action_executed": false,
        "tool_name": tool_name,
        "correction_allowed": correction_allowed,
        "findings": findings,
    })
}

/// A failed or refused call, for all three audiences: `kind` and `code` for the thought log and
/// events, `reason` and `suggested_actions` for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub kind: FailureKind,
    pub code: String,
    pub reason: String,
    pub suggested_actions: Vec<String>,
    /// A tool told to stop (its timeout): how it ended within its grace (SPEC T5, row 30).
    pub ending: Option<ToolEnding>,
}

impl Failure {
    pub fn new(kind: FailureKind, code: &str, reason: impl Into<String>) -> Self {
        Self {
            kind,
            code: code.to_owned(),
            reason: reason.into(),
            suggested_actions: Vec::new(),
            ending: None,
        }
    }

    /// `{ status: "tool_execution_failed", reason, tool_name, code, suggested_actions }`.
    pub fn payload(&self, tool_name: &str) -> Value {
        json!({
            "status": "tool_execution_failed",
            "reason": self.reason,
            "tool_name": tool_name,
            "code": self.code,
            "suggested_actions": self.suggested_actions,
        })
    }

    /// The reviewer's own compact form, `{"status","code","reason"}` in that order: what its
    /// model reads when a `submit_review` call does not validate.
    pub fn compact_text(&self) -> String {
        format!(
            r#"{{"status":"tool_execution_failed","code":{},"reason":{}}}"#,
            Value::from(self.code.as_str()),
            Value::from(self.reason.as_str()),
        )
    }

    /// A tool's own failure. Provider failures get a classified reason, a safe code and
    /// localized tips; other failures keep the tool's message (code `tool_error` when none).
    /// Port failures keep their detail in the logs only.
    pub fn from_tool_error(error: &ToolError, locale: Locale) -> Self {
        match error {
            ToolError::Business { code, message } => {
                Self::new(FailureKind::Business, code, message.clone())
            }
            ToolError::Failed { code, message } => Self::new(
                FailureKind::Execution,
                code.as_deref().unwrap_or("tool_error"),
                message.clone(),
            ),
            ToolError::Provider(failure) => {
                let class = failure.class();
                Self {
                    kind: FailureKind::Execution,
                    code: class.code().to_owned(),
                    reason: failure.model_reason(),
                    suggested_actions: recovery_tips(class, locale),
                    ending: None,
                }
            }
            ToolError::Port(_) => Self::new(
                FailureKind::Execution,
                "service_unavailable",
                "A service this tool needs is unavailable right now; nothing was changed.",
            ),
        }
    }

    /// A session refusal: unknown tool, denied, already used, bad arguments (SPEC S4).
    pub fn from_session(error: &SessionError) -> Self {
        match error {
            SessionError::UnknownTool { name, allowed } => Self::new(
                FailureKind::UnknownTool,
                "unknown_tool",
                format!(
                    "There is no tool named `{name}`. Available tools: {}.",
                    list(allowed)
                ),
            ),
            SessionError::Denied { name, .. } => Self::new(
                FailureKind::Denied,
                "tool_denied",
                format!("You are not permitted to call `{name}`. Nothing ran."),
            ),
            SessionError::AlreadyUsed { name } => Self::new(
                FailureKind::Blocked,
                "already_used_this_turn",
                format!("`{name}` was already used in this reply and cannot be used again."),
            ),
            SessionError::InvalidArguments { error, .. } => Self::new(
                FailureKind::InvalidArguments,
                "invalid_arguments",
                format!(
                    "Invalid arguments at {}: {}. Nothing ran; fix the arguments and call again.",
                    error.path, error.message
                ),
            ),
        }
    }

    /// Arguments that were cut or broken: nothing ran, resend the whole call (SPEC T3).
    pub fn truncated(truncation: Truncation) -> Self {
        Self::new(
            FailureKind::Truncated,
            "truncated_arguments",
            format!(
                "The call's arguments arrived incomplete ({}); nothing ran. Send the whole call \
                 again with complete JSON arguments.",
                truncation.as_str()
            ),
        )
    }

    /// Deliberate tool mode: the tool is outside the allowlist (SPEC T4).
    pub fn blocked_by_deliberate_mode(tool: &str, allowed: &[&str]) -> Self {
        Self::new(
            FailureKind::Blocked,
            "blocked_by_deliberate_tool_mode",
            format!(
                "`{tool}` is not enabled for this message (deliberate tool mode). Nothing ran. \
                 Allowed tools: {}.",
                list(allowed)
            ),
        )
    }

    /// The tool outlived its timeout and, told to stop, came back with an error (`cancelled`)
    /// or was still running after its grace (`may still finish`, SPEC T5, row 30).
    pub fn timed_out(tool: &str, secs: u64, still_running: bool) -> Self {
        let (ending, reason) = if still_running {
            (
                ToolEnding::MayStillFinish,
                format!(
                    "`{tool}` did not finish within {secs} s and did not stop when told to: it \
                     may still finish its work later. Its effect is unknown; do not assume it \
                     happened."
                ),
            )
        } else {
            (
                ToolEnding::Cancelled,
                format!(
                    "`{tool}` did not finish within {secs} s and was cancelled: it stopped \
                     without finishing its work. Do not assume it happened."
                ),
            )
        };
        Self {
            ending: Some(ending),
            ..Self::new(FailureKind::TimedOut, "tool_timeout", reason)
        }
    }

    /// Nobody approved the call (SPEC E3): `why` says who denied it, or that nobody answered.
    pub fn approval_denied(why: String) -> Self {
        Self::new(
            FailureKind::Blocked,
            "approval_denied",
            format!("{why} It did not run; do not say or assume it happened."),
        )
    }

    /// A second (third, ...) call in one provider answer: only the first runs (SPEC C9).
    pub fn parallel_call_refused() -> Self {
        Self::new(
            FailureKind::Blocked,
            "parallel_tool_calls_refused",
            "Only one tool call per reply step is allowed; this one did not run. Call tools one \
             at a time.",
        )
    }

    /// A `submit_review` call that does not validate, told to the reviewer's model (SPEC S1).
    pub fn invalid_verdict() -> Self {
        Self::new(
            FailureKind::InvalidArguments,
            "invalid_arguments",
            "The verdict did not fit submit_review's schema: pass with no findings, or reject \
             with at least one short finding.",
        )
    }

    /// Discord definitely refused the expression: the allowance is free again (SPEC T9, E1).
    pub fn expression_refused(expression: &Expression) -> Self {
        let (code, reason) = match expression {
            Expression::Reaction { .. } => (
                "reaction_refused",
                "Discord refused the reaction; nothing was added.",
            ),
            Expression::Sticker(_) => (
                "sticker_refused",
                "Discord refused to post the sticker; nothing was posted.",
            ),
        };
        Self::new(FailureKind::Execution, code, reason)
    }
}

fn list(names: &[&str]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ports::{PortError, Sticker};
    use crate::domain::provider_failure::ProviderFailure;

    // SPEC T7: no data becomes {"status":"completed"}; message sits beside result.
    #[test]
    fn success_without_data_is_completed_with_message_beside() {
        let output = ToolOutput::default().with_message("done");
        assert_eq!(
            success_payload(&output),
            json!({"result": {"status": "completed"}, "message": "done"})
        );
        assert_eq!(
            success_payload(&ToolOutput::default()),
            json!({"result": {"status": "completed"}})
        );
    }

    // SPEC T7: a data object's own `message` stays inside result; internal fields never leave.
    #[test]
    fn data_keeps_its_own_message_and_loses_internal_fields() {
        let output = ToolOutput {
            data: Some(json!({
                "message": "tool's own", "n": 1,
                "response_delivered": true, "endTurn": true, "sticker_selection": {"id": 1}
            })),
            message: Some("beside".into()),
            expression: Some(Expression::Sticker(Sticker {
                id: 9,
                name: "wave".into(),
            })),
            end_turn: true,
            ..ToolOutput::default()
        };
        let payload = success_payload(&output);
        assert_eq!(
            payload,
            json!({"result": {"message": "tool's own", "n": 1}, "message": "beside"})
        );
        assert!(!payload.to_string().contains("wave"));
    }

    // SPEC T8: the failure object has exactly the five fields.
    #[test]
    fn failure_payload_has_the_fixed_shape() {
        let failure = Failure::from_tool_error(
            &ToolError::Failed {
                code: None,
                message: "boom".into(),
            },
            Locale::En,
        );
        let payload = failure.payload("t");
        assert_eq!(
            payload,
            json!({
                "status": "tool_execution_failed", "reason": "boom", "tool_name": "t",
                "code": "tool_error", "suggested_actions": []
            })
        );
    }

    // SPEC T8: provider failures: classified reason, safe code, localized tips, no raw text.
    #[test]
    fn provider_failure_payload_is_classified_and_localized() {
        let raw = "429: insufficient balance for account acct_secret_123";
        let error = ToolError::Provider(ProviderFailure {
            status: Some(429),
            message: raw.into(),
            workflow_model_file: None,
        });
        let en = Failure::from_tool_error(&error, Locale::En);
        let zh = Failure::from_tool_error(&error, Locale::ZhCn);
        assert_eq!(en.code, "insufficient_balance");
        assert_eq!(en.suggested_actions.len(), 2);
        assert_ne!(en.suggested_actions, zh.suggested_actions);
        let text = en.payload("plan_image").to_string();
        assert!(!text.contains("acct_secret_123"), "{text}");
    }

    // The reviewer's compact failure keeps its field order and escapes its text.
    #[test]
    fn compact_failure_text_keeps_its_order_and_escapes() {
        let failure = Failure::new(FailureKind::Execution, "c", "say \"hi\"\n");
        assert_eq!(
            failure.compact_text(),
            r#"{"status":"tool_execution_failed","code":"c","reason":"say \"hi\"\n"}"#
        );
    }

    // SPEC T8: a port's internal detail never reaches the model.
    #[test]
    fn port_failure_detail_stays_out_of_the_payload() {
        let error = ToolError::Port(PortError::Unavailable {
            what: "database",
            detail: "connection to 10.0.0.5:5432 refused (password=hunter2)".into(),
        });
        let failure = Failure::from_tool_error(&error, Locale::En);
        let text = failure.payload("remember_fact").to_string();
        assert!(
            !text.contains("hunter2") && !text.contains("10.0.0.5"),
            "{text}"
        );
        assert_eq!(failure.code, "service_unavailable");
    }
}
