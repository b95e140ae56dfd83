//! The write path one turn causes (one tool event, one usage increment, one tool outcome), on a
//! SQLite file and on PostgreSQL: the latency the turn sees (it only enqueues) and the writes per
//! second the background writer sustains; beside it, the same writes done synchronously (the
//! turn waiting for each commit), which is what batching saves.
//!
//! Run: `cargo bench --bench storage_writes`. PostgreSQL comes from `TEST_POSTGRES_URL` (default:
//! the local server); a fresh database is created and dropped.

// Public, so that what this bench leaves unused of it is not dead code.
pub mod common;

use std::time::Instant;

use persona_bot::config::Config;
use persona_bot::domain::ports::{
    Durability, EventOutcome, Metric, OutcomeStore, StoredOutcome, ToolEvent, ToolEvents,
    UsageRecord, UsageStats,
};
use persona_bot::domain::role::Role;
use persona_bot::domain::scope::{ChannelId, PersonaId, ServerId, UserId};
use persona_bot::domain::turn::TurnId;
use persona_bot::storage::Storage;
use serde_json::json;

const TURNS: usize = 20_000;
const SYNC_TURNS: usize = 500;

async fn one_turn(s: &Storage, i: usize) {
    let turn = TurnId::new();
    s.events
        .record(ToolEvent {
            turn,
            server: Some(ServerId(1)),
            channel: ChannelId(2),
            user: UserId(3 + (i % 50) as u64),
            role: Role::Persona,
            tool: "plan_image".into(),
            arguments: r#"{"prompt":"a fox in the snow"}"#.into(),
            outcome: EventOutcome::Succeeded,
            code: None,
            duration_ms: 3,
            at_ms: i as i64,
        })
        .await;
    s.usage
        .record(UsageRecord {
            server: ServerId(1),
            channel: ChannelId(2),
            user: UserId(3 + (i % 50) as u64),
            persona: PersonaId("aria".into()),
            metric: Metric::ToolUsed,
            key: "plan_image".into(),
            at_ms: i as i64,
        })
        .await;
    let outcome = StoredOutcome {
        identity: format!("plan_image{{\"prompt\":\"fox {i}\"}}"),
        response: json!({"result": {"executed": false, "plan_id": i}}),
        invocation: 0,
    };
    let _ = s
        .outcomes
        .record_outcome(turn, &outcome, i as i64, Durability::Batched)
        .await;
}

async fn measure(label: &str, url: &str) {
    let mut config = Config::shipped_defaults().database;
    config.buffer_max = TURNS * 3 + 16;
    let s = Storage::open(url, &config).await.expect("open storage");

    // Batched: the turn only enqueues.
    let mut seen = Vec::with_capacity(TURNS);
    let started = Instant::now();
    for i in 0..TURNS {
        let t = Instant::now();
        one_turn(&s, i).await;
        seen.push(t.elapsed());
    }
    s.writes.flush().await;
    let elapsed = started.elapsed();
    seen.sort_unstable();
    let writes = (TURNS * 3) as f64;
    println!(
        "{label:<10} batched: turn sees median {:>8.2?}  p99 {:>8.2?}; {:>8.0} writes/s ({TURNS} turns in {elapsed:.2?})",
        common::percentile(&seen, 0.5),
        common::percentile(&seen, 0.99),
        writes / elapsed.as_secs_f64(),
    );
    s.close().await;

    // Synchronous: the turn waits for its three writes to commit.
    config.batch_max = 3;
    let s = Storage::open(url, &config).await.expect("open storage");
    let mut seen = Vec::with_capacity(SYNC_TURNS);
    let started = Instant::now();
    for i in 0..SYNC_TURNS {
        let t = Instant::now();
        one_turn(&s, i).await;
        s.writes.flush().await;
        seen.push(t.elapsed());
    }
    let elapsed = started.elapsed();
    seen.sort_unstable();
    println!(
        "{label:<10} sync:    turn sees median {:>8.2?}  p99 {:>8.2?}; {:>8.0} writes/s ({SYNC_TURNS} turns in {elapsed:.2?})",
        common::percentile(&seen, 0.5),
        common::percentile(&seen, 0.99),
        (SYNC_TURNS * 3) as f64 / elapsed.as_secs_f64(),
    );
    s.close().await;
}

#[tokio::main]
async fn main() {
    // `cargo test --all-targets` runs benches once as tests; keep that quick.
    if !common::benchmarking() {
        println!("storage_writes: run with `cargo bench --bench storage_writes`");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    measure(
        "sqlite",
        &format!("sqlite://{}/bench.db", dir.path().display()),
    )
    .await;

    let admin = common::postgres_admin_url();
    match common::fresh_postgres(&admin).await {
        Some((url, name)) => {
            measure("postgres", &url).await;
            common::drop_postgres(&admin, &name).await;
        }
        None => println!("postgres   skipped: no PostgreSQL at TEST_POSTGRES_URL"),
    }
}
