//! The pass loop: one turn, pass after pass, until the model answers in text, a stop request or
//! a limit ends it (SPEC C9), with key rotation and model fallback retrying a failed pass
//! (SPEC C11). Completed tool outcomes are reused across those retries (SPEC R4): each retry is a
//! new invocation, and the stage answers a request an earlier invocation completed from its
//! record.

use std::sync::Arc;

use super::expression;
use super::payload::Failure;
use super::{ToolCallOutcome, ToolCallRequest, execute_tool_call};
use crate::chat::context::{LoadedContext, Trigger};
use crate::chat::history::{EntryStatus, ToolHistoryEntry};
use crate::chat::model::{Attempt, ChatMessage, ChatModel, ModelError, TokenUsage};
use crate::chat::provider_failure::{Retry, user_message};
use crate::chat::review::{NoteVerdict, ReviewNote, ReviewOutcome, ReviewVerdict};
use crate::chat::role::Role;
use crate::chat::stores::{OutcomeStore, Persona};
use crate::chat::stream::{PassEnd, ReplyDelivery};
use crate::chat::turn::{Turn, TurnStatus};
use crate::config::TurnConfig;
use crate::locale;
use crate::tools::{Registry, ToolEnv, ToolSession};

/// What a turn needs besides its own state.
pub struct TurnDeps {
    pub model: Arc<dyn ChatModel>,
    pub registry: Arc<Registry>,
    pub env: Arc<ToolEnv>,
}

/// Why a turn ended, beyond its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnEnd {
    Answered,
    /// Stopped by `/kill`, a follow-up, or an unconfirmed delivery (see the status).
    Stopped,
    PassLimit,
    FailureLimit,
    /// Every key and model failed; the last failure's code.
    ProviderFailed {
        code: &'static str,
    },
    /// The model said nothing and nothing else was delivered.
    Empty,
    /// The turn promised images it did not plan.
    PlansIncomplete,
    /// A malformed call ended it.
    Malformed,
    /// The orchestrator released it: stale (SPEC C10) or killed past its grace period.
    Released,
    /// Review stopped the tool chain; the held reply was delivered (SPEC R3).
    HeldResponse,
    /// The turn panicked: it ended with the localized error notice, and the channel goes on.
    Crashed,
}

/// What happened in a turn, for the orchestrator and the thought log's summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnReport {
    pub status: TurnStatus,
    pub end: TurnEnd,
    pub passes: u32,
    pub tool_calls: u32,
    pub messages_sent: usize,
    pub usage: TokenUsage,
    /// Each review verdict of the turn (SPEC C8), for the thought log's summary.
    pub reviews: Vec<ReviewNote>,
}

/// The synthetic answer to a second (third, ...) call in one provider answer (SPEC C9).
fn parallel_call_refused(call: &ToolCallRequest) -> ToolHistoryEntry {
    ToolHistoryEntry {
        call_id: call.id.clone(),
        tool_name: call.name.clone(),
        arguments: "{}".to_owned(),
        response: Failure::parallel_call_refused().payload(&call.name),
        pre_tool_text: Vec::new(),
        status: EntryStatus::Failed,
    }
}

/// Runs one turn to its end.
pub async fn run_turn(
    deps: &TurnDeps,
    config: &TurnConfig,
    turn: Arc<Turn>,
    persona: &Persona,
    trigger: &Trigger,
) -> TurnReport {
    let ports = &deps.env.ports;
    // A turn resumed after a restart reuses what it completed before (SPEC R4, D4).
    seed_stored_outcomes(&turn, ports.outcomes.as_ref()).await;
    let context =
        crate::chat::context::load(&turn, persona, ports, trigger, config.history_messages).await;
    let session = ToolSession::new(
        Role::Persona,
        deps.registry.clone(),
        turn.clone(),
        deps.env.clone(),
    );
    let reply_to = trigger.reply.then_some(trigger.message);
    let mut delivery = ReplyDelivery::new(&turn, ports.sink.as_ref(), reply_to);
    let mut entries: Vec<ToolHistoryEntry> = Vec::new();
    let mut report = TurnReport {
        status: TurnStatus::Completed,
        end: TurnEnd::Answered,
        passes: 0,
        tool_calls: 0,
        messages_sent: 0,
        usage: TokenUsage::default(),
        reviews: Vec::new(),
    };
    // With drafting On (and a reviewer to ask), the reply is held until reviewed (SPEC C8).
    let holding = turn.drafting && turn.review.replies && deps.env.reviewer.is_some();
    if holding {
        delivery.hold();
    }
    let mut failures = 0u32;
    let (status, end) = loop {
        if report.passes >= config.max_passes {
            delivery
                .notice(locale::text(turn.locale, "turn-pass-limit"))
                .await;
            break (TurnStatus::Completed, TurnEnd::PassLimit);
        }
        if turn.stop.is_killed() {
            break (TurnStatus::StoppedByUser, TurnEnd::Stopped);
        }
        report.passes += 1;
        turn.progress.touch();
        let mut parts = Vec::new();
        // With drafting On a follow-up always interrupts (SPEC C8).
        let interruptible = turn.drafting || !turn.state().in_tool_chain;
        let pass = run_pass(
            deps,
            &turn,
            &session,
            &context,
            &entries,
            &[],
            &mut delivery,
            &mut parts,
            interruptible,
        )
        .await;
        match pass {
            PassEnd::Text => {
                if holding {
                    let settled = settle_held_reply(
                        deps,
                        &turn,
                        &session,
                        &context,
                        &entries,
                        &mut delivery,
                        &mut report,
                    )
                    .await;
                    if let Err(status) = settled {
                        break (status, TurnEnd::Stopped);
                    }
                }
                let delivered = turn.state().response_delivered;
                if !delivered {
                    delivery
                        .notice(locale::text(turn.locale, "turn-empty-response"))
                        .await;
                    break (TurnStatus::Error, TurnEnd::Empty);
                }
                break (TurnStatus::Completed, TurnEnd::Answered);
            }
            PassEnd::ToolCalls(calls) => {
                report.tool_calls += 1;
                turn.state().in_tool_chain = true;
                let (first, rest) = calls
                    .split_first()
                    .unwrap_or_else(|| unreachable!("a tool-call pass has at least one call"));
                match execute_tool_call(&session, Some(first), &mut parts).await {
                    ToolCallOutcome::Restart => {
                        failures = 0;
                        continue;
                    }
                    ToolCallOutcome::Abort {
                        status: TurnStatus::HeldResponse,
                    } => {
                        // SPEC R3: the turn ends through the held-response path.
                        let settled = settle_held_reply(
                            deps,
                            &turn,
                            &session,
                            &context,
                            &entries,
                            &mut delivery,
                            &mut report,
                        )
                        .await;
                        match settled {
                            Ok(()) => break (TurnStatus::Completed, TurnEnd::HeldResponse),
                            Err(status) => break (status, TurnEnd::Stopped),
                        }
                    }
                    ToolCallOutcome::Abort { status } => {
                        let end = if status == TurnStatus::Error {
                            TurnEnd::Malformed
                        } else {
                            TurnEnd::Stopped
                        };
                        break (status, end);
                    }
                    ToolCallOutcome::History { entry } => {
                        if entry.status == EntryStatus::Failed {
                            failures += 1;
                        } else {
                            failures = 0;
                        }
                        entries.push(entry);
                    }
                }
                entries.extend(rest.iter().map(parallel_call_refused));
                if failures >= config.max_consecutive_failures {
                    delivery
                        .notice(locale::text(turn.locale, "turn-failure-limit"))
                        .await;
                    break (TurnStatus::Completed, TurnEnd::FailureLimit);
                }
            }
            PassEnd::Stopped(status) => break (status, TurnEnd::Stopped),
            PassEnd::Failed(error) => {
                delivery
                    .notice(user_message(error.class, turn.locale))
                    .await;
                break (
                    TurnStatus::Error,
                    TurnEnd::ProviderFailed {
                        code: error.class.code(),
                    },
                );
            }
        }
    };
    report.status = status;
    report.end = end;
    // SPEC S5: a promised set of images planned incompletely fails loudly, never silently.
    if status == TurnStatus::Completed {
        let incomplete = turn.state().plans.verify_complete();
        if let Err(incomplete) = incomplete {
            tracing::error!(turn = %turn.id, %incomplete, "turn ended with incomplete image plans");
            let missing = incomplete
                .missing
                .iter()
                .map(|m| format!("{} {}/{}", m.set, m.index, m.total))
                .collect::<Vec<_>>()
                .join(", ");
            delivery
                .notice(locale::text_with(
                    turn.locale,
                    "turn-plans-incomplete",
                    &[("missing", missing)],
                ))
                .await;
            report.status = TurnStatus::Error;
            report.end = TurnEnd::PlansIncomplete;
        }
    }
    report.messages_sent = delivery.sent;
    report.usage = delivery.usage;
    report.reviews = turn.state().review.notes.clone();
    report
}

/// Loads outcomes a previous run of this turn stored, as completed by an earlier invocation.
async fn seed_stored_outcomes(turn: &Turn, store: &dyn OutcomeStore) {
    match store.outcomes(turn.id).await {
        Ok(stored) if !stored.is_empty() => {
            let mut state = turn.state();
            // This run is a later invocation than every stored one, so each is reusable.
            let latest = stored.iter().map(|o| o.invocation).max().unwrap_or(0);
            state.invocation = state.invocation.max(latest + 1);
            for outcome in stored {
                state
                    .outcomes
                    .record(outcome.identity, outcome.response, outcome.invocation);
            }
        }
        Ok(_) => {}
        Err(error) => {
            tracing::warn!(turn = %turn.id, %error, "stored tool outcomes unavailable");
        }
    }
}

/// One pass, retried over the provider's attempts (key rotation, then model fallback).
#[allow(clippy::too_many_arguments)] // the pass's whole world; a struct would only rename it
async fn run_pass(
    deps: &TurnDeps,
    turn: &Turn,
    session: &ToolSession,
    context: &LoadedContext,
    entries: &[ToolHistoryEntry],
    tail: &[ChatMessage],
    delivery: &mut ReplyDelivery<'_>,
    parts: &mut Vec<String>,
    interruptible: bool,
) -> PassEnd {
    let attempts = deps.model.attempts();
    let mut last_error: Option<ModelError> = None;
    let mut skip_model: Option<usize> = None;
    let mut continuation = String::new();
    for (i, attempt) in attempts.iter().enumerate() {
        if skip_model == Some(attempt.model_index) {
            continue;
        }
        if i > 0 {
            // A retry is a new invocation: outcomes completed so far are reused, not re-run.
            turn.begin_invocation();
            if !expression::sends_allowed(turn) {
                return PassEnd::Stopped(TurnStatus::DeliveryUnconfirmed);
            }
        }
        if turn.stop.is_killed() {
            return PassEnd::Stopped(TurnStatus::StoppedByUser);
        }
        delivery.begin_pass();
        // A revision (a non-empty tail) is prose only: no tools.
        let tools = if tail.is_empty() {
            session.specifications()
        } else {
            Vec::new()
        };
        let request = context.request(turn, entries, Some(continuation.as_str()), tail, tools);
        let opened = {
            let _guarded = turn.progress.guard();
            tokio::select! {
                biased;
                () = turn.stop.kill_token().cancelled() => {
                    return PassEnd::Stopped(TurnStatus::StoppedByUser);
                }
                opened = deps.model.stream(attempt, &request) => opened,
            }
        };
        let error = match opened {
            Ok(stream) => match delivery.stream_pass(stream, parts, interruptible).await {
                PassEnd::Failed(error) => error,
                other => return other,
            },
            Err(error) => error,
        };
        // Text this attempt already sent stays sent: the next attempt continues after it, and
        // it stays the pass's visible text.
        if !delivery.sent_this_pass.is_empty() {
            if !continuation.is_empty() {
                continuation.push_str("\n\n");
            }
            continuation.push_str(&delivery.sent_this_pass);
        }
        parts.clear();
        if !continuation.is_empty() {
            parts.push(continuation.clone());
        }
        report_failure(deps.model.as_ref(), turn, attempt, &error);
        let retry = error.class.retry();
        last_error = Some(error);
        match retry {
            Retry::NextKey | Retry::NextAttempt => {}
            Retry::NextModel => skip_model = Some(attempt.model_index),
            Retry::No => break,
        }
    }
    PassEnd::Failed(last_error.unwrap_or_else(|| {
        ModelError::new(
            crate::chat::provider_failure::FailureClass::Unauthorized,
            None,
            "no provider key is configured",
        )
    }))
}

/// The reply review (SPEC C8): the held draft passes, or gets one revision with the reviewer's
/// findings; the latest draft is delivered after at most two reviews, or at once when the
/// reviewer is unavailable. `/kill` or a follow-up discards it (`Err` with the status).
#[allow(clippy::too_many_arguments)] // the turn's world, as for `run_pass`
async fn settle_held_reply(
    deps: &TurnDeps,
    turn: &Turn,
    session: &ToolSession,
    context: &LoadedContext,
    entries: &[ToolHistoryEntry],
    delivery: &mut ReplyDelivery<'_>,
    report: &mut TurnReport,
) -> Result<(), TurnStatus> {
    let mut draft = delivery.take_held();
    let Some(reviewer) = deps.env.reviewer.clone() else {
        delivery.release(&draft).await;
        return Ok(());
    };
    for round in 1..=2 {
        if draft.trim().is_empty() || turn.state().review.unavailable {
            break;
        }
        let outcome = tokio::select! {
            biased;
            () = turn.stop.kill_token().cancelled() => return Err(TurnStatus::StoppedByUser),
            () = turn.stop.follow_up() => return Err(TurnStatus::FollowUpInterrupt),
            outcome = reviewer.review_reply(session, &draft) => outcome,
        };
        let note = |verdict, findings: &[String]| ReviewNote::new("reply", verdict, findings);
        let findings = match outcome {
            ReviewOutcome::Verdict(ReviewVerdict::Pass) => {
                turn.state().review.notes.push(note(NoteVerdict::Pass, &[]));
                break;
            }
            ReviewOutcome::Unavailable(why) => {
                tracing::warn!(turn = %turn.id, %why, "reviewer unavailable; the draft goes out as written");
                let mut state = turn.state();
                state.review.notes.push(note(NoteVerdict::Unavailable, &[]));
                state.review.unavailable = true;
                break;
            }
            ReviewOutcome::Verdict(ReviewVerdict::Reject { findings, .. }) => findings,
        };
        turn.state()
            .review
            .notes
            .push(note(NoteVerdict::Revise, &findings));
        if round == 2 {
            break;
        }
        // One revision, with the findings.
        let tail = [
            ChatMessage::Assistant {
                content: Some(draft.clone()),
                tool_calls: Vec::new(),
            },
            ChatMessage::System {
                content: format!(
                    "A reviewer asked you to revise that reply before it is posted. Findings: {}. Write the whole reply again, revised.",
                    findings.join("; ")
                ),
            },
        ];
        report.passes += 1;
        let mut parts = Vec::new();
        let pass = run_pass(
            deps, turn, session, context, entries, &tail, delivery, &mut parts, true,
        )
        .await;
        match pass {
            PassEnd::Text => {
                let revised = delivery.take_held();
                if !revised.trim().is_empty() {
                    draft = revised;
                }
            }
            PassEnd::Stopped(status) => return Err(status),
            // A failed revision keeps the first draft.
            PassEnd::Failed(_) | PassEnd::ToolCalls(_) => {
                delivery.take_held();
            }
        }
    }
    if turn.stop.is_killed() {
        return Err(TurnStatus::StoppedByUser);
    }
    delivery.release(&draft).await;
    Ok(())
}

fn report_failure(model: &dyn ChatModel, turn: &Turn, attempt: &Attempt, error: &ModelError) {
    tracing::warn!(
        turn = %turn.id, model = %attempt.model, key = attempt.key_index,
        class = error.class.code(), status = ?error.status, detail = %error.detail,
        "provider attempt failed"
    );
    model.report_failure(attempt, error.class);
}
