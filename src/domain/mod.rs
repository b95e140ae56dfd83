//! Domain types and ports: who a turn is for ([`scope`]), who calls tools ([`role`]), admission
//! rules ([`admission`]), catch-up after a gap ([`catch_up`]) and what history shows answered
//! ([`answered`]), the turn's shared state
//! ([`turn`], [`ledger`], [`review`]), tool calls
//! and history entries ([`call`], [`history`]), reminder times ([`schedule`]), moderator notices
//! ([`thought_log`]), the ports the core reaches the outside through ([`ports`]) and the
//! classification of provider failures ([`provider_failure`]).
//!
//! The bottom of the layers: nothing here uses the tools, the stage, the engine or an adapter,
//! and nothing imports serenity, poise, async-openai, reqwest or sqlx.

pub mod admission;
pub mod answered;
pub mod approvals;
pub mod buttons;
pub mod call;
pub mod catch_up;
pub mod history;
pub mod ledger;
pub mod personas;
pub mod ports;
pub mod provider_failure;
pub mod review;
pub mod role;
pub mod schedule;
pub mod scope;
pub mod thought_log;
pub mod turn;
