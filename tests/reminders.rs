//! Reminders: the `create_reminder` tool (time zones, validation, limits), the store on SQLite
//! and PostgreSQL (ownership, one winner per occurrence, restarts), and the scheduler turning a
//! due reminder into a quiet turn whose progress goes to the thought log (SPEC T11).

// The shared fakes this binary uses (tests/support/). Public, so that what it leaves
// unused of them is not dead code.
pub mod support {
    pub mod bot;
    pub mod db;
    pub mod harness;
}

use persona_bot::domain::ports::{NewReminder, ReminderStore, Repeat};
use persona_bot::domain::role::Role;
use persona_bot::domain::scope::{PersonaId, ServerId, UserId, Visibility};
use persona_bot::domain::thought_log::Notice;
use persona_bot::domain::turn::TurnStatus;
use persona_bot::engine::reminders::ReminderScheduler;
use persona_bot::locale::Locale;
use persona_bot::testkit::{Fakes, ScriptedModel, ScriptedPass, public_scope};
use support::bot::{Bot, CHANNEL, SERVER};
use support::db::TestDb;
use support::harness::{Behaviour, Harness, code, entry};

const NOW: i64 = 1_780_000_000_000; // 2026-05-28 20:26:40 UTC

fn harness() -> Harness {
    let h = Harness::new();
    h.fakes.clock.set(NOW);
    h
}

// A relative reminder is due that many minutes from now, for the requester.
#[tokio::test]
async fn a_reminder_in_minutes_is_stored_for_the_requester() {
    let h = harness();
    let turn = h.turn(public_scope());
    let e = entry(
        h.call(
            Role::Persona,
            &turn,
            "create_reminder",
            r#"{"text":"stretch","in_minutes":30}"#,
        )
        .await,
    );
    assert_eq!(e.response["result"]["repeat"], "once");
    let (stored, active) = h.fakes.reminders.all().remove(0);
    assert!(active);
    assert_eq!(stored.reminder.due_at_ms, NOW + 30 * 60_000);
    assert_eq!(stored.reminder.creator, turn.scope.user);
    assert_eq!(stored.reminder.target, Some(turn.scope.user));
    assert_eq!(stored.reminder.channel, turn.scope.channel);
}

// A local time is read in the user's time zone.
#[tokio::test]
async fn a_local_time_is_read_in_the_users_time_zone() {
    let h = harness();
    let turn = h.turn(public_scope());
    // A reminder for the whole channel needs approval (SPEC E3): given here.
    h.fakes.approvals.approve_all();
    let args = r#"{"text":"call mum","at":"2026-12-01 09:30","time_zone":"Asia/Tokyo","repeat":"weekly","for_channel":true}"#;
    let e = entry(h.call(Role::Persona, &turn, "create_reminder", args).await);
    assert_eq!(e.response["result"]["due_local"], "2026-12-01 09:30");
    let (stored, _) = h.fakes.reminders.all().remove(0);
    // 09:30 in Tokyo is 00:30 UTC.
    assert_eq!(stored.reminder.due_at_ms, 1_796_085_000_000);
    assert_eq!(stored.reminder.repeat, Repeat::Weekly);
    assert_eq!(stored.reminder.time_zone, "Asia/Tokyo");
    assert_eq!(stored.reminder.target, None, "for the whole channel");
}

// Bad input gets a clear answer and stores nothing.
#[tokio::test]
async fn bad_reminders_are_refused_with_a_reason() {
    let h = harness();
    let turn = h.turn(public_scope());
    for (args, want) in [
        (
            r#"{"text":"x","in_minutes":5,"at":"2026-12-01 09:30"}"#,
            "invalid_arguments",
        ),
        (r#"{"text":"x"}"#, "invalid_arguments"),
        (
            r#"{"text":"x","in_minutes":5,"time_zone":"Mars/Olympus"}"#,
            "invalid_arguments",
        ),
        (r#"{"text":"x","at":"tomorrow"}"#, "invalid_arguments"),
        (
            r#"{"text":"x","at":"2020-01-01 00:00"}"#,
            "reminder_in_the_past",
        ),
    ] {
        let e = entry(h.call(Role::Persona, &turn, "create_reminder", args).await);
        assert_eq!(code(&e), want, "{args}");
    }
    assert!(h.fakes.reminders.all().is_empty());
}

// A user's active reminders are limited.
#[tokio::test]
async fn reminders_per_user_are_limited() {
    let h = Harness::build_with_config(
        Fakes::default(),
        Behaviour::succeed(),
        |r| r,
        |c| c.reminders.max_per_user = 1,
    );
    h.fakes.clock.set(NOW);
    let turn = h.turn(public_scope());
    entry(
        h.call(
            Role::Persona,
            &turn,
            "create_reminder",
            r#"{"text":"a","in_minutes":5}"#,
        )
        .await,
    );
    let second = entry(
        h.call(
            Role::Persona,
            &turn,
            "create_reminder",
            r#"{"text":"b","in_minutes":5}"#,
        )
        .await,
    );
    assert_eq!(code(&second), "reminder_limit");
}

fn reminder(due: i64, repeat: Repeat, creator: u64, target: Option<u64>) -> NewReminder {
    NewReminder {
        server: Some(ServerId(SERVER.0)),
        channel: CHANNEL,
        creator: UserId(creator),
        target: target.map(UserId),
        persona: PersonaId("aria".into()),
        text: "stretch your legs".into(),
        due_at_ms: due,
        repeat,
        time_zone: "Europe/Paris".into(),
        visibility: Visibility::Public,
        locale: Locale::En,
        created_at_ms: NOW - 1_000,
    }
}

on_both_databases!(
    only_the_creator_or_target_may_cancel,
    a_manager_may_cancel_any_reminder_of_their_server,
    each_occurrence_is_taken_once_across_processes,
    reminders_survive_a_restart,
);

// A member with Manage Server may cancel any reminder set in that server, and only there.
async fn a_manager_may_cancel_any_reminder_of_their_server(db: TestDb) {
    let s = db.open().await;
    let id = s
        .reminders
        .create(&reminder(NOW, Repeat::Daily, 30, None))
        .await
        .unwrap();
    let elsewhere = Some(ServerId(SERVER.0 + 1));
    assert!(
        !s.reminders.cancel(id, UserId(99), elsewhere).await.unwrap(),
        "a manager of another server may not"
    );
    assert!(
        s.reminders
            .cancel(id, UserId(99), Some(SERVER))
            .await
            .unwrap(),
        "a manager of its server may"
    );
    assert!(s.reminders.for_user(UserId(30)).await.unwrap().is_empty());
    s.close().await;
}

async fn only_the_creator_or_target_may_cancel(db: TestDb) {
    let s = db.open().await;
    let id = s
        .reminders
        .create(&reminder(NOW, Repeat::Once, 30, Some(31)))
        .await
        .unwrap();
    assert_eq!(
        s.reminders.for_user(UserId(31)).await.unwrap().len(),
        1,
        "the target sees it"
    );
    assert!(
        !s.reminders.cancel(id, UserId(99), None).await.unwrap(),
        "a stranger may not"
    );
    assert!(
        s.reminders.cancel(id, UserId(31), None).await.unwrap(),
        "the target may"
    );
    assert!(
        !s.reminders.cancel(id, UserId(30), None).await.unwrap(),
        "already cancelled"
    );
    assert!(s.reminders.for_user(UserId(30)).await.unwrap().is_empty());
    s.close().await;
}

async fn each_occurrence_is_taken_once_across_processes(db: TestDb) {
    let one = db.open().await;
    let two = db.open().await;
    let id = one
        .reminders
        .create(&reminder(NOW, Repeat::Daily, 30, Some(30)))
        .await
        .unwrap();
    let tries = [
        one.reminders.clone(),
        two.reminders.clone(),
        one.reminders.clone(),
        two.reminders.clone(),
    ]
    .map(|store| {
        tokio::spawn(async move {
            store
                .take_occurrence(id, NOW, Some(NOW + 86_400_000))
                .await
                .unwrap()
        })
    });
    let mut won = 0;
    for t in tries {
        won += usize::from(t.await.unwrap());
    }
    assert_eq!(won, 1, "exactly one process fires it");
    let stored = one.reminders.for_user(UserId(30)).await.unwrap().remove(0);
    assert_eq!(
        (stored.reminder.due_at_ms, stored.fired),
        (NOW + 86_400_000, 1)
    );
    one.close().await;
    two.close().await;
}

async fn reminders_survive_a_restart(db: TestDb) {
    let s = db.open().await;
    s.reminders
        .create(&reminder(NOW + 5_000, Repeat::Once, 30, Some(30)))
        .await
        .unwrap();
    s.close().await;
    let s = db.open().await;
    assert!(
        s.reminders.due(NOW, 10).await.unwrap().is_empty(),
        "not due yet"
    );
    let due = s.reminders.due(NOW + 5_000, 10).await.unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].reminder.text, "stretch your legs");
    s.close().await;
}

// SPEC T11: a due reminder fires once, even with two schedulers, as a quiet turn: its reply is
// posted (not as a reply), its progress goes to the thought log as a card.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_due_reminder_fires_once_as_a_quiet_turn() {
    let db = TestDb::sqlite().await;
    let storage = db.open().await;
    let model = ScriptedModel::new(vec![
        ScriptedPass::call("plan_image", r#"{"prompt":"a stretching cat"}"#),
        ScriptedPass::text(&["Time to stretch, <@30>!"]),
    ]);
    let mut bot = Bot::new(model);
    bot.h.fakes.clock.set(NOW);
    storage
        .reminders
        .create(&reminder(NOW - 1, Repeat::Once, 30, Some(30)))
        .await
        .unwrap();
    let schedulers = [1, 2].map(|_| {
        ReminderScheduler::new(
            storage.reminders.clone(),
            bot.orchestrator.clone(),
            bot.h.fakes.clock.clone(),
            std::time::Duration::from_secs(1),
        )
    });
    let fired: usize = futures::future::join_all(schedulers.iter().map(|s| s.fire_due()))
        .await
        .into_iter()
        .sum();
    assert_eq!(fired, 1, "fired once");
    let finished = bot.next().await;
    assert_eq!(finished.report.status, TurnStatus::Completed);
    let texts = bot.h.fakes.sink.texts();
    assert_eq!(
        texts.iter().map(|t| t.text.as_str()).collect::<Vec<_>>(),
        vec!["Time to stretch, <@30>!"]
    );
    assert_eq!(texts[0].reply_to, None, "a reminder is not a reply");
    assert!(
        bot.h.fakes.sink.progress().is_empty(),
        "the conversation stays quiet"
    );
    let cards = bot.h.fakes.thought_log.notices();
    assert!(
        cards
            .iter()
            .any(|(_, n)| matches!(n, Notice::Progress { tool, .. } if tool == "plan_image")),
        "{cards:?}"
    );
    let trigger = bot.model.requests()[0].1.messages.last().cloned().unwrap();
    assert!(format!("{trigger:?}").contains("stretch your legs"));
    assert!(schedulers[0].fire_due().await == 0, "not again");
    storage.close().await;
}
