//! Image plans and their worker tasks, as separate tables (SPEC S5, S6): a plan is what the model
//! asked for; a task is the scheduling of its work. Recording a plan creates its pending task in
//! the same transaction. A task is claimed by exactly one worker across processes; a claim whose
//! lease ran out (a crashed worker) can be claimed again.

use async_trait::async_trait;

use super::{Backend, Database, port_error, sql_id};
use crate::chat::ports::{NewImagePlan, PlanId, PlanStore, PortError};
use crate::chat::stores::{ClaimedTask, TaskStore};

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
            .bind(plan.0.clone())
            .fetch_optional(self.db.pool())
            .await
            .map_err(port_error)
    }

    /// A stored plan's prompt (the worker reads plans by id).
    pub async fn plan_prompt(&self, plan: &PlanId) -> Result<Option<String>, PortError> {
        sqlx::query_scalar("SELECT prompt FROM image_plans WHERE id = $1")
            .bind(plan.0.clone())
            .fetch_optional(self.db.pool())
            .await
            .map_err(port_error)
    }
}

#[async_trait]
impl PlanStore for PlanRepo {
    async fn record_plan(&self, plan: NewImagePlan) -> Result<(), PortError> {
        let mut tx = self.db.pool().begin().await.map_err(port_error)?;
        sqlx::query(
            "INSERT INTO image_plans (id, turn_id, server_id, channel_id, user_id, persona, \
             prompt, caption, aspect, part_set, part_index, part_total, created_at) VALUES ($1, \
             $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        )
        .bind(plan.id.0.clone())
        .bind(plan.turn.to_string())
        .bind(sql_id(plan.server.map_or(0, |s| s.0)))
        .bind(sql_id(plan.channel.0))
        .bind(sql_id(plan.user.0))
        .bind(plan.persona.0.clone())
        .bind(plan.prompt.clone())
        .bind(plan.caption.clone())
        .bind(plan.aspect.clone())
        .bind(plan.part.as_ref().map(|p| p.set.clone()))
        .bind(plan.part.as_ref().map(|p| i64::from(p.index)))
        .bind(plan.part.as_ref().map(|p| i64::from(p.total)))
        .bind(plan.at_ms)
        .execute(&mut *tx)
        .await
        .map_err(port_error)?;
        sqlx::query(
            "INSERT INTO worker_tasks (plan_id, status, attempts, next_attempt_at, updated_at) \
             VALUES ($1, 'pending', 0, $2, $2)",
        )
        .bind(plan.id.0.clone())
        .bind(plan.at_ms)
        .execute(&mut *tx)
        .await
        .map_err(port_error)?;
        tx.commit().await.map_err(port_error)
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
            .bind(worker.to_owned())
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

    async fn complete(&self, id: i64, worker: &str, now_ms: i64) -> Result<bool, PortError> {
        let done = sqlx::query(
            "UPDATE worker_tasks SET status = 'done', claimed_by = NULL, updated_at = $3 \
             WHERE id = $1 AND claimed_by = $2 AND status = 'running'",
        )
        .bind(id)
        .bind(worker.to_owned())
        .bind(now_ms)
        .execute(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(done.rows_affected() == 1)
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
        .bind(worker.to_owned())
        .bind(error.to_owned())
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
        error: &str,
        now_ms: i64,
    ) -> Result<bool, PortError> {
        let done = sqlx::query(
            "UPDATE worker_tasks SET status = 'failed', claimed_by = NULL, last_error = $3, \
             updated_at = $4 WHERE id = $1 AND claimed_by = $2 AND status = 'running'",
        )
        .bind(id)
        .bind(worker.to_owned())
        .bind(error.to_owned())
        .bind(now_ms)
        .execute(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(done.rows_affected() == 1)
    }
}
