//! (a) Turns per second and peak memory: 10,000 channels each run one turn (20 text chunks, one
//! tool call, a final text) through the orchestrator, the pass loop, the segmenter and the tool
//! stage, against an in-process zero-latency model and sinks that drop what they get.
//! (b) `/kill` latency, from the request to the turn ended, during a stream and during a tool.
//!
//! Run: `cargo bench --bench turns`.

// Public, so that what this bench leaves unused of it is not dead code.
pub mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use async_trait::async_trait;
use persona_bot::config::Config;
use persona_bot::domain::personas::Personas;
use persona_bot::domain::ports::{ChatMessage, NewQueuedMessage};
use persona_bot::domain::role::{Role, RoleSet};
use persona_bot::domain::scope::{ChannelId, MessageId, PersonaId, ServerId, UserId, Visibility};
use persona_bot::engine::orchestrator::{KillReport, Orchestrator, OrchestratorDeps};
use persona_bot::engine::passes::TurnDeps;
use persona_bot::locale::Locale;
use persona_bot::stage::deliberate::KeywordPacks;
use persona_bot::testkit::{
    Fakes, InMemoryPersonas, InMemoryQueue, InMemorySettings, ScriptedModel, ScriptedPass, Step,
};
use persona_bot::tools::{Registry, Tool, ToolContext, ToolEnv, ToolError, ToolOutput};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

const CHANNELS: u64 = 10_000;
const KILLS: usize = 1_000;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LookupArgs {
    /// What to look up.
    topic: String,
}

/// A quick tool, and (with `slow`) one that waits until it is cancelled.
struct Lookup {
    slow: bool,
}

#[async_trait]
impl Tool for Lookup {
    type Args = LookupArgs;
    const NAME: &'static str = "look_up";
    const ROLES: RoleSet = RoleSet::of(&[Role::Persona]);
    const DESCRIPTION: &'static str = "Looks something up.";
    const GATED: bool = false;

    async fn execute(
        &self,
        _ctx: &ToolContext<'_>,
        args: LookupArgs,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        if self.slow {
            cancel.cancelled().await;
        }
        Ok(ToolOutput::data(serde_json::json!({ "found": args.topic })))
    }
}

fn message(channel: u64, id: u64, content: &str) -> NewQueuedMessage {
    NewQueuedMessage {
        server: Some(ServerId(1)),
        channel: ChannelId(channel),
        message: MessageId(id),
        author: UserId(7),
        author_name: "bench".into(),
        content: content.into(),
        follow_up: false,
        enqueued_at_ms: 0,
        persona: PersonaId("aria".into()),
        visibility: Visibility::Public,
        locale: Locale::En,
        quiet: false,
        attachments: Vec::new(),
        mentions: Vec::new(),
    }
}

fn orchestrator(model: ScriptedModel, slow_tool: bool) -> Orchestrator {
    let config = Arc::new(Config::shipped_defaults());
    let fakes = Fakes::default();
    let registry = Arc::new(Registry::builtin(&config).with(Lookup { slow: slow_tool }));
    let env = Arc::new(ToolEnv::new(fakes.discarding(), config.clone()));
    let settings = Arc::new(InMemorySettings::default());
    Orchestrator::new(OrchestratorDeps {
        turn: TurnDeps {
            model: Arc::new(model),
            registry,
            env,
            files: persona_bot::engine::attachments::AttachmentPolicy::default(),
            strict_roles: true,
        },
        queue: Arc::new(InMemoryQueue::default()),
        settings: settings.clone(),
        personas: Arc::new(Personas::new(
            &config,
            Arc::new(InMemoryPersonas::default()),
            settings,
        )),
        packs: KeywordPacks::from_config(&config.deliberate),
        config,
    })
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

async fn throughput() {
    let chunk: Vec<Step> = (0..20)
        .map(|i| {
            Step::Text(if i % 5 == 4 {
                "end of a paragraph.\n\n".to_owned()
            } else {
                format!("word{i} and more ")
            })
        })
        .collect();
    let model = ScriptedModel::responding(move |request| {
        let tool_done = request
            .messages
            .iter()
            .any(|m| matches!(m, ChatMessage::Tool { .. }));
        if tool_done {
            ScriptedPass::text(&["Here is what I found."])
        } else {
            let mut steps = chunk.clone();
            steps.push(Step::Call {
                name: "look_up".into(),
                arguments: r#"{"topic":"otters"}"#.into(),
            });
            ScriptedPass::Stream(steps)
        }
    });
    let orchestrator = orchestrator(model, false);
    let mut finished = orchestrator.subscribe();
    let before = peak_rss_mib();
    let started = Instant::now();
    for channel in 1..=CHANNELS {
        orchestrator
            .submit(message(channel, channel, "tell me about otters"))
            .await;
    }
    let mut done = 0u64;
    let mut completed = 0u64;
    while done < CHANNELS {
        match finished.recv().await {
            Ok(f) => {
                done += 1;
                if f.report.status == persona_bot::domain::turn::TurnStatus::Completed
                    && f.report.tool_calls == 1
                {
                    completed += 1;
                }
            }
            Err(RecvError::Lagged(n)) => done += n,
            Err(RecvError::Closed) => break,
        }
    }
    let elapsed = started.elapsed();
    println!(
        "throughput: {CHANNELS} channels x 1 turn (20 chunks + 1 tool call + final text) in {elapsed:.2?}: {:.0} turns/s; peak RSS {:.1} MiB (before: {before:.1} MiB); {completed} seen completed with their tool call",
        CHANNELS as f64 / elapsed.as_secs_f64(),
        peak_rss_mib(),
    );
    orchestrator.shutdown().await;
}

async fn kill_latency(during_tool: bool) {
    let opened = Arc::new(AtomicUsize::new(0));
    let seen = opened.clone();
    let model = ScriptedModel::responding(move |_| {
        seen.fetch_add(1, Ordering::SeqCst);
        if during_tool {
            ScriptedPass::call("look_up", r#"{"topic":"slow"}"#)
        } else {
            ScriptedPass::Stream(vec![Step::Text("Streaming...".into()), Step::Hang])
        }
    });
    let orchestrator = orchestrator(model, true);
    let channel = ChannelId(1);
    let mut latencies = Vec::with_capacity(KILLS);
    for i in 0..KILLS {
        let before = opened.load(Ordering::SeqCst);
        orchestrator.submit(message(1, i as u64 + 1, "go")).await;
        // Wait until the turn is inside the stream (or the tool).
        while opened.load(Ordering::SeqCst) == before {
            tokio::task::yield_now().await;
        }
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
        let asked = Instant::now();
        let report = orchestrator.kill(channel, UserId(7), false).await;
        latencies.push(asked.elapsed());
        assert!(
            matches!(
                report,
                KillReport::Stopped {
                    turn_stopped: true,
                    ..
                }
            ),
            "{report:?}"
        );
    }
    latencies.sort_unstable();
    println!(
        "/kill during {}: median {:.1?}, p99 {:.1?}, max {:.1?} ({KILLS} kills)",
        if during_tool { "a tool" } else { "a stream" },
        common::percentile(&latencies, 0.5),
        common::percentile(&latencies, 0.99),
        latencies[latencies.len() - 1],
    );
    orchestrator.shutdown().await;
}

fn main() {
    if !common::asked_for("turns") {
        return;
    }
    common::block_on(async {
        throughput().await;
        kill_latency(false).await;
        kill_latency(true).await;
    });
}
