//! A raw gateway client for the fake Discord's own tests: one websocket connection, as a shard of
//! a bot holds it, that identifies, resumes, and reads frames with a deadline. The real serenity
//! client is in the tests that need it; this one lets a test see every frame and close code.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream, connect_async};

use super::fake_discord::{self as fd, FakeDiscord};

/// GUILDS, GUILD_MESSAGES, DIRECT_MESSAGES, MESSAGE_CONTENT.
pub const INTENTS: u64 = 1 | fd::GUILD_MESSAGES | fd::DIRECT_MESSAGES | fd::MESSAGE_CONTENT;
/// How long a frame the test waits for may take (a generous deadline, not a timing check).
pub const PATIENCE: Duration = Duration::from_secs(20);

/// What the gateway sent next.
#[derive(Debug)]
pub enum Got {
    Frame(Value),
    /// The connection was closed, with this close code.
    Closed(Option<u16>),
}

/// One gateway connection, as a shard of a bot would hold it.
pub struct Shard {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    /// The `s` of the last dispatch read.
    pub seq: u64,
}

impl Shard {
    /// Connects and reads HELLO.
    pub async fn connect(fake: &FakeDiscord) -> Self {
        let (ws, _) = connect_async(fake.ws_url())
            .await
            .expect("the gateway upgrades");
        let mut shard = Self { ws, seq: 0 };
        match shard.next().await {
            Got::Frame(hello) => assert_eq!(hello["op"], 10, "HELLO first: {hello}"),
            other => panic!("no HELLO: {other:?}"),
        }
        shard
    }

    /// Connects and identifies, with this `shard` (none: the field is left out).
    pub async fn identify(fake: &FakeDiscord, shard: Option<[u64; 2]>) -> Self {
        let mut conn = Self::connect(fake).await;
        let mut d = json!({
            "token": "Bot test-token",
            "intents": INTENTS,
            "properties": {"os": "linux", "browser": "test", "device": "test"},
        });
        if let Some(shard) = shard {
            d["shard"] = json!(shard);
        }
        conn.send(json!({"op": 2, "d": d})).await;
        conn
    }

    /// Connects and sends a RESUME of this session after `seq`.
    pub async fn resume(fake: &FakeDiscord, session_id: &Value, seq: u64) -> Self {
        let mut conn = Self::connect(fake).await;
        conn.send(json!({"op": 6, "d": {
            "token": "Bot test-token", "session_id": session_id, "seq": seq,
        }}))
        .await;
        conn
    }

    pub async fn send(&mut self, frame: Value) {
        self.ws
            .send(WsMessage::Text(frame.to_string().into()))
            .await
            .expect("the gateway takes a frame");
    }

    pub async fn next(&mut self) -> Got {
        loop {
            let msg = tokio::time::timeout(PATIENCE, self.ws.next())
                .await
                .expect("the gateway sends something within 20 s");
            match msg {
                Some(Ok(WsMessage::Text(text))) => {
                    let frame: Value = serde_json::from_str(&text).expect("JSON frames");
                    if let Some(s) = frame["s"].as_u64() {
                        self.seq = s;
                    }
                    return Got::Frame(frame);
                }
                Some(Ok(WsMessage::Close(frame))) => {
                    return Got::Closed(frame.map(|f| u16::from(f.code)));
                }
                Some(Ok(_)) => continue,
                Some(Err(_)) | None => return Got::Closed(None),
            }
        }
    }

    /// The next dispatch (op 0): (type, frame).
    pub async fn dispatch(&mut self) -> (String, Value) {
        loop {
            match self.next().await {
                Got::Frame(f) if f["op"] == 0 => {
                    return (f["t"].as_str().unwrap_or_default().to_owned(), f);
                }
                Got::Frame(_) => continue,
                Got::Closed(code) => panic!("closed ({code:?}) while a dispatch was awaited"),
            }
        }
    }

    /// The next dispatch, which must be of type `t`: its `d`.
    pub async fn expect(&mut self, t: &str) -> Value {
        let (got, frame) = self.dispatch().await;
        assert_eq!(got, t, "expected {t}, got {frame}");
        frame["d"].clone()
    }

    /// READY and the GUILD_CREATEs it announces: (READY's `d`, ids of the created guilds).
    pub async fn ready(&mut self) -> (Value, Vec<u64>) {
        let ready = self.expect("READY").await;
        let count = ready["guilds"].as_array().map_or(0, Vec::len);
        let mut created = Vec::new();
        for _ in 0..count {
            created.push(id(&self.expect("GUILD_CREATE").await["id"]));
        }
        (ready, created)
    }

    /// The next frame, which must be op 9 INVALID_SESSION: its `d` (whether it may resume).
    pub async fn invalid_session(&mut self) -> Value {
        match self.next().await {
            Got::Frame(f) if f["op"] == 9 => f["d"].clone(),
            other => panic!("expected INVALID_SESSION, got {other:?}"),
        }
    }

    /// How the gateway closed the connection (frames before the close are skipped).
    pub async fn close_code(&mut self) -> Option<u16> {
        loop {
            if let Got::Closed(code) = self.next().await {
                return code;
            }
        }
    }
}

pub fn id(v: &Value) -> u64 {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a snowflake string: {v}"))
}

pub fn guild_ids(ready: &Value) -> Vec<u64> {
    ready["guilds"]
        .as_array()
        .expect("READY's guilds")
        .iter()
        .map(|g| id(&g["id"]))
        .collect()
}
