//! Reminders: created by the `create_reminder` tool, listed and cancelled by their creator or
//! target, and fired once per occurrence across processes: an occurrence is taken with a
//! compare-and-set on its due time, which exactly one caller wins.

use async_trait::async_trait;

use super::queue::{visibility_from, visibility_str};
use super::{Database, from_sql_id, port_error, sql_id, storable};
use crate::domain::ports::{NewReminder, PortError, Reminder, ReminderStore, Repeat};
use crate::domain::scope::{ChannelId, PersonaId, ServerId, UserId};
use crate::locale::Locale;

pub struct ReminderRepo {
    db: Database,
}

impl ReminderRepo {
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

#[derive(sqlx::FromRow)]
struct Row {
    id: i64,
    server_id: i64,
    channel_id: i64,
    creator_id: i64,
    target_id: i64,
    persona: String,
    text: String,
    due_at: i64,
    repeat: String,
    time_zone: String,
    visibility: String,
    locale: String,
    fired: i64,
    created_at: i64,
}

impl Row {
    fn into_reminder(self) -> Reminder {
        Reminder {
            id: self.id,
            fired: u32::try_from(self.fired).unwrap_or(u32::MAX),
            reminder: NewReminder {
                server: (self.server_id != 0).then(|| ServerId(from_sql_id(self.server_id))),
                channel: ChannelId(from_sql_id(self.channel_id)),
                creator: UserId(from_sql_id(self.creator_id)),
                target: (self.target_id != 0).then(|| UserId(from_sql_id(self.target_id))),
                persona: PersonaId(self.persona),
                text: self.text,
                due_at_ms: self.due_at,
                repeat: Repeat::parse(&self.repeat),
                time_zone: self.time_zone,
                visibility: visibility_from(&self.visibility),
                locale: Locale::from_tag(&self.locale).unwrap_or_default(),
                created_at_ms: self.created_at,
            },
        }
    }
}

const COLUMNS: &str = "id, server_id, channel_id, creator_id, target_id, persona, text, due_at, \
                       repeat, time_zone, visibility, locale, fired, created_at";

#[async_trait]
impl ReminderStore for ReminderRepo {
    async fn create(&self, r: &NewReminder) -> Result<i64, PortError> {
        sqlx::query_scalar(
            "INSERT INTO reminders (server_id, channel_id, creator_id, target_id, persona, text, \
             due_at, repeat, time_zone, visibility, locale, status, fired, created_at) VALUES \
             ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'active', 0, $12) RETURNING id",
        )
        .bind(sql_id(r.server.map_or(0, |s| s.0)))
        .bind(sql_id(r.channel.0))
        .bind(sql_id(r.creator.0))
        .bind(sql_id(r.target.map_or(0, |u| u.0)))
        .bind(storable(&r.persona.0))
        .bind(storable(&r.text))
        .bind(r.due_at_ms)
        .bind(r.repeat.as_str().to_owned())
        .bind(storable(&r.time_zone))
        .bind(visibility_str(r.visibility).to_owned())
        .bind(r.locale.tag().to_owned())
        .bind(r.created_at_ms)
        .fetch_one(self.db.pool())
        .await
        .map_err(port_error)
    }

    async fn for_user(&self, user: UserId) -> Result<Vec<Reminder>, PortError> {
        let rows: Vec<Row> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM reminders WHERE status = 'active' \
             AND (creator_id = $1 OR target_id = $1) ORDER BY due_at, id"
        )))
        .bind(sql_id(user.0))
        .fetch_all(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(rows.into_iter().map(Row::into_reminder).collect())
    }

    async fn count_created_by(&self, user: UserId) -> Result<u32, PortError> {
        let count: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM reminders WHERE status = 'active' AND creator_id = $1",
        )
        .bind(sql_id(user.0))
        .fetch_one(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(u32::try_from(count).unwrap_or(u32::MAX))
    }

    async fn cancel(
        &self,
        id: i64,
        user: UserId,
        managed: Option<ServerId>,
    ) -> Result<bool, PortError> {
        // A DM's reminder (server 0) is never in a managed server.
        let done = sqlx::query(
            "UPDATE reminders SET status = 'cancelled' WHERE id = $1 AND status = 'active' \
             AND (creator_id = $2 OR target_id = $2 OR (server_id <> 0 AND server_id = $3))",
        )
        .bind(id)
        .bind(sql_id(user.0))
        .bind(sql_id(managed.map_or(0, |s| s.0)))
        .execute(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(done.rows_affected() == 1)
    }

    async fn due(&self, now_ms: i64, limit: u32) -> Result<Vec<Reminder>, PortError> {
        let rows: Vec<Row> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM reminders WHERE status = 'active' AND due_at <= $1 \
             ORDER BY due_at, id LIMIT $2"
        )))
        .bind(now_ms)
        .bind(i64::from(limit))
        .fetch_all(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(rows.into_iter().map(Row::into_reminder).collect())
    }

    async fn take_occurrence(
        &self,
        id: i64,
        due_at_ms: i64,
        next_due_ms: Option<i64>,
    ) -> Result<bool, PortError> {
        let (status, next) = match next_due_ms {
            Some(next) => ("active", next),
            None => ("done", due_at_ms),
        };
        let done = sqlx::query(
            "UPDATE reminders SET due_at = $3, status = $4, fired = fired + 1 \
             WHERE id = $1 AND due_at = $2 AND status = 'active'",
        )
        .bind(id)
        .bind(due_at_ms)
        .bind(next)
        .bind(status.to_owned())
        .execute(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(done.rows_affected() == 1)
    }
}
