//! Shared set-up for the tool-stage tests: a harness with the built-in registry plus test tools,
//! recording fakes of every port, and helpers to run one call through `execute_tool_call`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use persona_bot::config::Config;
use persona_bot::domain::history::ToolHistoryEntry;
use persona_bot::domain::provider_failure::ProviderFailure;
use persona_bot::domain::role::{Role, RoleSet};
use persona_bot::domain::scope::Scope;
use persona_bot::domain::turn::Turn;
use persona_bot::locale::Locale;
use persona_bot::stage::{ToolCallOutcome, ToolCallRequest, execute_tool_call};
use persona_bot::testkit::Fakes;
use persona_bot::tools::{
    ArgError, Registry, Tool, ToolContext, ToolEnv, ToolError, ToolOutput, ToolSession,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// What the test tools saw.
#[derive(Default)]
pub struct Probe {
    pub runs: AtomicUsize,
    pub last_args: Mutex<Option<Value>>,
    /// The channel's active tool name as seen from inside the tool.
    pub active_seen: Mutex<Option<String>>,
    /// The tool's cancellation token, kept to check it was cancelled.
    pub token: Mutex<Option<CancellationToken>>,
}

impl Probe {
    pub fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }

    /// Whether the tool ran and its cancellation token was cancelled (a kill or a timeout).
    /// Panics when the tool never ran: there is no token to check.
    pub fn was_cancelled(&self) -> bool {
        self.token
            .lock()
            .unwrap()
            .as_ref()
            .expect("the tool ran and kept its token")
            .is_cancelled()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProbeArgs {
    /// Any small number.
    pub n: u8,
    /// Optional text (may hold secrets in tests, to check redaction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What `probe` does when it runs.
#[derive(Clone)]
pub enum Behaviour {
    /// Returns `data` (and `message`).
    Succeed {
        data: Option<Value>,
        message: Option<String>,
    },
    /// Fails with this error.
    Fail(ToolError),
    /// Panics (a buggy tool).
    Panic,
    /// Sleeps this long (ignoring cancellation unless `honour_cancel`), then succeeds.
    Sleep {
        duration: Duration,
        honour_cancel: bool,
    },
}

impl Behaviour {
    /// Succeeds with no data and no message.
    pub fn succeed() -> Self {
        Self::Succeed {
            data: None,
            message: None,
        }
    }
}

/// A test tool for persona and reviewer: records its runs, then behaves as told.
pub struct ProbeTool {
    pub probe: Arc<Probe>,
    pub behaviour: Behaviour,
}

#[async_trait]
impl Tool for ProbeTool {
    type Args = ProbeArgs;
    const NAME: &'static str = "probe";
    const ROLES: RoleSet = RoleSet::of(&[Role::Persona, Role::Reviewer]);
    const DESCRIPTION: &'static str = "A test tool that records its runs.";
    const GATED: bool = true;
    const PROGRESS_KEY: Option<&'static str> = Some("progress-plan-image");

    fn validate(&self, args: &ProbeArgs) -> Result<(), ArgError> {
        if args.n > 100 {
            return Err(ArgError::at("$.n", "must be at most 100"));
        }
        Ok(())
    }

    async fn execute(
        &self,
        ctx: &ToolContext<'_>,
        args: ProbeArgs,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        *self.probe.last_args.lock().unwrap() = Some(serde_json::to_value(&args).unwrap());
        *self.probe.active_seen.lock().unwrap() =
            ctx.turn.channel.active_tool().map(|s| s.to_string());
        *self.probe.token.lock().unwrap() = Some(cancel.clone());
        // Counted last: a test that saw the run also sees what it recorded (its token).
        self.probe.runs.fetch_add(1, Ordering::SeqCst);
        match &self.behaviour {
            Behaviour::Succeed { data, message } => Ok(ToolOutput {
                data: data.clone(),
                message: message.clone(),
                ..ToolOutput::default()
            }),
            Behaviour::Fail(error) => Err(error.clone()),
            Behaviour::Panic => panic!("probe panicked with note {:?}", args.note),
            Behaviour::Sleep {
                duration,
                honour_cancel,
            } => {
                if *honour_cancel {
                    tokio::select! {
                        () = cancel.cancelled() => {
                            return Err(ToolError::Failed { code: None, message: "cancelled".into() });
                        }
                        () = tokio::time::sleep(*duration) => {}
                    }
                } else {
                    tokio::time::sleep(*duration).await;
                }
                Ok(ToolOutput::default())
            }
        }
    }
}

/// A provider-backed test tool (a media tool) that always fails with the given failure.
pub struct MediaTool(pub ProviderFailure);

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MediaArgs {
    /// What to make.
    pub prompt: String,
}

#[async_trait]
impl Tool for MediaTool {
    type Args = MediaArgs;
    const NAME: &'static str = "render_image";
    const ROLES: RoleSet = RoleSet::of(&[Role::Persona, Role::ImagePlanner]);
    const DESCRIPTION: &'static str = "A test media tool backed by a provider.";
    const GATED: bool = false;

    async fn execute(
        &self,
        _ctx: &ToolContext<'_>,
        _args: MediaArgs,
        _cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        Err(ToolError::Provider(self.0.clone()))
    }
}

/// The registry, ports and config a test runs against.
pub struct Harness {
    pub fakes: Fakes,
    pub config: Arc<Config>,
    pub registry: Arc<Registry>,
    pub env: Arc<ToolEnv>,
    pub probe: Arc<Probe>,
}

impl Default for Harness {
    fn default() -> Self {
        Self::new()
    }
}

impl Harness {
    /// Built-in tools plus a `probe` that succeeds with no data.
    pub fn new() -> Self {
        Self::build(
            Fakes::default(),
            Behaviour::Succeed {
                data: None,
                message: None,
            },
            |r| r,
        )
    }

    pub fn with_probe(behaviour: Behaviour) -> Self {
        Self::build(Fakes::default(), behaviour, |r| r)
    }

    pub fn with_fakes(fakes: Fakes) -> Self {
        Self::build(
            fakes,
            Behaviour::Succeed {
                data: None,
                message: None,
            },
            |r| r,
        )
    }

    /// Full control: fakes, probe behaviour, extra tools, and config edits.
    pub fn build(
        fakes: Fakes,
        behaviour: Behaviour,
        extra: impl FnOnce(Registry) -> Registry,
    ) -> Self {
        Self::build_with_config(fakes, behaviour, extra, |_| {})
    }

    pub fn build_with_config(
        fakes: Fakes,
        behaviour: Behaviour,
        extra: impl FnOnce(Registry) -> Registry,
        edit: impl FnOnce(&mut Config),
    ) -> Self {
        let mut config = Config::shipped_defaults();
        edit(&mut config);
        let config = Arc::new(config);
        let probe = Arc::new(Probe::default());
        let registry = extra(Registry::builtin(&config).with(ProbeTool {
            probe: probe.clone(),
            behaviour,
        }));
        let env = Arc::new(ToolEnv::new(fakes.ports(), config.clone()));
        Self {
            fakes,
            config,
            registry: Arc::new(registry),
            env,
            probe,
        }
    }

    /// The same harness with a drafting reviewer in its environment.
    pub fn with_reviewer(mut self, reviewer: Arc<dyn persona_bot::tools::Reviewer>) -> Self {
        self.env = Arc::new(ToolEnv {
            ports: self.env.ports.clone(),
            config: self.config.clone(),
            reviewer: Some(reviewer),
            outside: self.env.outside.clone(),
        });
        self
    }

    pub fn turn(&self, scope: Scope) -> Arc<Turn> {
        Arc::new(Turn::new(scope, Locale::En))
    }

    pub fn session(&self, role: Role, turn: &Arc<Turn>) -> ToolSession {
        ToolSession::new(role, self.registry.clone(), turn.clone(), self.env.clone())
    }

    /// Runs one call as `role` in `turn`, with no streamed text before it.
    pub async fn call(
        &self,
        role: Role,
        turn: &Arc<Turn>,
        name: &str,
        args: &str,
    ) -> ToolCallOutcome {
        let session = self.session(role, turn);
        let call = ToolCallRequest::new("call_1", name, args);
        execute_tool_call(&session, Some(&call), &mut Vec::new()).await
    }
}

/// The history entry of an outcome, or a panic saying what came instead.
pub fn entry(outcome: ToolCallOutcome) -> ToolHistoryEntry {
    match outcome {
        ToolCallOutcome::History { entry } => entry,
        other => panic!("expected a history entry, got {other:?}"),
    }
}

/// The failure code of a history entry's response.
pub fn code(entry: &ToolHistoryEntry) -> &str {
    entry.response["code"].as_str().unwrap_or("<no code>")
}
