//! Tools: the [`Tool`] trait, the [`registry`] mapping each tool to its argument type, schema and
//! roles, role-scoped [`session`]s, and the built-in tools, one per file.
//!
//! A tool gets its scope (server, channel, user, persona) from [`ToolContext`], never from its
//! arguments; argument types reject unknown fields (SPEC S3). No tool splices an argument into a
//! shell command, a file path or a URL host, and no tool takes a provider key (SPEC S7).

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::domain::ports::{Expression, HistoryMessage, PortError, Ports};
use crate::domain::provider_failure::ProviderFailure;
use crate::domain::role::{Role, RoleSet};
use crate::domain::scope::Scope;
use crate::domain::turn::Turn;

pub mod outside;
pub mod registry;
pub mod reviewer;
pub mod session;

pub mod create_reminder;
pub mod fetch_older_messages;
pub mod forget_fact;
pub mod plan_image;
pub mod react_to_message;
pub mod recall_facts;
pub mod remember_fact;
pub mod select_sticker_for_response;
pub mod submit_review;
pub mod update_short_term_memory;

pub use registry::{Ask, RegisteredTool, Registry};
pub use reviewer::Reviewer;
pub use session::{PreparedCall, SessionError, ToolSession};

/// What every tool call may use: the ports, the configuration, and the drafting reviewer.
pub struct ToolEnv {
    pub ports: Ports,
    pub config: Arc<Config>,
    /// Reviews tool requests and replies when a server has Response Drafting on (SPEC C8);
    /// `None` when no reviewer is configured: drafting then holds nothing back.
    pub reviewer: Option<Arc<dyn Reviewer>>,
    /// The outside tools MCP servers offer (SPEC E4); `None` when no server is configured.
    pub outside: Option<Arc<dyn outside::OutsideCatalog>>,
}

impl ToolEnv {
    /// An environment without a reviewer.
    pub fn new(ports: Ports, config: Arc<Config>) -> Self {
        Self {
            ports,
            config,
            reviewer: None,
            outside: None,
        }
    }
}

/// The context of one call: the turn (scope, locale, shared state), the environment and the
/// caller's role.
pub struct ToolContext<'a> {
    pub turn: &'a Turn,
    pub env: &'a ToolEnv,
    pub role: Role,
}

impl ToolContext<'_> {
    pub fn scope(&self) -> &Scope {
        &self.turn.scope
    }

    pub fn ports(&self) -> &Ports {
        &self.env.ports
    }

    pub fn now_ms(&self) -> i64 {
        self.env.ports.clock.now_ms()
    }
}

/// A context-restart payload (`context_restart_*`): the pass restarts with more context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContextRestart {
    /// Older channel messages to add to the turn's context.
    OlderMessages(Vec<HistoryMessage>),
}

/// What a tool returns. Only `data` and `message` reach the model (SPEC T7); the other fields
/// are internal delivery instructions for the stage.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    /// The tool's data; `None` becomes `{"status":"completed"}`.
    pub data: Option<Value>,
    /// A note for the model, placed beside `result`.
    pub message: Option<String>,
    /// A sticker or a reaction to deliver now (expression tools, SPEC T9, E1).
    pub expression: Option<Expression>,
    /// A context restart for the restart handler (SPEC T6).
    pub restart: Option<ContextRestart>,
    /// The caller's structured result is final (`submit_*` tools).
    pub end_turn: bool,
}

impl ToolOutput {
    pub fn data(data: Value) -> Self {
        Self {
            data: Some(data),
            ..Self::default()
        }
    }

    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }
}

/// Why a tool failed. Each audience gets its own message: operators see `Display` and the port
/// detail in logs; the model gets the payload the failure builder makes (SPEC T8).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// A valid call about something that does not exist or is not allowed by business rules
    /// (an unknown sticker name, a full memory). Shown to the model as is.
    #[error("{message}")]
    Business { code: String, message: String },
    /// The tool failed; `message` is safe to show the model.
    #[error("{message}")]
    Failed {
        code: Option<String>,
        message: String,
    },
    /// A provider-backed (media) tool failed at its provider.
    #[error("provider failure: {}", .0.class().code())]
    Provider(ProviderFailure),
    /// A port's service failed; the detail stays in logs.
    #[error(transparent)]
    Port(#[from] PortError),
}

impl ToolError {
    pub fn business(code: &str, message: impl Into<String>) -> Self {
        Self::Business {
            code: code.to_owned(),
            message: message.into(),
        }
    }
}

/// An argument problem: the JSON path of the first error and what is wrong there (SPEC S4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError {
    pub path: String,
    pub message: String,
}

impl ArgError {
    pub fn at(path: &str, message: impl Into<String>) -> Self {
        Self {
            path: path.to_owned(),
            message: message.into(),
        }
    }

    /// Checks a string's length in characters.
    pub fn check_len(path: &str, value: &str, min: usize, max: usize) -> Result<(), Self> {
        let len = value.trim().chars().count();
        if len < min {
            Err(Self::at(
                path,
                format!("must have at least {min} characters"),
            ))
        } else if value.chars().count() > max {
            Err(Self::at(
                path,
                format!("must have at most {max} characters"),
            ))
        } else {
            Ok(())
        }
    }
}

impl ArgError {
    /// Checks that a number lies in `min..=max`.
    pub fn check_range<T: PartialOrd + std::fmt::Display + Copy>(
        path: &str,
        value: T,
        min: T,
        max: T,
    ) -> Result<(), Self> {
        if (min..=max).contains(&value) {
            Ok(())
        } else {
            Err(Self::at(path, format!("must be between {min} and {max}")))
        }
    }
}

impl std::fmt::Display for ArgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// A tool. Its argument type is a serde struct with `deny_unknown_fields`; the JSON schema the
/// model sees is generated from the same type, so the two cannot drift (SPEC S1).
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    type Args: DeserializeOwned + Serialize + JsonSchema + Send + 'static;
    /// The name the model calls (`verb_noun`).
    const NAME: &'static str;
    /// The roles that may see and call it.
    const ROLES: RoleSet;
    /// What the model reads about the tool.
    const DESCRIPTION: &'static str;
    /// Whether deliberate tool mode gates it behind trigger phrases (SPEC T4). Read-only lookups
    /// and `submit_*` tools are not gated.
    const GATED: bool = true;
    /// The locale key of its progress line, if it shows one (SPEC T11).
    const PROGRESS_KEY: Option<&'static str> = None;
    /// Whether its output is public (a sticker): with drafting On it passes the same
    /// checkpoint as the reply before it is sent.
    const PUBLIC_OUTPUT: bool = false;
    /// Whether a run changes something outside the turn (posts, stores, schedules). Such a
    /// tool's outcome is written before the stage returns it, so a turn resumed after a crash
    /// reuses it instead of running the tool again (SPEC D5); a pure lookup's outcome is
    /// bookkeeping and goes with the next batch.
    const EXTERNAL_EFFECT: bool = true;

    /// The tool's own watchdog timeout when config names none (config default otherwise).
    fn timeout(&self) -> Option<std::time::Duration> {
        None
    }

    /// Checks the parsed arguments beyond their types (lengths, ranges).
    fn validate(&self, _args: &Self::Args) -> Result<(), ArgError> {
        Ok(())
    }

    /// Whether this call needs someone's approval before it runs (SPEC E3), and if so what it
    /// will do, in plain words in the requester's language, written from the validated
    /// arguments (never the model's words about them). Most tools need none.
    async fn approval(
        &self,
        _ctx: &ToolContext<'_>,
        _args: &Self::Args,
    ) -> Result<Option<String>, ToolError> {
        Ok(None)
    }

    /// Runs the call. `cancel` fires on `/kill` or the watchdog's timeout; a tool with external
    /// work should stop it when it fires.
    async fn execute(
        &self,
        ctx: &ToolContext<'_>,
        args: Self::Args,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError>;
}
