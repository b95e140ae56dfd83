//! The drafting reviewer as a model (SPEC C8, R1-R5): a private conversation in the `reviewer`
//! role, with its read-only lookups run through the tool stage and its verdict given through the
//! typed `submit_review` tool, validated server-side (SPEC S1). It has its own models and
//! timeout; a reviewer that cannot answer is reported unavailable (SPEC R5).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;

use crate::domain::ports::{
    AssistantToolCall, ChatMessage, ChatModel, ModelError, ModelEvent, ModelRequest,
};
use crate::domain::provider_failure::{FailureClass, Retry};
use crate::domain::review::{ReviewOutcome, ReviewVerdict};
use crate::domain::role::Role;
use crate::stage::payload::Failure;
use crate::stage::{ToolCallOutcome, ToolCallRequest, execute_tool_call};
use crate::tools::Reviewer;
use crate::tools::registry::canonical_json;
use crate::tools::submit_review::{Decision, SubmitReview, SubmittedVerdict};
use crate::tools::{PreparedCall, Tool, ToolSession};

/// Most model passes one review may take (lookups, then the verdict).
const MAX_REVIEW_PASSES: usize = 4;

pub struct ModelReviewer {
    model: Arc<dyn ChatModel>,
    prompt: String,
    timeout: Duration,
    /// The models a server may choose for its reviewer (the operator's); a server's stored
    /// choice outside them is ignored. None unless given ([`Self::with_server_models`]).
    server_models: Vec<String>,
}

impl ModelReviewer {
    pub fn new(model: Arc<dyn ChatModel>, prompt: String, timeout: Duration) -> Self {
        Self {
            model,
            prompt,
            timeout,
            server_models: Vec::new(),
        }
    }

    /// Lets a server's own reviewer model be asked first when it is one of `models`.
    pub fn with_server_models(mut self, models: Vec<String>) -> Self {
        self.server_models = models;
        self
    }

    async fn run(&self, author: &ToolSession, subject: String) -> ReviewOutcome {
        match tokio::time::timeout(self.timeout, self.converse(author, subject)).await {
            Ok(outcome) => outcome,
            Err(_) => ReviewOutcome::Unavailable(format!("no verdict within {:?}", self.timeout)),
        }
    }

    async fn converse(&self, author: &ToolSession, subject: String) -> ReviewOutcome {
        let session = author.sibling(Role::Reviewer);
        let policy = author.turn().review.clone();
        let prompt = policy.prompt.clone().unwrap_or_else(|| self.prompt.clone());
        let mut messages = vec![
            ChatMessage::System { content: prompt },
            ChatMessage::User {
                name: None,
                content: subject,
                images: Vec::new(),
            },
        ];
        for _ in 0..MAX_REVIEW_PASSES {
            let request = ModelRequest {
                messages: messages.clone(),
                tools: session.specifications(),
            };
            let server_model = policy.configured_model(&self.server_models);
            let (text, calls) = match self.one_pass(&request, server_model).await {
                Ok(answer) => answer,
                Err(error) => return ReviewOutcome::Unavailable(error.to_string()),
            };
            let Some(call) = calls.into_iter().next() else {
                messages.push(ChatMessage::Assistant {
                    content: Some(text),
                    tool_calls: Vec::new(),
                });
                messages.push(ChatMessage::System {
                    content: "Give your verdict by calling submit_review.".to_owned(),
                });
                continue;
            };
            if call.name == SubmitReview::NAME {
                let prepared = call
                    .parse_arguments()
                    .ok()
                    .and_then(|args| session.prepare(&call.name, args).ok());
                if let Some(verdict) = prepared.as_ref().and_then(verdict_of) {
                    return ReviewOutcome::Verdict(verdict);
                }
                messages.extend(exchange(&call, Failure::invalid_verdict().compact_text()));
                continue;
            }
            // A lookup, run through the stage as the reviewer (boxed: the stage is what called us).
            let outcome = Box::pin(execute_tool_call(&session, Some(&call), &mut Vec::new())).await;
            match outcome {
                ToolCallOutcome::History { entry } => {
                    messages.extend(exchange(&call, entry.response.to_string()));
                }
                ToolCallOutcome::Restart(_) => {}
                ToolCallOutcome::Abort { status } => {
                    return ReviewOutcome::Unavailable(format!(
                        "review stopped: {}",
                        status.as_str()
                    ));
                }
            }
        }
        ReviewOutcome::Unavailable("the reviewer gave no verdict".to_owned())
    }

    /// One pass over the reviewer's attempts (keys and models; a server's own model first),
    /// consumed to its end.
    async fn one_pass(
        &self,
        request: &ModelRequest,
        server_model: Option<&str>,
    ) -> Result<(String, Vec<ToolCallRequest>), ModelError> {
        let mut attempts = self.model.attempts();
        if let Some(model) = server_model {
            let first: Vec<_> = attempts
                .iter()
                .filter(|a| a.model_index == 0)
                .map(|a| crate::domain::ports::Attempt {
                    model: model.to_owned(),
                    model_index: usize::MAX,
                    key_index: a.key_index,
                    input_budget: None,
                })
                .collect();
            attempts.splice(0..0, first);
        }
        let mut last = None;
        for attempt in attempts {
            let error = match self.model.stream(&attempt, request).await {
                Ok(mut stream) => {
                    let mut text = String::new();
                    let mut failed = None;
                    while let Some(event) = stream.next().await {
                        match event {
                            Ok(ModelEvent::Text(t)) => text.push_str(&t),
                            Ok(ModelEvent::End { tool_calls, .. }) => {
                                return Ok((text, tool_calls));
                            }
                            Err(error) => {
                                failed = Some(error);
                                break;
                            }
                        }
                    }
                    failed.unwrap_or_else(|| {
                        ModelError::new(FailureClass::Network, None, "reviewer stream cut")
                    })
                }
                Err(error) => error,
            };
            self.model.report_failure(&attempt, error.class);
            let retry = error.class.retry();
            last = Some(error);
            if retry == Retry::No {
                break;
            }
        }
        Err(last.unwrap_or_else(|| {
            ModelError::new(
                FailureClass::Unauthorized,
                None,
                "no reviewer model is configured",
            )
        }))
    }
}

/// The assistant's call and its answer, as history for the reviewer's next pass. Arguments
/// that do not parse go back as `{}`, as the persona's history has them: servers refuse a
/// history holding broken JSON (llama.cpp: 500 "Failed to parse tool call arguments as JSON"),
/// which would fail every later review of the turn.
fn exchange(call: &ToolCallRequest, response: String) -> [ChatMessage; 2] {
    let arguments = serde_json::from_str::<serde_json::Value>(&call.arguments)
        .map_or_else(|_| "{}".to_owned(), |v| canonical_json(&v));
    [
        ChatMessage::Assistant {
            content: None,
            tool_calls: vec![AssistantToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments,
            }],
        },
        ChatMessage::Tool {
            call_id: call.id.clone(),
            content: response,
        },
    ]
}

/// The verdict in a validated `submit_review` request.
fn verdict_of(prepared: &PreparedCall) -> Option<ReviewVerdict> {
    let verdict: SubmittedVerdict = serde_json::from_value(prepared.arguments.clone()).ok()?;
    Some(match verdict.decision {
        Decision::Pass => ReviewVerdict::Pass,
        Decision::Reject => ReviewVerdict::Reject {
            findings: verdict.findings,
            correction_allowed: verdict.correction_allowed,
        },
    })
}

#[async_trait]
impl Reviewer for ModelReviewer {
    async fn review_request(&self, author: &ToolSession, request: &PreparedCall) -> ReviewOutcome {
        let earlier = author.turn().review(|r| r.calls.clone());
        let mut subject = format!(
            "Review this tool request before it runs. It will run exactly as shown.\n\
             Tool: {}\nArguments: {}\n",
            request.name, request.arguments
        );
        if earlier.is_empty() {
            subject.push_str("\nNo earlier calls in this reply.");
        } else {
            subject.push_str("\nEarlier calls in this reply, with their real outcomes:");
            for call in earlier {
                subject.push_str(&format!(
                    "\n- {} {} -> {}",
                    call.tool, call.arguments, call.outcome
                ));
            }
        }
        self.run(author, subject).await
    }

    async fn review_reply(&self, author: &ToolSession, draft: &str) -> ReviewOutcome {
        let subject = format!(
            "Review this reply before it is posted in the channel. Pass it, or reject it with \
             short findings the author can act on.\n\nReply:\n{draft}"
        );
        self.run(author, subject).await
    }
}

#[cfg(test)]
mod tests {
    use super::exchange;
    use crate::domain::call::ToolCallRequest;
    use crate::domain::ports::ChatMessage;

    // A `submit_review` call whose arguments do not parse goes back into the reviewer's history as
    // `{}`, never as the broken text.
    #[test]
    fn unparseable_arguments_go_back_as_an_empty_object() {
        for (raw, stored) in [
            (r#"{"decision": "pass""#, "{}"),
            ("not json", "{}"),
            (r#"{"b":1, "a":2}"#, r#"{"a":2,"b":1}"#),
        ] {
            let call = ToolCallRequest::new("c1", "submit_review", raw);
            let [ChatMessage::Assistant { tool_calls, .. }, _] = exchange(&call, "{}".into())
            else {
                panic!("an assistant call first");
            };
            assert_eq!(tool_calls[0].arguments, stored, "{raw}");
        }
    }
}
