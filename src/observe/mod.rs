//! Observability: what the bot counts and times, and where an operator reads it.
//!
//! - **The turn line.** Every finished turn is one `info` log line ([`turns::log`]): channel,
//!   persona, status, passes, tool calls, tokens, duration and the messages still waiting in the
//!   channel. Always on.
//! - **Metrics.** Recorded through the `metrics` facade by decorators of the core's ports (the
//!   model, [`model::MeteredModel`]; tool events, [`events::MeteredEvents`]), by the turn
//!   subscriber ([`turns::watch`]) and by Discord's request scheduler, and read from the storage
//!   writer at each scrape. Nothing is recorded anywhere until [`install_recorder`] runs, which
//!   the app does only when `metrics.listen` is set.
//! - **The listener** ([`server::Endpoint`]): `/metrics` in Prometheus text format and
//!   `/healthz` (gateway connected, database reachable: 200 or 503, a small JSON object).
//! - **Turn summaries** ([`summaries`]): the thought log's card per finished turn, as each
//!   server chooses.
//!
//! Labels are bounded and never user text: statuses and outcomes are the core's codes, tools are
//! the registry's names (any other name counts as [`events::OTHER_TOOL`]), models come from the
//! configuration, routes are the Discord adapter's templates.

use std::sync::{Mutex, PoisonError};

use anyhow::Context as _;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

pub mod events;
pub mod health;
pub mod model;
pub mod server;
pub mod summaries;
pub mod turns;

/// Turns finished, by `status` (`completed`, `stopped_by_user`, ...).
pub const TURNS: &str = "persona_bot_turns_total";
/// Turn durations, from start to end.
pub const TURN_SECONDS: &str = "persona_bot_turn_duration_seconds";
/// Tokens the provider reported for finished turns, by `kind` (`prompt`, `completion`).
pub const TURN_TOKENS: &str = "persona_bot_turn_tokens_total";
/// Messages waiting behind the running turns, over every channel (as of each channel's last
/// turn end).
pub const QUEUE_WAITING: &str = "persona_bot_queue_waiting_messages";
/// Tool calls, by `tool` and `outcome` (every call the stage handles, denied ones included).
pub const TOOL_CALLS: &str = "persona_bot_tool_calls_total";
/// How long tools that ran took, by `tool`.
pub const TOOL_SECONDS: &str = "persona_bot_tool_call_duration_seconds";
/// Provider calls (one streamed pass attempt), by `role` (`persona`, `reviewer`), `model` and
/// `outcome` (`ok`, a failure class such as `rate_limited`, `incomplete`, `abandoned`).
pub const PROVIDER_CALLS: &str = "persona_bot_provider_calls_total";
/// From a provider call's start to its first event (text, or the end of a tool-call answer).
pub const PROVIDER_FIRST_EVENT_SECONDS: &str = "persona_bot_provider_first_event_seconds";
/// A provider call whole, from its start to its end (or failure).
pub const PROVIDER_CALL_SECONDS: &str = "persona_bot_provider_call_seconds";
/// Writes waiting for the storage writer.
pub const STORAGE_BACKLOG: &str = "persona_bot_storage_write_backlog";
/// Writes the storage writer committed.
pub const STORAGE_WRITTEN: &str = "persona_bot_storage_writes_total";
/// Writes dropped (queue full, or a row the database refuses).
pub const STORAGE_DROPPED: &str = "persona_bot_storage_writes_dropped_total";
/// Batch attempts that failed and were retried.
pub const STORAGE_FAILED: &str = "persona_bot_storage_write_failures_total";
/// 1 while every gateway shard is connected.
pub const GATEWAY_CONNECTED: &str = "persona_bot_gateway_connected";
/// 1 when the database answered the last probe.
pub const DATABASE_REACHABLE: &str = "persona_bot_database_reachable";

/// Histogram buckets, in seconds: from a quick database write to a long image.
const SECONDS_BUCKETS: [f64; 15] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The process's recorder, once installed (a process has one; a second bot in the same
/// process, as in tests, shares it).
static RECORDER: Mutex<Option<PrometheusHandle>> = Mutex::new(None);

/// Installs the Prometheus recorder as the process's `metrics` recorder (once; later calls
/// return the same handle). Fails only when another recorder was installed first.
pub fn install_recorder() -> anyhow::Result<PrometheusHandle> {
    let mut slot = RECORDER.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(handle) = slot.as_ref() {
        return Ok(handle.clone());
    }
    let handle = PrometheusBuilder::new()
        .set_buckets(&SECONDS_BUCKETS)
        .context("metrics buckets")?
        .install_recorder()
        .context("metrics recorder (another one is installed)")?;
    describe();
    *slot = Some(handle.clone());
    Ok(handle)
}

/// The `# HELP` lines.
fn describe() {
    use crate::discord::rest::ratelimit::{RATE_LIMITED, REQUESTS, WAITED};
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!(TURNS, "Turns finished, by status");
    describe_histogram!(TURN_SECONDS, Unit::Seconds, "Turn durations");
    describe_counter!(TURN_TOKENS, "Tokens reported for finished turns, by kind");
    describe_gauge!(QUEUE_WAITING, "Messages waiting behind the running turns");
    describe_counter!(TOOL_CALLS, "Tool calls, by tool and outcome");
    describe_histogram!(TOOL_SECONDS, Unit::Seconds, "Durations of tools that ran");
    describe_counter!(PROVIDER_CALLS, "Provider calls, by role, model and outcome");
    describe_histogram!(
        PROVIDER_FIRST_EVENT_SECONDS,
        Unit::Seconds,
        "Time from a provider call's start to its first event"
    );
    describe_histogram!(
        PROVIDER_CALL_SECONDS,
        Unit::Seconds,
        "Provider calls, start to end"
    );
    describe_counter!(REQUESTS, "Discord REST requests sent, by route");
    describe_counter!(RATE_LIMITED, "Discord REST answers 429, by route and scope");
    describe_histogram!(
        WAITED,
        Unit::Seconds,
        "Time Discord REST requests waited in the rate-limit scheduler"
    );
    describe_gauge!(STORAGE_BACKLOG, "Writes waiting for the storage writer");
    describe_counter!(STORAGE_WRITTEN, "Writes the storage writer committed");
    describe_counter!(STORAGE_DROPPED, "Writes dropped by the storage writer");
    describe_counter!(STORAGE_FAILED, "Storage batch attempts that failed");
    describe_gauge!(
        GATEWAY_CONNECTED,
        "1 while every gateway shard is connected"
    );
    describe_gauge!(DATABASE_REACHABLE, "1 when the database answered");
}

/// A count as a metric value.
fn as_f64(n: usize) -> f64 {
    u32::try_from(n).map_or(f64::from(u32::MAX), f64::from)
}
