//! Gateway sessions and what they are sent. As on Discord, a shard may have several sessions at
//! once (a rolling deploy runs the old process and the new one side by side, each identified for
//! the same shard), and every dispatch of the shard goes to each of them: each session has its
//! own id, seq numbers, intents and replay buffer. A session outlives its connection (it waits
//! for a RESUME) until it is resumed, refused, or dropped with its shard count.
//!
//! Only the gateway (`gateway`) makes and ends sessions; everything else dispatches through
//! [`dispatch_locked`] or [`dispatch_to`].

use serde_json::Value;
use tokio::sync::mpsc;

use super::gateway::dispatch_frame;
use super::intents::as_seen;
use super::state::Inner;

#[derive(Clone)]
pub(super) enum Outgoing {
    Frame(Value),
    /// A frame's JSON text, sent as is (it may hold what no `Value` can, such as `\ud800`).
    Raw(String),
    Close(u16),
    /// The connection ends without a close frame, as when the network fails.
    Cut,
}

pub(super) struct Connection {
    pub(super) id: u64,
    pub(super) tx: mpsc::UnboundedSender<Outgoing>,
}

pub(super) struct Session {
    /// Empty for the stand-in of shard 0 before any IDENTIFY (which nobody can resume).
    pub(super) id: String,
    /// `[shard id, shard count]`, as in the IDENTIFY (`[0, 1]` when it had none).
    pub(super) shard: [u64; 2],
    pub(super) seq: u64,
    /// The IDENTIFY's `intents`: which dispatches this session gets, and with what in them.
    /// `None` before any IDENTIFY: nobody receives the dispatches, which are kept whole.
    pub(super) intents: Option<u64>,
    /// Every dispatch frame of this session, for replay on RESUME.
    pub(super) frames: Vec<(u64, Value)>,
    /// The connection the session is live on, if any.
    pub(super) live: Option<Connection>,
    /// READY and the GUILD_CREATEs (or RESUMED) went out on the live connection.
    pub(super) ready: bool,
}

impl Default for Session {
    /// Shard 0's stand-in before any IDENTIFY: it keeps what is dispatched, nobody receives it.
    fn default() -> Self {
        Self {
            id: String::new(),
            shard: [0, 1],
            seq: 0,
            intents: None,
            frames: Vec::new(),
            live: None,
            ready: false,
        }
    }
}

impl Session {
    /// Whether a client identified this session (the stand-in before any IDENTIFY was not).
    pub(super) fn identified(&self) -> bool {
        !self.id.is_empty()
    }

    /// Whether the session is live on an open connection and had READY (or RESUMED) there.
    pub(super) fn is_ready(&self) -> bool {
        self.ready && self.live.is_some()
    }

    /// Sends a dispatch on this session, as its intents let it through (a message event they do
    /// not ask for is not sent at all): on its live connection if any, and kept for replay.
    /// With `raw` `(marker, text)`, every marker in the frame's JSON text is replaced by the
    /// text as sent; the kept frame keeps the markers.
    pub(super) fn dispatch(&mut self, bot_id: u64, t: &str, d: Value, raw: Option<(&str, &str)>) {
        let d = match self.intents {
            Some(intents) => match as_seen(intents, bot_id, t, d) {
                Some(d) => d,
                None => return,
            },
            None => d,
        };
        self.seq += 1;
        let frame = dispatch_frame(self.seq, t, d);
        if let Some(conn) = &self.live {
            let out = match raw {
                Some((marker, text)) => Outgoing::Raw(frame.to_string().replace(marker, text)),
                None => Outgoing::Frame(frame.clone()),
            };
            let _ = conn.tx.send(out);
        }
        self.frames.push((self.seq, frame));
    }

    /// Sends `last` on the live connection, if any, and takes the connection away: the session
    /// waits for a RESUME.
    pub(super) fn take_live(&mut self, last: Outgoing) {
        self.ready = false;
        if let Some(conn) = self.live.take() {
            let _ = conn.tx.send(last);
        }
    }
}

/// The shard a guild belongs to among `total`, as on Discord.
pub fn shard_of(guild_id: u64, total: u64) -> u64 {
    (guild_id >> 22) % total.max(1)
}

/// The guild a dispatch is about: its `guild_id`, or the `id` of a guild event.
fn guild_of(t: &str, d: &Value) -> Option<u64> {
    let id = match t {
        "GUILD_CREATE" | "GUILD_UPDATE" | "GUILD_DELETE" => &d["id"],
        _ => &d["guild_id"],
    };
    match id {
        Value::String(s) => s.parse().ok(),
        other => other.as_u64(),
    }
}

/// The shard whose sessions get this dispatch: the guild's, or shard 0 without a guild (DMs).
pub(super) fn shard_for(inner: &Inner, t: &str, d: &Value) -> u64 {
    guild_of(t, d).map_or(0, |g| shard_of(g, inner.shard_total))
}

/// Sends a dispatch to every session of its guild's shard (shard 0 without a guild); see
/// [`Session::dispatch`].
pub(super) fn dispatch_locked(inner: &mut Inner, t: &str, d: Value) {
    let shard = shard_for(inner, t, &d);
    dispatch_to(inner, shard, t, d, None);
}

/// Sends a dispatch to every session of this shard, live or waiting for a RESUME (nothing when
/// the shard has none); see [`Session::dispatch`] for `raw`.
pub(super) fn dispatch_to(
    inner: &mut Inner,
    shard: u64,
    t: &str,
    d: Value,
    raw: Option<(&str, &str)>,
) {
    let bot_id = inner.bot_id;
    for session in inner.sessions.iter_mut().filter(|s| s.shard[0] == shard) {
        session.dispatch(bot_id, t, d.clone(), raw);
    }
}
