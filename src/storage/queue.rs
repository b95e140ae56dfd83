//! The per-channel queue of triggering messages awaiting a turn (SPEC C3, D4). A message is stored
//! before it is acknowledged and removed only once answered (or dropped with a notice), so a
//! restart loses nothing. Pushing the same Discord message twice keeps one entry.

use async_trait::async_trait;

use super::{Backend, Database, from_sql_id, port_error, sql_id, storable};
use crate::domain::ports::{NewQueuedMessage, PortError, Pushed, QueueStore, QueuedMessage};
use crate::domain::scope::{ChannelId, MessageId, PersonaId, ServerId, UserId, Visibility};
use crate::locale::Locale;

pub struct QueueRepo {
    db: Database,
}

impl QueueRepo {
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

#[derive(sqlx::FromRow)]
struct QueueRow {
    id: i64,
    server_id: i64,
    channel_id: i64,
    message_id: i64,
    author_id: i64,
    author_name: String,
    content: String,
    follow_up: i64,
    enqueued_at: i64,
    persona: String,
    visibility: String,
    locale: String,
    quiet: i64,
}

pub(crate) fn visibility_str(v: Visibility) -> &'static str {
    match v {
        Visibility::Dm => "dm",
        Visibility::Private => "private",
        Visibility::Public => "public",
    }
}

pub(crate) fn visibility_from(s: &str) -> Visibility {
    match s {
        "dm" => Visibility::Dm,
        "public" => Visibility::Public,
        // Unknown means private: never mirrored by mistake.
        _ => Visibility::Private,
    }
}

fn from_row(row: QueueRow) -> QueuedMessage {
    QueuedMessage {
        id: row.id,
        entry: NewQueuedMessage {
            server: (row.server_id != 0).then(|| ServerId(from_sql_id(row.server_id))),
            channel: ChannelId(from_sql_id(row.channel_id)),
            message: MessageId(from_sql_id(row.message_id)),
            author: UserId(from_sql_id(row.author_id)),
            author_name: row.author_name,
            content: row.content,
            follow_up: row.follow_up != 0,
            enqueued_at_ms: row.enqueued_at,
            persona: PersonaId(row.persona),
            visibility: visibility_from(&row.visibility),
            locale: Locale::from_tag(&row.locale).unwrap_or_default(),
            quiet: row.quiet != 0,
        },
    }
}

const COLUMNS: &str = "id, server_id, channel_id, message_id, author_id, author_name, \
    content, follow_up, enqueued_at, persona, visibility, locale, quiet";

const CLAIM_SQLITE: &str = "UPDATE queued_messages SET claimed_by = $2 WHERE id = (SELECT id \
    FROM queued_messages WHERE channel_id = $1 AND claimed_by IS NULL ORDER BY id LIMIT 1) \
    AND claimed_by IS NULL RETURNING id, server_id, channel_id, message_id, author_id, \
    author_name, content, follow_up, enqueued_at, persona, visibility, locale, quiet";
// SKIP LOCKED lets a second process take the next entry instead of waiting for the first; the
// outer `claimed_by IS NULL` re-check makes a double claim impossible either way.
const CLAIM_POSTGRES: &str = "UPDATE queued_messages SET claimed_by = $2 WHERE id = (SELECT id \
    FROM queued_messages WHERE channel_id = $1 AND claimed_by IS NULL ORDER BY id LIMIT 1 \
    FOR UPDATE SKIP LOCKED) AND claimed_by IS NULL RETURNING id, server_id, channel_id, \
    message_id, author_id, author_name, content, follow_up, enqueued_at, persona, visibility, \
    locale, quiet";

#[async_trait]
impl QueueStore for QueueRepo {
    async fn push(&self, m: &NewQueuedMessage) -> Result<Pushed, PortError> {
        let inserted: Result<Option<i64>, sqlx::Error> = sqlx::query_scalar(
            "INSERT INTO queued_messages (server_id, channel_id, message_id, author_id, \
             author_name, content, follow_up, enqueued_at, persona, visibility, locale, quiet) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
             ON CONFLICT (channel_id, message_id) DO NOTHING RETURNING id",
        )
        .bind(sql_id(m.server.map_or(0, |s| s.0)))
        .bind(sql_id(m.channel.0))
        .bind(sql_id(m.message.0))
        .bind(sql_id(m.author.0))
        .bind(storable(&m.author_name))
        .bind(storable(&m.content))
        .bind(i64::from(m.follow_up))
        .bind(m.enqueued_at_ms)
        .bind(storable(&m.persona.0))
        .bind(visibility_str(m.visibility).to_owned())
        .bind(m.locale.tag().to_owned())
        .bind(i64::from(m.quiet))
        .fetch_optional(self.db.pool())
        .await;
        self.db.health().observe(&inserted);
        let inserted = inserted.map_err(port_error)?;
        if let Some(id) = inserted {
            return Ok(Pushed::New(id));
        }
        // Already queued (a redelivered gateway event): the existing entry stands.
        sqlx::query_scalar(
            "SELECT id FROM queued_messages WHERE channel_id = $1 AND message_id = $2",
        )
        .bind(sql_id(m.channel.0))
        .bind(sql_id(m.message.0))
        .fetch_one(self.db.pool())
        .await
        .map(Pushed::Existing)
        .map_err(port_error)
    }

    async fn remove(&self, id: i64) -> Result<(), PortError> {
        let removed = sqlx::query("DELETE FROM queued_messages WHERE id = $1")
            .bind(id)
            .execute(self.db.pool())
            .await;
        self.db.health().observe(&removed);
        removed.map_err(port_error)?;
        Ok(())
    }

    async fn mark_follow_up(&self, id: i64) -> Result<(), PortError> {
        sqlx::query("UPDATE queued_messages SET follow_up = 1 WHERE id = $1")
            .bind(id)
            .execute(self.db.pool())
            .await
            .map_err(port_error)?;
        Ok(())
    }

    async fn pending(&self, channel: ChannelId) -> Result<Vec<QueuedMessage>, PortError> {
        let rows: Vec<QueueRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM queued_messages WHERE channel_id = $1 ORDER BY id"
        )))
        .bind(sql_id(channel.0))
        .fetch_all(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(rows.into_iter().map(from_row).collect())
    }

    async fn channels_with_pending(&self) -> Result<Vec<ChannelId>, PortError> {
        let rows: Vec<i64> = sqlx::query_scalar(
            "SELECT DISTINCT channel_id FROM queued_messages ORDER BY channel_id",
        )
        .fetch_all(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(rows
            .into_iter()
            .map(|c| ChannelId(from_sql_id(c)))
            .collect())
    }

    async fn clear(&self, channel: ChannelId) -> Result<u64, PortError> {
        let done = sqlx::query("DELETE FROM queued_messages WHERE channel_id = $1")
            .bind(sql_id(channel.0))
            .execute(self.db.pool())
            .await
            .map_err(port_error)?;
        Ok(done.rows_affected())
    }

    async fn claim_next(
        &self,
        channel: ChannelId,
        owner: &str,
    ) -> Result<Option<QueuedMessage>, PortError> {
        let sql = match self.db.backend() {
            Backend::Sqlite => CLAIM_SQLITE,
            Backend::Postgres => CLAIM_POSTGRES,
        };
        let row: Option<QueueRow> = sqlx::query_as(sql)
            .bind(sql_id(channel.0))
            .bind(storable(owner))
            .fetch_optional(self.db.pool())
            .await
            .map_err(port_error)?;
        Ok(row.map(from_row))
    }
}
