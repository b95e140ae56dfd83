//! The model port: what the pass loop needs from an LLM provider. `provider/` implements it on
//! any OpenAI-compatible endpoint; tests and benchmarks use a scripted in-process model.
//!
//! One pass is one streamed call. The provider offers an ordered list of [`Attempt`]s (model
//! fallback, and the keys of each model not cooling down); the loop tries them in order, reports
//! each failure so the provider can cool a key down, and stops when the failure's class says no
//! other key or model can help (SPEC C11).

use async_trait::async_trait;
use futures::stream::BoxStream;
use serde_json::Value;

use crate::domain::call::ToolCallRequest;
use crate::domain::provider_failure::FailureClass;

/// One message of the conversation sent to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatMessage {
    System {
        content: String,
    },
    User {
        /// The author's display name, when the message came from a person.
        name: Option<String>,
        content: String,
        /// Pictures the message carries, for a model that can see; `content` names them too,
        /// so a model that cannot see still knows they are there.
        images: Vec<ImagePart>,
    },
    Assistant {
        content: Option<String>,
        tool_calls: Vec<AssistantToolCall>,
    },
    Tool {
        call_id: String,
        content: String,
    },
}

/// A picture as the model receives it: a `data:` URL (the bytes, base64), never an address
/// the model's server would fetch. Shared, so rebuilding a pass's request copies no image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImagePart {
    pub data_url: std::sync::Arc<str>,
}

/// A tool call as it appears in an assistant message of the history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssistantToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// One pass's request.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    pub messages: Vec<ChatMessage>,
    /// Tool specifications (OpenAI function format) of the caller's session.
    pub tools: Vec<Value>,
}

/// Why a pass's stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finish {
    Stop,
    ToolCalls,
    /// `length`: the output was cut; any tool call arguments are flagged truncated.
    Length,
    /// A value we do not know (`""`, `eos_token`, ...): treated like `stop`.
    Other(String),
    /// The stream ended with no finish reason at all: treated as cut.
    Missing,
}

/// Token counts, when the provider reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenUsage {
    pub prompt: u32,
    pub completion: u32,
}

/// What a pass's stream yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelEvent {
    /// Visible text, as it arrives.
    Text(String),
    /// The end: the tool calls assembled from fragments (empty when the pass is plain text),
    /// with truncation already flagged for the stage (SPEC T3).
    End {
        tool_calls: Vec<ToolCallRequest>,
        finish: Finish,
        usage: Option<TokenUsage>,
    },
}

/// A failed provider call. `detail` is for operators (logs) only: it may hold the provider's
/// raw text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} ({}): {detail}", class.code(), status.map_or_else(|| "no status".to_owned(), |s| s.to_string()))]
pub struct ModelError {
    pub class: FailureClass,
    pub status: Option<u16>,
    pub detail: String,
}

impl ModelError {
    pub fn new(class: FailureClass, status: Option<u16>, detail: impl Into<String>) -> Self {
        Self {
            class,
            status,
            // Provider text may echo a key or token: it is logged and shown to moderators.
            detail: crate::redact::redact_text(&detail.into()),
        }
    }
}

/// One way to run a pass: which model, with which key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub model: String,
    /// Position in the fallback list.
    pub model_index: usize,
    /// Which of the provider's keys.
    pub key_index: usize,
    /// Most tokens the request may take (the model's context window less its reply's), when
    /// the configuration says; history is trimmed to fit.
    pub input_budget: Option<u32>,
}

/// A pass's event stream. Dropping it drops the HTTP request.
pub type ModelStream = BoxStream<'static, Result<ModelEvent, ModelError>>;

#[async_trait]
pub trait ChatModel: Send + Sync {
    /// The attempts for the next pass, in order: each model of the fallback list with its
    /// usable keys (keys cooling down last).
    fn attempts(&self) -> Vec<Attempt>;
    /// Starts one streamed pass.
    async fn stream(
        &self,
        attempt: &Attempt,
        request: &ModelRequest,
    ) -> Result<ModelStream, ModelError>;
    /// Records a failed attempt (cools its key down when the class says so).
    fn report_failure(&self, attempt: &Attempt, class: FailureClass);
}
