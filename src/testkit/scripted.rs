//! Scripted stand-ins for the model and the Response Drafting reviewer: each answer comes from
//! a queue the test filled (or, for the model, a function of the request); an answer nobody
//! scripted panics.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::{lock, unexpected};

/// One step of a scripted pass.
#[derive(Debug, Clone)]
pub enum Step {
    /// A text chunk.
    Text(String),
    /// A complete tool call (arguments as text, possibly broken on purpose).
    Call { name: String, arguments: String },
    /// A tool call flagged truncated by the adapter.
    TruncatedCall { name: String, arguments: String },
    /// A pause before the next step.
    Delay(std::time::Duration),
    /// The stream stops yielding, forever (a hung provider).
    Hang,
    /// The stream fails here.
    Fail(crate::domain::ports::ModelError),
}

/// A scripted pass: the stream, or a failure to open it.
#[derive(Debug, Clone)]
pub enum ScriptedPass {
    Stream(Vec<Step>),
    OpenError(crate::domain::ports::ModelError),
}

impl ScriptedPass {
    /// A pass that streams `chunks` and ends.
    pub fn text(chunks: &[&str]) -> Self {
        Self::Stream(chunks.iter().map(|c| Step::Text((*c).to_owned())).collect())
    }

    /// A pass that calls one tool.
    pub fn call(name: &str, arguments: &str) -> Self {
        Self::Stream(vec![Step::Call {
            name: name.to_owned(),
            arguments: arguments.to_owned(),
        }])
    }
}

type Responder = dyn Fn(&crate::domain::ports::ModelRequest) -> ScriptedPass + Send + Sync;

/// An in-process model: each pass answers from a queue of scripted passes, or from a function
/// of the request. Records requests and attempts; counts streams dropped before their end.
pub struct ScriptedModel {
    script: Mutex<VecDeque<ScriptedPass>>,
    responder: Option<Box<Responder>>,
    attempts: Vec<crate::domain::ports::Attempt>,
    requests: Mutex<
        Vec<(
            crate::domain::ports::Attempt,
            crate::domain::ports::ModelRequest,
        )>,
    >,
    failures: Mutex<
        Vec<(
            crate::domain::ports::Attempt,
            crate::domain::provider_failure::FailureClass,
        )>,
    >,
    dropped: Arc<std::sync::atomic::AtomicUsize>,
}

impl ScriptedModel {
    /// Passes answered in order; a pass nobody scripted panics.
    pub fn new(passes: Vec<ScriptedPass>) -> Self {
        Self::build(passes, None)
    }

    /// Every pass answered by `responder` (benchmarks, open-ended tests).
    pub fn responding(
        responder: impl Fn(&crate::domain::ports::ModelRequest) -> ScriptedPass + Send + Sync + 'static,
    ) -> Self {
        Self::build(Vec::new(), Some(Box::new(responder)))
    }

    fn build(passes: Vec<ScriptedPass>, responder: Option<Box<Responder>>) -> Self {
        Self {
            script: Mutex::new(passes.into()),
            responder,
            attempts: vec![crate::domain::ports::Attempt {
                model: "scripted".into(),
                model_index: 0,
                key_index: 0,
                input_budget: None,
            }],
            requests: Mutex::new(Vec::new()),
            failures: Mutex::new(Vec::new()),
            dropped: Arc::default(),
        }
    }

    /// Offers these attempts (models and keys) for every pass.
    pub fn with_attempts(mut self, attempts: Vec<crate::domain::ports::Attempt>) -> Self {
        self.attempts = attempts;
        self
    }

    /// The requests of scripted passes (a responder's are not kept).
    pub fn requests(
        &self,
    ) -> Vec<(
        crate::domain::ports::Attempt,
        crate::domain::ports::ModelRequest,
    )> {
        lock(&self.requests).clone()
    }

    pub fn failures(
        &self,
    ) -> Vec<(
        crate::domain::ports::Attempt,
        crate::domain::provider_failure::FailureClass,
    )> {
        lock(&self.failures).clone()
    }

    /// Streams dropped before they ended (a kill drops the request).
    pub fn dropped_streams(&self) -> usize {
        self.dropped.load(Ordering::SeqCst)
    }

    /// Scripted passes not used yet.
    pub fn remaining(&self) -> usize {
        lock(&self.script).len()
    }
}

/// Counts a stream as dropped unless it reached its end.
struct DropProbe {
    counter: Arc<std::sync::atomic::AtomicUsize>,
    finished: bool,
}

impl Drop for DropProbe {
    fn drop(&mut self) {
        if !self.finished {
            self.counter.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[async_trait]
impl crate::domain::ports::ChatModel for ScriptedModel {
    fn attempts(&self) -> Vec<crate::domain::ports::Attempt> {
        self.attempts.clone()
    }

    async fn stream(
        &self,
        attempt: &crate::domain::ports::Attempt,
        request: &crate::domain::ports::ModelRequest,
    ) -> Result<crate::domain::ports::ModelStream, crate::domain::ports::ModelError> {
        use crate::domain::ports::{Finish, ModelEvent};
        use crate::stage::{ToolCallRequest, Truncation};
        // Scripted tests inspect requests; a responder serves benchmarks, where keeping every
        // request would only measure this fake.
        if self.responder.is_none() {
            lock(&self.requests).push((attempt.clone(), request.clone()));
        }
        let pass = match &self.responder {
            Some(respond) => respond(request),
            None => lock(&self.script)
                .pop_front()
                .unwrap_or_else(|| unexpected("ChatModel::stream (no scripted pass left)")),
        };
        let steps = match pass {
            ScriptedPass::OpenError(error) => return Err(error),
            ScriptedPass::Stream(steps) => steps,
        };
        let probe = DropProbe {
            counter: self.dropped.clone(),
            finished: false,
        };
        let state = (steps.into_iter(), Vec::new(), probe, false);
        let stream = futures::stream::unfold(
            state,
            |(mut steps, mut calls, mut probe, done)| async move {
                if done {
                    return None;
                }
                loop {
                    let Some(step) = steps.next() else {
                        probe.finished = true;
                        let finish = if calls.is_empty() {
                            Finish::Stop
                        } else {
                            Finish::ToolCalls
                        };
                        let end = ModelEvent::End {
                            tool_calls: std::mem::take(&mut calls),
                            finish,
                            usage: None,
                        };
                        return Some((Ok(end), (steps, calls, probe, true)));
                    };
                    match step {
                        Step::Text(text) => {
                            return Some((
                                Ok(ModelEvent::Text(text)),
                                (steps, calls, probe, false),
                            ));
                        }
                        Step::Call { name, arguments } => {
                            let id = format!("call_{}", calls.len() + 1);
                            calls.push(ToolCallRequest::new(id, name, arguments));
                        }
                        Step::TruncatedCall { name, arguments } => {
                            let id = format!("call_{}", calls.len() + 1);
                            let mut call = ToolCallRequest::new(id, name, arguments);
                            call.truncated = Some(Truncation::Length);
                            calls.push(call);
                        }
                        Step::Delay(duration) => tokio::time::sleep(duration).await,
                        Step::Hang => std::future::pending::<()>().await,
                        Step::Fail(error) => {
                            probe.finished = true;
                            return Some((Err(error), (steps, calls, probe, true)));
                        }
                    }
                }
            },
        );
        Ok(Box::pin(stream))
    }

    fn report_failure(
        &self,
        attempt: &crate::domain::ports::Attempt,
        class: crate::domain::provider_failure::FailureClass,
    ) {
        lock(&self.failures).push((attempt.clone(), class));
    }
}

/// A reviewer answering from scripts: one queue for tool requests, one for replies. Records
/// what it was shown. An unscripted review panics; `slow` makes each review wait first.
#[derive(Default)]
pub struct ScriptedReviewer {
    requests: Mutex<VecDeque<crate::domain::review::ReviewOutcome>>,
    replies: Mutex<VecDeque<crate::domain::review::ReviewOutcome>>,
    seen_requests: Mutex<
        Vec<(
            crate::tools::PreparedCall,
            Vec<crate::domain::review::ReviewedCall>,
        )>,
    >,
    seen_replies: Mutex<Vec<String>>,
    delay: Mutex<Option<std::time::Duration>>,
    /// Kill the author's turn just before answering (a `/kill` landing as the review ends).
    kill_on_answer: AtomicBool,
}

impl ScriptedReviewer {
    pub fn on_request(&self, outcome: crate::domain::review::ReviewOutcome) -> &Self {
        lock(&self.requests).push_back(outcome);
        self
    }

    pub fn on_reply(&self, outcome: crate::domain::review::ReviewOutcome) -> &Self {
        lock(&self.replies).push_back(outcome);
        self
    }

    /// Kills the author's turn right before each answer.
    pub fn kill_on_answer(&self) {
        self.kill_on_answer.store(true, Ordering::SeqCst);
    }

    /// Every review waits this long first.
    pub fn slow(&self, delay: std::time::Duration) {
        *lock(&self.delay) = Some(delay);
    }

    /// The requests it reviewed, with the earlier calls it was shown.
    pub fn seen_requests(
        &self,
    ) -> Vec<(
        crate::tools::PreparedCall,
        Vec<crate::domain::review::ReviewedCall>,
    )> {
        lock(&self.seen_requests).clone()
    }

    pub fn seen_replies(&self) -> Vec<String> {
        lock(&self.seen_replies).clone()
    }

    async fn wait(&self) {
        let delay = *lock(&self.delay);
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
    }
}

#[async_trait]
impl crate::tools::Reviewer for ScriptedReviewer {
    async fn review_request(
        &self,
        author: &crate::tools::ToolSession,
        request: &crate::tools::PreparedCall,
    ) -> crate::domain::review::ReviewOutcome {
        let earlier = author.turn().review(|r| r.calls.clone());
        lock(&self.seen_requests).push((request.clone(), earlier));
        self.wait().await;
        if self.kill_on_answer.load(Ordering::SeqCst) {
            author.turn().stop.kill();
        }
        lock(&self.requests)
            .pop_front()
            .unwrap_or_else(|| unexpected("Reviewer::review_request (nothing scripted)"))
    }

    async fn review_reply(
        &self,
        _author: &crate::tools::ToolSession,
        draft: &str,
    ) -> crate::domain::review::ReviewOutcome {
        lock(&self.seen_replies).push(draft.to_owned());
        self.wait().await;
        lock(&self.replies)
            .pop_front()
            .unwrap_or_else(|| unexpected("Reviewer::review_reply (nothing scripted)"))
    }
}
