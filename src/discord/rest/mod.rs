//! What goes out over Discord's REST API.

pub mod cdn;
pub mod client;
pub mod delivery;
pub mod ratelimit;
pub mod registration;
pub mod thought_log;
pub mod webhooks;
