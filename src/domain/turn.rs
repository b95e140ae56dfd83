//! The turn: one run of the persona answering in one channel, and the state its passes share.
//!
//! A [`Turn`] is created by the orchestrator for each triggering message and shared (`Arc`) by the
//! pass loop, the tool stage and `/kill`. Its mutable part sits behind a std `Mutex` held only for
//! short, non-async critical sections.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Serialize;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::domain::ledger::{OutcomeLedger, PlanLedger};
use crate::domain::review::{ReviewLedger, ReviewPolicy};
use crate::domain::scope::{ChannelId, MessageId, Scope, ServerId};
use crate::locale::Locale;

/// A turn's id: a UUIDv7, unique across restarts and processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct TurnId(pub Uuid);

impl TurnId {
    pub fn new() -> Self {
        TurnId(Uuid::now_v7())
    }

    /// The turn answering one Discord message: the same id on every attempt, even after a
    /// restart, so stored outcomes are found again (SPEC R4, D4).
    pub fn for_message(channel: ChannelId, message: MessageId) -> Self {
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&channel.0.to_be_bytes());
        bytes[8..].copy_from_slice(&message.0.to_be_bytes());
        TurnId(uuid::Builder::from_custom_bytes(bytes).into_uuid())
    }

    /// The turn answering the `edit`-th edit of a message (its trigger edited while it ran,
    /// SPEC C7): distinct from the message's own turn and from every other edit's.
    pub fn for_edit(channel: ChannelId, message: MessageId, edit: u32) -> Self {
        Self::for_answer(channel, message, edit, 0)
    }

    /// The turn answering the `edit`-th edit of a message for the `again`-th time (*Again*,
    /// SPEC E2): the same id in every process and after a restart, so a second run of it
    /// repeats nothing it delivered (SPEC D5), distinct from every other answer's.
    pub fn for_answer(channel: ChannelId, message: MessageId, edit: u32, again: u8) -> Self {
        if edit == 0 && again == 0 {
            return Self::for_message(channel, message);
        }
        use sha2::Digest as _;
        let mut digest = sha2::Sha256::new()
            .chain_update(b"edit")
            .chain_update(channel.0.to_be_bytes())
            .chain_update(message.0.to_be_bytes())
            .chain_update(edit.to_be_bytes());
        if again > 0 {
            digest = digest.chain_update(b"again").chain_update([again]);
        }
        let digest = digest.finalize();
        let mut bytes = [0u8; 16];
        for (to, from) in bytes.iter_mut().zip(digest.iter()) {
            *to = *from;
        }
        TurnId(uuid::Builder::from_custom_bytes(bytes).into_uuid())
    }
}

impl Default for TurnId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for TurnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// How a turn (or the pass that ended it) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    Completed,
    /// `/kill` (SPEC C6, T2, T5).
    StoppedByUser,
    /// A follow-up interrupted the pass (SPEC C5, C7) or, with drafting On, the tool chain (T2).
    FollowUpInterrupt,
    /// A sticker send was not confirmed: nothing more may be sent this turn (SPEC T9).
    DeliveryUnconfirmed,
    /// A malformed call or an internal error.
    Error,
    /// Review stopped the tool chain (SPEC R3): the held reply is delivered and the turn ends.
    HeldResponse,
}

impl TurnStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::StoppedByUser => "stopped_by_user",
            Self::FollowUpInterrupt => "follow_up_interrupt",
            Self::DeliveryUnconfirmed => "delivery_unconfirmed",
            Self::Error => "error",
            Self::HeldResponse => "held_response",
        }
    }
}

/// Stop requests for one turn: `/kill` cancels the token; a follow-up sets the interrupt flag.
#[derive(Debug)]
pub struct StopSignal {
    /// The turn's kill token: a child of the channel's token, cancelled by `/kill`.
    kill: CancellationToken,
    /// Set when the requester sent a follow-up during the turn (SPEC C7); cleared by whoever
    /// acts on it.
    follow_up: AtomicBool,
    /// Wakes whoever waits for a follow-up (a review in progress, SPEC C8).
    follow_up_arrived: tokio::sync::Notify,
    /// The kill is the process stopping, not `/kill`: the turn resumes at the next start.
    for_shutdown: AtomicBool,
}

impl StopSignal {
    pub fn new(kill: CancellationToken) -> Self {
        Self {
            kill,
            follow_up: AtomicBool::new(false),
            follow_up_arrived: tokio::sync::Notify::new(),
            for_shutdown: AtomicBool::new(false),
        }
    }

    /// The process stops: cancels the turn like `/kill`, but the turn resumes at the next start,
    /// so text not yet posted is left for that run rather than sent in part (a resumed turn skips
    /// the messages it delivered, counted from the first, SPEC D5).
    pub fn stop_for_shutdown(&self) {
        self.for_shutdown.store(true, Ordering::Release);
        self.kill.cancel();
    }

    /// Whether the kill is the process stopping.
    pub fn is_shutdown(&self) -> bool {
        self.for_shutdown.load(Ordering::Acquire)
    }

    /// `/kill`: cancels the turn and everything running under it.
    pub fn kill(&self) {
        self.kill.cancel();
    }

    pub fn is_killed(&self) -> bool {
        self.kill.is_cancelled()
    }

    /// The token tools and provider calls select against.
    pub fn kill_token(&self) -> &CancellationToken {
        &self.kill
    }

    pub fn note_follow_up(&self) {
        self.follow_up.store(true, Ordering::Release);
        self.follow_up_arrived.notify_waiters();
    }

    /// Resolves once a follow-up is pending (at once if one already is).
    pub async fn follow_up(&self) {
        loop {
            let arrived = self.follow_up_arrived.notified();
            if self.follow_up_pending() {
                return;
            }
            arrived.await;
        }
    }

    pub fn follow_up_pending(&self) -> bool {
        self.follow_up.load(Ordering::Acquire)
    }

    /// Clears the interrupt flag; returns whether it was set.
    pub fn clear_follow_up(&self) -> bool {
        self.follow_up.swap(false, Ordering::AcqRel)
    }
}

/// What a channel is doing right now, shared between its worker and `/kill`.
#[derive(Debug, Default)]
pub struct ChannelActivity {
    /// The tool running in the channel, so `/kill` can say what it stopped (SPEC C6, T5).
    active_tool: Mutex<Option<Arc<str>>>,
}

impl ChannelActivity {
    pub fn active_tool(&self) -> Option<Arc<str>> {
        lock(&self.active_tool).clone()
    }

    /// Marks `name` as the running tool until the guard drops, however the run ends.
    pub fn mark_tool(&self, name: &str) -> ActiveToolGuard<'_> {
        *lock(&self.active_tool) = Some(Arc::from(name));
        ActiveToolGuard(self)
    }
}

/// Clears the channel's active tool name on drop (SPEC T5).
#[must_use = "the active tool name is cleared when the guard drops"]
pub struct ActiveToolGuard<'a>(&'a ChannelActivity);

impl Drop for ActiveToolGuard<'_> {
    fn drop(&mut self) {
        *lock(&self.0.active_tool) = None;
    }
}

/// How a tool told to stop (by `/kill` or its timeout) ended within its short grace (SPEC T5,
/// feature row 30). The tool event, the thought log and `/kill`'s answer all say the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolEnding {
    /// It came back with its result: its work is done.
    Done,
    /// It came back with an error: it stopped without finishing its work.
    Cancelled,
    /// It was still running when the grace ran out and was dropped: it ignored its
    /// cancellation, and its work may still happen. Nothing is rolled back.
    MayStillFinish,
}

/// A tool `/kill` stopped, and how it ended (SPEC C6, T5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoppedTool {
    pub name: String,
    pub ending: ToolEnding,
}

/// When the turn last made progress, and whether it is inside a phase that has its own timeout
/// (a provider call, a tool). The stale-turn guard reads it (SPEC C10).
#[derive(Debug)]
pub struct Progress {
    origin: tokio::time::Instant,
    /// Milliseconds from `origin` to the last progress.
    last_ms: AtomicU64,
    /// How many guarded phases are open.
    guarded: AtomicUsize,
}

impl Default for Progress {
    fn default() -> Self {
        Self {
            origin: tokio::time::Instant::now(),
            last_ms: AtomicU64::new(0),
            guarded: AtomicUsize::new(0),
        }
    }
}

impl Progress {
    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Notes progress now.
    pub fn touch(&self) {
        self.last_ms.store(self.elapsed_ms(), Ordering::Relaxed);
    }

    /// Opens a guarded phase until the guard drops (which counts as progress).
    pub fn guard(&self) -> ProgressGuard<'_> {
        self.guarded.fetch_add(1, Ordering::AcqRel);
        ProgressGuard(self)
    }

    /// How long the turn has gone without progress outside a guarded phase; `None` while a
    /// guarded phase is open.
    pub fn idle_for(&self) -> Option<Duration> {
        if self.guarded.load(Ordering::Acquire) > 0 {
            return None;
        }
        let idle = self
            .elapsed_ms()
            .saturating_sub(self.last_ms.load(Ordering::Relaxed));
        Some(Duration::from_millis(idle))
    }
}

/// Closes a guarded phase on drop.
#[must_use = "the phase is guarded until the guard drops"]
pub struct ProgressGuard<'a>(&'a Progress);

impl Drop for ProgressGuard<'_> {
    fn drop(&mut self) {
        self.0.touch();
        self.0.guarded.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Which expression a turn delivered (SPEC T9, E1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpressionId {
    /// A sticker, by its id.
    Sticker(u64),
    /// A reaction, by its emoji's key (`Emoji::key`).
    Reaction(u64),
}

/// The turn's single expression allowance, a sticker or a reaction (SPEC T9, E1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExpressionState {
    #[default]
    Available,
    Delivered(ExpressionId),
    /// A send was not confirmed: no further send this turn, by anyone.
    Blocked,
}

/// Which tools a turn admits (SPEC T4).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolAdmission {
    /// Deliberate tool mode is off: every tool of the role is offered.
    #[default]
    Open,
    /// Deliberate tool mode is on: only these tools, each with the trigger that admitted it
    /// (`None` for tools the mode does not gate).
    Deliberate {
        admitted: HashMap<String, Option<String>>,
    },
}

impl ToolAdmission {
    pub fn admits(&self, tool: &str) -> bool {
        match self {
            Self::Open => true,
            Self::Deliberate { admitted } => admitted.contains_key(tool),
        }
    }

    /// The trigger that admitted `tool`, when deliberate mode admitted it by a match.
    pub fn trigger_for(&self, tool: &str) -> Option<&str> {
        match self {
            Self::Open => None,
            Self::Deliberate { admitted } => admitted.get(tool).and_then(|t| t.as_deref()),
        }
    }
}

/// What a turn's passes share, behind one lock that only [`Turn`]'s narrow methods take: a
/// caller names the ledger it works on ([`Turn::review`], [`Turn::plans`]) or the fact it
/// records ([`Turn::mark_delivered`], [`Turn::record_outcome`]), and never holds the lock. A
/// ledger's closure works on that ledger only: it calls none of the turn's methods (the lock
/// is not reentrant).
#[derive(Debug, Default)]
struct TurnState {
    expression: ExpressionState,
    plans: PlanLedger,
    outcomes: OutcomeLedger,
    /// The provider invocation (attempt) in progress; bumped on key rotation and fallback.
    invocation: u32,
    /// Tool-request review state and verdicts (SPEC R1-R5).
    review: ReviewLedger,
    flags: TurnFlags,
}

/// What a turn has come to, each set by one part of it and read by others.
#[derive(Debug, Default)]
struct TurnFlags {
    /// Something reached the channel (text or a sticker): a sticker-only turn is not empty.
    delivered: bool,
    /// Set by a successful `update_short_term_memory` (SPEC T12).
    short_term_memory_locked: bool,
    /// The oldest message in the turn's context (where older history continues): set by the
    /// context that owns it, read by `fetch_older_messages`.
    context_oldest: Option<MessageId>,
    /// A tool call has run: follow-ups now queue without interrupting (SPEC C7).
    in_tool_chain: bool,
    /// The tool a kill stopped, and how it ended, for `/kill`'s answer (SPEC C6, T5).
    stopped_tool: Option<StoppedTool>,
}

/// Who a persona's message is posted as: its name and avatar in its server (SPEC A1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Voice {
    pub server: ServerId,
    pub name: String,
    pub avatar_url: Option<String>,
}

/// One turn.
#[derive(Debug)]
pub struct Turn {
    pub id: TurnId,
    pub scope: Scope,
    /// The requester's locale (tool tips, progress lines).
    pub locale: Locale,
    /// Started by the bot itself (reminder, random trigger, nudge): progress goes to the thought
    /// log, not the conversation (SPEC T11).
    pub quiet: bool,
    /// The server's Response Drafting switch, read once at turn start (SPEC C8).
    pub drafting: bool,
    /// What drafting reviews on this server.
    pub review: ReviewPolicy,
    /// The server's reply style, read at turn start (SPEC C4); `None`: the deployment's.
    pub reply_style: Option<crate::config::ReplyStyle>,
    pub admission: ToolAdmission,
    /// Whom the persona's messages are posted as: a server's own persona posts under its name
    /// and avatar where it may (SPEC A1); `None`, as the bot user.
    pub voice: Option<Voice>,
    /// The persona's name here: the bot's mention in history reads as it (empty: unknown).
    pub persona_name: String,
    /// The message the turn answers, when it answers one (a reminder's turn does not): what
    /// the persona's reaction goes on (SPEC E1).
    pub trigger: Option<MessageId>,
    /// Its reply carries buttons (SPEC E2): the server has them on and the turn is not quiet.
    pub buttons: bool,
    /// How many times *Again* asked for this answer (0: the first answer, SPEC E2).
    pub again: u8,
    /// Only moderators decide this turn's approvals (the server's policy, SPEC E3); otherwise
    /// the requester or a moderator.
    pub approvals_by_moderators: bool,
    /// The MCP servers whose tools this server turned on (SPEC E4): none by default, none in
    /// a DM.
    pub outside_servers: Vec<String>,
    pub stop: StopSignal,
    pub channel: Arc<ChannelActivity>,
    pub progress: Progress,
    state: Mutex<TurnState>,
}

impl Turn {
    /// A plain persona turn: not quiet, drafting off, every tool admitted, fresh kill token.
    pub fn new(scope: Scope, locale: Locale) -> Self {
        Self {
            id: TurnId::new(),
            scope,
            locale,
            quiet: false,
            drafting: false,
            review: ReviewPolicy::default(),
            reply_style: None,
            admission: ToolAdmission::Open,
            voice: None,
            persona_name: String::new(),
            trigger: None,
            buttons: false,
            again: 0,
            approvals_by_moderators: false,
            outside_servers: Vec::new(),
            stop: StopSignal::new(CancellationToken::new()),
            channel: Arc::new(ChannelActivity::default()),
            progress: Progress::default(),
            state: Mutex::new(TurnState::default()),
        }
    }

    pub fn quiet(mut self, quiet: bool) -> Self {
        self.quiet = quiet;
        self
    }

    pub fn drafting(mut self, drafting: bool) -> Self {
        self.drafting = drafting;
        self
    }

    pub fn review_policy(mut self, policy: ReviewPolicy) -> Self {
        self.review = policy;
        self
    }

    pub fn reply_style(mut self, style: Option<crate::config::ReplyStyle>) -> Self {
        self.reply_style = style;
        self
    }

    pub fn voice(mut self, voice: Option<Voice>) -> Self {
        self.voice = voice;
        self
    }

    pub fn persona_name(mut self, name: &str) -> Self {
        self.persona_name = name.to_owned();
        self
    }

    /// The message the turn answers.
    pub fn trigger(mut self, message: Option<MessageId>) -> Self {
        self.trigger = message;
        self
    }

    /// Its reply carries buttons (SPEC E2).
    pub fn buttons(mut self, on: bool) -> Self {
        self.buttons = on;
        self
    }

    /// Only moderators decide its approvals (SPEC E3).
    pub fn approvals_by_moderators(mut self, on: bool) -> Self {
        self.approvals_by_moderators = on;
        self
    }

    /// The MCP servers whose tools it is offered (SPEC E4).
    pub fn outside_servers(mut self, servers: Vec<String>) -> Self {
        self.outside_servers = servers;
        self
    }

    /// The `again`-th new answer *Again* asked for (SPEC E2).
    pub fn again(mut self, again: u8) -> Self {
        self.again = again;
        self
    }

    /// Gives the turn a known id (see [`TurnId::for_message`]).
    pub fn with_id(mut self, id: TurnId) -> Self {
        self.id = id;
        self
    }

    pub fn admission(mut self, admission: ToolAdmission) -> Self {
        self.admission = admission;
        self
    }

    /// Runs the turn under `kill` (a child of the channel's token) in `channel`.
    pub fn in_channel(mut self, channel: Arc<ChannelActivity>, kill: CancellationToken) -> Self {
        self.channel = channel;
        self.stop = StopSignal::new(kill);
        self
    }

    /// Something of the turn reached the channel (text or a sticker).
    pub fn mark_delivered(&self) {
        self.state().flags.delivered = true;
    }

    /// Whether something of the turn reached the channel: a sticker-only turn is not empty.
    pub fn delivered(&self) -> bool {
        self.state().flags.delivered
    }

    /// A tool call has run: follow-ups now wait instead of interrupting (SPEC C7).
    pub fn enter_tool_chain(&self) {
        self.state().flags.in_tool_chain = true;
    }

    pub fn in_tool_chain(&self) -> bool {
        self.state().flags.in_tool_chain
    }

    /// `update_short_term_memory` succeeded: once per turn (SPEC T12).
    pub fn lock_short_term_memory(&self) {
        self.state().flags.short_term_memory_locked = true;
    }

    pub fn short_term_memory_locked(&self) -> bool {
        self.state().flags.short_term_memory_locked
    }

    /// The oldest message in the turn's context, as the context that owns it says.
    pub fn set_context_oldest(&self, oldest: MessageId) {
        self.state().flags.context_oldest = Some(oldest);
    }

    /// Where older history continues (`None`: before the context was loaded).
    pub fn context_oldest(&self) -> Option<MessageId> {
        self.state().flags.context_oldest
    }

    /// The tool a stop ended, and how; a first note stands unless `replace` (the tool's own
    /// account replaces a guess made while it was still running).
    pub fn note_stopped_tool(&self, stopped: StoppedTool, replace: bool) {
        let slot = &mut self.state().flags.stopped_tool;
        if replace || slot.is_none() {
            *slot = Some(stopped);
        }
    }

    pub fn stopped_tool(&self) -> Option<StoppedTool> {
        self.state().flags.stopped_tool.clone()
    }

    /// Short, synchronous access to the shared state: only this type's methods take it, so no
    /// caller can hold it across an `.await`.
    fn state(&self) -> MutexGuard<'_, TurnState> {
        lock(&self.state)
    }

    /// Works on the turn's review ledger (SPEC R1-R5).
    pub fn review<R>(&self, work: impl FnOnce(&mut ReviewLedger) -> R) -> R {
        work(&mut self.state().review)
    }

    /// Works on the turn's image plans (SPEC S5).
    pub fn plans<R>(&self, work: impl FnOnce(&mut PlanLedger) -> R) -> R {
        work(&mut self.state().plans)
    }

    /// Where the turn's single expression allowance stands (SPEC T9).
    pub fn expression(&self) -> ExpressionState {
        self.state().expression
    }

    /// The expression was sent, or its send was not confirmed.
    pub fn settle_expression(&self, settled: ExpressionState) {
        self.state().expression = settled;
    }

    /// A completed outcome of the same request that this invocation may reuse instead of
    /// running it again (SPEC R4): one of an earlier invocation, or any while drafting.
    pub fn reusable_outcome(&self, identity: &str) -> Option<serde_json::Value> {
        let state = self.state();
        let reusable = state
            .outcomes
            .reusable(identity, state.invocation, self.drafting);
        reusable.cloned()
    }

    /// Records a completed outcome under the current invocation, which it returns.
    pub fn record_outcome(&self, identity: String, response: serde_json::Value) -> u32 {
        let mut state = self.state();
        let invocation = state.invocation;
        state.outcomes.record(identity, response, invocation);
        invocation
    }

    /// Outcomes an earlier run of this turn completed (identity, response, invocation): this
    /// run becomes a later invocation than each, so each is reusable.
    pub fn restore_outcomes(
        &self,
        stored: impl IntoIterator<Item = (String, serde_json::Value, u32)>,
    ) {
        let mut state = self.state();
        for (identity, response, invocation) in stored {
            // Read back from the store: a corrupted row's `u32::MAX` must not overflow.
            state.invocation = state.invocation.max(invocation.saturating_add(1));
            state.outcomes.record(identity, response, invocation);
        }
    }

    /// The provider invocation in progress.
    pub fn invocation(&self) -> u32 {
        self.state().invocation
    }

    /// Starts the next provider invocation (key rotation or model fallback).
    pub fn begin_invocation(&self) -> u32 {
        let mut state = self.state();
        state.invocation += 1;
        state.invocation
    }
}

/// Locks a mutex, recovering the data if a panicking holder poisoned it: the state stays valid
/// because every critical section here is a plain field update.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::scope::{PersonaId, UserId, Visibility};

    fn dm_scope() -> Scope {
        Scope {
            server: None,
            channel: ChannelId(1),
            user: UserId(2),
            persona: PersonaId("p".into()),
            visibility: Visibility::Dm,
        }
    }

    // SPEC T5: the active tool name is cleared when the guard drops.
    #[test]
    fn active_tool_guard_clears_on_drop() {
        let activity = ChannelActivity::default();
        {
            let _guard = activity.mark_tool("plan_image");
            assert_eq!(activity.active_tool().as_deref(), Some("plan_image"));
        }
        assert_eq!(activity.active_tool(), None);
    }

    #[test]
    fn follow_up_flag_is_cleared_once() {
        let turn = Turn::new(dm_scope(), Locale::En);
        assert!(!turn.stop.follow_up_pending());
        turn.stop.note_follow_up();
        assert!(turn.stop.follow_up_pending());
        assert!(turn.stop.clear_follow_up());
        assert!(!turn.stop.clear_follow_up());
    }

    // SPEC C10: progress is measured outside guarded phases only.
    #[tokio::test(start_paused = true)]
    async fn progress_idles_only_outside_guarded_phases() {
        let turn = Turn::new(dm_scope(), Locale::En);
        tokio::time::advance(Duration::from_secs(5)).await;
        assert_eq!(turn.progress.idle_for(), Some(Duration::from_secs(5)));
        {
            let _guard = turn.progress.guard();
            tokio::time::advance(Duration::from_secs(500)).await;
            assert_eq!(turn.progress.idle_for(), None);
        }
        assert_eq!(turn.progress.idle_for(), Some(Duration::ZERO));
    }

    #[test]
    fn turn_ids_for_a_message_are_stable_and_distinct() {
        let a = TurnId::for_message(ChannelId(1), MessageId(2));
        assert_eq!(a, TurnId::for_message(ChannelId(1), MessageId(2)));
        assert_ne!(a, TurnId::for_message(ChannelId(1), MessageId(3)));
        assert_ne!(a, TurnId::for_message(ChannelId(2), MessageId(2)));
        assert_eq!(a, TurnId::for_edit(ChannelId(1), MessageId(2), 0));
        let edited = TurnId::for_edit(ChannelId(1), MessageId(2), 1);
        assert_ne!(a, edited);
        assert_eq!(edited, TurnId::for_edit(ChannelId(1), MessageId(2), 1));
        assert_ne!(edited, TurnId::for_edit(ChannelId(1), MessageId(2), 2));
    }

    #[test]
    fn invocations_count_up() {
        let turn = Turn::new(dm_scope(), Locale::En);
        assert_eq!(turn.invocation(), 0);
        assert_eq!(turn.begin_invocation(), 1);
        assert_eq!(turn.invocation(), 1);
    }

    // SPEC R4, D5: restored outcomes are reusable by this run, whatever invocation a stored
    // row names (a corrupted `u32::MAX` included).
    #[test]
    fn restored_outcomes_make_this_run_a_later_invocation() {
        let turn = Turn::new(dm_scope(), Locale::En);
        turn.restore_outcomes([("a".to_owned(), serde_json::json!(1), 3)]);
        assert_eq!(turn.invocation(), 4);
        assert_eq!(turn.reusable_outcome("a"), Some(serde_json::json!(1)));
        turn.restore_outcomes([("b".to_owned(), serde_json::json!(2), u32::MAX)]);
        assert_eq!(turn.invocation(), u32::MAX);
    }
}
