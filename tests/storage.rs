//! The storage suite, run twice: against a SQLite file and against a real PostgreSQL (a fresh
//! database per test). Without `TEST_POSTGRES_URL` the PostgreSQL half is reported as ignored,
//! with the reason; `scripts/test` (the README's test command) sets it, and CI runs it.

// The shared fakes this binary uses (tests/support/). Public, so that what it leaves
// unused of them is not dead code.
pub mod support {
    pub mod db;
}

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use persona_bot::config::Config;
use persona_bot::domain::ports::{
    AccessLists, Attachment, DeliberateSettings, Delivery, Durability, EventOutcome, FactAdded,
    MemoryStore, Mention, Metric, NewFact, NewImagePlan, NewQueuedMessage, OutcomeStore, Persona,
    PersonaStore, PlanId, PlanStore, Pushed, QueueStore, ServerSettings, SettingsChange,
    SettingsStore, StoredOutcome, SummaryMode, TaskStore, ToolEvent, ToolEvents, UsageRecord,
    UsageStats,
};
use persona_bot::domain::role::Role;
use persona_bot::domain::scope::{ChannelId, MessageId, PersonaId, ServerId, UserId};
use persona_bot::domain::turn::TurnId;
use persona_bot::storage::Database;
use persona_bot::storage::queue::Claims;
use serde_json::json;
use support::db::TestDb;

// Each test runs on SQLite and on PostgreSQL (`sqlite::<name>`, `postgres::<name>`).
on_both_databases!(
    settings_round_trip_with_defaults_for_unknown_servers,
    personas_round_trip,
    memory_summaries_and_facts_with_per_bucket_limits,
    tool_events_are_batched_and_read_back,
    usage_counters_add_up_per_key,
    queue_keeps_order_deduplicates_and_clears,
    plans_create_tasks_claimed_once_with_lease_expiry,
    plan_results_for_a_prompt_are_the_newest_few,
    outcomes_round_trip,
    a_durable_outcome_is_stored_before_the_call_returns,
    deliveries_round_trip_once_each_and_old_ones_are_pruned,
    everything_survives_a_restart,
    two_processes_do_not_double_count_double_claim_or_lose_messages,
    failed_writes_are_retried_until_they_land,
    migrations_are_idempotent,
    the_tool_stage_writes_through_real_storage,
    an_outcome_with_6_kb_of_cjk_arguments_lands_whole,
    nul_characters_in_background_writes_are_stored_escaped,
    nul_characters_in_user_text_are_stored_escaped,
    a_row_the_database_refuses_is_dropped_alone,
    queue_entries_are_held_per_shard_and_taken_over_after_the_lease,
    two_processes_on_the_same_shards_never_share_an_entry,
    two_processes_changing_two_settings_both_win,
    an_outage_uses_the_last_known_settings,
    a_read_racing_a_change_never_caches_the_old_settings,
    a_queued_message_keeps_its_files,
    a_fact_is_forgotten_only_where_it_could_be_seen,
    memory_commands_list_delete_and_forget_a_user,
    facts_learned_from_a_message_are_forgotten_from_it,
    feedback_is_one_verdict_per_member_and_counted_per_server,
);

const SERVER: ServerId = ServerId(111);
const CHANNEL: ChannelId = ChannelId(222);
const USER: UserId = UserId(333);

fn persona() -> PersonaId {
    PersonaId("aria".into())
}

fn event(turn: TurnId, outcome: EventOutcome, at_ms: i64) -> ToolEvent {
    ToolEvent {
        turn,
        server: Some(SERVER),
        channel: CHANNEL,
        user: USER,
        role: Role::Persona,
        tool: "plan_image".into(),
        arguments: r#"{"prompt":"fox"}"#.into(),
        outcome,
        code: (outcome != EventOutcome::Succeeded).then(|| "tool_denied".into()),
        duration_ms: 12,
        at_ms,
    }
}

fn usage(key: &str, user: UserId) -> UsageRecord {
    UsageRecord {
        server: SERVER,
        channel: CHANNEL,
        user,
        persona: persona(),
        metric: Metric::ToolUsed,
        key: key.into(),
        at_ms: 5,
    }
}

fn queued(message: u64, follow_up: bool) -> NewQueuedMessage {
    NewQueuedMessage {
        server: Some(SERVER),
        channel: CHANNEL,
        message: MessageId(message),
        author: USER,
        author_name: "mika".into(),
        content: format!("message {message}"),
        follow_up,
        enqueued_at_ms: message as i64,
        persona: persona(),
        visibility: persona_bot::domain::scope::Visibility::Public,
        locale: persona_bot::locale::Locale::Ja,
        quiet: false,
        attachments: Vec::new(),
        mentions: Vec::new(),
    }
}

fn plan(turn: TurnId, prompt: &str) -> NewImagePlan {
    NewImagePlan {
        id: PlanId(uuid::Uuid::now_v7().to_string()),
        turn,
        server: Some(SERVER),
        channel: CHANNEL,
        user: USER,
        persona: persona(),
        prompt: prompt.into(),
        caption: None,
        aspect: "square".into(),
        part: None,
        at_ms: 1_000,
        visibility: persona_bot::domain::scope::Visibility::Public,
        locale: persona_bot::locale::Locale::ZhTw,
    }
}

fn sample_settings() -> ServerSettings {
    ServerSettings {
        drafting: true,
        thought_log_channel: Some(ChannelId(999)),
        deliberate: DeliberateSettings {
            enabled: true,
            custom_phrases: [("plan_image".to_owned(), vec!["doodle".to_owned()])].into(),
        },
        access: AccessLists {
            blocked_channels: vec![ChannelId(5)],
            allowed_roles: vec![77],
            ..AccessLists::default()
        },
        review: persona_bot::domain::review::ReviewPolicy {
            replies: false,
            prompt: Some("Be strict about names.".into()),
            ..Default::default()
        },
        random: persona_bot::domain::ports::RandomTriggers {
            enabled: true,
            percent: 5,
            per_hour: 4,
        },
        // A server's own persona, kept with its settings.
        persona: Some(persona_bot::domain::ports::Persona {
            id: persona_bot::domain::scope::PersonaId("aria".into()),
            display_name: "Mira".into(),
            system_prompt: "You are Mira, 「星」 of this server.\nBe brief.".into(),
            trigger_words: vec!["mira".into(), "ミラ".into()],
            avatar_url: Some("https://example.com/mira.png".into()),
        }),
        // Which turns the thought log summarizes.
        summaries: SummaryMode::All,
        // SPEC C4: the server's own reply style.
        reply_style: Some(persona_bot::config::ReplyStyle::Compact),
        // SPEC E1: status reactions on (off by default).
        status_reactions: true,
        // SPEC E2: buttons off (on by default).
        hide_buttons: true,
        // SPEC E3: moderators decide approvals (the requester by default).
        approvers: persona_bot::domain::approvals::Approvers::Moderators,
        // SPEC E4: two MCP servers' tools on (none by default).
        mcp_servers: vec!["calendar".to_owned(), "search".to_owned()],
    }
}

// SPEC D1: a server never configured summarizes only troubled turns.
async fn settings_round_trip_with_defaults_for_unknown_servers(db: TestDb) {
    let s = db.open().await;
    assert_eq!(
        s.settings.settings(SERVER).await.unwrap(),
        ServerSettings::default()
    );
    assert_eq!(ServerSettings::default().summaries, SummaryMode::Problems);
    s.settings
        .save_settings(SERVER, &sample_settings())
        .await
        .unwrap();
    assert_eq!(
        s.settings.settings(SERVER).await.unwrap(),
        sample_settings()
    );
    let off = ServerSettings {
        drafting: false,
        summaries: SummaryMode::Off,
        reply_style: None,
        ..sample_settings()
    };
    s.settings.save_settings(SERVER, &off).await.unwrap();
    assert_eq!(s.settings.settings(SERVER).await.unwrap(), off);
    s.close().await;
}

// SPEC E2: a member's second verdict on a reply replaces the first; counts are per reply and
// per server, and another server's stay apart.
async fn feedback_is_one_verdict_per_member_and_counted_per_server(db: TestDb) {
    use persona_bot::domain::ports::{FeedbackStore as _, Tally, Verdict};
    use persona_bot::domain::scope::UserId;
    use persona_bot::domain::turn::TurnId;
    let s = db.open().await;
    let (first, second) = (TurnId::new(), TurnId::new());
    let give = |turn, user, verdict| {
        s.feedback
            .give(turn, Some(SERVER), UserId(user), verdict, 1)
    };
    give(first, 1, Verdict::Up).await.unwrap();
    give(first, 2, Verdict::Down).await.unwrap();
    let tally = give(first, 2, Verdict::Up).await.unwrap();
    assert_eq!(tally, Tally { up: 2, down: 0 });
    let tally = give(second, 1, Verdict::Down).await.unwrap();
    assert_eq!(tally, Tally { up: 0, down: 1 });
    let other = s
        .feedback
        .give(
            TurnId::new(),
            Some(ServerId(77)),
            UserId(1),
            Verdict::Down,
            1,
        )
        .await
        .unwrap();
    assert_eq!(other, Tally { up: 0, down: 1 });
    assert_eq!(
        s.feedback.server_tally(SERVER).await.unwrap(),
        Tally { up: 2, down: 1 }
    );
    s.close().await;
}

// SPEC D1
async fn personas_round_trip(db: TestDb) {
    let s = db.open().await;
    let aria = Persona {
        id: persona(),
        display_name: "Aria".into(),
        system_prompt: "You are Aria.".into(),
        trigger_words: vec!["aria".into()],
        avatar_url: None,
    };
    s.personas.save_persona(&aria).await.unwrap();
    let renamed = Persona {
        display_name: "Aria II".into(),
        ..aria.clone()
    };
    s.personas.save_persona(&renamed).await.unwrap();
    assert_eq!(
        s.personas.persona(&persona()).await.unwrap(),
        Some(renamed.clone())
    );
    assert_eq!(s.personas.personas().await.unwrap(), vec![renamed]);
    assert_eq!(
        s.personas
            .persona(&PersonaId("nobody".into()))
            .await
            .unwrap(),
        None
    );
    s.close().await;
}

// SPEC D4
async fn memory_summaries_and_facts_with_per_bucket_limits(db: TestDb) {
    let s = db.open().await;
    s.memory
        .set_summary(CHANNEL, &persona(), "first", 1)
        .await
        .unwrap();
    s.memory
        .set_summary(CHANNEL, &persona(), "second", 2)
        .await
        .unwrap();
    assert_eq!(
        s.memory
            .summary(CHANNEL, &persona())
            .await
            .unwrap()
            .as_deref(),
        Some("second")
    );
    assert_eq!(
        s.memory.summary(ChannelId(1), &persona()).await.unwrap(),
        None
    );

    let fact = |about, text: &str| NewFact {
        server: Some(SERVER),
        persona: persona(),
        about,
        text: text.into(),
        at_ms: 10,
        private_to: None,
        source: None,
    };
    assert!(matches!(
        s.memory
            .add_fact(fact(None, "server likes cats"), 2)
            .await
            .unwrap(),
        FactAdded::Stored { .. }
    ));
    assert!(matches!(
        s.memory
            .add_fact(fact(None, "server rule"), 2)
            .await
            .unwrap(),
        FactAdded::Stored { .. }
    ));
    assert_eq!(
        s.memory.add_fact(fact(None, "third"), 2).await.unwrap(),
        FactAdded::LimitReached { limit: 2 }
    );
    // Another bucket (about a user) has its own limit.
    assert!(matches!(
        s.memory
            .add_fact(fact(Some(USER), "likes tea"), 2)
            .await
            .unwrap(),
        FactAdded::Stored { .. }
    ));
    assert!(matches!(
        s.memory
            .add_fact(fact(Some(UserId(9)), "other user"), 2)
            .await
            .unwrap(),
        FactAdded::Stored { .. }
    ));
    // A DM fact has no server.
    let dm = NewFact {
        server: None,
        ..fact(Some(USER), "dm secret")
    };
    assert!(matches!(
        s.memory.add_fact(dm, 2).await.unwrap(),
        FactAdded::Stored { .. }
    ));

    let seen = s
        .memory
        .facts(Some(SERVER), &persona(), Some(USER), CHANNEL, 10)
        .await
        .unwrap();
    let texts: Vec<_> = seen.iter().map(|f| f.text.as_str()).collect();
    assert_eq!(
        texts,
        vec!["likes tea", "server rule", "server likes cats"],
        "newest first, scoped"
    );
    assert_eq!(seen[0].about, Some(USER));
    assert_eq!(seen[1].about, None);
    let dm_seen = s
        .memory
        .facts(None, &persona(), Some(USER), CHANNEL, 10)
        .await
        .unwrap();
    assert_eq!(dm_seen.len(), 1);
    // A fact learned in a private channel is read back there only.
    let staff = ChannelId(7);
    let private = NewFact {
        private_to: Some(staff),
        ..fact(None, "the raid is on Friday")
    };
    s.memory.add_fact(private, 10).await.unwrap();
    let texts = |facts: Vec<persona_bot::domain::ports::Fact>| -> Vec<String> {
        facts.into_iter().map(|f| f.text).collect()
    };
    let in_staff = s
        .memory
        .facts(Some(SERVER), &persona(), None, staff, 10)
        .await
        .unwrap();
    assert!(texts(in_staff).contains(&"the raid is on Friday".to_owned()));
    let elsewhere = s
        .memory
        .facts(Some(SERVER), &persona(), None, CHANNEL, 10)
        .await
        .unwrap();
    assert!(!texts(elsewhere).contains(&"the raid is on Friday".to_owned()));
    s.close().await;
}

// SPEC S6
async fn tool_events_are_batched_and_read_back(db: TestDb) {
    let s = db.open().await;
    let turn = TurnId::new();
    for i in 0..600 {
        let outcome = if i % 3 == 0 {
            EventOutcome::Denied
        } else {
            EventOutcome::Succeeded
        };
        s.events.record(event(turn, outcome, i)).await;
    }
    s.writes.flush().await;
    let stored = s.events.for_turn(turn).await.unwrap();
    assert_eq!(stored.len(), 600);
    assert_eq!(stored[0].role, "persona");
    assert_eq!(stored[0].outcome, "tool_denied");
    assert_eq!(stored[0].code.as_deref(), Some("tool_denied"));
    assert_eq!(stored[1].code, None);
    assert_eq!(stored[599].at_ms, 599);
    assert_eq!(stored[0].duration_ms, 12);
    assert_eq!(s.events.count(SERVER, "tool_denied").await.unwrap(), 200);
    assert_eq!(s.writes.stats().dropped.load(Ordering::Relaxed), 0);
    s.close().await;
}

// SPEC T10
async fn usage_counters_add_up_per_key(db: TestDb) {
    let s = db.open().await;
    for _ in 0..5 {
        s.usage.record(usage("plan_image", USER)).await;
    }
    s.usage.record(usage("plan_image", UserId(2))).await;
    s.usage.record(usage("remember_fact", USER)).await;
    s.writes.flush().await;
    for _ in 0..3 {
        s.usage.record(usage("plan_image", USER)).await;
    }
    s.writes.flush().await;
    assert_eq!(
        s.usage
            .count(SERVER, USER, &persona(), "tool_used", "plan_image")
            .await
            .unwrap(),
        8
    );
    assert_eq!(
        s.usage
            .total(SERVER, "tool_used", "plan_image")
            .await
            .unwrap(),
        9
    );
    assert_eq!(
        s.usage
            .total(SERVER, "tool_used", "remember_fact")
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        s.usage
            .total(ServerId(1), "tool_used", "plan_image")
            .await
            .unwrap(),
        0
    );
    s.close().await;
}

// SPEC C3, D4
async fn queue_keeps_order_deduplicates_and_clears(db: TestDb) {
    let s = db.open().await;
    let a = s.queue.push(&queued(10, false)).await.unwrap();
    let b = s.queue.push(&queued(11, true)).await.unwrap().id();
    let a_again = s.queue.push(&queued(10, false)).await.unwrap();
    assert_eq!(
        a_again,
        Pushed::Existing(a.id()),
        "a redelivered message keeps one entry"
    );
    let a = a.id();
    let pending = s.queue.pending(CHANNEL).await.unwrap();
    assert_eq!(pending.iter().map(|m| m.id).collect::<Vec<_>>(), vec![a, b]);
    assert_eq!(pending[1].entry, queued(11, true));
    assert!(!pending[0].entry.follow_up);
    s.queue.mark_follow_up(a).await.unwrap();
    let marked = s.queue.pending(CHANNEL).await.unwrap().remove(0);
    assert!(marked.entry.follow_up, "a follow-up is marked in the store");
    assert_eq!(
        s.queue.channels_with_pending().await.unwrap(),
        vec![CHANNEL]
    );
    s.queue.remove(a).await.unwrap();
    assert_eq!(s.queue.pending(CHANNEL).await.unwrap().len(), 1);
    assert_eq!(s.queue.clear(CHANNEL).await.unwrap(), 1);
    assert!(s.queue.channels_with_pending().await.unwrap().is_empty());
    s.close().await;
}

// SPEC S5, S6
async fn plans_create_tasks_claimed_once_with_lease_expiry(db: TestDb) {
    let s = db.open().await;
    let turn = TurnId::new();
    let p = plan(turn, "a fox");
    s.plans.record_plan(p.clone()).await.unwrap();
    assert_eq!(
        s.plans.task_status(&p.id).await.unwrap().as_deref(),
        Some("pending")
    );
    assert_eq!(
        s.plans.plan_prompt(&p.id).await.unwrap().as_deref(),
        Some("a fox")
    );
    // Not due before its time.
    assert_eq!(s.plans.claim("w1", 999, 60_000).await.unwrap(), None);
    let task = s.plans.claim("w1", 1_000, 60_000).await.unwrap().unwrap();
    assert_eq!((task.plan.clone(), task.attempts), (p.id.clone(), 1));
    assert_eq!(
        s.plans.claim("w2", 2_000, 60_000).await.unwrap(),
        None,
        "held by w1"
    );
    // w1 crashes; after the lease, w2 takes it over and w1 can no longer finish it.
    let retaken = s.plans.claim("w2", 70_000, 60_000).await.unwrap().unwrap();
    assert_eq!((retaken.id, retaken.attempts), (task.id, 2));
    assert!(
        !s.plans
            .complete(task.id, "w1", &json!({"posted": 1}), 70_001)
            .await
            .unwrap()
    );
    assert!(
        s.plans
            .retry_at(task.id, "w2", "backend 503", 80_000)
            .await
            .unwrap()
    );
    assert_eq!(
        s.plans.claim("w2", 79_999, 60_000).await.unwrap(),
        None,
        "backing off"
    );
    let third = s.plans.claim("w3", 80_000, 60_000).await.unwrap().unwrap();
    assert_eq!(third.attempts, 3);
    assert!(
        s.plans
            .complete(third.id, "w3", &json!({"posted": "55"}), 80_001)
            .await
            .unwrap()
    );
    assert_eq!(
        s.plans.task_status(&p.id).await.unwrap().as_deref(),
        Some("done")
    );
    assert_eq!(
        s.plans.claim("w1", 10_000_000, 60_000).await.unwrap(),
        None,
        "done is done"
    );
    let q = plan(turn, "an owl");
    s.plans.record_plan(q.clone()).await.unwrap();
    let t = s.plans.claim("w1", 2_000, 60_000).await.unwrap().unwrap();
    let failure = json!({"code": "safety_refusal"});
    assert!(s.plans.fail(t.id, "w1", &failure, 2_001).await.unwrap());
    assert_eq!(
        s.plans.task_status(&q.id).await.unwrap().as_deref(),
        Some("failed")
    );
    // The plan reads back whole, and both results are there for the channel's next turn.
    assert_eq!(s.plans.plan(&q.id).await.unwrap(), Some(q.clone()));
    let results = s.plans.results_since(CHANNEL, 0, 10).await.unwrap();
    let summary: Vec<(&str, &str)> = results
        .iter()
        .map(|r| (r.prompt.as_str(), r.status.as_str()))
        .collect();
    assert_eq!(summary, vec![("an owl", "failed"), ("a fox", "done")]);
    assert_eq!(results[0].result, Some(failure));
    s.close().await;
}

// Finished plans go into the next turn's system prompt, so the query has a limit:
// more results than the limit give the newest ones, oldest first, as the prompt lists them.
async fn plan_results_for_a_prompt_are_the_newest_few(db: TestDb) {
    let s = db.open().await;
    let turn = TurnId::new();
    for n in 0..6 {
        s.plans
            .record_plan(plan(turn, &format!("plan {n}")))
            .await
            .unwrap();
        let task = s
            .plans
            .claim("w", 2_000 + n, 60_000)
            .await
            .unwrap()
            .unwrap();
        let result = json!({"posted": n});
        assert!(
            s.plans
                .complete(task.id, "w", &result, 3_000 + n)
                .await
                .unwrap()
        );
    }
    let prompts = |results: Vec<persona_bot::domain::ports::PlanResult>| -> Vec<String> {
        results.into_iter().map(|r| r.prompt).collect()
    };
    assert_eq!(
        prompts(s.plans.results_since(CHANNEL, 0, 3).await.unwrap()),
        vec!["plan 3", "plan 4", "plan 5"]
    );
    assert_eq!(
        prompts(s.plans.results_since(CHANNEL, 3_004, 3).await.unwrap()),
        vec!["plan 4", "plan 5"],
        "the window still applies"
    );
    assert_eq!(
        s.plans.results_since(CHANNEL, 0, 100).await.unwrap().len(),
        6
    );
    s.close().await;
}

// SPEC R4
async fn outcomes_round_trip(db: TestDb) {
    let s = db.open().await;
    let turn = TurnId::new();
    let first = StoredOutcome {
        identity: "plan_image{\"prompt\":\"fox\"}".into(),
        response: json!({"result": {"plan_id": "p1"}}),
        invocation: 0,
    };
    s.outcomes
        .record_outcome(turn, &first, 1, Durability::Batched)
        .await
        .unwrap();
    let updated = StoredOutcome {
        invocation: 1,
        ..first.clone()
    };
    s.outcomes
        .record_outcome(turn, &updated, 2, Durability::Batched)
        .await
        .unwrap();
    s.writes.flush().await;
    assert_eq!(s.outcomes.outcomes(turn).await.unwrap(), vec![updated]);
    assert!(s.outcomes.outcomes(TurnId::new()).await.unwrap().is_empty());
    s.close().await;
}

// When the database cannot be reached, a server read before is handled with its last
// known settings (its access lists and review stay in force); one never read is an error, not
// the defaults.
async fn an_outage_uses_the_last_known_settings(db: TestDb) {
    let s = db.open().await;
    let known = ServerSettings {
        drafting: true,
        ..ServerSettings::default()
    };
    s.settings.save_settings(SERVER, &known).await.unwrap();
    s.settings.age_cache();
    s.db.close().await;
    assert_eq!(s.settings.settings(SERVER).await.unwrap(), known);
    assert!(s.db.health().is_down());
    assert!(s.settings.settings(ServerId(999)).await.is_err());
}

// SPEC T11 (found by CI): a read that started before a change and ended after it once put the
// old settings in the cache, fresh for 5 s: a thought log set just after the bot started (the
// catch-up reads settings) got no notices.
async fn a_read_racing_a_change_never_caches_the_old_settings(db: TestDb) {
    let s = db.open().await;
    for i in 1..=400u64 {
        s.settings.age_cache();
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let settings = s.settings.clone();
                tokio::spawn(async move { settings.settings(SERVER).await })
            })
            .collect();
        let changed = s
            .settings
            .update(SERVER, SettingsChange::ThoughtLog(Some(ChannelId(i))))
            .await
            .unwrap();
        for reader in readers {
            reader.await.unwrap().unwrap();
        }
        let read = s.settings.settings(SERVER).await.unwrap();
        assert_eq!(read, changed, "round {i}: a stale read replaced the change");
    }
    s.close().await;
}

// SPEC D5: the outcome of a tool with external effects is in the database when the call
// returns, with no flush (a crash right after it loses nothing); a batched one waits for the
// writer.
async fn a_durable_outcome_is_stored_before_the_call_returns(db: TestDb) {
    let s = db.open().await;
    let turn = TurnId::new();
    let durable = StoredOutcome {
        identity: "create_reminder{\"at\":\"tomorrow\"}".into(),
        response: json!({"result": {"reminder_id": 7}}),
        invocation: 0,
    };
    s.outcomes
        .record_outcome(turn, &durable, 1, Durability::Now)
        .await
        .unwrap();
    // Read through a second pool, as a restarted process would.
    let other = db.open().await;
    assert_eq!(other.outcomes.outcomes(turn).await.unwrap(), vec![durable]);
    other.close().await;
    s.close().await;
}

// SPEC D5: deliveries are read back by turn, a repeated record keeps one row, and records
// older than the cut-off are pruned.
async fn deliveries_round_trip_once_each_and_old_ones_are_pruned(db: TestDb) {
    let s = db.open().await;
    let (turn, other) = (TurnId::new(), TurnId::new());
    let first = Delivery::Piece {
        index: 0,
        message: MessageId(u64::MAX - 1),
    };
    // Two intents: one a pause sent (its place in the cut is kept, SPEC C4), one not.
    let paused = Delivery::Intended {
        index: 1,
        digest: u64::MAX,
        paused_after: Some(7),
    };
    let plain = Delivery::Intended {
        index: 2,
        digest: 42,
        paused_after: None,
    };
    for (delivery, at) in [
        (first, 10),
        (first, 11),
        (Delivery::Sticker { sticker: 700 }, 12),
        (Delivery::Finished, 13),
        (paused, 14),
        (plain, 15),
        (
            Delivery::Reaction {
                emoji: u64::MAX - 1,
            },
            16,
        ),
    ] {
        s.outcomes
            .record_delivery(turn, delivery, at)
            .await
            .unwrap();
    }
    s.outcomes
        .record_delivery(other, Delivery::Finished, 1_000)
        .await
        .unwrap();
    let mut read = s.outcomes.deliveries(turn).await.unwrap();
    read.sort_by_key(|d| format!("{d:?}"));
    assert_eq!(
        read,
        vec![
            Delivery::Finished,
            paused,
            plain,
            first,
            Delivery::Reaction {
                emoji: u64::MAX - 1
            },
            Delivery::Sticker { sticker: 700 }
        ]
    );
    assert_eq!(s.outcomes.prune_deliveries(500).await.unwrap(), 6);
    assert!(s.outcomes.deliveries(turn).await.unwrap().is_empty());
    assert_eq!(
        s.outcomes.deliveries(other).await.unwrap(),
        vec![Delivery::Finished]
    );
    s.close().await;
}

// SPEC D4: write, drop the pool, reopen, read.
async fn everything_survives_a_restart(db: TestDb) {
    let turn = TurnId::new();
    let p = plan(turn, "a heron");
    {
        let s = db.open().await;
        s.settings
            .save_settings(SERVER, &sample_settings())
            .await
            .unwrap();
        s.memory
            .set_summary(CHANNEL, &persona(), "we talked about herons", 1)
            .await
            .unwrap();
        s.memory
            .add_fact(
                NewFact {
                    server: Some(SERVER),
                    persona: persona(),
                    about: None,
                    text: "herons".into(),
                    at_ms: 1,
                    private_to: None,
                    source: None,
                },
                10,
            )
            .await
            .unwrap();
        s.queue.push(&queued(42, false)).await.unwrap();
        s.plans.record_plan(p.clone()).await.unwrap();
        s.events
            .record(event(turn, EventOutcome::Succeeded, 1))
            .await;
        s.usage.record(usage("plan_image", USER)).await;
        let outcome = StoredOutcome {
            identity: "x".into(),
            response: json!({"result": 1}),
            invocation: 0,
        };
        s.outcomes
            .record_outcome(turn, &outcome, 1, Durability::Batched)
            .await
            .unwrap();
        s.close().await; // flushes the writer, then closes the pool
    }
    let s = db.open().await;
    assert_eq!(
        s.settings.settings(SERVER).await.unwrap(),
        sample_settings()
    );
    assert_eq!(
        s.memory
            .summary(CHANNEL, &persona())
            .await
            .unwrap()
            .as_deref(),
        Some("we talked about herons")
    );
    assert_eq!(
        s.memory
            .facts(Some(SERVER), &persona(), None, CHANNEL, 5)
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        s.queue.pending(CHANNEL).await.unwrap()[0].entry,
        queued(42, false)
    );
    assert_eq!(
        s.plans.task_status(&p.id).await.unwrap().as_deref(),
        Some("pending")
    );
    assert_eq!(s.events.for_turn(turn).await.unwrap().len(), 1);
    assert_eq!(
        s.usage
            .total(SERVER, "tool_used", "plan_image")
            .await
            .unwrap(),
        1
    );
    assert_eq!(s.outcomes.outcomes(turn).await.unwrap().len(), 1);
    s.close().await;
}

// Several processes on one database: two pools stand for two bot processes.
async fn two_processes_do_not_double_count_double_claim_or_lose_messages(db: TestDb) {
    let one = Arc::new(process(&db, "p1", 0, 0, 1, 60_000).await);
    let two = Arc::new(process(&db, "p2", 0, 0, 1, 60_000).await);

    // Usage: both count concurrently; the total is exact.
    let counting = [one.clone(), two.clone()].map(|s| {
        tokio::spawn(async move {
            for _ in 0..250 {
                s.usage
                    .record(usage("select_sticker_for_response", USER))
                    .await;
            }
            s.writes.flush().await;
        })
    });
    for t in counting {
        t.await.unwrap();
    }
    let key = "select_sticker_for_response";
    assert_eq!(
        one.usage
            .count(SERVER, USER, &persona(), "tool_used", key)
            .await
            .unwrap(),
        500
    );

    // Worker tasks: 30 plans; two processes with two workers each claim concurrently. Each
    // task is claimed exactly once.
    let turn = TurnId::new();
    for i in 0..30 {
        one.plans
            .record_plan(plan(turn, &format!("plan {i}")))
            .await
            .unwrap();
    }
    let workers = [one.clone(), one.clone(), two.clone(), two.clone()];
    let claiming = workers.into_iter().enumerate().map(|(n, s)| {
        tokio::spawn(async move {
            let mut mine = Vec::new();
            while let Some(task) = s
                .plans
                .claim(&format!("w{n}"), 5_000, 60_000)
                .await
                .unwrap()
            {
                mine.push(task.id);
            }
            mine
        })
    });
    let claimed = joined_ids(claiming.collect()).await;
    assert_eq!(claimed.len(), 30, "every task claimed");
    assert_eq!(distinct(&claimed), 30, "no task claimed twice");

    // Queue: both push concurrently, then both claim; nothing is lost or claimed twice.
    let pushing = [(1_000u64, one.clone()), (2_000u64, two.clone())].map(|(base, s)| {
        tokio::spawn(async move {
            for i in 0..40 {
                s.queue.push(&queued(base + i, false)).await.unwrap();
            }
        })
    });
    for t in pushing {
        t.await.unwrap();
    }
    // Each process holds what it took; neither sees the other's live entries.
    let taking = [one.clone(), two.clone()].map(|s| {
        tokio::spawn(async move {
            let mine = s.queue.pending(CHANNEL).await.unwrap();
            mine.into_iter().map(|m| m.id).collect::<Vec<_>>()
        })
    });
    let taken = joined_ids(taking.into_iter().collect()).await;
    assert_eq!((taken.len(), distinct(&taken)), (80, 80));
    assert_eq!(one.queue.pending(CHANNEL).await.unwrap().len(), 40);
    one.close().await;
    two.close().await;
}

/// A bot process's storage: its queue claims under `owner`, for shards `first..=last` of
/// `total`, with a lease of `lease_ms`.
async fn process(
    db: &TestDb,
    owner: &str,
    first: u32,
    last: u32,
    total: u32,
    lease_ms: i64,
) -> persona_bot::storage::Storage {
    let mut s = db.open().await;
    s.claim_queue_as(Claims {
        owner: owner.into(),
        first_shard: first,
        last_shard: last,
        total_shards: total,
        lease_ms,
    });
    s
}

// SPEC D6: a process holds the entries it took; another process running the same shard takes
// them over only once the holder's lease ran out without renewal, and a process never takes
// entries of a shard it does not run (a DM is on shard 0).
async fn queue_entries_are_held_per_shard_and_taken_over_after_the_lease(db: TestDb) {
    let on_shard_1 = ServerId((1 << 22) + 100);
    let holder = process(&db, "shards:0-1/2", 0, 1, 2, 60_000).await;
    let mut other_shard = queued(2, false);
    other_shard.server = Some(on_shard_1);
    other_shard.channel = ChannelId(223);
    let mut dm = queued(3, false);
    dm.server = None;
    dm.channel = ChannelId(224);
    for m in [queued(1, false), other_shard, dm] {
        holder.queue.push(&m).await.unwrap();
    }
    // A successor for shard 0 with a short lease; one for shard 1. Short, but longer than a
    // new pooled connection takes over TLS (about 100 ms in a debug build: sqlx sends the
    // handshake's records in separate writes, and two of them wait out delayed ACKs).
    let shard0 = process(&db, "shards:0/2", 0, 0, 2, 500).await;
    let shard1 = process(&db, "shards:1/2", 1, 1, 2, 500).await;
    assert_eq!(holder.queue.renew_claims().await.unwrap(), 3);
    assert!(
        shard0.queue.pending(CHANNEL).await.unwrap().is_empty(),
        "held"
    );
    assert!(
        shard0
            .queue
            .channels_to_take_over()
            .await
            .unwrap()
            .is_empty()
    );
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    // The holder is gone (no renewal): each successor takes its own shard's entries.
    assert_eq!(
        shard0.queue.channels_to_take_over().await.unwrap(),
        vec![CHANNEL, ChannelId(224)]
    );
    assert_eq!(
        shard1.queue.channels_to_take_over().await.unwrap(),
        vec![ChannelId(223)]
    );
    assert_eq!(shard0.queue.pending(CHANNEL).await.unwrap().len(), 1);
    assert!(
        shard0
            .queue
            .pending(ChannelId(223))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(shard1.queue.pending(ChannelId(223)).await.unwrap().len(), 1);
    // Taken over, they are held again: the old holder, back with a long lease, sees them held.
    assert!(holder.queue.pending(CHANNEL).await.unwrap().is_empty());
    assert!(shard0.queue.channels_to_take_over().await.unwrap() == vec![ChannelId(224)]);
}

// SPEC D11: two processes started with the same shard setting (a rolling deploy) claim under
// names of their own: neither takes what the other holds while it lives, a message both are
// sent is stored once and held by one; what a process lets go of at a clean stop is taken by
// the other at once.
async fn two_processes_on_the_same_shards_never_share_an_entry(db: TestDb) {
    let old = process(&db, &Claims::instance_of("shards:all"), 0, 0, 1, 60_000).await;
    let new = process(&db, &Claims::instance_of("shards:all"), 0, 0, 1, 60_000).await;
    for m in [queued(1, false), queued(2, false)] {
        old.queue.push(&m).await.unwrap();
    }
    assert!(new.queue.channels_with_pending().await.unwrap().is_empty());
    assert!(new.queue.channels_to_take_over().await.unwrap().is_empty());
    assert!(new.queue.pending(CHANNEL).await.unwrap().is_empty());
    // Discord sends the next message to both: one entry, held by whoever stored it first.
    let both = queued(3, false);
    assert!(matches!(old.queue.push(&both).await, Ok(Pushed::New(_))));
    assert!(matches!(
        new.queue.push(&both).await,
        Ok(Pushed::Existing(_))
    ));
    assert!(new.queue.pending(CHANNEL).await.unwrap().is_empty());
    assert_eq!(old.queue.pending(CHANNEL).await.unwrap().len(), 3);
    // The old process stops cleanly: the new one takes everything at once, and then holds it.
    assert_eq!(old.queue.release_claims().await.unwrap(), 3);
    assert_eq!(
        new.queue.channels_to_take_over().await.unwrap(),
        vec![CHANNEL]
    );
    assert_eq!(new.queue.pending(CHANNEL).await.unwrap().len(), 3);
    assert!(old.queue.pending(CHANNEL).await.unwrap().is_empty());
    old.close().await;
    new.close().await;
}

async fn joined_ids(handles: Vec<tokio::task::JoinHandle<Vec<i64>>>) -> Vec<i64> {
    let mut all = Vec::new();
    for handle in handles {
        all.extend(handle.await.unwrap());
    }
    all
}

fn distinct(ids: &[i64]) -> usize {
    ids.iter().collect::<std::collections::BTreeSet<_>>().len()
}

// A database that fails a write does not lose it: the writer retries until it lands.
async fn failed_writes_are_retried_until_they_land(db: TestDb) {
    let s = db.open().await;
    let turn = TurnId::new();
    let pool = s.db.pool().clone();
    sqlx::query("ALTER TABLE tool_events RENAME TO tool_events_away")
        .execute(&pool)
        .await
        .unwrap();
    for i in 0..10 {
        s.events.record(event(turn, EventOutcome::Failed, i)).await;
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while s.writes.stats().failed_attempts.load(Ordering::Relaxed) < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the writer never tried"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    sqlx::query("ALTER TABLE tool_events_away RENAME TO tool_events")
        .execute(&pool)
        .await
        .unwrap();
    s.writes.flush().await;
    assert_eq!(
        s.events.for_turn(turn).await.unwrap().len(),
        10,
        "every event landed"
    );
    assert_eq!(s.writes.stats().dropped.load(Ordering::Relaxed), 0);
    s.close().await;
}

// SPEC D1: migrations run at every start and are idempotent.
async fn migrations_are_idempotent(db: TestDb) {
    let first = Database::connect(&db.url, 2, Duration::from_secs(5))
        .await
        .unwrap();
    first.migrate().await.unwrap();
    first.migrate().await.unwrap();
    first.close().await;
    let s = db.open().await;
    assert_eq!(
        s.settings.settings(SERVER).await.unwrap(),
        ServerSettings::default()
    );
    s.close().await;
}

// SPEC S6, T10, R4, D4: the tool stage on real repositories: a plan, a fact, a denial, usage
// and the outcome all land in the database.
async fn the_tool_stage_writes_through_real_storage(db: TestDb) {
    use persona_bot::stage::{ToolCallOutcome, ToolCallRequest, execute_tool_call};
    use persona_bot::testkit::{Fakes, public_scope};
    use persona_bot::tools::{Registry, ToolEnv, ToolSession};

    let s = db.open().await;
    let fakes = Fakes::default();
    let config = Arc::new(Config::shipped_defaults());
    let env = Arc::new(ToolEnv::new(s.ports(fakes.chat_ports()), config.clone()));
    let registry = Arc::new(Registry::builtin(&config));
    let turn = Arc::new(persona_bot::domain::turn::Turn::new(
        public_scope(),
        persona_bot::locale::Locale::En,
    ));
    let persona_session =
        ToolSession::new(Role::Persona, registry.clone(), turn.clone(), env.clone());
    let reviewer_session = ToolSession::new(Role::Reviewer, registry, turn.clone(), env);
    let call = |name: &str, args: &str| ToolCallRequest::new("c", name, args);

    let planned = execute_tool_call(
        &persona_session,
        Some(&call("plan_image", r#"{"prompt":"a fox"}"#)),
        &mut Vec::new(),
    )
    .await;
    let ToolCallOutcome::History { entry } = planned else {
        panic!("{planned:?}")
    };
    let plan_id = PlanId(
        entry.response["result"]["plan_id"]
            .as_str()
            .unwrap()
            .to_owned(),
    );
    execute_tool_call(
        &persona_session,
        Some(&call(
            "remember_fact",
            r#"{"fact":"likes foxes","about":"requester"}"#,
        )),
        &mut Vec::new(),
    )
    .await;
    execute_tool_call(
        &reviewer_session,
        Some(&call("plan_image", r#"{"prompt":"x"}"#)),
        &mut Vec::new(),
    )
    .await;
    s.writes.flush().await;

    let scope = &turn.scope;
    let server = scope.server.unwrap();
    assert_eq!(
        s.plans.task_status(&plan_id).await.unwrap().as_deref(),
        Some("pending")
    );
    let facts = s
        .memory
        .facts(
            scope.server,
            &scope.persona,
            Some(scope.user),
            scope.channel,
            5,
        )
        .await
        .unwrap();
    assert_eq!(facts[0].text, "likes foxes");
    let events = s.events.for_turn(turn.id).await.unwrap();
    let outcomes: Vec<_> = events
        .iter()
        .map(|e| (e.role.as_str(), e.outcome.as_str()))
        .collect();
    assert_eq!(
        outcomes,
        vec![
            ("persona", "succeeded"),
            ("persona", "succeeded"),
            ("reviewer", "tool_denied")
        ]
    );
    assert_eq!(
        s.usage
            .total(server, "tool_used", "plan_image")
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        s.usage
            .total(server, "tool_used", "remember_fact")
            .await
            .unwrap(),
        1
    );
    assert_eq!(s.outcomes.outcomes(turn.id).await.unwrap().len(), 2);
    s.close().await;
}

/// `bytes` of CJK characters with no pattern to compress (an LCG over U+4E00..U+9FFF), the same
/// text on every run.
fn high_entropy_cjk(bytes: usize) -> String {
    let mut state: u32 = 0x2545_f491;
    let mut text = String::with_capacity(bytes + 4);
    while text.len() < bytes {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let code = 0x4e00 + (state >> 8) % (0x9fff - 0x4e00 + 1);
        text.push(char::from_u32(code).unwrap());
    }
    text
}

// SPEC R4, D1: an identity far past PostgreSQL's btree row limit (about 2.7 KB) lands, is
// updated in place, and reads back whole.
async fn an_outcome_with_6_kb_of_cjk_arguments_lands_whole(db: TestDb) {
    let s = db.open().await;
    let turn = TurnId::new();
    let identity = format!(
        "plan_image{}",
        json!({"prompt": high_entropy_cjk(6 * 1024)})
    );
    let first = StoredOutcome {
        identity: identity.clone(),
        response: json!({"result": {"plan_id": "p1"}}),
        invocation: 0,
    };
    s.outcomes
        .record_outcome(turn, &first, 1, Durability::Batched)
        .await
        .unwrap();
    s.writes.flush().await;
    let updated = StoredOutcome {
        invocation: 1,
        ..first.clone()
    };
    s.outcomes
        .record_outcome(turn, &updated, 2, Durability::Batched)
        .await
        .unwrap();
    s.writes.flush().await;
    let stored = s.outcomes.outcomes(turn).await.unwrap();
    assert_eq!(stored, vec![updated]);
    assert_eq!(stored[0].identity, identity, "the full identity comes back");
    assert_eq!(s.writes.stats().dropped.load(Ordering::Relaxed), 0);
    s.close().await;
}

// SPEC D1, D7: NUL, which PostgreSQL refuses in text, is stored as the six characters `\u0000`
// on both databases; the writer is not blocked by it.
async fn nul_characters_in_background_writes_are_stored_escaped(db: TestDb) {
    let s = db.open().await;
    let turn = TurnId::new();
    s.events
        .record(ToolEvent {
            tool: "plan\0image".into(),
            arguments: "{\"prompt\":\"fox\0\"}".into(),
            code: Some("bad\0code".into()),
            ..event(turn, EventOutcome::Failed, 1)
        })
        .await;
    s.usage.record(usage("plan\0image", USER)).await;
    let outcome = StoredOutcome {
        identity: "plan_image\0{}".into(),
        response: json!({"result": "a\0b"}),
        invocation: 0,
    };
    s.outcomes
        .record_outcome(turn, &outcome, 1, Durability::Batched)
        .await
        .unwrap();
    s.writes.flush().await;

    let events = s.events.for_turn(turn).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].tool, "plan\\u0000image");
    assert_eq!(events[0].arguments, "{\"prompt\":\"fox\\u0000\"}");
    assert_eq!(events[0].code.as_deref(), Some("bad\\u0000code"));
    // Looked up with the same escape, the key is found either way.
    for key in ["plan\0image", "plan\\u0000image"] {
        assert_eq!(s.usage.total(SERVER, "tool_used", key).await.unwrap(), 1);
    }
    let stored = s.outcomes.outcomes(turn).await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].identity, "plan_image\\u0000{}");
    // JSON text already spells NUL `\u0000`: the response reads back as it was.
    assert_eq!(stored[0].response, outcome.response);
    assert_eq!(s.writes.stats().dropped.load(Ordering::Relaxed), 0);
    s.close().await;
}

// SPEC D1, D4, D7: a user's message (or a fact, summary, plan, persona) with a NUL is stored
// escaped by the synchronous repositories too, instead of failing on PostgreSQL.
async fn nul_characters_in_user_text_are_stored_escaped(db: TestDb) {
    let s = db.open().await;
    let message = NewQueuedMessage {
        author_name: "mi\0ka".into(),
        content: "hello\0there".into(),
        ..queued(7, false)
    };
    s.queue.push(&message).await.unwrap();
    let pending = s.queue.pending(CHANNEL).await.unwrap();
    assert_eq!(pending[0].entry.content, "hello\\u0000there");
    assert_eq!(pending[0].entry.author_name, "mi\\u0000ka");

    s.memory
        .set_summary(CHANNEL, &persona(), "sum\0mary", 1)
        .await
        .unwrap();
    assert_eq!(
        s.memory
            .summary(CHANNEL, &persona())
            .await
            .unwrap()
            .as_deref(),
        Some("sum\\u0000mary")
    );
    let fact = NewFact {
        server: Some(SERVER),
        persona: persona(),
        about: None,
        text: "likes\0tea".into(),
        at_ms: 1,
        private_to: None,
        source: None,
    };
    s.memory.add_fact(fact, 5).await.unwrap();
    let facts = s
        .memory
        .facts(Some(SERVER), &persona(), None, CHANNEL, 5)
        .await
        .unwrap();
    assert_eq!(facts[0].text, "likes\\u0000tea");

    let p = plan(TurnId::new(), "a f\0x");
    s.plans.record_plan(p.clone()).await.unwrap();
    assert_eq!(
        s.plans.plan_prompt(&p.id).await.unwrap().as_deref(),
        Some("a f\\u0000x")
    );

    let odd = Persona {
        id: PersonaId("odd\0one".into()),
        display_name: "Odd\0".into(),
        system_prompt: "You\0are odd.".into(),
        trigger_words: vec!["o\0dd".into()],
        avatar_url: None,
    };
    s.personas.save_persona(&odd).await.unwrap();
    let stored = s.personas.persona(&odd.id).await.unwrap().unwrap();
    assert_eq!(stored.id.0, "odd\\u0000one");
    assert_eq!(stored.system_prompt, "You\\u0000are odd.");
    assert_eq!(
        stored.trigger_words, odd.trigger_words,
        "JSON text keeps its own escape"
    );
    s.close().await;
}

/// Makes the database refuse tool events for `tool` with an error the writer does not
/// classify (a trigger raising a plain exception), while every other event writes fine.
async fn refuse_events_for(db: &TestDb, pool: &sqlx::AnyPool, tool: &str) {
    let sql = match db.backend {
        persona_bot::storage::Backend::Sqlite => format!(
            "CREATE TRIGGER refuse_tool BEFORE INSERT ON tool_events WHEN NEW.tool = '{tool}' \
             BEGIN SELECT RAISE(ABORT, 'refused by a test trigger'); END"
        ),
        persona_bot::storage::Backend::Postgres => format!(
            "CREATE FUNCTION refuse_tool() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
             IF NEW.tool = '{tool}' THEN RAISE EXCEPTION 'refused by a test trigger'; END IF; \
             RETURN NEW; END $$; \
             CREATE TRIGGER refuse_tool BEFORE INSERT ON tool_events FOR EACH ROW \
             EXECUTE FUNCTION refuse_tool();"
        ),
    };
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
        .execute(pool)
        .await
        .unwrap();
}

// SPEC D7: a batch with one row the database refuses for a reason the writer does not know:
// the bad row is dropped and counted, everything else in the batch lands, and later writes
// are not blocked.
async fn a_row_the_database_refuses_is_dropped_alone(db: TestDb) {
    let s = db.open().await;
    refuse_events_for(&db, s.db.pool(), "poison").await;
    let turn = TurnId::new();
    for i in 0..20 {
        s.events
            .record(event(turn, EventOutcome::Succeeded, i))
            .await;
    }
    s.events
        .record(ToolEvent {
            tool: "poison".into(),
            ..event(turn, EventOutcome::Succeeded, 20)
        })
        .await;
    for i in 21..41 {
        s.events
            .record(event(turn, EventOutcome::Succeeded, i))
            .await;
        s.usage.record(usage("plan_image", USER)).await;
    }
    let outcome = StoredOutcome {
        identity: "plan_image{}".into(),
        response: json!({"result": 1}),
        invocation: 0,
    };
    s.outcomes
        .record_outcome(turn, &outcome, 1, Durability::Batched)
        .await
        .unwrap();
    s.writes.flush().await;

    let events = s.events.for_turn(turn).await.unwrap();
    let times: Vec<i64> = events.iter().map(|e| e.at_ms).collect();
    let expected: Vec<i64> = (0..41).filter(|&i| i != 20).collect();
    assert_eq!(times, expected, "every good event landed, in order");
    assert_eq!(
        s.usage
            .total(SERVER, "tool_used", "plan_image")
            .await
            .unwrap(),
        20
    );
    assert_eq!(s.outcomes.outcomes(turn).await.unwrap(), vec![outcome]);
    assert_eq!(s.writes.stats().dropped.load(Ordering::Relaxed), 1);

    s.events.record(event(turn, EventOutcome::Denied, 50)).await;
    s.writes.flush().await;
    assert_eq!(s.events.for_turn(turn).await.unwrap().len(), 41);
    assert_eq!(s.writes.stats().dropped.load(Ordering::Relaxed), 1);
    s.close().await;
}

// SPEC A (settings commands): two processes changing two settings of one server at once both
// win. Each command once read the whole row (from a 5 s cache), changed one field and wrote the
// whole row back, so the second write undid the first.
async fn two_processes_changing_two_settings_both_win(db: TestDb) {
    let a = db.open().await;
    let b = db.open().await;
    // Process A has the server's settings cached from a message it handled.
    assert!(!a.settings.settings(SERVER).await.unwrap().drafting);
    b.settings
        .update(SERVER, SettingsChange::ThoughtLog(Some(CHANNEL)))
        .await
        .unwrap();
    let after = a
        .settings
        .update(SERVER, SettingsChange::Drafting(true))
        .await
        .unwrap();
    assert_eq!(
        after.thought_log_channel,
        Some(CHANNEL),
        "A's change undid B's"
    );
    assert!(after.drafting);
    // Many at once, from both processes: every change lands.
    let mut changes = Vec::new();
    for i in 0..10u8 {
        let (a, b) = (a.settings.clone(), b.settings.clone());
        changes.push(tokio::spawn(async move {
            a.update(SERVER, SettingsChange::Drafting(i % 2 == 0))
                .await
                .unwrap();
        }));
        changes.push(tokio::spawn(async move {
            b.update(
                SERVER,
                SettingsChange::Random {
                    enabled: true,
                    percent: Some(i + 1),
                    per_hour: None,
                },
            )
            .await
            .unwrap();
        }));
    }
    for change in changes {
        change.await.unwrap();
    }
    let fresh = db.open().await;
    let stored = fresh.settings.settings(SERVER).await.unwrap();
    assert_eq!(stored.thought_log_channel, Some(CHANNEL));
    assert!(stored.random.enabled);
    fresh.close().await;
    a.close().await;
    b.close().await;
}

// Attachments: a queued message's files survive in the queue, so a message answered
// after a restart still shows its pictures; a file name with a NUL is stored all the same.
// SPEC C4: so do the users it names, whom its reply may notify.
async fn a_queued_message_keeps_its_files(db: TestDb) {
    let s = db.open().await;
    let files = vec![
        Attachment {
            filename: "cat\0.png".into(),
            url: "https://cdn.discordapp.com/attachments/1/2/cat.png?ex=1".into(),
            size: 1234,
            content_type: Some("image/png".into()),
        },
        Attachment {
            filename: "notes.txt".into(),
            url: "https://cdn.discordapp.com/attachments/1/3/notes.txt".into(),
            size: 5,
            content_type: None,
        },
    ];
    let named = vec![Mention {
        user: UserId(301),
        name: "Bob".into(),
    }];
    let message = NewQueuedMessage {
        attachments: files.clone(),
        mentions: named.clone(),
        ..queued(8, false)
    };
    s.queue.push(&message).await.unwrap();
    let pending = s.queue.pending(CHANNEL).await.unwrap();
    assert_eq!(pending[0].entry.attachments, files);
    assert_eq!(pending[0].entry.mentions, named);
    s.close().await;
}

// Memory: `forget_fact` deletes only what `facts` would show the same turn: never a
// fact about someone else, one private to another channel, or another server's.
async fn a_fact_is_forgotten_only_where_it_could_be_seen(db: TestDb) {
    let s = db.open().await;
    let other_user = UserId(444);
    let staff = ChannelId(999);
    let add = |about: Option<UserId>, private_to: Option<ChannelId>, server: ServerId| {
        let memory = s.memory.clone();
        async move {
            let fact = NewFact {
                server: Some(server),
                persona: persona(),
                about,
                text: "a fact".into(),
                at_ms: 1,
                private_to,
                source: None,
            };
            match memory.add_fact(fact, 100).await.unwrap() {
                FactAdded::Stored { id } => id,
                other => panic!("{other:?}"),
            }
        }
    };
    let theirs = add(Some(other_user), None, SERVER).await;
    let private = add(None, Some(staff), SERVER).await;
    let elsewhere = add(None, None, ServerId(5)).await;
    let mine = add(Some(USER), None, SERVER).await;
    let server_wide = add(None, None, SERVER).await;
    let forget = |id| {
        let memory = s.memory.clone();
        async move {
            memory
                .forget_fact(Some(SERVER), &persona(), Some(USER), CHANNEL, id)
                .await
                .unwrap()
        }
    };
    for id in [theirs, private, elsewhere, 9_999] {
        assert!(!forget(id).await, "fact {id} must stay");
    }
    assert!(forget(mine).await);
    assert!(forget(server_wide).await);
    assert!(!forget(mine).await, "gone already");
    let left = s
        .memory
        .facts(Some(SERVER), &persona(), Some(other_user), staff, 10)
        .await
        .unwrap();
    assert_eq!(
        left.iter().map(|f| f.id).collect::<Vec<_>>(),
        vec![private, theirs]
    );
    s.close().await;
}

// Memory: /memory's listing and deletions, and /forget-me's, on both databases.
async fn memory_commands_list_delete_and_forget_a_user(db: TestDb) {
    let s = db.open().await;
    let other = UserId(444);
    let add = |server: Option<ServerId>, about: Option<UserId>, text: &'static str| {
        let memory = s.memory.clone();
        async move {
            let fact = NewFact {
                server,
                persona: persona(),
                about,
                text: text.into(),
                at_ms: 1,
                private_to: None,
                source: None,
            };
            match memory.add_fact(fact, 100).await.unwrap() {
                FactAdded::Stored { id } => id,
                other => panic!("{other:?}"),
            }
        }
    };
    let mine = add(Some(SERVER), Some(USER), "mine").await;
    let theirs = add(Some(SERVER), Some(other), "theirs").await;
    add(Some(SERVER), None, "server-wide").await;
    add(None, Some(USER), "in a DM").await;
    add(Some(ServerId(5)), Some(USER), "elsewhere").await;
    let texts = |facts: Vec<persona_bot::domain::ports::Fact>| -> Vec<String> {
        facts.into_iter().map(|f| f.text).collect()
    };
    let m = &s.memory;
    assert_eq!(
        texts(
            m.list_facts(Some(SERVER), Some(USER), true, 10)
                .await
                .unwrap()
        ),
        ["mine"]
    );
    // A fact learned in a private channel: the member's own list shows it, a moderator's not.
    let private = NewFact {
        server: Some(SERVER),
        persona: persona(),
        about: Some(USER),
        text: "said in private".into(),
        at_ms: 2,
        private_to: Some(ChannelId(77)),
        source: None,
    };
    let private = match m.add_fact(private, 100).await.unwrap() {
        FactAdded::Stored { id } => id,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        texts(
            m.list_facts(Some(SERVER), Some(USER), true, 10)
                .await
                .unwrap()
        ),
        ["said in private", "mine"]
    );
    assert_eq!(
        texts(
            m.list_facts(Some(SERVER), Some(USER), false, 10)
                .await
                .unwrap()
        ),
        ["mine"]
    );
    m.delete_facts(Some(SERVER), Some(private), Some(USER))
        .await
        .unwrap();
    assert_eq!(
        texts(m.list_facts(Some(SERVER), None, true, 10).await.unwrap()),
        ["server-wide"]
    );
    assert_eq!(
        m.delete_facts(Some(SERVER), Some(theirs), Some(USER))
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        m.delete_facts(Some(SERVER), Some(mine), Some(USER))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        m.delete_facts(Some(SERVER), Some(theirs), None)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        m.forget_user(USER).await.unwrap(),
        2,
        "the DM's and the other server's"
    );
    assert_eq!(
        texts(m.list_facts(Some(SERVER), None, true, 10).await.unwrap()),
        ["server-wide"]
    );
    s.close().await;
}

// SPEC A5: "Forget this" deletes the facts learned from one message, in its server only: a
// member's own, or all of them for the message's author or a moderator, on both databases.
async fn facts_learned_from_a_message_are_forgotten_from_it(db: TestDb) {
    let s = db.open().await;
    let other = UserId(444);
    let said = MessageId(9001);
    let add = |server: Option<ServerId>, about: Option<UserId>, source: Option<MessageId>| {
        let memory = s.memory.clone();
        async move {
            let fact = NewFact {
                server,
                persona: persona(),
                about,
                text: "learned".into(),
                at_ms: 1,
                private_to: None,
                source,
            };
            assert!(matches!(
                memory.add_fact(fact, 100).await.unwrap(),
                FactAdded::Stored { .. }
            ));
        }
    };
    add(Some(SERVER), Some(USER), Some(said)).await;
    add(Some(SERVER), Some(other), Some(said)).await;
    add(Some(SERVER), Some(USER), Some(MessageId(9002))).await;
    add(Some(SERVER), Some(USER), None).await;
    add(None, Some(USER), Some(said)).await;
    let m = &s.memory;
    assert_eq!(
        m.forget_learned_from(Some(SERVER), said, USER, false)
            .await
            .unwrap(),
        1,
        "the member's own fact from that message"
    );
    assert_eq!(
        m.forget_learned_from(Some(SERVER), said, USER, true)
            .await
            .unwrap(),
        1,
        "the other member's, for the author or a moderator"
    );
    let left = m
        .list_facts(Some(SERVER), Some(USER), true, 10)
        .await
        .unwrap();
    assert_eq!(left.len(), 2, "other messages' facts stay: {left:?}");
    assert_eq!(
        m.list_facts(None, Some(USER), true, 10)
            .await
            .unwrap()
            .len(),
        1
    );
    s.close().await;
}

// SPEC D13: TLS when asked. With `sslmode=require` the bot talks to no server that will not
// encrypt: against one that answers the TLS request with "no", the open fails naming the
// setting, and nothing follows the request in clear (no start-up message, no user name).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sslmode_require_refuses_a_server_without_tls() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    let server = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await?;
        let mut request = [0_u8; 8];
        stream.read_exact(&mut request).await?;
        stream.write_all(b"N").await?;
        let mut after = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(2), stream.read_to_end(&mut after)).await;
        Ok::<_, std::io::Error>((request, after))
    });
    let url = format!("postgres://bot@{address}/bot?sslmode=require");
    let err = Database::connect(&url, 1, Duration::from_secs(5))
        .await
        .expect_err("no TLS, no connection")
        .to_string();
    assert!(err.contains("does not support TLS"), "{err}");
    assert!(err.contains("sslmode"), "names the setting: {err}");
    let (request, after) = server.await.expect("the server").expect("its exchange");
    // PostgreSQL's SSLRequest: length 8, code 80877103.
    assert_eq!(request, [0, 0, 0, 8, 4, 210, 22, 47]);
    assert!(
        after.is_empty(),
        "sent in clear after the refusal: {after:?}"
    );
}

// SPEC D10, D13: a CA file the URL names (`sslrootcert`, for a private CA) that is not there is
// named, path and all, before anything is sent.
#[tokio::test]
async fn a_ca_file_that_is_not_there_is_named() {
    let url = "postgres://bot@127.0.0.1:1/bot?sslmode=verify-full&sslrootcert=/nowhere/ca.pem";
    let err = Database::connect(url, 1, Duration::from_secs(5))
        .await
        .expect_err("no CA file")
        .to_string();
    assert!(err.contains("sslrootcert"), "{err}");
    assert!(err.contains("/nowhere/ca.pem"), "{err}");
}

// SPEC D13: over a server that requires TLS (scripts/test's second run: TEST_POSTGRES_URL asks
// for sslmode=verify-full with the CA made for the run, and the server refuses connections
// without TLS, so the whole suite above ran encrypted), a connection is encrypted, and the
// server's certificate is checked: without the CA file it is refused. A URL that asks for no
// TLS (the first run) leaves nothing to check here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(postgres_tests),
    ignore = "PostgreSQL suite: set TEST_POSTGRES_URL (scripts/test does) to run it"
)]
async fn verify_full_encrypts_and_checks_the_certificate() {
    let url = std::env::var("TEST_POSTGRES_URL").expect("TEST_POSTGRES_URL");
    let Some((base, query)) = url.split_once('?') else {
        return;
    };
    if !query.split('&').any(|p| p == "sslmode=verify-full") {
        return;
    }
    let db = Database::connect(&url, 1, Duration::from_secs(5))
        .await
        .expect("connect over TLS");
    let (encrypted,): (bool,) =
        sqlx::query_as("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
            .fetch_one(db.pool())
            .await
            .expect("pg_stat_ssl");
    assert!(encrypted, "the connection is encrypted");
    db.close().await;
    let err = Database::connect(
        &format!("{base}?sslmode=verify-full"),
        1,
        Duration::from_secs(5),
    )
    .await
    .expect_err("a certificate no known CA signed")
    .to_string();
    assert!(err.contains("TLS") && err.contains("sslrootcert"), "{err}");
    let err = Database::connect(
        &format!("{base}?sslmode=disable"),
        1,
        Duration::from_secs(5),
    )
    .await
    .expect_err("the server takes no plain connection")
    .to_string();
    assert!(err.contains("no encryption"), "{err}");
}
