//! The gateway websocket: HELLO, IDENTIFY (READY and one GUILD_CREATE per guild; its intents
//! kept for the session), heartbeats, RESUME with replay of missed dispatches; and the frames it
//! sends.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::state::{Connection, Outgoing, Session, Shared, dispatch_locked};

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
        if inner.live.as_ref().is_some_and(|c| c.id == conn_id) {
            inner.live = None;
            shared.ready.send_replace(false);
        }
    }
    drop(tx);
    // let a queued close frame go out, then stop
    let _ = tokio::time::timeout(Duration::from_secs(1), writer).await;
}

fn identify(shared: &Arc<Shared>, conn_id: u64, tx: &mpsc::UnboundedSender<Outgoing>, d: &Value) {
    if d["token"].as_str().is_none_or(str::is_empty) {
        let _ = tx.send(Outgoing::Close(4004)); // authentication failed
        return;
    }
    let world = &shared.world;
    let mut inner = shared.lock();
    shared.ready.send_replace(false);
    inner.identifies.push(d.clone());
    inner.sessions += 1;
    inner.session = Session {
        id: format!("fake-session-{}", inner.sessions),
        seq: 0,
        // Discord requires `intents` in an IDENTIFY; without them the session gets no message
        intents: Some(d["intents"].as_u64().unwrap_or(0)),
        frames: Vec::new(),
    };
    inner.live = Some(Connection {
        id: conn_id,
        tx: tx.clone(),
    });
    let ready = world.ready_json(&inner.session.id, &shared.ws_url);
    dispatch_locked(&mut inner, "READY", ready);
    for guild in &world.guilds {
        dispatch_locked(&mut inner, "GUILD_CREATE", world.guild_create_json(guild));
    }
    drop(inner);
    shared.ready.send_replace(true);
}

fn resume(shared: &Arc<Shared>, conn_id: u64, tx: &mpsc::UnboundedSender<Outgoing>, d: &Value) {
    let mut inner = shared.lock();
    let known = !inner.session.id.is_empty() && d["session_id"] == json!(inner.session.id);
    if !known {
        let _ = tx.send(Outgoing::Frame(invalid_session_frame(false)));
        return;
    }
    let after = d["seq"].as_u64().unwrap_or(0);
    for (seq, frame) in &inner.session.frames {
        if *seq > after {
            let _ = tx.send(Outgoing::Frame(frame.clone()));
        }
    }
    inner.live = Some(Connection {
        id: conn_id,
        tx: tx.clone(),
    });
    inner.resumes += 1;
    dispatch_locked(&mut inner, "RESUMED", resumed_json());
    drop(inner);
    shared.ready.send_replace(true);
}

/// `GET /gateway`.
pub fn gateway_json(ws_url: &str) -> Value {
    json!({"url": ws_url})
}

/// `GET /gateway/bot`.
pub fn gateway_bot_json(ws_url: &str) -> Value {
    json!({
        "url": ws_url,
        "shards": 1,
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
