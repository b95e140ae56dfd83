//! Recent channel messages as the gateway delivered them, so a turn's history usually needs no
//! `GET /channels/{id}/messages`.
//!
//! A channel's record holds every message from the first one the gateway delivered in it since
//! the session began (`from`): the gateway sends each new message, edit and delete, so nothing
//! in that range is missing. A history request is answered here when the range covers it (at
//! least `limit` messages older than `before`, or the channel's very first message is known);
//! otherwise the REST page it fetches is merged in when it joins the range, so the channel's
//! next turn is answered here. A new session (READY, not RESUMED) may have missed messages:
//! everything is forgotten.
//!
//! Bounded: at most `per_channel` messages a channel (the oldest go first) and
//! [`CHANNELS_MAX`] channels (the least recently used go first).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, PoisonError};

use crate::domain::ports::HistoryMessage;

/// Most channels remembered at once.
pub const CHANNELS_MAX: usize = 1000;

#[derive(Debug)]
struct Channel {
    /// By message id (ids grow with time).
    messages: BTreeMap<u64, HistoryMessage>,
    /// Every message with an id at or above this is held.
    from: u64,
    /// No message is older than the oldest held (a REST page came back short).
    start_known: bool,
    used: u64,
}

#[derive(Debug, Default)]
struct Inner {
    channels: HashMap<u64, Channel>,
    tick: u64,
}

#[derive(Debug)]
pub struct RecentMessages {
    inner: Mutex<Inner>,
    per_channel: usize,
}

impl RecentMessages {
    /// Keeps `per_channel` messages a channel: at least a turn's history and some margin.
    pub fn new(per_channel: usize) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            per_channel: per_channel.max(1),
        }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new gateway session: what happened while disconnected is unknown.
    pub fn clear(&self) {
        self.inner().channels.clear();
    }

    /// A message the gateway delivered (MESSAGE_CREATE).
    pub fn created(&self, channel: u64, message: HistoryMessage) {
        let mut inner = self.inner();
        inner.tick += 1;
        let tick = inner.tick;
        if !inner.channels.contains_key(&channel) && inner.channels.len() >= CHANNELS_MAX {
            let oldest = inner
                .channels
                .iter()
                .min_by_key(|(_, c)| c.used)
                .map(|(id, _)| *id);
            if let Some(oldest) = oldest {
                inner.channels.remove(&oldest);
            }
        }
        let record = inner.channels.entry(channel).or_insert_with(|| Channel {
            messages: BTreeMap::new(),
            from: message.id.0,
            start_known: false,
            used: tick,
        });
        record.used = tick;
        record.messages.insert(message.id.0, message);
        trim(record, self.per_channel);
    }

    /// An edit (MESSAGE_UPDATE with content).
    pub fn edited(&self, channel: u64, id: u64, content: &str) {
        if let Some(message) = self
            .inner()
            .channels
            .get_mut(&channel)
            .and_then(|c| c.messages.get_mut(&id))
        {
            content.clone_into(&mut message.content);
        }
    }

    /// Deleted messages (MESSAGE_DELETE, MESSAGE_DELETE_BULK).
    pub fn deleted(&self, channel: u64, ids: &[u64]) {
        if let Some(record) = self.inner().channels.get_mut(&channel) {
            for id in ids {
                record.messages.remove(id);
            }
        }
    }

    /// Up to `limit` messages older than `before` (or the newest), newest first, when the held
    /// range covers them; `None` when only Discord can say.
    pub fn older(
        &self,
        channel: u64,
        before: Option<u64>,
        limit: usize,
    ) -> Option<Vec<HistoryMessage>> {
        let mut inner = self.inner();
        inner.tick += 1;
        let tick = inner.tick;
        let record = inner.channels.get_mut(&channel)?;
        let end = before.unwrap_or(u64::MAX);
        if end < record.from {
            return None;
        }
        record.used = tick;
        // Only the held range counts: a late delivery older than it may sit beside a gap.
        let page: Vec<HistoryMessage> = record
            .messages
            .range(record.from..end)
            .rev()
            .take(limit)
            .map(|(_, m)| m.clone())
            .collect();
        (page.len() == limit || record.start_known).then_some(page)
    }

    /// A REST page (newest first) fetched for `before` and `limit`: merged in when it joins the
    /// held range, so the channel's next history comes from here.
    pub fn learn(&self, channel: u64, before: Option<u64>, limit: usize, page: &[HistoryMessage]) {
        let mut inner = self.inner();
        let Some(record) = inner.channels.get_mut(&channel) else {
            // Nothing delivered since the session began: what came after `before` is unknown.
            return;
        };
        if before.unwrap_or(u64::MAX) < record.from {
            return;
        }
        // The page holds every message from its oldest up to `before`, which joins the range.
        if let Some(oldest) = page.iter().map(|m| m.id.0).min() {
            record.from = record.from.min(oldest);
        }
        if page.len() < limit {
            record.start_known = true;
            record.from = 0;
        }
        for message in page {
            record.messages.insert(message.id.0, message.clone());
        }
        trim(record, self.per_channel);
    }

    #[cfg(test)]
    fn channels(&self) -> usize {
        self.inner().channels.len()
    }
}

/// Drops the oldest messages past the bound; the range then starts at the oldest kept.
fn trim(record: &mut Channel, per_channel: usize) {
    while record.messages.len() > per_channel {
        if let Some((id, _)) = record.messages.pop_first() {
            record.from = id + 1;
            record.start_known = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::scope::MessageId;
    use proptest::prelude::*;

    fn m(id: u64) -> HistoryMessage {
        HistoryMessage {
            id: MessageId(id),
            author: "alice".into(),
            from_bot: false,
            content: format!("m{id}"),
            at_ms: 0,
            attachments: Vec::new(),
        }
    }

    fn ids(page: Option<Vec<HistoryMessage>>) -> Option<Vec<u64>> {
        page.map(|p| p.iter().map(|m| m.id.0).collect())
    }

    #[test]
    fn a_channel_seen_only_since_the_session_began_needs_discord() {
        let recent = RecentMessages::new(50);
        for id in 10..15 {
            recent.created(1, m(id));
        }
        assert_eq!(ids(recent.older(1, Some(14), 3)), Some(vec![13, 12, 11]));
        assert_eq!(
            ids(recent.older(1, Some(14), 30)),
            None,
            "older ones may exist"
        );
        assert_eq!(ids(recent.older(2, None, 1)), None, "never seen");
    }

    #[test]
    fn a_fetched_page_joins_the_range_and_the_next_turn_needs_no_fetch() {
        let recent = RecentMessages::new(50);
        recent.created(1, m(100));
        let page: Vec<HistoryMessage> = (70..100).rev().map(m).collect();
        assert_eq!(recent.older(1, Some(100), 30), None);
        recent.learn(1, Some(100), 30, &page);
        recent.created(1, m(101));
        recent.created(1, m(102));
        let next = ids(recent.older(1, Some(102), 30)).expect("covered");
        assert_eq!(next.first(), Some(&101));
        assert_eq!(next.last(), Some(&72));
        assert_eq!(next.len(), 30);
    }

    #[test]
    fn a_short_page_means_the_channel_start_is_known() {
        let recent = RecentMessages::new(50);
        recent.created(1, m(5));
        recent.learn(1, Some(5), 30, &[m(3), m(2)]);
        assert_eq!(ids(recent.older(1, Some(5), 30)), Some(vec![3, 2]));
        recent.created(1, m(6));
        assert_eq!(ids(recent.older(1, Some(6), 30)), Some(vec![5, 3, 2]));
    }

    #[test]
    fn a_page_older_than_the_range_is_not_merged() {
        let recent = RecentMessages::new(50);
        recent.created(1, m(100));
        recent.learn(1, Some(50), 2, &[m(49), m(48)]);
        assert_eq!(recent.older(1, Some(100), 3), None, "51..99 are unknown");
    }

    #[test]
    fn edits_and_deletes_are_followed() {
        let recent = RecentMessages::new(50);
        recent.created(1, m(1));
        recent.learn(1, Some(1), 30, &[]);
        recent.created(1, m(2));
        recent.created(1, m(3));
        recent.edited(1, 2, "changed");
        recent.deleted(1, &[1]);
        let page = recent.older(1, None, 30).expect("covered");
        assert_eq!(
            page.iter().map(|m| m.content.as_str()).collect::<Vec<_>>(),
            ["m3", "changed"]
        );
    }

    #[test]
    fn a_new_session_forgets_everything() {
        let recent = RecentMessages::new(50);
        recent.created(1, m(1));
        recent.learn(1, Some(1), 30, &[]);
        recent.clear();
        assert_eq!(recent.older(1, None, 1), None);
    }

    #[test]
    fn trimming_keeps_the_range_honest() {
        let recent = RecentMessages::new(5);
        recent.created(1, m(1));
        recent.learn(1, Some(1), 30, &[]);
        for id in 2..=10 {
            recent.created(1, m(id));
        }
        assert_eq!(ids(recent.older(1, None, 5)), Some(vec![10, 9, 8, 7, 6]));
        assert_eq!(
            recent.older(1, None, 6),
            None,
            "5 was let go: Discord knows it"
        );
    }

    #[test]
    fn the_least_recently_used_channel_goes_first() {
        let recent = RecentMessages::new(2);
        for channel in 0..CHANNELS_MAX as u64 {
            recent.created(channel, m(1));
        }
        recent.older(0, None, 1);
        recent.created(5000, m(1));
        assert_eq!(recent.channels(), CHANNELS_MAX);
        assert!(recent.older(0, None, 1).is_some(), "used lately");
        assert!(
            recent.older(1, None, 1).is_none(),
            "the least recently used"
        );
    }

    proptest! {
        // Whatever order and mix of events, a page served from here is what Discord would
        // give: the newest `limit` existing messages older than `before`.
        #[test]
        fn a_served_page_matches_the_channel(
            pre in 0u64..40,
            events in proptest::collection::vec((0u8..4, 1u64..60), 1..80),
            before in proptest::option::of(1u64..80),
            limit in 1usize..20,
        ) {
            let recent = RecentMessages::new(16);
            // The channel as Discord holds it: every message ever created and not deleted.
            // Messages from before the session, which the gateway never delivered.
            let mut truth: BTreeMap<u64, ()> = (1..=pre).map(|id| (id, ())).collect();
            let mut next = 100u64;
            for (kind, n) in events {
                match kind {
                    0 | 1 => {
                        next += 1;
                        truth.insert(next, ());
                        recent.created(7, m(next));
                    }
                    2 => {
                        let id = if n % 2 == 0 { 100 + n } else { n };
                        truth.remove(&id);
                        recent.deleted(7, &[id]);
                    }
                    _ => {
                        // A REST fetch (its own `before` and `limit`) answered from the
                        // truth, then learnt.
                        let (end, size) = (next + 1 - n % 8, 1 + (n as usize % 10));
                        let page: Vec<HistoryMessage> =
                            truth.range(..end).rev().take(size).map(|(id, ())| m(*id)).collect();
                        recent.learn(7, Some(end), size, &page);
                    }
                }
            }
            let end = before.map(|b| b + 100);
            if let Some(page) = recent.older(7, end, limit) {
                let want: Vec<u64> =
                    truth.range(..end.unwrap_or(u64::MAX)).rev().take(limit).map(|(id, ())| *id).collect();
                prop_assert_eq!(page.iter().map(|m| m.id.0).collect::<Vec<_>>(), want);
            }
        }
    }
}
