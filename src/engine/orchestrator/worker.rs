//! A channel's worker (SPEC C3): it takes the channel's commands one at a time, runs one turn at
//! a time, carries out what its [`WaitingLine`] decides, and owns the turn's surroundings: the
//! typing pulses, `/kill` (C6), edits and deletes of its messages (C7), the stale-turn guard
//! (C10) and the wind-down when the process stops. Starting a turn is in [`super::start`].

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{broadcast, mpsc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::waiting_line::{Decision, Running, TextChange, WaitingLine};
use super::{
    AgainReport, Command, KillReach, KillReport, OrchestratorDeps, Pending, Slots, StopPlan,
    TurnFinished, lock,
};
use crate::config::KillPermission;
use crate::domain::ports::{
    ChatSink, Delivery, Pings, QueueStore, close_unanswered, remember_delivery,
};
use crate::domain::scope::{ChannelId, MessageId, UserId};
use crate::domain::turn::{ChannelActivity, StoppedTool, ToolEnding, Turn, TurnId, TurnStatus};
use crate::engine::passes::{TurnEnd, TurnReport};
use crate::locale;

pub(super) type TurnFuture = Pin<Box<dyn Future<Output = TurnReport> + Send>>;

pub(super) struct RunningTurn {
    pub(super) turn: Arc<Turn>,
    pub(super) started: Instant,
    pub(super) pending: Pending,
    pub(super) future: TurnFuture,
    pub(super) follow_ups: u32,
    /// The next typing pulse: the first after `turn.typing_delay_ms`, then every interval.
    pub(super) next_typing: Instant,
    /// The first pulse has come due (it is skipped when the reply is already up).
    pub(super) typing_started: bool,
    /// Tells the turn's status reactions how it ended, where the server has them (SPEC E1).
    pub(super) status_reactions: Option<super::status_reactions::TurnEnded>,
}

pub(super) struct Worker {
    pub(super) channel: ChannelId,
    /// This worker's number in `slots`.
    pub(super) id: u64,
    pub(super) rx: mpsc::UnboundedReceiver<Command>,
    pub(super) deps: Arc<OrchestratorDeps>,
    pub(super) slots: Arc<Slots>,
    /// The orchestrator's tracker: the worker's own small tasks join it too.
    pub(super) tasks: TaskTracker,
    /// The channel's token, a child of the process's: cancelled, the worker winds down.
    pub(super) token: CancellationToken,
    pub(super) activity: Arc<ChannelActivity>,
    pub(super) queue: WaitingLine,
    pub(super) running: Option<RunningTurn>,
    pub(super) finished: broadcast::Sender<TurnFinished>,
    /// The stop's deadlines, once the process stops.
    pub(super) stopping: Arc<Mutex<Option<StopPlan>>>,
    /// While the server's settings cannot be read, the next turn waits until then.
    pub(super) settings_retry: Option<Instant>,
}

/// The longest wait between two tries of a failed queue removal.
const REMOVE_RETRY_MAX: Duration = Duration::from_secs(30);
/// Longest a typing pulse may hold the channel's loop.
const TYPING_WAIT: Duration = Duration::from_millis(500);
/// How often the stale-turn guard looks.
const STALE_CHECK: Duration = Duration::from_secs(1);

impl Worker {
    pub(super) async fn run(mut self) {
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
                && let Some(next) = self.queue.next()
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
                        // An `/ask` shows its own "thinking" (SPEC A5): no typing in a
                        // channel the bot may not even be in.
                        let shown = running.pending.route.is_some()
                            || (!running.typing_started && running.turn.delivered());
                        running.typing_started = true;
                        if !shown {
                            // Best effort, and never long: a pulse held by a rate limit is
                            // dropped rather than keep this loop from its commands (/kill).
                            let typing = self.deps.turn.env.ports.sink.typing(self.channel);
                            let _ = tokio::time::timeout(TYPING_WAIT, typing).await;
                        }
                    }
                }
                _ = stale_check.tick(), if self.running.is_some() => {
                    self.stop_past_deadline();
                    self.release_if_stale();
                }
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
                let waiting = self.queue.involves(user);
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
            Command::Stop {
                turn,
                presser,
                can_manage,
                reply,
            } => {
                let report = self.stop_turn(turn, presser, can_manage).await;
                let _ = reply.send(report);
            }
            Command::Again { pending, reply } => {
                let busy = self.running.is_some() || !self.queue.is_empty();
                let report = if busy {
                    AgainReport::Busy
                } else {
                    self.take_message(*pending).await;
                    AgainReport::Started
                };
                let _ = reply.send(report);
            }
        }
    }

    /// *Stop* on the reply of `turn` (SPEC E2): that turn, while it runs, for its requester or
    /// whoever `/kill` lets stop everyone's; it ends as a `/kill` ends it.
    async fn stop_turn(&mut self, turn: TurnId, presser: UserId, can_manage: bool) -> KillReport {
        let Some(running) = self.running.as_ref().filter(|r| r.turn.id == turn) else {
            return KillReport::NothingRunning;
        };
        let allowed = match self.kill_reach(can_manage) {
            Some(KillReach::Channel) => true,
            Some(KillReach::Own) => running.turn.scope.user == presser,
            None => false,
        };
        if !allowed {
            return KillReport::Denied;
        }
        let Some((running, report)) = self.stop_running().await else {
            return KillReport::NothingRunning;
        };
        let tool = running.turn.stopped_tool();
        self.mark_finished(&running.pending).await;
        self.forget(&running.pending).await;
        self.announce(&running, report);
        KillReport::Stopped {
            reach: KillReach::Own,
            turn_stopped: true,
            tool,
            dropped: 0,
        }
    }

    /// SPEC C7: an edit of a waiting message replaces its text (stored too); an edit of the
    /// running turn's trigger is a follow-up with the new text.
    async fn edited(&mut self, message: MessageId, content: String) {
        if let Some(decisions) = self.queue.edit(message, &content) {
            self.carry_out(decisions).await;
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
            again: running.pending.again,
            route: running.pending.route.clone(),
        })
        .await;
    }

    /// SPEC C7: a deleted waiting message is dropped; a running turn whose trigger was deleted
    /// stops when nothing of its answer went out yet (what went out stays, and it goes on).
    async fn deleted(&mut self, message: MessageId) {
        if let Some(dropped) = self.queue.delete(message) {
            self.forget(&dropped).await;
            return;
        }
        if let Some(running) = &self.running
            && running.pending.message.message == message
            && !running.turn.delivered()
        {
            tracing::info!(channel = %self.channel, turn = %running.turn.id, "the trigger was deleted before any answer went out; stopping the turn");
            running.turn.stop.kill();
        }
    }

    /// A new message: the waiting line decides where it goes (a follow-up of the running
    /// turn's requester, a join, the line's end), and what that takes is done here.
    async fn take_message(&mut self, pending: Pending) {
        // A replacement worker may be handed a stored message twice: once replayed, once sent.
        if pending.store_id.is_some() && self.holds(pending.store_id) {
            return;
        }
        let running = self.running.as_mut().map(|r| Running {
            requester: r.turn.scope.user,
            follow_ups: &mut r.follow_ups,
        });
        let decisions = self.queue.arrive(pending, running);
        self.carry_out(decisions).await;
    }

    /// Carries out the waiting line's decisions, in order.
    async fn carry_out(&mut self, decisions: Vec<Decision>) {
        for decision in decisions {
            match decision {
                Decision::StoreText { id, content, why } => {
                    if let Err(error) = self.deps.queue.update_content(id, &content).await {
                        match why {
                            TextChange::Edited => {
                                tracing::warn!(channel = %self.channel, %error, "could not store an edited message's text; it is answered as edited unless the process restarts")
                            }
                            TextChange::Joined => {
                                tracing::warn!(channel = %self.channel, %error, "could not store a joined message's text")
                            }
                        }
                    }
                }
                Decision::MarkFollowUp { id } => {
                    if let Err(error) = self.deps.queue.mark_follow_up(id).await {
                        tracing::warn!(channel = %self.channel, %error, "follow-up not marked in the store");
                    }
                }
                Decision::FollowUp => self.note_follow_up(),
                Decision::Forget(pending) => self.forget(&pending).await,
                Decision::Dropped(pending) => self.drop_for_bound(pending).await,
            }
        }
    }

    /// The running turn has a follow-up: outside a tool chain (or with drafting On) it is
    /// interrupted; inside, the follow-up waits at the front so the tool progress is kept.
    fn note_follow_up(&self) {
        if let Some(running) = &self.running {
            let turn = &running.turn;
            let in_chain = turn.in_tool_chain();
            if turn.drafting || !in_chain {
                turn.stop.note_follow_up();
            }
        }
    }

    /// Whether the stored message `id` is running or waiting here.
    fn holds(&self, id: Option<i64>) -> bool {
        self.running
            .as_ref()
            .is_some_and(|r| r.pending.store_id == id)
            || self.queue.holds(id)
    }

    /// A message the line's bound dropped (SPEC C3): closed unanswered, with a notice on it.
    async fn drop_for_bound(&mut self, dropped: Pending) {
        tracing::warn!(channel = %self.channel, message = %dropped.message.message, "queue full: dropping the oldest waiting message");
        self.close_unanswered(&dropped).await;
        let notice = locale::text(dropped.message.locale, "turn-queue-dropped");
        // An `/ask` hears of it in its own answer (SPEC A5).
        let (sink, reply_to) = match &dropped.route {
            Some(route) => (&route.sink, None),
            None => (
                &self.deps.turn.env.ports.sink,
                Some(dropped.message.message),
            ),
        };
        let posted = sink
            .send_text(self.channel, notice, reply_to, &Pings::none(), None)
            .await;
        if let Err(error) = posted {
            tracing::warn!(channel = %self.channel, %error, "could not post the queue-full notice");
        }
        self.forget(&dropped).await;
    }

    pub(super) async fn finish(&mut self, report: TurnReport) {
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
        if let Some(again) = running.pending.again
            && report.messages_sent > 0
        {
            self.tasks.spawn(replace_answer(
                self.deps.clone(),
                self.channel,
                again.replaces,
            ));
        }
        self.announce(&running, report);
    }

    pub(super) fn announce(&self, running: &RunningTurn, report: TurnReport) {
        if let Some(ended) = &running.status_reactions {
            ended.send_replace(Some(report.status));
        }
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
        let dropped = self.queue.take_for_kill(reach, requester);
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
            .and_then(|(running, _)| running.turn.stopped_tool());
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
                    let stopped = StoppedTool {
                        name: name.to_string(),
                        ending: ToolEnding::MayStillFinish,
                    };
                    running.turn.note_stopped_tool(stopped, false);
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
        // An `/ask` that never ran, or ran past its grace, still ends its answer (SPEC A5).
        if let Some(route) = &pending.route {
            route.sink.reply_over(self.channel, true).await;
        }
        let again = pending.again.map_or(0, |a| a.count);
        if pending.edit > 0 || again > 0 {
            let message = pending.message.message;
            let turn = TurnId::for_answer(self.channel, message, pending.edit, again);
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

    /// SPEC A5: an `/ask` whose answer can no longer be written after its deadline is stopped
    /// then; its sink says the answer was cut while it still can.
    fn stop_past_deadline(&self) {
        let Some(running) = &self.running else {
            return;
        };
        let deadline = running.pending.route.as_ref().and_then(|r| r.deadline);
        if deadline.is_some_and(|at| Instant::now() >= at) && !running.turn.stop.is_killed() {
            tracing::info!(channel = %self.channel, turn = %running.turn.id, "an /ask reached the end of its interaction's time; stopped");
            running.turn.stop.kill();
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
    pub(super) fn close_unanswered(
        &self,
        pending: &Pending,
    ) -> impl Future<Output = ()> + Send + 'static {
        let ports = self.deps.turn.env.ports.clone();
        let (channel, message) = (pending.message.channel, pending.message.message);
        async move {
            let now = ports.clock.now_ms();
            close_unanswered(ports.outcomes.as_ref(), channel, message, now).await;
        }
    }

    /// Removes an answered or dropped message from the store (see [`forget`]).
    pub(super) fn forget(&self, pending: &Pending) -> impl Future<Output = ()> + Send + 'static {
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
        // A waiting `/ask` is not stored: its asker is told to ask again (SPEC A5).
        for (route, locale) in self.queue.routes() {
            tell_stopping(&route.sink, self.channel, locale).await;
        }
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
        // An `/ask` does not resume: its asker is told to ask again (SPEC A5).
        if let Some(route) = &running.pending.route {
            tell_stopping(&route.sink, channel, running.turn.locale).await;
        }
    }
}

/// Tells an `/ask` the process stops before answering it.
async fn tell_stopping(sink: &Arc<dyn ChatSink>, channel: ChannelId, locale: locale::Locale) {
    let text = locale::text(locale, "ask-stopping");
    if let Err(error) = sink
        .send_text(channel, text, None, &Pings::none(), None)
        .await
    {
        tracing::debug!(%channel, %error, "an /ask could not be told of the stop");
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

/// The report of a turn that was released (dropped, or stopped past its grace), not ended by
/// itself.
pub(super) fn released(status: TurnStatus) -> TurnReport {
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

/// The answer of `old` is deleted, message by message, now that *Again* put a new one up
/// (SPEC E2). A message that cannot be deleted stays (logged): the new answer is up either way.
async fn replace_answer(deps: Arc<OrchestratorDeps>, channel: ChannelId, old: TurnId) {
    let ports = &deps.turn.env.ports;
    let records = match ports.outcomes.deliveries(old).await {
        Ok(records) => records,
        Err(error) => {
            tracing::warn!(%channel, turn = %old, %error, "the replaced answer's messages are unknown; they stay");
            return;
        }
    };
    for record in records {
        if let Delivery::Piece { message, .. } = record
            && let Err(error) = ports.sink.delete_message(channel, message).await
        {
            tracing::warn!(%channel, %message, %error, "a replaced answer's message could not be deleted");
        }
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
