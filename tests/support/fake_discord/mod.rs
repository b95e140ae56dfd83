//! A fake Discord on 127.0.0.1 that the real serenity 0.12 client (and poise) can connect to:
//! the REST API under `/api/v10/` and a gateway websocket at `/gateway`.
//!
//! Point serenity at it with `HttpBuilder::new(token).proxy(&fake.base_url)`; `GET /gateway` then
//! hands out the fake's websocket URL. The gateway speaks the JSON protocol (HELLO, IDENTIFY ->
//! READY + one GUILD_CREATE per guild, heartbeats, RESUME with replay of missed dispatches), and
//! the test pushes MESSAGE_CREATE and INTERACTION_CREATE dispatches through it.
//!
//! The gateway is sharded as Discord's: each IDENTIFY with `shard: [id, count]` is a session of
//! its own, live beside the others, also beside other sessions of the same shard (two processes
//! of a rolling deploy); a guild's dispatches go to every session of shard
//! `(guild_id >> 22) % count` only, DMs to shard 0's (see `gateway` and `session`).
//! `GET /gateway/bot` recommends [`FakeDiscord::set_recommended_shards`] shards (1 by default).
//! A test can cut or close connections, refuse RESUMEs (op 9, `d: false`) and leave
//! `last_message_id` out of GUILD_CREATE (see `gateway_control`).
//!
//! Every payload is complete for serenity 0.12.5's model types: serenity drops a gateway event
//! that misses a required field (only a `warn!` log line), so `fake_discord_smoke.rs` checks each
//! builder against serenity's own types.
//!
//! Every REST request is recorded (method, path without `/api/v10`, JSON body, `Authorization`,
//! the status answered, when it arrived); requests to routes the fake does not know get a 404 and are also kept in
//! `unexpected()`, so a test can fail loudly on them.
//!
//! The fake is as strict as Discord by default (`fake_discord_strict.rs` proves each rule):
//! - rate limits: fixed windows of 5 message creates and 5 message edits per channel per 5 s,
//!   5 executes per channel webhook per 2 s, and 50 requests per second over everything but
//!   interaction callbacks, with Discord's
//!   headers on every answer of a bucketed route and its 429s (`set_rate_limits(false)` turns
//!   them off, `set_rate_limit` changes a window);
//! - `allowed_mentions` decides who a created message pings (its `mentions`, `mention_roles`,
//!   `mention_everyone`), and contradictory settings are refused;
//! - a session without the MESSAGE_CONTENT intent gets message events with their content empty,
//!   unless the message mentions the bot, is in a DM or is the bot's own;
//! - an interaction answered more than 3 s after its dispatch, or answered twice (also by two
//!   sessions that both got it), is refused;
//! - a created message is dispatched as MESSAGE_CREATE; an `enforce_nonce` create whose nonce
//!   matches a message of the channel from the last five minutes returns that message and
//!   creates nothing;
//! - a message create where the bot lacks VIEW_CHANNEL or SEND_MESSAGES is refused (50001,
//!   50013);
//! - channel webhooks are listed and made only with MANAGE_WEBHOOKS (15 per channel at most,
//!   no "clyde" or "discord" in a name), and executed only with their token; an executed
//!   message has the webhook as its author and is dispatched as MESSAGE_CREATE.
//!
//! `POST /channels/{id}/messages` can be scripted to answer 429s or other failures, or to fail
//! with a 5xx after creating the message, and validates like Discord does (empty message, content
//! over 2000 characters, unknown sticker).
//!
//! Here: what tests send and read back. Beside it: `world` (guilds, channels, members) and
//! `permissions` (Discord's permission algorithm over them); `objects` and `message_objects`
//! (the payload builders); `state` (what the server keeps) and `server` (the [`FakeDiscord`]
//! handle a test drives); `gateway` (the websocket and its frames), `session` (a session and
//! what it is sent), `gateway_control` (what a test does to the gateway) and `intents` (what a
//! session's intents let through); `rest` (request parsing and answers), `rate_limits` (buckets,
//! the global budget, their headers and 429s), `routes` (the REST routes), `channel_messages`
//! (message creation and Discord's checks), `mentions` (`allowed_mentions`), `message_edits`
//! (editing a message), `interactions` (callbacks, original responses, follow-ups),
//! `webhooks` (channel webhooks and their executes) and `validation` (slash command options
//! against their registration).

mod cdn;
mod channel_messages;
mod components;
mod gateway;
mod gateway_control;
mod intents;
mod interactions;
mod mentions;
mod menus;
mod message_edits;
mod message_objects;
mod modals;
mod objects;
mod permissions;
mod rate_limits;
mod reactions;
mod rest;
mod routes;
mod server;
mod session;
mod state;
mod validation;
mod webhooks;
mod world;

use bytes::Bytes;
use serde_json::Value;

pub use cdn::FakeFile;
pub use components::{ButtonPress, button_ids};
pub use gateway::{
    HEARTBEAT_INTERVAL_MS, INVALID_SHARD_CLOSE_CODE, dispatch_frame, gateway_bot_json,
    gateway_json, heartbeat_ack_frame, hello_frame, invalid_session_frame, reconnect_frame,
    resumed_json,
};
pub use intents::{DIRECT_MESSAGES, GUILD_MESSAGES, MESSAGE_CONTENT};
pub use menus::MenuUse;
pub use permissions::*;
pub use rate_limits::{RateLimit, RateLimitCounts};
pub use server::FakeDiscord;
pub use world::{FakeChannel, FakeGuild, FakeMember, SHARD_1_GUILD, World, shard_of};

/// The first generated snowflake.
pub const FIRST_SNOWFLAKE: u64 = 1_000_000;

/// A message someone else sends (MESSAGE_CREATE).
#[derive(Debug, Clone)]
pub struct Incoming {
    pub channel_id: u64,
    pub guild_id: Option<u64>,
    pub author_id: u64,
    pub author_name: String,
    pub author_is_bot: bool,
    /// Messages from webhooks have no `member`, and their author is a bot (as on Discord).
    pub webhook_id: Option<u64>,
    pub content: String,
    /// (user id, name)
    pub mentions: Vec<(u64, String)>,
    /// The replied-to message id; its full object is taken from the channel's history.
    pub reply_to: Option<u64>,
    /// Its files, served by the fake's CDN.
    pub attachments: Vec<FakeFile>,
}

impl Incoming {
    pub fn new(
        channel_id: u64,
        guild_id: Option<u64>,
        author_id: u64,
        author_name: &str,
        content: &str,
    ) -> Self {
        Self {
            channel_id,
            guild_id,
            author_id,
            author_name: author_name.into(),
            author_is_bot: false,
            webhook_id: None,
            content: content.into(),
            mentions: Vec::new(),
            reply_to: None,
            attachments: Vec::new(),
        }
    }
}

/// A slash command invocation (INTERACTION_CREATE type 2).
#[derive(Debug, Clone)]
pub struct Slash {
    pub name: String,
    /// The `options` array of the interaction data, e.g.
    /// `[{"name":"state","type":3,"value":"on"}]` or `[]`.
    pub options: Value,
    pub guild_id: Option<u64>,
    pub channel_id: u64,
    pub user_id: u64,
    pub user_name: String,
    /// The member's permissions in the channel (sent as a decimal string).
    pub permissions: u64,
    pub locale: String,
}

impl Slash {
    /// With `@everyone`'s permissions and locale "en-US"; see
    /// [`World::permissions_in`] for a member's real ones.
    pub fn new(
        name: &str,
        options: Value,
        guild_id: Option<u64>,
        channel_id: u64,
        user_id: u64,
        user_name: &str,
    ) -> Self {
        Self {
            name: name.into(),
            options,
            guild_id,
            channel_id,
            user_id,
            user_name: user_name.into(),
            permissions: EVERYONE_PERMISSIONS,
            locale: "en-US".into(),
        }
    }
}

/// A REST request as the fake saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// Without the `/api/v10` prefix, with the query as sent (serenity writes `?&limit=..`).
    pub path: String,
    /// The JSON body (`payload_json` of a multipart body), `Value::Null` when none.
    pub body: Value,
    pub authorization: Option<String>,
    /// Files of a multipart body.
    pub files: Vec<Upload>,
    /// The status the fake answered (429 for a rate-limited request); 0 while it is still being
    /// answered.
    pub status: u16,
    /// When the fake took the request up (its body read), before any check: for latencies and
    /// request rates. A `std` instant, so paused tokio time does not stop it.
    pub at: std::time::Instant,
}

/// A file sent in a multipart body.
#[derive(Debug, Clone)]
pub struct Upload {
    /// The form field, e.g. `files[0]`.
    pub field: String,
    pub filename: String,
    pub content_type: Option<String>,
    pub data: Bytes,
}
