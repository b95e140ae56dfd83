//! Catch-up after a gap (SPEC D9): the gateway replays missed messages only when a session
//! resumes, so after a start, or a new session that could not resume, the bot reads what it
//! missed itself. This is the arithmetic of it, free of Discord's types: which channels are
//! worth reading ([`plan`]), from which message on, and which of the messages found it answers
//! ([`pick`]); and the last message seen in each channel ([`SeenMarks`]), which is where the next
//! catch-up starts.
//!
//! Every message id is a snowflake, whose top bits are its creation time: the window ("the last
//! ten minutes") is an id, and a message's age needs no clock of its own.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

pub use super::answered::{Found, pick};
use super::scope::{ChannelId, MessageId, ServerId};

/// Discord's epoch (2015-01-01) in unix milliseconds, the base of a snowflake's time.
pub const DISCORD_EPOCH_MS: i64 = 1_420_070_400_000;

/// When the snowflake `id` was made, in unix milliseconds.
pub fn snowflake_ms(id: u64) -> i64 {
    i64::try_from(id >> 22)
        .unwrap_or(i64::MAX)
        .saturating_add(DISCORD_EPOCH_MS)
}

/// The smallest snowflake made at `at_ms` (0 before Discord's epoch): every message from then
/// on has an id at or above it.
pub fn snowflake_at(at_ms: i64) -> u64 {
    let since = u64::try_from(at_ms.saturating_sub(DISCORD_EPOCH_MS)).unwrap_or(0);
    since.checked_mul(1 << 22).unwrap_or(u64::MAX << 22)
}

/// How far back a catch-up reads, and how much (from `catch_up.*` settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Messages older than this are left alone; 0 turns catch-up off.
    pub window_ms: i64,
    /// Messages read in one channel (Discord gives at most 100 a request).
    pub messages: usize,
    /// Channels read in one catch-up.
    pub channels: usize,
}

/// A channel the bot could read: its newest message as Discord knows it (a guild channel's
/// `last_message_id`), `None` when unknown (a DM).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    pub channel: ChannelId,
    pub last_message: Option<MessageId>,
}

/// One channel to read: the messages after `after` may not have been seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Read {
    pub channel: ChannelId,
    pub after: MessageId,
}

/// The channels worth reading at `now_ms`, most recently active first, at most
/// `limits.channels`: those with a message inside the window newer than the last one the bot
/// saw there (`seen`). Each is read after the later of that message and the window's start.
pub fn plan(
    candidates: &[Candidate],
    seen: impl Fn(ChannelId) -> Option<MessageId>,
    now_ms: i64,
    limits: Limits,
) -> Vec<Read> {
    if limits.window_ms <= 0 || limits.channels == 0 {
        return Vec::new();
    }
    let window_start = snowflake_at(now_ms.saturating_sub(limits.window_ms));
    let mut channels = std::collections::HashSet::new();
    let mut reads: Vec<(u64, Read)> = candidates
        .iter()
        .filter(|candidate| channels.insert(candidate.channel))
        .filter_map(|candidate| {
            let seen = seen(candidate.channel).map_or(0, |m| m.0);
            let after = seen.max(window_start);
            // Without Discord's word on the newest message, the last one seen stands in for it.
            let newest = candidate.last_message.map_or(seen, |m| m.0);
            let worth = match candidate.last_message {
                Some(last) => last.0 > after,
                None => seen >= window_start,
            };
            worth.then_some((
                newest,
                Read {
                    channel: candidate.channel,
                    after: MessageId(after),
                },
            ))
        })
        .collect();
    reads.sort_by_key(|(newest, _)| std::cmp::Reverse(*newest));
    reads
        .into_iter()
        .take(limits.channels)
        .map(|(_, read)| read)
        .collect()
}

/// The last message seen in a channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    pub channel: ChannelId,
    /// `None` for a DM.
    pub server: Option<ServerId>,
    pub message: MessageId,
}

/// The last message the bot saw in each channel, as the gateway delivered them: where the next
/// catch-up starts. Marks changed since the last [`Self::take_changed`] are the ones to store.
///
/// Bounded: at most `channels` marks; past it the oldest (by message) go, so a channel silent
/// for long is read from the window's start instead.
#[derive(Debug)]
pub struct SeenMarks {
    inner: Mutex<Marks>,
    channels: usize,
}

#[derive(Debug, Default)]
struct Marks {
    seen: HashMap<ChannelId, Seen>,
    changed: HashMap<ChannelId, Seen>,
    /// The marks as the current gateway session began: a session's catch-up reads after these,
    /// since a message that came live in the new session says nothing of the gap before it.
    at_start: HashMap<ChannelId, MessageId>,
    /// Servers caught up in the current session: another catch-up of one (it came back from an
    /// outage) reads only after what this process saw there since.
    caught_up: std::collections::HashSet<ServerId>,
}

impl SeenMarks {
    pub fn new(channels: usize) -> Self {
        Self {
            inner: Mutex::new(Marks::default()),
            channels: channels.max(1),
        }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Marks> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A message seen in a channel (a mark only moves forward).
    pub fn saw(&self, seen: Seen) {
        let mut marks = self.inner();
        if marks
            .seen
            .get(&seen.channel)
            .is_some_and(|old| old.message >= seen.message)
        {
            return;
        }
        if !marks.seen.contains_key(&seen.channel) && marks.seen.len() >= self.channels {
            let oldest = marks
                .seen
                .values()
                .min_by_key(|s| s.message)
                .map(|s| s.channel);
            if let Some(oldest) = oldest {
                marks.seen.remove(&oldest);
                marks.changed.remove(&oldest);
            }
        }
        marks.seen.insert(seen.channel, seen);
        marks.changed.insert(seen.channel, seen);
    }

    /// Marks stored earlier (at start): kept unless a newer one is already held; not changed.
    pub fn load(&self, stored: impl IntoIterator<Item = Seen>) {
        let mut marks = self.inner();
        for seen in stored {
            let newer = marks
                .seen
                .get(&seen.channel)
                .is_some_and(|old| old.message >= seen.message);
            if !newer
                && (marks.seen.len() < self.channels || marks.seen.contains_key(&seen.channel))
            {
                marks.seen.insert(seen.channel, seen);
            }
        }
    }

    /// The last message seen in `channel`.
    pub fn last(&self, channel: ChannelId) -> Option<MessageId> {
        self.inner().seen.get(&channel).map(|s| s.message)
    }

    /// A new gateway session begins (READY): the marks now are where its catch-up starts.
    pub fn begin_session(&self) {
        let mut marks = self.inner();
        marks.at_start = marks
            .seen
            .values()
            .map(|s| (s.channel, s.message))
            .collect();
        marks.caught_up.clear();
    }

    /// Where a catch-up of `server` starts reading `channel` (SPEC D9, D12): the session's first
    /// catch-up of it after the marks the session began with; a later one (the server came back
    /// from an outage) after the last message this process saw. `first` is from
    /// [`Self::first_catch_up`].
    pub fn catch_up_from(&self, first: bool, channel: ChannelId) -> Option<MessageId> {
        if first {
            self.at_session_start(channel)
        } else {
            self.last(channel)
        }
    }

    /// Whether this is the current session's first catch-up of `server` (and notes that it ran).
    pub fn first_catch_up(&self, server: ServerId) -> bool {
        let mut marks = self.inner();
        // Bounded: past the cap a server counts as caught up (read after what was seen).
        marks.caught_up.len() < self.channels && marks.caught_up.insert(server)
    }

    /// The last message seen in `channel` when the current session began.
    pub fn at_session_start(&self, channel: ChannelId) -> Option<MessageId> {
        self.inner().at_start.get(&channel).copied()
    }

    /// DM channels with a mark at or after `since` (a snowflake) when the session began.
    pub fn direct_messages_since(&self, since: u64) -> Vec<ChannelId> {
        let marks = self.inner();
        let mut channels: Vec<ChannelId> = marks
            .seen
            .values()
            .filter(|s| s.server.is_none())
            .filter(|s| marks.at_start.get(&s.channel).is_some_and(|m| m.0 >= since))
            .map(|s| s.channel)
            .collect();
        channels.sort_unstable();
        channels
    }

    /// The marks changed since the last call (to store), oldest channel first.
    pub fn take_changed(&self) -> Vec<Seen> {
        let mut changed: Vec<Seen> = self.inner().changed.drain().map(|(_, s)| s).collect();
        changed.sort_by_key(|s| s.channel);
        changed
    }

    /// Marks that could not be stored: changed again, unless newer ones came meanwhile.
    pub fn unsaved(&self, marks: Vec<Seen>) {
        let mut inner = self.inner();
        for seen in marks {
            let current = inner.seen.get(&seen.channel).copied();
            if current == Some(seen) {
                inner.changed.entry(seen.channel).or_insert(seen);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NOW: i64 = 1_800_000_000_000;
    const LIMITS: Limits = Limits {
        window_ms: 600_000,
        messages: 50,
        channels: 10,
    };

    fn at(ms_ago: i64) -> MessageId {
        MessageId(snowflake_at(NOW - ms_ago) + 1)
    }

    fn candidate(channel: u64, last: Option<MessageId>) -> Candidate {
        Candidate {
            channel: ChannelId(channel),
            last_message: last,
        }
    }

    #[test]
    fn snowflakes_carry_their_time() {
        // A real Discord id and the time Discord's documentation gives for it.
        assert_eq!(snowflake_ms(175_928_847_299_117_063), 1_462_015_105_796);
        assert_eq!(snowflake_ms(snowflake_at(NOW)), NOW);
        assert_eq!(snowflake_at(0), 0);
        assert_eq!(snowflake_at(i64::MIN), 0);
        assert!(snowflake_ms(u64::MAX) > NOW);
    }

    // SPEC D9: a channel active inside the window is read after what the bot saw there.
    #[test]
    fn a_channel_is_read_after_the_last_message_seen() {
        let seen = at(60_000);
        let reads = plan(
            &[candidate(1, Some(at(1_000)))],
            |_| Some(seen),
            NOW,
            LIMITS,
        );
        assert_eq!(
            reads,
            vec![Read {
                channel: ChannelId(1),
                after: seen
            }]
        );
    }

    // SPEC D9: older messages are left alone, even where nothing was seen.
    #[test]
    fn nothing_older_than_the_window_is_read() {
        let reads = plan(
            &[
                candidate(1, Some(at(1_000))),
                candidate(2, Some(at(700_000))),
            ],
            |c| (c == ChannelId(1)).then(|| at(900_000)),
            NOW,
            LIMITS,
        );
        assert_eq!(reads.len(), 1, "{reads:?}");
        assert_eq!(reads[0].after, MessageId(snowflake_at(NOW - 600_000)));
    }

    #[test]
    fn a_channel_with_nothing_new_is_not_read() {
        let last = at(5_000);
        assert!(plan(&[candidate(1, Some(last))], |_| Some(last), NOW, LIMITS).is_empty());
        assert!(plan(&[candidate(1, None)], |_| None, NOW, LIMITS).is_empty());
    }

    #[test]
    fn a_dm_is_read_when_seen_inside_the_window() {
        let reads = plan(
            &[candidate(1, None), candidate(2, None)],
            |c| {
                Some(if c == ChannelId(1) {
                    at(10_000)
                } else {
                    at(700_000)
                })
            },
            NOW,
            LIMITS,
        );
        assert_eq!(reads.len(), 1);
        assert_eq!(reads[0].channel, ChannelId(1));
    }

    #[test]
    fn the_most_recent_channels_go_first_up_to_the_cap() {
        let candidates: Vec<Candidate> = (0..30)
            .map(|i| candidate(i, Some(at(i64::try_from(i).unwrap_or(0) * 1_000 + 1))))
            .collect();
        let reads = plan(&candidates, |_| None, NOW, LIMITS);
        let channels: Vec<u64> = reads.iter().map(|r| r.channel.0).collect();
        assert_eq!(channels, (0..10).collect::<Vec<_>>());
        let off = Limits {
            window_ms: 0,
            ..LIMITS
        };
        assert!(plan(&candidates, |_| None, NOW, off).is_empty());
    }

    #[test]
    fn marks_move_forward_and_are_stored_once() {
        let marks = SeenMarks::new(2);
        let seen = |channel, message| Seen {
            channel: ChannelId(channel),
            server: Some(ServerId(1)),
            message: MessageId(message),
        };
        marks.saw(seen(1, 10));
        marks.saw(seen(1, 5));
        assert_eq!(marks.last(ChannelId(1)), Some(MessageId(10)));
        assert_eq!(marks.take_changed(), vec![seen(1, 10)]);
        assert!(marks.take_changed().is_empty());
        marks.unsaved(vec![seen(1, 10)]);
        assert_eq!(marks.take_changed(), vec![seen(1, 10)]);
        marks.saw(seen(2, 20));
        marks.saw(seen(3, 30));
        assert_eq!(
            marks.last(ChannelId(1)),
            None,
            "the oldest goes past the cap"
        );
        marks.load([seen(3, 25), seen(4, 40)]);
        assert_eq!(marks.last(ChannelId(3)), Some(MessageId(30)));
        assert_eq!(marks.last(ChannelId(4)), None, "loading keeps the cap");
        assert!(marks.direct_messages_since(0).is_empty());
        marks.begin_session();
        marks.saw(seen(3, 35));
        assert_eq!(marks.last(ChannelId(3)), Some(MessageId(35)));
        assert_eq!(
            marks.at_session_start(ChannelId(3)),
            Some(MessageId(30)),
            "a message of the new session does not move where its catch-up starts"
        );
        let from = |marks: &SeenMarks| {
            let first = marks.first_catch_up(ServerId(1));
            marks.catch_up_from(first, ChannelId(3))
        };
        assert_eq!(from(&marks), Some(MessageId(30)));
        // SPEC D12: back from an outage, the server is read after what was seen since.
        assert_eq!(from(&marks), Some(MessageId(35)));
        marks.begin_session();
        marks.saw(seen(3, 36));
        assert_eq!(
            from(&marks),
            Some(MessageId(35)),
            "a new session: its first catch-up"
        );
    }

    proptest! {
        // Whatever Discord sends, a plan is bounded and reads nothing older than the window.
        #[test]
        fn plans_stay_inside_the_window(
            lasts in proptest::collection::vec(proptest::option::of(any::<u64>()), 0..40),
            seen in proptest::collection::vec(any::<u64>(), 0..40),
            now in any::<i64>(),
            window in 0i64..100_000_000,
        ) {
            let candidates: Vec<Candidate> = lasts
                .iter()
                .enumerate()
                .map(|(i, l)| candidate(i as u64, l.map(MessageId)))
                .collect();
            let limits = Limits { window_ms: window, ..LIMITS };
            let reads = plan(&candidates, |c| seen.get(c.0 as usize).copied().map(MessageId), now, limits);
            prop_assert!(reads.len() <= LIMITS.channels);
            let start = snowflake_at(now.saturating_sub(window));
            for read in reads {
                prop_assert!(read.after.0 >= start);
            }
        }
    }
}
