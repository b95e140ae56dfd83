//! What the server keeps between requests: the gateway sessions (see `session`), the recorded
//! requests, channel histories, scripted answers, rate-limit windows, nonces, interactions,
//! registered commands and channel webhooks.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;
use tokio::time::Instant;

use super::Recorded;
use super::rate_limits::RateLimiter;
use super::session::Session;
use super::world::World;

/// How long after its dispatch an interaction may still be answered, as on Discord.
pub(super) const INTERACTION_DEADLINE: Duration = Duration::from_secs(3);
/// How long an interaction's token takes follow-ups and edits of the original response.
pub(super) const INTERACTION_TOKEN_LIFETIME: Duration = Duration::from_secs(15 * 60);
/// How long a message's nonce makes an `enforce_nonce` create with the same nonce return it.
pub(super) const NONCE_LIFETIME: Duration = Duration::from_secs(5 * 60);

/// A scripted answer to the next `POST /channels/{id}/messages` of a channel.
pub(super) enum Scripted {
    /// Answered instead of Discord's checks; nothing is created.
    Answer {
        status: u16,
        /// Sent as is, so a test can send JSON no `Value` can hold (`1e400`) or no JSON at all.
        body: String,
        headers: Vec<(&'static str, String)>,
        /// No rate-limit headers are added: the test's headers are all there is.
        as_is: bool,
    },
    /// A 429 of the route's bucket, with Discord's body and headers.
    RateLimited { retry_after: f64 },
    /// The message is created (stored and dispatched), then this 5xx is the answer.
    FailAfterCreate { status: u16 },
}

pub(super) struct InteractionState {
    pub(super) id: u64,
    pub(super) channel_id: u64,
    pub(super) guild_id: Option<u64>,
    /// When INTERACTION_CREATE was dispatched: the callback deadline and the token's lifetime
    /// run from here.
    pub(super) dispatched_at: Instant,
    pub(super) acknowledged: bool,
    pub(super) original: Option<Value>,
    pub(super) followups: Vec<Value>,
    /// The interaction as dispatched (a modal's submit is made from it).
    pub(super) payload: Value,
    /// The modal shown in answer (callback type 9), waiting for the user to submit it.
    pub(super) modal: Option<Value>,
}

impl InteractionState {
    /// An interaction dispatched now, not yet answered.
    pub(super) fn new(id: u64, channel_id: u64, guild_id: Option<u64>, payload: Value) -> Self {
        Self {
            id,
            channel_id,
            guild_id,
            dispatched_at: Instant::now(),
            acknowledged: false,
            original: None,
            followups: Vec::new(),
            payload,
            modal: None,
        }
    }
}

#[derive(Default)]
pub(super) struct Inner {
    /// The bot's user id, for what the intents let through (set at start).
    pub(super) bot_id: u64,
    /// The CDN's files, by path under `/attachments/`.
    pub(super) files: HashMap<String, super::FakeFile>,
    pub(super) requests: Vec<Recorded>,
    pub(super) unexpected: Vec<Recorded>,
    pub(super) gateway_answered: bool,
    /// A bot token Discord refuses: 401 on REST (when `rejected_on_rest`), close 4004 on the
    /// gateway.
    pub(super) rejected_token: Option<String>,
    /// Every IDENTIFY is answered by closing with this code.
    pub(super) identify_close: Option<u16>,
    /// Privileged intents the app has not been granted: an IDENTIFY asking for one is closed
    /// with 4014 (Disallowed intents), as Discord does.
    pub(super) ungranted_intents: u64,
    pub(super) rejected_on_rest: bool,
    /// Every command registration (PUT) is refused with 400 Invalid Form Body.
    pub(super) refuse_commands: bool,
    /// Command writes still to be answered 429.
    pub(super) commands_rate_limited: usize,
    pub(super) identifies: Vec<Value>,
    pub(super) resumes: usize,
    pub(super) connections: usize,
    /// The shard count of every session (1 until an IDENTIFY says otherwise).
    pub(super) shard_total: u64,
    /// `shards` in `GET /gateway/bot`.
    pub(super) recommended_shards: u64,
    /// Every session there is, live or waiting for a RESUME, oldest first: several may be of
    /// one shard (see `session`). Before any IDENTIFY, shard 0's stand-in.
    pub(super) sessions: Vec<Session>,
    /// How many sessions were identified (for their ids).
    pub(super) identified: u64,
    /// Every RESUME is refused (op 9, `d: false`) as for an expired session, which is dropped.
    pub(super) refuse_resumes: bool,
    /// How many RESUMEs were refused so.
    pub(super) refused_resumes: usize,
    /// GUILD_CREATE's channels carry no `last_message_id`.
    pub(super) omit_last_message_ids: bool,
    /// Full message objects per channel, oldest first.
    pub(super) history: HashMap<u64, Vec<Value>>,
    /// Request bodies of successful `POST /channels/{id}/messages`.
    pub(super) posted: HashMap<u64, Vec<Value>>,
    pub(super) scripted: HashMap<u64, VecDeque<Scripted>>,
    pub(super) limits: RateLimiter,
    /// (channel id, nonce) -> (message id, created at), for `enforce_nonce`.
    pub(super) nonces: HashMap<(u64, String), (u64, Instant)>,
    /// How long an interaction may wait for its callback ([`INTERACTION_DEADLINE`] at start).
    pub(super) interaction_deadline: Duration,
    /// How long before their dispatch new interactions were made (their ids say so, and their
    /// token's 15 minutes run from then): zero at start.
    pub(super) interaction_age: Duration,
    pub(super) typing: HashMap<u64, usize>,
    /// user id -> DM channel id
    pub(super) dm_channels: HashMap<u64, u64>,
    pub(super) interactions: HashMap<String, InteractionState>,
    pub(super) interaction_responses: Vec<(u64, Value)>,
    /// (guild id, or None for global commands; the command as echoed)
    pub(super) commands: Vec<(Option<u64>, Value)>,
    /// Channel webhooks by id (oldest first), as Discord returns them (token included).
    pub(super) webhooks: BTreeMap<u64, Value>,
    /// Bodies of successful webhook executes per channel, each with its `webhook_id` added.
    pub(super) webhook_posts: HashMap<u64, Vec<Value>>,
    /// Per channel, the 5xx statuses its next webhook executes answer after posting.
    pub(super) webhook_fail_after: HashMap<u64, VecDeque<u16>>,
    /// The bot's reactions: (channel id, message id) -> each emoji (a Unicode emoji, or
    /// `name:id`), in the order added.
    pub(super) reactions: HashMap<(u64, u64), Vec<String>>,
}

pub(super) struct Shared {
    pub(super) world: World,
    pub(super) ws_url: String,
    pub(super) next_id: AtomicU64,
    pub(super) next_conn: AtomicU64,
    pub(super) inner: Mutex<Inner>,
    /// `(shard id, shard count)` of every live session that has had READY and its
    /// GUILD_CREATEs (or RESUMED), once per session, in order.
    pub(super) ready: watch::Sender<Vec<(u64, u64)>>,
}

/// Discord's epoch (2015-01-01) in unix milliseconds.
pub const DISCORD_EPOCH_MS: u64 = 1_420_070_400_000;

/// The snowflake of a moment, with `low` in its 22 low bits (worker, process and sequence).
pub fn snowflake_at(at: std::time::SystemTime, low: u64) -> u64 {
    let ms = at
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    (ms.saturating_sub(DISCORD_EPOCH_MS) << 22) | (low & ((1 << 22) - 1))
}

impl Shared {
    /// A new id, as Discord makes them: its creation time in the top bits (so a bot can tell a
    /// message's age from its id), and above every id made before.
    pub(super) fn snowflake(&self) -> u64 {
        let now = snowflake_at(std::time::SystemTime::now(), 0);
        let previous = self
            .next_id
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |next| {
                Some(next.max(now) + 1)
            })
            .unwrap_or(now);
        previous.max(now)
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn dm_channel(&self, inner: &mut Inner, user_id: u64) -> u64 {
        if let Some(id) = inner.dm_channels.get(&user_id) {
            return *id;
        }
        let id = self.snowflake();
        inner.dm_channels.insert(user_id, id);
        id
    }

    /// Tells the waiters which sessions are ready now.
    pub(super) fn publish_ready(&self, inner: &Inner) {
        let mut ready: Vec<(u64, u64)> = inner
            .sessions
            .iter()
            .filter(|s| s.is_ready())
            .map(|s| (s.shard[0], s.shard[1]))
            .collect();
        ready.sort_unstable();
        self.ready.send_if_modified(|r| {
            let changed = *r != ready;
            *r = ready;
            changed
        });
    }

    pub(super) fn dm_user(inner: &Inner, channel_id: u64) -> Option<u64> {
        inner
            .dm_channels
            .iter()
            .find(|(_, c)| **c == channel_id)
            .map(|(u, _)| *u)
    }
}
