//! Long-term facts and short-term channel summaries (SPEC D4). A fact's bucket (server-wide, or
//! about one user, per persona) has a limit that is checked and filled in one step.

use async_trait::async_trait;

use super::{Backend, Database, from_sql_id, port_error, sql_id, storable};
use crate::domain::ports::{Fact, FactAdded, MemoryStore, NewFact, PortError};
use crate::domain::scope::{ChannelId, MessageId, PersonaId, ServerId, UserId};

pub struct MemoryRepo {
    db: Database,
}

impl MemoryRepo {
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

/// A stable 64-bit key for a fact bucket, for PostgreSQL's advisory lock.
fn bucket_lock_key(server: i64, persona: &str, about: i64) -> i64 {
    let bytes = server
        .to_le_bytes()
        .into_iter()
        .chain(persona.bytes())
        .chain(about.to_le_bytes());
    crate::stable_hash(bytes) as i64
}

#[async_trait]
impl MemoryStore for MemoryRepo {
    async fn set_summary(
        &self,
        channel: ChannelId,
        persona: &PersonaId,
        summary: &str,
        at_ms: i64,
    ) -> Result<(), PortError> {
        sqlx::query(
            "INSERT INTO channel_summaries (channel_id, persona, summary, updated_at) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (channel_id, persona) DO UPDATE SET \
             summary = excluded.summary, updated_at = excluded.updated_at",
        )
        .bind(sql_id(channel.0))
        .bind(storable(&persona.0))
        .bind(storable(summary))
        .bind(at_ms)
        .execute(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(())
    }

    async fn summary(
        &self,
        channel: ChannelId,
        persona: &PersonaId,
    ) -> Result<Option<String>, PortError> {
        sqlx::query_scalar(
            "SELECT summary FROM channel_summaries WHERE channel_id = $1 AND persona = $2",
        )
        .bind(sql_id(channel.0))
        .bind(storable(&persona.0))
        .fetch_optional(self.db.pool())
        .await
        .map_err(port_error)
    }

    async fn add_fact(&self, fact: NewFact, limit: u32) -> Result<FactAdded, PortError> {
        let server = sql_id(fact.server.map_or(0, |s| s.0));
        let about = sql_id(fact.about.map_or(0, |u| u.0));
        let mut tx = self.db.pool().begin().await.map_err(port_error)?;
        if self.db.backend() == Backend::Postgres {
            // Serializes writers of one bucket across processes until commit, so the count
            // below cannot be overtaken. (SQLite already has a single writer.)
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(bucket_lock_key(server, &storable(&fact.persona.0), about))
                .execute(&mut *tx)
                .await
                .map_err(port_error)?;
        }
        let id: Option<i64> = sqlx::query_scalar(
            "INSERT INTO memory_facts (server_id, persona, about_user, fact, created_at, \
             private_to, source_message) SELECT $1, $2, $3, $4, $5, $7, $8 WHERE (SELECT \
             COUNT(*) FROM memory_facts WHERE server_id = $1 AND persona = $2 AND about_user = \
             $3) < $6 RETURNING id",
        )
        .bind(server)
        .bind(storable(&fact.persona.0))
        .bind(about)
        .bind(storable(&fact.text))
        .bind(fact.at_ms)
        .bind(i64::from(limit))
        .bind(sql_id(fact.private_to.map_or(0, |c| c.0)))
        .bind(sql_id(fact.source.map_or(0, |m| m.0)))
        .fetch_optional(&mut *tx)
        .await
        .map_err(port_error)?;
        tx.commit().await.map_err(port_error)?;
        Ok(match id {
            Some(id) => FactAdded::Stored { id },
            None => FactAdded::LimitReached { limit },
        })
    }

    async fn facts(
        &self,
        server: Option<ServerId>,
        persona: &PersonaId,
        about: Option<UserId>,
        channel: ChannelId,
        limit: u32,
    ) -> Result<Vec<Fact>, PortError> {
        let rows: Vec<(i64, i64, String, i64)> = sqlx::query_as(
            "SELECT id, about_user, fact, created_at FROM memory_facts WHERE server_id = $1 \
             AND persona = $2 AND (about_user = 0 OR about_user = $3) \
             AND (private_to = 0 OR private_to = $5) ORDER BY id DESC LIMIT $4",
        )
        .bind(sql_id(server.map_or(0, |s| s.0)))
        .bind(storable(&persona.0))
        .bind(sql_id(about.map_or(0, |u| u.0)))
        .bind(i64::from(limit))
        .bind(sql_id(channel.0))
        .fetch_all(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(rows.into_iter().map(fact_of).collect())
    }

    async fn forget_fact(
        &self,
        server: Option<ServerId>,
        persona: &PersonaId,
        about: Option<UserId>,
        channel: ChannelId,
        id: i64,
    ) -> Result<bool, PortError> {
        let deleted = sqlx::query(
            "DELETE FROM memory_facts WHERE id = $1 AND server_id = $2 AND persona = $3 \
             AND (about_user = 0 OR about_user = $4) AND (private_to = 0 OR private_to = $5)",
        )
        .bind(id)
        .bind(sql_id(server.map_or(0, |s| s.0)))
        .bind(storable(&persona.0))
        .bind(sql_id(about.map_or(0, |u| u.0)))
        .bind(sql_id(channel.0))
        .execute(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(deleted.rows_affected() > 0)
    }

    async fn list_facts(
        &self,
        server: Option<ServerId>,
        about: Option<UserId>,
        with_private: bool,
        limit: u32,
    ) -> Result<Vec<Fact>, PortError> {
        let rows: Vec<(i64, i64, String, i64)> = sqlx::query_as(
            "SELECT id, about_user, fact, created_at FROM memory_facts WHERE server_id = $1 \
             AND about_user = $2 AND ($3 = 1 OR private_to = 0) ORDER BY id DESC LIMIT $4",
        )
        .bind(sql_id(server.map_or(0, |s| s.0)))
        .bind(sql_id(about.map_or(0, |u| u.0)))
        .bind(i64::from(with_private))
        .bind(i64::from(limit))
        .fetch_all(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(rows.into_iter().map(fact_of).collect())
    }

    async fn delete_facts(
        &self,
        server: Option<ServerId>,
        id: Option<i64>,
        about: Option<UserId>,
    ) -> Result<u64, PortError> {
        // $2 = 0: any fact's id; $3 = 0: about anyone (or the server).
        let deleted = sqlx::query(
            "DELETE FROM memory_facts WHERE server_id = $1 AND ($2 = 0 OR id = $2) \
             AND ($3 = 0 OR about_user = $3)",
        )
        .bind(sql_id(server.map_or(0, |s| s.0)))
        .bind(id.unwrap_or(0))
        .bind(sql_id(about.map_or(0, |u| u.0)))
        .execute(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(deleted.rows_affected())
    }

    async fn forget_user(&self, user: UserId) -> Result<u64, PortError> {
        let deleted = sqlx::query("DELETE FROM memory_facts WHERE about_user = $1")
            .bind(sql_id(user.0))
            .execute(self.db.pool())
            .await
            .map_err(port_error)?;
        Ok(deleted.rows_affected())
    }

    async fn forget_learned_from(
        &self,
        server: Option<ServerId>,
        message: MessageId,
        user: UserId,
        all: bool,
    ) -> Result<u64, PortError> {
        let deleted = sqlx::query(
            "DELETE FROM memory_facts WHERE server_id = $1 AND source_message = $2 \
             AND ($4 = 1 OR about_user = $3)",
        )
        .bind(sql_id(server.map_or(0, |s| s.0)))
        .bind(sql_id(message.0))
        .bind(sql_id(user.0))
        .bind(i64::from(all))
        .execute(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(deleted.rows_affected())
    }
}

/// A `memory_facts` row (id, about_user, fact, created_at) as a fact; `about_user` 0 is the
/// server.
fn fact_of((id, about, text, at_ms): (i64, i64, String, i64)) -> Fact {
    Fact {
        id,
        about: (about != 0).then(|| UserId(from_sql_id(about))),
        text,
        at_ms,
    }
}
