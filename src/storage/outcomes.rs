//! Completed tool outcomes keyed by turn and request identity (name plus canonical arguments), so
//! a turn resumed after a restart reuses them instead of running a tool twice (SPEC R4).

use std::collections::HashMap;

use async_trait::async_trait;
use sqlx::{AnyConnection, AssertSqlSafe};

use super::writer::{Write, WriteQueue};
use super::{Database, ROWS_PER_STATEMENT, multi_row_sql, port_error};
use crate::chat::ports::PortError;
use crate::chat::stores::{OutcomeStore, StoredOutcome};
use crate::chat::turn::TurnId;

pub struct OutcomeRepo {
    db: Database,
    writes: WriteQueue,
}

impl OutcomeRepo {
    pub fn new(db: Database, writes: WriteQueue) -> Self {
        Self { db, writes }
    }
}

#[async_trait]
impl OutcomeStore for OutcomeRepo {
    async fn record_outcome(
        &self,
        turn: TurnId,
        outcome: &StoredOutcome,
        at_ms: i64,
    ) -> Result<(), PortError> {
        self.writes.submit(Write::Outcome {
            turn,
            outcome: outcome.clone(),
            at_ms,
        });
        Ok(())
    }

    async fn outcomes(&self, turn: TurnId) -> Result<Vec<StoredOutcome>, PortError> {
        let rows: Vec<(String, String, i64)> = sqlx::query_as(
            "SELECT identity, response, invocation FROM tool_outcomes WHERE turn_id = $1 \
             ORDER BY created_at",
        )
        .bind(turn.to_string())
        .fetch_all(self.db.pool())
        .await
        .map_err(port_error)?;
        rows.into_iter()
            .map(|(identity, response, invocation)| {
                let response =
                    serde_json::from_str(&response).map_err(|e| PortError::Unavailable {
                        what: "database",
                        detail: format!("stored outcome is not JSON: {e}"),
                    })?;
                Ok(StoredOutcome {
                    identity,
                    response,
                    invocation: u32::try_from(invocation).unwrap_or(u32::MAX),
                })
            })
            .collect()
    }
}

/// Upserts outcomes (the writer's transaction). A key written twice in one batch keeps its
/// latest value: one PostgreSQL upsert may not touch a row twice.
pub(crate) async fn upsert(
    conn: &mut AnyConnection,
    rows: &[(TurnId, &StoredOutcome, i64)],
) -> Result<(), sqlx::Error> {
    let mut latest: HashMap<(TurnId, &str), usize> = HashMap::new();
    for (i, (turn, outcome, _)) in rows.iter().enumerate() {
        latest.insert((*turn, outcome.identity.as_str()), i);
    }
    let mut unique: Vec<usize> = latest.into_values().collect();
    unique.sort_unstable();
    for chunk in unique.chunks(ROWS_PER_STATEMENT) {
        let sql = multi_row_sql(
            "INSERT INTO tool_outcomes (turn_id, identity, response, invocation, created_at)",
            5,
            chunk.len(),
            " ON CONFLICT (turn_id, identity) DO UPDATE SET response = excluded.response, \
             invocation = excluded.invocation",
        );
        let mut upsert = sqlx::query(AssertSqlSafe(sql));
        for &i in chunk {
            let (turn, outcome, at_ms) = &rows[i];
            upsert = upsert
                .bind(turn.to_string())
                .bind(outcome.identity.clone())
                .bind(outcome.response.to_string())
                .bind(i64::from(outcome.invocation))
                .bind(*at_ms);
        }
        upsert.execute(&mut *conn).await?;
    }
    Ok(())
}
