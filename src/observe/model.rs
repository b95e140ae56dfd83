//! A decorator of the model port: each streamed call is counted by its outcome and timed, to
//! its first event and whole.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use async_trait::async_trait;
use futures::Stream;

use super::{PROVIDER_CALL_SECONDS, PROVIDER_CALLS, PROVIDER_FIRST_EVENT_SECONDS};
use crate::domain::ports::{Attempt, ChatModel, ModelError, ModelEvent, ModelRequest, ModelStream};
use crate::domain::provider_failure::FailureClass;

pub struct MeteredModel {
    inner: Arc<dyn ChatModel>,
    /// `persona` or `reviewer`.
    role: &'static str,
}

impl MeteredModel {
    pub fn new(inner: Arc<dyn ChatModel>, role: &'static str) -> Self {
        Self { inner, role }
    }
}

#[async_trait]
impl ChatModel for MeteredModel {
    fn attempts(&self) -> Vec<Attempt> {
        self.inner.attempts()
    }

    async fn stream(
        &self,
        attempt: &Attempt,
        request: &ModelRequest,
    ) -> Result<ModelStream, ModelError> {
        let mut call = Call {
            role: self.role,
            // The configured model names: bounded by the configuration.
            model: attempt.model.clone(),
            started: Instant::now(),
            first_seen: false,
            ended: false,
        };
        match self.inner.stream(attempt, request).await {
            Ok(stream) => Ok(Box::pin(Timed {
                inner: stream,
                call,
            })),
            Err(error) => {
                call.end(error.class.code());
                Err(error)
            }
        }
    }

    fn report_failure(&self, attempt: &Attempt, class: FailureClass) {
        self.inner.report_failure(attempt, class);
    }
}

/// One call's measurements.
struct Call {
    role: &'static str,
    model: String,
    started: Instant,
    first_seen: bool,
    ended: bool,
}

impl Call {
    fn first_event(&mut self) {
        if !self.first_seen {
            self.first_seen = true;
            metrics::histogram!(PROVIDER_FIRST_EVENT_SECONDS, "role" => self.role, "model" => self.model.clone())
                .record(self.started.elapsed().as_secs_f64());
        }
    }

    /// Counts the call once, with its outcome, and times it whole.
    fn end(&mut self, outcome: &'static str) {
        if self.ended {
            return;
        }
        self.ended = true;
        metrics::histogram!(PROVIDER_CALL_SECONDS, "role" => self.role, "model" => self.model.clone())
            .record(self.started.elapsed().as_secs_f64());
        metrics::counter!(PROVIDER_CALLS, "role" => self.role, "model" => self.model.clone(), "outcome" => outcome)
            .increment(1);
    }
}

/// The call's stream, watched.
struct Timed {
    inner: ModelStream,
    call: Call,
}

impl Stream for Timed {
    type Item = Result<ModelEvent, ModelError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let polled = this.inner.as_mut().poll_next(cx);
        if let Poll::Ready(item) = &polled {
            match item {
                Some(Ok(ModelEvent::Text(_))) => this.call.first_event(),
                Some(Ok(ModelEvent::End { .. })) => {
                    this.call.first_event();
                    this.call.end("ok");
                }
                Some(Err(error)) => this.call.end(error.class.code()),
                // Ended without its end event: the pass loop treats it as cut.
                None => this.call.end("incomplete"),
            }
        }
        polled
    }
}

impl Drop for Timed {
    fn drop(&mut self) {
        // Dropped before its end: a kill, a follow-up, a timeout of the caller's.
        self.call.end("abandoned");
    }
}
