//! One pass of a turn, retried over the provider's attempts (SPEC C11): key rotation, then model
//! fallback. A retry is a new invocation, so outcomes completed so far are reused, not re-run
//! (SPEC R4); text an attempt already sent stays sent, and the next attempt continues after it.

use super::TurnRun;
use crate::domain::ports::{Attempt, ChatMessage, ChatModel, ModelError, ModelRequest};
use crate::domain::provider_failure::{FailureClass, Retry};
use crate::domain::thought_log::Notice;
use crate::domain::turn::{Turn, TurnStatus};
use crate::engine::budget;
use crate::engine::stream::PassEnd;
use crate::stage::expression;

/// What a pass asks the model for.
#[derive(Debug, Clone, Copy)]
pub(super) enum PassKind<'t> {
    /// The author's next step, with the role's tools; `interruptible` says whether a follow-up
    /// ends the pass (SPEC C8).
    Step { interruptible: bool },
    /// A revision of the held draft, after these messages: prose only, no tools, and a
    /// follow-up always interrupts it.
    Revision(&'t [ChatMessage]),
}

impl<'t> PassKind<'t> {
    fn tail(self) -> &'t [ChatMessage] {
        match self {
            Self::Step { .. } => &[],
            Self::Revision(tail) => tail,
        }
    }

    fn interruptible(self) -> bool {
        match self {
            Self::Step { interruptible } => interruptible,
            Self::Revision(_) => true,
        }
    }
}

impl TurnRun<'_> {
    /// One pass, retried over the provider's attempts until one ends it or none is left. A
    /// model that answers "context full" is asked once more with half the history's estimate
    /// before the next model is tried.
    pub(super) async fn run_pass(&mut self, kind: PassKind<'_>) -> PassEnd {
        self.streamed.clear();
        let attempts = self.deps.model.attempts();
        let mut last_error: Option<ModelError> = None;
        let mut skip_model: Option<usize> = None;
        let mut continuation = String::new();
        // (model index, budget) of the one shorter retry a model gets.
        let mut shorter: Option<(usize, u32)> = None;
        let (mut next, mut tries) = (0, 0);
        while let Some(attempt) = attempts.get(next) {
            if skip_model == Some(attempt.model_index) {
                next += 1;
                continue;
            }
            if tries > 0 {
                // A retry is a new invocation: outcomes completed so far are reused, not re-run.
                self.turn.begin_invocation();
                if !expression::sends_allowed(self.turn) {
                    return PassEnd::Stopped(TurnStatus::DeliveryUnconfirmed);
                }
            }
            tries += 1;
            let budget = match shorter {
                Some((model, budget)) if model == attempt.model_index => Some(budget),
                _ => attempt.input_budget,
            };
            let error = match self.attempt(attempt, budget, kind, &continuation).await {
                Ok(end) => return end,
                Err(error) => error,
            };
            self.keep_sent_text(&mut continuation);
            report_failure(self.deps.model.as_ref(), self.turn, attempt, &error);
            let first_context_error = error.class == FailureClass::ContextTooLong
                && shorter.is_none_or(|(model, _)| model != attempt.model_index);
            last_error = Some(error);
            if first_context_error {
                shorter = Some((attempt.model_index, self.sent_tokens / 2));
                continue;
            }
            match last_error.as_ref().map(|e| e.class.retry()) {
                Some(Retry::NextModel) => skip_model = Some(attempt.model_index),
                Some(Retry::No) => break,
                _ => {}
            }
            next += 1;
        }
        PassEnd::Failed(last_error.unwrap_or_else(|| {
            ModelError::new(
                FailureClass::Unauthorized,
                None,
                "no provider key is configured",
            )
        }))
    }

    /// One attempt: `Ok` with how the pass ended (a stop included), or `Err` with the provider
    /// failure the next attempt may retry. History is trimmed to `budget` tokens when given.
    async fn attempt(
        &mut self,
        attempt: &Attempt,
        budget: Option<u32>,
        kind: PassKind<'_>,
        continuation: &str,
    ) -> Result<PassEnd, ModelError> {
        let turn = self.turn;
        if turn.stop.is_killed() {
            return Ok(PassEnd::Stopped(TurnStatus::StoppedByUser));
        }
        self.delivery.begin_pass();
        let tools = match kind {
            PassKind::Step { .. } => self.session.specifications(),
            PassKind::Revision(_) => Vec::new(),
        };
        let (request, left_out) = self.context.request_within(
            &self.entries,
            Some(continuation),
            kind.tail(),
            tools,
            budget,
        );
        self.note_trim(left_out).await;
        let outcome = self.stream_request(attempt, &request, kind).await;
        // Only a "context full" retry needs the request's size: estimated then, not every pass.
        if let Err(error) = &outcome
            && error.class == FailureClass::ContextTooLong
        {
            self.sent_tokens = budget::request_tokens(&request.messages, &request.tools);
        }
        outcome
    }

    /// Sends `request` and streams the answer into the channel.
    async fn stream_request(
        &mut self,
        attempt: &Attempt,
        request: &ModelRequest,
        kind: PassKind<'_>,
    ) -> Result<PassEnd, ModelError> {
        let turn = self.turn;
        let opened = {
            let _guarded = turn.progress.guard();
            tokio::select! {
                biased;
                () = turn.stop.kill_token().cancelled() => {
                    return Ok(PassEnd::Stopped(TurnStatus::StoppedByUser));
                }
                opened = self.deps.model.stream(attempt, request) => opened,
            }
        };
        let stream = opened?;
        let interruptible = kind.interruptible();
        match self
            .delivery
            .stream_pass(stream, &mut self.streamed, interruptible)
            .await
        {
            PassEnd::Failed(error) => Err(error),
            other => Ok(other),
        }
    }

    /// The first time a turn's request leaves history out, the log and the thought log say so.
    async fn note_trim(&mut self, left_out: usize) {
        if left_out == 0 || self.trim_noted {
            return;
        }
        self.trim_noted = true;
        let turn = self.turn;
        tracing::info!(turn = %turn.id, left_out, "older messages left out to fit the model's context");
        if let Some(server) = turn.scope.thought_log_server() {
            let notice = Notice::ContextTrimmed {
                channel: turn.scope.channel,
                left_out: u32::try_from(left_out).unwrap_or(u32::MAX),
            };
            self.deps.env.ports.thought_log.post(server, notice).await;
        }
    }

    /// Text a failed attempt already sent stays sent: the next attempt continues after it, and
    /// it stays the pass's visible text.
    fn keep_sent_text(&mut self, continuation: &mut String) {
        let sent = &self.delivery.sent_this_pass;
        if !sent.is_empty() {
            if !continuation.is_empty() {
                continuation.push_str("\n\n");
            }
            continuation.push_str(sent);
        }
        self.streamed.clear();
        if !continuation.is_empty() {
            self.streamed.push(continuation.clone());
        }
    }
}

fn report_failure(model: &dyn ChatModel, turn: &Turn, attempt: &Attempt, error: &ModelError) {
    tracing::warn!(
        turn = %turn.id, model = %attempt.model, key = attempt.key_index,
        class = error.class.code(), status = ?error.status, detail = %error.detail,
        "provider attempt failed"
    );
    model.report_failure(attempt, error.class);
}
