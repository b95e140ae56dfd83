//! What a test does to the gateway and reads of it: waits for ready sessions, counts the live
//! ones, closes or cuts their connections, refuses resumes, trims GUILD_CREATE, and reads back
//! IDENTIFYs and dispatches. The gateway itself is in `gateway`, its sessions in `session`.

use std::time::Duration;

use serde_json::{Value, json};

use super::gateway::reconnect_frame;
use super::server::FakeDiscord;
use super::session::{Outgoing, Session};
use super::state::Inner;

impl FakeDiscord {
    /// Waits until a client identified (or resumed) and READY + GUILD_CREATEs were sent on a
    /// connection that is still open (any shard). Panics after 20 s.
    pub async fn wait_ready(&self) {
        self.wait_for_ready("no client became ready", |r| !r.is_empty())
            .await;
    }

    /// Waits until every shard `0..total` (of `total`) has a ready session on an open connection.
    /// Panics after 20 s.
    pub async fn wait_shards_ready(&self, total: u64) {
        self.wait_for_ready(&format!("not all of {total} shards became ready"), |r| {
            (0..total).all(|id| r.contains(&(id, total)))
        })
        .await;
    }

    /// Waits until at least `count` sessions (of any shards, several of one shard counting each)
    /// are ready on open connections. Panics after 20 s.
    pub async fn wait_sessions_ready(&self, count: usize) {
        self.wait_for_ready(&format!("{count} sessions did not become ready"), |r| {
            r.len() >= count
        })
        .await;
    }

    async fn wait_for_ready(&self, what: &str, done: impl FnMut(&Vec<(u64, u64)>) -> bool) {
        let mut rx = self.shared.ready.subscribe();
        let waited = tokio::time::timeout(Duration::from_secs(20), rx.wait_for(done)).await;
        if !matches!(waited, Ok(Ok(_))) {
            let (answered, identifies) = {
                let inner = self.shared.lock();
                (inner.gateway_answered, inner.identifies.len())
            };
            let requests: Vec<String> = self
                .requests()
                .iter()
                .map(|r| format!("{} {}", r.method, r.path))
                .collect();
            panic!(
                "fake Discord: {what} within 20 s (gateway answered: {answered}, identifies: \
                 {identifies}, live sessions: {:?}, requests: {requests:?})",
                self.live_sessions()
            );
        }
    }

    /// `shards` in `GET /gateway/bot` from now on (1 at start).
    pub fn set_recommended_shards(&self, shards: u64) {
        self.shared.lock().recommended_shards = shards;
    }

    /// `(shard id, shard count)` of every shard with a session live on an open connection, by
    /// shard id, once however many sessions it has.
    pub fn live_shards(&self) -> Vec<(u64, u64)> {
        let mut shards = self.live_sessions();
        shards.dedup();
        shards
    }

    /// `(shard id, shard count)` of every session live on an open connection, by shard id (two
    /// processes running shard 0 side by side are `[(0, 1), (0, 1)]`).
    pub fn live_sessions(&self) -> Vec<(u64, u64)> {
        let mut live: Vec<(u64, u64)> = self
            .shared
            .lock()
            .sessions
            .iter()
            .filter(|s| s.live.is_some())
            .map(|s| (s.shard[0], s.shard[1]))
            .collect();
        live.sort_unstable();
        live
    }

    /// `GET /gateway` was answered and a websocket client identified.
    pub fn gateway_used(&self) -> bool {
        let inner = self.shared.lock();
        inner.gateway_answered && !inner.identifies.is_empty()
    }

    /// The `d` of every IDENTIFY received with a token, of every shard, oldest first (also those
    /// refused for an invalid shard).
    pub fn identifies(&self) -> Vec<Value> {
        self.shared.lock().identifies.clone()
    }

    /// How many RESUMEs succeeded.
    pub fn resumes(&self) -> usize {
        self.shared.lock().resumes
    }

    /// Refuses every RESUME from now on (`true`) as Discord refuses one for an expired session:
    /// op 9 INVALID_SESSION with `d: false`, the session is gone, and the client must identify
    /// again (a fresh READY and GUILD_CREATEs, nothing replayed). `false` takes them again.
    pub fn refuse_resumes(&self, refuse: bool) {
        self.shared.lock().refuse_resumes = refuse;
    }

    /// How many RESUMEs of a known session were refused by [`Self::refuse_resumes`].
    pub fn refused_resumes(&self) -> usize {
        self.shared.lock().refused_resumes
    }

    /// Leaves `last_message_id` out of the channels of every GUILD_CREATE from now on (`true`),
    /// as Discord does for some channel kinds and other backends do for all; `false` sends each
    /// channel's newest message again.
    pub fn omit_last_message_ids(&self, omit: bool) {
        self.shared.lock().omit_last_message_ids = omit;
    }

    /// How many websocket connections were opened.
    pub fn connections(&self) -> usize {
        self.shared.lock().connections
    }

    /// Asks every live client to reconnect (op 7); serenity then resumes on a new connection.
    pub fn request_reconnect(&self) {
        self.take_live(None, Outgoing::Frame(reconnect_frame()));
    }

    /// Closes every live connection with this close code.
    pub fn close_gateway(&self, code: u16) {
        self.take_live(None, Outgoing::Close(code));
    }

    /// Closes the connections of this shard's sessions with this close code.
    pub fn close_shard(&self, shard_id: u64, code: u16) {
        self.take_live(Some(shard_id), Outgoing::Close(code));
    }

    /// Ends every live connection without a close frame, as a network failure does (a client
    /// then tries to resume). Their sessions wait for a RESUME; what is dispatched meanwhile is
    /// kept for its replay.
    pub fn cut_gateway(&self) {
        self.take_live(None, Outgoing::Cut);
    }

    /// Sends `last` on the live connections of every session (or this shard's) and takes the
    /// connections from their sessions.
    fn take_live(&self, shard_id: Option<u64>, last: Outgoing) {
        let mut inner = self.shared.lock();
        for session in &mut inner.sessions {
            if shard_id.is_none_or(|s| s == session.shard[0]) {
                session.take_live(last.clone());
            }
        }
        self.shared.publish_ready(&inner);
    }

    /// Answers every IDENTIFY from now on by closing the connection with `code` (Discord's
    /// 4014 for intents the bot may not use, 4010 for a shard it may not run), or takes them
    /// again (`None`).
    pub fn close_identifies_with(&self, code: Option<u16>) {
        self.shared.lock().identify_close = code;
    }

    /// The app has not been granted these privileged intents (`MESSAGE_CONTENT`): from now on
    /// an IDENTIFY that asks for one is closed with 4014, one that does not is taken.
    pub fn withhold_intents(&self, intents: u64) {
        self.shared.lock().ungranted_intents = intents;
    }

    /// The `d` of every dispatch of type `t` in the newest session of each shard (shard by
    /// shard), as sent (after the session's intents), oldest first. (Older sessions of a shard
    /// got the same, as far as they lived.)
    pub fn dispatches(&self, t: &str) -> Vec<Value> {
        let inner = self.shared.lock();
        let mut shards: Vec<u64> = inner.sessions.iter().map(|s| s.shard[0]).collect();
        shards.sort_unstable();
        shards.dedup();
        shards
            .into_iter()
            .flat_map(|shard| of_type(newest(&inner, shard), t))
            .collect()
    }

    /// [`Self::dispatches`] of this shard's newest session only.
    pub fn shard_dispatches(&self, shard_id: u64, t: &str) -> Vec<Value> {
        of_type(newest(&self.shared.lock(), shard_id), t)
    }
}

/// The newest session of this shard, if any.
fn newest(inner: &Inner, shard_id: u64) -> Option<&Session> {
    inner.sessions.iter().rev().find(|s| s.shard[0] == shard_id)
}

/// The `d` of the session's dispatches of type `t`, oldest first.
fn of_type(session: Option<&Session>, t: &str) -> Vec<Value> {
    session
        .into_iter()
        .flat_map(|s| s.frames.iter())
        .filter(|(_, f)| f["t"] == json!(t))
        .map(|(_, f)| f["d"].clone())
        .collect()
}
