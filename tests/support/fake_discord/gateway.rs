//! The gateway websocket: HELLO, IDENTIFY (READY and one GUILD_CREATE per guild of the shard;
//! its intents kept for the session), heartbeats, RESUME with replay of missed dispatches; and the
//! frames it sends.
//!
//! Sharded as on Discord: an IDENTIFY's `shard` `[id, count]` (absent: `[0, 1]`) makes a session
//! of its own (see `session`), live beside every other, including other sessions of the same
//! shard id, as during a rolling deploy: each gets every dispatch of its shard. A guild belongs to
//! shard `(guild_id >> 22) % count`, and DMs to shard 0. A shard id not under the count, or a
//! count other than that of the sessions live on other connections, is closed with 4010 (invalid
//! shard). A RESUME of a known session replays what it missed, unless resumes are refused
//! ([`super::FakeDiscord::refuse_resumes`]): then, as for an unknown or expired session, op 9
//! with `d: false`, and the session is gone.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};

use super::session::{Connection, Outgoing, Session};
use super::state::{Inner, Shared};

/// The close code of an IDENTIFY with an invalid shard.
pub const INVALID_SHARD_CLOSE_CODE: u16 = 4010;

/// `heartbeat_interval` in HELLO.
pub const HEARTBEAT_INTERVAL_MS: u64 = 41_250;

pub(super) async fn gateway(ws: WebSocketUpgrade, State(shared): State<Arc<Shared>>) -> Response {
    ws.on_upgrade(move |socket| run_gateway(shared, socket))
}

async fn run_gateway(shared: Arc<Shared>, socket: WebSocket) {
    let conn_id = shared.next_conn.fetch_add(1, Ordering::SeqCst);
    shared.lock().connections += 1;
    let (mut sink, mut stream) = socket.split();
    let (tx, mut rx) = mpsc::unbounded_channel::<Outgoing>();
    // Told by the writer that the connection is cut: the reader stops too, and with both halves
    // dropped the socket closes without a close frame.
    let cut = Arc::new(Notify::new());
    let cut_by_writer = cut.clone();
    let writer = tokio::spawn(async move {
        while let Some(out) = rx.recv().await {
            let text = match out {
                Outgoing::Frame(frame) => frame.to_string(),
                Outgoing::Raw(text) => text,
                Outgoing::Close(code) => {
                    let reason = "".into();
                    let close = WsMessage::Close(Some(CloseFrame { code, reason }));
                    let _ = sink.send(close).await;
                    break;
                }
                Outgoing::Cut => {
                    cut_by_writer.notify_one();
                    break;
                }
            };
            if sink.send(WsMessage::Text(text.into())).await.is_err() {
                break;
            }
        }
    });
    let _ = tx.send(Outgoing::Frame(hello_frame()));
    loop {
        let msg = tokio::select! {
            msg = stream.next() => msg,
            () = cut.notified() => break,
        };
        let Some(Ok(msg)) = msg else { break };
        let text = match msg {
            WsMessage::Text(t) => t.to_string(),
            WsMessage::Binary(b) => String::from_utf8_lossy(&b).into_owned(),
            WsMessage::Close(_) => break,
            _ => continue,
        };
        let Ok(payload) = serde_json::from_str::<Value>(&text) else {
            let _ = tx.send(Outgoing::Close(4002)); // decode error
            break;
        };
        match payload["op"].as_u64() {
            Some(1) => {
                let _ = tx.send(Outgoing::Frame(heartbeat_ack_frame()));
            }
            Some(2) => identify(&shared, conn_id, &tx, &payload["d"]),
            Some(6) => resume(&shared, conn_id, &tx, &payload["d"]),
            // presence update, voice state, request guild members, request soundboard sounds
            Some(3 | 4 | 8 | 31) => {}
            _ => {
                let _ = tx.send(Outgoing::Close(4001)); // unknown opcode
                break;
            }
        }
    }
    {
        let mut inner = shared.lock();
        detach(&mut inner, conn_id);
        shared.publish_ready(&inner);
    }
    drop(tx);
    // let a queued close frame go out, then stop
    let _ = tokio::time::timeout(Duration::from_secs(1), writer).await;
}

/// The connection no longer carries any session (they wait for a RESUME).
fn detach(inner: &mut Inner, conn_id: u64) {
    for session in &mut inner.sessions {
        if session.live.as_ref().is_some_and(|c| c.id == conn_id) {
            session.live = None;
            session.ready = false;
        }
    }
}

/// An IDENTIFY's `shard`: `[0, 1]` when absent, `None` when it is no `[id, count]`.
fn requested_shard(d: &Value) -> Option<[u64; 2]> {
    match &d["shard"] {
        Value::Null => Some([0, 1]),
        Value::Array(a) if a.len() == 2 => Some([a[0].as_u64()?, a[1].as_u64()?]),
        _ => None,
    }
}

/// Whether Discord takes this shard: an id under the count, and the count of every session live
/// on another connection (whatever its shard id: sessions of one shard live side by side).
fn valid_shard(inner: &Inner, conn_id: u64, [id, total]: [u64; 2]) -> bool {
    id < total
        && inner
            .sessions
            .iter()
            .all(|s| s.shard[1] == total || s.live.as_ref().is_none_or(|c| c.id == conn_id))
}

/// Whether the IDENTIFY is refused before its shard is looked at: a missing or refused token
/// (4004), or every IDENTIFY closed with a test's code.
fn refused_identify(shared: &Shared, tx: &mpsc::UnboundedSender<Outgoing>, d: &Value) -> bool {
    let token = d["token"].as_str().unwrap_or_default();
    let inner = shared.lock();
    let rejected = inner
        .rejected_token
        .as_deref()
        .is_some_and(|t| token.trim_start_matches("Bot ") == t);
    let asked = d["intents"].as_u64().unwrap_or(0);
    let code = if token.is_empty() || rejected {
        Some(4004) // authentication failed
    } else if asked & inner.ungranted_intents != 0 {
        Some(4014) // disallowed intents
    } else {
        inner.identify_close
    };
    if let Some(code) = code {
        let _ = tx.send(Outgoing::Close(code));
    }
    code.is_some()
}

fn identify(shared: &Arc<Shared>, conn_id: u64, tx: &mpsc::UnboundedSender<Outgoing>, d: &Value) {
    if refused_identify(shared, tx, d) {
        return;
    }
    let mut inner = shared.lock();
    inner.identifies.push(d.clone());
    let shard = requested_shard(d).filter(|s| valid_shard(&inner, conn_id, *s));
    let Some(shard @ [_, total]) = shard else {
        let _ = tx.send(Outgoing::Close(INVALID_SHARD_CLOSE_CODE));
        return;
    };
    detach(&mut inner, conn_id);
    if total != inner.shard_total {
        // a new shard count: the sessions of the old one are gone (none is live: see
        // `valid_shard`)
        inner.shard_total = total;
        inner.sessions.clear();
    }
    // the stand-in kept before any IDENTIFY is no session
    inner.sessions.retain(Session::identified);
    inner.identified += 1;
    let id = format!("fake-session-{}", inner.identified);
    inner.sessions.push(Session {
        id,
        shard,
        // Discord requires `intents` in an IDENTIFY; without them the session gets no message
        intents: Some(d["intents"].as_u64().unwrap_or(0)),
        live: Some(Connection {
            id: conn_id,
            tx: tx.clone(),
        }),
        ..Session::default()
    });
    send_ready(shared, &mut inner);
    shared.publish_ready(&inner);
}

/// READY and the GUILD_CREATEs of the shard's guilds, on the newest session (just identified).
fn send_ready(shared: &Shared, inner: &mut Inner) {
    let world = &shared.world;
    let bot_id = inner.bot_id;
    let Some(session) = inner.sessions.last() else {
        return;
    };
    let [id, total] = session.shard;
    let ready = world.shard_ready_json(&session.id, &shared.ws_url, id, total);
    let created: Vec<Value> = world
        .shard_guilds(id, total)
        .map(|guild| guild_create(inner, world.guild_create_json(guild)))
        .collect();
    let Some(session) = inner.sessions.last_mut() else {
        return;
    };
    session.dispatch(bot_id, "READY", ready, None);
    for guild in created {
        session.dispatch(bot_id, "GUILD_CREATE", guild, None);
    }
    session.ready = true;
}

/// A GUILD_CREATE with each channel's newest message as Discord sends it, or none at all when a
/// test asks for that.
fn guild_create(inner: &Inner, mut created: Value) -> Value {
    let Some(channels) = created["channels"].as_array_mut() else {
        return created;
    };
    for channel in channels {
        if inner.omit_last_message_ids {
            if let Some(channel) = channel.as_object_mut() {
                channel.remove("last_message_id");
            }
            continue;
        }
        let newest = channel["id"]
            .as_str()
            .and_then(|c| c.parse::<u64>().ok())
            .and_then(|c| inner.history.get(&c))
            .and_then(|h| h.iter().max_by_key(|m| id_of(m)))
            .map(|m| m["id"].clone());
        if let Some(newest) = newest {
            channel["last_message_id"] = newest;
        }
    }
    created
}

fn resume(shared: &Arc<Shared>, conn_id: u64, tx: &mpsc::UnboundedSender<Outgoing>, d: &Value) {
    let mut inner = shared.lock();
    let known = inner
        .sessions
        .iter()
        .position(|s| s.identified() && d["session_id"] == json!(s.id));
    let Some(index) = known else {
        let _ = tx.send(Outgoing::Frame(invalid_session_frame(false)));
        return;
    };
    if inner.refuse_resumes {
        // as for an expired session: it is gone, and the client must identify anew
        let mut refused = inner.sessions.remove(index);
        refused.take_live(Outgoing::Close(4009)); // session timed out
        inner.refused_resumes += 1;
        let _ = tx.send(Outgoing::Frame(invalid_session_frame(false)));
        shared.publish_ready(&inner);
        return;
    }
    detach(&mut inner, conn_id);
    let after = d["seq"].as_u64().unwrap_or(0);
    let bot_id = inner.bot_id;
    let session = &mut inner.sessions[index];
    for (seq, frame) in &session.frames {
        if *seq > after {
            let _ = tx.send(Outgoing::Frame(frame.clone()));
        }
    }
    session.live = Some(Connection {
        id: conn_id,
        tx: tx.clone(),
    });
    session.ready = true;
    session.dispatch(bot_id, "RESUMED", resumed_json(), None);
    inner.resumes += 1;
    shared.publish_ready(&inner);
}

/// `GET /gateway`.
pub fn gateway_json(ws_url: &str) -> Value {
    json!({"url": ws_url})
}

/// `GET /gateway/bot`, recommending this many shards.
pub fn gateway_bot_json(ws_url: &str, shards: u64) -> Value {
    json!({
        "url": ws_url,
        "shards": shards,
        "session_start_limit": {
            "total": 1000, "remaining": 999, "reset_after": 14_400_000, "max_concurrency": 1,
        },
    })
}

/// Op 10 HELLO.
pub fn hello_frame() -> Value {
    json!({
        "op": 10,
        "d": {"heartbeat_interval": HEARTBEAT_INTERVAL_MS, "_trace": ["[\"fake-discord\"]"]},
        "s": null,
        "t": null,
    })
}

/// Op 11 HEARTBEAT_ACK.
pub fn heartbeat_ack_frame() -> Value {
    json!({"op": 11, "d": null, "s": null, "t": null})
}

/// Op 9 INVALID_SESSION.
pub fn invalid_session_frame(resumable: bool) -> Value {
    json!({"op": 9, "d": resumable, "s": null, "t": null})
}

/// Op 7 RECONNECT.
pub fn reconnect_frame() -> Value {
    json!({"op": 7, "d": null, "s": null, "t": null})
}

/// Op 0 dispatch.
pub fn dispatch_frame(seq: u64, t: &str, d: Value) -> Value {
    json!({"op": 0, "s": seq, "t": t, "d": d})
}

/// The RESUMED dispatch's `d`.
pub fn resumed_json() -> Value {
    json!({"_trace": ["[\"fake-discord\"]"]})
}

/// A message object's id.
fn id_of(message: &Value) -> u64 {
    message["id"]
        .as_str()
        .and_then(|id| id.parse().ok())
        .unwrap_or(0)
}
