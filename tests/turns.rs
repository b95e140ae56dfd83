//! Chat turns through the orchestrator and the pass loop, with an in-process scripted model,
//! recording fakes and paused time. The same behaviours through the real provider client
//! against a fake OpenAI-compatible server are in `tests/provider.rs`.

mod support;

use std::sync::Arc;
use std::time::Duration;

use persona_bot::chat::model::{Attempt, ChatMessage, ModelError};
use persona_bot::chat::orchestrator::KillReport;
use persona_bot::chat::ports::{Sticker, StickerSend};
use persona_bot::chat::provider_failure::FailureClass;
use persona_bot::chat::scope::{ChannelId, MessageId};
use persona_bot::chat::turn::TurnStatus;
use persona_bot::testkit::{Fakes, InMemoryQueue, ScriptedModel, ScriptedPass, Step};
use persona_bot::tool_loop::passes::TurnEnd;
use support::bot::{ALICE, BOB, Bot, CHANNEL, message, message_in};
use support::{Behaviour, Harness};

fn delay(secs: u64) -> Step {
    Step::Delay(Duration::from_secs(secs))
}

fn text(t: &str) -> Step {
    Step::Text(t.into())
}

fn call(name: &str, args: &str) -> Step {
    Step::Call {
        name: name.into(),
        arguments: args.into(),
    }
}

/// Lets the spawned worker run until it waits on time.
async fn settle() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}

// ---------------------------------------------------------------- C3

// SPEC C3: turns in one channel run one at a time, in order; a queued message is answered after
// the running turn, and its reply replies to it.
#[tokio::test(start_paused = true)]
async fn turns_in_a_channel_run_one_at_a_time_in_order() {
    let mut bot = Bot::new(ScriptedModel::new(vec![
        ScriptedPass::Stream(vec![delay(10), text("First answer.")]),
        ScriptedPass::text(&["Second answer."]),
    ]));
    bot.say(message(1, ALICE, "hi")).await;
    bot.say(message(2, BOB, "me too")).await;
    let first = bot.next().await;
    assert_eq!(first.message, MessageId(1));
    let second = bot.next().await;
    assert_eq!(second.message, MessageId(2));
    let texts = bot.h.fakes.sink.texts();
    assert_eq!(texts[0].text, "First answer.");
    assert_eq!(texts[0].reply_to, None, "the first turn started at once");
    assert_eq!(texts[1].text, "Second answer.");
    assert_eq!(
        texts[1].reply_to,
        Some(MessageId(2)),
        "a queued trigger gets a reply"
    );
    assert!(
        bot.queue.entries().is_empty(),
        "answered messages leave the store"
    );
}

// SPEC C3: channels run in parallel.
#[tokio::test(start_paused = true)]
async fn channels_run_in_parallel() {
    let model = ScriptedModel::responding(|_| ScriptedPass::Stream(vec![delay(10), text("Done.")]));
    let mut bot = Bot::new(model);
    let started = tokio::time::Instant::now();
    bot.say(message_in(ChannelId(1), 1, ALICE, "a")).await;
    bot.say(message_in(ChannelId(2), 2, BOB, "b")).await;
    bot.next().await;
    bot.next().await;
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(10),
        "not 20 s: they overlapped"
    );
}

// SPEC C3: past the bound, the oldest non-follow-up waiting message is dropped with a visible
// notice on it; nothing is dropped silently.
#[tokio::test(start_paused = true)]
async fn full_queue_drops_the_oldest_waiting_message_with_a_notice() {
    let model = ScriptedModel::responding(|_| ScriptedPass::Stream(vec![delay(30), text("ok.")]));
    let mut bot = Bot::build(
        model,
        Behaviour::succeed(),
        |c| c.turn.queue_limit = 2,
        Fakes::default(),
    );
    bot.say(message(1, ALICE, "running")).await;
    settle().await;
    for id in 2..=4 {
        bot.say(message(id, BOB, "waiting")).await;
    }
    settle().await;
    let notices: Vec<_> = bot
        .h
        .fakes
        .sink
        .texts()
        .into_iter()
        .filter(|t| t.reply_to == Some(MessageId(2)))
        .collect();
    assert_eq!(notices.len(), 1, "the oldest waiting message got a notice");
    assert!(notices[0].text.contains("skipped"), "{}", notices[0].text);
    let answered: Vec<MessageId> = [bot.next().await, bot.next().await, bot.next().await]
        .iter()
        .map(|f| f.message)
        .collect();
    assert_eq!(answered, vec![MessageId(1), MessageId(3), MessageId(4)]);
    assert!(bot.queue.entries().is_empty());
}

// ---------------------------------------------------------------- C5, C6

// SPEC C5, C6: /kill during streaming stops further output and drops the provider stream; what
// was complete is kept.
#[tokio::test(start_paused = true)]
async fn kill_during_streaming_stops_further_output() {
    let mut bot = Bot::new(ScriptedModel::new(vec![ScriptedPass::Stream(vec![
        text("A finished paragraph.\n\n"),
        text("A complete sentence. And a half"),
        delay(5),
        text(" that never arrives.\n\nMore."),
    ])]));
    bot.say(message(1, ALICE, "talk")).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let report = bot.orchestrator.kill(CHANNEL, ALICE, false).await;
    assert_eq!(
        report,
        KillReport::Stopped {
            turn_stopped: true,
            active_tool: None,
            dropped: 0
        }
    );
    let finished = bot.next().await;
    assert_eq!(finished.report.status, TurnStatus::StoppedByUser);
    assert_eq!(
        bot.transcript(),
        "A finished paragraph.\n\nA complete sentence."
    );
    assert_eq!(
        bot.model.dropped_streams(),
        1,
        "the provider stream was dropped"
    );
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(
        bot.transcript(),
        "A finished paragraph.\n\nA complete sentence.",
        "nothing after the kill"
    );
}

// SPEC C6, T5: /kill during a slow tool ends the turn at once (no time passes) and cancels the
// tool's token; the reply names the tool and the dropped messages.
#[tokio::test(start_paused = true)]
async fn kill_during_slow_tool_ends_the_turn_at_once_and_cancels_the_tool() {
    let probe = Behaviour::Sleep {
        duration: Duration::from_secs(3600),
        honour_cancel: false,
    };
    let mut bot = Bot::build(
        ScriptedModel::new(vec![ScriptedPass::call("probe", r#"{"n":1}"#)]),
        probe,
        |_| {},
        Fakes::default(),
    );
    bot.say(message(1, ALICE, "run the probe")).await;
    bot.say(message(2, BOB, "waiting")).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(bot.h.probe.runs(), 1);
    let asked = tokio::time::Instant::now();
    let report = bot.orchestrator.kill(CHANNEL, ALICE, false).await;
    assert_eq!(
        asked.elapsed(),
        Duration::ZERO,
        "the turn ended within one scheduler tick"
    );
    assert_eq!(
        report,
        KillReport::Stopped {
            turn_stopped: true,
            active_tool: Some("probe".into()),
            dropped: 1
        }
    );
    assert!(
        bot.h
            .probe
            .token
            .lock()
            .unwrap()
            .clone()
            .unwrap()
            .is_cancelled()
    );
    assert_eq!(bot.next().await.report.status, TurnStatus::StoppedByUser);
    assert!(bot.queue.entries().is_empty(), "the queue is cleared");
}

// SPEC C6: by default only the requester or a manager may /kill; with nothing running it says so.
#[tokio::test(start_paused = true)]
async fn kill_permissions_and_nothing_running() {
    let mut bot = Bot::new(ScriptedModel::new(vec![ScriptedPass::Stream(vec![
        delay(60),
        text("ok."),
    ])]));
    assert_eq!(
        bot.orchestrator.kill(CHANNEL, BOB, false).await,
        KillReport::NothingRunning
    );
    bot.say(message(1, ALICE, "long")).await;
    settle().await;
    assert_eq!(
        bot.orchestrator.kill(CHANNEL, BOB, false).await,
        KillReport::Denied
    );
    let managed = bot.orchestrator.kill(CHANNEL, BOB, true).await;
    assert!(
        matches!(
            managed,
            KillReport::Stopped {
                turn_stopped: true,
                ..
            }
        ),
        "{managed:?}"
    );
    assert_eq!(bot.next().await.report.status, TurnStatus::StoppedByUser);
}

// ---------------------------------------------------------------- C7

// SPEC C5, C7: a follow-up from the requester during the stream interrupts it, the pending text
// is discarded, and the follow-up is answered next.
#[tokio::test(start_paused = true)]
async fn follow_up_interrupts_the_stream_and_is_answered_next() {
    let mut bot = Bot::new(ScriptedModel::new(vec![
        ScriptedPass::Stream(vec![
            text("Sent paragraph.\n\nPending"),
            delay(5),
            text(" words."),
        ]),
        ScriptedPass::text(&["Answer to the follow-up."]),
    ]));
    bot.say(message(1, ALICE, "first")).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    bot.say(message(2, ALICE, "actually, this")).await;
    let interrupted = bot.next().await;
    assert_eq!(interrupted.report.status, TurnStatus::FollowUpInterrupt);
    let answered = bot.next().await;
    assert_eq!(answered.message, MessageId(2));
    assert_eq!(
        bot.transcript(),
        "Sent paragraph.\n\nAnswer to the follow-up."
    );
    // The follow-up's turn sees the newest context: its trigger is the follow-up.
    let last = bot
        .model
        .requests()
        .last()
        .unwrap()
        .1
        .messages
        .last()
        .cloned()
        .unwrap();
    assert_eq!(
        last,
        ChatMessage::User {
            name: None,
            content: "[alice] actually, this".into()
        }
    );
}

// SPEC C7, C8: inside a tool chain a follow-up waits at the front without interrupting (drafting
// Off), so tool progress is kept; a newer follow-up supersedes an older one.
#[tokio::test(start_paused = true)]
async fn follow_up_inside_a_tool_chain_waits_and_the_newest_supersedes() {
    let probe = Behaviour::Sleep {
        duration: Duration::from_secs(5),
        honour_cancel: true,
    };
    let mut bot = Bot::build(
        ScriptedModel::new(vec![
            ScriptedPass::call("probe", r#"{"n":1}"#),
            ScriptedPass::text(&["Tool done."]),
            ScriptedPass::text(&["Newest follow-up answered."]),
        ]),
        probe,
        |_| {},
        Fakes::default(),
    );
    bot.say(message(1, ALICE, "use the tool")).await;
    bot.say(message(2, BOB, "unrelated")).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    bot.say(message(3, ALICE, "follow-up one")).await;
    bot.say(message(4, ALICE, "follow-up two")).await;
    let first = bot.next().await;
    assert_eq!(
        first.report.status,
        TurnStatus::Completed,
        "the chain was not interrupted"
    );
    assert_eq!(bot.h.probe.runs(), 1);
    let next = bot.next().await;
    assert_eq!(
        next.message,
        MessageId(4),
        "the newest follow-up, ahead of bob's message"
    );
    assert!(
        bot.queue
            .entries()
            .iter()
            .all(|e| e.entry.message != MessageId(3)),
        "superseded"
    );
    assert!(
        bot.transcript()
            .starts_with("Tool done.\n\nNewest follow-up answered.")
    );
}

// SPEC C7: past three follow-ups, the requester's messages queue like anyone's.
#[tokio::test(start_paused = true)]
async fn more_than_three_follow_ups_queue_normally() {
    let probe = Behaviour::Sleep {
        duration: Duration::from_secs(5),
        honour_cancel: true,
    };
    let model = ScriptedModel::responding(|request| {
        if request
            .messages
            .iter()
            .any(|m| matches!(m, ChatMessage::Tool { .. }))
        {
            ScriptedPass::text(&["ok."])
        } else if request.messages.len() == 2 {
            ScriptedPass::call("probe", r#"{"n":1}"#)
        } else {
            ScriptedPass::text(&["later."])
        }
    });
    let mut bot = Bot::build(model, probe, |_| {}, Fakes::default());
    bot.say(message(1, ALICE, "go")).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    for id in 2..=6 {
        bot.say(message(id, ALICE, &format!("more {id}"))).await;
    }
    settle().await;
    let waiting: Vec<(u64, bool)> = bot
        .queue
        .entries()
        .iter()
        .map(|e| (e.entry.message.0, e.entry.follow_up))
        .collect();
    // Follow-ups 2, 3, 4 supersede each other (only 4 waits); 5 and 6 queue normally.
    assert_eq!(
        waiting.iter().map(|w| w.0).collect::<Vec<_>>(),
        vec![1, 4, 5, 6]
    );
    let answered: Vec<u64> = [
        bot.next().await,
        bot.next().await,
        bot.next().await,
        bot.next().await,
    ]
    .iter()
    .map(|f| f.message.0)
    .collect();
    assert_eq!(answered, vec![1, 4, 5, 6]);
}

// ---------------------------------------------------------------- C9

// SPEC C9: the pass cap ends the turn with a notice.
#[tokio::test(start_paused = true)]
async fn pass_cap_ends_the_turn_with_a_notice() {
    let model = ScriptedModel::responding(|_| ScriptedPass::call("recall_facts", "{}"));
    let mut bot = Bot::build(
        model,
        Behaviour::succeed(),
        |c| c.turn.max_passes = 3,
        Fakes::default(),
    );
    bot.say(message(1, ALICE, "loop")).await;
    let finished = bot.next().await;
    assert_eq!(finished.report.end, TurnEnd::PassLimit);
    assert_eq!(finished.report.passes, 3);
    assert!(
        bot.transcript().contains("too many steps"),
        "{}",
        bot.transcript()
    );
}

// SPEC C9: five consecutive tool failures end the turn with a notice.
#[tokio::test(start_paused = true)]
async fn consecutive_failure_cap_ends_the_turn_with_a_notice() {
    let model = ScriptedModel::responding(|_| ScriptedPass::call("no_such_tool", "{}"));
    let mut bot = Bot::new(model);
    bot.say(message(1, ALICE, "fail")).await;
    let finished = bot.next().await;
    assert_eq!(finished.report.end, TurnEnd::FailureLimit);
    assert_eq!(finished.report.tool_calls, 5);
    assert!(
        bot.transcript().contains("failed several times"),
        "{}",
        bot.transcript()
    );
}

// SPEC C9: parallel tool calls: the first is handled, the rest get a synthetic failure.
#[tokio::test(start_paused = true)]
async fn parallel_tool_calls_run_only_the_first() {
    let mut bot = Bot::new(ScriptedModel::new(vec![
        ScriptedPass::Stream(vec![
            call("probe", r#"{"n":1}"#),
            call("probe", r#"{"n":2}"#),
        ]),
        ScriptedPass::text(&["Done."]),
    ]));
    bot.say(message(1, ALICE, "two at once")).await;
    bot.next().await;
    assert_eq!(bot.h.probe.runs(), 1);
    let second = &bot.model.requests()[1].1.messages;
    let refused = second.iter().any(|m| matches!(m, ChatMessage::Tool { call_id, content } if call_id == "call_2" && content.contains("parallel_tool_calls_refused")));
    assert!(refused, "{second:#?}");
}

// ---------------------------------------------------------------- C10

// SPEC C10: a turn stuck outside a guarded phase is released after the configured time and the
// queue goes on.
#[tokio::test(start_paused = true)]
async fn stale_turn_is_force_released_and_the_queue_goes_on() {
    let fakes = Fakes::default();
    fakes.sink.hang_sends(true);
    let model = ScriptedModel::responding(|_| ScriptedPass::text(&["Hello."]));
    let mut bot = Bot::build(model, Behaviour::succeed(), |_| {}, fakes);
    let started = tokio::time::Instant::now();
    bot.say(message(1, ALICE, "hi")).await;
    bot.say(message(2, BOB, "next")).await;
    let released = bot.next().await;
    assert_eq!(released.report.end, TurnEnd::Released);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(180) && waited <= Duration::from_secs(182),
        "{waited:?}"
    );
    bot.h.fakes.sink.hang_sends(false);
    let next = bot.next().await;
    assert_eq!(next.message, MessageId(2));
    assert_eq!(next.report.status, TurnStatus::Completed);
}

// SPEC C10: a long provider call (guarded by its own timeouts) is not stale.
#[tokio::test(start_paused = true)]
async fn a_slow_provider_call_is_not_released_as_stale() {
    let mut bot = Bot::new(ScriptedModel::new(vec![ScriptedPass::Stream(vec![
        delay(400),
        text("Finally."),
    ])]));
    bot.say(message(1, ALICE, "think hard")).await;
    let finished = bot.next().await;
    assert_eq!(finished.report.status, TurnStatus::Completed);
    assert_eq!(bot.transcript(), "Finally.");
}

// ---------------------------------------------------------------- C11, R4

fn attempts(spec: &[(usize, usize)]) -> Vec<Attempt> {
    spec.iter()
        .map(|&(m, k)| Attempt {
            model: format!("model{m}"),
            model_index: m,
            key_index: k,
        })
        .collect()
}

fn failure(class: FailureClass, status: u16) -> ModelError {
    ModelError::new(class, Some(status), "raw provider text")
}

// SPEC C11: a rate limit rotates to the next key; the user sees the answer, not an error.
#[tokio::test(start_paused = true)]
async fn rate_limit_rotates_the_key() {
    let model = ScriptedModel::new(vec![
        ScriptedPass::OpenError(failure(FailureClass::RateLimited, 429)),
        ScriptedPass::text(&["Hello from key two."]),
    ])
    .with_attempts(attempts(&[(0, 0), (0, 1)]));
    let mut bot = Bot::new(model);
    bot.say(message(1, ALICE, "hi")).await;
    assert_eq!(bot.next().await.report.status, TurnStatus::Completed);
    assert_eq!(bot.transcript(), "Hello from key two.");
    let failures = bot.model.failures();
    assert_eq!(
        failures,
        vec![(attempts(&[(0, 0)])[0].clone(), FailureClass::RateLimited)]
    );
    let used: Vec<usize> = bot
        .model
        .requests()
        .iter()
        .map(|(a, _)| a.key_index)
        .collect();
    assert_eq!(used, vec![0, 1]);
}

// SPEC C11: an unknown model falls back to the next model, skipping its other keys.
#[tokio::test(start_paused = true)]
async fn unknown_model_falls_back_to_the_next_model() {
    let model = ScriptedModel::new(vec![
        ScriptedPass::OpenError(failure(FailureClass::ModelUnknown, 404)),
        ScriptedPass::text(&["From the fallback."]),
    ])
    .with_attempts(attempts(&[(0, 0), (0, 1), (1, 0)]));
    let mut bot = Bot::new(model);
    bot.say(message(1, ALICE, "hi")).await;
    bot.next().await;
    let used: Vec<(usize, usize)> = bot
        .model
        .requests()
        .iter()
        .map(|(a, _)| (a.model_index, a.key_index))
        .collect();
    assert_eq!(used, vec![(0, 0), (1, 0)]);
}

// SPEC C11: a safety refusal is not retried; when nothing is left the user sees one localized
// error, without the provider's raw text.
#[tokio::test(start_paused = true)]
async fn unretryable_failure_shows_one_localized_error() {
    let model = ScriptedModel::new(vec![ScriptedPass::OpenError(failure(
        FailureClass::SafetyRefusal,
        400,
    ))])
    .with_attempts(attempts(&[(0, 0), (0, 1), (1, 0)]));
    let mut bot = Bot::new(model);
    bot.say(message(1, ALICE, "something bad")).await;
    let finished = bot.next().await;
    assert_eq!(
        finished.report.end,
        TurnEnd::ProviderFailed {
            code: "safety_refusal"
        }
    );
    let texts = bot.h.fakes.sink.texts();
    assert_eq!(texts.len(), 1, "one error message");
    assert!(texts[0].text.contains("safety"), "{}", texts[0].text);
    assert!(!texts[0].text.contains("raw provider text"));
    assert_eq!(bot.model.requests().len(), 1, "not retried");
}

// SPEC C11: every attempt failing ends in one error naming the last failure.
#[tokio::test(start_paused = true)]
async fn exhausted_attempts_show_one_error() {
    let model = ScriptedModel::new(vec![
        ScriptedPass::OpenError(failure(FailureClass::RateLimited, 429)),
        ScriptedPass::OpenError(failure(FailureClass::ServerError, 500)),
    ])
    .with_attempts(attempts(&[(0, 0), (0, 1)]));
    let mut bot = Bot::new(model);
    bot.say(message(1, ALICE, "hi")).await;
    let finished = bot.next().await;
    assert_eq!(
        finished.report.end,
        TurnEnd::ProviderFailed {
            code: "server_error"
        }
    );
    assert_eq!(bot.h.fakes.sink.texts().len(), 1);
}

// SPEC C11: a stream failing after text was sent continues on the next key without repeating.
#[tokio::test(start_paused = true)]
async fn mid_stream_failure_continues_without_repeating_sent_text() {
    let model = ScriptedModel::new(vec![
        ScriptedPass::Stream(vec![
            text("Sent already.\n\nLost tail"),
            Step::Fail(failure(FailureClass::ServerError, 500)),
        ]),
        ScriptedPass::text(&["The rest."]),
    ])
    .with_attempts(attempts(&[(0, 0), (0, 1)]));
    let mut bot = Bot::new(model);
    bot.say(message(1, ALICE, "hi")).await;
    bot.next().await;
    assert_eq!(bot.transcript(), "Sent already.\n\nThe rest.");
    let retry = &bot.model.requests()[1].1.messages;
    assert!(retry.iter().any(
        |m| matches!(m, ChatMessage::Assistant { content: Some(c), .. } if c == "Sent already.")
    ));
}

// SPEC C11, R4, T9: after a key rotation, the turn's completed sticker is reused, not sent again.
#[tokio::test(start_paused = true)]
async fn completed_sticker_is_not_sent_again_after_key_rotation() {
    let fakes = Fakes::default().with_stickers(vec![Sticker {
        id: 7,
        name: "wave".into(),
    }]);
    fakes.sink.script_sticker(StickerSend::Confirmed);
    let sticker = r#"{"name":"wave"}"#;
    let model = ScriptedModel::new(vec![
        ScriptedPass::call("select_sticker_for_response", sticker),
        ScriptedPass::OpenError(ModelError::new(
            FailureClass::InsufficientBalance,
            Some(429),
            "quota",
        )),
        // The model on the next key repeats the call: it must be answered from the record.
        ScriptedPass::call("select_sticker_for_response", sticker),
        ScriptedPass::text(&["Waved!"]),
    ])
    .with_attempts(attempts(&[(0, 0), (0, 1)]));
    let mut bot = Bot::build(model, Behaviour::succeed(), |_| {}, fakes);
    bot.say(message(1, ALICE, "wave at me")).await;
    assert_eq!(bot.next().await.report.status, TurnStatus::Completed);
    assert_eq!(
        bot.h.fakes.sink.stickers().len(),
        1,
        "one sticker, despite the repeat"
    );
    assert_eq!(bot.model.failures()[0].1, FailureClass::InsufficientBalance);
}

// ---------------------------------------------------------------- C4 (typing), D4

// SPEC C4: typing shows while the turn works, renewed every 8 s.
#[tokio::test(start_paused = true)]
async fn typing_is_shown_while_a_turn_works() {
    let mut bot = Bot::new(ScriptedModel::new(vec![ScriptedPass::Stream(vec![
        delay(20),
        text("ok."),
    ])]));
    bot.say(message(1, ALICE, "slow")).await;
    bot.next().await;
    assert_eq!(
        bot.h.fakes.sink.typing_count(CHANNEL),
        3,
        "at 0, 8 and 16 s"
    );
}

// SPEC D4: shutdown keeps waiting and interrupted messages; the next start answers them.
#[tokio::test(start_paused = true)]
async fn shutdown_keeps_messages_for_the_next_start() {
    let queue = Arc::new(InMemoryQueue::default());
    let h = Harness::new();
    let bot = Bot::with_queue(
        h,
        ScriptedModel::new(vec![ScriptedPass::Stream(vec![delay(60), text("never")])]),
        queue.clone(),
    );
    bot.say(message(1, ALICE, "interrupted")).await;
    bot.say(message(2, BOB, "waiting")).await;
    settle().await;
    bot.orchestrator.shutdown().await;
    assert_eq!(queue.entries().len(), 2, "both kept");

    let h = Harness::new();
    let mut next = Bot::with_queue(
        h,
        ScriptedModel::new(vec![
            ScriptedPass::text(&["Back."]),
            ScriptedPass::text(&["Also back."]),
        ]),
        queue.clone(),
    );
    assert_eq!(next.orchestrator.recover().await.unwrap(), 2);
    assert_eq!(next.next().await.message, MessageId(1));
    assert_eq!(next.next().await.message, MessageId(2));
    assert!(queue.entries().is_empty());
    assert!(next.transcript().contains("Back."));
}
