//! Usage counters (`tool_used` and the other metrics), keyed by server, user, persona, metric and
//! key. DMs are never counted: the core only reports server channels (SPEC T10). Increments are
//! summed per batch and added with an atomic upsert, so several processes never double-count.

use std::collections::HashMap;

use async_trait::async_trait;
use sqlx::{AnyConnection, AssertSqlSafe};

use super::write_queue::{Write, WriteQueue};
use super::{Database, ROWS_PER_STATEMENT, multi_row_sql, port_error, sql_id, storable};
use crate::domain::ports::{PortError, UsageRecord, UsageStats};
use crate::domain::scope::{PersonaId, ServerId, UserId};

pub struct UsageRepo {
    db: Database,
    writes: WriteQueue,
}

impl UsageRepo {
    pub fn new(db: Database, writes: WriteQueue) -> Self {
        Self { db, writes }
    }

    /// A server's total for `metric`/`key`, over every user and persona.
    pub async fn total(&self, server: ServerId, metric: &str, key: &str) -> Result<i64, PortError> {
        sqlx::query_scalar(
            "SELECT CAST(COALESCE(SUM(count), 0) AS BIGINT) FROM usage_counters \
             WHERE server_id = $1 AND metric = $2 AND key = $3",
        )
        .bind(sql_id(server.0))
        .bind(storable(metric))
        .bind(storable(key))
        .fetch_one(self.db.pool())
        .await
        .map_err(port_error)
    }

    /// One user's count with one persona.
    pub async fn count(
        &self,
        server: ServerId,
        user: UserId,
        persona: &PersonaId,
        metric: &str,
        key: &str,
    ) -> Result<i64, PortError> {
        let count: Option<i64> = sqlx::query_scalar(
            "SELECT count FROM usage_counters WHERE server_id = $1 AND user_id = $2 \
             AND persona = $3 AND metric = $4 AND key = $5",
        )
        .bind(sql_id(server.0))
        .bind(sql_id(user.0))
        .bind(storable(&persona.0))
        .bind(storable(metric))
        .bind(storable(key))
        .fetch_optional(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(count.unwrap_or(0))
    }
}

#[async_trait]
impl UsageStats for UsageRepo {
    async fn record(&self, usage: UsageRecord) {
        self.writes.submit(Write::Usage(usage));
    }
}

/// One counter's increment within a batch.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct CounterKey {
    server: i64,
    user: i64,
    persona: String,
    metric: &'static str,
    key: String,
}

/// Sums a batch's increments per counter: (key, increment, latest time). Keys are summed as
/// stored ([`storable`]), so two that store alike are one counter, as PostgreSQL's upsert needs.
pub(crate) fn sum_by_key(records: &[&UsageRecord]) -> Vec<(CounterKey, i64, i64)> {
    let mut sums: HashMap<CounterKey, (i64, i64)> = HashMap::new();
    for r in records {
        let key = CounterKey {
            server: sql_id(r.server.0),
            user: sql_id(r.user.0),
            persona: storable(&r.persona.0),
            metric: r.metric.as_str(),
            key: storable(&r.key),
        };
        let entry = sums.entry(key).or_insert((0, r.at_ms));
        entry.0 += 1;
        entry.1 = entry.1.max(r.at_ms);
    }
    sums.into_iter().map(|(k, (n, at))| (k, n, at)).collect()
}

/// Adds the increments (the writer's transaction): one multi-row upsert per chunk; keys are
/// unique within a batch, as PostgreSQL requires of one upsert.
pub(crate) async fn upsert(
    conn: &mut AnyConnection,
    rows: &[(CounterKey, i64, i64)],
) -> Result<(), sqlx::Error> {
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        let sql = multi_row_sql(
            "INSERT INTO usage_counters (server_id, user_id, persona, metric, key, count, \
             updated_at)",
            7,
            chunk.len(),
            " ON CONFLICT (server_id, user_id, persona, metric, key) DO UPDATE SET \
             count = usage_counters.count + excluded.count, updated_at = excluded.updated_at",
        );
        let mut upsert = sqlx::query(AssertSqlSafe(sql));
        for (key, increment, at_ms) in chunk {
            upsert = upsert
                .bind(key.server)
                .bind(key.user)
                .bind(key.persona.clone())
                .bind(key.metric.to_owned())
                .bind(key.key.clone())
                .bind(*increment)
                .bind(*at_ms);
        }
        upsert.execute(&mut *conn).await?;
    }
    Ok(())
}
