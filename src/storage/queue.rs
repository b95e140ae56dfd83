//! The per-channel queue of triggering messages awaiting a turn (SPEC C3, D4). A message is stored
//! before it is acknowledged and removed only once answered (or dropped with a notice), so a
//! restart loses nothing. Pushing the same Discord message twice keeps one entry.

use async_trait::async_trait;

use super::{Database, from_sql_id, port_error, sql_id, storable};
use crate::domain::ports::{
    Attachment, Mention, NewQueuedMessage, PINGS_MAX, PortError, Pushed, QueueStore, QueuedMessage,
};
use crate::domain::scope::{ChannelId, MessageId, PersonaId, ServerId, UserId, Visibility};
use crate::locale::Locale;

pub struct QueueRepo {
    db: Database,
    claims: Claims,
}

/// Who this process is to the queue (SPEC D6, D11): the name its entries are claimed under (one
/// per running process, new at each start: two processes serving the same shards during a
/// rolling deploy never share a claim), the shards it runs (it only takes entries of servers on
/// them; a DM is on shard 0), and how long a claim lasts without renewal before another process
/// may take it. A process that stops cleanly lets go of its claims ([`QueueRepo::release_claims`]),
/// so its successor takes them at once; a crashed one's are taken once the lease ran out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    pub owner: String,
    pub first_shard: u32,
    pub last_shard: u32,
    pub total_shards: u32,
    pub lease_ms: i64,
}

impl Claims {
    /// The claim name of a process started now for the shard plan `plan` (its name, such as
    /// `shards:all`, kept for whoever reads the table): unique to this run of this process.
    pub fn instance_of(plan: &str) -> String {
        format!("{plan}@{}", uuid::Uuid::now_v7().simple())
    }
}

impl Default for Claims {
    /// One process running every shard.
    fn default() -> Self {
        Self {
            owner: Self::instance_of("shards:all"),
            first_shard: 0,
            last_shard: 0,
            total_shards: 1,
            lease_ms: 60_000,
        }
    }
}

fn now_ms() -> i64 {
    use crate::domain::ports::Clock as _;
    crate::domain::ports::SystemClock.now_ms()
}

/// The condition "this process may take the row": its own, unclaimed, or with an expired lease,
/// and of one of its shards. Binds: $1 owner, $2 expiry cut-off, $3 total, $4 first, $5 last.
/// A server's shard is `(id >> 22) % total`, as Discord routes it; a DM (server 0) is shard 0.
const TAKEABLE: &str = "(claimed_by = $1 OR claimed_by IS NULL OR claimed_at < $2) \
    AND ((server_id >> 22) % $3) BETWEEN $4 AND $5";

impl QueueRepo {
    pub fn new(db: Database, claims: Claims) -> Self {
        Self { db, claims }
    }

    /// The cut-off before which a claim has expired.
    fn expired_before(&self, now: i64) -> i64 {
        now.saturating_sub(self.claims.lease_ms)
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
    attachments: String,
    mentions: String,
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

/// The stored form of a message's file descriptions (JSON text).
fn attachments_json(attachments: &[Attachment]) -> String {
    serde_json::to_string(attachments).unwrap_or_else(|_| "[]".to_owned())
}

/// The stored form of the users a message names (JSON text), at most [`PINGS_MAX`].
fn mentions_json(mentions: &[Mention]) -> String {
    let kept = mentions.get(..PINGS_MAX).unwrap_or(mentions);
    serde_json::to_string(kept).unwrap_or_else(|_| "[]".to_owned())
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
            // Unreadable descriptions (a hand-edited row) lose the files, not the message.
            attachments: serde_json::from_str(&row.attachments).unwrap_or_default(),
            // Likewise: the named users are not notified, the message is answered.
            mentions: serde_json::from_str(&row.mentions).unwrap_or_default(),
        },
    }
}

const COLUMNS: &str = "id, server_id, channel_id, message_id, author_id, author_name, \
    content, follow_up, enqueued_at, persona, visibility, locale, quiet, attachments, mentions";

impl QueueRepo {
    /// Distinct channels of the rows matching `condition` (binds as [`TAKEABLE`]).
    async fn channels_where(&self, condition: &str) -> Result<Vec<ChannelId>, PortError> {
        let c = &self.claims;
        let rows: Vec<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT DISTINCT channel_id FROM queued_messages WHERE {condition} ORDER BY channel_id"
        )))
        .bind(storable(&c.owner))
        .bind(self.expired_before(now_ms()))
        .bind(i64::from(c.total_shards))
        .bind(i64::from(c.first_shard))
        .bind(i64::from(c.last_shard))
        .fetch_all(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(rows
            .into_iter()
            .map(|c| ChannelId(from_sql_id(c)))
            .collect())
    }
}

#[async_trait]
impl QueueStore for QueueRepo {
    async fn push(&self, m: &NewQueuedMessage) -> Result<Pushed, PortError> {
        let inserted: Result<Option<i64>, sqlx::Error> = sqlx::query_scalar(
            "INSERT INTO queued_messages (server_id, channel_id, message_id, author_id, \
             author_name, content, follow_up, enqueued_at, persona, visibility, locale, quiet, \
             claimed_by, claimed_at, attachments, mentions) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) \
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
        .bind(storable(&self.claims.owner))
        .bind(now_ms())
        .bind(storable(&attachments_json(&m.attachments)))
        .bind(storable(&mentions_json(&m.mentions)))
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

    async fn update_content(&self, id: i64, content: &str) -> Result<(), PortError> {
        let updated = sqlx::query("UPDATE queued_messages SET content = $2 WHERE id = $1")
            .bind(id)
            .bind(storable(content))
            .execute(self.db.pool())
            .await;
        self.db.health().observe(&updated);
        updated.map_err(port_error)?;
        Ok(())
    }

    async fn pending(&self, channel: ChannelId) -> Result<Vec<QueuedMessage>, PortError> {
        let now = now_ms();
        let c = &self.claims;
        // One statement claims every takeable row: a second process's concurrent claim waits
        // on the rows (PostgreSQL re-checks the condition on the new row versions; SQLite runs
        // one writer at a time), so no entry ends up held by two.
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE queued_messages SET claimed_by = $1, claimed_at = $6 \
             WHERE channel_id = $7 AND {TAKEABLE}"
        )))
        .bind(storable(&c.owner))
        .bind(self.expired_before(now))
        .bind(i64::from(c.total_shards))
        .bind(i64::from(c.first_shard))
        .bind(i64::from(c.last_shard))
        .bind(now)
        .bind(sql_id(channel.0))
        .execute(self.db.pool())
        .await
        .map_err(port_error)?;
        let rows: Vec<QueueRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM queued_messages WHERE channel_id = $1 AND claimed_by = $2 \
             ORDER BY id"
        )))
        .bind(sql_id(channel.0))
        .bind(storable(&c.owner))
        .fetch_all(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(rows.into_iter().map(from_row).collect())
    }

    async fn channels_with_pending(&self) -> Result<Vec<ChannelId>, PortError> {
        self.channels_where(TAKEABLE).await
    }

    async fn channels_to_take_over(&self) -> Result<Vec<ChannelId>, PortError> {
        self.channels_where(&format!(
            "{TAKEABLE} AND (claimed_by IS NULL OR claimed_by <> $1)"
        ))
        .await
    }

    async fn renew_claims(&self) -> Result<u64, PortError> {
        let done = sqlx::query("UPDATE queued_messages SET claimed_at = $2 WHERE claimed_by = $1")
            .bind(storable(&self.claims.owner))
            .bind(now_ms())
            .execute(self.db.pool())
            .await;
        self.db.health().observe(&done);
        Ok(done.map_err(port_error)?.rows_affected())
    }

    async fn release_claims(&self) -> Result<u64, PortError> {
        let done = sqlx::query(
            "UPDATE queued_messages SET claimed_by = NULL, claimed_at = 0 WHERE claimed_by = $1",
        )
        .bind(storable(&self.claims.owner))
        .execute(self.db.pool())
        .await;
        self.db.health().observe(&done);
        Ok(done.map_err(port_error)?.rows_affected())
    }

    async fn clear(&self, channel: ChannelId) -> Result<u64, PortError> {
        let done = sqlx::query("DELETE FROM queued_messages WHERE channel_id = $1")
            .bind(sql_id(channel.0))
            .execute(self.db.pool())
            .await
            .map_err(port_error)?;
        Ok(done.rows_affected())
    }
}
