//! Approval requests (SPEC E3): one row per call of a turn, its id made from both; decided once,
//! by a conditional update that only a pending row takes, so of two processes (or a press and
//! the deadline) the first decision stands.

use async_trait::async_trait;

use super::{Database, from_sql_id, port_error, sql_id, storable};
use crate::domain::ports::{
    ApprovalId, ApprovalRequest, ApprovalStore, Approvers, Decision, PortError, StoredApproval,
};
use crate::domain::scope::{ChannelId, MessageId, ServerId, UserId};
use crate::domain::turn::TurnId;

pub struct ApprovalRepo {
    db: Database,
}

impl ApprovalRepo {
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

type Row = (
    String,
    String,
    String,
    i64,
    i64,
    i64,
    String,
    i64,
    Option<i64>,
    String,
    Option<i64>,
);

const COLUMNS: &str = "turn_id, tool, what, server_id, channel_id, requester, approvers, \
    deadline_at, card_id, state, decided_by";

fn stored(id: ApprovalId, row: Row) -> StoredApproval {
    let (turn, tool, what, server, channel, requester, approvers, deadline, card, state, by) = row;
    StoredApproval {
        request: ApprovalRequest {
            id,
            turn: TurnId(uuid::Uuid::try_parse(&turn).unwrap_or_default()),
            tool,
            what,
            server: Some(from_sql_id(server)).filter(|s| *s != 0).map(ServerId),
            channel: ChannelId(from_sql_id(channel)),
            requester: UserId(from_sql_id(requester)),
            approvers: Approvers::from_name(&approvers),
            deadline_ms: deadline,
        },
        decision: Decision::from_stored(&state, by.map(|b| UserId(from_sql_id(b)))),
        card: card.map(|c| MessageId(from_sql_id(c))),
    }
}

#[async_trait]
impl ApprovalStore for ApprovalRepo {
    async fn open(
        &self,
        request: &ApprovalRequest,
        at_ms: i64,
    ) -> Result<StoredApproval, PortError> {
        let opened = sqlx::query(
            "INSERT INTO approvals (id, turn_id, tool, what, server_id, channel_id, requester, \
             approvers, deadline_at, state, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'pending', $10) \
             ON CONFLICT (id) DO NOTHING",
        )
        .bind(request.id.to_string())
        .bind(request.turn.to_string())
        .bind(storable(&request.tool))
        .bind(storable(&request.what))
        .bind(sql_id(request.server.map_or(0, |s| s.0)))
        .bind(sql_id(request.channel.0))
        .bind(sql_id(request.requester.0))
        .bind(request.approvers.as_str())
        .bind(request.deadline_ms)
        .bind(at_ms)
        .execute(self.db.pool())
        .await;
        self.db.health().observe(&opened);
        opened.map_err(port_error)?;
        self.get(request.id).await?.ok_or(PortError::Unavailable {
            what: "database",
            detail: "an approval request just stored is not there".into(),
        })
    }

    async fn set_card(&self, id: ApprovalId, card: MessageId) -> Result<(), PortError> {
        sqlx::query("UPDATE approvals SET card_id = $1 WHERE id = $2")
            .bind(sql_id(card.0))
            .bind(id.to_string())
            .execute(self.db.pool())
            .await
            .map_err(port_error)?;
        Ok(())
    }

    async fn decide(
        &self,
        id: ApprovalId,
        decision: Decision,
        at_ms: i64,
    ) -> Result<bool, PortError> {
        let by = match decision {
            Decision::Approved { by } | Decision::Denied { by } => Some(sql_id(by.0)),
            Decision::TimedOut | Decision::Pending => None,
        };
        let done = sqlx::query(
            "UPDATE approvals SET state = $1, decided_by = $2, decided_at = $3 \
             WHERE id = $4 AND state = 'pending'",
        )
        .bind(decision.state())
        .bind(by)
        .bind(at_ms)
        .bind(id.to_string())
        .execute(self.db.pool())
        .await;
        self.db.health().observe(&done);
        Ok(done.map_err(port_error)?.rows_affected() == 1)
    }

    async fn get(&self, id: ApprovalId) -> Result<Option<StoredApproval>, PortError> {
        let sql = format!("SELECT {COLUMNS} FROM approvals WHERE id = $1");
        let row: Option<Row> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(id.to_string())
            .fetch_optional(self.db.pool())
            .await
            .map_err(port_error)?;
        Ok(row.map(|row| stored(id, row)))
    }
}
