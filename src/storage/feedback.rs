//! Members' verdicts on replies (SPEC E2): one row per member and turn, a later press replacing
//! the earlier; counted per turn (for the thought log) and per server (for `/status`).

use async_trait::async_trait;

use super::{Database, port_error, sql_id};
use crate::domain::ports::{FeedbackStore, PortError, Tally, Verdict};
use crate::domain::scope::{ServerId, UserId};
use crate::domain::turn::TurnId;

pub struct FeedbackRepo {
    db: Database,
}

impl FeedbackRepo {
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

/// Counts of `(verdict, count)` rows.
fn tally(rows: Vec<(String, i64)>) -> Tally {
    let mut tally = Tally::default();
    for (verdict, count) in rows {
        let count = u64::try_from(count).unwrap_or(0);
        match verdict.as_str() {
            "up" => tally.up = count,
            "down" => tally.down = count,
            _ => {}
        }
    }
    tally
}

#[async_trait]
impl FeedbackStore for FeedbackRepo {
    async fn give(
        &self,
        turn: TurnId,
        server: Option<ServerId>,
        user: UserId,
        verdict: Verdict,
        at_ms: i64,
    ) -> Result<Tally, PortError> {
        let saved = sqlx::query(
            "INSERT INTO turn_feedback (turn_id, server_id, user_id, verdict, given_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (turn_id, user_id) DO UPDATE SET \
             verdict = excluded.verdict, given_at = excluded.given_at",
        )
        .bind(turn.to_string())
        .bind(sql_id(server.map_or(0, |s| s.0)))
        .bind(sql_id(user.0))
        .bind(verdict.as_str())
        .bind(at_ms)
        .execute(self.db.pool())
        .await;
        self.db.health().observe(&saved);
        saved.map_err(port_error)?;
        let rows: Vec<(String, i64)> = sqlx::query_as(
            "SELECT verdict, COUNT(*) FROM turn_feedback WHERE turn_id = $1 GROUP BY verdict",
        )
        .bind(turn.to_string())
        .fetch_all(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(tally(rows))
    }

    async fn server_tally(&self, server: ServerId) -> Result<Tally, PortError> {
        let rows: Vec<(String, i64)> = sqlx::query_as(
            "SELECT verdict, COUNT(*) FROM turn_feedback WHERE server_id = $1 GROUP BY verdict",
        )
        .bind(sql_id(server.0))
        .fetch_all(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(tally(rows))
    }
}
