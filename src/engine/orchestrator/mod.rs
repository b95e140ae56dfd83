//! The stream orchestrator: one worker task per channel, fed by an mpsc queue (the actor
//! pattern). Turns in a channel run one at a time; channels run in parallel (SPEC C3).
//!
//! This file is the handle the adapter uses ([`Orchestrator`]: submit, kill, edits, stop) and
//! the reports it gets back. Each channel's worker (`worker.rs`) owns its waiting messages (a
//! bounded line, mirrored in the store so a restart loses nothing, SPEC D4), the running turn,
//! `/kill` (C6), typing, and the stale-turn guard (C10); the line itself (`waiting_line.rs`)
//! decides follow-ups, joins, edits and the bound (C3, C7) without doing IO, and the worker
//! carries its decisions out; `start.rs` starts a turn. The process's token is the parent of each
//! channel's; a turn has its own, which `/kill`, the stale-turn guard and a stopping worker
//! cancel (a stop first lets the turn finish, within the shutdown's grace). It imports no Discord type: the
//! adapter hands it [`NewQueuedMessage`]s and renders its [`KillReport`]s.
//!
//! A panic silences nothing: a panicking turn ends as an error turn with the localized error
//! notice and the channel goes on; a worker that panics is replaced by the next message sent
//! to its channel, and the messages it held are taken again from the store. A worker with
//! nothing running and nothing waiting for `turn.worker_idle_secs` stops, so idle channels cost
//! no memory; it retires under the same lock senders use, so no message slips in as it goes.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::Config;
use crate::domain::ports::{
    ChatSink, NewQueuedMessage, PortError, Pushed, QueueStore, SettingsStore,
};
use crate::domain::scope::{ChannelId, MessageId, Scope, UserId};
use crate::domain::turn::{ChannelActivity, StoppedTool, TurnId};
use crate::engine::passes::{TurnDeps, TurnReport};
use crate::stage::deliberate::KeywordPacks;

mod start;
pub mod status_reactions;
mod waiting_line;
mod worker;

use waiting_line::WaitingLine;
use worker::Worker;

/// Everything the orchestrator's workers use.
#[derive(Clone)]
pub struct OrchestratorDeps {
    pub turn: TurnDeps,
    pub queue: Arc<dyn QueueStore>,
    pub settings: Arc<dyn SettingsStore>,
    /// Which persona a turn speaks as (SPEC A1).
    pub personas: Arc<crate::domain::personas::Personas>,
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
    /// *Stop* on a reply (SPEC E2): stops `turn` if it is the one running.
    Stop {
        turn: TurnId,
        presser: UserId,
        can_manage: bool,
        reply: oneshot::Sender<KillReport>,
    },
    /// *Again* on a reply (SPEC E2).
    Again {
        pending: Box<Pending>,
        reply: oneshot::Sender<AgainReport>,
    },
}

/// A message waiting in a worker's queue.
#[derive(Debug, Clone, PartialEq)]
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
    /// A new answer *Again* asked for (SPEC E2), replacing an earlier one.
    again: Option<Again>,
    /// Where it is answered when not in the channel's messages (`/ask`, SPEC A5).
    route: Option<Route>,
}

/// Where a turn answers when not in its channel's messages: an interaction's answer (`/ask`,
/// SPEC A5). Such a turn is not stored in the queue (its answer's token is a credential that
/// lives 15 minutes; a stopping process tells its asker to ask again), never joins another
/// message and is no follow-up of one.
#[derive(Clone)]
pub struct Route {
    /// Where its reply, notices and approval cards go.
    pub sink: Arc<dyn ChatSink>,
    /// The channel's history is not read (the bot is not a member there).
    pub no_history: bool,
    /// The turn is stopped by then: after it, its answer can no longer be written.
    pub deadline: Option<Instant>,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Route")
            .field("no_history", &self.no_history)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Route {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.sink, &other.sink)
            && self.no_history == other.no_history
            && self.deadline == other.deadline
    }
}

/// A new answer to a question already answered (SPEC E2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Again {
    /// How many new answers, this one included (1 to [`crate::domain::buttons::AGAIN_MAX`]).
    pub count: u8,
    /// The turn whose answer this one replaces: its messages are deleted once this one is up.
    pub replaces: TurnId,
}

/// What a press of *Again* did (SPEC E2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgainReport {
    /// The new answer's turn started.
    Started,
    /// The channel is busy (a turn runs or messages wait): nothing was started.
    Busy,
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
                again: None,
                route: None,
            })),
        );
    }

    /// `/ask` (SPEC A5): `message` answered through `route` (the interaction's answer), in its
    /// channel's line like any message but not stored (see [`Route`]). Whether its channel's
    /// worker took it (not when the process is stopping).
    pub fn ask(&self, message: NewQueuedMessage, route: Route) -> bool {
        let channel = message.channel;
        let pending = Pending {
            store_id: None,
            message,
            waited: false,
            edit: 0,
            folded: 0,
            again: None,
            route: Some(route),
        };
        self.send(channel, Command::Message(Box::new(pending)))
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
                    again: None,
                    route: None,
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

    /// *Stop* pressed by `presser` on the reply of `turn` in `channel` (SPEC E2): stops that
    /// turn, as `/kill` would stop it for them (the requester's own, or anyone's for a member
    /// who can manage messages), and only while it runs; nothing waiting is dropped.
    pub async fn stop_turn(
        &self,
        channel: ChannelId,
        turn: TurnId,
        presser: UserId,
        can_manage: bool,
    ) -> KillReport {
        let (reply, answer) = oneshot::channel();
        let sent = lock(&self.inner.channels)
            .get(&channel)
            .is_some_and(|slot| {
                let stop = Command::Stop {
                    turn,
                    presser,
                    can_manage,
                    reply,
                };
                slot.tx.send(stop).is_ok()
            });
        if !sent {
            return KillReport::NothingRunning;
        }
        answer.await.unwrap_or(KillReport::NothingRunning)
    }

    /// *Again* (SPEC E2): `message` (the question, as queued afresh) answered anew, the
    /// `again.count`-th time, replacing `again.replaces`' answer. Started only in a channel
    /// where nothing runs or waits, so the new answer is the channel's next message; it is not
    /// stored in the queue (a press lost to a restart is pressed again).
    pub async fn again(&self, message: NewQueuedMessage, again: Again) -> AgainReport {
        let (reply, answer) = oneshot::channel();
        let pending = Box::new(Pending {
            store_id: None,
            message,
            waited: true,
            edit: 0,
            folded: 0,
            again: Some(again),
            route: None,
        });
        let channel = pending.message.channel;
        if !self.send(channel, Command::Again { pending, reply }) {
            return AgainReport::Busy;
        }
        answer.await.unwrap_or(AgainReport::Busy)
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
            queue: WaitingLine::new(
                self.inner.deps.config.turn.queue_limit,
                self.inner.deps.config.turn.max_follow_ups,
            ),
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

/// Keeps this process's hold on its queued messages (renewed every third of the lease) and
/// takes over those of its shards that a stopped process left (SPEC D6), until `stop`.
pub async fn hold_the_queue(
    orchestrator: Orchestrator,
    queue: Arc<dyn QueueStore>,
    lease: Duration,
    stop: CancellationToken,
) {
    let mut every = tokio::time::interval(lease / 3);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = every.tick() => {}
        }
        if let Err(error) = queue.renew_claims().await {
            tracing::warn!(%error, "could not renew the hold on queued messages");
        }
        match orchestrator.take_over().await {
            Ok(0) => {}
            Ok(taken) => tracing::info!(taken, "took over queued messages no live process held"),
            Err(error) => tracing::warn!(%error, "could not look for queued messages to take over"),
        }
    }
}
