//! Chat turns through the orchestrator and the pass loop, with an in-process scripted model,
//! recording fakes and paused time. The same behaviours through the real provider client
//! against a fake OpenAI-compatible server are in `tests/provider.rs`.

// The shared fakes this binary uses (tests/support/). Public, so that what it leaves
// unused of them is not dead code.
pub mod support {
    pub mod bot;
    pub mod harness;
}

use std::sync::Arc;
use std::time::Duration;

use persona_bot::config::{Config, KillPermission};
use persona_bot::discord::commands::kill::kill_text;
use persona_bot::domain::ports::{
    Attempt, ChatMessage, DeliberateSettings, Delivery, Durability, EventOutcome, ExpressionSend,
    HistoryMessage, Mention, ModelError, OutcomeStore, QueueStore, ServerSettings, SettingsStore,
    Sticker, delivery_key,
};
use persona_bot::domain::provider_failure::FailureClass;
use persona_bot::domain::scope::{ChannelId, MessageId, UserId};
use persona_bot::domain::thought_log::{Notice, render};
use persona_bot::domain::turn::{StoppedTool, ToolEnding, TurnId, TurnStatus};
use persona_bot::engine::orchestrator::{KillReach, KillReport};
use persona_bot::engine::passes::TurnEnd;
use persona_bot::locale::{self, Locale};
use persona_bot::stage::watchdog::STOP_GRACE;
use persona_bot::testkit::{
    Fakes, InMemoryQueue, InMemorySettings, ScriptedModel, ScriptedPass, Step,
};
use support::bot::{ALICE, BOB, Bot, CHANNEL, SERVER, message, message_in};
use support::harness::{Behaviour, Harness};

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

// SPEC C4: every message of a reply may notify the person it answers and the users their message
// named (Discord's mentions of it, queued with it: its text reads `@name`), and no one else (the
// Discord adapter turns this into `allowed_mentions`); the model's `@name` for one of them is
// posted as their mention; the bot's own notices notify nobody.
#[tokio::test(start_paused = true)]
async fn a_reply_may_notify_only_the_asker_and_who_they_named() {
    let mut bot = Bot::new(ScriptedModel::new(vec![ScriptedPass::text(&[
        "Sure @carl, and <@77> and @dora too.",
    ])]));
    let named = |id: u64, name: &str| Mention {
        user: UserId(id),
        name: name.into(),
    };
    let mut asked = message(1, ALICE, "say hi to @carl and @dee");
    asked.mentions = vec![named(55, "carl"), named(56, "dee")];
    bot.say(asked).await;
    bot.next().await;
    let texts = bot.h.fakes.sink.texts();
    assert_eq!(texts.len(), 1);
    assert_eq!(texts[0].pings, vec![ALICE, UserId(55), UserId(56)]);
    assert_eq!(texts[0].text, "Sure <@55>, and <@77> and @dora too.");
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
    // Three people: one person's second message would join their first (SPEC C2).
    for id in 2..=4 {
        bot.say(message(id, UserId(300 + id), "waiting")).await;
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
    // SPEC D12: dropped on purpose, it is recorded finished: no restart or catch-up revives it.
    assert!(closed(&bot, MessageId(2)).await);
    assert!(!closed(&bot, MessageId(3)).await);
    let answered: Vec<MessageId> = [bot.next().await, bot.next().await, bot.next().await]
        .iter()
        .map(|f| f.message)
        .collect();
    assert_eq!(answered, vec![MessageId(1), MessageId(3), MessageId(4)]);
    assert!(bot.queue.entries().is_empty());
}

/// Whether the message's turn is recorded finished (answered, or left unanswered on purpose).
async fn closed<M: persona_bot::domain::ports::ChatModel + 'static>(
    bot: &Bot<M>,
    message: MessageId,
) -> bool {
    let outcomes = bot.h.fakes.outcomes.as_ref();
    persona_bot::domain::ports::is_closed(outcomes, CHANNEL, message)
        .await
        .unwrap()
}

// SPEC C3, C7: on overflow a follow-up waiting at the front survives; the oldest waiting
// message that is not a follow-up is dropped, with the skipped notice on it.
#[tokio::test(start_paused = true)]
async fn full_queue_keeps_a_follow_up_and_drops_the_oldest_other_message() {
    let probe = Behaviour::Sleep {
        duration: Duration::from_secs(5),
        honour_cancel: true,
    };
    let mut bot = Bot::build(
        ScriptedModel::new(vec![
            ScriptedPass::call("probe", r#"{"n":1}"#),
            ScriptedPass::text(&["Tool done."]),
            ScriptedPass::text(&["Follow-up answered."]),
            ScriptedPass::text(&["Bob answered."]),
        ]),
        probe,
        |c| c.turn.queue_limit = 2,
        Fakes::default(),
    );
    bot.say(message(1, ALICE, "use the tool")).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(bot.h.probe.runs(), 1, "the tool chain is running");
    // Inside the tool chain alice's follow-up waits at the front of the queue.
    bot.say(message(2, ALICE, "and also this")).await;
    bot.say(message(3, BOB, "first other")).await;
    bot.say(message(4, UserId(77), "second other")).await;
    settle().await;
    let notices: Vec<_> = bot
        .h
        .fakes
        .sink
        .texts()
        .into_iter()
        .filter(|t| t.reply_to.is_some())
        .collect();
    assert_eq!(notices.len(), 1, "one message dropped: {notices:?}");
    assert_eq!(
        notices[0].reply_to,
        Some(MessageId(3)),
        "the oldest non-follow-up, not the older follow-up"
    );
    assert_eq!(
        notices[0].text,
        locale::text(Locale::En, "turn-queue-dropped")
    );
    let answered: Vec<MessageId> = [bot.next().await, bot.next().await, bot.next().await]
        .iter()
        .map(|f| f.message)
        .collect();
    assert_eq!(answered, vec![MessageId(1), MessageId(2), MessageId(4)]);
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
            reach: KillReach::Own,
            turn_stopped: true,
            tool: None,
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

// SPEC C6, T5: a manager's /kill during a slow tool cancels the tool's token and ends the turn
// once the tool's short grace has passed (it ignores cancellation: it may still finish); the
// reply names the tool and the dropped messages.
#[tokio::test(start_paused = true)]
async fn a_managers_kill_during_a_slow_tool_cancels_it_and_clears_the_queue() {
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
    let report = bot.orchestrator.kill(CHANNEL, BOB, true).await;
    assert_eq!(asked.elapsed(), STOP_GRACE, "the tool's grace, and no more");
    assert_eq!(
        report,
        KillReport::Stopped {
            reach: KillReach::Channel,
            turn_stopped: true,
            tool: Some(StoppedTool {
                name: "probe".into(),
                ending: ToolEnding::MayStillFinish
            }),
            dropped: 1
        }
    );
    assert!(bot.h.probe.was_cancelled());
    assert_eq!(bot.next().await.report.status, TurnStatus::StoppedByUser);
    assert!(bot.queue.entries().is_empty(), "the queue is cleared");
}

// SPEC C6, T5, row 30: /kill during a tool answers done, cancelled or "may still finish" as the
// tool behaved within its grace, and the tool event and the thought-log notice say the same.
#[tokio::test(start_paused = true)]
async fn kill_answer_event_and_notice_agree_on_how_the_tool_ended() {
    let sleep = |millis, honour_cancel| Behaviour::Sleep {
        duration: Duration::from_millis(millis),
        honour_cancel,
    };
    let cases = [
        (
            sleep(3_600_000, true),
            ToolEnding::Cancelled,
            EventOutcome::Cancelled,
            "cancelled",
        ),
        (
            sleep(1_500, false),
            ToolEnding::Done,
            EventOutcome::Succeeded,
            "done",
        ),
        (
            sleep(3_600_000, false),
            ToolEnding::MayStillFinish,
            EventOutcome::MayStillFinish,
            "may still finish",
        ),
    ];
    for (behaviour, ending, outcome, word) in cases {
        let mut bot = Bot::build(
            ScriptedModel::new(vec![ScriptedPass::call("probe", r#"{"n":1}"#)]),
            behaviour,
            |_| {},
            Fakes::default(),
        );
        bot.say(message(1, ALICE, "run the probe")).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let report = bot.orchestrator.kill(CHANNEL, ALICE, false).await;
        let KillReport::Stopped {
            tool: Some(tool), ..
        } = &report
        else {
            panic!("{report:?}");
        };
        assert_eq!((tool.name.as_str(), tool.ending), ("probe", ending));
        let events = bot.h.fakes.events.events();
        assert_eq!(events.last().map(|e| e.outcome), Some(outcome), "{word}");
        let notices = bot.h.fakes.thought_log.notices();
        let Some(stop) = notices
            .iter()
            .map(|(_, n)| n)
            .find(|n| matches!(n, Notice::ToolStopped { .. }))
        else {
            panic!("a stop notice: {notices:?}");
        };
        assert!(matches!(stop, Notice::ToolStopped { ending: e, .. } if *e == ending));
        let answer = kill_text(&report, Locale::En).to_lowercase();
        let card = render(stop, Locale::En);
        let card: Vec<String> = card.fields.iter().map(|(_, v)| v.to_lowercase()).collect();
        let card = card.join("\n");
        for said in ["done", "cancelled", "may still finish"] {
            assert_eq!(answer.contains(said), said == word, "{word}: {answer}");
            assert_eq!(card.contains(said), said == word, "{word}: {card}");
        }
        assert_eq!(bot.next().await.report.status, TurnStatus::StoppedByUser);
    }
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

// SPEC C6: with `kill_permission = "managers_only"` the turn's own requester may not /kill;
// a member with Manage Messages may.
#[tokio::test(start_paused = true)]
async fn kill_managers_only_denies_the_requester_and_allows_a_manager() {
    let mut bot = Bot::build(
        ScriptedModel::new(vec![ScriptedPass::Stream(vec![delay(60), text("ok.")])]),
        Behaviour::succeed(),
        |c| c.turn.kill_permission = KillPermission::ManagersOnly,
        Fakes::default(),
    );
    bot.say(message(1, ALICE, "long")).await;
    settle().await;
    assert_eq!(
        bot.orchestrator.kill(CHANNEL, ALICE, false).await,
        KillReport::Denied,
        "the requester is not a manager"
    );
    assert_eq!(
        bot.orchestrator.kill(CHANNEL, BOB, true).await,
        KillReport::Stopped {
            reach: KillReach::Channel,
            turn_stopped: true,
            tool: None,
            dropped: 0
        }
    );
    assert_eq!(bot.next().await.report.status, TurnStatus::StoppedByUser);
}

// SPEC C6: with `kill_permission = "anyone"` another member without Manage Messages may /kill.
#[tokio::test(start_paused = true)]
async fn kill_anyone_allows_another_member() {
    let mut bot = Bot::build(
        ScriptedModel::new(vec![ScriptedPass::Stream(vec![delay(60), text("ok.")])]),
        Behaviour::succeed(),
        |c| c.turn.kill_permission = KillPermission::Anyone,
        Fakes::default(),
    );
    bot.say(message(1, ALICE, "long")).await;
    settle().await;
    assert_eq!(
        bot.orchestrator.kill(CHANNEL, BOB, false).await,
        KillReport::Stopped {
            reach: KillReach::Channel,
            turn_stopped: true,
            tool: None,
            dropped: 0
        }
    );
    assert_eq!(bot.next().await.report.status, TurnStatus::StoppedByUser);
    assert_eq!(bot.transcript(), "", "nothing after the kill");
}

// SPEC C6: under the default `requester_or_manager`, a requester who cannot manage messages
// stops their own running turn and drops only their own waiting message; another member's
// waiting message stays and is answered afterwards. The answer says whose, with the count.
#[tokio::test(start_paused = true)]
async fn a_requesters_kill_stops_only_their_own_and_others_are_answered() {
    let probe = Behaviour::Sleep {
        duration: Duration::from_secs(3600),
        honour_cancel: true,
    };
    let mut bot = Bot::build(
        ScriptedModel::new(vec![
            ScriptedPass::call("probe", r#"{"n":1}"#),
            ScriptedPass::text(&["Bob answered."]),
        ]),
        probe,
        |_| {},
        Fakes::default(),
    );
    bot.say(message(1, ALICE, "run the probe")).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(bot.h.probe.runs(), 1, "alice's tool chain is running");
    bot.say(message(2, BOB, "my own question")).await;
    // Inside the tool chain alice's follow-up waits at the front of the queue (SPEC C7).
    bot.say(message(3, ALICE, "and this too")).await;
    settle().await;
    let report = bot.orchestrator.kill(CHANNEL, ALICE, false).await;
    assert_eq!(
        report,
        KillReport::Stopped {
            reach: KillReach::Own,
            turn_stopped: true,
            tool: Some(StoppedTool {
                name: "probe".into(),
                ending: ToolEnding::Cancelled
            }),
            dropped: 1
        }
    );
    let answer = kill_text(&report, Locale::En);
    assert!(
        answer.contains("your reply") && answer.contains("Your waiting messages dropped: 1"),
        "{answer}"
    );
    assert!(!answer.contains("everyone"), "{answer}");
    let killed = bot.next().await;
    assert_eq!(killed.message, MessageId(1));
    assert_eq!(killed.report.status, TurnStatus::StoppedByUser);
    let answered = bot.next().await;
    assert_eq!(answered.message, MessageId(2), "bob is answered afterwards");
    assert_eq!(bot.transcript(), "Bob answered.");
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(bot.model.remaining(), 0);
    assert_eq!(
        bot.model.requests().len(),
        2,
        "alice's dropped message is not answered"
    );
    assert!(bot.queue.entries().is_empty());
}

// SPEC C6: a requester whose message only waits drops it and leaves another member's running
// turn alone; a member with nothing running or waiting is denied.
#[tokio::test(start_paused = true)]
async fn a_requesters_kill_of_a_waiting_message_leaves_the_running_turn_alone() {
    let mut bot = Bot::new(ScriptedModel::new(vec![ScriptedPass::Stream(vec![
        delay(10),
        text("Bob answered."),
    ])]));
    bot.say(message(1, BOB, "long one")).await;
    settle().await;
    bot.say(message(2, ALICE, "waiting")).await;
    settle().await;
    assert_eq!(
        bot.orchestrator.kill(CHANNEL, UserId(77), false).await,
        KillReport::Denied,
        "nothing of theirs runs or waits"
    );
    let report = bot.orchestrator.kill(CHANNEL, ALICE, false).await;
    assert_eq!(
        report,
        KillReport::Stopped {
            reach: KillReach::Own,
            turn_stopped: false,
            tool: None,
            dropped: 1
        }
    );
    assert_eq!(
        kill_text(&report, Locale::En),
        locale::text_with(Locale::En, "kill-dropped-own", &[("count", "1".into())])
    );
    let finished = bot.next().await;
    assert_eq!(finished.message, MessageId(1));
    assert_eq!(finished.report.status, TurnStatus::Completed);
    assert_eq!(bot.transcript(), "Bob answered.");
    assert!(bot.queue.entries().is_empty());
}

// SPEC C6: a manager's /kill stops the running turn and clears everyone's waiting messages; the
// answer says it was everyone's.
#[tokio::test(start_paused = true)]
async fn a_managers_kill_clears_everyones_waiting_messages() {
    let mut bot = Bot::new(ScriptedModel::new(vec![ScriptedPass::Stream(vec![
        delay(60),
        text("ok."),
    ])]));
    bot.say(message(1, ALICE, "long")).await;
    settle().await;
    bot.say(message(2, BOB, "waiting")).await;
    bot.say(message(3, UserId(77), "waiting too")).await;
    settle().await;
    let report = bot.orchestrator.kill(CHANNEL, UserId(99), true).await;
    assert_eq!(
        report,
        KillReport::Stopped {
            reach: KillReach::Channel,
            turn_stopped: true,
            tool: None,
            dropped: 2
        }
    );
    let answer = kill_text(&report, Locale::En);
    assert!(
        answer.contains("Waiting messages dropped for everyone: 2"),
        "{answer}"
    );
    for message in 1..=3 {
        let marks = finished_marks(&bot, message, 0).await;
        assert!(marks, "message {message} has its finished mark");
    }
    assert_eq!(bot.next().await.report.status, TurnStatus::StoppedByUser);
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_eq!(bot.transcript(), "", "nothing after the kill");
    assert!(bot.queue.entries().is_empty(), "the queue is cleared");
}

/// Whether the turn answering `message` (its `edit`-th edit) has a finished mark.
async fn finished_marks<M: persona_bot::domain::ports::ChatModel>(
    bot: &Bot<M>,
    message: u64,
    edit: u32,
) -> bool {
    let turn = TurnId::for_edit(CHANNEL, MessageId(message), edit);
    bot.h
        .fakes
        .outcomes
        .deliveries(turn)
        .await
        .unwrap()
        .contains(&Delivery::Finished)
}

// SPEC D5, D9: every message a requester's /kill stops or drops has a finished mark by the time
// /kill answers (the stopped turn's edit under its own id too), so no catch-up or restart answers
// it again; its stored entry is gone. Another member's waiting message has no mark and keeps its
// entry.
#[tokio::test(start_paused = true)]
async fn killed_and_dropped_messages_are_marked_finished() {
    let probe = Behaviour::Sleep {
        duration: Duration::from_secs(5),
        honour_cancel: true,
    };
    let mut bot = Bot::build(
        ScriptedModel::new(vec![
            ScriptedPass::call("probe", r#"{"n":1}"#),
            ScriptedPass::text(&["First."]),
            ScriptedPass::call("probe", r#"{"n":2}"#),
            ScriptedPass::Stream(vec![delay(10), text("Bob answered.")]),
        ]),
        probe,
        |_| {},
        Fakes::default(),
    );
    bot.say(message(1, ALICE, "run the probe")).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    // Inside the tool chain the edit becomes a follow-up turn, after the first (SPEC C7).
    bot.orchestrator
        .edited(CHANNEL, MessageId(1), "run it again".into());
    bot.say(message(2, BOB, "my question")).await;
    assert_eq!(bot.next().await.message, MessageId(1), "the first turn");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(bot.h.probe.runs(), 2, "the edit's turn runs its tool");
    bot.say(message(3, ALICE, "and this")).await;
    settle().await;
    assert!(!finished_marks(&bot, 1, 1).await);
    let report = bot.orchestrator.kill(CHANNEL, ALICE, false).await;
    assert!(
        matches!(report, KillReport::Stopped { dropped: 1, .. }),
        "{report:?}"
    );
    assert!(finished_marks(&bot, 1, 0).await, "the stopped message");
    assert!(finished_marks(&bot, 1, 1).await, "the stopped edit's turn");
    assert!(finished_marks(&bot, 3, 0).await, "the dropped message");
    assert!(!finished_marks(&bot, 2, 0).await, "bob's is being answered");
    let stored: Vec<MessageId> = bot
        .queue
        .entries()
        .iter()
        .map(|q| q.entry.message)
        .collect();
    assert_eq!(stored, vec![MessageId(2)], "only bob's entry is left");
    assert_eq!(bot.next().await.report.status, TurnStatus::StoppedByUser);
    assert_eq!(bot.next().await.message, MessageId(2));
    assert!(bot.transcript().ends_with("Bob answered."));
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
            content: "[alice] actually, this".into(),
            images: Vec::new(),
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
    // Follow-ups 2, 3, 4 supersede each other (only 4 waits, marked a follow-up); 5 queues
    // normally, not marked, and 6 joins it (SPEC C2: one turn answers both). 1 is the running
    // turn's own entry.
    assert_eq!(
        waiting,
        vec![(1, false), (4, true), (5, false)],
        "the store mirrors which waiting message is a follow-up"
    );
    let joined = bot
        .queue
        .entries()
        .iter()
        .find(|e| e.entry.message.0 == 5)
        .map(|e| e.entry.content.clone());
    assert_eq!(joined.as_deref(), Some("more 5\nmore 6"));
    let answered: Vec<u64> = [bot.next().await, bot.next().await, bot.next().await]
        .iter()
        .map(|f| f.message.0)
        .collect();
    assert_eq!(answered, vec![1, 4, 5]);
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
    let content = second.iter().find_map(|m| match m {
        ChatMessage::Tool { call_id, content } if call_id == "call_2" => Some(content.as_str()),
        _ => None,
    });
    assert_eq!(
        content
            .map(serde_json::from_str::<serde_json::Value>)
            .map(Result::unwrap),
        Some(serde_json::json!({
            "status": "tool_execution_failed",
            "reason": "Only one tool call per reply step is allowed; this one did not run. \
                       Call tools one at a time.",
            "tool_name": "probe",
            "code": "parallel_tool_calls_refused",
            "suggested_actions": [],
        }))
    );
}

// SPEC T6, C9: a context restart resets the consecutive-failure counter: failures just below
// the cap, a `fetch_older_messages` restart, then as many failures again do not end the turn.
#[tokio::test(start_paused = true)]
async fn a_context_restart_resets_the_failure_counter() {
    let below_cap = Config::shipped_defaults().turn.max_consecutive_failures - 1;
    assert!(below_cap >= 1, "the test needs room below the cap");
    let failing = || ScriptedPass::call("no_such_tool", "{}");
    let mut passes: Vec<ScriptedPass> = (0..below_cap).map(|_| failing()).collect();
    passes.push(ScriptedPass::call("fetch_older_messages", r#"{"count":1}"#));
    passes.extend((0..below_cap).map(|_| failing()));
    passes.push(ScriptedPass::text(&["Found it."]));
    // The turn's recent history is the newest message; the restart brings in the one before it.
    let history: Vec<HistoryMessage> = [(103, "the recent one"), (102, "the older one")]
        .into_iter()
        .map(|(id, content)| HistoryMessage {
            id: MessageId(id),
            author: "carol".into(),
            from_bot: false,
            content: content.into(),
            at_ms: 0,
            attachments: Vec::new(),
        })
        .collect();
    let mut bot = Bot::build(
        ScriptedModel::new(passes),
        Behaviour::succeed(),
        |c| {
            c.turn.history_messages = 1;
            c.turn.max_passes = 50;
        },
        Fakes::default().with_history(history),
    );
    bot.say(message(1000, ALICE, "what did carol say before?"))
        .await;
    let finished = bot.next().await;
    assert_eq!(finished.report.end, TurnEnd::Answered, "{finished:?}");
    assert_eq!(finished.report.status, TurnStatus::Completed);
    assert_eq!(finished.report.tool_calls, 2 * below_cap + 1);
    assert_eq!(bot.transcript(), "Found it.", "no failure-cap notice");
    // It was a real restart: the pass after it sees the older message and no tool entry for
    // the fetch.
    let after = &bot.model.requests()[below_cap as usize + 1].1.messages;
    assert!(
        after.iter().any(
            |m| matches!(m, ChatMessage::User { content, .. } if content.contains("the older one"))
        ),
        "{after:#?}"
    );
    assert!(
        !after
            .iter()
            .any(|m| matches!(m, ChatMessage::Assistant { tool_calls, .. }
            if tool_calls.iter().any(|c| c.name == "fetch_older_messages"))),
        "a restart writes no history entry: {after:#?}"
    );
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
    settle().await;
    // SPEC D12: its message had its chance: recorded finished, never revived.
    assert!(closed(&bot, MessageId(1)).await);
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
            input_budget: None,
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
    fakes.sink.script_expression(ExpressionSend::Confirmed);
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

// SPEC C4: typing shows while the turn works, first after turn.typing_delay_ms (1.5 s), then
// renewed every 8 s.
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
        "at 1.5, 9.5 and 17.5 s"
    );
}

// A reply ready within the typing delay costs no typing request; one that has posted before the
// delay skips the first pulse, and a longer turn still renews it.
#[tokio::test(start_paused = true)]
async fn a_quick_reply_sends_no_typing() {
    let mut bot = Bot::new(ScriptedModel::new(vec![
        ScriptedPass::Stream(vec![delay(1), text("quick.")]),
        ScriptedPass::Stream(vec![text("first.\n\n"), delay(12), text("second.")]),
    ]));
    bot.say(message(1, ALICE, "fast")).await;
    bot.next().await;
    assert_eq!(bot.h.fakes.sink.typing_count(CHANNEL), 0);
    bot.say(message(2, ALICE, "longer")).await;
    bot.next().await;
    assert_eq!(
        bot.h.fakes.sink.typing_count(CHANNEL),
        1,
        "none at 1.5 s (the first message was up), one at 9.5 s"
    );
}

// A typing pulse held by a rate limit never keeps the channel from a /kill: the pulse is dropped
// after a moment and the kill is handled.
#[tokio::test(start_paused = true)]
async fn a_held_typing_pulse_does_not_hold_up_kill() {
    let fakes = Fakes::default();
    fakes.sink.hang_typing(true);
    let model = ScriptedModel::new(vec![ScriptedPass::Stream(vec![delay(30), text("late.")])]);
    let mut bot = Bot::build(model, Behaviour::succeed(), |_| {}, fakes);
    bot.say(message(1, ALICE, "slow")).await;
    tokio::time::sleep(Duration::from_millis(1600)).await;
    assert_eq!(
        bot.h.fakes.sink.typing_count(CHANNEL),
        1,
        "the pulse is hanging"
    );
    let asked = tokio::time::Instant::now();
    let kill = bot.orchestrator.kill(CHANNEL, ALICE, false);
    let report = tokio::time::timeout(Duration::from_secs(5), kill)
        .await
        .expect("the kill is handled");
    assert!(
        matches!(
            report,
            KillReport::Stopped {
                turn_stopped: true,
                ..
            }
        ),
        "{report:?}"
    );
    assert!(
        asked.elapsed() <= Duration::from_millis(500),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(bot.next().await.report.status, TurnStatus::StoppedByUser);
}

// SPEC C3, D4: a message delivered twice (a replayed gateway event) is answered once.
#[tokio::test(start_paused = true)]
async fn a_redelivered_message_is_answered_once() {
    let mut bot = Bot::new(ScriptedModel::new(vec![ScriptedPass::text(&["Once."])]));
    bot.say(message(1, ALICE, "hello")).await;
    bot.say(message(1, ALICE, "hello")).await;
    assert_eq!(bot.next().await.message, MessageId(1));
    settle().await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(bot.model.requests().len(), 1, "one turn");
    assert_eq!(bot.transcript().matches("Once.").count(), 1);
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

// SPEC C7, D4: a follow-up waiting at the front (its turn was in a tool chain) keeps that place
// across a restart: answered right after the interrupted turn, before earlier messages of others.
#[tokio::test(start_paused = true)]
async fn a_waiting_follow_up_keeps_its_place_after_a_restart() {
    let queue = Arc::new(InMemoryQueue::default());
    let slow_tool = Behaviour::Sleep {
        duration: Duration::from_secs(60),
        honour_cancel: true,
    };
    let h = Harness::build_with_config(Fakes::default(), slow_tool, |r| r, |_| {});
    let bot = Bot::with_queue(
        h,
        ScriptedModel::new(vec![ScriptedPass::call("probe", r#"{"n":1}"#)]),
        queue.clone(),
    );
    bot.say(message(1, ALICE, "draw me something")).await;
    settle().await;
    bot.say(message(2, BOB, "hello?")).await;
    bot.say(message(3, ALICE, "make it blue")).await;
    settle().await;
    bot.orchestrator.shutdown().await;
    let kept = queue.entries();
    assert_eq!(kept.len(), 3, "all kept");
    assert!(
        kept.iter()
            .any(|m| m.entry.message == MessageId(3) && m.entry.follow_up),
        "the store knows the follow-up: {kept:?}"
    );

    let mut next = Bot::with_queue(
        Harness::new(),
        ScriptedModel::new(vec![
            ScriptedPass::text(&["One."]),
            ScriptedPass::text(&["Two."]),
            ScriptedPass::text(&["Three."]),
        ]),
        queue.clone(),
    );
    assert_eq!(next.orchestrator.recover().await.unwrap(), 3);
    let order = [
        next.next().await.message,
        next.next().await.message,
        next.next().await.message,
    ];
    assert_eq!(order, [MessageId(1), MessageId(3), MessageId(2)]);
}

// SPEC R4, D4: a turn interrupted by a shutdown after a completed tool call, and resumed after
// the restart, reuses the stored outcome instead of running the tool again, also when the
// earlier run had already retried (a key rotation), so the stored outcome is from invocation 1.
#[tokio::test(start_paused = true)]
async fn resumed_turn_reuses_the_outcome_stored_before_a_restart() {
    let queue = Arc::new(InMemoryQueue::default());
    let fakes = Fakes::default();
    let first_model = ScriptedModel::new(vec![
        // The first key fails before any tool call: the probe runs in the retry (invocation 1).
        ScriptedPass::OpenError(failure(FailureClass::RateLimited, 429)),
        ScriptedPass::call("probe", r#"{"n":7}"#),
        // The model stalls after the tool call; the bot is shut down meanwhile.
        ScriptedPass::Stream(vec![Step::Hang]),
    ])
    .with_attempts(attempts(&[(0, 0), (0, 1)]));
    let first = Bot::with_queue(
        Harness::with_fakes(fakes.clone()),
        first_model,
        queue.clone(),
    );
    first.say(message(1, ALICE, "probe seven")).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(first.h.probe.runs(), 1);
    assert_eq!(
        first.model.remaining(),
        0,
        "the model stalls after the call"
    );
    let turn = TurnId::for_message(CHANNEL, MessageId(1));
    let stored = fakes.outcomes.outcomes(turn).await.unwrap();
    assert_eq!(stored.len(), 1, "the completed outcome is stored");
    assert_eq!(stored[0].invocation, 1, "completed in the retry");
    first.orchestrator.shutdown().await;
    assert_eq!(queue.entries().len(), 1, "the interrupted message is kept");

    // A new start on the same queue and outcome store.
    let after_restart = Fakes {
        outcomes: fakes.outcomes.clone(),
        ..Fakes::default()
    };
    let mut next = Bot::with_queue(
        Harness::with_fakes(after_restart),
        ScriptedModel::new(vec![
            ScriptedPass::call("probe", r#"{"n":7}"#),
            ScriptedPass::text(&["Seven done."]),
        ]),
        queue.clone(),
    );
    assert_eq!(next.orchestrator.recover().await.unwrap(), 1);
    let finished = next.next().await;
    assert_eq!(finished.message, MessageId(1));
    assert_eq!(finished.turn, turn);
    assert_eq!(finished.report.status, TurnStatus::Completed);
    assert_eq!(
        first.h.probe.runs() + next.h.probe.runs(),
        1,
        "the probe ran once in total, not again after the restart"
    );
    let events: Vec<_> = next
        .h
        .fakes
        .events
        .events()
        .into_iter()
        .map(|e| (e.tool, e.outcome))
        .collect();
    assert_eq!(events, vec![("probe".to_owned(), EventOutcome::Reused)]);
    // The model sees the stored response as the repeated call's answer.
    let answer = &next.model.requests()[1].1.messages;
    let expected = serde_json::to_string(&stored[0].response).unwrap();
    assert!(
        answer
            .iter()
            .any(|m| matches!(m, ChatMessage::Tool { content, .. } if *content == expected)),
        "{answer:#?}"
    );
    assert_eq!(next.transcript(), "Seven done.");
}

// A stop lets a running turn finish within the first half of the grace: it is answered and its
// entry removed; the message waiting behind it stays stored for the next start.
#[tokio::test(start_paused = true)]
async fn a_stop_lets_the_running_turn_finish_and_keeps_the_waiting_one() {
    let queue = Arc::new(InMemoryQueue::default());
    let bot = Bot::with_queue(
        Harness::new(),
        ScriptedModel::new(vec![ScriptedPass::Stream(vec![
            delay(2),
            text("Finished in time."),
        ])]),
        queue.clone(),
    );
    bot.say(message(1, ALICE, "hi")).await;
    bot.say(message(2, BOB, "me next")).await;
    settle().await;
    assert!(bot.orchestrator.stop_within(Duration::from_secs(8)).await);
    assert_eq!(bot.transcript(), "Finished in time.");
    let left: Vec<MessageId> = queue.entries().iter().map(|e| e.entry.message).collect();
    assert_eq!(left, vec![MessageId(2)], "the waiting message stays stored");
}

// A turn still running at half the grace is stopped at a safe point: what it had not posted yet is
// not posted in part (its next run cuts it the same way), and its entry stays.
#[tokio::test(start_paused = true)]
async fn a_stop_stops_a_long_turn_and_keeps_its_entry() {
    let queue = Arc::new(InMemoryQueue::default());
    let bot = Bot::with_queue(
        Harness::new(),
        ScriptedModel::new(vec![ScriptedPass::Stream(vec![
            text("A complete sentence. And half of"),
            Step::Hang,
        ])]),
        queue.clone(),
    );
    bot.say(message(1, ALICE, "hi")).await;
    settle().await;
    assert!(bot.orchestrator.stop_within(Duration::from_secs(2)).await);
    assert!(bot.h.fakes.sink.texts().is_empty(), "nothing half-said");
    assert_eq!(queue.entries().len(), 1, "the interrupted message is kept");
}

// While a server's settings cannot be read, its turns wait (never run with guessed settings, which
// would skip the server's review or its deliberate mode); once the store answers, the turn runs
// with the server's own settings.
#[tokio::test(start_paused = true)]
async fn a_turn_waits_for_unreadable_settings_and_runs_with_the_real_ones() {
    let settings = Arc::new(InMemorySettings::default());
    settings
        .save_settings(
            SERVER,
            &ServerSettings {
                deliberate: DeliberateSettings {
                    enabled: true,
                    ..DeliberateSettings::default()
                },
                ..ServerSettings::default()
            },
        )
        .await
        .unwrap();
    settings.set_unavailable(true);
    let mut bot = Bot::with_settings(
        Harness::new(),
        ScriptedModel::new(vec![ScriptedPass::text(&["Reviewed answer."])]),
        Arc::new(InMemoryQueue::default()),
        settings.clone(),
    );
    bot.say(message(1, ALICE, "hi")).await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(bot.model.requests().is_empty(), "no turn without settings");
    settings.set_unavailable(false);
    let finished = bot.next().await;
    assert_eq!(finished.message, MessageId(1));
    assert_eq!(bot.model.requests().len(), 1);
    let offered = serde_json::to_string(&bot.model.requests()[0].1.tools).unwrap();
    assert!(
        !offered.contains("remember_fact"),
        "the turn ran with the server's deliberate mode on: {offered}"
    );
}

// A removal that fails (the database is down) is tried again until it lands, so the answered
// message is not answered again after a restart.
#[tokio::test(start_paused = true)]
async fn a_failed_removal_of_an_answered_message_is_retried() {
    let queue = Arc::new(InMemoryQueue::default());
    queue.set_removals_fail(true);
    let mut bot = Bot::with_queue(
        Harness::new(),
        ScriptedModel::new(vec![ScriptedPass::text(&["Answered."])]),
        queue.clone(),
    );
    bot.say(message(1, ALICE, "hi")).await;
    bot.next().await;
    assert_eq!(queue.entries().len(), 1, "the removal failed");
    queue.set_removals_fail(false);
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(queue.entries().is_empty(), "the retry removed it");
}

// SPEC D5: a turn that finished but whose queue entry outlived it (removing it failed, then the
// process stopped) is not answered again after the restart: the store says it finished.
#[tokio::test(start_paused = true)]
async fn a_finished_turn_whose_entry_survived_is_not_answered_again() {
    let queue = Arc::new(InMemoryQueue::default());
    let fakes = Fakes::default();
    let mut first = Bot::with_queue(
        Harness::with_fakes(fakes.clone()),
        ScriptedModel::new(vec![ScriptedPass::text(&["Answered once."])]),
        queue.clone(),
    );
    first.say(message(1, ALICE, "hello")).await;
    first.next().await;
    let turn = TurnId::for_message(CHANNEL, MessageId(1));
    assert!(
        fakes
            .outcomes
            .deliveries(turn)
            .await
            .unwrap()
            .contains(&Delivery::Finished),
        "the turn's end is recorded"
    );
    first.orchestrator.shutdown().await;
    // The entry is back, as if its removal had failed.
    queue.push(&message(1, ALICE, "hello")).await.unwrap();

    let after_restart = Fakes {
        outcomes: fakes.outcomes.clone(),
        ..Fakes::default()
    };
    // A model with nothing scripted: a request would fail the test.
    let mut next = Bot::with_queue(
        Harness::with_fakes(after_restart),
        ScriptedModel::new(vec![]),
        queue.clone(),
    );
    assert_eq!(next.orchestrator.recover().await.unwrap(), 1);
    let finished = next.next().await;
    assert_eq!(finished.report.end, TurnEnd::AlreadyFinished);
    assert!(next.model.requests().is_empty());
    assert!(next.h.fakes.sink.texts().is_empty(), "nothing posted again");
    assert!(queue.entries().is_empty(), "the entry is gone now");
}

// SPEC D5: a resumed turn does not post the messages an earlier run delivered, and goes on
// after them; every message carries its place in the turn as its idempotency key.
#[tokio::test(start_paused = true)]
async fn a_resumed_turn_skips_the_messages_delivered_before() {
    let fakes = Fakes::default();
    let turn = TurnId::for_message(CHANNEL, MessageId(1));
    fakes
        .outcomes
        .record_delivery(
            turn,
            Delivery::Piece {
                index: 0,
                message: MessageId(500),
            },
            1,
        )
        .await
        .unwrap();
    let long = "A sentence that fills the first message up. ".repeat(60);
    let mut bot = Bot::build(
        ScriptedModel::new(vec![ScriptedPass::text(&[&long, "The end."])]),
        Behaviour::succeed(),
        |_| {},
        fakes.clone(),
    );
    bot.say(message(1, ALICE, "a long one")).await;
    let finished = bot.next().await;
    let texts = bot.h.fakes.sink.texts();
    assert_eq!(texts.len(), 1, "{texts:#?}");
    assert!(texts[0].text.ends_with("The end."), "{}", texts[0].text);
    assert_eq!(
        texts[0].reply_to, None,
        "the reply reference went with the first message"
    );
    assert_eq!(texts[0].key, Some(delivery_key(turn, "piece-1")));
    assert_eq!(finished.report.status, TurnStatus::Completed);
    let pieces: Vec<_> = fakes.outcomes.deliveries(turn).await.unwrap();
    assert!(pieces.contains(&Delivery::Piece {
        index: 1,
        message: MessageId(1)
    }));
}

// SPEC D5: the outcome of a tool with external effects is written before the stage returns it;
// a lookup's goes with the next batch.
#[tokio::test(start_paused = true)]
async fn outcomes_of_tools_with_effects_are_written_at_once() {
    let fakes = Fakes::default();
    let mut bot = Bot::build(
        ScriptedModel::new(vec![
            ScriptedPass::call("remember_fact", r#"{"fact":"likes tea"}"#),
            ScriptedPass::call("recall_facts", r#"{}"#),
            ScriptedPass::text(&["Noted."]),
        ]),
        Behaviour::succeed(),
        |_| {},
        fakes.clone(),
    );
    bot.say(message(1, ALICE, "remember I like tea")).await;
    bot.next().await;
    let written: Vec<(String, Durability)> = fakes
        .outcomes
        .durability()
        .into_iter()
        .map(|(identity, durability)| (identity.split('{').next().unwrap().to_owned(), durability))
        .collect();
    assert_eq!(
        written,
        vec![
            ("remember_fact".to_owned(), Durability::Now),
            ("recall_facts".to_owned(), Durability::Batched),
        ]
    );
}

// ---------------------------------------------------------------- S5

// SPEC S5: a turn that promised a set of images and planned only parts 1/3 and 3/3 fails
// loudly: it ends in error with the localized notice naming the missing part.
#[tokio::test(start_paused = true)]
async fn incomplete_plan_set_fails_the_turn_with_a_notice() {
    let part =
        |i: u8| format!(r#"{{"prompt":"cat {i}","part":{{"set":"cats","index":{i},"total":3}}}}"#);
    let mut bot = Bot::new(ScriptedModel::new(vec![
        ScriptedPass::call("plan_image", &part(1)),
        ScriptedPass::call("plan_image", &part(3)),
        ScriptedPass::text(&["Three cats are on their way!"]),
    ]));
    bot.say(message(1, ALICE, "draw three cats")).await;
    let finished = bot.next().await;
    assert_eq!(finished.report.end, TurnEnd::PlansIncomplete);
    assert_eq!(finished.report.status, TurnStatus::Error);
    assert_eq!(
        bot.h.fakes.plans.plans().len(),
        2,
        "both parts were planned"
    );
    let notice = locale::text_with(
        Locale::En,
        "turn-plans-incomplete",
        &[("missing", "cats 2/3".into())],
    );
    assert!(notice.contains("were not planned"), "{notice}");
    assert!(bot.transcript().contains(&notice), "{}", bot.transcript());
}

// ---------------------------------------------------------------- panics and idle workers

// Regression: a panic inside a turn (here a tool) once killed the channel's worker and left its
// dead sender in the map, so the channel never answered again until a restart. The turn now
// ends as an error turn with the localized notice, and the channel goes on.
#[tokio::test(start_paused = true)]
async fn a_panicking_turn_ends_with_the_error_notice_and_the_channel_goes_on() {
    let model = ScriptedModel::new(vec![
        ScriptedPass::Stream(vec![call(
            "probe",
            r#"{"n":1,"note":"sk-abcdefghijklmnopqrstuvwx"}"#,
        )]),
        ScriptedPass::text(&["Still here."]),
    ]);
    let mut bot = Bot::build(model, Behaviour::Panic, |_| {}, Fakes::default());
    bot.say(message(1, ALICE, "crash please")).await;
    let crashed = bot.next().await;
    assert_eq!(crashed.message, MessageId(1));
    assert_eq!(crashed.report.status, TurnStatus::Error);
    assert_eq!(crashed.report.end, TurnEnd::Crashed);
    assert_eq!(
        bot.transcript(),
        locale::text(Locale::En, "turn-crashed"),
        "the error notice is the channel's only message"
    );
    bot.say(message(2, BOB, "hello?")).await;
    let next = bot.next().await;
    assert_eq!(next.message, MessageId(2));
    assert_eq!(next.report.status, TurnStatus::Completed);
    assert!(
        bot.transcript().ends_with("Still here."),
        "{}",
        bot.transcript()
    );
}

// A worker that panics outside a turn (here its typing pulse) is replaced, and the message it
// held is taken again from the store and answered.
#[tokio::test(start_paused = true)]
async fn a_panicking_worker_is_replaced_and_its_message_answered() {
    let fakes = Fakes::default();
    fakes.sink.panic_on_next_typing();
    let model = ScriptedModel::responding(|_| ScriptedPass::text(&["Answered."]));
    let at_once = |c: &mut Config| c.turn.typing_delay_ms = 0;
    let mut bot = Bot::build(model, Behaviour::succeed(), at_once, fakes);
    bot.say(message(1, ALICE, "hi")).await;
    let answered = bot.next().await;
    assert_eq!(answered.message, MessageId(1));
    assert_eq!(answered.report.status, TurnStatus::Completed);
    assert_eq!(bot.transcript(), "Answered.");
    bot.say(message(2, BOB, "again")).await;
    assert_eq!(bot.next().await.message, MessageId(2));
}

// Idle channel workers are let go after `turn.worker_idle_secs`; the channel still answers.
#[tokio::test(start_paused = true)]
async fn an_idle_channel_worker_retires_and_a_new_message_starts_another() {
    let model = ScriptedModel::responding(|_| ScriptedPass::text(&["Yes."]));
    let mut bot = Bot::build(
        model,
        Behaviour::succeed(),
        |c| c.turn.worker_idle_secs = 60,
        Fakes::default(),
    );
    bot.say(message(1, ALICE, "one")).await;
    bot.next().await;
    assert_eq!(bot.orchestrator.workers(), 1);
    tokio::time::sleep(Duration::from_secs(30)).await;
    settle().await;
    assert_eq!(bot.orchestrator.workers(), 1, "retired too early");
    tokio::time::sleep(Duration::from_secs(31)).await;
    settle().await;
    assert_eq!(bot.orchestrator.workers(), 0, "an idle worker was kept");
    bot.say(message(2, ALICE, "two")).await;
    assert_eq!(bot.next().await.message, MessageId(2));
    assert_eq!(bot.orchestrator.workers(), 1);
}

// A stored message handed to a worker twice (a replacement worker gets it replayed from the
// store and sent again) is answered once.
#[tokio::test(start_paused = true)]
async fn a_stored_message_handed_over_twice_is_answered_once() {
    let queue = Arc::new(InMemoryQueue::default());
    let first = Bot::with_queue(
        Harness::new(),
        ScriptedModel::new(vec![ScriptedPass::Stream(vec![delay(60), text("never")])]),
        queue.clone(),
    );
    first.say(message(1, ALICE, "kept")).await;
    settle().await;
    first.orchestrator.shutdown().await;

    let mut next = Bot::with_queue(
        Harness::new(),
        ScriptedModel::responding(|_| ScriptedPass::text(&["Once."])),
        queue.clone(),
    );
    assert_eq!(next.orchestrator.recover().await.unwrap(), 1);
    assert_eq!(next.orchestrator.recover().await.unwrap(), 1);
    assert_eq!(next.next().await.message, MessageId(1));
    next.say(message(2, BOB, "after")).await;
    assert_eq!(
        next.next().await.message,
        MessageId(2),
        "message 1 ran twice"
    );
    assert_eq!(next.transcript(), "Once.\n\nOnce.");
}
