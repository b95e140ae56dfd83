//! Tool events (SPEC S6): every call the stage handles, denied ones included, with role, tool,
//! redacted arguments, outcome and duration. Written in batches by the [`super::writer`].

use async_trait::async_trait;
use sqlx::{AnyConnection, AssertSqlSafe, FromRow};

use super::write_queue::{Write, WriteQueue};
use super::{Database, ROWS_PER_STATEMENT, multi_row_sql, port_error, sql_id, storable};
use crate::domain::ports::{PortError, ToolEvent, ToolEvents};
use crate::domain::scope::ServerId;
use crate::domain::turn::TurnId;

/// A stored tool event, as read back.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct StoredEvent {
    pub turn_id: String,
    pub server_id: i64,
    pub channel_id: i64,
    pub user_id: i64,
    pub role: String,
    pub tool: String,
    pub arguments: String,
    pub outcome: String,
    pub code: Option<String>,
    pub duration_ms: i64,
    pub at_ms: i64,
}

pub struct EventRepo {
    db: Database,
    writes: WriteQueue,
}

impl EventRepo {
    pub fn new(db: Database, writes: WriteQueue) -> Self {
        Self { db, writes }
    }

    /// A turn's events, in the order they happened.
    pub async fn for_turn(&self, turn: TurnId) -> Result<Vec<StoredEvent>, PortError> {
        sqlx::query_as(
            "SELECT turn_id, server_id, channel_id, user_id, role, tool, arguments, outcome, \
             code, duration_ms, at_ms FROM tool_events WHERE turn_id = $1 ORDER BY id",
        )
        .bind(turn.to_string())
        .fetch_all(self.db.pool())
        .await
        .map_err(port_error)
    }

    /// How many events of a server ended with `outcome` (`"tool_denied"`, ...).
    pub async fn count(&self, server: ServerId, outcome: &str) -> Result<i64, PortError> {
        sqlx::query_scalar("SELECT COUNT(*) FROM tool_events WHERE server_id = $1 AND outcome = $2")
            .bind(sql_id(server.0))
            .bind(storable(outcome))
            .fetch_one(self.db.pool())
            .await
            .map_err(port_error)
    }
}

#[async_trait]
impl ToolEvents for EventRepo {
    async fn record(&self, event: ToolEvent) {
        self.writes.submit(Write::Event(event));
    }
}

/// Inserts events with multi-row INSERTs (the writer's transaction). Tool names, arguments and
/// codes may be model text: NUL is escaped ([`storable`]).
pub(crate) async fn insert(
    conn: &mut AnyConnection,
    events: &[&ToolEvent],
) -> Result<(), sqlx::Error> {
    for chunk in events.chunks(ROWS_PER_STATEMENT) {
        let sql = multi_row_sql(
            "INSERT INTO tool_events (turn_id, server_id, channel_id, user_id, role, tool, \
             arguments, outcome, code, duration_ms, at_ms)",
            11,
            chunk.len(),
            "",
        );
        let mut insert = sqlx::query(AssertSqlSafe(sql));
        for e in chunk {
            insert = insert
                .bind(e.turn.to_string())
                .bind(sql_id(e.server.map_or(0, |s| s.0)))
                .bind(sql_id(e.channel.0))
                .bind(sql_id(e.user.0))
                .bind(e.role.as_str().to_owned())
                .bind(storable(&e.tool))
                .bind(storable(&e.arguments))
                .bind(e.outcome.as_str().to_owned())
                .bind(e.code.as_deref().map(storable))
                .bind(i64::try_from(e.duration_ms).unwrap_or(i64::MAX))
                .bind(e.at_ms);
        }
        insert.execute(&mut *conn).await?;
    }
    Ok(())
}
