//! Completed tool outcomes keyed by turn and request identity (name plus canonical arguments), so
//! a turn resumed after a restart reuses them instead of running a tool twice (SPEC R4).
//!
//! An identity is unbounded model text, too big for an index key (PostgreSQL's btree refuses
//! rows past about 2.7 KB), so the key is `(turn_id, identity_hash)`: the SHA-256 of the stored
//! identity in 64 lowercase hex characters. The identity itself sits in a column no index covers
//! and is what [`OutcomeStore::outcomes`] returns.

use std::collections::HashMap;

use async_trait::async_trait;
use sha2::{Digest, Sha256};
use sqlx::{AnyConnection, AssertSqlSafe};

use super::write_queue::{Write, WriteQueue};
use super::{Database, ROWS_PER_STATEMENT, multi_row_sql, port_error, storable};
use crate::domain::ports::{Delivery, Durability, OutcomeStore, PortError, StoredOutcome};
use crate::domain::scope::MessageId;
use crate::domain::turn::TurnId;

/// Deliveries older than this are pruned at start: no turn waits a week to resume.
pub const DELIVERIES_KEPT_MS: i64 = 7 * 24 * 60 * 60 * 1000;

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
        durability: Durability,
    ) -> Result<(), PortError> {
        match durability {
            Durability::Batched => {
                self.writes.submit(Write::Outcome {
                    turn,
                    outcome: outcome.clone(),
                    at_ms,
                });
                Ok(())
            }
            Durability::Now => {
                let mut conn = self.db.pool().acquire().await.map_err(port_error)?;
                upsert(&mut conn, &[(turn, outcome, at_ms)])
                    .await
                    .map_err(port_error)
            }
        }
    }

    async fn record_delivery(
        &self,
        turn: TurnId,
        delivery: Delivery,
        at_ms: i64,
    ) -> Result<(), PortError> {
        let (kind, item, value) = match delivery {
            Delivery::Piece { index, message } => {
                ("piece", i64::from(index), message.0.to_string())
            }
            Delivery::Sticker { sticker } => ("sticker", 0, sticker.to_string()),
            Delivery::Reaction { emoji } => ("reaction", 0, emoji.to_string()),
            Delivery::Finished => ("finished", 0, "0".to_owned()),
            // "digest", or "digest:pieces" for a message a pause sent.
            Delivery::Intended {
                index,
                digest,
                paused_after,
            } => {
                let value = match paused_after {
                    Some(after) => format!("{digest}:{after}"),
                    None => digest.to_string(),
                };
                ("intent", i64::from(index), value)
            }
        };
        sqlx::query(
            "INSERT INTO turn_deliveries (turn_id, kind, item, value, created_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (turn_id, kind, item) DO NOTHING",
        )
        .bind(turn.to_string())
        .bind(kind)
        .bind(item)
        .bind(value)
        .bind(at_ms)
        .execute(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(())
    }

    async fn deliveries(&self, turn: TurnId) -> Result<Vec<Delivery>, PortError> {
        // A turn delivers a bounded number of messages (its passes and their cuts); the LIMIT
        // bounds what a corrupted table could hand back.
        let rows: Vec<(String, i64, String)> = sqlx::query_as(
            "SELECT kind, item, value FROM turn_deliveries WHERE turn_id = $1 \
             ORDER BY kind, item LIMIT 10000",
        )
        .bind(turn.to_string())
        .fetch_all(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(rows
            .into_iter()
            .filter_map(|(kind, item, value)| {
                let (value, paused_after) = match value.split_once(':') {
                    Some((value, after)) => (value, Some(after.parse::<u32>().ok()?)),
                    None => (value.as_str(), None),
                };
                let value = value.parse::<u64>().ok()?;
                match kind.as_str() {
                    "piece" => Some(Delivery::Piece {
                        index: u32::try_from(item).ok()?,
                        message: MessageId(value),
                    }),
                    "sticker" => Some(Delivery::Sticker { sticker: value }),
                    "reaction" => Some(Delivery::Reaction { emoji: value }),
                    "finished" => Some(Delivery::Finished),
                    "intent" => Some(Delivery::Intended {
                        index: u32::try_from(item).ok()?,
                        digest: value,
                        paused_after,
                    }),
                    _ => None,
                }
            })
            .collect())
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

impl OutcomeRepo {
    /// Removes deliveries recorded before `before_ms` (start-up): their turns are long over.
    pub async fn prune_deliveries(&self, before_ms: i64) -> Result<u64, PortError> {
        let done = sqlx::query("DELETE FROM turn_deliveries WHERE created_at < $1")
            .bind(before_ms)
            .execute(self.db.pool())
            .await
            .map_err(port_error)?;
        Ok(done.rows_affected())
    }
}

/// The key of a stored identity: its SHA-256 in lowercase hex (64 characters). Migration 0005
/// computes the same in SQL for the rows it keeps.
pub(crate) fn identity_hash(identity: &str) -> String {
    use std::fmt::Write as _;
    let digest = Sha256::digest(identity.as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in digest {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// An outcome as its row: identity and response as stored ([`storable`]), and the key.
struct OutcomeRow {
    turn: String,
    hash: String,
    identity: String,
    response: String,
    invocation: i64,
    at_ms: i64,
}

/// Upserts outcomes (the writer's transaction). A key written twice in one batch keeps its
/// latest value: one PostgreSQL upsert may not touch a row twice.
pub(crate) async fn upsert(
    conn: &mut AnyConnection,
    rows: &[(TurnId, &StoredOutcome, i64)],
) -> Result<(), sqlx::Error> {
    let mut latest: HashMap<(TurnId, String), OutcomeRow> = HashMap::new();
    let mut order = Vec::new();
    for (turn, outcome, at_ms) in rows {
        let identity = storable(&outcome.identity);
        let hash = identity_hash(&identity);
        let row = OutcomeRow {
            turn: turn.to_string(),
            hash: hash.clone(),
            identity,
            response: storable(&outcome.response.to_string()),
            invocation: i64::from(outcome.invocation),
            at_ms: *at_ms,
        };
        if latest.insert((*turn, hash.clone()), row).is_none() {
            order.push((*turn, hash));
        }
    }
    let unique: Vec<OutcomeRow> = order
        .into_iter()
        .filter_map(|key| latest.remove(&key))
        .collect();
    for chunk in unique.chunks(ROWS_PER_STATEMENT) {
        let sql = multi_row_sql(
            "INSERT INTO tool_outcomes (turn_id, identity_hash, identity, response, invocation, \
             created_at)",
            6,
            chunk.len(),
            " ON CONFLICT (turn_id, identity_hash) DO UPDATE SET response = excluded.response, \
             invocation = excluded.invocation",
        );
        let mut upsert = sqlx::query(AssertSqlSafe(sql));
        for row in chunk {
            upsert = upsert
                .bind(row.turn.clone())
                .bind(row.hash.clone())
                .bind(row.identity.clone())
                .bind(row.response.clone())
                .bind(row.invocation)
                .bind(row.at_ms);
        }
        upsert.execute(&mut *conn).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn identity_hash_is_sha256_in_lowercase_hex() {
        assert_eq!(
            super::identity_hash("hello world"),
            "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9"
        );
        assert_eq!(super::identity_hash(&"狐".repeat(5_000)).len(), 64);
    }
}
