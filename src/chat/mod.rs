//! The chat core: who a turn is for ([`scope`]), who calls tools ([`role`]), the turn's shared
//! state ([`turn`], [`ledger`]), tool history entries ([`history`]), the ports the core reaches
//! the outside through ([`ports`], storage in [`stores`]) and the classification of provider failures
//! ([`provider_failure`]).
//!
//! Nothing here imports serenity, poise, async-openai, reqwest or sqlx.

pub mod admission;
pub mod call;
pub mod context;
pub mod history;
pub mod ledger;
pub mod media;
pub mod model;
pub mod orchestrator;
pub mod ports;
pub mod provider_failure;
pub mod review;
pub mod role;
pub mod schedule;
pub mod scope;
pub mod segment;
pub mod stores;
pub mod stream;
pub mod turn;
