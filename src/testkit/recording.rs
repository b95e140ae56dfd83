//! The ports a turn reports through (chat sink, thought log, usage stats, tool events), as
//! recorders a test reads back or as [`Discard`] for benchmarks; and a clock moved by hand.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use async_trait::async_trait;

use super::{lock, unexpected};
use crate::domain::ports::{
    ChatSink, Clock, Emoji, ExpressionSend, Pings, PortError, Sticker, ThoughtLog, ToolEvent,
    ToolEvents, UsageRecord, UsageStats,
};
use crate::domain::scope::{ChannelId, MessageId, ServerId, UserId};
use crate::domain::thought_log::Notice;

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
        _: &Pings,
        _: Option<&str>,
    ) -> Result<MessageId, PortError> {
        Ok(MessageId(1))
    }
    async fn typing(&self, _: ChannelId) {}
    async fn send_sticker(&self, _: ChannelId, _: &Sticker, _: Option<&str>) -> ExpressionSend {
        ExpressionSend::Confirmed
    }
    async fn react(&self, _: ChannelId, _: MessageId, _: &Emoji) -> ExpressionSend {
        ExpressionSend::Confirmed
    }
    async fn unreact(&self, _: ChannelId, _: MessageId, _: &Emoji) -> Result<(), PortError> {
        Ok(())
    }
    async fn send_progress(&self, _: ChannelId, _: String) {}
    async fn direct_message(&self, _: UserId, _: String) -> Result<MessageId, PortError> {
        Ok(MessageId(1))
    }
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
    /// Who the message may notify.
    pub pings: Vec<UserId>,
    /// Its idempotency key, if it had one.
    pub key: Option<String>,
}

/// A chat sink that records what was posted. Each sticker send needs a scripted answer.
#[derive(Default)]
pub struct RecordingSink {
    script: Mutex<VecDeque<ExpressionSend>>,
    stickers: Mutex<Vec<(ChannelId, Sticker)>>,
    reactions: Mutex<Vec<(ChannelId, MessageId, Emoji)>>,
    progress: Mutex<Vec<(ChannelId, String)>>,
    texts: Mutex<Vec<SentText>>,
    typing: Mutex<Vec<ChannelId>>,
    dms: Mutex<Vec<(UserId, String)>>,
    /// Sends wait this long first (a slow Discord), when set.
    send_delay: Mutex<Option<std::time::Duration>>,
    /// Sends never complete (a hung Discord), when set.
    hang: AtomicBool,
    hang_typing: AtomicBool,
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

    /// Makes every typing pulse hang (one held by a rate limit) until `hang_typing(false)`.
    pub fn hang_typing(&self, hang: bool) {
        self.hang_typing.store(hang, Ordering::Relaxed);
    }

    /// Makes every text send hang (a stuck Discord) until `hang_sends(false)`.
    pub fn hang_sends(&self, hang: bool) {
        self.hang.store(hang, Ordering::Relaxed);
    }

    /// Queues the answer for the next sticker or reaction send.
    pub fn script_expression(&self, answer: ExpressionSend) {
        lock(&self.script).push_back(answer);
    }

    /// Every sticker send attempted, in order.
    pub fn stickers(&self) -> Vec<(ChannelId, Sticker)> {
        lock(&self.stickers).clone()
    }

    /// Every reaction attempted, in order.
    pub fn reactions(&self) -> Vec<(ChannelId, MessageId, Emoji)> {
        lock(&self.reactions).clone()
    }

    pub fn progress(&self) -> Vec<(ChannelId, String)> {
        lock(&self.progress).clone()
    }

    /// Every direct message sent, in order.
    pub fn dms(&self) -> Vec<(UserId, String)> {
        lock(&self.dms).clone()
    }
}

#[async_trait]
impl ChatSink for RecordingSink {
    async fn send_text(
        &self,
        channel: ChannelId,
        text: String,
        reply_to: Option<MessageId>,
        pings: &Pings,
        key: Option<&str>,
    ) -> Result<MessageId, PortError> {
        while self.hang.load(Ordering::Relaxed) {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        let delay = *lock(&self.send_delay);
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
        let mut texts = lock(&self.texts);
        texts.push(SentText {
            channel,
            text,
            reply_to,
            pings: pings.users.clone(),
            key: key.map(str::to_owned),
        });
        Ok(MessageId(u64::try_from(texts.len()).unwrap_or(u64::MAX)))
    }

    async fn typing(&self, channel: ChannelId) {
        if self.panic_on_typing.swap(false, Ordering::SeqCst) {
            panic!("typing pulse panicked (test)");
        }
        lock(&self.typing).push(channel);
        while self.hang_typing.load(Ordering::Relaxed) {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    async fn send_sticker(
        &self,
        channel: ChannelId,
        sticker: &Sticker,
        _: Option<&str>,
    ) -> ExpressionSend {
        let answer = lock(&self.script)
            .pop_front()
            .unwrap_or_else(|| unexpected("ChatSink::send_sticker (no scripted answer)"));
        lock(&self.stickers).push((channel, sticker.clone()));
        answer
    }

    async fn react(&self, channel: ChannelId, message: MessageId, emoji: &Emoji) -> ExpressionSend {
        let answer = lock(&self.script)
            .pop_front()
            .unwrap_or_else(|| unexpected("ChatSink::react (no scripted answer)"));
        lock(&self.reactions).push((channel, message, emoji.clone()));
        answer
    }

    async fn unreact(
        &self,
        channel: ChannelId,
        message: MessageId,
        emoji: &Emoji,
    ) -> Result<(), PortError> {
        lock(&self.reactions).retain(|r| *r != (channel, message, emoji.clone()));
        Ok(())
    }

    async fn send_progress(&self, channel: ChannelId, text: String) {
        lock(&self.progress).push((channel, text));
    }

    async fn direct_message(&self, user: UserId, text: String) -> Result<MessageId, PortError> {
        let mut dms = lock(&self.dms);
        dms.push((user, text));
        Ok(MessageId(u64::try_from(dms.len()).unwrap_or(u64::MAX)))
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
