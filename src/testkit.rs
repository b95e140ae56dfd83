//! In-process fakes of the core's ports, for unit tests and benchmarks (never used by the
//! running bot). Fakes record what they were asked; a call nobody scripted fails loudly: a
//! sticker send without a scripted answer panics, and [`Unexpected`] panics on any call.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;

use crate::chat::ports::{
    ChannelHistory, ChatSink, Clock, Fact, FactAdded, HistoryMessage, MemoryStore, NewFact,
    NewImagePlan, PlanStore, PortError, Ports, Sticker, StickerCatalog, StickerSend, ThoughtLog,
    ToolEvent, ToolEvents, UsageRecord, UsageStats,
};
use crate::chat::scope::{ChannelId, MessageId, PersonaId, Scope, ServerId, UserId, Visibility};
use crate::chat::stores::{OutcomeStore, StoredOutcome};
use crate::chat::turn::TurnId;
use crate::thought_log::Notice;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A public server channel scope: server 10, channel 20, user 30, persona "aria".
pub fn public_scope() -> Scope {
    Scope {
        server: Some(ServerId(10)),
        channel: ChannelId(20),
        user: UserId(30),
        persona: PersonaId("aria".into()),
        visibility: Visibility::Public,
    }
}

/// The same server, in a channel @everyone cannot view.
pub fn private_scope() -> Scope {
    Scope {
        visibility: Visibility::Private,
        ..public_scope()
    }
}

/// A DM with user 30.
pub fn dm_scope() -> Scope {
    Scope {
        server: None,
        channel: ChannelId(21),
        visibility: Visibility::Dm,
        ..public_scope()
    }
}

/// Panics on every call: stands in for a port a test must not touch.
pub struct Unexpected;

fn unexpected(call: &str) -> ! {
    panic!("unexpected call to {call}")
}

#[async_trait]
impl ChatSink for Unexpected {
    async fn send_text(
        &self,
        _: ChannelId,
        _: String,
        _: Option<MessageId>,
    ) -> Result<(), PortError> {
        unexpected("ChatSink::send_text")
    }
    async fn typing(&self, _: ChannelId) {
        unexpected("ChatSink::typing")
    }
    async fn send_sticker(&self, _: ChannelId, _: &Sticker) -> StickerSend {
        unexpected("ChatSink::send_sticker")
    }
    async fn send_progress(&self, _: ChannelId, _: String) {
        unexpected("ChatSink::send_progress")
    }
}

#[async_trait]
impl ThoughtLog for Unexpected {
    async fn post(&self, _: ServerId, _: Notice) {
        unexpected("ThoughtLog::post")
    }
}

#[async_trait]
impl UsageStats for Unexpected {
    async fn record(&self, _: UsageRecord) {
        unexpected("UsageStats::record")
    }
}

#[async_trait]
impl ToolEvents for Unexpected {
    async fn record(&self, _: ToolEvent) {
        unexpected("ToolEvents::record")
    }
}

#[async_trait]
impl MemoryStore for Unexpected {
    async fn set_summary(
        &self,
        _: ChannelId,
        _: &PersonaId,
        _: &str,
        _: i64,
    ) -> Result<(), PortError> {
        unexpected("MemoryStore::set_summary")
    }
    async fn summary(&self, _: ChannelId, _: &PersonaId) -> Result<Option<String>, PortError> {
        unexpected("MemoryStore::summary")
    }
    async fn add_fact(&self, _: NewFact, _: u32) -> Result<FactAdded, PortError> {
        unexpected("MemoryStore::add_fact")
    }
    async fn facts(
        &self,
        _: Option<ServerId>,
        _: &PersonaId,
        _: Option<UserId>,
        _: u32,
    ) -> Result<Vec<Fact>, PortError> {
        unexpected("MemoryStore::facts")
    }
}

#[async_trait]
impl PlanStore for Unexpected {
    async fn record_plan(&self, _: NewImagePlan) -> Result<(), PortError> {
        unexpected("PlanStore::record_plan")
    }
    async fn plan(
        &self,
        _: &crate::chat::ports::PlanId,
    ) -> Result<Option<NewImagePlan>, PortError> {
        unexpected("PlanStore::plan")
    }
    async fn results_since(
        &self,
        _: ChannelId,
        _: i64,
        _: u32,
    ) -> Result<Vec<crate::chat::ports::PlanResult>, PortError> {
        unexpected("PlanStore::results_since")
    }
}

#[async_trait]
impl StickerCatalog for Unexpected {
    async fn stickers(&self, _: ServerId) -> Result<Vec<Sticker>, PortError> {
        unexpected("StickerCatalog::stickers")
    }
}

#[async_trait]
impl ChannelHistory for Unexpected {
    async fn older(
        &self,
        _: ChannelId,
        _: Option<MessageId>,
        _: u8,
    ) -> Result<Vec<HistoryMessage>, PortError> {
        unexpected("ChannelHistory::older")
    }
}

#[async_trait]
impl OutcomeStore for Unexpected {
    async fn record_outcome(&self, _: TurnId, _: &StoredOutcome, _: i64) -> Result<(), PortError> {
        unexpected("OutcomeStore::record_outcome")
    }
    async fn outcomes(&self, _: TurnId) -> Result<Vec<StoredOutcome>, PortError> {
        unexpected("OutcomeStore::outcomes")
    }
}

/// Completed tool outcomes, by turn.
#[derive(Default)]
pub struct InMemoryOutcomes {
    outcomes: Mutex<HashMap<TurnId, Vec<StoredOutcome>>>,
}

#[async_trait]
impl OutcomeStore for InMemoryOutcomes {
    async fn record_outcome(
        &self,
        turn: TurnId,
        outcome: &StoredOutcome,
        _at_ms: i64,
    ) -> Result<(), PortError> {
        let mut all = lock(&self.outcomes);
        let turn_outcomes = all.entry(turn).or_default();
        turn_outcomes.retain(|o| o.identity != outcome.identity);
        turn_outcomes.push(outcome.clone());
        Ok(())
    }

    async fn outcomes(&self, turn: TurnId) -> Result<Vec<StoredOutcome>, PortError> {
        Ok(lock(&self.outcomes).get(&turn).cloned().unwrap_or_default())
    }
}

/// Accepts and drops everything a turn reports (notices, stats, events, progress): for
/// benchmarks, where recording would grow without bound. Sticker sends are confirmed.
#[derive(Default, Clone, Copy)]
pub struct Discard;

#[async_trait]
impl ChatSink for Discard {
    async fn send_text(
        &self,
        _: ChannelId,
        _: String,
        _: Option<MessageId>,
    ) -> Result<(), PortError> {
        Ok(())
    }
    async fn typing(&self, _: ChannelId) {}
    async fn send_sticker(&self, _: ChannelId, _: &Sticker) -> StickerSend {
        StickerSend::Confirmed
    }
    async fn send_progress(&self, _: ChannelId, _: String) {}
}

#[async_trait]
impl ThoughtLog for Discard {
    async fn post(&self, _: ServerId, _: Notice) {}
}

#[async_trait]
impl UsageStats for Discard {
    async fn record(&self, _: UsageRecord) {}
}

#[async_trait]
impl ToolEvents for Discard {
    async fn record(&self, _: ToolEvent) {}
}

/// A message the sink was asked to post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentText {
    pub channel: ChannelId,
    pub text: String,
    pub reply_to: Option<MessageId>,
}

/// A chat sink that records what was posted. Each sticker send needs a scripted answer.
#[derive(Default)]
pub struct RecordingSink {
    script: Mutex<VecDeque<StickerSend>>,
    stickers: Mutex<Vec<(ChannelId, Sticker)>>,
    progress: Mutex<Vec<(ChannelId, String)>>,
    texts: Mutex<Vec<SentText>>,
    typing: Mutex<Vec<ChannelId>>,
    /// Sends wait this long first (a slow Discord), when set.
    send_delay: Mutex<Option<std::time::Duration>>,
    /// Sends never complete (a hung Discord), when set.
    hang: AtomicBool,
    /// The next typing pulse panics (a bug in an adapter), once.
    panic_on_typing: AtomicBool,
}

impl RecordingSink {
    /// Every text message posted, in order.
    pub fn texts(&self) -> Vec<SentText> {
        lock(&self.texts).clone()
    }

    /// The texts of one channel, joined by blank lines.
    pub fn transcript(&self, channel: ChannelId) -> String {
        lock(&self.texts)
            .iter()
            .filter(|t| t.channel == channel)
            .map(|t| t.text.as_str())
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// How many typing pulses each channel got.
    pub fn typing_count(&self, channel: ChannelId) -> usize {
        lock(&self.typing).iter().filter(|c| **c == channel).count()
    }

    /// Makes every text send wait `delay` first.
    pub fn delay_sends(&self, delay: std::time::Duration) {
        *lock(&self.send_delay) = Some(delay);
    }

    /// Makes the next typing pulse panic, once.
    pub fn panic_on_next_typing(&self) {
        self.panic_on_typing.store(true, Ordering::SeqCst);
    }

    /// Makes every text send hang (a stuck Discord) until `hang_sends(false)`.
    pub fn hang_sends(&self, hang: bool) {
        self.hang.store(hang, Ordering::Relaxed);
    }

    /// Queues the answer for the next sticker send.
    pub fn script_sticker(&self, answer: StickerSend) {
        lock(&self.script).push_back(answer);
    }

    /// Every sticker send attempted, in order.
    pub fn stickers(&self) -> Vec<(ChannelId, Sticker)> {
        lock(&self.stickers).clone()
    }

    pub fn progress(&self) -> Vec<(ChannelId, String)> {
        lock(&self.progress).clone()
    }
}

#[async_trait]
impl ChatSink for RecordingSink {
    async fn send_text(
        &self,
        channel: ChannelId,
        text: String,
        reply_to: Option<MessageId>,
    ) -> Result<(), PortError> {
        while self.hang.load(Ordering::Relaxed) {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        let delay = *lock(&self.send_delay);
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
        lock(&self.texts).push(SentText {
            channel,
            text,
            reply_to,
        });
        Ok(())
    }

    async fn typing(&self, channel: ChannelId) {
        if self.panic_on_typing.swap(false, Ordering::SeqCst) {
            panic!("typing pulse panicked (test)");
        }
        lock(&self.typing).push(channel);
    }

    async fn send_sticker(&self, channel: ChannelId, sticker: &Sticker) -> StickerSend {
        let answer = lock(&self.script)
            .pop_front()
            .unwrap_or_else(|| unexpected("ChatSink::send_sticker (no scripted answer)"));
        lock(&self.stickers).push((channel, sticker.clone()));
        answer
    }

    async fn send_progress(&self, channel: ChannelId, text: String) {
        lock(&self.progress).push((channel, text));
    }
}

/// Records thought-log notices.
#[derive(Default)]
pub struct RecordingThoughtLog {
    notices: Mutex<Vec<(ServerId, Notice)>>,
}

impl RecordingThoughtLog {
    pub fn notices(&self) -> Vec<(ServerId, Notice)> {
        lock(&self.notices).clone()
    }
}

#[async_trait]
impl ThoughtLog for RecordingThoughtLog {
    async fn post(&self, server: ServerId, notice: Notice) {
        lock(&self.notices).push((server, notice));
    }
}

/// Records usage counters.
#[derive(Default)]
pub struct RecordingStats {
    records: Mutex<Vec<UsageRecord>>,
}

impl RecordingStats {
    pub fn records(&self) -> Vec<UsageRecord> {
        lock(&self.records).clone()
    }
}

#[async_trait]
impl UsageStats for RecordingStats {
    async fn record(&self, usage: UsageRecord) {
        lock(&self.records).push(usage);
    }
}

/// Records tool events.
#[derive(Default)]
pub struct RecordingEvents {
    events: Mutex<Vec<ToolEvent>>,
}

impl RecordingEvents {
    pub fn events(&self) -> Vec<ToolEvent> {
        lock(&self.events).clone()
    }
}

#[async_trait]
impl ToolEvents for RecordingEvents {
    async fn record(&self, event: ToolEvent) {
        lock(&self.events).push(event);
    }
}

/// A clock that moves only when told.
#[derive(Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn set(&self, ms: i64) {
        self.0.store(ms, Ordering::Relaxed);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Memories in a map and a list. `fail_with` makes every call fail (a database outage).
#[derive(Default)]
pub struct InMemoryMemory {
    summaries: Mutex<HashMap<(ChannelId, PersonaId), String>>,
    facts: Mutex<Vec<(i64, NewFact)>>,
    failing: AtomicBool,
}

impl InMemoryMemory {
    pub fn fail_with_outage(&self) {
        self.failing.store(true, Ordering::Relaxed);
    }

    fn check(&self) -> Result<(), PortError> {
        if self.failing.load(Ordering::Relaxed) {
            Err(PortError::Unavailable {
                what: "memory store",
                detail: "connection refused (test outage)".into(),
            })
        } else {
            Ok(())
        }
    }

    pub fn summary_of(&self, channel: ChannelId, persona: &PersonaId) -> Option<String> {
        lock(&self.summaries)
            .get(&(channel, persona.clone()))
            .cloned()
    }

    pub fn all_facts(&self) -> Vec<NewFact> {
        lock(&self.facts).iter().map(|(_, f)| f.clone()).collect()
    }
}

#[async_trait]
impl MemoryStore for InMemoryMemory {
    async fn set_summary(
        &self,
        channel: ChannelId,
        persona: &PersonaId,
        summary: &str,
        _at_ms: i64,
    ) -> Result<(), PortError> {
        self.check()?;
        lock(&self.summaries).insert((channel, persona.clone()), summary.to_owned());
        Ok(())
    }

    async fn summary(
        &self,
        channel: ChannelId,
        persona: &PersonaId,
    ) -> Result<Option<String>, PortError> {
        self.check()?;
        Ok(self.summary_of(channel, persona))
    }

    async fn add_fact(&self, fact: NewFact, limit: u32) -> Result<FactAdded, PortError> {
        self.check()?;
        let mut facts = lock(&self.facts);
        let in_bucket = facts
            .iter()
            .filter(|(_, f)| {
                f.server == fact.server && f.persona == fact.persona && f.about == fact.about
            })
            .count();
        if in_bucket >= limit as usize {
            return Ok(FactAdded::LimitReached { limit });
        }
        let id = i64::try_from(facts.len()).unwrap_or(i64::MAX) + 1;
        facts.push((id, fact));
        Ok(FactAdded::Stored { id })
    }

    async fn facts(
        &self,
        server: Option<ServerId>,
        persona: &PersonaId,
        about: Option<UserId>,
        limit: u32,
    ) -> Result<Vec<Fact>, PortError> {
        self.check()?;
        let facts = lock(&self.facts);
        Ok(facts
            .iter()
            .rev()
            .filter(|(_, f)| f.server == server && &f.persona == persona)
            .filter(|(_, f)| f.about.is_none() || f.about == about)
            .take(limit as usize)
            .map(|(id, f)| Fact {
                id: *id,
                about: f.about,
                text: f.text.clone(),
                at_ms: f.at_ms,
            })
            .collect())
    }
}

/// A fixed sticker list for every server.
#[derive(Default)]
pub struct FixedStickers(pub Vec<Sticker>);

#[async_trait]
impl StickerCatalog for FixedStickers {
    async fn stickers(&self, _server: ServerId) -> Result<Vec<Sticker>, PortError> {
        Ok(self.0.clone())
    }
}

/// Records image plans.
#[derive(Default)]
pub struct InMemoryPlans {
    plans: Mutex<Vec<NewImagePlan>>,
}

impl InMemoryPlans {
    pub fn plans(&self) -> Vec<NewImagePlan> {
        lock(&self.plans).clone()
    }
}

#[async_trait]
impl PlanStore for InMemoryPlans {
    async fn record_plan(&self, plan: NewImagePlan) -> Result<(), PortError> {
        lock(&self.plans).push(plan);
        Ok(())
    }

    async fn plan(
        &self,
        id: &crate::chat::ports::PlanId,
    ) -> Result<Option<NewImagePlan>, PortError> {
        Ok(lock(&self.plans).iter().find(|p| &p.id == id).cloned())
    }

    /// Plans here have no tasks: nothing is ever finished.
    async fn results_since(
        &self,
        _: ChannelId,
        _: i64,
        _: u32,
    ) -> Result<Vec<crate::chat::ports::PlanResult>, PortError> {
        Ok(Vec::new())
    }
}

/// A channel's history, newest first; `older` pages through it like Discord does.
#[derive(Default)]
pub struct FixedHistory(pub Vec<HistoryMessage>);

#[async_trait]
impl ChannelHistory for FixedHistory {
    async fn older(
        &self,
        _channel: ChannelId,
        before: Option<MessageId>,
        limit: u8,
    ) -> Result<Vec<HistoryMessage>, PortError> {
        Ok(self
            .0
            .iter()
            .filter(|m| before.is_none_or(|b| m.id < b))
            .take(limit.into())
            .cloned()
            .collect())
    }
}

/// One of each recording fake, with handles kept for assertions.
#[derive(Default, Clone)]
pub struct Fakes {
    pub sink: Arc<RecordingSink>,
    pub thought_log: Arc<RecordingThoughtLog>,
    pub stats: Arc<RecordingStats>,
    pub events: Arc<RecordingEvents>,
    pub clock: Arc<ManualClock>,
    pub memory: Arc<InMemoryMemory>,
    pub stickers: Arc<FixedStickers>,
    pub plans: Arc<InMemoryPlans>,
    pub history: Arc<FixedHistory>,
    pub outcomes: Arc<InMemoryOutcomes>,
    pub reminders: Arc<InMemoryReminders>,
}

impl Fakes {
    /// Ports that drop what they are told (see [`Discard`]), with in-memory stores.
    pub fn discarding(&self) -> Ports {
        Ports {
            sink: Arc::new(Discard),
            thought_log: Arc::new(Discard),
            stats: Arc::new(Discard),
            events: Arc::new(Discard),
            ..self.ports()
        }
    }

    pub fn with_stickers(mut self, stickers: Vec<Sticker>) -> Self {
        self.stickers = Arc::new(FixedStickers(stickers));
        self
    }

    pub fn with_history(mut self, history: Vec<HistoryMessage>) -> Self {
        self.history = Arc::new(FixedHistory(history));
        self
    }

    /// The chat-facing fakes, to combine with real storage.
    pub fn chat_ports(&self) -> crate::chat::ports::ChatPorts {
        crate::chat::ports::ChatPorts {
            sink: self.sink.clone(),
            thought_log: self.thought_log.clone(),
            stickers: self.stickers.clone(),
            history: self.history.clone(),
            clock: self.clock.clone(),
        }
    }

    pub fn ports(&self) -> Ports {
        Ports {
            sink: self.sink.clone(),
            thought_log: self.thought_log.clone(),
            stats: self.stats.clone(),
            events: self.events.clone(),
            clock: self.clock.clone(),
            memory: self.memory.clone(),
            stickers: self.stickers.clone(),
            plans: self.plans.clone(),
            history: self.history.clone(),
            outcomes: self.outcomes.clone(),
            reminders: self.reminders.clone(),
        }
    }
}

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
    Fail(crate::chat::model::ModelError),
}

/// A scripted pass: the stream, or a failure to open it.
#[derive(Debug, Clone)]
pub enum ScriptedPass {
    Stream(Vec<Step>),
    OpenError(crate::chat::model::ModelError),
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

type Responder = dyn Fn(&crate::chat::model::ModelRequest) -> ScriptedPass + Send + Sync;

/// An in-process model: each pass answers from a queue of scripted passes, or from a function
/// of the request. Records requests and attempts; counts streams dropped before their end.
pub struct ScriptedModel {
    script: Mutex<VecDeque<ScriptedPass>>,
    responder: Option<Box<Responder>>,
    attempts: Vec<crate::chat::model::Attempt>,
    requests: Mutex<
        Vec<(
            crate::chat::model::Attempt,
            crate::chat::model::ModelRequest,
        )>,
    >,
    failures: Mutex<
        Vec<(
            crate::chat::model::Attempt,
            crate::chat::provider_failure::FailureClass,
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
        responder: impl Fn(&crate::chat::model::ModelRequest) -> ScriptedPass + Send + Sync + 'static,
    ) -> Self {
        Self::build(Vec::new(), Some(Box::new(responder)))
    }

    fn build(passes: Vec<ScriptedPass>, responder: Option<Box<Responder>>) -> Self {
        Self {
            script: Mutex::new(passes.into()),
            responder,
            attempts: vec![crate::chat::model::Attempt {
                model: "scripted".into(),
                model_index: 0,
                key_index: 0,
            }],
            requests: Mutex::new(Vec::new()),
            failures: Mutex::new(Vec::new()),
            dropped: Arc::default(),
        }
    }

    /// Offers these attempts (models and keys) for every pass.
    pub fn with_attempts(mut self, attempts: Vec<crate::chat::model::Attempt>) -> Self {
        self.attempts = attempts;
        self
    }

    /// The requests of scripted passes (a responder's are not kept).
    pub fn requests(
        &self,
    ) -> Vec<(
        crate::chat::model::Attempt,
        crate::chat::model::ModelRequest,
    )> {
        lock(&self.requests).clone()
    }

    pub fn failures(
        &self,
    ) -> Vec<(
        crate::chat::model::Attempt,
        crate::chat::provider_failure::FailureClass,
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
impl crate::chat::model::ChatModel for ScriptedModel {
    fn attempts(&self) -> Vec<crate::chat::model::Attempt> {
        self.attempts.clone()
    }

    async fn stream(
        &self,
        attempt: &crate::chat::model::Attempt,
        request: &crate::chat::model::ModelRequest,
    ) -> Result<crate::chat::model::ModelStream, crate::chat::model::ModelError> {
        use crate::chat::model::{Finish, ModelEvent};
        use crate::tool_loop::{ToolCallRequest, Truncation};
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
        attempt: &crate::chat::model::Attempt,
        class: crate::chat::provider_failure::FailureClass,
    ) {
        lock(&self.failures).push((attempt.clone(), class));
    }
}

/// A queue store in memory.
#[derive(Default)]
pub struct InMemoryQueue {
    entries: Mutex<QueueEntries>,
    next_id: std::sync::atomic::AtomicI64,
}

#[derive(Default)]
struct QueueEntries {
    by_id: std::collections::BTreeMap<i64, crate::chat::stores::QueuedMessage>,
    /// (channel, message) to id: a redelivered message keeps one entry.
    by_message: HashMap<(ChannelId, MessageId), i64>,
}

impl InMemoryQueue {
    pub fn entries(&self) -> Vec<crate::chat::stores::QueuedMessage> {
        lock(&self.entries).by_id.values().cloned().collect()
    }
}

#[async_trait]
impl crate::chat::stores::QueueStore for InMemoryQueue {
    async fn push(
        &self,
        message: &crate::chat::stores::NewQueuedMessage,
    ) -> Result<crate::chat::stores::Pushed, PortError> {
        use crate::chat::stores::Pushed;
        let mut entries = lock(&self.entries);
        let key = (message.channel, message.message);
        if let Some(id) = entries.by_message.get(&key) {
            return Ok(Pushed::Existing(*id));
        }
        let id = self.next_id.fetch_add(1, Ordering::SeqCst) + 1;
        entries.by_message.insert(key, id);
        entries.by_id.insert(
            id,
            crate::chat::stores::QueuedMessage {
                id,
                entry: message.clone(),
            },
        );
        Ok(Pushed::New(id))
    }

    async fn remove(&self, id: i64) -> Result<(), PortError> {
        let mut entries = lock(&self.entries);
        if let Some(removed) = entries.by_id.remove(&id) {
            entries
                .by_message
                .remove(&(removed.entry.channel, removed.entry.message));
        }
        Ok(())
    }

    async fn mark_follow_up(&self, id: i64) -> Result<(), PortError> {
        if let Some(entry) = lock(&self.entries).by_id.get_mut(&id) {
            entry.entry.follow_up = true;
        }
        Ok(())
    }

    async fn pending(
        &self,
        channel: ChannelId,
    ) -> Result<Vec<crate::chat::stores::QueuedMessage>, PortError> {
        Ok(lock(&self.entries)
            .by_id
            .values()
            .filter(|e| e.entry.channel == channel)
            .cloned()
            .collect())
    }

    async fn channels_with_pending(&self) -> Result<Vec<ChannelId>, PortError> {
        let mut channels: Vec<ChannelId> = lock(&self.entries)
            .by_id
            .values()
            .map(|e| e.entry.channel)
            .collect();
        channels.sort_unstable();
        channels.dedup();
        Ok(channels)
    }

    async fn clear(&self, channel: ChannelId) -> Result<u64, PortError> {
        let mut entries = lock(&self.entries);
        let before = entries.by_id.len();
        entries.by_id.retain(|_, e| e.entry.channel != channel);
        entries.by_message.retain(|(c, _), _| *c != channel);
        Ok((before - entries.by_id.len()) as u64)
    }

    async fn claim_next(
        &self,
        channel: ChannelId,
        _owner: &str,
    ) -> Result<Option<crate::chat::stores::QueuedMessage>, PortError> {
        Ok(lock(&self.entries)
            .by_id
            .values()
            .find(|e| e.entry.channel == channel)
            .cloned())
    }
}

/// Server settings in memory (defaults for servers never set).
#[derive(Default)]
pub struct InMemorySettings {
    settings: Mutex<HashMap<ServerId, crate::chat::stores::ServerSettings>>,
}

#[async_trait]
impl crate::chat::stores::SettingsStore for InMemorySettings {
    async fn settings(
        &self,
        server: ServerId,
    ) -> Result<crate::chat::stores::ServerSettings, PortError> {
        Ok(lock(&self.settings)
            .get(&server)
            .cloned()
            .unwrap_or_default())
    }

    async fn save_settings(
        &self,
        server: ServerId,
        settings: &crate::chat::stores::ServerSettings,
    ) -> Result<(), PortError> {
        lock(&self.settings).insert(server, settings.clone());
        Ok(())
    }
}

/// Personas in memory.
#[derive(Default)]
pub struct InMemoryPersonas {
    personas: Mutex<Vec<crate::chat::stores::Persona>>,
}

#[async_trait]
impl crate::chat::stores::PersonaStore for InMemoryPersonas {
    async fn persona(
        &self,
        id: &PersonaId,
    ) -> Result<Option<crate::chat::stores::Persona>, PortError> {
        Ok(lock(&self.personas).iter().find(|p| &p.id == id).cloned())
    }

    async fn personas(&self) -> Result<Vec<crate::chat::stores::Persona>, PortError> {
        Ok(lock(&self.personas).clone())
    }

    async fn save_persona(&self, persona: &crate::chat::stores::Persona) -> Result<(), PortError> {
        let mut personas = lock(&self.personas);
        personas.retain(|p| p.id != persona.id);
        personas.push(persona.clone());
        Ok(())
    }
}

/// A reviewer answering from scripts: one queue for tool requests, one for replies. Records
/// what it was shown. An unscripted review panics; `slow` makes each review wait first.
#[derive(Default)]
pub struct ScriptedReviewer {
    requests: Mutex<VecDeque<crate::chat::review::ReviewOutcome>>,
    replies: Mutex<VecDeque<crate::chat::review::ReviewOutcome>>,
    seen_requests: Mutex<
        Vec<(
            crate::tools::PreparedCall,
            Vec<crate::chat::review::ReviewedCall>,
        )>,
    >,
    seen_replies: Mutex<Vec<String>>,
    delay: Mutex<Option<std::time::Duration>>,
    /// Kill the author's turn just before answering (a `/kill` landing as the review ends).
    kill_on_answer: AtomicBool,
}

impl ScriptedReviewer {
    pub fn on_request(&self, outcome: crate::chat::review::ReviewOutcome) -> &Self {
        lock(&self.requests).push_back(outcome);
        self
    }

    pub fn on_reply(&self, outcome: crate::chat::review::ReviewOutcome) -> &Self {
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
        Vec<crate::chat::review::ReviewedCall>,
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
    ) -> crate::chat::review::ReviewOutcome {
        let earlier = author.turn().state().review.calls.clone();
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
    ) -> crate::chat::review::ReviewOutcome {
        lock(&self.seen_replies).push(draft.to_owned());
        self.wait().await;
        lock(&self.replies)
            .pop_front()
            .unwrap_or_else(|| unexpected("Reviewer::review_reply (nothing scripted)"))
    }
}

/// Reminders in memory, with the same ownership and take-once rules as the store.
#[derive(Default)]
pub struct InMemoryReminders {
    reminders: Mutex<Vec<(crate::chat::stores::Reminder, bool)>>,
}

impl InMemoryReminders {
    /// Every reminder with whether it is still active.
    pub fn all(&self) -> Vec<(crate::chat::stores::Reminder, bool)> {
        lock(&self.reminders).clone()
    }
}

#[async_trait]
impl crate::chat::stores::ReminderStore for InMemoryReminders {
    async fn create(&self, reminder: &crate::chat::stores::NewReminder) -> Result<i64, PortError> {
        let mut all = lock(&self.reminders);
        let id = i64::try_from(all.len()).unwrap_or(i64::MAX) + 1;
        all.push((
            crate::chat::stores::Reminder {
                id,
                reminder: reminder.clone(),
                fired: 0,
            },
            true,
        ));
        Ok(id)
    }

    async fn for_user(
        &self,
        user: UserId,
    ) -> Result<Vec<crate::chat::stores::Reminder>, PortError> {
        Ok(lock(&self.reminders)
            .iter()
            .filter(|(r, active)| {
                *active && (r.reminder.creator == user || r.reminder.target == Some(user))
            })
            .map(|(r, _)| r.clone())
            .collect())
    }

    async fn count_created_by(&self, user: UserId) -> Result<u32, PortError> {
        let n = lock(&self.reminders)
            .iter()
            .filter(|(r, active)| *active && r.reminder.creator == user)
            .count();
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    async fn cancel(&self, id: i64, user: UserId) -> Result<bool, PortError> {
        let mut all = lock(&self.reminders);
        let Some((r, active)) = all.iter_mut().find(|(r, _)| r.id == id) else {
            return Ok(false);
        };
        let owner = r.reminder.creator == user || r.reminder.target == Some(user);
        if *active && owner {
            *active = false;
            return Ok(true);
        }
        Ok(false)
    }

    async fn due(
        &self,
        now_ms: i64,
        limit: u32,
    ) -> Result<Vec<crate::chat::stores::Reminder>, PortError> {
        Ok(lock(&self.reminders)
            .iter()
            .filter(|(r, active)| *active && r.reminder.due_at_ms <= now_ms)
            .take(limit as usize)
            .map(|(r, _)| r.clone())
            .collect())
    }

    async fn take_occurrence(
        &self,
        id: i64,
        due_at_ms: i64,
        next: Option<i64>,
    ) -> Result<bool, PortError> {
        let mut all = lock(&self.reminders);
        let Some((r, active)) = all.iter_mut().find(|(r, _)| r.id == id) else {
            return Ok(false);
        };
        if !*active || r.reminder.due_at_ms != due_at_ms {
            return Ok(false);
        }
        r.fired += 1;
        match next {
            Some(next) => r.reminder.due_at_ms = next,
            None => *active = false,
        }
        Ok(true)
    }
}
