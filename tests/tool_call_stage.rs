//! The tool-call stage, black-box through `execute_tool_call`, with recording fakes of every port
//! and paused time for timeouts. One test (or more) per SPEC T item.

// The shared fakes this binary uses (tests/support/). Public, so that what it leaves
// unused of them is not dead code.
pub mod support {
    pub mod harness;
}

use std::sync::Arc;
use std::time::Duration;

use persona_bot::domain::history::EntryStatus;
use persona_bot::domain::ports::{
    EventOutcome, ExpressionSend, HistoryMessage, Metric, OutcomeStore, Sticker,
};
use persona_bot::domain::provider_failure::ProviderFailure;
use persona_bot::domain::role::Role;
use persona_bot::domain::scope::MessageId;
use persona_bot::domain::thought_log::{FailureKind, Notice};
use persona_bot::domain::turn::{
    ExpressionId, ExpressionState, StoppedTool, ToolAdmission, ToolEnding, Turn, TurnStatus,
};
use persona_bot::locale::Locale;
use persona_bot::stage::watchdog::STOP_GRACE;
use persona_bot::stage::{ToolCallOutcome, ToolCallRequest, Truncation, execute_tool_call};
use persona_bot::testkit::{Fakes, dm_scope, private_scope, public_scope};
use persona_bot::tools::ToolError;
use serde_json::json;
use support::harness::{Behaviour, Harness, MediaTool, code, entry};

fn stickers() -> Vec<Sticker> {
    vec![
        Sticker {
            id: 1,
            name: "wave".into(),
        },
        Sticker {
            id: 2,
            name: "heart".into(),
        },
    ]
}

fn deliberate(admitted: &[(&str, Option<&str>)]) -> ToolAdmission {
    ToolAdmission::Deliberate {
        admitted: admitted
            .iter()
            .map(|(n, t)| (n.to_string(), t.map(str::to_owned)))
            .collect(),
    }
}

// ---------------------------------------------------------------- T1

// SPEC T1
#[tokio::test]
async fn call_without_payload_aborts_with_error_and_dispatches_nothing() {
    let h = Harness::new();
    let turn = h.turn(public_scope());
    let session = h.session(Role::Persona, &turn);
    let outcome = execute_tool_call(&session, None, &mut Vec::new()).await;
    assert_eq!(
        outcome,
        ToolCallOutcome::Abort {
            status: TurnStatus::Error
        }
    );
    assert_eq!(h.probe.runs(), 0);
    assert!(h.fakes.events.events().is_empty());
}

// SPEC T1
#[tokio::test]
async fn call_without_tool_name_aborts_with_error_and_dispatches_nothing() {
    let h = Harness::new();
    let turn = h.turn(public_scope());
    let outcome = h.call(Role::Persona, &turn, "  ", r#"{"n":1}"#).await;
    assert_eq!(
        outcome,
        ToolCallOutcome::Abort {
            status: TurnStatus::Error
        }
    );
    assert_eq!(h.probe.runs(), 0);
    assert!(h.fakes.thought_log.notices().is_empty());
}

// ---------------------------------------------------------------- T2

// SPEC T2
#[tokio::test]
async fn pending_kill_returns_stopped_by_user_before_dispatch() {
    let h = Harness::new();
    let turn = h.turn(public_scope());
    turn.stop.kill();
    let outcome = h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await;
    assert_eq!(
        outcome,
        ToolCallOutcome::Abort {
            status: TurnStatus::StoppedByUser
        }
    );
    assert_eq!(h.probe.runs(), 0);
}

// SPEC T2, C8
#[tokio::test]
async fn follow_up_with_drafting_on_interrupts_and_prevents_dispatch() {
    let h = Harness::new();
    let turn = Arc::new(Turn::new(public_scope(), Locale::En).drafting(true));
    turn.stop.note_follow_up();
    let outcome = h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await;
    assert_eq!(
        outcome,
        ToolCallOutcome::Abort {
            status: TurnStatus::FollowUpInterrupt
        }
    );
    assert_eq!(h.probe.runs(), 0);
    assert!(
        turn.stop.follow_up_pending(),
        "the follow-up is left for the orchestrator"
    );
}

// SPEC T2, C8
#[tokio::test]
async fn follow_up_with_drafting_off_clears_the_flag_and_the_chain_continues() {
    let h = Harness::new();
    let turn = h.turn(public_scope());
    turn.stop.note_follow_up();
    let entry = entry(h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await);
    assert_eq!(entry.status, EntryStatus::Succeeded);
    assert_eq!(h.probe.runs(), 1);
    assert!(!turn.stop.follow_up_pending());
}

// ---------------------------------------------------------------- T3

// SPEC T3
#[tokio::test]
async fn truncated_arguments_are_never_dispatched() {
    let h = Harness::new();
    let turn = h.turn(public_scope());
    let session = h.session(Role::Persona, &turn);
    // Valid-looking JSON, but the adapter saw finish_reason=length: it may be a cut prefix.
    let mut call = ToolCallRequest::new("c1", "probe", r#"{"n":1}"#);
    call.truncated = Some(Truncation::Length);
    let entry = entry(execute_tool_call(&session, Some(&call), &mut Vec::new()).await);
    assert_eq!(h.probe.runs(), 0);
    assert_eq!(code(&entry), "truncated_arguments");
    assert_eq!(
        entry.status,
        EntryStatus::Failed,
        "counts toward the failure cap"
    );
    assert!(
        entry.response["reason"]
            .as_str()
            .unwrap()
            .contains("nothing ran")
    );
    assert_eq!(entry.arguments, "{}", "broken arguments are not replayed");
    let notices = h.fakes.thought_log.notices();
    assert!(matches!(
        &notices[..],
        [(
            _,
            Notice::ToolFailed {
                kind: FailureKind::Truncated,
                ..
            }
        )]
    ));
    assert_eq!(h.fakes.events.events()[0].outcome, EventOutcome::Truncated);
}

// SPEC T3
#[tokio::test]
async fn broken_json_arguments_are_refused_as_truncated() {
    let h = Harness::new();
    let turn = h.turn(public_scope());
    let entry = entry(
        h.call(
            Role::Persona,
            &turn,
            "update_short_term_memory",
            r#"{"summary":"half"#,
        )
        .await,
    );
    assert_eq!(code(&entry), "truncated_arguments");
    assert_eq!(
        h.fakes
            .memory
            .summary_of(turn.scope.channel, &turn.scope.persona),
        None
    );
}

// SPEC T3, T4: the truncation check comes before the allowlist check.
#[tokio::test]
async fn truncation_is_checked_before_the_deliberate_allowlist() {
    let h = Harness::new();
    let turn = Arc::new(Turn::new(public_scope(), Locale::En).admission(deliberate(&[])));
    let entry = entry(h.call(Role::Persona, &turn, "probe", r#"{"n":"#).await);
    assert_eq!(code(&entry), "truncated_arguments");
}

// ---------------------------------------------------------------- T4

// SPEC T4
#[tokio::test]
async fn deliberate_mode_blocks_a_tool_outside_the_allowlist() {
    let h = Harness::new();
    let admission = deliberate(&[("recall_facts", None), ("plan_image", Some("draw"))]);
    let turn = Arc::new(Turn::new(public_scope(), Locale::En).admission(admission));
    let entry = entry(h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await);
    assert_eq!(h.probe.runs(), 0);
    assert_eq!(code(&entry), "blocked_by_deliberate_tool_mode");
    let reason = entry.response["reason"].as_str().unwrap();
    assert!(
        reason.contains("plan_image") && reason.contains("recall_facts"),
        "{reason}"
    );
    assert_eq!(h.fakes.events.events()[0].outcome, EventOutcome::Blocked);
    // The model was not shown it either.
    let shown = h.session(Role::Persona, &turn).offered_names();
    assert_eq!(shown, vec!["recall_facts", "plan_image"]);
}

// SPEC T4, T11: a tool admitted by a trigger runs, and a notice names the trigger.
#[tokio::test]
async fn tool_admitted_by_a_trigger_runs_and_the_thought_log_names_the_trigger() {
    let h = Harness::new();
    let turn = Arc::new(
        Turn::new(public_scope(), Locale::En).admission(deliberate(&[("probe", Some("poke"))])),
    );
    let entry = entry(h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await);
    assert_eq!(entry.status, EntryStatus::Succeeded);
    assert_eq!(h.probe.runs(), 1);
    assert!(h.fakes.thought_log.notices().iter().any(|(_, n)| *n
        == Notice::DeliberateTrigger {
            tool: "probe".into(),
            trigger: "poke".into()
        }));
}

// ---------------------------------------------------------------- T5

fn slow(honour_cancel: bool) -> Behaviour {
    Behaviour::Sleep {
        duration: Duration::from_secs(3600),
        honour_cancel,
    }
}

fn with_probe_timeout(behaviour: Behaviour, secs: u64) -> Harness {
    Harness::build_with_config(
        Fakes::default(),
        behaviour,
        |r| r,
        |c| {
            c.tools.timeouts_secs.insert("probe".into(), secs);
        },
    )
}

// SPEC T5, row 30: a timed-out tool that ignores its cancellation is given a short grace, then
// dropped: the model, the thought log and the event say it may still finish (not cancelled).
#[tokio::test(start_paused = true)]
async fn tool_timeout_becomes_a_failure_the_model_can_react_to() {
    let h = with_probe_timeout(slow(false), 5);
    let turn = h.turn(public_scope());
    let started = tokio::time::Instant::now();
    let entry = entry(h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await);
    assert_eq!(started.elapsed(), Duration::from_secs(5) + STOP_GRACE);
    assert_eq!(code(&entry), "tool_timeout");
    assert_eq!(entry.status, EntryStatus::Failed);
    let reason = entry.response["reason"].as_str().unwrap();
    assert!(reason.contains("may still finish"), "{reason}");
    assert_eq!(turn.channel.active_tool(), None, "cleared after a timeout");
    assert!(h.probe.was_cancelled(), "the tool is told to stop");
    assert!(!turn.stop.is_killed(), "a timeout does not kill the turn");
    let notices = h.fakes.thought_log.notices();
    assert!(
        matches!(
            &notices[..],
            [(
                _,
                Notice::ToolFailed {
                    kind: FailureKind::TimedOut,
                    ending: Some(ToolEnding::MayStillFinish),
                    ..
                }
            )]
        ),
        "{notices:?}"
    );
    let event = &h.fakes.events.events()[0];
    assert_eq!(event.outcome, EventOutcome::MayStillFinish);
    assert_eq!(event.code.as_deref(), Some("tool_timeout"));
}

// SPEC T5, row 30: a timed-out tool that honours its cancellation is cancelled, and all three
// audiences say so.
#[tokio::test(start_paused = true)]
async fn a_timed_out_tool_that_honours_cancellation_is_cancelled() {
    let h = with_probe_timeout(slow(true), 5);
    let turn = h.turn(public_scope());
    let started = tokio::time::Instant::now();
    let entry = entry(h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await);
    assert_eq!(started.elapsed(), Duration::from_secs(5), "no grace used");
    assert_eq!(code(&entry), "tool_timeout");
    let reason = entry.response["reason"].as_str().unwrap();
    assert!(reason.contains("cancelled"), "{reason}");
    let notices = h.fakes.thought_log.notices();
    assert!(
        matches!(
            &notices[..],
            [(
                _,
                Notice::ToolFailed {
                    ending: Some(ToolEnding::Cancelled),
                    ..
                }
            )]
        ),
        "{notices:?}"
    );
    assert_eq!(h.fakes.events.events()[0].outcome, EventOutcome::TimedOut);
}

// SPEC T5, R4, row 30: a timed-out tool that comes back with its result within the grace did its
// work: the model gets the result and the outcome is recorded for reuse; nothing failed.
#[tokio::test(start_paused = true)]
async fn a_timed_out_tool_that_finishes_within_the_grace_is_done() {
    let late = Behaviour::Sleep {
        duration: Duration::from_millis(5300),
        honour_cancel: false,
    };
    let h = with_probe_timeout(late, 5);
    let turn = h.turn(public_scope());
    let entry = entry(h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await);
    assert_eq!(entry.status, EntryStatus::Succeeded);
    assert!(h.fakes.thought_log.notices().is_empty(), "nothing failed");
    assert_eq!(h.fakes.events.events()[0].outcome, EventOutcome::Succeeded);
    assert_eq!(h.fakes.outcomes.outcomes(turn.id).await.unwrap().len(), 1);
}

// SPEC T5: the active tool name is set while the tool runs.
#[tokio::test]
async fn active_tool_name_is_set_while_the_tool_runs_and_cleared_after() {
    let h = Harness::new();
    let turn = h.turn(public_scope());
    entry(h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await);
    assert_eq!(
        h.probe.active_seen.lock().unwrap().as_deref(),
        Some("probe")
    );
    assert_eq!(turn.channel.active_tool(), None);
}

/// Runs `probe` under a 300 s timeout and kills the turn 2 s into it; returns the outcome and
/// how long the call took.
async fn killed_after_two_seconds(h: &Harness, turn: &Arc<Turn>) -> (ToolCallOutcome, Duration) {
    let session = h.session(Role::Persona, turn);
    let killer = {
        let turn = turn.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(2)).await;
            assert_eq!(
                turn.channel.active_tool().as_deref(),
                Some("probe"),
                "/kill can name it"
            );
            turn.stop.kill();
        })
    };
    let call = ToolCallRequest::new("c1", "probe", r#"{"n":1}"#);
    let started = tokio::time::Instant::now();
    let outcome = execute_tool_call(&session, Some(&call), &mut Vec::new()).await;
    killer.await.unwrap();
    (outcome, started.elapsed())
}

/// The ending the thought log's stop notice gives, checked against the turn's record for
/// `/kill`'s answer and the event (row 30: all three say the same).
fn assert_killed_tool_ended(h: &Harness, turn: &Turn, ending: ToolEnding, outcome: EventOutcome) {
    let notices = h.fakes.thought_log.notices();
    let [
        (
            _,
            Notice::ToolStopped {
                tool, ending: told, ..
            },
        ),
    ] = &notices[..]
    else {
        panic!("one stop notice: {notices:?}");
    };
    assert_eq!((tool.as_str(), *told), ("probe", ending));
    assert_eq!(
        turn.stopped_tool(),
        Some(StoppedTool {
            name: "probe".into(),
            ending
        })
    );
    let event = &h.fakes.events.events()[0];
    assert_eq!(event.outcome, outcome);
    assert_eq!(event.code.as_deref(), Some("killed"));
}

// SPEC T5, C6, row 30: /kill during a tool that ignores cancellation waits a short grace for it,
// then drops it: the event, the notice and /kill's record say it may still finish.
#[tokio::test(start_paused = true)]
async fn kill_during_a_tool_that_ignores_cancellation_says_it_may_still_finish() {
    let h = with_probe_timeout(slow(false), 300);
    let turn = h.turn(public_scope());
    let (outcome, took) = killed_after_two_seconds(&h, &turn).await;
    assert_eq!(
        outcome,
        ToolCallOutcome::Abort {
            status: TurnStatus::StoppedByUser
        }
    );
    assert_eq!(
        took,
        Duration::from_secs(2) + STOP_GRACE,
        "the grace, and no more"
    );
    assert_eq!(turn.channel.active_tool(), None, "cleared after a kill");
    assert!(h.probe.was_cancelled());
    assert_killed_tool_ended(
        &h,
        &turn,
        ToolEnding::MayStillFinish,
        EventOutcome::MayStillFinish,
    );
}

// SPEC T5, C6, row 30: /kill during a tool that honours cancellation: it is cancelled, at once.
#[tokio::test(start_paused = true)]
async fn kill_during_a_tool_that_honours_cancellation_says_cancelled() {
    let h = with_probe_timeout(slow(true), 300);
    let turn = h.turn(public_scope());
    let (outcome, took) = killed_after_two_seconds(&h, &turn).await;
    assert_eq!(
        outcome,
        ToolCallOutcome::Abort {
            status: TurnStatus::StoppedByUser
        }
    );
    assert_eq!(took, Duration::from_secs(2), "no waiting for the tool");
    assert_killed_tool_ended(&h, &turn, ToolEnding::Cancelled, EventOutcome::Cancelled);
    assert!(h.fakes.outcomes.durability().is_empty(), "nothing to reuse");
}

// SPEC T5, C6, R4, row 30: /kill during a tool that finishes within the grace: it is done, its
// outcome is recorded so a resumed turn reuses it, and the turn still stops.
#[tokio::test(start_paused = true)]
async fn kill_during_a_tool_that_finishes_within_the_grace_says_done() {
    let late = Behaviour::Sleep {
        duration: Duration::from_millis(2500),
        honour_cancel: false,
    };
    let h = with_probe_timeout(late, 300);
    let turn = h.turn(public_scope());
    let (outcome, took) = killed_after_two_seconds(&h, &turn).await;
    assert_eq!(
        outcome,
        ToolCallOutcome::Abort {
            status: TurnStatus::StoppedByUser
        }
    );
    assert_eq!(took, Duration::from_millis(2500));
    assert_killed_tool_ended(&h, &turn, ToolEnding::Done, EventOutcome::Succeeded);
    assert_eq!(h.fakes.outcomes.outcomes(turn.id).await.unwrap().len(), 1);
}

// SPEC T5: per-tool timeouts; a tool honouring cancellation stops at the timeout.
#[tokio::test(start_paused = true)]
async fn per_tool_timeout_is_used_instead_of_the_default() {
    let h = with_probe_timeout(slow(true), 2);
    let turn = h.turn(public_scope());
    let started = tokio::time::Instant::now();
    let entry = entry(h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await);
    assert_eq!(code(&entry), "tool_timeout");
    assert_eq!(started.elapsed(), Duration::from_secs(2));
}

// ---------------------------------------------------------------- T6

fn older_history() -> Vec<HistoryMessage> {
    (1..=3)
        .rev()
        .map(|i| HistoryMessage {
            id: MessageId(100 + i),
            author: format!("user{i}"),
            from_bot: false,
            content: format!("message {i}"),
            at_ms: i as i64,
            attachments: Vec::new(),
        })
        .collect()
}

// SPEC T6
#[tokio::test]
async fn consumed_context_restart_returns_restart_without_a_history_entry() {
    let h = Harness::with_fakes(Fakes::default().with_history(older_history()));
    let turn = h.turn(public_scope());
    turn.set_context_oldest(MessageId(200));
    let outcome = h
        .call(
            Role::Persona,
            &turn,
            "fetch_older_messages",
            r#"{"count":2}"#,
        )
        .await;
    let ToolCallOutcome::Restart(restart) = outcome else {
        panic!("a restart: {outcome:?}");
    };
    assert_eq!(restart.messages.len(), 2);
    assert_eq!(restart.oldest, MessageId(102));
    // The stage hands the messages back; the turn's context, their owner, takes them.
    assert_eq!(turn.context_oldest(), Some(MessageId(200)));
    assert!(
        turn.review(|r| r.calls.is_empty()),
        "drafting off keeps no restart entry for a reviewer"
    );
}

// SPEC T6, T7, R2: with drafting On the restart call is kept for review, in the same list as
// every other call, with the payload built by the same builder.
#[tokio::test]
async fn restart_with_drafting_on_keeps_the_entry_for_review() {
    let h = Harness::with_fakes(Fakes::default().with_history(older_history()));
    let turn = Arc::new(Turn::new(public_scope(), Locale::En).drafting(true));
    let outcome = h
        .call(Role::Persona, &turn, "fetch_older_messages", "{}")
        .await;
    assert!(
        matches!(outcome, ToolCallOutcome::Restart(_)),
        "{outcome:?}"
    );
    let calls = turn.review(|r| r.calls.clone());
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].tool, "fetch_older_messages");
    assert_eq!(calls[0].outcome, json!({"result": {"messages": 3}}));
}

// SPEC T6: nothing to restart with is an ordinary history entry.
#[tokio::test]
async fn restart_tool_with_nothing_to_add_is_a_history_entry() {
    let h = Harness::new();
    let turn = h.turn(public_scope());
    let entry = entry(
        h.call(Role::Persona, &turn, "fetch_older_messages", "{}")
            .await,
    );
    assert_eq!(entry.response["result"], json!({"messages": 0}));
    assert_eq!(turn.context_oldest(), None);
}

// SPEC T6
#[tokio::test]
async fn pre_tool_text_moves_onto_the_entry_and_the_buffer_is_cleared() {
    let h = Harness::new();
    let turn = h.turn(public_scope());
    let session = h.session(Role::Persona, &turn);
    let call = ToolCallRequest::new("c9", "probe", r#"{"n":2}"#);
    let mut streamed = vec!["Let me check".to_owned(), " that.".to_owned()];
    let entry = entry(execute_tool_call(&session, Some(&call), &mut streamed).await);
    assert_eq!(entry.pre_tool_text, vec!["Let me check", " that."]);
    assert!(streamed.is_empty(), "not sent twice");
    assert_eq!(entry.call_id, "c9");
    assert_eq!(entry.tool_name, "probe");
    assert_eq!(entry.arguments, r#"{"n":2}"#);
}

// SPEC T6
#[tokio::test]
async fn white_space_only_pre_tool_text_is_not_kept() {
    let h = Harness::new();
    let turn = h.turn(public_scope());
    let session = h.session(Role::Persona, &turn);
    let call = ToolCallRequest::new("c9", "probe", r#"{"n":2}"#);
    let mut streamed = vec!["\n".to_owned(), "  ".to_owned()];
    let entry = entry(execute_tool_call(&session, Some(&call), &mut streamed).await);
    assert!(entry.pre_tool_text.is_empty());
    assert!(streamed.is_empty());
}

// ---------------------------------------------------------------- T7

// SPEC T7
#[tokio::test]
async fn success_payload_has_result_and_message_beside_it() {
    let h = Harness::with_probe(Behaviour::Succeed {
        data: Some(json!({"message": "tool's own", "count": 2, "end_turn": true})),
        message: Some("for the model".into()),
    });
    let turn = h.turn(public_scope());
    let entry = entry(h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await);
    assert_eq!(
        entry.response,
        json!({"result": {"message": "tool's own", "count": 2}, "message": "for the model"})
    );
}

// SPEC T7
#[tokio::test]
async fn tool_returning_no_data_reports_completed() {
    let h = Harness::new();
    let turn = h.turn(public_scope());
    let entry = entry(h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await);
    assert_eq!(entry.response, json!({"result": {"status": "completed"}}));
}

// SPEC T7, R4: the reusable outcome carries the same payload, and reuse dispatches nothing.
#[tokio::test]
async fn reused_outcome_has_the_same_payload_and_is_not_dispatched_again() {
    let h = Harness::with_probe(Behaviour::Succeed {
        data: Some(json!({"v": 1})),
        message: Some("m".into()),
    });
    let turn = h.turn(public_scope());
    let first = entry(
        h.call(Role::Persona, &turn, "probe", r#"{"n":1,"note":"x"}"#)
            .await,
    );
    // Same invocation: drafting Off repeats within one invocation run again.
    let again = entry(
        h.call(Role::Persona, &turn, "probe", r#"{"note":"x","n":1}"#)
            .await,
    );
    assert_eq!(h.probe.runs(), 2);
    // A key rotation or fallback starts a new invocation: the completed call is reused.
    turn.begin_invocation();
    let reused = entry(
        h.call(Role::Persona, &turn, "probe", r#"{"note":"x","n":1}"#)
            .await,
    );
    assert_eq!(
        h.probe.runs(),
        2,
        "never dispatched twice across invocations"
    );
    assert_eq!(first.response, reused.response);
    assert_eq!(again.response, reused.response);
    assert_eq!(
        h.fakes.events.events().last().unwrap().outcome,
        EventOutcome::Reused
    );
    // The outcome is stored too, so a turn resumed after a restart reuses it.
    let stored = h.fakes.outcomes.outcomes(turn.id).await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].response, first.response);
}

// ---------------------------------------------------------------- T8

fn media(failure: ProviderFailure) -> Harness {
    Harness::build(Fakes::default(), Behaviour::succeed(), |r| {
        r.with(MediaTool(failure))
    })
}

// SPEC T8
#[tokio::test]
async fn media_tool_failure_reaches_the_model_classified_with_localized_tips() {
    let h = media(ProviderFailure {
        status: Some(429),
        message: "insufficient_quota: org-SECRET has no credit left".into(),
        workflow_model_file: None,
    });
    let turn = Arc::new(Turn::new(public_scope(), Locale::Ja));
    let entry = entry(
        h.call(Role::Persona, &turn, "render_image", r#"{"prompt":"cat"}"#)
            .await,
    );
    let r = &entry.response;
    assert_eq!(r["status"], "tool_execution_failed");
    assert_eq!(r["tool_name"], "render_image");
    assert_eq!(r["code"], "insufficient_balance");
    let tips = r["suggested_actions"].as_array().unwrap();
    assert_eq!(tips.len(), 2);
    assert!(
        tips[0].as_str().unwrap().contains("残高"),
        "Japanese tips: {tips:?}"
    );
    assert!(
        !r.to_string().contains("SECRET"),
        "no raw provider text: {r}"
    );
    assert_eq!(r.as_object().unwrap().len(), 5);
}

// SPEC T8
#[tokio::test]
async fn missing_comfyui_model_names_the_workflow_file_only() {
    let h = media(ProviderFailure {
        status: Some(400),
        message: "Value not in list: ckpt_name: 'internal/leak.safetensors' not in []".into(),
        workflow_model_file: Some("dreamshaper_8.safetensors".into()),
    });
    let turn = h.turn(public_scope());
    let entry = entry(
        h.call(Role::Persona, &turn, "render_image", r#"{"prompt":"cat"}"#)
            .await,
    );
    let text = entry.response.to_string();
    assert_eq!(code(&entry), "missing_model_file");
    assert!(text.contains("dreamshaper_8.safetensors"), "{text}");
    assert!(!text.contains("leak"), "{text}");
}

// SPEC T8
#[tokio::test]
async fn other_failures_keep_the_tools_message_with_tool_error_code() {
    let h = Harness::with_probe(Behaviour::Fail(ToolError::Failed {
        code: None,
        message: "the widget jammed".into(),
    }));
    let turn = h.turn(public_scope());
    let entry = entry(h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await);
    assert_eq!(
        entry.response,
        json!({"status": "tool_execution_failed", "reason": "the widget jammed",
               "tool_name": "probe", "code": "tool_error", "suggested_actions": []})
    );
}

// ---------------------------------------------------------------- T9

fn sticker_harness() -> Harness {
    Harness::with_fakes(Fakes::default().with_stickers(stickers()))
}

async fn select(h: &Harness, turn: &Arc<Turn>, name: &str) -> ToolCallOutcome {
    h.call(
        Role::Persona,
        turn,
        "select_sticker_for_response",
        &format!(r#"{{"name":"{name}"}}"#),
    )
    .await
}

// SPEC T9
#[tokio::test]
async fn same_sticker_twice_is_posted_once_and_returns_already_delivered() {
    let h = sticker_harness();
    h.fakes.sink.script_expression(ExpressionSend::Confirmed);
    let turn = h.turn(public_scope());
    let first = entry(select(&h, &turn, "wave").await);
    assert_eq!(first.response["result"], json!({"sticker": "wave"}));
    let second = entry(select(&h, &turn, "WAVE").await);
    assert_eq!(second.response["result"]["status"], "already_delivered");
    assert_eq!(
        second.response,
        json!({"result": {"status": "already_delivered", "sent": false},
               "message": "This sticker was already sent in this reply; it was not sent again."})
    );
    assert_eq!(h.fakes.sink.stickers().len(), 1, "posted once");
    assert_eq!(
        turn.expression(),
        ExpressionState::Delivered(ExpressionId::Sticker(1))
    );
}

// SPEC T9
#[tokio::test]
async fn a_different_sticker_after_one_returns_limit_reached() {
    let h = sticker_harness();
    h.fakes.sink.script_expression(ExpressionSend::Confirmed);
    let turn = h.turn(public_scope());
    entry(select(&h, &turn, "wave").await);
    let other = entry(select(&h, &turn, "heart").await);
    assert_eq!(other.response["result"]["status"], "limit_reached");
    assert_eq!(
        other.response,
        json!({"result": {"status": "limit_reached", "sent": false},
               "message": "Only one expression (a sticker or a reaction) per reply, and one was already sent; this sticker was not."})
    );
    assert_eq!(h.fakes.sink.stickers().len(), 1);
}

// SPEC T9, T11
#[tokio::test]
async fn unconfirmed_sticker_send_blocks_every_later_send_and_call() {
    let h = sticker_harness();
    h.fakes.sink.script_expression(ExpressionSend::Unconfirmed);
    let turn = h.turn(public_scope());
    let outcome = select(&h, &turn, "wave").await;
    assert_eq!(
        outcome,
        ToolCallOutcome::Abort {
            status: TurnStatus::DeliveryUnconfirmed
        }
    );
    assert_eq!(turn.expression(), ExpressionState::Blocked);
    // Any further call this turn, even after a key rotation, stops before dispatch.
    turn.begin_invocation();
    let later = h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await;
    assert_eq!(
        later,
        ToolCallOutcome::Abort {
            status: TurnStatus::DeliveryUnconfirmed
        }
    );
    assert_eq!(h.probe.runs(), 0);
    assert_eq!(
        select(&h, &turn, "heart").await,
        ToolCallOutcome::Abort {
            status: TurnStatus::DeliveryUnconfirmed
        },
        "a different sticker stops before dispatch too"
    );
    assert_eq!(
        h.fakes.sink.stickers().len(),
        1,
        "no second send (the sink would panic)"
    );
    assert!(
        h.fakes.thought_log.notices().is_empty(),
        "no notice for an unconfirmed delivery"
    );
    assert!(!persona_bot::stage::expression::sends_allowed(&turn));
}

// SPEC T9
#[tokio::test]
async fn a_definite_refusal_frees_the_allowance() {
    let h = sticker_harness();
    h.fakes.sink.script_expression(ExpressionSend::Refused {
        reason: "50081 invalid sticker".into(),
    });
    h.fakes.sink.script_expression(ExpressionSend::Confirmed);
    let turn = h.turn(public_scope());
    let refused = entry(select(&h, &turn, "wave").await);
    assert_eq!(code(&refused), "sticker_refused");
    assert!(!refused.response.to_string().contains("50081"));
    assert_eq!(turn.expression(), ExpressionState::Available);
    let sent = entry(select(&h, &turn, "heart").await);
    assert_eq!(sent.status, EntryStatus::Succeeded);
    assert_eq!(h.fakes.sink.stickers().len(), 2);
}

// SPEC T9: a sticker-only turn has delivered a response.
#[tokio::test]
async fn sticker_only_turn_counts_as_delivered() {
    let h = sticker_harness();
    h.fakes.sink.script_expression(ExpressionSend::Confirmed);
    let turn = h.turn(public_scope());
    assert!(!turn.delivered());
    entry(select(&h, &turn, "heart").await);
    assert!(turn.delivered());
}

// SPEC T9: the allowance lives on the turn: it survives invocations (fallback, rotation).
#[tokio::test]
async fn sticker_allowance_survives_fallback_and_retries() {
    let h = sticker_harness();
    h.fakes.sink.script_expression(ExpressionSend::Confirmed);
    let turn = h.turn(public_scope());
    entry(select(&h, &turn, "wave").await);
    turn.begin_invocation();
    let replay = entry(select(&h, &turn, "wave").await);
    assert_eq!(
        replay.response["result"],
        json!({"sticker": "wave"}),
        "reused outcome"
    );
    let other = entry(select(&h, &turn, "heart").await);
    assert_eq!(other.response["result"]["status"], "limit_reached");
    assert_eq!(h.fakes.sink.stickers().len(), 1);
}

// SPEC T9, S4: an unknown sticker name is a business error; nothing is sent.
#[tokio::test]
async fn unknown_sticker_name_is_a_business_error_listing_the_stickers() {
    let h = sticker_harness();
    let turn = h.turn(public_scope());
    let entry = entry(select(&h, &turn, "dance").await);
    assert_eq!(code(&entry), "unknown_sticker");
    let reason = entry.response["reason"].as_str().unwrap();
    assert!(
        reason.contains("wave") && reason.contains("heart"),
        "{reason}"
    );
    assert!(h.fakes.sink.stickers().is_empty());
}

// ---------------------------------------------------------------- T10

// SPEC T10
#[tokio::test]
async fn successful_call_in_a_server_channel_records_tool_used() {
    let h = Harness::new();
    let turn = h.turn(public_scope());
    entry(h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await);
    let records = h.fakes.stats.records();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].metric, Metric::ToolUsed);
    assert_eq!(records[0].key, "probe");
    assert_eq!(Some(records[0].server), turn.scope.server);
}

// SPEC T10
#[tokio::test]
async fn dm_tool_calls_record_no_stats() {
    let h = Harness::new();
    let turn = h.turn(dm_scope());
    entry(h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await);
    assert_eq!(h.probe.runs(), 1);
    assert!(h.fakes.stats.records().is_empty());
}

// SPEC T10
#[tokio::test]
async fn failed_and_blocked_calls_record_no_stats() {
    let h = sticker_harness();
    h.fakes.sink.script_expression(ExpressionSend::Confirmed);
    let turn = h.turn(public_scope());
    entry(h.call(Role::Persona, &turn, "probe", r#"{"n":900}"#).await);
    entry(h.call(Role::Persona, &turn, "no_such_tool", "{}").await);
    entry(select(&h, &turn, "wave").await);
    entry(select(&h, &turn, "wave").await); // already delivered: blocked
    let records = h.fakes.stats.records();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0].key, "select_sticker_for_response");
}

// ---------------------------------------------------------------- T11

// SPEC T11
#[tokio::test]
async fn failed_call_posts_a_notice_with_redacted_arguments() {
    let h = Harness::with_probe(Behaviour::Fail(ToolError::Failed {
        code: Some("jammed".into()),
        message: "the widget jammed".into(),
    }));
    let turn = h.turn(public_scope());
    let args = r#"{"n":1,"note":"use key sk-live-abcdefghijklmnopqrstuvwxyz please"}"#;
    entry(h.call(Role::Persona, &turn, "probe", args).await);
    let notices = h.fakes.thought_log.notices();
    let [
        (
            server,
            Notice::ToolFailed {
                tool,
                arguments,
                code,
                kind,
                ..
            },
        ),
    ] = &notices[..]
    else {
        panic!("expected one failure notice, got {notices:?}");
    };
    assert_eq!(Some(*server), turn.scope.server);
    assert_eq!(tool, "probe");
    assert_eq!(code, "jammed");
    assert_eq!(*kind, FailureKind::Execution);
    assert!(!arguments.contains("sk-live"), "{arguments}");
    assert!(arguments.contains("[redacted]"), "{arguments}");
    // The event keeps the same redacted arguments.
    assert_eq!(&h.fakes.events.events()[0].arguments, arguments);
}

// SPEC T11
#[tokio::test]
async fn nothing_from_a_dm_or_a_private_channel_is_mirrored() {
    for scope in [dm_scope(), private_scope()] {
        let h = Harness::with_probe(Behaviour::Fail(ToolError::Failed {
            code: None,
            message: "boom".into(),
        }));
        let turn = Arc::new(
            Turn::new(scope, Locale::En)
                .quiet(true)
                .admission(deliberate(&[("probe", Some("poke"))])),
        );
        entry(h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await);
        assert!(h.fakes.thought_log.notices().is_empty());
    }
}

// SPEC T11
#[tokio::test]
async fn quiet_turn_progress_goes_to_the_thought_log_as_a_card() {
    let h = Harness::new();
    let turn = Arc::new(Turn::new(public_scope(), Locale::En).quiet(true));
    entry(
        h.call(Role::Persona, &turn, "plan_image", r#"{"prompt":"a cat"}"#)
            .await,
    );
    assert!(
        h.fakes.sink.progress().is_empty(),
        "the conversation stays quiet"
    );
    let notices = h.fakes.thought_log.notices();
    assert!(matches!(&notices[..], [(_, Notice::Progress { tool, .. })] if tool == "plan_image"));
}

// SPEC T11
#[tokio::test]
async fn ordinary_turn_progress_goes_to_the_conversation() {
    let h = Harness::new();
    let turn = Arc::new(Turn::new(public_scope(), Locale::ZhTw));
    entry(
        h.call(Role::Persona, &turn, "plan_image", r#"{"prompt":"a cat"}"#)
            .await,
    );
    let progress = h.fakes.sink.progress();
    assert_eq!(progress.len(), 1);
    assert!(
        progress[0].1.contains("規劃"),
        "localized: {}",
        progress[0].1
    );
    assert!(h.fakes.thought_log.notices().is_empty());
}

// SPEC T11: hidden image planning (the image planner's calls) posts no progress notice, in the
// conversation or, on a quiet turn, in the thought log; the persona's same call does.
#[tokio::test]
async fn hidden_image_planning_posts_no_progress_notices() {
    let h = Harness::new();
    for quiet in [false, true] {
        let turn = Arc::new(Turn::new(public_scope(), Locale::En).quiet(quiet));
        entry(
            h.call(
                Role::ImagePlanner,
                &turn,
                "plan_image",
                &format!(r#"{{"prompt":"a cat, quiet {quiet}"}}"#),
            )
            .await,
        );
    }
    assert!(h.fakes.sink.progress().is_empty());
    assert!(h.fakes.thought_log.notices().is_empty());
    assert_eq!(h.fakes.plans.plans().len(), 2);
    let turn = Arc::new(Turn::new(public_scope(), Locale::En));
    entry(
        h.call(Role::Persona, &turn, "plan_image", r#"{"prompt":"a cat"}"#)
            .await,
    );
    assert_eq!(h.fakes.sink.progress().len(), 1, "the persona's call does");
}

// ---------------------------------------------------------------- T12

// SPEC T12
#[tokio::test]
async fn short_term_memory_updates_once_per_turn() {
    let h = Harness::new();
    let turn = h.turn(public_scope());
    let first = entry(
        h.call(
            Role::Persona,
            &turn,
            "update_short_term_memory",
            r#"{"summary":"one"}"#,
        )
        .await,
    );
    assert_eq!(first.status, EntryStatus::Succeeded);
    let names = h.session(Role::Persona, &turn).offered_names();
    assert!(
        !names.contains(&"update_short_term_memory"),
        "hidden after the update"
    );
    let second = entry(
        h.call(
            Role::Persona,
            &turn,
            "update_short_term_memory",
            r#"{"summary":"two"}"#,
        )
        .await,
    );
    assert_eq!(code(&second), "already_used_this_turn");
    let stored = h
        .fakes
        .memory
        .summary_of(turn.scope.channel, &turn.scope.persona);
    assert_eq!(stored.as_deref(), Some("one"));
    // A new turn may update it again.
    let next = h.turn(public_scope());
    assert!(
        h.session(Role::Persona, &next)
            .offered_names()
            .contains(&"update_short_term_memory")
    );
}

// SPEC T12: only a successful update locks it.
#[tokio::test]
async fn failed_short_term_memory_update_does_not_lock_it() {
    let h = Harness::new();
    h.fakes.memory.fail_with_outage();
    let turn = h.turn(public_scope());
    let failed = entry(
        h.call(
            Role::Persona,
            &turn,
            "update_short_term_memory",
            r#"{"summary":"one"}"#,
        )
        .await,
    );
    assert_eq!(code(&failed), "service_unavailable");
    assert!(!failed.response.to_string().contains("connection refused"));
    assert!(!turn.short_term_memory_locked());
}

// SPEC T11 regression: a failed sticker call whose argument was a key posted its own reason,
// "No sticker named `sk-...`", to the thought log; the reason is redacted like the arguments.
#[tokio::test]
async fn a_tool_reason_quoting_a_secret_argument_is_redacted_in_the_notice() {
    let key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789";
    let h = sticker_harness();
    let turn = h.turn(public_scope());
    let entry = entry(select(&h, &turn, key).await);
    assert_eq!(code(&entry), "unknown_sticker");
    let notices = h.fakes.thought_log.notices();
    let Some((
        _,
        Notice::ToolFailed {
            reason, arguments, ..
        },
    )) = notices.first()
    else {
        panic!("no failure notice: {notices:?}");
    };
    assert!(!reason.contains("sk-proj"), "{reason}");
    assert!(reason.contains(persona_bot::redact::REDACTED), "{reason}");
    assert!(!arguments.contains("sk-proj"), "{arguments}");
    let card =
        persona_bot::domain::thought_log::render(&notices[0].1, persona_bot::locale::Locale::En);
    assert!(
        card.fields.iter().all(|(_, v)| !v.contains("sk-proj")),
        "{card:?}"
    );
}
