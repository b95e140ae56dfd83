//! persona-bot: a Discord persona bot with a built-in, role-scoped LLM tool loop.
//!
//! Layers, bottom-up (`tests/layers.rs` checks that none uses one above it): the base
//! (`config`, `locale`, `redact`, `http_body`, `telemetry`, `shutdown`), the [`domain`] types and
//! ports, the [`tools`], the tool-call [`stage`], the [`engine`] that runs turns, the
//! adapters (`discord`, `provider`, `storage`, `media`, `observe`) and the [`app`] that wires
//! them. Nothing below the adapters knows Discord, HTTP or SQL; it reaches the outside only
//! through the ports in [`domain::ports`].
// Outside tests nothing may panic on outside input: every such site is handled, or allowed
// at the site with a one-line reason (clippy.toml exempts #[test] code).
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

/// Start-up and wiring for `run` and `worker`.
pub mod app;
/// Typed settings, layered loading (file defaults, local file, environment) and secrets.
pub mod config;
/// The Discord adapter (serenity and poise live only here): events, delivery, commands.
pub mod discord;
/// Domain types and ports: scope, roles, the turn, ledgers, notices and the provider-failure
/// classifier.
pub mod domain;
/// The engine: the orchestrator, the pass loop, stream delivery, the reviewer, reminders and the
/// image worker.
pub mod engine;
/// Reading HTTP answer bodies with a size bound, chunk by chunk.
pub mod http_body;
/// Localized strings (Fluent): English, Japanese, Simplified and Traditional Chinese.
pub mod locale;
/// Outside tools over the Model Context Protocol (SPEC E4): the `rmcp` client.
pub mod mcp;
/// Image backends: ComfyUI and OpenAI-compatible images endpoints.
pub mod media;
/// Observability: the per-turn log line, metrics, and the `/metrics` and `/healthz` listener.
pub mod observe;
/// The OpenAI-compatible streaming provider: key rotation and model fallback support.
pub mod provider;
/// Secret redaction for everything moderators and operators read.
pub mod redact;
/// How the process stops: the root token, signals, one task tracker.
pub mod shutdown;
/// The tool-call stage: `execute_tool_call`, its gates, the watchdog and payload builders.
pub mod stage;
/// sqlx repositories (SQLite file or PostgreSQL) implementing the storage ports.
pub mod storage;
/// Tracing set-up, done once per process.
pub mod telemetry;
/// In-process fakes of the core's ports, for unit tests and benchmarks (the `testkit` feature;
/// never in a build of the bot).
#[cfg(any(test, feature = "testkit"))]
#[allow(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    reason = "test fakes: a fake called in a way its test did not expect panics, failing the test"
)]
pub mod testkit;
/// The tool registry, role-scoped tool sessions and the built-in tools.
pub mod tools;

/// FNV-1a, 64-bit: a hash that stays the same across processes and versions (lock keys,
/// generation seeds), unlike `std`'s randomized one.
pub fn stable_hash(bytes: impl IntoIterator<Item = u8>) -> u64 {
    bytes.into_iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}
