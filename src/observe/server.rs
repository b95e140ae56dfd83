//! The listener: `/metrics` (Prometheus text format) and `/healthz`, on `metrics.listen`.

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
use metrics_exporter_prometheus::PrometheusHandle;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::health::Health;
use super::{
    DATABASE_REACHABLE, GATEWAY_CONNECTED, STORAGE_BACKLOG, STORAGE_DROPPED, STORAGE_FAILED,
    STORAGE_WRITTEN, as_f64,
};

/// How often histograms are folded in between scrapes (so they do not grow unscraped).
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

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

    /// Serves both paths until `stop`.
    pub async fn serve(self, health: Health, stop: CancellationToken) {
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
        let served = axum::serve(self.listener, app).with_graceful_shutdown(stop.cancelled_owned());
        let (served, ()) = tokio::join!(served, upkeep);
        if let Err(error) = served {
            tracing::error!(%error, "the metrics listener stopped");
        }
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
