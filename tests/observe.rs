//! Observability end to end: the real bot against the fake Discord and the fake OpenAI-compatible
//! server, with `metrics.listen` on a free loopback port; a turn's numbers on `/metrics`,
//! `/healthz` and `persona-bot health` healthy, then unhealthy once the database is gone; and with
//! the default configuration nothing listens. And the listener alone: clients that never finish a
//! request are cut off, and a burst of `/healthz` asks the database once.

// The shared fakes this binary uses (tests/support/). Public, so that what it leaves
// unused of them is not dead code.
pub mod support {
    pub mod e2e;
    pub mod fake_discord;
    pub mod fake_openai;
    pub mod harness;
}

use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use persona_bot::config::Config;
use persona_bot::discord::GatewayStatus;
use persona_bot::observe::health::Health;
use persona_bot::observe::server::{Endpoint, Limits};
use persona_bot::storage::Storage;
use serde_json::Value;
use support::e2e::*;
use support::fake_openai::{Reply, Sse};
use support::harness::Behaviour;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_util::sync::CancellationToken;

async fn get(address: SocketAddr, path: &str) -> (u16, String) {
    let response = reqwest::get(format!("http://{address}{path}"))
        .await
        .expect("the listener answers");
    let status = response.status().as_u16();
    (status, response.text().await.expect("a body"))
}

/// The value of the series `name` whose labels include every one of `labels`.
fn series(metrics: &str, name: &str, labels: &[&str]) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let (key, value) = line.rsplit_once(' ')?;
        let (series_name, rest) = key.split_once('{').unwrap_or((key, ""));
        (series_name == name && labels.iter().all(|l| rest.contains(l)))
            .then(|| value.parse().ok())
            .flatten()
    })
}

/// `persona-bot health` against `address`: its exit code and its output.
fn health_command(address: SocketAddr) -> (bool, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new(env!("CARGO_BIN_EXE_persona-bot"))
        .arg("health")
        .current_dir(dir.path())
        .env("PERSONA_BOT_METRICS__LISTEN", address.to_string())
        .output()
        .expect("run persona-bot health");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

// A turn with a tool call and a Discord 429 shows on /metrics (the turn by status, its tokens, the
// tool by name and outcome, the provider calls, Discord's requests and 429s, the storage writer,
// the gateway); /healthz and `persona-bot health` say healthy, and once the database is gone,
// unhealthy with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_shows_on_metrics_and_health_follows_the_database() {
    let e = E2e::start_with(
        Behaviour::succeed(),
        vec![
            Reply::call("call_1", "probe", r#"{"n":1}"#),
            Reply::Stream(vec![
                Sse::text("Done."),
                Sse::finish("stop"),
                Sse::usage(120, 34),
                Sse::Done,
            ]),
        ],
        |c| c.metrics.listen = "127.0.0.1:0".into(),
    )
    .await;
    let address = e
        .running()
        .metrics_address()
        .expect("metrics.listen is set: the listener is bound");
    assert!(
        address.ip().is_loopback() && address.port() != 0,
        "{address}"
    );
    e.discord.rate_limit_next(GENERAL, 1, 0.01);
    e.mention(ALICE, "alice", "run the probe").await;
    e.until("the reply", |e| e.texts(GENERAL).contains(&"Done.".into()))
        .await;

    // The turn's line and metrics come from a subscriber: wait for its counter.
    let deadline = Instant::now() + Duration::from_secs(15);
    let metrics = loop {
        let (status, metrics) = get(address, "/metrics").await;
        assert_eq!(status, 200);
        if series(
            &metrics,
            "persona_bot_turns_total",
            &[r#"status="completed""#],
        )
        .is_some()
        {
            break metrics;
        }
        assert!(Instant::now() < deadline, "no turn counter: {metrics}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    for (name, labels) in [
        ("persona_bot_turns_total", vec![r#"status="completed""#]),
        ("persona_bot_turn_tokens_total", vec![r#"kind="prompt""#]),
        (
            "persona_bot_turn_tokens_total",
            vec![r#"kind="completion""#],
        ),
        ("persona_bot_turn_duration_seconds_count", vec![]),
        (
            "persona_bot_tool_calls_total",
            vec![r#"tool="probe""#, r#"outcome="succeeded""#],
        ),
        (
            "persona_bot_tool_call_duration_seconds_count",
            vec![r#"tool="probe""#],
        ),
        (
            "persona_bot_provider_calls_total",
            vec![
                r#"role="persona""#,
                r#"model="test-model""#,
                r#"outcome="ok""#,
            ],
        ),
        (
            "persona_bot_provider_first_event_seconds_count",
            vec![r#"model="test-model""#],
        ),
        (
            "persona_bot_provider_call_seconds_count",
            vec![r#"model="test-model""#],
        ),
        (
            "persona_bot_discord_requests_total",
            vec![r#"route="POST /channels/{}/messages""#],
        ),
        (
            "persona_bot_discord_rate_limited_total",
            vec![r#"route="POST /channels/{}/messages""#, r#"scope="bucket""#],
        ),
        ("persona_bot_discord_scheduler_wait_seconds_count", vec![]),
    ] {
        let value = series(&metrics, name, &labels);
        assert!(
            value.is_some_and(|v| v >= 1.0),
            "{name}{labels:?}: {value:?}\n{metrics}"
        );
    }
    assert!(
        series(
            &metrics,
            "persona_bot_turn_tokens_total",
            &[r#"kind="prompt""#]
        )
        .is_some_and(|v| v >= 120.0),
        "{metrics}"
    );
    assert!(
        series(
            &metrics,
            "persona_bot_provider_calls_total",
            &[r#"outcome="ok""#]
        )
        .is_some_and(|v| v >= 2.0),
        "both passes counted: {metrics}"
    );
    for gauge in [
        "persona_bot_storage_write_backlog",
        "persona_bot_storage_writes_total",
        "persona_bot_queue_waiting_messages",
    ] {
        assert!(series(&metrics, gauge, &[]).is_some(), "{gauge}: {metrics}");
    }
    assert_eq!(
        series(&metrics, "persona_bot_gateway_connected", &[]),
        Some(1.0)
    );
    assert_eq!(
        series(&metrics, "persona_bot_database_reachable", &[]),
        Some(1.0)
    );
    assert!(
        !metrics.contains("run the probe"),
        "no message text in metrics"
    );
    assert!(!metrics.contains("alice"), "no user names in metrics");

    let (status, body) = get(address, "/healthz").await;
    assert_eq!(status, 200, "{body}");
    let health: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(health["healthy"], true, "{body}");
    assert_eq!(health["gateway_connected"], true, "{body}");
    assert_eq!(health["database_reachable"], true, "{body}");
    let (healthy, line) = health_command(address);
    assert!(healthy, "{line}");
    assert_eq!(line, "healthy: gateway connected, database reachable\n");

    // The database goes away (its writes flushed first, so stopping does not wait for them):
    // 503 once the last answer is a second old, and the command says why and fails.
    e.running().storage.writes.flush().await;
    e.running().storage.db.close().await;
    tokio::time::sleep(persona_bot::observe::health::FRESH_FOR).await;
    let (status, body) = get(address, "/healthz").await;
    assert_eq!(status, 503, "{body}");
    let health: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(health["database_reachable"], false, "{body}");
    assert_eq!(health["gateway_connected"], true, "{body}");
    let (healthy, line) = health_command(address);
    assert!(!healthy, "{line}");
    assert_eq!(line, "unhealthy: gateway connected, database unreachable\n");
    e.assert_fakes_used();
    e.stop().await;
}

// Metrics are off by default: the bot binds no listener, and `persona-bot health` fails with one
// line saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_off_by_default_and_nothing_listens() {
    let e = E2e::start(Behaviour::succeed(), vec![]).await;
    assert_eq!(e.running().metrics_address(), None);
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new(env!("CARGO_BIN_EXE_persona-bot"))
        .arg("health")
        .current_dir(dir.path())
        .env_remove("PERSONA_BOT_METRICS__LISTEN")
        .output()
        .expect("run persona-bot health");
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(stdout.contains("metrics.listen is empty"), "{stdout}");
    e.stop().await;
}

// `persona-bot health` with nothing listening is one line and exit code 1.
#[test]
fn the_health_command_fails_when_nothing_answers() {
    // A port that was free a moment ago: bound, read, closed.
    let address = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    let (healthy, line) = health_command(address);
    assert!(!healthy, "{line}");
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(line.starts_with("unhealthy: "), "{line}");
}

/// The listener alone on a free loopback port, with `limits`: the health of a fresh SQLite
/// database and a gateway not (yet) connected, so `/healthz` answers 503 and asks the database.
struct Listener {
    address: SocketAddr,
    health: Health,
    stop: CancellationToken,
    served: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl Listener {
    async fn start(limits: Limits) -> Self {
        persona_bot::app::install_crypto_provider();
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}/bot.db", dir.path().display());
        let storage = Storage::open(&url, &Config::shipped_defaults().database)
            .await
            .expect("open storage");
        let health = Health::new(GatewayStatus::default(), storage);
        let endpoint = Endpoint::bind("127.0.0.1:0".parse().expect("address"))
            .await
            .expect("bind");
        let address = endpoint.address().expect("bound");
        let stop = CancellationToken::new();
        let served = tokio::spawn(endpoint.serve(health.clone(), limits, stop.clone()));
        Self {
            address,
            health,
            stop,
            served,
            _dir: dir,
        }
    }

    /// `n` connections, each having sent the first lines of a request and nothing more.
    async fn half_sent(&self, n: usize) -> Vec<tokio::net::TcpStream> {
        let mut streams = Vec::with_capacity(n);
        for _ in 0..n {
            let mut stream = tokio::net::TcpStream::connect(self.address)
                .await
                .expect("connect");
            stream
                .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
                .await
                .expect("write");
            streams.push(stream);
        }
        streams
    }

    /// `/healthz` on a fresh connection, within `within`: its status.
    async fn healthz(&self, within: Duration) -> u16 {
        let client = reqwest::Client::builder()
            .timeout(within)
            .build()
            .expect("client");
        let response = client
            .get(format!("http://{}/healthz", self.address))
            .send()
            .await
            .expect("/healthz answers");
        response.status().as_u16()
    }

    async fn stop(self) {
        self.stop.cancel();
        tokio::time::timeout(Duration::from_secs(5), self.served)
            .await
            .expect("the listener stops")
            .expect("the listener task");
    }
}

/// When each stream is closed by the server (its read ends), from `since`; `None` for one still
/// open at `deadline`.
async fn closed_at(
    streams: Vec<tokio::net::TcpStream>,
    since: Instant,
    deadline: Duration,
) -> Vec<Option<Duration>> {
    let reads = streams.into_iter().map(|mut stream| async move {
        let mut buf = [0_u8; 512];
        let until = tokio::time::Instant::from_std(since + deadline);
        loop {
            match tokio::time::timeout_at(until, stream.read(&mut buf)).await {
                Err(_) => return None,
                Ok(Ok(0) | Err(_)) => return Some(since.elapsed()),
                // Whatever the server says before closing (a 408) is read past.
                Ok(Ok(_)) => {}
            }
        }
    });
    futures::future::join_all(reads).await
}

const HALF_SENT: usize = 300;

// SPEC D7: 300 connections that sent half a request (the port needs no token) are all closed by the
// server within the header timeout, and meanwhile a fresh /healthz answers. They used to stay open
// for ever (all 300 after 130 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_requests_are_closed_within_the_header_timeout() {
    let limits = Limits {
        header_timeout: Duration::from_secs(2),
        request_timeout: Duration::from_secs(10),
        max_connections: 2 * HALF_SENT,
    };
    let listener = Listener::start(limits).await;
    let since = Instant::now();
    let streams = listener.half_sent(HALF_SENT).await;
    assert_eq!(listener.healthz(Duration::from_secs(2)).await, 503);
    let closed = closed_at(
        streams,
        since,
        limits.header_timeout + Duration::from_secs(2),
    )
    .await;
    let open = closed.iter().filter(|c| c.is_none()).count();
    assert_eq!(open, 0, "{open} of {HALF_SENT} still open");
    let earliest = closed.iter().flatten().min().copied().unwrap_or_default();
    assert!(
        earliest >= limits.header_timeout - Duration::from_millis(300),
        "closed by the header timeout, not before: {earliest:?}"
    );
    assert_eq!(listener.healthz(Duration::from_secs(2)).await, 503);
    listener.stop().await;
}

// SPEC D7: past metrics.max_connections a new connection is closed as soon as it is accepted, those
// within the cap at the header timeout; then /healthz answers again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_cap_are_closed_at_once() {
    let limits = Limits {
        header_timeout: Duration::from_secs(2),
        request_timeout: Duration::from_secs(10),
        max_connections: 16,
    };
    let listener = Listener::start(limits).await;
    let since = Instant::now();
    let streams = listener.half_sent(HALF_SENT).await;
    let closed = closed_at(
        streams,
        since,
        limits.header_timeout + Duration::from_secs(2),
    )
    .await;
    let at_once = closed
        .iter()
        .filter(|c| c.is_some_and(|at| at < Duration::from_secs(1)))
        .count();
    let still_open = closed.iter().filter(|c| c.is_none()).count();
    assert!(
        at_once >= HALF_SENT - limits.max_connections,
        "closed at once: {at_once} of {HALF_SENT}"
    );
    assert_eq!(still_open, 0, "still open after the header timeout");
    assert_eq!(listener.healthz(Duration::from_secs(2)).await, 503);
    listener.stop().await;
}

// /healthz needs no token, so a burst of 50 asks the database at most about once a second, not 50
// times (every request used to run a query on the pool turns use).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_healthz_probes_the_database_about_once_a_second() {
    let listener = Listener::start(Limits {
        header_timeout: Duration::from_secs(2),
        request_timeout: Duration::from_secs(10),
        max_connections: 64,
    })
    .await;
    let started = Instant::now();
    let burst = (0..50).map(|_| listener.healthz(Duration::from_secs(5)));
    let statuses = futures::future::join_all(burst).await;
    let took = started.elapsed();
    assert!(statuses.iter().all(|s| *s == 503), "{statuses:?}");
    let probes = listener.health.probes_run();
    assert!(
        probes <= 2 + took.as_secs(),
        "{probes} health computations for 50 requests in {took:?}"
    );
    listener.stop().await;
}
