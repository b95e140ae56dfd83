//! Response Drafting (SPEC C8, R1-R5, T2): tool-request review in the stage with a scripted
//! reviewer, and reply review through the orchestrator and the pass loop. The reviewer as a real
//! model on the fake server is in `tests/discord_e2e.rs` (the `drafting_*` tests).

// The shared fakes this binary uses (tests/support/). Public, so that what it leaves
// unused of them is not dead code.
pub mod support {
    pub mod bot;
    pub mod harness;
}

use std::sync::Arc;
use std::time::Duration;

use persona_bot::domain::history::EntryStatus;
use persona_bot::domain::ports::{
    ChatMessage, EventOutcome, OutcomeStore, ServerSettings, SettingsStore, Sticker,
};
use persona_bot::domain::review::{ReviewOutcome, ReviewPolicy, ReviewVerdict};
use persona_bot::domain::role::Role;
use persona_bot::domain::scope::ServerId;
use persona_bot::domain::turn::{Turn, TurnStatus};
use persona_bot::engine::passes::TurnEnd;
use persona_bot::engine::reviewer::ModelReviewer;
use persona_bot::locale::Locale;
use persona_bot::stage::ToolCallOutcome;
use persona_bot::testkit::{
    Fakes, InMemoryQueue, InMemorySettings, ScriptedModel, ScriptedPass, ScriptedReviewer, Step,
    public_scope,
};
use serde_json::json;
use support::bot::{ALICE, Bot, CHANNEL, SERVER, message};
use support::harness::{Behaviour, Harness, entry};

fn pass() -> ReviewOutcome {
    ReviewOutcome::Verdict(ReviewVerdict::Pass)
}

fn reject(finding: &str, correction_allowed: bool) -> ReviewOutcome {
    ReviewOutcome::Verdict(ReviewVerdict::Reject {
        findings: vec![finding.into()],
        correction_allowed,
    })
}

fn drafting_harness(reviewer: &Arc<ScriptedReviewer>) -> Harness {
    Harness::new().with_reviewer(reviewer.clone())
}

fn drafting_turn() -> Arc<Turn> {
    Arc::new(Turn::new(public_scope(), Locale::En).drafting(true))
}

// ---------------------------------------------------------------- R1

// SPEC R1: the reviewer sees exactly the prepared request (defaults filled in) that runs.
#[tokio::test]
async fn the_reviewer_sees_exactly_the_request_that_runs() {
    let reviewer = Arc::new(ScriptedReviewer::default());
    reviewer.on_request(pass()).on_request(pass());
    let h = drafting_harness(&reviewer);
    let turn = drafting_turn();
    let e = entry(
        h.call(Role::Persona, &turn, "probe", r#"{"note":"hi","n":4}"#)
            .await,
    );
    assert_eq!(e.status, EntryStatus::Succeeded);
    let (seen, _) = &reviewer.seen_requests()[0];
    assert_eq!(seen.name, "probe");
    assert_eq!(
        Some(seen.arguments.clone()),
        *h.probe.last_args.lock().unwrap(),
        "what ran"
    );
    assert_eq!(seen.identity, r#"probe{"n":4,"note":"hi"}"#);
    let fact = entry(
        h.call(
            Role::Persona,
            &turn,
            "remember_fact",
            r#"{"fact":"likes tea"}"#,
        )
        .await,
    );
    assert_eq!(fact.status, EntryStatus::Succeeded, "{}", fact.response);
    let (seen, _) = &reviewer.seen_requests()[1];
    assert_eq!(
        seen.arguments,
        json!({"fact": "likes tea", "about": "server"}),
        "defaults resolved"
    );
}

// SPEC R1: availability and permission checks come before the paid review.
#[tokio::test]
async fn refused_requests_never_reach_the_reviewer() {
    let reviewer = Arc::new(ScriptedReviewer::default());
    let h = drafting_harness(&reviewer);
    let turn = drafting_turn();
    for (name, args) in [
        ("submit_review", r#"{"decision":"pass"}"#),
        ("no_such_tool", "{}"),
        ("probe", r#"{"n":"x"}"#),
    ] {
        let e = entry(h.call(Role::Persona, &turn, name, args).await);
        assert_eq!(e.status, EntryStatus::Failed, "{name}");
    }
    assert!(
        reviewer.seen_requests().is_empty(),
        "no review was paid for"
    );
}

// SPEC R1: review runs only when the server checks tool calls; requests are prepared anyway.
#[tokio::test]
async fn no_review_when_the_server_does_not_check_tool_calls() {
    let reviewer = Arc::new(ScriptedReviewer::default());
    let h = drafting_harness(&reviewer);
    let policy = ReviewPolicy {
        tool_calls: false,
        ..ReviewPolicy::default()
    };
    let turn = Arc::new(
        Turn::new(public_scope(), Locale::En)
            .drafting(true)
            .review_policy(policy),
    );
    let e = entry(
        h.call(Role::Persona, &turn, "probe", r#"{"note":"a","n":1}"#)
            .await,
    );
    assert_eq!(e.status, EntryStatus::Succeeded);
    assert_eq!(
        e.arguments, r#"{"n":1,"note":"a"}"#,
        "prepared (canonical) either way"
    );
    assert!(reviewer.seen_requests().is_empty());
}

// ---------------------------------------------------------------- R2

// SPEC R2: pass dispatches once; reject gives review_rejected with action_executed false, no
// failure notice and no usage stat; the reviewer sees earlier calls, rejections included.
#[tokio::test]
async fn verdicts_dispatch_once_or_reject_without_a_failure() {
    let reviewer = Arc::new(ScriptedReviewer::default());
    reviewer
        .on_request(pass())
        .on_request(reject("names a real person", true))
        .on_request(pass());
    let h = drafting_harness(&reviewer);
    let turn = drafting_turn();
    entry(h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await);
    assert_eq!(h.probe.runs(), 1);
    let rejected = entry(h.call(Role::Persona, &turn, "probe", r#"{"n":2}"#).await);
    assert_eq!(h.probe.runs(), 1, "nothing ran");
    assert_eq!(rejected.status, EntryStatus::ReviewRejected);
    assert_eq!(
        rejected.response,
        json!({"status": "review_rejected", "action_executed": false, "tool_name": "probe",
               "correction_allowed": true, "findings": ["names a real person"]})
    );
    assert!(
        h.fakes.thought_log.notices().is_empty(),
        "no failure notice"
    );
    assert_eq!(
        h.fakes.stats.records().len(),
        1,
        "only the call that ran is counted"
    );
    assert_eq!(
        h.fakes.events.events()[1].outcome,
        EventOutcome::ReviewRejected
    );
    entry(h.call(Role::Persona, &turn, "probe", r#"{"n":3}"#).await);
    let (_, earlier) = &reviewer.seen_requests()[2];
    let outcomes: Vec<String> = earlier
        .iter()
        .map(|c| c.outcome["status"].as_str().unwrap_or("ok").to_owned())
        .collect();
    assert_eq!(
        outcomes,
        vec!["ok", "review_rejected"],
        "real outcomes, rejection included"
    );
}

// ---------------------------------------------------------------- R3

// SPEC R3: the exact rejected request stays blocked (no second paid review); a changed one is
// reviewed; limits survive fallback.
#[tokio::test]
async fn an_exact_rejected_request_stays_blocked_across_fallback() {
    let reviewer = Arc::new(ScriptedReviewer::default());
    reviewer
        .on_request(reject("too graphic", true))
        .on_request(pass());
    let h = drafting_harness(&reviewer);
    let turn = drafting_turn();
    entry(h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await);
    turn.begin_invocation(); // a key rotation or model fallback
    let again = entry(h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await);
    assert_eq!(again.status, EntryStatus::ReviewRejected);
    assert_eq!(again.response["findings"], json!(["too graphic"]));
    assert_eq!(
        again.response,
        json!({"status": "review_rejected", "action_executed": false, "tool_name": "probe",
               "correction_allowed": true, "findings": ["too graphic"]})
    );
    assert_eq!(reviewer.seen_requests().len(), 1, "not reviewed again");
    let corrected = entry(h.call(Role::Persona, &turn, "probe", r#"{"n":2}"#).await);
    assert_eq!(corrected.status, EntryStatus::Succeeded);
    assert_eq!(h.probe.runs(), 1);
}

// SPEC R3: after the author is told no correction remains, a blocked request ends the turn
// through the held-response path.
#[tokio::test]
async fn a_blocked_request_after_no_correction_ends_in_the_held_response() {
    let reviewer = Arc::new(ScriptedReviewer::default());
    reviewer.on_request(reject("never", false));
    let h = drafting_harness(&reviewer);
    let turn = drafting_turn();
    let first = entry(h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await);
    assert_eq!(first.response["correction_allowed"], false);
    let outcome = h.call(Role::Persona, &turn, "probe", r#"{"n":5}"#).await;
    assert_eq!(
        outcome,
        ToolCallOutcome::Abort {
            status: TurnStatus::HeldResponse
        }
    );
    assert_eq!(reviewer.seen_requests().len(), 1);
}

// SPEC R3: two corrections and eight detailed reviews per turn.
#[tokio::test]
async fn corrections_and_detailed_reviews_are_budgeted_per_turn() {
    let reviewer = Arc::new(ScriptedReviewer::default());
    for _ in 0..3 {
        reviewer.on_request(reject("no", true));
    }
    let h = drafting_harness(&reviewer);
    let turn = drafting_turn();
    let mut corrections = Vec::new();
    for n in 1..=3 {
        let e = entry(
            h.call(Role::Persona, &turn, "probe", &format!(r#"{{"n":{n}}}"#))
                .await,
        );
        corrections.push(e.response["correction_allowed"].as_bool().unwrap());
    }
    assert_eq!(
        corrections,
        vec![true, true, false],
        "two corrections per turn"
    );

    let reviewer = Arc::new(ScriptedReviewer::default());
    for _ in 0..8 {
        reviewer.on_request(pass());
    }
    let h = drafting_harness(&reviewer);
    let turn = drafting_turn();
    for n in 0..8 {
        entry(
            h.call(Role::Persona, &turn, "probe", &format!(r#"{{"n":{n}}}"#))
                .await,
        );
    }
    let ninth = h.call(Role::Persona, &turn, "probe", r#"{"n":50}"#).await;
    assert_eq!(
        ninth,
        ToolCallOutcome::Abort {
            status: TurnStatus::HeldResponse
        }
    );
    assert_eq!(h.probe.runs(), 8);
}

// ---------------------------------------------------------------- R4

// SPEC R4: with drafting On an identical successful request is reused even within one
// invocation, and also after a restart (from the stored outcomes): never dispatched twice.
#[tokio::test]
async fn identical_successful_requests_are_reused_with_drafting_on() {
    let reviewer = Arc::new(ScriptedReviewer::default());
    reviewer.on_request(pass());
    let h = drafting_harness(&reviewer);
    let turn = drafting_turn();
    let first = entry(h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await);
    let again = entry(h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await);
    assert_eq!(h.probe.runs(), 1);
    assert_eq!(first.response, again.response);
    assert_eq!(
        reviewer.seen_requests().len(),
        1,
        "a reused outcome needs no review"
    );
    // After a restart: a new turn object with the same id finds the stored outcome.
    let stored = h.fakes.outcomes.outcomes(turn.id).await.unwrap();
    assert_eq!(stored.len(), 1);
    let resumed = Arc::new(
        Turn::new(public_scope(), Locale::En)
            .drafting(true)
            .with_id(turn.id),
    );
    resumed.restore_outcomes(
        stored
            .into_iter()
            .map(|o| (o.identity, o.response, o.invocation)),
    );
    entry(h.call(Role::Persona, &resumed, "probe", r#"{"n":1}"#).await);
    assert_eq!(h.probe.runs(), 1);
}

// ---------------------------------------------------------------- R5

// SPEC R5: an unavailable reviewer ends review for the turn; earlier rejections stand, changed
// forms of a rejected tool stay blocked, new independent requests follow ordinary rules.
#[tokio::test]
async fn an_unavailable_reviewer_ends_review_but_rejections_stand() {
    let reviewer = Arc::new(ScriptedReviewer::default());
    reviewer
        .on_request(reject("no", true))
        .on_request(ReviewOutcome::Unavailable("reviewer timed out".into()));
    let h = drafting_harness(&reviewer);
    let turn = drafting_turn();
    entry(h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await);
    let fact = entry(
        h.call(Role::Persona, &turn, "remember_fact", r#"{"fact":"a"}"#)
            .await,
    );
    assert_eq!(
        fact.status,
        EntryStatus::Succeeded,
        "independent request, ordinary rules"
    );
    let changed = entry(h.call(Role::Persona, &turn, "probe", r#"{"n":2}"#).await);
    assert_eq!(
        changed.status,
        EntryStatus::ReviewRejected,
        "nothing can approve it now"
    );
    assert_eq!(
        changed.response,
        json!({"status": "review_rejected", "action_executed": false, "tool_name": "probe",
               "correction_allowed": false,
               "findings": ["The reviewer is unavailable, and this tool was rejected earlier in this reply."]})
    );
    let recalled = entry(h.call(Role::Persona, &turn, "recall_facts", "{}").await);
    assert_eq!(recalled.status, EntryStatus::Succeeded);
    assert_eq!(
        reviewer.seen_requests().len(),
        2,
        "no review after it became unavailable"
    );
    assert_eq!(h.probe.runs(), 0);
}

// SPEC R5: a reviewer that becomes unavailable while reviewing a changed form of a rejected
// tool leaves it rejected, with no correction.
#[tokio::test]
async fn a_changed_form_reviewed_as_the_reviewer_fails_stays_rejected() {
    let reviewer = Arc::new(ScriptedReviewer::default());
    reviewer
        .on_request(reject("no", true))
        .on_request(ReviewOutcome::Unavailable("reviewer timed out".into()));
    let h = drafting_harness(&reviewer);
    let turn = drafting_turn();
    entry(h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await);
    let changed = entry(h.call(Role::Persona, &turn, "probe", r#"{"n":2}"#).await);
    assert_eq!(changed.status, EntryStatus::ReviewRejected);
    assert_eq!(
        changed.response,
        json!({"status": "review_rejected", "action_executed": false, "tool_name": "probe",
               "correction_allowed": false,
               "findings": ["The reviewer is unavailable, and this tool was rejected earlier in this reply."]})
    );
    assert_eq!(reviewer.seen_requests().len(), 2);
    assert_eq!(h.probe.runs(), 0);
}

// SPEC S1, R1: a verdict that does not fit submit_review's schema is answered with a failure
// the reviewer model reads, and it may try again.
#[tokio::test]
async fn an_invalid_verdict_is_refused_to_the_reviewer_model() {
    let model = Arc::new(ScriptedModel::new(vec![
        ScriptedPass::call("submit_review", r#"{"decision":"reject"}"#),
        ScriptedPass::call("submit_review", r#"{"decision":"pass"}"#),
    ]));
    let reviewer = Arc::new(ModelReviewer::new(
        model.clone(),
        "Review.".into(),
        Duration::from_secs(30),
    ));
    let h = Harness::new().with_reviewer(reviewer);
    let turn = drafting_turn();
    let ran = entry(h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await);
    assert_eq!(ran.status, EntryStatus::Succeeded);
    assert_eq!(h.probe.runs(), 1);
    let requests = model.requests();
    let answer = requests[1].1.messages.iter().find_map(|m| match m {
        ChatMessage::Tool { content, .. } => Some(content.clone()),
        _ => None,
    });
    assert_eq!(
        answer.as_deref(),
        Some(
            r#"{"status":"tool_execution_failed","code":"invalid_arguments","reason":"The verdict did not fit submit_review's schema: pass with no findings, or reject with at least one short finding."}"#
        )
    );
}

// SPEC R5, T2: cancellation is checked after review, before the tool runs.
#[tokio::test(start_paused = true)]
async fn a_kill_during_review_stops_before_the_tool_runs() {
    let reviewer = Arc::new(ScriptedReviewer::default());
    reviewer.on_request(pass());
    reviewer.slow(Duration::from_secs(5));
    let h = drafting_harness(&reviewer);
    let turn = drafting_turn();
    let killer = {
        let turn = turn.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            turn.stop.kill();
        })
    };
    let outcome = h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await;
    killer.await.unwrap();
    assert_eq!(
        outcome,
        ToolCallOutcome::Abort {
            status: TurnStatus::StoppedByUser
        }
    );
    assert_eq!(h.probe.runs(), 0);
}

// SPEC R5: a kill landing as the review passes is caught before the tool's transport.
#[tokio::test]
async fn cancellation_is_checked_after_a_passing_review() {
    let reviewer = Arc::new(ScriptedReviewer::default());
    reviewer.on_request(pass());
    reviewer.kill_on_answer();
    let h = drafting_harness(&reviewer);
    let turn = drafting_turn();
    let outcome = h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await;
    assert_eq!(
        outcome,
        ToolCallOutcome::Abort {
            status: TurnStatus::StoppedByUser
        }
    );
    assert_eq!(h.probe.runs(), 0);
    assert!(
        h.fakes.sink.progress().is_empty(),
        "stopped before anything else happened"
    );
}

// SPEC T2, C8: with drafting On a follow-up interrupts the review and nothing is dispatched;
// with drafting Off the same follow-up does not stop the chain.
#[tokio::test(start_paused = true)]
async fn a_follow_up_interrupts_review_only_with_drafting_on() {
    let reviewer = Arc::new(ScriptedReviewer::default());
    reviewer.on_request(pass());
    reviewer.slow(Duration::from_secs(5));
    let h = drafting_harness(&reviewer);
    let turn = drafting_turn();
    let follower = {
        let turn = turn.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            turn.stop.note_follow_up();
        })
    };
    let outcome = h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await;
    follower.await.unwrap();
    assert_eq!(
        outcome,
        ToolCallOutcome::Abort {
            status: TurnStatus::FollowUpInterrupt
        }
    );
    assert_eq!(h.probe.runs(), 0);

    let off = h.turn(public_scope());
    off.stop.note_follow_up();
    let ran = entry(h.call(Role::Persona, &off, "probe", r#"{"n":1}"#).await);
    assert_eq!(ran.status, EntryStatus::Succeeded);
    assert_eq!(
        reviewer.seen_requests().len(),
        1,
        "drafting Off: no review at all"
    );
}

// ---------------------------------------------------------------- reply review (C8)

async fn drafting_bot(
    model: ScriptedModel,
    reviewer: &Arc<ScriptedReviewer>,
    fakes: Fakes,
) -> Bot<ScriptedModel> {
    let h = Harness::build(fakes, Behaviour::succeed(), |r| r).with_reviewer(reviewer.clone());
    let settings = Arc::new(InMemorySettings::default());
    let on = ServerSettings {
        drafting: true,
        ..ServerSettings::default()
    };
    settings
        .save_settings(ServerId(SERVER.0), &on)
        .await
        .unwrap();
    Bot::with_settings(h, model, Arc::new(InMemoryQueue::default()), settings)
}

// SPEC C8: the reply is held, reviewed, and posted only once it passes.
#[tokio::test(start_paused = true)]
async fn a_held_reply_is_posted_after_it_passes() {
    let reviewer = Arc::new(ScriptedReviewer::default());
    reviewer.on_reply(pass());
    reviewer.slow(Duration::from_secs(2));
    let model = ScriptedModel::new(vec![ScriptedPass::text(&[
        "Held first.\n\n",
        "Held second.",
    ])]);
    let mut bot = drafting_bot(model, &reviewer, Fakes::default()).await;
    bot.say(message(1, ALICE, "hi")).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        bot.h.fakes.sink.texts().is_empty(),
        "nothing is posted before the review"
    );
    let finished = bot.next().await;
    assert_eq!(finished.report.status, TurnStatus::Completed);
    assert_eq!(bot.transcript(), "Held first.\n\nHeld second.");
    assert_eq!(reviewer.seen_replies(), vec!["Held first.\n\nHeld second."]);
    assert_eq!(finished.report.reviews[0].verdict.as_str(), "pass");
}

// SPEC C8: a rejected draft gets one revision with the findings; the latest draft goes out
// after at most two reviews.
#[tokio::test(start_paused = true)]
async fn a_rejected_draft_is_revised_once_and_the_latest_is_posted() {
    let reviewer = Arc::new(ScriptedReviewer::default());
    reviewer
        .on_reply(reject("too long", true))
        .on_reply(reject("still long", true));
    let model = ScriptedModel::new(vec![
        ScriptedPass::text(&["A very long first draft."]),
        ScriptedPass::text(&["Short."]),
    ]);
    let mut bot = drafting_bot(model, &reviewer, Fakes::default()).await;
    bot.say(message(1, ALICE, "hi")).await;
    let finished = bot.next().await;
    assert_eq!(bot.transcript(), "Short.", "only the latest draft, once");
    assert_eq!(reviewer.seen_replies().len(), 2, "at most two reviews");
    let revision = &bot.model.requests()[1].1.messages;
    assert!(
        format!("{revision:?}").contains("too long"),
        "the findings reach the author"
    );
    let verdicts: Vec<&str> = finished
        .report
        .reviews
        .iter()
        .map(|r| r.verdict.as_str())
        .collect();
    assert_eq!(verdicts, vec!["revise", "revise"]);
}

// SPEC C8, R5: with the reviewer unavailable the draft goes out as written.
#[tokio::test(start_paused = true)]
async fn an_unavailable_reviewer_lets_the_draft_out() {
    let reviewer = Arc::new(ScriptedReviewer::default());
    reviewer.on_reply(ReviewOutcome::Unavailable("down".into()));
    let mut bot = drafting_bot(
        ScriptedModel::new(vec![ScriptedPass::text(&["As written."])]),
        &reviewer,
        Fakes::default(),
    )
    .await;
    bot.say(message(1, ALICE, "hi")).await;
    bot.next().await;
    assert_eq!(bot.transcript(), "As written.");
}

// SPEC C8: /kill during the review discards the held draft.
#[tokio::test(start_paused = true)]
async fn kill_discards_the_held_draft() {
    let reviewer = Arc::new(ScriptedReviewer::default());
    reviewer.on_reply(pass());
    reviewer.slow(Duration::from_secs(30));
    let mut bot = drafting_bot(
        ScriptedModel::new(vec![ScriptedPass::text(&["Never seen."])]),
        &reviewer,
        Fakes::default(),
    )
    .await;
    bot.say(message(1, ALICE, "hi")).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    bot.orchestrator.kill(CHANNEL, ALICE, false).await;
    assert_eq!(bot.next().await.report.status, TurnStatus::StoppedByUser);
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(bot.h.fakes.sink.texts().is_empty());
}

// SPEC C8: a follow-up discards the held draft (even mid-stream) and is answered next.
#[tokio::test(start_paused = true)]
async fn a_follow_up_discards_the_held_draft() {
    let reviewer = Arc::new(ScriptedReviewer::default());
    reviewer.on_reply(pass());
    let model = ScriptedModel::new(vec![
        ScriptedPass::Stream(vec![
            Step::Text("Old answer.\n\n".into()),
            Step::Delay(Duration::from_secs(5)),
            Step::Text("More.".into()),
        ]),
        ScriptedPass::text(&["New answer."]),
    ]);
    let mut bot = drafting_bot(model, &reviewer, Fakes::default()).await;
    bot.say(message(1, ALICE, "first")).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    bot.say(message(2, ALICE, "no wait")).await;
    assert_eq!(
        bot.next().await.report.status,
        TurnStatus::FollowUpInterrupt
    );
    bot.next().await;
    assert_eq!(bot.transcript(), "New answer.");
}

// SPEC C8, T9: public tool output (a sticker) passes the same checkpoint before it is sent, even
// where tool calls are not checked.
#[tokio::test(start_paused = true)]
async fn a_sticker_passes_the_checkpoint_before_it_is_sent() {
    let reviewer = Arc::new(ScriptedReviewer::default());
    reviewer.on_request(reject("not now", true));
    let fakes = Fakes::default().with_stickers(vec![Sticker {
        id: 3,
        name: "wave".into(),
    }]);
    let model = ScriptedModel::new(vec![
        ScriptedPass::call("select_sticker_for_response", r#"{"name":"wave"}"#),
        ScriptedPass::text(&[""]),
    ]);
    let h = Harness::build(fakes, Behaviour::succeed(), |r| r).with_reviewer(reviewer.clone());
    let settings = Arc::new(InMemorySettings::default());
    let mut bot = Bot::with_settings(
        h,
        model,
        Arc::new(InMemoryQueue::default()),
        settings.clone(),
    );
    let policy = ReviewPolicy {
        tool_calls: false,
        replies: true,
        ..ReviewPolicy::default()
    };
    settings
        .save_settings(
            ServerId(SERVER.0),
            &ServerSettings {
                drafting: true,
                review: policy,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    bot.say(message(1, ALICE, "wave")).await;
    bot.next().await;
    assert_eq!(reviewer.seen_requests().len(), 1);
    assert!(bot.h.fakes.sink.stickers().is_empty(), "rejected: not sent");
}

// SPEC C8, R3: the held-response path delivers the held draft and ends the turn.
#[tokio::test(start_paused = true)]
async fn the_held_response_path_delivers_the_held_draft() {
    let reviewer = Arc::new(ScriptedReviewer::default());
    reviewer.on_request(reject("never", false)).on_reply(pass());
    let model = ScriptedModel::new(vec![
        ScriptedPass::Stream(vec![
            Step::Text("Let me try.".into()),
            Step::Call {
                name: "probe".into(),
                arguments: r#"{"n":1}"#.into(),
            },
        ]),
        ScriptedPass::call("probe", r#"{"n":2}"#),
    ]);
    let mut bot = drafting_bot(model, &reviewer, Fakes::default()).await;
    bot.say(message(1, ALICE, "go")).await;
    let finished = bot.next().await;
    assert_eq!(finished.report.end, TurnEnd::HeldResponse);
    assert_eq!(bot.transcript(), "Let me try.");
    assert_eq!(bot.h.probe.runs(), 0);
}
