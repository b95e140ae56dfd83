//! What goes out over Discord's REST API.

pub mod cdn;
pub mod client;
pub mod delivery;
pub mod history;
pub mod ratelimit;
pub mod registration;
pub mod stickers;
pub mod thought_log;
pub mod webhooks;
