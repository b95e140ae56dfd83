//! Role-scoped tool sessions: the tools one caller (a role, in one turn) may see and call.
//!
//! Hiding a tool changes what the model sees; authorization decides what runs. `prepare` checks
//! the caller's role before it reads a single argument, so a guessed name of a tool that was
//! never shown is refused as `tool_denied` (SPEC S2).

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::registry::canonical_json;
use super::update_short_term_memory::UpdateShortTermMemory;
use super::{
    ArgError, RegisteredTool, Registry, Tool, ToolContext, ToolEnv, ToolError, ToolOutput,
};
use crate::domain::ports::{EventOutcome, ToolEvent};
use crate::domain::role::Role;
use crate::domain::turn::Turn;
use crate::redact::redact_parsed;

/// Why a session refused a call before running it (SPEC S4).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// No tool has this name.
    #[error("unknown tool `{name}`")]
    UnknownTool {
        name: String,
        allowed: Vec<&'static str>,
    },
    /// The tool exists, but the caller's role may not call it.
    #[error("role {role} may not call `{name}`")]
    Denied { name: String, role: Role },
    /// The tool may not be called again this turn (SPEC T12).
    #[error("`{name}` was already used this turn")]
    AlreadyUsed { name: &'static str },
    /// The arguments do not fit the tool's type.
    #[error("invalid arguments for `{name}`: {error}")]
    InvalidArguments { name: &'static str, error: ArgError },
}

impl SessionError {
    pub fn event_outcome(&self) -> EventOutcome {
        match self {
            Self::UnknownTool { .. } => EventOutcome::UnknownTool,
            Self::Denied { .. } => EventOutcome::Denied,
            Self::AlreadyUsed { .. } => EventOutcome::Blocked,
            Self::InvalidArguments { .. } => EventOutcome::InvalidArguments,
        }
    }
}

/// An authorized, parsed and validated request, detached from the model's text: what a reviewer
/// sees is exactly what execution receives (SPEC R1).
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedCall {
    pub name: &'static str,
    /// Canonical arguments, defaults filled in.
    pub arguments: Value,
    /// Name plus canonical arguments: the request's identity for reuse and review (SPEC R3, R4).
    pub identity: String,
}

impl PreparedCall {
    /// What review remembers of it.
    pub fn key(&self) -> crate::domain::review::RequestKey<'_> {
        crate::domain::review::RequestKey {
            name: self.name,
            identity: &self.identity,
        }
    }
}

/// Why [`ToolSession::execute`] did not return an output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error(transparent)]
    Refused(#[from] SessionError),
    #[error(transparent)]
    Failed(#[from] ToolError),
}

/// The tools one caller may see and call in one turn.
pub struct ToolSession {
    role: Role,
    registry: Arc<Registry>,
    turn: Arc<Turn>,
    env: Arc<ToolEnv>,
    /// The server's sticker names, shown in the sticker tool's description this turn.
    sticker_names: Vec<String>,
    /// The server's own emoji names, shown in the reaction tool's description (SPEC E1).
    emoji_names: Vec<String>,
    /// Tools this turn does not offer because they could do nothing here ([`Self::without`]).
    idle: Vec<&'static str>,
    /// The outside tools of the MCP servers this turn's server turned on, as they were when
    /// the session began: a list that changes mid-turn changes the next turn (SPEC E4).
    outside: Vec<Arc<RegisteredTool>>,
}

/// Most sticker names listed in the sticker tool's description.
pub const STICKER_NAMES_SHOWN: usize = 50;
/// Longest sticker name shown (Discord allows 30).
const STICKER_NAME_MAX: usize = 30;

/// Names as a tool's description lists them: no control characters, at most
/// [`STICKER_NAME_MAX`] characters each, at most [`STICKER_NAMES_SHOWN`] of them.
fn shown_names(names: impl IntoIterator<Item = String>) -> Vec<String> {
    names
        .into_iter()
        .map(|n| {
            n.chars()
                .filter(|c| !c.is_control())
                .take(STICKER_NAME_MAX)
                .collect()
        })
        .filter(|n: &String| !n.trim().is_empty())
        .take(STICKER_NAMES_SHOWN)
        .collect()
}

impl ToolSession {
    pub fn new(role: Role, registry: Arc<Registry>, turn: Arc<Turn>, env: Arc<ToolEnv>) -> Self {
        let outside = match &env.outside {
            Some(catalog) => catalog
                .tools()
                .iter()
                .filter(|t| {
                    t.server
                        .as_ref()
                        .is_some_and(|s| turn.outside_servers.contains(s))
                })
                .cloned()
                .collect(),
            None => Vec::new(),
        };
        Self {
            role,
            registry,
            turn,
            env,
            sticker_names: Vec::new(),
            emoji_names: Vec::new(),
            idle: Vec::new(),
            outside,
        }
    }

    /// A tool by name: the bot's own, else an outside tool this turn has.
    pub fn lookup(&self, name: &str) -> Option<&RegisteredTool> {
        self.registry.get(name).or_else(|| {
            self.outside
                .iter()
                .find(|t| t.name == name)
                .map(AsRef::as_ref)
        })
    }

    /// The tools of this session's role, the bot's own first.
    fn of_role(&self) -> impl Iterator<Item = &RegisteredTool> {
        let role = self.role;
        self.registry.for_role(role).chain(
            self.outside
                .iter()
                .map(AsRef::as_ref)
                .filter(move |t| t.roles.contains(role)),
        )
    }

    /// Leaves `names` out of the tools this turn offers: they could do nothing here (no
    /// stickers, no image backend, no older messages, no facts), and each schema costs prompt
    /// tokens on every pass (SPEC C12). Only offering changes: a call still runs as usual.
    pub fn without(mut self, names: impl IntoIterator<Item = &'static str>) -> Self {
        self.idle.extend(names);
        self
    }

    /// Shows the server's sticker names in the sticker tool's description (at most
    /// [`STICKER_NAMES_SHOWN`]), so the model picks one that exists instead of guessing.
    pub fn with_sticker_names(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.sticker_names = shown_names(names);
        self
    }

    /// Shows the server's own emoji names in the reaction tool's description, as
    /// [`Self::with_sticker_names`] does for stickers (SPEC E1).
    pub fn with_emoji_names(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.emoji_names = shown_names(names);
        self
    }

    /// A session of another role in the same turn (the drafting reviewer's, for one).
    pub fn sibling(&self, role: Role) -> ToolSession {
        ToolSession::new(
            role,
            self.registry.clone(),
            self.turn.clone(),
            self.env.clone(),
        )
    }

    pub fn role(&self) -> Role {
        self.role
    }

    pub fn turn(&self) -> &Arc<Turn> {
        &self.turn
    }

    pub fn env(&self) -> &Arc<ToolEnv> {
        &self.env
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// A tool a turn the bot started itself never gets: a reminder's turn (or a random one)
    /// may not set a reminder, so a reminder cannot re-arm itself.
    fn withheld(&self, name: &str) -> bool {
        self.turn.quiet && name == super::create_reminder::CreateReminder::NAME
    }

    /// A tool this turn no longer offers: short-term memory after its one update (SPEC T12).
    fn used_up(&self, name: &str) -> bool {
        name == UpdateShortTermMemory::NAME && self.turn.short_term_memory_locked()
    }

    /// Whether the model is shown `tool` now: its role, the turn's admission (deliberate tool
    /// mode gates the persona's tools, SPEC T4) and one-shot rules (SPEC T12).
    fn offers(&self, tool: &RegisteredTool) -> bool {
        // An outside lookup is never gated; an outside tool with an effect has no phrases, so
        // deliberate mode does not offer it (SPEC T4, E4).
        let outside_lookup = tool.server.is_some() && !tool.gated;
        let admitted =
            self.role != Role::Persona || outside_lookup || self.turn.admission.admits(tool.name);
        admitted
            && !self.used_up(tool.name)
            && !self.withheld(tool.name)
            && !self.idle.contains(&tool.name)
    }

    /// The specifications (OpenAI function format) the model sees this pass.
    pub fn specifications(&self) -> Vec<Value> {
        self.of_role()
            .filter(|t| self.offers(t))
            .map(|t| self.specification(t))
            .collect()
    }

    /// A tool's specification as this turn shows it: the sticker tool lists the server's
    /// stickers, the reaction tool its own emoji.
    fn specification(&self, tool: &RegisteredTool) -> Value {
        use crate::tools::react_to_message::ReactToMessage;
        use crate::tools::select_sticker_for_response::SelectStickerForResponse;
        let mut spec = tool.spec.clone();
        let (names, what) = match tool.name {
            SelectStickerForResponse::NAME => (&self.sticker_names, "stickers"),
            ReactToMessage::NAME => (&self.emoji_names, "own emoji"),
            _ => return spec,
        };
        if !names.is_empty()
            && let Some(description) = spec.pointer_mut("/function/description")
        {
            let listed = names
                .iter()
                .map(|n| format!("\"{n}\""))
                .collect::<Vec<_>>()
                .join(", ");
            *description = Value::String(format!(
                "{} This server's {what}: {listed}.",
                description.as_str().unwrap_or_default()
            ));
        }
        spec
    }

    /// The names the model sees this pass.
    pub fn offered_names(&self) -> Vec<&'static str> {
        self.of_role()
            .filter(|t| self.offers(t))
            .map(|t| t.name)
            .collect()
    }

    /// Authorizes, then parses and validates. The role is checked before the arguments are
    /// read; nothing runs here.
    pub fn prepare(&self, name: &str, arguments: Value) -> Result<PreparedCall, SessionError> {
        let Some(tool) = self.lookup(name) else {
            return Err(SessionError::UnknownTool {
                name: name.to_owned(),
                allowed: self.offered_names(),
            });
        };
        // Hiding is not authorizing: a withheld tool is refused even when called by name.
        if !tool.roles.contains(self.role) || self.withheld(tool.name) {
            return Err(SessionError::Denied {
                name: name.to_owned(),
                role: self.role,
            });
        }
        if self.used_up(tool.name) {
            return Err(SessionError::AlreadyUsed { name: tool.name });
        }
        let arguments =
            tool.prepare(arguments)
                .map_err(|error| SessionError::InvalidArguments {
                    name: tool.name,
                    error,
                })?;
        let identity = format!("{}{}", tool.name, canonical_json(&arguments));
        Ok(PreparedCall {
            name: tool.name,
            arguments,
            identity,
        })
    }

    /// Runs a prepared call, without a watchdog: the stage adds one (SPEC T5).
    pub async fn dispatch(
        &self,
        call: &PreparedCall,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let Some(tool) = self.lookup(call.name) else {
            // A PreparedCall only comes from this registry's `prepare`.
            return Err(ToolError::Failed {
                code: Some("internal_error".into()),
                message: format!("tool `{}` vanished from the registry", call.name),
            });
        };
        let ctx = ToolContext {
            turn: &self.turn,
            env: &self.env,
            role: self.role,
        };
        tool.run(&ctx, call.arguments.clone(), cancel).await
    }

    /// Authorize, validate, run: the direct path for callers outside the tool loop. Refusals
    /// and outcomes are recorded as tool events (SPEC S6).
    pub async fn execute(
        &self,
        name: &str,
        arguments: Value,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, CallError> {
        let started = Instant::now();
        let redacted = self.redact(&arguments);
        let prepared = match self.prepare(name, arguments) {
            Ok(prepared) => prepared,
            Err(refusal) => {
                self.record_event(name, redacted, refusal.event_outcome(), None, started)
                    .await;
                return Err(refusal.into());
            }
        };
        let result = self.dispatch(&prepared, cancel).await;
        let outcome = if result.is_ok() {
            EventOutcome::Succeeded
        } else {
            EventOutcome::Failed
        };
        self.record_event(name, redacted, outcome, None, started)
            .await;
        Ok(result?)
    }

    /// Redacts arguments for events and notices.
    pub fn redact(&self, arguments: &Value) -> String {
        redact_parsed(arguments, self.env.config.thought_log.argument_max_chars)
    }

    /// Records one tool event for this session's turn and role.
    pub async fn record_event(
        &self,
        tool: &str,
        arguments: String,
        outcome: EventOutcome,
        code: Option<String>,
        started: Instant,
    ) {
        let scope = &self.turn.scope;
        let event = ToolEvent {
            turn: self.turn.id,
            server: scope.server,
            channel: scope.channel,
            user: scope.user,
            role: self.role,
            tool: tool.to_owned(),
            arguments,
            outcome,
            code,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            at_ms: self.env.ports.clock.now_ms(),
        };
        self.env.ports.events.record(event).await;
    }
}
