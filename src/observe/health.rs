//! `/healthz`: is the gateway connected, is the database reachable. Each probe is bounded by
//! [`PROBE_WITHIN`], so a hung database answers "unreachable" rather than hanging the check.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::discord::GatewayStatus;
use crate::storage::Storage;

/// Longest one probe may take.
pub const PROBE_WITHIN: Duration = Duration::from_secs(2);

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

/// The probes.
#[derive(Clone)]
pub struct Health {
    pub gateway: GatewayStatus,
    pub storage: Storage,
}

impl Health {
    pub async fn check(&self) -> HealthReport {
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
