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
    /// The configured model names: the only `model` labels (see [`label`]).
    known: Arc<[String]>,
}

impl MeteredModel {
    pub fn new(inner: Arc<dyn ChatModel>, role: &'static str, known: Vec<String>) -> Self {
        Self {
            inner,
            role,
            known: known.into(),
        }
    }
}

/// A call's `model` label: the model's name when it is configured, `other` when not, so the
/// series stay bounded by the configuration whatever a caller asks for.
fn label(known: &[String], model: &str) -> String {
    if known.iter().any(|k| k == model) {
        model.to_owned()
    } else {
        "other".to_owned()
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
            model: label(&self.known, &attempt.model),
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

#[cfg(test)]
mod tests {
    use super::*;
    use metrics_exporter_prometheus::PrometheusBuilder;

    /// A model that refuses every call at once.
    struct Refusing;

    #[async_trait]
    impl ChatModel for Refusing {
        fn attempts(&self) -> Vec<Attempt> {
            Vec::new()
        }

        async fn stream(&self, _: &Attempt, _: &ModelRequest) -> Result<ModelStream, ModelError> {
            Err(ModelError::new(FailureClass::Network, None, "refused"))
        }

        fn report_failure(&self, _: &Attempt, _: FailureClass) {}
    }

    fn attempt(model: &str) -> Attempt {
        Attempt {
            model: model.to_owned(),
            model_index: usize::MAX,
            key_index: 0,
            input_budget: None,
        }
    }

    // SPEC D7, C8: a call's `model` label is a configured name, or `other` for any name a server
    // stored, so the series stay bounded by the configuration.
    #[test]
    fn model_labels_are_configured_names_or_other() {
        let recorder = PrometheusBuilder::new().build_recorder();
        let metrics = recorder.handle();
        let model = MeteredModel::new(Arc::new(Refusing), "reviewer", vec!["review-model".into()]);
        let request = ModelRequest {
            messages: Vec::new(),
            tools: Vec::new(),
        };
        metrics::with_local_recorder(&recorder, || {
            futures::executor::block_on(async {
                for name in ["review-model", "rogue-model", "another-rogue"] {
                    assert!(model.stream(&attempt(name), &request).await.is_err());
                }
            });
        });
        let text = metrics.render();
        assert!(text.contains(r#"model="review-model""#), "{text}");
        assert!(text.contains(r#"model="other""#), "{text}");
        assert!(!text.contains("rogue"), "{text}");
        assert_eq!(label(&[], "review-model"), "other");
    }
}
