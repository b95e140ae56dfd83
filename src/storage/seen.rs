//! The last message seen in each channel (SPEC D9), one row a channel. A save is one multi-row
//! upsert; a stored mark only moves forward, so two processes (or a late save) never move it
//! back.

use async_trait::async_trait;
use sqlx::AssertSqlSafe;

use super::{Database, ROWS_PER_STATEMENT, from_sql_id, multi_row_sql, port_error, sql_id};
use crate::domain::catch_up::Seen;
use crate::domain::ports::{PortError, SeenStore};
use crate::domain::scope::{ChannelId, MessageId, ServerId};

pub struct SeenRepo {
    db: Database,
}

impl SeenRepo {
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

#[async_trait]
impl SeenStore for SeenRepo {
    async fn save_seen(&self, marks: &[Seen], at_ms: i64) -> Result<(), PortError> {
        for chunk in marks.chunks(ROWS_PER_STATEMENT) {
            let sql = multi_row_sql(
                "INSERT INTO seen_channels (channel_id, server_id, message_id, updated_at)",
                4,
                chunk.len(),
                " ON CONFLICT (channel_id) DO UPDATE SET message_id = excluded.message_id, \
                 server_id = excluded.server_id, updated_at = excluded.updated_at \
                 WHERE excluded.message_id > seen_channels.message_id",
            );
            let mut query = sqlx::query(AssertSqlSafe(sql));
            for mark in chunk {
                query = query
                    .bind(sql_id(mark.channel.0))
                    .bind(sql_id(mark.server.map_or(0, |s| s.0)))
                    .bind(sql_id(mark.message.0))
                    .bind(at_ms);
            }
            let saved = query.execute(self.db.pool()).await;
            self.db.health().observe(&saved);
            saved.map_err(port_error)?;
        }
        Ok(())
    }

    async fn seen_since(&self, since: u64, limit: usize) -> Result<Vec<Seen>, PortError> {
        let rows: Vec<(i64, i64, i64)> = sqlx::query_as(
            "SELECT channel_id, server_id, message_id FROM seen_channels \
             WHERE message_id >= $1 ORDER BY message_id DESC LIMIT $2",
        )
        .bind(sql_id(since))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(rows
            .into_iter()
            .map(|(channel, server, message)| Seen {
                channel: ChannelId(from_sql_id(channel)),
                server: Some(from_sql_id(server)).filter(|s| *s != 0).map(ServerId),
                message: MessageId(from_sql_id(message)),
            })
            .collect())
    }

    async fn prune_seen(&self, before: u64) -> Result<u64, PortError> {
        let done = sqlx::query("DELETE FROM seen_channels WHERE message_id < $1")
            .bind(sql_id(before))
            .execute(self.db.pool())
            .await
            .map_err(port_error)?;
        Ok(done.rows_affected())
    }
}
