//! `/healthz`: is the gateway connected, is the database reachable. Each probe is bounded by
//! [`PROBE_WITHIN`], so a hung database answers "unreachable" rather than hanging the check; and
//! the answer is reused for [`FRESH_FOR`], so however many ask (`/healthz` needs no token), the
//! database is asked at most once a second.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::discord::GatewayStatus;
use crate::storage::Storage;

/// Longest one probe may take.
pub const PROBE_WITHIN: Duration = Duration::from_secs(2);

/// How long an answer is given again without asking the probes.
pub const FRESH_FOR: Duration = Duration::from_secs(1);

/// What `/healthz` answers (as JSON): healthy when both hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthReport {
    pub healthy: bool,
    pub gateway_connected: bool,
    pub database_reachable: bool,
}

impl HealthReport {
    /// One line for operators: `healthy: gateway connected, database reachable`.
    pub fn line(&self) -> String {
        format!(
            "{}: gateway {}, database {}",
            if self.healthy { "healthy" } else { "unhealthy" },
            if self.gateway_connected {
                "connected"
            } else {
                "not connected"
            },
            if self.database_reachable {
                "reachable"
            } else {
                "unreachable"
            },
        )
    }
}

/// The probes, and their last answer. Cheap to clone (clones share the answer).
#[derive(Clone)]
pub struct Health {
    pub gateway: GatewayStatus,
    pub storage: Storage,
    /// The last answer and when it was made. An async lock, held while the probes run: those
    /// who ask meanwhile wait for that answer instead of asking the database again.
    last: Arc<tokio::sync::Mutex<Option<(Instant, HealthReport)>>>,
    /// How many times the probes ran (tests count them).
    probes_run: Arc<AtomicU64>,
}

impl Health {
    pub fn new(gateway: GatewayStatus, storage: Storage) -> Self {
        Self {
            gateway,
            storage,
            last: Arc::default(),
            probes_run: Arc::default(),
        }
    }

    /// The answer: the last one while it is fresher than [`FRESH_FOR`], else a new one.
    pub async fn check(&self) -> HealthReport {
        let mut last = self.last.lock().await;
        if let Some((at, report)) = *last
            && at.elapsed() < FRESH_FOR
        {
            return report;
        }
        let report = self.probe().await;
        *last = Some((Instant::now(), report));
        report
    }

    /// How many times the probes ran.
    pub fn probes_run(&self) -> u64 {
        self.probes_run.load(Ordering::Relaxed)
    }

    /// Asks the gateway and the database now.
    async fn probe(&self) -> HealthReport {
        self.probes_run.fetch_add(1, Ordering::Relaxed);
        let gateway = tokio::time::timeout(PROBE_WITHIN, self.gateway.connected());
        let database = tokio::time::timeout(PROBE_WITHIN, self.database_reachable());
        let (gateway, database) = tokio::join!(gateway, database);
        let gateway_connected = gateway.unwrap_or(false);
        let database_reachable = database.unwrap_or(false);
        HealthReport {
            healthy: gateway_connected && database_reachable,
            gateway_connected,
            database_reachable,
        }
    }

    /// One round trip on the pool turns use.
    async fn database_reachable(&self) -> bool {
        sqlx::query("SELECT 1")
            .execute(self.storage.db.pool())
            .await
            .is_ok()
    }
}
