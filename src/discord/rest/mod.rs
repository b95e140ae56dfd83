//! What goes out over Discord's REST API, on the bot's own HTTP client ([`client`]) with its own
//! rate limits ([`ratelimit`]): delivery ([`delivery`]), an interaction's answer ([`answers`]),
//! channel history ([`history`]), the sticker catalog ([`stickers`]), the persona's webhooks
//! ([`webhooks`]), the thought log ([`thought_log`]), slash-command registration
//! ([`registration`]); and attachment downloads from the CDN ([`cdn`]), on a client of their own
//! without the token.

pub mod answers;
pub mod buttons;
pub mod cdn;
pub mod client;
pub mod delivery;
pub mod history;
pub mod ratelimit;
pub mod registration;
pub mod stickers;
pub mod thought_log;
pub mod webhooks;
