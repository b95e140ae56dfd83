//! `execute_tool_call`: the gates in SPEC order, the watchdog, and what follows a run (sticker
//! delivery, context restart, one-shot memory, usage stats, outcome reuse, thought-log notices,
//! tool events).

use std::time::Instant;

use serde_json::Value;

use super::Restart;
use super::approval::{self, Gate};
use super::expression::{self, ExpressionDelivery};
use super::payload::{ExpressionWithheld, Failure, review_rejected, success_payload};
use super::review_gate::{self, Rejection, Review};
use super::watchdog::{Stopped, Watched, run_under_watchdog};
use super::{ToolCallOutcome, ToolCallRequest};
use crate::domain::history::{EntryStatus, ToolHistoryEntry};
use crate::domain::ports::{
    Durability, EventOutcome, Metric, StoredOutcome, UsageRecord, remember_delivery,
};
use crate::domain::review::ReviewedCall;
use crate::domain::role::Role;
use crate::domain::thought_log::Notice;
use crate::domain::turn::{StoppedTool, ToolEnding, Turn, TurnStatus};
use crate::locale;
use crate::redact::{redact_arguments, redact_text};
use crate::tools::registry::canonical_json;
use crate::tools::update_short_term_memory::UpdateShortTermMemory;
use crate::tools::{
    ContextRestart, PreparedCall, RegisteredTool, Tool, ToolError, ToolOutput, ToolSession,
};

/// Executes one function call from the model and returns exactly one outcome.
///
/// `streamed_text` is the visible text the pass streamed before the call; once the call gets
/// this far it moves onto the history entry (SPEC T6) and the buffer is left empty, so the loop
/// never sends it twice.
pub async fn execute_tool_call(
    session: &ToolSession,
    call: Option<&ToolCallRequest>,
    streamed_text: &mut Vec<String>,
) -> ToolCallOutcome {
    let turn = session.turn();

    // T1: payload.
    let Some(call) = call.filter(|c| !c.name.trim().is_empty()) else {
        tracing::error!(turn = %turn.id, "tool call without a payload or a tool name; nothing dispatched");
        return ToolCallOutcome::Abort {
            status: TurnStatus::Error,
        };
    };

    // T2: stop requests. An unconfirmed sticker send also stops every further call (T9).
    if let Some(status) = stop_requested(turn) {
        return ToolCallOutcome::Abort { status };
    }

    let mut stage = Stage {
        session,
        call,
        pre_tool_text: take_pre_tool_text(streamed_text),
        started: Instant::now(),
        redacted: String::new(),
        history_arguments: "{}".to_owned(),
    };

    // T3: truncated arguments are never dispatched, not even partially.
    let arguments = match call.parse_arguments() {
        Ok(arguments) => arguments,
        Err(truncation) => {
            let max = session.env().config.thought_log.argument_max_chars;
            stage.redacted = redact_arguments(&call.arguments, max);
            return stage
                .fail(Failure::truncated(truncation), EventOutcome::Truncated)
                .await;
        }
    };
    stage.redacted = session.redact(&arguments);
    stage.history_arguments = canonical_json(&arguments);

    // T4: deliberate tool mode allowlist.
    if session.role() == Role::Persona && !turn.admission.admits(&call.name) {
        let allowed = session.offered_names();
        return stage
            .fail(
                Failure::blocked_by_deliberate_mode(&call.name, &allowed),
                EventOutcome::Blocked,
            )
            .await;
    }

    // S2, T12: authorize the role, then availability, then parse and validate.
    let prepared = match session.prepare(&call.name, arguments) {
        Ok(prepared) => prepared,
        Err(refusal) => {
            let outcome = refusal.event_outcome();
            return stage.fail(Failure::from_session(&refusal), outcome).await;
        }
    };
    stage.history_arguments = canonical_json(&prepared.arguments);
    let Some(tool) = session.lookup(prepared.name) else {
        // `prepare` only succeeds for registered tools.
        return ToolCallOutcome::Abort {
            status: TurnStatus::Error,
        };
    };

    stage.proceed(&prepared, tool).await
}

/// A pending `/kill`, a follow-up with drafting On, or a blocked delivery ends the chain here.
/// With drafting Off a follow-up only clears its interrupt flag: the chain goes on and the
/// follow-up stays queued (SPEC T2, C8).
fn stop_requested(turn: &Turn) -> Option<TurnStatus> {
    if turn.stop.is_killed() {
        return Some(TurnStatus::StoppedByUser);
    }
    if turn.stop.follow_up_pending() {
        if turn.drafting {
            return Some(TurnStatus::FollowUpInterrupt);
        }
        turn.stop.clear_follow_up();
    }
    if !expression::sends_allowed(turn) {
        return Some(TurnStatus::DeliveryUnconfirmed);
    }
    None
}

/// The pass's streamed text, kept as the entry's pre-tool parts unless it is only white space.
fn take_pre_tool_text(streamed: &mut Vec<String>) -> Vec<String> {
    let parts = std::mem::take(streamed);
    if parts.iter().all(|p| p.trim().is_empty()) {
        Vec::new()
    } else {
        parts
    }
}

/// Tells the moderators which deliberate-mode trigger admitted the tool (SPEC T11).
async fn announce_trigger(session: &ToolSession, tool: &str) {
    let turn = session.turn();
    if let (Some(trigger), Some(server)) = (
        turn.admission.trigger_for(tool),
        turn.scope.thought_log_server(),
    ) {
        let notice = Notice::DeliberateTrigger {
            tool: tool.to_owned(),
            trigger: trigger.to_owned(),
        };
        session.env().ports.thought_log.post(server, notice).await;
    }
}

/// Posts the tool's progress line: in the conversation normally, as a full card in the thought
/// log on a quiet turn. Only the persona's calls announce themselves: the image planner and the
/// reviewer do hidden work (SPEC T11).
async fn announce_progress(session: &ToolSession, tool: &RegisteredTool) {
    let turn = session.turn();
    let Some(key) = tool.progress_key else {
        return;
    };
    if session.role() != Role::Persona {
        return;
    }
    let ports = &session.env().ports;
    let text = locale::text(turn.locale, key);
    if !turn.quiet {
        ports.sink.send_progress(turn.scope.channel, text).await;
    } else if let Some(server) = turn.scope.thought_log_server() {
        let notice = Notice::Progress {
            channel: turn.scope.channel,
            tool: tool.name.to_owned(),
            text,
        };
        ports.thought_log.post(server, notice).await;
    }
}

/// A restart payload as the turn takes it; `None`: nothing to restart with.
fn restart_of(restart: ContextRestart) -> Option<Restart> {
    match restart {
        ContextRestart::OlderMessages(messages) => {
            let oldest = messages.iter().map(|m| m.id).min()?;
            Some(Restart { messages, oldest })
        }
    }
}

/// One call on its way through the stage.
struct Stage<'a> {
    session: &'a ToolSession,
    call: &'a ToolCallRequest,
    pre_tool_text: Vec<String>,
    started: Instant,
    /// Redacted arguments for events and notices.
    redacted: String,
    /// The arguments as history shows them.
    history_arguments: String,
}

impl Stage<'_> {
    /// The gates after a request is prepared: reuse of a completed outcome (R4), review with
    /// drafting On (R1-R5), then the tool under its watchdog (T5).
    async fn proceed(mut self, prepared: &PreparedCall, tool: &RegisteredTool) -> ToolCallOutcome {
        let turn = self.session.turn();
        // R4: a request the turn already completed is answered from its record, never re-run.
        if let Some(response) = turn.reusable_outcome(&prepared.identity) {
            self.record(EventOutcome::Reused, None).await;
            return self.history(response, EntryStatus::Succeeded);
        }

        // R1-R5: with drafting On, the prepared request (exactly what would run) is reviewed.
        if turn.drafting && self.session.role() == Role::Persona {
            match review_gate::review(self.session, prepared, tool).await {
                Review::Run => {}
                Review::Abort(status) => return ToolCallOutcome::Abort { status },
                Review::Rejected(rejection) => return self.reject(prepared.name, rejection).await,
            }
            // Cancellation is checked after review, before the tool's transport.
            if let Some(status) = stop_requested(turn) {
                return ToolCallOutcome::Abort { status };
            }
        }

        // E3: a call that needs approval waits for it (only this turn waits).
        match approval::ask(self.session, prepared, tool).await {
            Gate::Run => {}
            Gate::Abort(status) => return ToolCallOutcome::Abort { status },
            Gate::Denied(why) => {
                let failure = Failure::approval_denied(why);
                return self.fail(failure, EventOutcome::Blocked).await;
            }
        }
        if let Some(status) = stop_requested(turn) {
            return ToolCallOutcome::Abort { status };
        }

        self.run(prepared, tool).await
    }

    /// T11 notices, then the tool under its watchdog (T5), and what its end means for the turn.
    async fn run(self, prepared: &PreparedCall, tool: &RegisteredTool) -> ToolCallOutcome {
        let (session, turn) = (self.session, self.session.turn());
        announce_trigger(session, prepared.name).await;
        announce_progress(session, tool).await;
        match run_under_watchdog(session, prepared, tool.timeout).await {
            Watched::Killed(stopped) => self.killed(prepared, stopped).await,
            Watched::TimedOut(Stopped::Done(output)) => {
                tracing::info!(turn = %turn.id, tool = prepared.name, "tool came back with its result within the grace after its timeout");
                self.complete(prepared, output).await
            }
            Watched::TimedOut(stopped) => {
                let still_running = matches!(stopped, Stopped::MayStillFinish);
                let secs = tool.timeout.as_secs();
                let failure = Failure::timed_out(prepared.name, secs, still_running);
                let outcome = if still_running {
                    EventOutcome::MayStillFinish
                } else {
                    EventOutcome::TimedOut
                };
                self.fail(failure, outcome).await
            }
            Watched::Finished(Err(error)) => {
                if let ToolError::Port(detail) = &error {
                    tracing::warn!(turn = %turn.id, tool = prepared.name, %detail, "tool port failed");
                }
                let failure = Failure::from_tool_error(&error, turn.locale);
                self.fail(failure, EventOutcome::Failed).await
            }
            Watched::Finished(Ok(output)) => self.complete(prepared, output).await,
        }
    }

    async fn record(&self, outcome: EventOutcome, code: Option<String>) {
        self.session
            .record_event(
                &self.call.name,
                self.redacted.clone(),
                outcome,
                code,
                self.started,
            )
            .await;
    }

    fn entry(&mut self, response: Value, status: EntryStatus) -> ToolHistoryEntry {
        ToolHistoryEntry {
            call_id: self.call.id.clone(),
            tool_name: self.call.name.clone(),
            arguments: self.history_arguments.clone(),
            response,
            pre_tool_text: std::mem::take(&mut self.pre_tool_text),
            status,
        }
    }

    /// With drafting on, the reviewer sees the author's earlier calls with their real outcomes,
    /// restarts and rejections included (SPEC R2).
    fn show_reviewer(&self, outcome: &Value) {
        let turn = self.session.turn();
        if turn.drafting && self.session.role() == Role::Persona {
            let call = ReviewedCall {
                tool: self.call.name.clone(),
                arguments: serde_json::from_str(&self.history_arguments).unwrap_or(Value::Null),
                outcome: outcome.clone(),
            };
            turn.review(|r| r.calls.push(call));
        }
    }

    fn history(&mut self, response: Value, status: EntryStatus) -> ToolCallOutcome {
        self.show_reviewer(&response);
        ToolCallOutcome::History {
            entry: self.entry(response, status),
        }
    }

    /// A request the reviewer stopped: an event and a `review_rejected` entry. A rejection is
    /// not a failure: no notice, no usage stat (SPEC R2).
    async fn reject(mut self, tool_name: &str, rejection: Rejection) -> ToolCallOutcome {
        self.record(EventOutcome::ReviewRejected, Some("review_rejected".into()))
            .await;
        let response =
            review_rejected(tool_name, &rejection.findings, rejection.correction_allowed);
        self.history(response, EntryStatus::ReviewRejected)
    }

    /// A failed or refused call: a notice for the moderators (public channels only), an event,
    /// and a failure entry that counts toward the failure cap.
    async fn fail(mut self, failure: Failure, outcome: EventOutcome) -> ToolCallOutcome {
        let turn = self.session.turn();
        // The tool's own reason may quote its arguments: it is redacted like them.
        let reason = redact_text(&failure.reason);
        tracing::info!(
            turn = %turn.id, tool = %self.call.name, code = %failure.code,
            %reason, arguments = %self.redacted, "tool call failed"
        );
        if let Some(server) = turn.scope.thought_log_server() {
            let notice = Notice::ToolFailed {
                tool: self.call.name.clone(),
                kind: failure.kind,
                code: failure.code.clone(),
                reason,
                arguments: self.redacted.clone(),
                ending: failure.ending,
            };
            self.session
                .env()
                .ports
                .thought_log
                .post(server, notice)
                .await;
        }
        self.record(outcome, Some(failure.code.clone())).await;
        let response = failure.payload(&self.call.name);
        self.history(response, EntryStatus::Failed)
    }

    /// A tool `/kill` (or the process stopping) stopped: how it ended within its grace is what
    /// the event, the thought-log notice and `/kill`'s answer say (SPEC C6, T5, row 30). A tool
    /// that came back with its result did its work: its outcome is recorded, so a resumed turn
    /// reuses it (SPEC R4, D5); a sticker it chose is not sent, so that one counts as cancelled.
    async fn killed(self, prepared: &PreparedCall, stopped: Stopped) -> ToolCallOutcome {
        let turn = self.session.turn();
        let ending = match &stopped {
            Stopped::Done(output) if output.expression.is_some() => ToolEnding::Cancelled,
            other => other.ending(),
        };
        if let (ToolEnding::Done, Stopped::Done(output)) = (ending, &stopped) {
            let response = success_payload(output);
            self.record_use(prepared.name).await;
            self.remember_outcome(prepared, &response).await;
        }
        let outcome = match ending {
            ToolEnding::Done => EventOutcome::Succeeded,
            ToolEnding::Cancelled => EventOutcome::Cancelled,
            ToolEnding::MayStillFinish => EventOutcome::MayStillFinish,
        };
        let shutdown = turn.stop.is_shutdown();
        let by = if shutdown { "shutdown" } else { "killed" };
        self.record(outcome, Some(by.to_owned())).await;
        turn.note_stopped_tool(
            StoppedTool {
                name: self.call.name.clone(),
                ending,
            },
            true,
        );
        // A stopping process is no moderator's doing: the event says it.
        if let Some(server) = turn.scope.thought_log_server().filter(|_| !shutdown) {
            let notice = Notice::ToolStopped {
                tool: self.call.name.clone(),
                ending,
                arguments: self.redacted.clone(),
            };
            let log = &self.session.env().ports.thought_log;
            log.post(server, notice).await;
        }
        ToolCallOutcome::Abort {
            status: TurnStatus::StoppedByUser,
        }
    }

    /// What follows a successful run.
    async fn complete(
        mut self,
        prepared: &PreparedCall,
        mut output: ToolOutput,
    ) -> ToolCallOutcome {
        let turn = self.session.turn();
        let ports = &self.session.env().ports;
        // An expression already delivered, or over the allowance, is not a use of the tool (T10).
        let mut counted = true;

        // T9, E1: expression delivery (a sticker or a reaction), at once, at most one per turn.
        if let Some(expression) = output.expression.take() {
            if turn.stop.is_killed() {
                self.record(EventOutcome::Cancelled, None).await;
                return ToolCallOutcome::Abort {
                    status: TurnStatus::StoppedByUser,
                };
            }
            let kind = expression.kind();
            match expression::deliver(turn, ports.sink.as_ref(), &expression).await {
                ExpressionDelivery::Sent => {
                    remember_delivery(ports, turn.id, expression::record(&expression)).await;
                }
                ExpressionDelivery::AlreadyDelivered => {
                    counted = false;
                    ExpressionWithheld::AlreadyDelivered.apply(kind, &mut output);
                }
                ExpressionDelivery::LimitReached => {
                    counted = false;
                    ExpressionWithheld::LimitReached.apply(kind, &mut output);
                }
                ExpressionDelivery::Refused { reason } => {
                    tracing::warn!(turn = %turn.id, kind, reason = %redact_text(&reason), "Discord refused an expression");
                    return self
                        .fail(
                            Failure::expression_refused(&expression),
                            EventOutcome::Failed,
                        )
                        .await;
                }
                ExpressionDelivery::Unconfirmed | ExpressionDelivery::Blocked => {
                    // No notice: the delivery is unconfirmed (T11). Nothing more is sent.
                    self.record(EventOutcome::Failed, Some("delivery_unconfirmed".into()))
                        .await;
                    return ToolCallOutcome::Abort {
                        status: TurnStatus::DeliveryUnconfirmed,
                    };
                }
            }
        }

        let response = success_payload(&output);

        // T6: a consumed context restart re-runs the pass; no history entry.
        if let Some(restart) = output.restart.take().and_then(restart_of) {
            self.record_use(prepared.name).await;
            self.record(EventOutcome::Succeeded, None).await;
            self.show_reviewer(&response);
            return ToolCallOutcome::Restart(restart);
        }

        // T12: one short-term memory update per turn.
        if prepared.name == UpdateShortTermMemory::NAME {
            turn.lock_short_term_memory();
        }
        if counted {
            self.record_use(prepared.name).await;
            self.remember_outcome(prepared, &response).await;
        }
        self.record(EventOutcome::Succeeded, None).await;
        self.history(response, EntryStatus::Succeeded)
    }

    /// R4: records the completed outcome on the turn and in the store, so a retried pass (or a
    /// turn resumed after a restart) reuses it instead of running the tool again.
    async fn remember_outcome(&self, prepared: &PreparedCall, response: &Value) {
        let turn = self.session.turn();
        let invocation = turn.record_outcome(prepared.identity.clone(), response.clone());
        let ports = &self.session.env().ports;
        let stored = StoredOutcome {
            identity: prepared.identity.clone(),
            response: response.clone(),
            invocation,
        };
        // SPEC D5: a tool with external effects is not run again by a resumed turn.
        let effect = self
            .session
            .lookup(prepared.name)
            .is_none_or(|tool| tool.external_effect);
        let durability = if effect {
            Durability::Now
        } else {
            Durability::Batched
        };
        if let Err(error) = ports
            .outcomes
            .record_outcome(turn.id, &stored, ports.clock.now_ms(), durability)
            .await
        {
            // The turn's own ledger still has it; only reuse after a restart is lost.
            tracing::warn!(turn = %turn.id, %error, "could not store a tool outcome");
        }
    }

    /// T10: `tool_used` for server channels; DMs record nothing.
    async fn record_use(&self, tool: &str) {
        let turn = self.session.turn();
        let Some(server) = turn.scope.stats_server() else {
            return;
        };
        let ports = &self.session.env().ports;
        let usage = UsageRecord {
            server,
            channel: turn.scope.channel,
            user: turn.scope.user,
            persona: turn.scope.persona.clone(),
            metric: Metric::ToolUsed,
            key: tool.to_owned(),
            at_ms: ports.clock.now_ms(),
        };
        ports.stats.record(usage).await;
    }
}
