//! What the server keeps between requests: the gateway connection and session, the recorded
//! requests, channel histories, scripted answers, rate-limit windows, nonces, interactions and
//! registered commands.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::Recorded;
use super::gateway::dispatch_frame;
use super::intents::as_seen;
use super::rate_limits::RateLimiter;
use super::world::World;

/// How long after its dispatch an interaction may still be answered, as on Discord.
pub(super) const INTERACTION_DEADLINE: Duration = Duration::from_secs(3);
/// How long an interaction's token takes follow-ups and edits of the original response.
pub(super) const INTERACTION_TOKEN_LIFETIME: Duration = Duration::from_secs(15 * 60);
/// How long a message's nonce makes an `enforce_nonce` create with the same nonce return it.
pub(super) const NONCE_LIFETIME: Duration = Duration::from_secs(5 * 60);

pub(super) enum Outgoing {
    Frame(Value),
    /// A frame's JSON text, sent as is (it may hold what no `Value` can, such as `\ud800`).
    Raw(String),
    Close(u16),
}

pub(super) struct Connection {
    pub(super) id: u64,
    pub(super) tx: mpsc::UnboundedSender<Outgoing>,
}

#[derive(Default)]
pub(super) struct Session {
    pub(super) id: String,
    pub(super) seq: u64,
    /// The IDENTIFY's `intents`: which dispatches this session gets, and with what in them.
    /// `None` before any IDENTIFY: nobody receives the dispatches, which are kept whole.
    pub(super) intents: Option<u64>,
    /// Every dispatch frame of this session, for replay on RESUME.
    pub(super) frames: Vec<(u64, Value)>,
}

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
}

#[derive(Default)]
pub(super) struct Inner {
    /// The bot's user id, for what the intents let through (set at start).
    pub(super) bot_id: u64,
    pub(super) requests: Vec<Recorded>,
    pub(super) unexpected: Vec<Recorded>,
    pub(super) gateway_answered: bool,
    pub(super) identifies: Vec<Value>,
    pub(super) resumes: usize,
    pub(super) connections: usize,
    pub(super) live: Option<Connection>,
    pub(super) session: Session,
    pub(super) sessions: u64,
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
    pub(super) typing: HashMap<u64, usize>,
    /// user id -> DM channel id
    pub(super) dm_channels: HashMap<u64, u64>,
    pub(super) interactions: HashMap<String, InteractionState>,
    pub(super) interaction_responses: Vec<(u64, Value)>,
    /// (guild id, or None for global commands; the command as echoed)
    pub(super) commands: Vec<(Option<u64>, Value)>,
}

pub(super) struct Shared {
    pub(super) world: World,
    pub(super) ws_url: String,
    pub(super) next_id: AtomicU64,
    pub(super) next_conn: AtomicU64,
    pub(super) inner: Mutex<Inner>,
    /// Whether a live, identified (or resumed) session has had READY and GUILD_CREATEs.
    pub(super) ready: watch::Sender<bool>,
}

impl Shared {
    pub(super) fn snowflake(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::SeqCst)
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

    pub(super) fn dm_user(inner: &Inner, channel_id: u64) -> Option<u64> {
        inner
            .dm_channels
            .iter()
            .find(|(_, c)| **c == channel_id)
            .map(|(u, _)| *u)
    }
}

/// Sends a dispatch to the live connection (if any) and keeps it for replay, as the session's
/// intents let it through (a message event they do not ask for is not sent at all).
pub(super) fn dispatch_locked(inner: &mut Inner, t: &str, d: Value) {
    let d = match inner.session.intents {
        Some(intents) => match as_seen(intents, inner.bot_id, t, d) {
            Some(d) => d,
            None => return,
        },
        None => d,
    };
    inner.session.seq += 1;
    let seq = inner.session.seq;
    let frame = dispatch_frame(seq, t, d);
    if let Some(conn) = &inner.live {
        let _ = conn.tx.send(Outgoing::Frame(frame.clone()));
    }
    inner.session.frames.push((seq, frame));
}
