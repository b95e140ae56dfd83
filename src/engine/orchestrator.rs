//! The stream orchestrator: one worker task per channel, fed by an mpsc queue (the actor
//! pattern). Turns in a channel run one at a time; channels run in parallel (SPEC C3).
//!
//! The worker owns its channel's waiting messages (a bounded FIFO, mirrored in the store so a
//! restart loses nothing, SPEC D4), the running turn, and the decisions about follow-ups (C7),
//! `/kill` (C6), typing, and the stale-turn guard (C10). The process's token is the parent of each
//! channel's; a turn has its own, which `/kill`, the stale-turn guard and a stopping worker
//! cancel (a stop first lets the turn finish, within the shutdown's grace). It imports no Discord type: the
//! adapter hands it [`NewQueuedMessage`]s and renders its [`KillReport`]s.
//!
//! A panic silences nothing: a panicking turn ends as an error turn with the localized error
//! notice and the channel goes on; a worker that panics is replaced by the next message sent
//! to its channel, and the messages it held are taken again from the store. A worker with
//! nothing running and nothing waiting for `turn.worker_idle_secs` stops, so idle channels cost
//! no memory; it retires under the same lock senders use, so no message slips in as it goes.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::{Config, KillPermission};
use crate::domain::ports::{
    ATTACHMENTS_PER_MESSAGE, Delivery, NewQueuedMessage, Persona, PersonaStore, Pings, PortError,
    Pushed, QueueStore, ServerSettings, SettingsStore, Voice, close_unanswered, remember_delivery,
};
use crate::domain::role::Role;
use crate::domain::scope::{ChannelId, MessageId, Scope, ServerId, UserId};
use crate::domain::turn::{ChannelActivity, StoppedTool, ToolEnding, Turn, TurnId, TurnStatus};
use crate::engine::context::Trigger;
use crate::engine::passes::{TurnDeps, TurnEnd, TurnReport, run_turn};
use crate::locale;
use crate::tool_loop::deliberate::{self, KeywordPacks};

/// Everything the orchestrator's workers use.
pub struct OrchestratorDeps {
    pub turn: TurnDeps,
    pub queue: Arc<dyn QueueStore>,
    pub settings: Arc<dyn SettingsStore>,
    pub personas: Arc<dyn PersonaStore>,
    pub packs: KeywordPacks,
    pub config: Arc<Config>,
}

/// What `/kill` did (SPEC C6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KillReport {
    /// The caller may not stop this turn, and nothing of theirs runs or waits here.
    Denied,
    /// No turn was running and nothing was waiting.
    NothingRunning,
    Stopped {
        /// Whose messages it stopped.
        reach: KillReach,
        /// A turn was running and is now stopped.
        turn_stopped: bool,
        /// The tool that was running, if one was, and how it ended (SPEC T5, row 30).
        tool: Option<StoppedTool>,
        /// Waiting messages dropped.
        dropped: usize,
    },
}

/// Whose messages a `/kill` stops (SPEC C6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillReach {
    /// The requester's own: their running turn, and their waiting messages only; other
    /// members' stay and are answered.
    Own,
    /// Everyone's: the running turn and the channel's whole queue (a member who can manage
    /// messages, or anyone under `kill_permission = "anyone"`).
    Channel,
}

/// A finished (or released) turn, as broadcast to subscribers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnFinished {
    pub channel: ChannelId,
    pub message: MessageId,
    pub turn: TurnId,
    /// Where the turn ran (server, visibility): the thought log's summary needs it.
    pub scope: Scope,
    pub report: TurnReport,
    /// From the turn's start to its end.
    pub elapsed: Duration,
    /// Messages waiting in the channel's queue as the turn ended.
    pub queued: usize,
}

/// The next finished turn for a subscriber that stops with `stop`; `None` once it stopped or
/// the orchestrator is gone. Turns a slow subscriber missed are logged as `skipped` (what it
/// does with them) and passed over.
pub async fn next_finished(
    finished: &mut broadcast::Receiver<TurnFinished>,
    stop: &CancellationToken,
    skipped: &'static str,
) -> Option<TurnFinished> {
    loop {
        tokio::select! {
            () = stop.cancelled() => return None,
            turn = finished.recv() => match turn {
                Ok(turn) => return Some(turn),
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "{skipped} skipped (too many at once)");
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            },
        }
    }
}

/// A worker's inbox item. Boxed payloads keep it small: the channel allocates its slots in
/// blocks, per channel, and there may be many thousands of channels.
enum Command {
    Message(Box<Pending>),
    /// A message was edited (SPEC C7).
    Edited {
        message: MessageId,
        content: String,
    },
    /// A message was deleted (SPEC C7).
    Deleted {
        message: MessageId,
    },
    /// Whether `user` has a turn running or waiting in the channel.
    Involves {
        user: UserId,
        reply: oneshot::Sender<bool>,
    },
    /// Whether a turn runs, and how many messages wait (for `/status`).
    Load {
        reply: oneshot::Sender<(bool, usize)>,
    },
    Kill {
        requester: UserId,
        can_manage: bool,
        reply: oneshot::Sender<KillReport>,
    },
}

/// A message waiting in a worker's queue.
#[derive(Debug, Clone)]
struct Pending {
    /// Its row in the queue store; `None` when the store was unavailable (kept in memory).
    store_id: Option<i64>,
    message: NewQueuedMessage,
    /// It waited behind another turn: its reply replies to it.
    waited: bool,
    /// How many edits of its message it answers (0: the message as sent; SPEC C7).
    edit: u32,
    /// Later messages of its author joined to it while it waited ([`Worker::fold`]).
    folded: u32,
}

/// The handle the adapter uses. Cheap to clone.
#[derive(Clone)]
pub struct Orchestrator {
    inner: Arc<Inner>,
}

struct Inner {
    deps: Arc<OrchestratorDeps>,
    /// One sender per channel worker.
    channels: Arc<Slots>,
    root: CancellationToken,
    tracker: TaskTracker,
    finished: broadcast::Sender<TurnFinished>,
    /// Numbers workers, so a retiring worker removes its own slot and not a successor's.
    next_worker: AtomicU64,
    /// When each channel's stored messages were last taken again after a worker panic.
    replayed: Mutex<HashMap<ChannelId, Instant>>,
    /// Set when the process stops: how long running turns have (see [`Orchestrator::stop_within`]).
    stopping: Arc<Mutex<Option<StopPlan>>>,
}

/// A stop's deadlines for running turns: until `finish_by` a turn may end by itself; then it is
/// stopped, and until `stop_by` it may wind down; then it is dropped.
#[derive(Debug, Clone, Copy)]
struct StopPlan {
    finish_by: Instant,
    stop_by: Instant,
}

/// The channel workers' inboxes.
type Slots = Mutex<HashMap<ChannelId, Slot>>;

struct Slot {
    worker: u64,
    tx: mpsc::UnboundedSender<Command>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// After a worker panic its channel's stored messages are taken again at most this often, so a
/// message that panics the worker itself cannot make it loop; past that they wait for the next
/// start.
const REPLAY_AT_MOST_EVERY: Duration = Duration::from_secs(60);

impl Orchestrator {
    pub fn new(deps: OrchestratorDeps) -> Self {
        let (finished, _) = broadcast::channel(1024);
        Self {
            inner: Arc::new(Inner {
                deps: Arc::new(deps),
                channels: Arc::new(Mutex::new(HashMap::new())),
                root: CancellationToken::new(),
                tracker: TaskTracker::new(),
                finished,
                next_worker: AtomicU64::new(0),
                replayed: Mutex::new(HashMap::new()),
                stopping: Arc::new(Mutex::new(None)),
            }),
        }
    }

    /// Finished turns, as they finish.
    pub fn subscribe(&self) -> broadcast::Receiver<TurnFinished> {
        self.inner.finished.subscribe()
    }

    /// Takes a triggering message: stored first (so a restart does not lose it), then handed to
    /// its channel's worker.
    pub async fn submit(&self, message: NewQueuedMessage) {
        self.submit_as(message, false).await;
    }

    /// [`Self::submit`] for a message found late (a catch-up, SPEC D9): others may have come
    /// after it, so its answer replies to it, as one that waited behind another turn does.
    pub async fn submit_late(&self, message: NewQueuedMessage) {
        self.submit_as(message, true).await;
    }

    async fn submit_as(&self, message: NewQueuedMessage, waited: bool) {
        let store_id = match self.inner.deps.queue.push(&message).await {
            Ok(Pushed::New(id)) => Some(id),
            Ok(Pushed::Existing(_)) => {
                tracing::debug!(channel = %message.channel, message = %message.message, "already queued; handled once");
                return;
            }
            Err(error) => {
                tracing::error!(channel = %message.channel, %error, "queue store unavailable; message kept in memory only");
                None
            }
        };
        self.send(
            message.channel,
            Command::Message(Box::new(Pending {
                store_id,
                message,
                waited,
                edit: 0,
                folded: 0,
            })),
        );
    }

    /// Re-queues what the store holds from before a restart.
    pub async fn recover(&self) -> Result<usize, PortError> {
        let mut recovered = 0;
        for channel in self.inner.deps.queue.channels_with_pending().await? {
            recovered += self.take_stored(channel).await?;
        }
        Ok(recovered)
    }

    /// Takes over what no live process holds in this process's shards (a process that stopped
    /// for good, SPEC D6); returns how many messages were taken.
    pub async fn take_over(&self) -> Result<usize, PortError> {
        let mut taken = 0;
        for channel in self.inner.deps.queue.channels_to_take_over().await? {
            taken += self.take_stored(channel).await?;
        }
        Ok(taken)
    }

    /// Hands what the store holds for `channel` to its worker, in store order (a follow-up is
    /// recognised again as its author's turn runs); returns how many.
    async fn take_stored(&self, channel: ChannelId) -> Result<usize, PortError> {
        let stored = self.inner.deps.queue.pending(channel).await?;
        let count = stored.len();
        for stored in stored {
            self.send(
                channel,
                Command::Message(Box::new(Pending {
                    store_id: Some(stored.id),
                    message: stored.entry,
                    waited: true,
                    edit: 0,
                    folded: 0,
                })),
            );
        }
        Ok(count)
    }

    /// `/kill` in `channel` by `requester`: stops the running turn, its provider stream and its
    /// tool, and clears the channel's queue; a requester who cannot manage messages stops only
    /// their own turn and waiting messages (see [`KillReach`]). Returns once the turn has ended
    /// (or the grace period ran out and it was dropped) and what it stopped is marked finished.
    pub async fn kill(
        &self,
        channel: ChannelId,
        requester: UserId,
        can_manage: bool,
    ) -> KillReport {
        let (reply, answer) = oneshot::channel();
        let sent = self.send(
            channel,
            Command::Kill {
                requester,
                can_manage,
                reply,
            },
        );
        if !sent {
            return KillReport::NothingRunning;
        }
        answer.await.unwrap_or(KillReport::NothingRunning)
    }

    /// Whether `user` has a turn running or waiting in `channel`: their messages there are
    /// follow-ups, mention or not (SPEC C7). No worker is started to ask.
    pub async fn has_turn_of(&self, channel: ChannelId, user: UserId) -> bool {
        let (reply, answer) = oneshot::channel();
        let sent = lock(&self.inner.channels)
            .get(&channel)
            .is_some_and(|slot| slot.tx.send(Command::Involves { user, reply }).is_ok());
        sent && answer.await.unwrap_or(false)
    }

    /// Whether a turn runs in `channel` and how many messages wait there; `(false, 0)` for a
    /// channel without a worker (none is started to ask).
    pub async fn load_of(&self, channel: ChannelId) -> (bool, usize) {
        let (reply, answer) = oneshot::channel();
        let sent = lock(&self.inner.channels)
            .get(&channel)
            .is_some_and(|slot| slot.tx.send(Command::Load { reply }).is_ok());
        if !sent {
            return (false, 0);
        }
        answer.await.unwrap_or((false, 0))
    }

    /// A message in `channel` was edited: a waiting one takes the new text, the running turn's
    /// trigger becomes a follow-up with it (SPEC C7). `content` is as a queued message holds it.
    /// Nothing happens in a channel without a worker.
    pub fn edited(&self, channel: ChannelId, message: MessageId, content: String) {
        if let Some(slot) = lock(&self.inner.channels).get(&channel) {
            let _ = slot.tx.send(Command::Edited { message, content });
        }
    }

    /// A message in `channel` was deleted: a waiting one is dropped, and the running turn it
    /// started stops when nothing of its answer went out yet (SPEC C7).
    pub fn deleted(&self, channel: ChannelId, message: MessageId) {
        if let Some(slot) = lock(&self.inner.channels).get(&channel) {
            let _ = slot.tx.send(Command::Deleted { message });
        }
    }

    /// Stops every worker at once. Running turns are stopped with their queue entries kept, so
    /// they run again after the next start (SPEC D5: nothing they delivered is repeated).
    pub async fn shutdown(&self) {
        self.stop_within(Duration::ZERO).await;
    }

    /// Stops taking work and stops every worker within `within`: a running turn has the first
    /// half to finish by itself (answered, its entry removed); then it is stopped at a safe point
    /// (complete sentences sent, the running tool cancelled) and has the rest to wind down, its
    /// entry kept for the next start. Messages still waiting stay stored. Returns whether every
    /// worker ended in time.
    pub async fn stop_within(&self, within: Duration) -> bool {
        let now = Instant::now();
        *lock(&self.inner.stopping) = Some(StopPlan {
            finish_by: now + within / 2,
            stop_by: now + within,
        });
        self.inner.root.cancel();
        self.inner.tracker.close();
        // A little past the plan, for the workers' own bookkeeping after their turns.
        let margin = Duration::from_millis(200);
        tokio::time::timeout(within + margin, self.inner.tracker.wait())
            .await
            .is_ok()
    }

    /// Channel workers alive now (idle ones retire after `turn.worker_idle_secs`).
    pub fn workers(&self) -> usize {
        lock(&self.inner.channels).len()
    }

    fn send(&self, channel: ChannelId, mut command: Command) -> bool {
        if self.inner.root.is_cancelled() {
            return false;
        }
        let mut channels = lock(&self.inner.channels);
        // A second try, when the channel's worker had gone (it panicked).
        for _ in 0..2 {
            let slot = channels
                .entry(channel)
                .or_insert_with(|| self.spawn_worker(channel));
            match slot.tx.send(command) {
                Ok(()) => return true,
                Err(mpsc::error::SendError(back)) => {
                    tracing::warn!(%channel, "the channel's worker had stopped; starting a new one");
                    channels.remove(&channel);
                    command = back;
                }
            }
        }
        false
    }

    fn spawn_worker(&self, channel: ChannelId) -> Slot {
        let (tx, rx) = mpsc::unbounded_channel();
        let id = self.inner.next_worker.fetch_add(1, Ordering::Relaxed);
        let worker = Worker {
            channel,
            id,
            rx,
            deps: self.inner.deps.clone(),
            slots: self.inner.channels.clone(),
            tasks: self.inner.tracker.clone(),
            token: self.inner.root.child_token(),
            activity: Arc::new(ChannelActivity::default()),
            queue: VecDeque::new(),
            running: None,
            finished: self.inner.finished.clone(),
            stopping: self.inner.stopping.clone(),
            settings_retry: None,
        };
        let orchestrator = Arc::downgrade(&self.inner);
        self.inner.tracker.spawn(async move {
            let outcome = AssertUnwindSafe(worker.run()).catch_unwind().await;
            if let Err(panic) = outcome {
                tracing::error!(
                    %channel, panic = %panic_text(panic.as_ref()),
                    "channel worker panicked; a new worker takes the channel"
                );
                replace_worker(orchestrator, channel, id).await;
            }
        });
        Slot { worker: id, tx }
    }
}

/// After worker `id` of `channel` panicked: its slot goes, and the messages it held are taken
/// again from the store by a new worker (at most once a minute per channel).
async fn replace_worker(orchestrator: Weak<Inner>, channel: ChannelId, id: u64) {
    let Some(inner) = orchestrator.upgrade() else {
        return;
    };
    {
        let mut channels = lock(&inner.channels);
        if channels.get(&channel).is_some_and(|slot| slot.worker == id) {
            channels.remove(&channel);
        }
    }
    let now = Instant::now();
    let recent = lock(&inner.replayed)
        .insert(channel, now)
        .is_some_and(|at| now.duration_since(at) < REPLAY_AT_MOST_EVERY);
    if recent {
        tracing::error!(%channel, "channel worker panicked again; its messages stay stored for the next start");
        return;
    }
    let orchestrator = Orchestrator { inner };
    if let Err(error) = orchestrator.take_stored(channel).await {
        tracing::error!(%channel, %error, "could not take a panicked worker's messages again; they wait for the next start");
    }
}

/// What a panic said, redacted (it may quote data).
fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-text panic".to_owned());
    crate::redact::redact_text(&crate::redact::cut(&text, 500))
}

type TurnFuture = Pin<Box<dyn Future<Output = TurnReport> + Send>>;

struct RunningTurn {
    turn: Arc<Turn>,
    started: Instant,
    pending: Pending,
    future: TurnFuture,
    follow_ups: u32,
    /// The next typing pulse: the first after `turn.typing_delay_ms`, then every interval.
    next_typing: Instant,
    /// The first pulse has come due (it is skipped when the reply is already up).
    typing_started: bool,
}

struct Worker {
    channel: ChannelId,
    /// This worker's number in `slots`.
    id: u64,
    rx: mpsc::UnboundedReceiver<Command>,
    deps: Arc<OrchestratorDeps>,
    slots: Arc<Slots>,
    /// The orchestrator's tracker: the worker's own small tasks join it too.
    tasks: TaskTracker,
    /// The channel's token, a child of the process's: cancelled, the worker winds down.
    token: CancellationToken,
    activity: Arc<ChannelActivity>,
    queue: VecDeque<Pending>,
    running: Option<RunningTurn>,
    finished: broadcast::Sender<TurnFinished>,
    /// The stop's deadlines, once the process stops.
    stopping: Arc<Mutex<Option<StopPlan>>>,
    /// While the server's settings cannot be read, the next turn waits until then.
    settings_retry: Option<Instant>,
}

/// How long a channel waits before it tries a server's settings again after a failed read.
const SETTINGS_RETRY: Duration = Duration::from_secs(5);
/// The longest wait between two tries of a failed queue removal.
const REMOVE_RETRY_MAX: Duration = Duration::from_secs(30);
/// Longest a typing pulse may hold the channel's loop.
const TYPING_WAIT: Duration = Duration::from_millis(500);
/// How often the stale-turn guard looks.
const STALE_CHECK: Duration = Duration::from_secs(1);

impl Worker {
    async fn run(mut self) {
        let typing_every = Duration::from_secs(self.deps.config.turn.typing_interval_secs);
        let idle_for = Duration::from_secs(self.deps.config.turn.worker_idle_secs);
        let mut stale_check = tokio::time::interval(STALE_CHECK);
        stale_check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // Once the orchestrator is gone the inbox stays closed; a running turn still finishes.
        let mut inbox_open = true;
        let mut idle_since = Instant::now();
        loop {
            if self.running.is_none()
                && self.settings_retry.is_none()
                && let Some(next) = self.queue.pop_front()
            {
                self.start(next).await;
                continue;
            }
            if !inbox_open && self.running.is_none() {
                return;
            }
            let next_typing = self.running.as_ref().map(|r| r.next_typing);
            let idle = self.running.is_none() && self.queue.is_empty();
            tokio::select! {
                biased;
                () = self.token.cancelled() => {
                    self.wind_down().await;
                    return;
                }
                command = self.rx.recv(), if inbox_open => match command {
                    Some(command) => self.handle(command).await,
                    None => inbox_open = false,
                },
                report = poll_running(&mut self.running) => {
                    self.finish(report).await;
                    idle_since = Instant::now();
                }
                () = tokio::time::sleep_until(idle_since + idle_for), if idle && inbox_open => {
                    match self.retire() {
                        Ok(()) => return,
                        Err(command) => self.handle(command).await,
                    }
                }
                () = sleep_until_opt(self.settings_retry) => self.settings_retry = None,
                () = sleep_until_opt(next_typing) => {
                    if let Some(running) = &mut self.running {
                        running.next_typing = Instant::now() + typing_every;
                        // The first pulse is for a turn that has shown nothing yet.
                        let shown =
                            !running.typing_started && running.turn.state().response_delivered;
                        running.typing_started = true;
                        if !shown {
                            // Best effort, and never long: a pulse held by a rate limit is
                            // dropped rather than keep this loop from its commands (/kill).
                            let typing = self.deps.turn.env.ports.sink.typing(self.channel);
                            let _ = tokio::time::timeout(TYPING_WAIT, typing).await;
                        }
                    }
                }
                _ = stale_check.tick(), if self.running.is_some() => self.release_if_stale(),
            }
        }
    }

    /// Leaves the channel when nothing came: under the senders' lock, so whatever is in the
    /// inbox now is all there will be. A command that did come is handed back.
    fn retire(&mut self) -> Result<(), Command> {
        let mut slots = lock(&self.slots);
        if let Ok(command) = self.rx.try_recv() {
            return Err(command);
        }
        if slots
            .get(&self.channel)
            .is_some_and(|slot| slot.worker == self.id)
        {
            slots.remove(&self.channel);
        }
        tracing::debug!(channel = %self.channel, "idle channel worker retired");
        Ok(())
    }

    async fn handle(&mut self, command: Command) {
        match command {
            Command::Message(pending) => self.take_message(*pending).await,
            Command::Edited { message, content } => self.edited(message, content).await,
            Command::Deleted { message } => self.deleted(message).await,
            Command::Involves { user, reply } => {
                let running = self
                    .running
                    .as_ref()
                    .is_some_and(|r| r.turn.scope.user == user);
                let waiting = self.queue.iter().any(|p| p.message.author == user);
                let _ = reply.send(running || waiting);
            }
            Command::Load { reply } => {
                let _ = reply.send((self.running.is_some(), self.queue.len()));
            }
            Command::Kill {
                requester,
                can_manage,
                reply,
            } => {
                let report = self.kill(requester, can_manage).await;
                let _ = reply.send(report);
            }
        }
    }

    /// SPEC C7: an edit of a waiting message replaces its text (stored too); an edit of the
    /// running turn's trigger is a follow-up with the new text.
    async fn edited(&mut self, message: MessageId, content: String) {
        if let Some(pending) = self.queue.iter_mut().find(|p| p.message.message == message) {
            pending.message.content.clone_from(&content);
            if let Some(id) = pending.store_id
                && let Err(error) = self.deps.queue.update_content(id, &content).await
            {
                tracing::warn!(channel = %self.channel, %error, "could not store an edited message's text; it is answered as edited unless the process restarts");
            }
            return;
        }
        let Some(running) = &self.running else {
            return;
        };
        if running.pending.message.message != message {
            return;
        }
        let mut follow_up = running.pending.message.clone();
        follow_up.content = content;
        let edit = running.pending.edit.saturating_add(1);
        self.take_message(Pending {
            store_id: None,
            message: follow_up,
            waited: true,
            edit,
            folded: 0,
        })
        .await;
    }

    /// SPEC C7: a deleted waiting message is dropped; a running turn whose trigger was deleted
    /// stops when nothing of its answer went out yet (what went out stays, and it goes on).
    async fn deleted(&mut self, message: MessageId) {
        if let Some(at) = self.queue.iter().position(|p| p.message.message == message) {
            if let Some(dropped) = self.queue.remove(at) {
                self.forget(&dropped).await;
            }
            return;
        }
        if let Some(running) = &self.running
            && running.pending.message.message == message
            && !running.turn.state().response_delivered
        {
            tracing::info!(channel = %self.channel, turn = %running.turn.id, "the trigger was deleted before any answer went out; stopping the turn");
            running.turn.stop.kill();
        }
    }

    /// A new message: a follow-up of the running turn's requester (SPEC C7), or the queue's end.
    async fn take_message(&mut self, mut pending: Pending) {
        // A replacement worker may be handed a stored message twice: once replayed, once sent.
        if pending.store_id.is_some() && self.holds(pending.store_id) {
            return;
        }
        let max_follow_ups = self.deps.config.turn.max_follow_ups;
        let follow_up_of = match &mut self.running {
            Some(running) => {
                pending.waited = true;
                let is_follow_up = pending.message.author == running.turn.scope.user
                    && running.follow_ups < max_follow_ups;
                if is_follow_up {
                    running.follow_ups += 1;
                }
                is_follow_up.then(|| running.turn.clone())
            }
            None => {
                // A message found late (recovered, caught up) has waited already.
                pending.waited |= !self.queue.is_empty();
                None
            }
        };
        let Some(turn) = follow_up_of else {
            if let Err(pending) = self.fold(pending).await {
                self.queue.push_back(pending);
                self.enforce_bound().await;
            }
            return;
        };
        pending.message.follow_up = true;
        if let Some(id) = pending.store_id
            && let Err(error) = self.deps.queue.mark_follow_up(id).await
        {
            tracing::warn!(channel = %self.channel, %error, "follow-up not marked in the store");
        }
        // A newer follow-up supersedes an older queued one from the same user.
        let author = pending.message.author;
        if let Some(at) = self
            .queue
            .iter()
            .position(|q| q.message.follow_up && q.message.author == author)
            && let Some(old) = self.queue.remove(at)
        {
            self.forget(&old).await;
        }
        // Outside a tool chain (or with drafting On) it interrupts; inside, it waits at the
        // front so the tool progress is kept.
        let in_chain = turn.state().in_tool_chain;
        if turn.drafting || !in_chain {
            turn.stop.note_follow_up();
        }
        self.queue.push_front(pending);
    }

    /// SPEC C2, C7: a message from someone whose own message already waits here joins it (one
    /// turn answers both, replying to the first), up to `turn.max_follow_ups` a message; the
    /// waiting entry's stored text takes it too. Handed back when there is nothing to join.
    async fn fold(&mut self, pending: Pending) -> Result<(), Pending> {
        let max = self.deps.config.turn.max_follow_ups;
        let author = pending.message.author;
        let Some(waiting) = self.queue.iter_mut().find(|q| {
            q.message.author == author
                && !q.message.quiet
                && !q.message.follow_up
                && q.folded < max
                && q.store_id != pending.store_id
        }) else {
            return Err(pending);
        };
        if pending.message.quiet {
            return Err(pending);
        }
        waiting.message.content.push('\n');
        waiting.message.content.push_str(&pending.message.content);
        // Its files come along, within a message's worth (the stored entry keeps the first
        // message's: after a restart the joined one's files are named no more).
        let room = ATTACHMENTS_PER_MESSAGE.saturating_sub(waiting.message.attachments.len());
        let files = pending.message.attachments.iter().take(room).cloned();
        waiting.message.attachments.extend(files);
        waiting.folded += 1;
        if let Some(id) = waiting.store_id
            && let Err(error) = self
                .deps
                .queue
                .update_content(id, &waiting.message.content)
                .await
        {
            tracing::warn!(channel = %self.channel, %error, "could not store a joined message's text");
        }
        tracing::debug!(channel = %self.channel, "a message joined the same author's waiting one");
        self.forget(&pending).await;
        Ok(())
    }

    /// Whether the stored message `id` is running or waiting here.
    fn holds(&self, id: Option<i64>) -> bool {
        self.running
            .as_ref()
            .is_some_and(|r| r.pending.store_id == id)
            || self.queue.iter().any(|q| q.store_id == id)
    }

    /// Past the bound, the oldest non-follow-up is dropped, with a notice on it (SPEC C3).
    async fn enforce_bound(&mut self) {
        while self.queue.len() > self.deps.config.turn.queue_limit {
            let Some(at) = self.queue.iter().position(|q| !q.message.follow_up) else {
                return;
            };
            let Some(dropped) = self.queue.remove(at) else {
                return;
            };
            tracing::warn!(channel = %self.channel, message = %dropped.message.message, "queue full: dropping the oldest waiting message");
            self.close_unanswered(&dropped).await;
            let notice = locale::text(dropped.message.locale, "turn-queue-dropped");
            if let Err(error) = self
                .deps
                .turn
                .env
                .ports
                .sink
                .send_text(
                    self.channel,
                    notice,
                    Some(dropped.message.message),
                    &Pings::none(),
                    None,
                )
                .await
            {
                tracing::warn!(channel = %self.channel, %error, "could not post the queue-full notice");
            }
            self.forget(&dropped).await;
        }
    }

    /// A turn the bot starts itself (a due reminder) passes the channel rules a message passes
    /// (SPEC C2): in a channel they close it is skipped (its entry forgotten), and the
    /// moderators told. Returns whether it was skipped.
    async fn closed_to_quiet(&mut self, pending: &Pending, settings: &ServerSettings) -> bool {
        let m = &pending.message;
        let Some(server) = m.server.filter(|_| m.quiet) else {
            return false;
        };
        if crate::domain::admission::channel_rules(m.channel, None, settings).is_ok() {
            return false;
        }
        tracing::info!(channel = %self.channel, "a reminder's turn is skipped: the channel's rules close it to the bot");
        let notice = crate::domain::thought_log::Notice::QuietTurnSkipped { channel: m.channel };
        self.deps
            .turn
            .env
            .ports
            .thought_log
            .post(server, notice)
            .await;
        // Its creator hears of it where the bot can still reach them.
        let text = crate::locale::text_with(
            m.locale,
            "reminder-not-delivered",
            &[("channel", format!("<#{}>", m.channel))],
        );
        let sink = &self.deps.turn.env.ports.sink;
        if let Err(error) = sink.direct_message(m.author, text).await {
            tracing::info!(channel = %self.channel, %error, "the reminder's creator could not be told in a DM (their DMs may be closed); the thought log says it");
        }
        self.forget(pending).await;
        true
    }

    async fn start(&mut self, pending: Pending) {
        let m = &pending.message;
        let settings = match m.server {
            None => ServerSettings::default(),
            Some(server) => match self.deps.settings.settings(server).await {
                Ok(settings) => settings,
                Err(error) => {
                    // Never with guessed settings (a server's review would be skipped): the
                    // message waits, first in line, until the store answers.
                    tracing::debug!(%server, %error, "settings unavailable; the turn waits");
                    self.queue.push_front(pending);
                    self.settings_retry = Some(Instant::now() + SETTINGS_RETRY);
                    return;
                }
            },
        };
        if self.closed_to_quiet(&pending, &settings).await {
            return;
        }
        let persona = turn_persona(&self.deps, &settings, &m.persona).await;
        let admission = deliberate::admit(
            &self.deps.turn.registry,
            Role::Persona,
            &self.deps.packs,
            &settings.deliberate,
            &m.content,
        );
        let scope = Scope {
            server: m.server,
            channel: m.channel,
            user: m.author,
            persona: persona.id.clone(),
            visibility: m.visibility,
        };
        let turn = Arc::new(
            Turn::new(scope, m.locale)
                .with_id(TurnId::for_edit(m.channel, m.message, pending.edit))
                .quiet(m.quiet)
                .drafting(settings.drafting)
                .review_policy(settings.review.clone())
                .reply_style(settings.reply_style)
                .voice(own_voice(m.server, &settings))
                .persona_name(&persona.display_name)
                .admission(admission)
                // Not a child of the channel's token: a stopping process lets the turn finish
                // first, and stops it itself (see `wind_down`).
                .in_channel(self.activity.clone(), CancellationToken::new()),
        );
        let trigger = trigger_of(&pending);
        let deps = self.deps.clone();
        let for_future = turn.clone();
        let future: TurnFuture = Box::pin(async move {
            let run = run_turn(
                &deps.turn,
                &deps.config.turn,
                for_future.clone(),
                &persona,
                &trigger,
            );
            match AssertUnwindSafe(run).catch_unwind().await {
                Ok(report) => report,
                Err(panic) => crashed(&deps, &for_future, panic_text(panic.as_ref())).await,
            }
        });
        let typing_delay = Duration::from_millis(self.deps.config.turn.typing_delay_ms);
        self.running = Some(RunningTurn {
            turn,
            started: Instant::now(),
            pending,
            future,
            follow_ups: 0,
            next_typing: Instant::now() + typing_delay,
            typing_started: false,
        });
    }

    async fn finish(&mut self, report: TurnReport) {
        let Some(running) = self.running.take() else {
            return;
        };
        // Recorded before the entry goes: if removing it fails, a restart finds the turn done
        // instead of answering it again (SPEC D5).
        remember_delivery(
            &self.deps.turn.env.ports,
            running.turn.id,
            Delivery::Finished,
        )
        .await;
        self.forget(&running.pending).await;
        self.announce(&running, report);
    }

    fn announce(&self, running: &RunningTurn, report: TurnReport) {
        let _ = self.finished.send(TurnFinished {
            channel: self.channel,
            message: running.pending.message.message,
            turn: running.turn.id,
            scope: running.turn.scope.clone(),
            report,
            elapsed: running.started.elapsed(),
            queued: self.queue.len(),
        });
    }

    /// `/kill` (SPEC C6): stops what the requester may stop (see [`KillReach`]). Every message
    /// it stops or drops is marked finished before its entry goes and before `/kill` answers,
    /// so no restart or catch-up answers it again (SPEC D5, D9).
    async fn kill(&mut self, requester: UserId, can_manage: bool) -> KillReport {
        if self.running.is_none() && self.queue.is_empty() {
            return KillReport::NothingRunning;
        }
        let Some(reach) = self.kill_reach(can_manage) else {
            return KillReport::Denied;
        };
        let stop_turn = self
            .running
            .as_ref()
            .is_some_and(|r| reach == KillReach::Channel || r.turn.scope.user == requester);
        let dropped: Vec<Pending> = match reach {
            KillReach::Channel => self.queue.drain(..).collect(),
            KillReach::Own => {
                let (own, others): (VecDeque<Pending>, _) = std::mem::take(&mut self.queue)
                    .into_iter()
                    .partition(|p| p.message.author == requester);
                self.queue = others;
                own.into()
            }
        };
        if !stop_turn && dropped.is_empty() {
            return KillReport::Denied;
        }
        let stopped = if stop_turn {
            self.stop_running().await
        } else {
            None
        };
        let tool = stopped
            .as_ref()
            .and_then(|(running, _)| running.turn.state().stopped_tool.clone());
        let stopped_pending = stopped.as_ref().map(|(running, _)| &running.pending);
        for pending in dropped.iter().chain(stopped_pending) {
            self.mark_finished(pending).await;
        }
        self.remove_killed(reach, stopped_pending.into_iter().chain(&dropped))
            .await;
        if let Some((running, report)) = stopped {
            self.announce(&running, report);
        }
        KillReport::Stopped {
            reach,
            turn_stopped: stop_turn,
            tool,
            dropped: dropped.len(),
        }
    }

    /// Whose messages this `/kill` may stop; `None`: none (SPEC C6).
    fn kill_reach(&self, can_manage: bool) -> Option<KillReach> {
        match self.deps.config.turn.kill_permission {
            KillPermission::Anyone => Some(KillReach::Channel),
            KillPermission::ManagersOnly => can_manage.then_some(KillReach::Channel),
            KillPermission::RequesterOrManager if can_manage => Some(KillReach::Channel),
            KillPermission::RequesterOrManager => Some(KillReach::Own),
        }
    }

    /// Stops the running turn for `/kill` and waits, within `turn.kill_grace_ms`, for it to
    /// wind down; past that it is dropped, and a tool it was running may still finish. Returns
    /// it with how it ended.
    async fn stop_running(&mut self) -> Option<(RunningTurn, TurnReport)> {
        let mut running = self.running.take()?;
        running.turn.stop.kill();
        let grace = Duration::from_millis(self.deps.config.turn.kill_grace_ms);
        let report = match tokio::time::timeout(grace, &mut running.future).await {
            Ok(report) => report,
            Err(_) => {
                tracing::warn!(channel = %self.channel, "killed turn did not wind down in time; dropped");
                if let Some(name) = running.turn.channel.active_tool() {
                    running
                        .turn
                        .state()
                        .stopped_tool
                        .get_or_insert(StoppedTool {
                            name: name.to_string(),
                            ending: ToolEnding::MayStillFinish,
                        });
                }
                released(TurnStatus::StoppedByUser)
            }
        };
        Some((running, report))
    }

    /// The finished mark of a message `/kill` stopped or dropped, and of its edit's own turn
    /// when it answers an edit (SPEC C7), so no catch-up revives it (SPEC D9).
    async fn mark_finished(&mut self, pending: &Pending) {
        self.close_unanswered(pending).await;
        if pending.edit > 0 {
            let turn = TurnId::for_edit(self.channel, pending.message.message, pending.edit);
            remember_delivery(&self.deps.turn.env.ports, turn, Delivery::Finished).await;
        }
    }

    /// Removes what `/kill` stopped from the store: the channel's whole queue for everyone's,
    /// else each of the requester's entries by its row, as [`forget`] does.
    async fn remove_killed(&mut self, reach: KillReach, killed: impl Iterator<Item = &Pending>) {
        if reach == KillReach::Channel {
            if let Err(error) = self.deps.queue.clear(self.channel).await {
                tracing::warn!(channel = %self.channel, %error, "could not clear the stored queue");
            }
            return;
        }
        for pending in killed {
            self.forget(pending).await;
        }
    }

    /// SPEC C10: a turn without progress outside a provider call or a tool is released.
    fn release_if_stale(&mut self) {
        let stale_after = Duration::from_secs(self.deps.config.turn.stale_after_secs);
        let Some(running) = &self.running else {
            return;
        };
        let Some(idle) = running.turn.progress.idle_for() else {
            return;
        };
        if idle < stale_after {
            return;
        }
        let Some(running) = self.running.take() else {
            return;
        };
        tracing::error!(
            channel = %self.channel, turn = %running.turn.id, idle_secs = idle.as_secs(),
            "turn made no progress; force-released"
        );
        running.turn.stop.kill();
        let pending = running.pending.clone();
        self.announce(&running, released(TurnStatus::Error));
        // Its message is not retried: it already had its chance (SPEC D12: recorded so, before its
        // entry goes).
        let queue = self.deps.queue.clone();
        let channel = self.channel;
        let close = self.close_unanswered(&pending);
        self.tasks.spawn(async move {
            close.await;
            if let Some(id) = pending.store_id
                && let Err(error) = queue.remove(id).await
            {
                tracing::warn!(%channel, %error, "could not remove a released turn's entry");
            }
        });
    }

    /// A message dropped on purpose is recorded finished before its entry goes (SPEC D12).
    fn close_unanswered(&self, pending: &Pending) -> impl Future<Output = ()> + Send + 'static {
        let ports = self.deps.turn.env.ports.clone();
        let (channel, message) = (pending.message.channel, pending.message.message);
        async move {
            let now = ports.clock.now_ms();
            close_unanswered(ports.outcomes.as_ref(), channel, message, now).await;
        }
    }

    /// Removes an answered or dropped message from the store (see [`forget`]).
    fn forget(&self, pending: &Pending) -> impl Future<Output = ()> + Send + 'static {
        forget(
            self.deps.queue.clone(),
            self.tasks.clone(),
            self.token.clone(),
            self.channel,
            pending.store_id,
        )
    }

    /// The process stops: the running turn may finish by itself until the plan's `finish_by`,
    /// else it is stopped and may wind down until `stop_by` (its entry stays for the next start).
    async fn wind_down(&mut self) {
        let Some(running) = &mut self.running else {
            return;
        };
        let plan = *lock(&self.stopping);
        let now = Instant::now();
        let plan = plan.unwrap_or(StopPlan {
            finish_by: now,
            stop_by: now,
        });
        if let Ok(report) = tokio::time::timeout_at(plan.finish_by, &mut running.future).await {
            self.finish(report).await;
            return;
        }
        let Some(mut running) = self.running.take() else {
            return;
        };
        running.turn.stop.stop_for_shutdown();
        let channel = self.channel;
        let turn = running.turn.id;
        match tokio::time::timeout_at(plan.stop_by, &mut running.future).await {
            Ok(_) => {
                tracing::info!(%channel, %turn, "turn stopped by the shutdown; it resumes at the next start")
            }
            Err(_) => {
                tracing::warn!(%channel, %turn, "turn did not wind down before the shutdown's deadline; dropped, it resumes at the next start")
            }
        }
    }
}

/// Removes an answered or dropped message from the store. A removal that fails (the database is
/// down) is tried again in the background until it lands, so the message is not answered again
/// after a restart; the process stopping ends the tries (the turn's finished record, when it
/// landed, still keeps a restart from answering it again).
async fn forget(
    queue: Arc<dyn QueueStore>,
    tasks: TaskTracker,
    stop: CancellationToken,
    channel: ChannelId,
    id: Option<i64>,
) {
    let Some(id) = id else {
        return;
    };
    if queue.remove(id).await.is_ok() {
        return;
    }
    tracing::warn!(%channel, "could not remove an answered message from the queue; retrying");
    tasks.spawn(async move {
        let mut wait = Duration::from_secs(1);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(wait) => {}
            }
            if queue.remove(id).await.is_ok() {
                tracing::info!(%channel, "answered message removed from the queue");
                return;
            }
            wait = (wait * 2).min(REMOVE_RETRY_MAX);
        }
    });
}

/// What a queued message is to its turn.
fn trigger_of(pending: &Pending) -> Trigger {
    let m = &pending.message;
    Trigger {
        message: m.message,
        author: m.author,
        author_name: m.author_name.clone(),
        content: m.content.clone(),
        attachments: m.attachments.clone(),
        mentions: m.mentions.clone(),
        // A quiet turn's trigger is not a Discord message: there is nothing to reply to.
        reply: pending.waited && !m.quiet,
    }
}

/// Whom a server's turn posts as: its own persona, when it has one (a server that never chose
/// one keeps the bot user, its replies and pings).
fn own_voice(server: Option<ServerId>, settings: &ServerSettings) -> Option<Voice> {
    let persona = settings.persona.as_ref()?;
    Some(Voice {
        server: server?,
        name: persona.display_name.clone(),
        avatar_url: persona.avatar_url.clone(),
    })
}

/// The persona a turn speaks as: the server's own as it is now (an edit made since the message
/// came reaches it too), else the queued one.
async fn turn_persona(
    deps: &OrchestratorDeps,
    settings: &ServerSettings,
    queued: &crate::domain::scope::PersonaId,
) -> Persona {
    match &settings.persona {
        Some(own) => own.clone(),
        None => persona(deps, queued).await,
    }
}

/// The persona by id, or the shipped one when the store has none.
async fn persona(deps: &OrchestratorDeps, id: &crate::domain::scope::PersonaId) -> Persona {
    match deps.personas.persona(id).await {
        Ok(Some(persona)) => return persona,
        Ok(None) => tracing::warn!(persona = %id, "unknown persona; using the configured one"),
        Err(error) => tracing::warn!(persona = %id, %error, "personas unavailable"),
    }
    let config = &deps.config;
    let shipped = config
        .personas
        .iter()
        .find(|p| p.id == id.0)
        .or_else(|| {
            config
                .personas
                .iter()
                .find(|p| p.id == config.turn.default_persona)
        })
        .or(config.personas.first());
    Persona {
        id: id.clone(),
        display_name: shipped.map_or_else(|| id.0.clone(), |p| p.display_name.clone()),
        system_prompt: shipped.map_or_else(String::new, |p| p.system_prompt.clone()),
        trigger_words: shipped.map_or_else(Vec::new, |p| p.trigger_words.clone()),
        avatar_url: shipped.and_then(|p| p.avatar_url.clone()),
    }
}

/// A turn that panicked: logged once, the localized error notice in its channel, an error turn.
async fn crashed(deps: &OrchestratorDeps, turn: &Turn, panic: String) -> TurnReport {
    tracing::error!(
        channel = %turn.scope.channel, turn = %turn.id, %panic,
        "turn panicked; it ends with the error notice and the channel goes on"
    );
    let notice = locale::text(turn.locale, "turn-crashed");
    let sink = &deps.turn.env.ports.sink;
    if let Err(error) = sink
        .send_text(turn.scope.channel, notice, None, &Pings::none(), None)
        .await
    {
        tracing::warn!(channel = %turn.scope.channel, %error, "could not post the error notice");
    }
    TurnReport {
        end: TurnEnd::Crashed,
        ..released(TurnStatus::Error)
    }
}

fn released(status: TurnStatus) -> TurnReport {
    TurnReport {
        status,
        end: TurnEnd::Released,
        passes: 0,
        tool_calls: 0,
        messages_sent: 0,
        usage: Default::default(),
        reviews: Vec::new(),
    }
}

async fn poll_running(running: &mut Option<RunningTurn>) -> TurnReport {
    match running {
        Some(running) => (&mut running.future).await,
        None => std::future::pending().await,
    }
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
