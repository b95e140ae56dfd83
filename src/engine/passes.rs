//! The pass loop: one turn, pass after pass, until the model answers in text, a stop request or
//! a limit ends it (SPEC C9), with key rotation and model fallback retrying a failed pass
//! (SPEC C11). Completed tool outcomes are reused across those retries (SPEC R4): each retry is a
//! new invocation, and the stage answers a request an earlier invocation completed from its
//! record.
//!
//! A turn in progress is a [`TurnRun`]: its state lives on it, and each step of the loop is a
//! small method. The retried pass is in `passes/attempts.rs`, the held reply's review in
//! `passes/held_reply.rs`.

mod attempts;
mod held_reply;

use std::ops::ControlFlow;
use std::sync::Arc;

use self::attempts::PassKind;
use crate::config::TurnConfig;
use crate::domain::history::{EntryStatus, ToolHistoryEntry};
use crate::domain::ports::{ChatModel, Mention, Persona, Pings, TokenUsage};
use crate::domain::provider_failure::user_message;
use crate::domain::review::ReviewNote;
use crate::domain::role::Role;
use crate::domain::turn::{Turn, TurnStatus};
use crate::engine::context::{LoadedContext, Trigger};
use crate::engine::resume;
use crate::engine::stream::{PassEnd, ReplyDelivery};
use crate::locale;
use crate::stage::payload::Failure;
use crate::stage::{ToolCallOutcome, ToolCallRequest, execute_tool_call};
use crate::tools::{Registry, ToolEnv, ToolSession};

/// What a turn needs besides its own state.
#[derive(Clone)]
pub struct TurnDeps {
    pub model: Arc<dyn ChatModel>,
    pub registry: Arc<Registry>,
    pub env: Arc<ToolEnv>,
    /// Which files of the messages in context are read.
    pub files: crate::engine::attachments::AttachmentPolicy,
    /// Shape requests for strict chat templates (`provider.strict_roles`, SPEC C12).
    pub strict_roles: bool,
}

/// Why a turn ended, beyond its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnEnd {
    Answered,
    /// Stopped by `/kill`, a follow-up, or an unconfirmed delivery (see the status).
    Stopped,
    PassLimit,
    FailureLimit,
    /// Every key and model failed; the last failure's code.
    ProviderFailed {
        code: &'static str,
    },
    /// The model said nothing and nothing else was delivered.
    Empty,
    /// The turn promised images it did not plan.
    PlansIncomplete,
    /// A malformed call ended it.
    Malformed,
    /// The orchestrator released it: stale (SPEC C10) or killed past its grace period.
    Released,
    /// Review stopped the tool chain; the held reply was delivered (SPEC R3).
    HeldResponse,
    /// The turn panicked: it ended with the localized error notice, and the channel goes on.
    Crashed,
    /// A run of this turn before a restart had finished it (its queue entry outlived it):
    /// nothing was done again (SPEC D5).
    AlreadyFinished,
}

/// What happened in a turn, for the orchestrator and the thought log's summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnReport {
    pub status: TurnStatus,
    pub end: TurnEnd,
    pub passes: u32,
    pub tool_calls: u32,
    pub messages_sent: usize,
    pub usage: TokenUsage,
    /// Each review verdict of the turn (SPEC C8), for the thought log's summary.
    pub reviews: Vec<ReviewNote>,
}

/// The synthetic answer to a second (third, ...) call in one provider answer (SPEC C9).
fn parallel_call_refused(call: &ToolCallRequest) -> ToolHistoryEntry {
    ToolHistoryEntry {
        call_id: call.id.clone(),
        tool_name: call.name.clone(),
        arguments: "{}".to_owned(),
        response: Failure::parallel_call_refused().payload(&call.name),
        pre_tool_text: Vec::new(),
        status: EntryStatus::Failed,
    }
}

/// The persona's tool session for a turn: the server's sticker names in view, and the tools
/// that could do nothing here left out (see [`idle_tools`]).
pub fn persona_session(
    deps: &TurnDeps,
    turn: &Arc<Turn>,
    context: &LoadedContext,
    stickers: &[crate::domain::ports::Sticker],
) -> ToolSession {
    ToolSession::new(
        Role::Persona,
        deps.registry.clone(),
        turn.clone(),
        deps.env.clone(),
    )
    .with_sticker_names(stickers.iter().map(|s| s.name.clone()))
    .without(idle_tools(
        &context.more,
        Idle {
            no_stickers: stickers.is_empty(),
            no_trigger: turn.trigger.is_none(),
        },
        &deps.env.config,
    ))
}

/// What this turn lacks that a tool needs.
struct Idle {
    /// The server has no stickers (or the turn is in a DM).
    no_stickers: bool,
    /// The turn answers no message (a reminder's): nothing to react to.
    no_trigger: bool,
}

/// The persona's tools that could do nothing this turn, so are not offered (SPEC C12): the
/// sticker tool without stickers, `plan_image` without an image backend, the lookups with
/// nothing beyond what the prompt shows.
fn idle_tools(
    more: &crate::engine::context::Beyond,
    idle: Idle,
    config: &crate::config::Config,
) -> Vec<&'static str> {
    use crate::tools::react_to_message::ReactToMessage;
    use crate::tools::select_sticker_for_response::SelectStickerForResponse;
    use crate::tools::{Tool, fetch_older_messages, forget_fact, plan_image, recall_facts};
    let no_images = config.image_worker.backend == crate::config::ImageBackendKind::None;
    [
        (idle.no_stickers, SelectStickerForResponse::NAME),
        (idle.no_trigger, ReactToMessage::NAME),
        (no_images, plan_image::PlanImage::NAME),
        (
            !more.older_messages,
            fetch_older_messages::FetchOlderMessages::NAME,
        ),
        (!more.facts_unshown, recall_facts::RecallFacts::NAME),
        (!more.facts_shown, forget_fact::ForgetFact::NAME),
    ]
    .into_iter()
    .filter_map(|(idle, name)| idle.then_some(name))
    .collect()
}

/// Runs one turn to its end.
pub async fn run_turn(
    deps: &TurnDeps,
    config: &TurnConfig,
    turn: Arc<Turn>,
    persona: &Persona,
    trigger: &Trigger,
) -> TurnReport {
    // A turn resumed after a restart reuses what it completed and delivered (SPEC R4, D5).
    let ports = &deps.env.ports;
    resume::seed_stored_outcomes(&turn, ports.outcomes.as_ref()).await;
    let delivered = resume::delivered_before(&turn, ports, trigger.message).await;
    if delivered.finished {
        tracing::info!(turn = %turn.id, "turn already finished before the restart; not run again");
        return TurnReport {
            status: TurnStatus::Completed,
            end: TurnEnd::AlreadyFinished,
            passes: 0,
            tool_calls: 0,
            messages_sent: 0,
            usage: TokenUsage::default(),
            reviews: Vec::new(),
        };
    }
    let mut run = TurnRun::start(deps, config, &turn, persona, trigger, &delivered).await;
    while run.next_pass().await.is_continue() {}
    run.finish().await
}

/// One turn in progress: what it runs against, and what it has done so far.
struct TurnRun<'a> {
    deps: &'a TurnDeps,
    config: &'a TurnConfig,
    turn: &'a Turn,
    /// The persona's tools for this turn.
    session: ToolSession,
    /// Persona, memories and recent history, loaded once per turn.
    context: LoadedContext,
    /// The turn's outgoing text (held while drafting).
    delivery: ReplyDelivery<'a>,
    /// The tool chain so far, as history for the next pass.
    entries: Vec<ToolHistoryEntry>,
    /// Visible text the current pass streamed; a tool call moves it onto its entry (SPEC T6).
    streamed: Vec<String>,
    /// With drafting On (and a reviewer to ask), the reply is held until reviewed (SPEC C8).
    holding: bool,
    /// Consecutive failed tool calls (SPEC C9); a context restart resets it (SPEC T6).
    failures: u32,
    /// Counters as they go; status and end once the loop stops.
    report: TurnReport,
    /// Estimated tokens of the last request a model answered "context full" (its shorter retry
    /// asks for half).
    sent_tokens: u32,
    /// The thought log was told this turn left history out (once per turn).
    trim_noted: bool,
}

impl<'a> TurnRun<'a> {
    async fn start(
        deps: &'a TurnDeps,
        config: &'a TurnConfig,
        turn: &'a Arc<Turn>,
        persona: &Persona,
        trigger: &Trigger,
        delivered_before: &crate::domain::ports::Delivered,
    ) -> Self {
        let ports = &deps.env.ports;
        let context = crate::engine::context::load(
            turn,
            persona,
            ports,
            trigger,
            &crate::engine::context::ContextSettings {
                history_messages: config.history_messages,
                zone: config.time_zone.parse().unwrap_or(chrono_tz::UTC),
                files: deps.files.clone(),
                strict_roles: deps.strict_roles,
            },
        )
        .await;
        let (stickers, emojis) = match turn.scope.server {
            Some(server) => (
                ports.stickers.stickers(server).await.unwrap_or_default(),
                ports.stickers.emojis(server).await.unwrap_or_default(),
            ),
            None => (Vec::new(), Vec::new()),
        };
        let session = persona_session(deps, turn, &context, &stickers)
            .with_emoji_names(emojis.into_iter().map(|e| e.name));
        let reply_to = trigger.reply.then_some(trigger.message);
        let asker = Mention {
            user: trigger.author,
            name: trigger.author_name.clone(),
        };
        let pings = Pings::answering(asker, &trigger.mentions);
        let style = turn.reply_style.unwrap_or(config.reply_style);
        let pacing = crate::engine::segment::Pacing::from_config(config, style);
        let wait = (config.paragraph_wait_ms > 0)
            .then(|| std::time::Duration::from_millis(config.paragraph_wait_ms));
        let pacing = (pacing, wait);
        let mut delivery =
            ReplyDelivery::new(turn, ports, reply_to, pings, delivered_before, pacing);
        let holding = turn.drafting && turn.review.replies && deps.env.reviewer.is_some();
        if holding {
            delivery.hold();
        }
        Self {
            deps,
            config,
            turn,
            session,
            context,
            delivery,
            entries: Vec::new(),
            streamed: Vec::new(),
            holding,
            failures: 0,
            report: TurnReport {
                status: TurnStatus::Completed,
                end: TurnEnd::Answered,
                passes: 0,
                tool_calls: 0,
                messages_sent: 0,
                usage: TokenUsage::default(),
                reviews: Vec::new(),
            },
            sent_tokens: 0,
            trim_noted: false,
        }
    }

    /// Ends the loop with this status and end.
    fn end(&mut self, status: TurnStatus, end: TurnEnd) -> ControlFlow<()> {
        self.report.status = status;
        self.report.end = end;
        ControlFlow::Break(())
    }

    /// Posts a localized notice in the conversation.
    async fn notice(&mut self, key: &str) {
        let text = locale::text(self.turn.locale, key);
        self.delivery.notice(text).await;
    }

    /// One pass of the loop, and what its end means for the turn.
    async fn next_pass(&mut self) -> ControlFlow<()> {
        if self.report.passes >= self.config.max_passes {
            self.notice("turn-pass-limit").await;
            return self.end(TurnStatus::Completed, TurnEnd::PassLimit);
        }
        if self.turn.stop.is_killed() {
            return self.end(TurnStatus::StoppedByUser, TurnEnd::Stopped);
        }
        self.report.passes += 1;
        self.turn.progress.touch();
        // With drafting On a follow-up always interrupts (SPEC C8).
        let interruptible = self.turn.drafting || !self.turn.in_tool_chain();
        match self.run_pass(PassKind::Step { interruptible }).await {
            PassEnd::Text => self.answered().await,
            PassEnd::ToolCalls(calls) => self.tool_calls(&calls).await,
            PassEnd::Stopped(status) => self.end(status, TurnEnd::Stopped),
            PassEnd::Failed(error) => {
                let text = user_message(error.class, self.turn.locale);
                self.delivery.notice(text).await;
                let code = error.class.code();
                self.end(TurnStatus::Error, TurnEnd::ProviderFailed { code })
            }
        }
    }

    /// The model answered in text: the held reply is settled, and a turn that delivered nothing
    /// (no text, no sticker) is an empty response.
    async fn answered(&mut self) -> ControlFlow<()> {
        if self.holding
            && let Err(status) = self.settle_held_reply().await
        {
            return self.end(status, TurnEnd::Stopped);
        }
        let delivered = self.turn.delivered();
        if !delivered {
            self.notice("turn-empty-response").await;
            return self.end(TurnStatus::Error, TurnEnd::Empty);
        }
        self.end(TurnStatus::Completed, TurnEnd::Answered)
    }

    /// The model asked for tools: the first call goes through the stage, the rest are refused
    /// (SPEC C9), and the failure cap is applied.
    async fn tool_calls(&mut self, calls: &[ToolCallRequest]) -> ControlFlow<()> {
        self.report.tool_calls += 1;
        self.turn.enter_tool_chain();
        let (first, rest) = calls
            .split_first()
            .unwrap_or_else(|| unreachable!("a tool-call pass has at least one call"));
        match execute_tool_call(&self.session, Some(first), &mut self.streamed).await {
            ToolCallOutcome::Restart(restart) => {
                self.context.take_restart(self.turn, restart);
                self.failures = 0;
                return ControlFlow::Continue(());
            }
            ToolCallOutcome::Abort { status } => return self.aborted(status).await,
            ToolCallOutcome::History { entry } => self.push_entry(entry),
        }
        self.entries.extend(rest.iter().map(parallel_call_refused));
        if self.failures >= self.config.max_consecutive_failures {
            self.notice("turn-failure-limit").await;
            return self.end(TurnStatus::Completed, TurnEnd::FailureLimit);
        }
        ControlFlow::Continue(())
    }

    /// The stage ended the turn: through the held-response path (SPEC R3), or with the status.
    async fn aborted(&mut self, status: TurnStatus) -> ControlFlow<()> {
        match status {
            TurnStatus::HeldResponse => match self.settle_held_reply().await {
                Ok(()) => self.end(TurnStatus::Completed, TurnEnd::HeldResponse),
                Err(status) => self.end(status, TurnEnd::Stopped),
            },
            TurnStatus::Error => self.end(status, TurnEnd::Malformed),
            _ => self.end(status, TurnEnd::Stopped),
        }
    }

    /// Adds the call's entry to the chain, counting consecutive failures.
    fn push_entry(&mut self, entry: ToolHistoryEntry) {
        if entry.status == EntryStatus::Failed {
            self.failures += 1;
        } else {
            self.failures = 0;
        }
        self.entries.push(entry);
    }

    /// The report, once the loop has stopped; a completed turn must have planned every image it
    /// promised.
    async fn finish(mut self) -> TurnReport {
        if self.report.status == TurnStatus::Completed {
            self.verify_plans().await;
        }
        self.delivery.settle_buttons().await;
        self.delivery.over(self.report.status).await;
        self.report.messages_sent = self.delivery.sent;
        self.report.usage = self.delivery.usage;
        self.report.reviews = self.turn.review(|r| r.notes.clone());
        self.report
    }

    /// SPEC S5: a promised set of images planned incompletely fails loudly, never silently.
    async fn verify_plans(&mut self) {
        let incomplete = self.turn.plans(|p| p.verify_complete());
        let Err(incomplete) = incomplete else {
            return;
        };
        let turn = self.turn;
        tracing::error!(turn = %turn.id, %incomplete, "turn ended with incomplete image plans");
        let missing = incomplete
            .missing
            .iter()
            .map(|m| format!("{} {}/{}", m.set, m.index, m.total))
            .collect::<Vec<_>>()
            .join(", ");
        let text = locale::text_with(
            turn.locale,
            "turn-plans-incomplete",
            &[("missing", missing)],
        );
        self.delivery.notice(text).await;
        self.report.status = TurnStatus::Error;
        self.report.end = TurnEnd::PlansIncomplete;
    }
}
