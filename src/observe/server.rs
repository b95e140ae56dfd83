//! The listener: `/metrics` (Prometheus text format) and `/healthz`, on `metrics.listen`.
//!
//! Neither path needs a token, so the listener holds nothing for a client that does not finish
//! (SPEC D7): each connection serves one request; its headers must arrive within
//! `metrics.header_timeout_secs` and the whole exchange end within
//! `metrics.request_timeout_secs`; past `metrics.max_open_connections` open at once, a new
//! connection is closed as soon as it is accepted. The answers themselves are cheap: the health
//! answer is reused for a second ([`Health::check`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use metrics_exporter_prometheus::PrometheusHandle;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::MetricsConfig;

use super::health::Health;
use super::{
    DATABASE_REACHABLE, GATEWAY_CONNECTED, STORAGE_BACKLOG, STORAGE_DROPPED, STORAGE_FAILED,
    STORAGE_WRITTEN, as_f64,
};

/// How often histograms are folded in between scrapes (so they do not grow unscraped).
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// Most bytes buffered for one connection's request (hyper's least): a scrape's request is a
/// few hundred.
const REQUEST_BUFFER_MAX: usize = 8192;

/// How long accepting pauses after it failed (out of file descriptors: a pause lets some close).
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// What one client may hold of the listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest wait for a request's headers, from the connection's start.
    pub header_timeout: Duration,
    /// Longest a connection lasts: its request, the answer and sending it.
    pub request_timeout: Duration,
    /// Most connections open at once.
    pub max_connections: usize,
}

impl Limits {
    pub fn from_config(config: &MetricsConfig) -> Self {
        Self {
            header_timeout: Duration::from_secs(config.header_timeout_secs),
            request_timeout: Duration::from_secs(config.request_timeout_secs),
            max_connections: config.max_open_connections as usize,
        }
    }
}

/// A bound listener, not yet serving.
pub struct Endpoint {
    listener: TcpListener,
    handle: PrometheusHandle,
}

impl Endpoint {
    /// Binds `address` (port 0: any free port) and installs the recorder.
    pub async fn bind(address: SocketAddr) -> anyhow::Result<Self> {
        let handle = super::install_recorder()?;
        let listener = TcpListener::bind(address)
            .await
            .with_context(|| format!("metrics.listen: cannot listen on {address}"))?;
        Ok(Self { listener, handle })
    }

    /// The address it listens on.
    pub fn address(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }

    /// Serves both paths until `stop`, within `limits`.
    pub async fn serve(self, health: Health, limits: Limits, stop: CancellationToken) {
        let state = Arc::new(Served {
            handle: self.handle.clone(),
            health,
        });
        let app = Router::new()
            .route("/metrics", get(metrics))
            .route("/healthz", get(healthz))
            .with_state(state);
        let upkeep = {
            let handle = self.handle.clone();
            let stop = stop.clone();
            async move {
                let mut every = tokio::time::interval(UPKEEP_EVERY);
                loop {
                    tokio::select! {
                        () = stop.cancelled() => return,
                        _ = every.tick() => handle.run_upkeep(),
                    }
                }
            }
        };
        tokio::join!(accept(self.listener, app, limits, stop), upkeep);
    }
}

/// Accepts connections until `stop`, each served by a task of its own while fewer than
/// `limits.max_connections` are open; at `stop` those still open are closed.
async fn accept(listener: TcpListener, app: Router, limits: Limits, stop: CancellationToken) {
    let open = Arc::new(Semaphore::new(limits.max_connections));
    let connections = TaskTracker::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(false)
        .max_buf_size(REQUEST_BUFFER_MAX);
    loop {
        let stream = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    tracing::debug!(%error, "the metrics listener could not accept a connection");
                    tokio::time::sleep(ACCEPT_PAUSE).await;
                    continue;
                }
            },
        };
        // Past the cap the connection is dropped unread: closed at once.
        let Ok(permit) = open.clone().try_acquire_owned() else {
            continue;
        };
        let connection = serve_one(&http, stream, app.clone(), limits.request_timeout);
        let stop = stop.clone();
        connections.spawn(async move {
            tokio::select! {
                () = connection => {}
                () = stop.cancelled() => {}
            }
            drop(permit);
        });
    }
    connections.close();
    connections.wait().await;
}

/// One connection: one request and its answer, within `within`. A client that goes away or
/// sends its headers too slowly is nothing to report.
fn serve_one(
    http: &hyper::server::conn::http1::Builder,
    stream: TcpStream,
    app: Router,
    within: Duration,
) -> impl Future<Output = ()> + Send + use<> {
    let connection = http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app));
    async move {
        let _ = tokio::time::timeout(within, connection).await;
    }
}

struct Served {
    handle: PrometheusHandle,
    health: Health,
}

async fn metrics(State(served): State<Arc<Served>>) -> Response {
    // Gauges read at the scrape: the writer's queue and counters, and the probes.
    let writes = &served.health.storage.writes;
    metrics::gauge!(STORAGE_BACKLOG).set(as_f64(writes.backlog()));
    let stats = writes.stats();
    metrics::counter!(STORAGE_WRITTEN).absolute(stats.written.load(Ordering::Relaxed));
    metrics::counter!(STORAGE_DROPPED).absolute(stats.dropped.load(Ordering::Relaxed));
    metrics::counter!(STORAGE_FAILED).absolute(stats.failed_attempts.load(Ordering::Relaxed));
    let report = served.health.check().await;
    metrics::gauge!(GATEWAY_CONNECTED).set(u8::from(report.gateway_connected));
    metrics::gauge!(DATABASE_REACHABLE).set(u8::from(report.database_reachable));
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        served.handle.render(),
    )
        .into_response()
}

async fn healthz(State(served): State<Arc<Served>>) -> Response {
    let report = served.health.check().await;
    let status = if report.healthy {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = serde_json::to_string(&report).unwrap_or_default();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}
