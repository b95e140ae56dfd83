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
    outcomes: Mutex<Vec<(TurnId, StoredOutcome)>>,
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
        all.retain(|(t, o)| !(*t == turn && o.identity == outcome.identity));
        all.push((turn, outcome.clone()));
        Ok(())
    }

    async fn outcomes(&self, turn: TurnId) -> Result<Vec<StoredOutcome>, PortError> {
        Ok(lock(&self.outcomes)
            .iter()
            .filter(|(t, _)| *t == turn)
            .map(|(_, o)| o.clone())
            .collect())
    }
}

/// Accepts and drops everything a turn reports (notices, stats, events, progress): for
/// benchmarks, where recording would grow without bound. Sticker sends are confirmed.
#[derive(Default, Clone, Copy)]
pub struct Discard;

#[async_trait]
impl ChatSink for Discard {
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

/// A chat sink that records what was posted. Each sticker send needs a scripted answer.
#[derive(Default)]
pub struct RecordingSink {
    script: Mutex<VecDeque<StickerSend>>,
    stickers: Mutex<Vec<(ChannelId, Sticker)>>,
    progress: Mutex<Vec<(ChannelId, String)>>,
}

impl RecordingSink {
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
        }
    }
}
