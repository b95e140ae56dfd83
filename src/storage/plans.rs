//! Image plans and their worker tasks, as separate tables (SPEC S5, S6): a plan is what the model
//! asked for; a task is the scheduling of its work. Recording a plan creates its pending task in
//! the same transaction. A task is claimed by exactly one worker across processes; a claim whose
//! lease ran out (a crashed worker) can be claimed again.

use async_trait::async_trait;

use serde_json::Value;

use super::queue::{visibility_from, visibility_str};
use super::{Backend, Database, from_sql_id, port_error, sql_id, storable};
use crate::domain::ports::{
    ClaimedTask, NewImagePlan, PlanId, PlanPart, PlanResult, PlanStore, PortError, TaskStore,
};
use crate::domain::scope::{ChannelId, PersonaId, ServerId, UserId};
use crate::domain::turn::TurnId;
use crate::locale::Locale;

pub struct PlanRepo {
    db: Database,
}

impl PlanRepo {
    pub fn new(db: Database) -> Self {
        Self { db }
    }

    /// A task's status (`pending`, `running`, `done`, `failed`), for operators and tests.
    pub async fn task_status(&self, plan: &PlanId) -> Result<Option<String>, PortError> {
        sqlx::query_scalar("SELECT status FROM worker_tasks WHERE plan_id = $1")
            .bind(storable(&plan.0))
            .fetch_optional(self.db.pool())
            .await
            .map_err(port_error)
    }

    /// A stored plan's prompt (the worker reads plans by id).
    pub async fn plan_prompt(&self, plan: &PlanId) -> Result<Option<String>, PortError> {
        sqlx::query_scalar("SELECT prompt FROM image_plans WHERE id = $1")
            .bind(storable(&plan.0))
            .fetch_optional(self.db.pool())
            .await
            .map_err(port_error)
    }

    /// Ends a task this worker still holds with a final status and result; false when another
    /// worker has taken it over.
    async fn finish(
        &self,
        id: i64,
        worker: &str,
        status: &str,
        result: &Value,
        now_ms: i64,
    ) -> Result<bool, PortError> {
        let done = sqlx::query(
            "UPDATE worker_tasks SET status = $3, claimed_by = NULL, result = $4, \
             updated_at = $5 WHERE id = $1 AND claimed_by = $2 AND status = 'running'",
        )
        .bind(id)
        .bind(storable(worker))
        .bind(status.to_owned())
        .bind(storable(&result.to_string()))
        .bind(now_ms)
        .execute(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(done.rows_affected() == 1)
    }
}

#[async_trait]
impl PlanStore for PlanRepo {
    async fn record_plan(&self, plan: NewImagePlan) -> Result<(), PortError> {
        let mut tx = self.db.pool().begin().await.map_err(port_error)?;
        sqlx::query(
            "INSERT INTO image_plans (id, turn_id, server_id, channel_id, user_id, persona, \
             prompt, caption, aspect, part_set, part_index, part_total, created_at, visibility, \
             locale) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
        )
        .bind(storable(&plan.id.0))
        .bind(plan.turn.to_string())
        .bind(sql_id(plan.server.map_or(0, |s| s.0)))
        .bind(sql_id(plan.channel.0))
        .bind(sql_id(plan.user.0))
        .bind(storable(&plan.persona.0))
        .bind(storable(&plan.prompt))
        .bind(plan.caption.as_deref().map(storable))
        .bind(storable(&plan.aspect))
        .bind(plan.part.as_ref().map(|p| storable(&p.set)))
        .bind(plan.part.as_ref().map(|p| i64::from(p.index)))
        .bind(plan.part.as_ref().map(|p| i64::from(p.total)))
        .bind(plan.at_ms)
        .bind(visibility_str(plan.visibility).to_owned())
        .bind(plan.locale.tag().to_owned())
        .execute(&mut *tx)
        .await
        .map_err(port_error)?;
        sqlx::query(
            "INSERT INTO worker_tasks (plan_id, status, attempts, next_attempt_at, updated_at) \
             VALUES ($1, 'pending', 0, $2, $2)",
        )
        .bind(storable(&plan.id.0))
        .bind(plan.at_ms)
        .execute(&mut *tx)
        .await
        .map_err(port_error)?;
        tx.commit().await.map_err(port_error)
    }

    async fn plan(&self, id: &PlanId) -> Result<Option<NewImagePlan>, PortError> {
        let row: Option<PlanRow> = sqlx::query_as(
            "SELECT id, turn_id, server_id, channel_id, user_id, persona, prompt, caption, \
             aspect, part_set, part_index, part_total, created_at, visibility, locale \
             FROM image_plans WHERE id = $1",
        )
        .bind(storable(&id.0))
        .fetch_optional(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(row.map(PlanRow::into_plan))
    }

    async fn results_since(
        &self,
        channel: ChannelId,
        since_ms: i64,
        limit: u32,
    ) -> Result<Vec<PlanResult>, PortError> {
        // The newest `limit`, then turned oldest first for the caller.
        let rows: Vec<(String, String, String, Option<String>, i64)> = sqlx::query_as(
            "SELECT p.id, p.prompt, t.status, t.result, t.updated_at FROM image_plans p \
             JOIN worker_tasks t ON t.plan_id = p.id WHERE p.channel_id = $1 \
             AND t.status IN ('done', 'failed') AND t.updated_at >= $2 \
             ORDER BY t.updated_at DESC, t.id DESC LIMIT $3",
        )
        .bind(sql_id(channel.0))
        .bind(since_ms)
        .bind(i64::from(limit))
        .fetch_all(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(rows
            .into_iter()
            .rev()
            .map(|(id, prompt, status, result, at_ms)| PlanResult {
                plan: PlanId(id),
                prompt,
                status,
                result: result.and_then(|r| serde_json::from_str(&r).ok()),
                at_ms,
            })
            .collect())
    }
}

#[derive(sqlx::FromRow)]
struct PlanRow {
    id: String,
    turn_id: String,
    server_id: i64,
    channel_id: i64,
    user_id: i64,
    persona: String,
    prompt: String,
    caption: Option<String>,
    aspect: String,
    part_set: Option<String>,
    part_index: Option<i64>,
    part_total: Option<i64>,
    created_at: i64,
    visibility: String,
    locale: String,
}

impl PlanRow {
    fn into_plan(self) -> NewImagePlan {
        let part = match (self.part_set, self.part_index, self.part_total) {
            (Some(set), Some(index), Some(total)) => Some(PlanPart {
                set,
                index: u8::try_from(index).unwrap_or(u8::MAX),
                total: u8::try_from(total).unwrap_or(u8::MAX),
            }),
            _ => None,
        };
        NewImagePlan {
            id: PlanId(self.id),
            turn: TurnId(uuid::Uuid::parse_str(&self.turn_id).unwrap_or_default()),
            server: (self.server_id != 0).then(|| ServerId(from_sql_id(self.server_id))),
            channel: ChannelId(from_sql_id(self.channel_id)),
            user: UserId(from_sql_id(self.user_id)),
            persona: PersonaId(self.persona),
            prompt: self.prompt,
            caption: self.caption,
            aspect: self.aspect,
            part,
            at_ms: self.created_at,
            visibility: visibility_from(&self.visibility),
            locale: Locale::from_tag(&self.locale).unwrap_or_default(),
        }
    }
}

const CLAIM_SQLITE: &str = "UPDATE worker_tasks SET status = 'running', claimed_by = $1, \
    claimed_at = $2, attempts = attempts + 1, updated_at = $2 WHERE id = (SELECT id FROM \
    worker_tasks WHERE (status = 'pending' AND next_attempt_at <= $2) OR (status = 'running' \
    AND claimed_at <= $3) ORDER BY id LIMIT 1) AND ((status = 'pending' AND next_attempt_at <= \
    $2) OR (status = 'running' AND claimed_at <= $3)) RETURNING id, plan_id, attempts";
// SKIP LOCKED: a second worker takes the next task instead of queueing behind the first; the
// outer re-check of the status makes a double claim impossible either way.
const CLAIM_POSTGRES: &str = "UPDATE worker_tasks SET status = 'running', claimed_by = $1, \
    claimed_at = $2, attempts = attempts + 1, updated_at = $2 WHERE id = (SELECT id FROM \
    worker_tasks WHERE (status = 'pending' AND next_attempt_at <= $2) OR (status = 'running' \
    AND claimed_at <= $3) ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) AND ((status = 'pending' \
    AND next_attempt_at <= $2) OR (status = 'running' AND claimed_at <= $3)) RETURNING id, \
    plan_id, attempts";

#[async_trait]
impl TaskStore for PlanRepo {
    async fn claim(
        &self,
        worker: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Option<ClaimedTask>, PortError> {
        let sql = match self.db.backend() {
            Backend::Sqlite => CLAIM_SQLITE,
            Backend::Postgres => CLAIM_POSTGRES,
        };
        let row: Option<(i64, String, i64)> = sqlx::query_as(sql)
            .bind(storable(worker))
            .bind(now_ms)
            .bind(now_ms - lease_ms)
            .fetch_optional(self.db.pool())
            .await
            .map_err(port_error)?;
        Ok(row.map(|(id, plan, attempts)| ClaimedTask {
            id,
            plan: PlanId(plan),
            attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
        }))
    }

    async fn complete(
        &self,
        id: i64,
        worker: &str,
        result: &Value,
        now_ms: i64,
    ) -> Result<bool, PortError> {
        self.finish(id, worker, "done", result, now_ms).await
    }

    async fn retry_at(
        &self,
        id: i64,
        worker: &str,
        error: &str,
        next_attempt_ms: i64,
    ) -> Result<bool, PortError> {
        let done = sqlx::query(
            "UPDATE worker_tasks SET status = 'pending', claimed_by = NULL, claimed_at = NULL, \
             last_error = $3, next_attempt_at = $4, updated_at = $4 WHERE id = $1 AND \
             claimed_by = $2 AND status = 'running'",
        )
        .bind(id)
        .bind(storable(worker))
        .bind(storable(error))
        .bind(next_attempt_ms)
        .execute(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(done.rows_affected() == 1)
    }

    async fn fail(
        &self,
        id: i64,
        worker: &str,
        result: &Value,
        now_ms: i64,
    ) -> Result<bool, PortError> {
        self.finish(id, worker, "failed", result, now_ms).await
    }
}
