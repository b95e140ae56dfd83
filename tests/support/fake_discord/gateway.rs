//! The gateway websocket: HELLO, IDENTIFY (READY and one GUILD_CREATE per guild of the shard;
//! its intents kept for the session), heartbeats, RESUME with replay of missed dispatches; and the
//! frames it sends.
//!
//! Sharded as on Discord: an IDENTIFY's `shard` `[id, count]` (absent: `[0, 1]`) makes its own
//! session, live beside the other shards' sessions; a guild belongs to shard
//! `(guild_id >> 22) % count`, and DMs to shard 0. A new IDENTIFY for a shard whose session is
//! live on another connection replaces that session and closes that connection (4009); a shard
//! id not under the count, or a count other than the other live shards', is closed with 4010
//! (invalid shard).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::state::{Connection, Inner, Outgoing, Session, Shared, dispatch_to};

/// The close code of a connection whose shard was identified again on another one.
pub const REPLACED_CLOSE_CODE: u16 = 4009;
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
    let writer = tokio::spawn(async move {
        while let Some(out) = rx.recv().await {
            match out {
                Outgoing::Frame(frame) => {
                    if sink
                        .send(WsMessage::Text(frame.to_string().into()))
                        .await
                        .is_err()
                    {
                        break;
                    }
                }
                Outgoing::Raw(text) => {
                    if sink.send(WsMessage::Text(text.into())).await.is_err() {
                        break;
                    }
                }
                Outgoing::Close(code) => {
                    let _ = sink
                        .send(WsMessage::Close(Some(CloseFrame {
                            code,
                            reason: "".into(),
                        })))
                        .await;
                    break;
                }
            }
        }
    });
    let _ = tx.send(Outgoing::Frame(hello_frame()));
    while let Some(Ok(msg)) = stream.next().await {
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

/// The connection no longer carries any session.
fn detach(inner: &mut Inner, conn_id: u64) {
    for session in inner.shards.values_mut() {
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

/// Whether Discord takes this shard: an id under the count, and the count of the other shards'
/// live sessions (the session of the same shard id is replaced, whatever its count).
fn valid_shard(inner: &Inner, conn_id: u64, [id, total]: [u64; 2]) -> bool {
    id < total
        && inner.shards.values().all(|s| {
            s.shard[0] == id
                || s.shard[1] == total
                || s.live.as_ref().is_none_or(|c| c.id == conn_id)
        })
}

fn identify(shared: &Arc<Shared>, conn_id: u64, tx: &mpsc::UnboundedSender<Outgoing>, d: &Value) {
    let token = d["token"].as_str().unwrap_or_default();
    let rejected = shared
        .lock()
        .rejected_token
        .as_deref()
        .is_some_and(|t| token.trim_start_matches("Bot ") == t);
    if token.is_empty() || rejected {
        let _ = tx.send(Outgoing::Close(4004)); // authentication failed
        return;
    }
    if let Some(code) = shared.lock().identify_close {
        let _ = tx.send(Outgoing::Close(code));
        return;
    }
    let mut inner = shared.lock();
    inner.identifies.push(d.clone());
    let shard = requested_shard(d).filter(|s| valid_shard(&inner, conn_id, *s));
    let Some(shard @ [id, total]) = shard else {
        let _ = tx.send(Outgoing::Close(INVALID_SHARD_CLOSE_CODE));
        return;
    };
    detach(&mut inner, conn_id);
    if total != inner.shard_total {
        // a new shard count: the sessions of the old one are gone (none of them is live but
        // the one this IDENTIFY replaces)
        inner.shard_total = total;
        for old in std::mem::take(&mut inner.shards).into_values() {
            close_replaced(old);
        }
    }
    inner.sessions += 1;
    let session = Session {
        id: format!("fake-session-{}", inner.sessions),
        shard,
        // Discord requires `intents` in an IDENTIFY; without them the session gets no message
        intents: Some(d["intents"].as_u64().unwrap_or(0)),
        live: Some(Connection {
            id: conn_id,
            tx: tx.clone(),
        }),
        ..Session::default()
    };
    let session_id = session.id.clone();
    if let Some(old) = inner.shards.insert(id, session) {
        close_replaced(old);
    }
    send_ready(shared, &mut inner, &session_id, shard);
    shared.publish_ready(&inner);
}

/// Closes the connection of a session another IDENTIFY replaced, as Discord invalidates it.
fn close_replaced(old: Session) {
    if let Some(conn) = old.live {
        let _ = conn.tx.send(Outgoing::Close(REPLACED_CLOSE_CODE));
    }
}

/// READY and the GUILD_CREATEs of the shard's guilds, on the shard's new session.
fn send_ready(shared: &Shared, inner: &mut Inner, session_id: &str, [id, total]: [u64; 2]) {
    let world = &shared.world;
    let ready = world.shard_ready_json(session_id, &shared.ws_url, id, total);
    dispatch_to(inner, id, "READY", ready, None);
    for guild in world.shard_guilds(id, total) {
        let mut created = world.guild_create_json(guild);
        // Each channel's newest message, as Discord sends it.
        if let Some(channels) = created["channels"].as_array_mut() {
            for channel in channels {
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
        }
        dispatch_to(inner, id, "GUILD_CREATE", created, None);
    }
    if let Some(session) = inner.shards.get_mut(&id) {
        session.ready = true;
    }
}

fn resume(shared: &Arc<Shared>, conn_id: u64, tx: &mpsc::UnboundedSender<Outgoing>, d: &Value) {
    let mut inner = shared.lock();
    let known = inner
        .shards
        .values()
        .find(|s| !s.id.is_empty() && d["session_id"] == json!(s.id))
        .map(|s| s.shard[0]);
    let Some(shard) = known else {
        let _ = tx.send(Outgoing::Frame(invalid_session_frame(false)));
        return;
    };
    detach(&mut inner, conn_id);
    let after = d["seq"].as_u64().unwrap_or(0);
    if let Some(session) = inner.shards.get_mut(&shard) {
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
    }
    inner.resumes += 1;
    dispatch_to(&mut inner, shard, "RESUMED", resumed_json(), None);
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
