//! The image worker (SPEC S5): claims a task (exactly one worker across processes; a crashed
//! worker's claim expires with its lease), makes the planned image, posts it in the plan's
//! channel, and records what happened. Passing failures retry with backoff; a final failure goes
//! through the failure builder (SPEC T8): a classified reason, a safe code and localized tips,
//! kept on the task for the channel's next turn, posted to the thought log (public channels
//! only, SPEC T11) and told to the channel in the requester's language. Raw provider text never
//! reaches the model or the channel.
//!
//! A post carries a nonce derived from the task, so a task taken over after a crash between
//! posting and recording does not post twice.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::config::ImageWorkerConfig;
use crate::domain::ports::{
    ChatSink, ClaimedTask, Clock, ImageBackend, ImagePoster, ImageRequest, NewImagePlan, Pings,
    PlanStore, Posted, TaskStore, ThoughtLog,
};
use crate::domain::provider_failure::{FailureClass, ProviderFailure, recovery_tips};
use crate::domain::scope::Visibility;
use crate::domain::thought_log::{FailureKind, Notice, cut};
use crate::locale;
use crate::stage::payload::Failure;
use crate::tools::ToolError;

/// What one round of the worker did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handled {
    /// No task was due.
    Idle,
    /// The image was posted (or its post could not be confirmed, and is not repeated).
    Posted,
    /// A passing failure: the task comes back later.
    Retrying,
    /// The task failed for good.
    Failed,
}

/// Everything the worker reaches the outside through.
pub struct WorkerPorts {
    pub tasks: Arc<dyn TaskStore>,
    pub plans: Arc<dyn PlanStore>,
    pub backend: Arc<dyn ImageBackend>,
    pub poster: Arc<dyn ImagePoster>,
    pub sink: Arc<dyn ChatSink>,
    pub thought_log: Arc<dyn ThoughtLog>,
    pub clock: Arc<dyn Clock>,
}

pub struct ImageWorker {
    /// Unique per worker (process and task), recorded on claims.
    pub id: String,
    ports: WorkerPorts,
    config: ImageWorkerConfig,
}

/// A stable seed per plan, so a retried task asks for the same image.
fn seed(plan: &str) -> u64 {
    crate::stable_hash(plan.bytes()) & 0x7fff_ffff
}

/// Failures worth another attempt.
fn passing(class: FailureClass) -> bool {
    matches!(
        class,
        FailureClass::RateLimited
            | FailureClass::Timeout
            | FailureClass::ServerError
            | FailureClass::Network
    )
}

impl ImageWorker {
    pub fn new(id: impl Into<String>, ports: WorkerPorts, config: ImageWorkerConfig) -> Self {
        Self {
            id: id.into(),
            ports,
            config,
        }
    }

    /// Works until `shutdown` fires; an idle worker looks again every `poll_ms`. A task in hand
    /// is never dropped half-way: shutdown stops its generation (the task is handed back), but a
    /// made image is posted and recorded first, so it is neither lost nor posted twice.
    pub async fn run(self, shutdown: CancellationToken) {
        let idle = Duration::from_millis(self.config.poll_ms);
        while !shutdown.is_cancelled() {
            let handled = self.run_once(&shutdown).await;
            if handled == Handled::Idle {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(idle) => {}
                }
            }
        }
    }

    /// Claims and handles at most one task.
    pub async fn run_once(&self, cancel: &CancellationToken) -> Handled {
        let lease = i64::try_from(self.config.lease_secs.saturating_mul(1000)).unwrap_or(i64::MAX);
        let task = match self
            .ports
            .tasks
            .claim(&self.id, self.ports.clock.now_ms(), lease)
            .await
        {
            Ok(Some(task)) => task,
            Ok(None) => return Handled::Idle,
            Err(error) => {
                tracing::warn!(worker = %self.id, %error, "cannot claim image tasks");
                return Handled::Idle;
            }
        };
        let plan = match self.ports.plans.plan(&task.plan).await {
            Ok(Some(plan)) => plan,
            Ok(None) => {
                tracing::error!(task = task.id, plan = %task.plan.0, "task without a plan");
                let result = json!({ "status": "failed", "code": "plan_missing" });
                self.record_fail(&task, &result).await;
                return Handled::Failed;
            }
            Err(error) => {
                tracing::warn!(task = task.id, %error, "plan unreadable; retrying later");
                self.retry(&task, "plan_unreadable").await;
                return Handled::Retrying;
            }
        };
        let request = ImageRequest {
            prompt: plan.prompt.clone(),
            aspect: plan.aspect.clone(),
            seed: seed(&plan.id.0),
        };
        let timeout = Duration::from_secs(self.config.timeout_secs);
        // The backend's own token: cancelled on shutdown and when the timeout gives up on it.
        let backend_cancel = cancel.child_token();
        let made = tokio::time::timeout(
            timeout,
            self.ports.backend.generate(&request, &backend_cancel),
        )
        .await;
        backend_cancel.cancel();
        if cancel.is_cancelled() && !matches!(made, Ok(Ok(_))) {
            // Shut down mid-generation: not a failure; the task is due again at once.
            if let Err(error) = self
                .ports
                .tasks
                .retry_at(task.id, &self.id, "shutdown", self.ports.clock.now_ms())
                .await
            {
                tracing::warn!(task = task.id, %error, "could not hand back an image task");
            }
            return Handled::Retrying;
        }
        let failure = match made {
            Ok(Ok(image)) => return self.post(&task, &plan, &image).await,
            Ok(Err(failure)) => failure,
            Err(_) => ProviderFailure {
                status: None,
                message: format!("image backend timed out after {timeout:?}"),
                workflow_model_file: None,
            },
        };
        let class = failure.class();
        tracing::warn!(
            task = task.id, attempts = task.attempts, class = class.code(),
            detail = %cut(&failure.message, 300), "image generation failed"
        );
        if passing(class) && task.attempts < self.config.max_attempts {
            self.retry(&task, class.code()).await;
            return Handled::Retrying;
        }
        self.give_up(&task, &plan, failure).await;
        Handled::Failed
    }

    async fn post(
        &self,
        task: &ClaimedTask,
        plan: &NewImagePlan,
        image: &crate::domain::ports::GeneratedImage,
    ) -> Handled {
        let nonce = format!("plan-{}", task.id);
        let posted = self
            .ports
            .poster
            .post_image(plan.channel, image, plan.caption.as_deref(), &nonce)
            .await;
        let now = self.ports.clock.now_ms();
        let (result, handled) = match posted {
            Posted::Confirmed(message) => (
                json!({ "status": "posted", "message_id": message.0.to_string() }),
                Handled::Posted,
            ),
            // Never repeated: a second post could be a duplicate.
            Posted::Unconfirmed(why) => {
                tracing::warn!(task = task.id, %why, "image post unconfirmed; not repeated");
                (json!({ "status": "unconfirmed" }), Handled::Posted)
            }
            Posted::Refused(reason) => {
                tracing::warn!(task = task.id, %reason, "Discord refused the image");
                let result = json!({ "status": "failed", "code": "post_refused" });
                self.record_fail(task, &result).await;
                return Handled::Failed;
            }
        };
        match self
            .ports
            .tasks
            .complete(task.id, &self.id, &result, now)
            .await
        {
            Ok(true) => {}
            Ok(false) => tracing::warn!(task = task.id, "task was taken over before it completed"),
            Err(error) => {
                tracing::error!(task = task.id, %error, "could not record a posted image")
            }
        }
        handled
    }

    async fn retry(&self, task: &ClaimedTask, why: &str) {
        // Configured numbers saturate rather than overflow (a panic in debug builds).
        let backoff = self
            .config
            .retry_backoff_secs
            .saturating_mul(1000)
            .saturating_mul(2u64.pow(task.attempts.saturating_sub(1).min(10)));
        let next = self
            .ports
            .clock
            .now_ms()
            .saturating_add(i64::try_from(backoff).unwrap_or(i64::MAX / 2));
        if let Err(error) = self
            .ports
            .tasks
            .retry_at(task.id, &self.id, why, next)
            .await
        {
            tracing::error!(task = task.id, %error, "could not reschedule an image task");
        }
    }

    async fn record_fail(&self, task: &ClaimedTask, result: &serde_json::Value) {
        let now = self.ports.clock.now_ms();
        if let Err(error) = self.ports.tasks.fail(task.id, &self.id, result, now).await {
            tracing::error!(task = task.id, %error, "could not record a failed image task");
        }
    }

    /// The failure, through the failure builder: on the task (for the model's next turn), in
    /// the thought log (public channels only), and told to the channel.
    async fn give_up(&self, task: &ClaimedTask, plan: &NewImagePlan, failure: ProviderFailure) {
        let class = failure.class();
        let built = Failure::from_tool_error(&ToolError::Provider(failure), plan.locale);
        let payload = built.payload("plan_image");
        self.record_fail(task, &payload).await;
        if let (Visibility::Public, Some(server)) = (plan.visibility, plan.server) {
            let notice = Notice::ToolFailed {
                tool: "plan_image".to_owned(),
                kind: FailureKind::Execution,
                code: built.code.clone(),
                reason: built.reason.clone(),
                arguments: json!({ "prompt": cut(&plan.prompt, 200) }).to_string(),
                ending: None,
            };
            self.ports.thought_log.post(server, notice).await;
        }
        let what = locale::text(
            plan.locale,
            &format!("error-{}", class.code().replace('_', "-")),
        );
        let mut lines = vec![locale::text_with(
            plan.locale,
            "image-failed",
            &[("reason", what)],
        )];
        lines.extend(
            recovery_tips(class, plan.locale)
                .into_iter()
                .map(|t| format!("- {t}")),
        );
        if let Err(error) = self
            .ports
            .sink
            .send_text(plan.channel, lines.join("\n"), None, &Pings::none(), None)
            .await
        {
            tracing::warn!(task = task.id, %error, "could not tell the channel an image failed");
        }
    }
}
