//! Streaming one pass into the channel (SPEC C4, C5): text is cut into messages as it arrives;
//! before and after every chunk the turn is checked for a stop. A user stop (`/kill`) sends what
//! is complete and ends the turn `stopped_by_user`; a follow-up throws the pending text away and
//! ends the pass `follow_up_interrupt`. Waiting for a chunk races the kill token, and returning
//! drops the stream, which drops the HTTP request.

use futures::StreamExt;

use crate::domain::buttons::{Buttons, EXPIRE_AFTER_MS, ReplyRef, Shown};
use crate::domain::call::ToolCallRequest;
use crate::domain::ports::{
    Delivered, Delivery, Finish, ModelError, ModelEvent, ModelStream, Pings, PortError, Ports,
    TokenUsage, delivery_key, remember_delivery, text_digest,
};
use crate::domain::scope::MessageId;
use crate::domain::turn::{Turn, TurnStatus};
use crate::engine::segment::{DISCORD_LIMIT, Pacing, Segmenter};

/// How a pass ended.
#[derive(Debug, Clone, PartialEq)]
pub enum PassEnd {
    /// Plain text, all of it sent.
    Text,
    /// The model asked for tool calls (text before them is sent).
    ToolCalls(Vec<ToolCallRequest>),
    /// A stop request ended it.
    Stopped(TurnStatus),
    /// The provider failed; `sent` says whether any of this pass's text reached the channel.
    Failed(ModelError),
}

/// The turn's outgoing text: the segmenter, whom the first message replies to, and what was
/// sent.
pub struct ReplyDelivery<'a> {
    turn: &'a Turn,
    /// The sink it posts to, and the store each delivered message is recorded in (SPEC D5).
    ports: &'a Ports,
    /// Messages an earlier run of this turn delivered (it was resumed after a crash): the first
    /// that many are not posted again.
    delivered_before: u32,
    segmenter: Segmenter,
    /// The first message of the turn replies to this (a queued trigger), once.
    reply_to: Option<MessageId>,
    /// Who the turn's messages may notify.
    pings: Pings,
    /// Messages sent this turn.
    pub sent: usize,
    /// Text this pass has sent so far.
    pub sent_this_pass: String,
    /// Token usage reported by the provider, summed over passes.
    pub usage: TokenUsage,
    /// With Response Drafting On, the reply is held here instead of posted (SPEC C8).
    held: Option<String>,
    /// How the reply is cut into messages (SPEC C4).
    pacing: Pacing,
    /// Text waiting for the next paragraph goes out when the stream pauses this long.
    paragraph_wait: Option<std::time::Duration>,
    /// The message being sent went out because the stream paused, after this many of the
    /// cutter's pieces: recorded, so a resumed run pauses there too.
    pause_mark: Option<u32>,
    /// The message that carries *Stop* while the reply streams (SPEC E2): the first one posted.
    stop_on: Option<MessageId>,
    /// The reply's last message posted, and the buttons it carries.
    last: Option<(MessageId, Shown)>,
}

impl<'a> ReplyDelivery<'a> {
    pub fn new(
        turn: &'a Turn,
        ports: &'a Ports,
        reply_to: Option<MessageId>,
        pings: Pings,
        earlier: &Delivered,
        (pacing, paragraph_wait): (Pacing, Option<std::time::Duration>),
    ) -> Self {
        let mut segmenter = Segmenter::paced(DISCORD_LIMIT, pacing);
        // The earlier run's pauses are replayed: its messages are cut as they were, so the
        // first `pieces` of this run are the ones it posted.
        segmenter.replay_pauses(earlier.pauses.clone());
        Self {
            turn,
            ports,
            delivered_before: earlier.pieces,
            segmenter,
            pacing,
            paragraph_wait,
            pause_mark: None,
            reply_to,
            pings,
            sent: 0,
            sent_this_pass: String::new(),
            usage: TokenUsage::default(),
            held: None,
            stop_on: None,
            last: None,
        }
    }

    /// Holds the reply (drafting): text is kept, not posted, until [`Self::release`].
    pub fn hold(&mut self) {
        self.held.get_or_insert_with(String::new);
    }

    /// Takes the held draft (empty when nothing is held), still holding.
    pub fn take_held(&mut self) -> String {
        self.held.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Posts an approved draft, cut into messages, unless `/kill` comes first.
    pub async fn release(&mut self, draft: &str) {
        let mut segmenter = Segmenter::paced(DISCORD_LIMIT, self.pacing);
        let mut messages = segmenter.push(draft);
        messages.extend(segmenter.finish());
        let held = self.held.take();
        self.send_batch(messages, true).await;
        self.held = held;
    }

    /// Starts a new pass (or a retry of one).
    pub fn begin_pass(&mut self) {
        // Nothing waits at a pass's start: every end of a pass sent what waited (a stop for
        // the shutdown leaves it for the resumed turn, which cuts the same way).
        let _ = self.segmenter.discard();
        self.sent_this_pass.clear();
    }

    /// Sends one message of the turn (or holds it, when drafting), unless `/kill` comes first.
    pub async fn send(&mut self, text: String) {
        self.send_from(text, true, false).await;
    }

    /// [`Self::send`], as the persona (under the turn's voice, SPEC A1) or as the bot user;
    /// `closing`: the reply's last message, which carries the finished reply's buttons.
    async fn send_from(&mut self, text: String, persona: bool, closing: bool) {
        if self.turn.stop.is_killed() {
            return;
        }
        if let Some(held) = &mut self.held {
            if !held.is_empty() {
                held.push_str("\n\n");
            }
            held.push_str(&text);
            if !self.sent_this_pass.is_empty() {
                self.sent_this_pass.push_str("\n\n");
            }
            self.sent_this_pass.push_str(&text);
            return;
        }
        let kill = self.turn.stop.kill_token().clone();
        tokio::select! {
            biased;
            () = kill.cancelled() => {}
            () = self.deliver(text, persona, closing) => {}
        }
    }

    /// The buttons a message of the reply is posted with (SPEC E2): the last one those of a
    /// finished reply, the first one *Stop*, the others none; a bot notice never carries any.
    fn buttons_for(&self, persona: bool, closing: bool) -> Option<Buttons> {
        if !self.turn.buttons || !persona {
            return None;
        }
        let shown = if closing {
            Shown::Done
        } else if self.stop_on.is_none() {
            Shown::Stop
        } else {
            return None;
        };
        Some(Buttons {
            shown,
            reply: ReplyRef::of(self.turn),
            locale: self.turn.locale,
        })
    }

    /// The reply ended (SPEC E2): its last message carries *Again* and feedback, and *Stop* is
    /// taken off where it was; one edit for each of these that the posts did not already do.
    /// After [`EXPIRE_AFTER_MS`] the buttons are taken off. A turn stopped for the shutdown is
    /// resumed at the next start, which settles its buttons then.
    pub async fn settle_buttons(&mut self) {
        if !self.turn.buttons || self.turn.stop.is_shutdown() {
            return;
        }
        let sink = &self.ports.sink;
        let channel = self.turn.scope.channel;
        let buttons = |shown| Buttons {
            shown,
            reply: ReplyRef::of(self.turn),
            locale: self.turn.locale,
        };
        let done = match self.last {
            Some((message, Shown::Done)) => Some(message),
            Some((message, _)) => match sink
                .set_buttons(channel, message, &buttons(Shown::Done))
                .await
            {
                Ok(()) => Some(message),
                Err(error) => {
                    tracing::warn!(turn = %self.turn.id, %error, "could not put the finished reply's buttons on");
                    None
                }
            },
            None => None,
        };
        if let Some(stop) = self.stop_on.filter(|stop| Some(*stop) != done)
            && let Err(error) = sink
                .set_buttons(channel, stop, &buttons(Shown::Nothing))
                .await
        {
            tracing::warn!(turn = %self.turn.id, %error, "could not take Stop off");
        }
        if let Some(done) = done {
            let sink = sink.clone();
            let off = buttons(Shown::Nothing);
            tokio::spawn(async move {
                let after = u64::try_from(EXPIRE_AFTER_MS).unwrap_or(u64::MAX);
                tokio::time::sleep(std::time::Duration::from_millis(after)).await;
                if let Err(error) = sink.set_buttons(channel, done, &off).await {
                    tracing::debug!(%error, "could not take expired buttons off");
                }
            });
        }
    }

    /// Posts one message, whatever the stop state (the complete text a user stop keeps), and
    /// records it before the turn goes on. A message an earlier run of the turn delivered is
    /// counted, not posted again; each message's idempotency key is its place in the turn. The
    /// persona's `@name` for someone it may notify is posted as their mention (SPEC C4).
    async fn deliver(&mut self, text: String, persona: bool, closing: bool) {
        let reply_to = self.reply_to.take();
        let channel = self.turn.scope.channel;
        let index = u32::try_from(self.sent).unwrap_or(u32::MAX);
        if index < self.delivered_before {
            tracing::debug!(turn = %self.turn.id, index, "message delivered before the restart; not posted again");
        } else {
            let key = delivery_key(self.turn.id, &format!("piece-{index}"));
            let voice = self.turn.voice.as_ref().filter(|_| persona);
            let posted_text = if persona {
                self.pings.link_names(&text, DISCORD_LIMIT)
            } else {
                text.clone()
            };
            // Recorded first: a crash before the post's record is found out by looking for the
            // post (SPEC D11; `engine::resume`). The digest skips mentions in either form.
            let digest = text_digest(&posted_text);
            let intent = Delivery::Intended {
                index,
                digest,
                paused_after: self.pause_mark.take(),
            };
            remember_delivery(self.ports, self.turn.id, intent).await;
            let buttons = self.buttons_for(persona, closing);
            let sink = &self.ports.sink;
            let posted = match &buttons {
                Some(buttons) => {
                    sink.send_with_buttons(
                        voice,
                        channel,
                        posted_text,
                        reply_to,
                        &self.pings,
                        Some(&key),
                        buttons,
                    )
                    .await
                }
                None => {
                    sink.send_as(
                        voice,
                        channel,
                        posted_text,
                        reply_to,
                        &self.pings,
                        Some(&key),
                    )
                    .await
                }
            };
            match posted {
                Ok(message) => {
                    if persona {
                        let shown = buttons.map_or(Shown::Nothing, |b| b.shown);
                        self.last = Some((message, shown));
                        if shown == Shown::Stop {
                            self.stop_on = Some(message);
                        }
                    }
                    let delivery = Delivery::Piece { index, message };
                    remember_delivery(self.ports, self.turn.id, delivery).await;
                }
                // It may be shown (a webhook takes no nonce to retry with): counted as said,
                // never posted again, and no "no reply" notice follows it.
                Err(error @ PortError::Unconfirmed { .. }) => {
                    tracing::warn!(turn = %self.turn.id, %error, "a reply message may or may not be shown; not posted again");
                }
                Err(error @ PortError::Unavailable { .. }) => {
                    tracing::warn!(turn = %self.turn.id, %error, "a reply message could not be sent");
                    return;
                }
            }
        }
        self.turn.progress.touch();
        if !self.sent_this_pass.is_empty() {
            self.sent_this_pass.push_str("\n\n");
        }
        self.sent_this_pass.push_str(&text);
        self.sent += 1;
        self.turn.mark_delivered();
    }

    async fn send_all(&mut self, messages: Vec<String>) {
        self.send_batch(messages, false).await;
    }

    /// Sends the persona's `messages`; `closing`: they end the reply, and the last carries the
    /// finished reply's buttons.
    async fn send_batch(&mut self, messages: Vec<String>, closing: bool) {
        let count = messages.len();
        for (n, message) in messages.into_iter().enumerate() {
            self.send_from(message, true, closing && n + 1 == count)
                .await;
        }
    }

    /// A notice from the bot (limits, errors), outside the persona's reply: never held.
    pub async fn notice(&mut self, text: String) {
        let held = self.held.take();
        self.send_from(text, false, false).await;
        self.held = held;
    }

    /// Checks for a stop request; `interruptible` says whether a follow-up may interrupt.
    async fn stop_requested(&mut self, interruptible: bool) -> Option<TurnStatus> {
        if self.turn.stop.is_killed() {
            if self.turn.stop.is_shutdown() {
                // The turn resumes at the next start: its messages must be cut there as here.
                return Some(TurnStatus::StoppedByUser);
            }
            let complete = self.segmenter.finish_complete_sentences();
            if self.held.is_some() {
                // A held draft is discarded, never posted (SPEC C8).
                self.held = Some(String::new());
            } else {
                for complete in complete {
                    self.deliver(complete, true, false).await;
                }
            }
            return Some(TurnStatus::StoppedByUser);
        }
        if interruptible && self.turn.stop.follow_up_pending() {
            let waited = self.segmenter.discard();
            self.send_all(waited).await;
            if self.held.is_some() {
                self.held = Some(String::new());
            }
            return Some(TurnStatus::FollowUpInterrupt);
        }
        None
    }

    /// A reply the token limit cut ends with a note saying so, and the thought log hears of it:
    /// otherwise a cut answer reads as if it were whole.
    async fn say_cut(&mut self) {
        let note = crate::locale::text(self.turn.locale, "reply-cut-note");
        let complete = self.segmenter.push(&format!("\n\n{note}"));
        self.send_all(complete).await;
        tracing::info!(turn = %self.turn.id, "the reply reached provider.max_tokens and was cut");
        if let Some(server) = self.turn.scope.thought_log_server() {
            let notice = crate::domain::thought_log::Notice::ReplyCut {
                channel: self.turn.scope.channel,
            };
            self.ports.thought_log.post(server, notice).await;
        }
    }

    /// The message being written, shown where the destination shows drafts (an interaction's
    /// answer, SPEC A5): never a held draft, nor while an earlier run's messages are cut again.
    async fn show_draft(&self) {
        let replaying = u32::try_from(self.sent).unwrap_or(u32::MAX) < self.delivered_before;
        let sink = &self.ports.sink;
        if !sink.shows_drafts() || self.held.is_some() || replaying || self.turn.stop.is_killed() {
            return;
        }
        let draft = self.segmenter.draft();
        if !draft.trim().is_empty() {
            sink.draft(self.turn.scope.channel, &draft).await;
        }
    }

    /// The reply is over: a destination that shows drafts settles what it showed (SPEC A5). A
    /// turn stopped for the shutdown leaves that to the worker, which says why.
    pub async fn over(&self, status: TurnStatus) {
        if self.turn.stop.is_shutdown() {
            return;
        }
        let stopped = status == TurnStatus::StoppedByUser;
        self.ports
            .sink
            .reply_over(self.turn.scope.channel, stopped)
            .await;
    }

    /// How long a pause lets what waits go out; `None` when nothing waits, or while the earlier
    /// run's messages are cut again (its own pauses are replayed instead).
    fn pause_wait(&self) -> Option<std::time::Duration> {
        let replaying = u32::try_from(self.sent).unwrap_or(u32::MAX) < self.delivered_before;
        self.paragraph_wait
            .filter(|_| self.segmenter.holding() && !replaying)
    }

    /// A pause a person would notice: what waits goes out (SPEC C4), recorded as sent by a
    /// pause after this many pieces, so a resumed run pauses there too.
    async fn paused(&mut self) {
        let waited = self.segmenter.pause();
        self.pause_mark = Some(self.segmenter.pieces_taken());
        self.send_all(waited).await;
        self.pause_mark = None;
    }

    /// Streams one pass. `parts` collects the pass's text (the pre-tool text of a tool call).
    pub async fn stream_pass(
        &mut self,
        mut stream: ModelStream,
        parts: &mut Vec<String>,
        interruptible: bool,
    ) -> PassEnd {
        loop {
            if let Some(status) = self.stop_requested(interruptible).await {
                return PassEnd::Stopped(status);
            }
            let event = {
                // The provider has its own first-token and idle timeouts (SPEC C10).
                let _guarded = self.turn.progress.guard();
                let pause = self.pause_wait();
                tokio::select! {
                    biased;
                    () = self.turn.stop.kill_token().cancelled() => continue,
                    event = stream.next() => event,
                    () = sleep_for(pause) => {
                        self.paused().await;
                        continue;
                    }
                }
            };
            match event {
                Some(Ok(ModelEvent::Text(text))) => {
                    let complete = self.segmenter.push(&text);
                    parts.push(text);
                    self.send_all(complete).await;
                    self.show_draft().await;
                }
                Some(Ok(ModelEvent::End {
                    tool_calls,
                    finish,
                    usage,
                })) => {
                    if let Some(usage) = usage {
                        self.usage.prompt += usage.prompt;
                        self.usage.completion += usage.completion;
                    }
                    if let Some(status) = self.stop_requested(interruptible).await {
                        return PassEnd::Stopped(status);
                    }
                    if finish == Finish::Length && tool_calls.is_empty() {
                        self.say_cut().await;
                    }
                    let rest = self.segmenter.finish();
                    // A pass without tool calls ends the reply: its last message is the last.
                    self.send_batch(rest, tool_calls.is_empty()).await;
                    if finish == Finish::Missing && tool_calls.is_empty() {
                        tracing::warn!(turn = %self.turn.id, "stream ended without a finish reason");
                    }
                    return if tool_calls.is_empty() {
                        PassEnd::Text
                    } else {
                        PassEnd::ToolCalls(tool_calls)
                    };
                }
                Some(Err(error)) => {
                    let waited = self.segmenter.discard();
                    self.send_all(waited).await;
                    return PassEnd::Failed(error);
                }
                None => {
                    // The provider always ends with `End`; a bare end is a cut stream.
                    let waited = self.segmenter.discard();
                    self.send_all(waited).await;
                    return PassEnd::Failed(ModelError::new(
                        crate::domain::provider_failure::FailureClass::Network,
                        None,
                        "stream ended without an end event",
                    ));
                }
            }
            if let Some(status) = self.stop_requested(interruptible).await {
                return PassEnd::Stopped(status);
            }
        }
    }
}

/// Sleeps for `wait`, or for ever.
async fn sleep_for(wait: Option<std::time::Duration>) {
    match wait {
        Some(wait) => tokio::time::sleep(wait).await,
        None => std::future::pending().await,
    }
}
