//! A channel's waiting line (SPEC C3, C7): the messages that wait while a turn runs, and every
//! decision about them: a follow-up of the running turn's requester goes first, a message from
//! someone whose own message already waits joins it, an edit replaces a waiting message's text,
//! and past the bound the oldest message that is not a follow-up is dropped. The line does no
//! IO: it returns [`Decision`]s, which the channel's worker carries out (the store, the notice,
//! the running turn).

use std::collections::VecDeque;

use super::{KillReach, Pending};
use crate::domain::ports::ATTACHMENTS_PER_MESSAGE;
use crate::domain::scope::{MessageId, UserId};

/// Something the worker does because of the line's decision, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Decision {
    /// Store a waiting entry's new text.
    StoreText {
        id: i64,
        content: String,
        why: TextChange,
    },
    /// Mark the stored entry a follow-up of the running turn.
    MarkFollowUp { id: i64 },
    /// The running turn has a follow-up: it may be interrupted.
    FollowUp,
    /// Remove the entry from the store: it joined another, or a newer follow-up replaced it.
    Forget(Pending),
    /// Dropped past the bound: closed unanswered, with a notice on it, then removed.
    Dropped(Pending),
}

/// Why a waiting entry's text changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TextChange {
    /// Its message was edited.
    Edited,
    /// A later message of its author joined it.
    Joined,
}

/// The running turn, as the line needs it: whose it is and how many follow-ups it took.
pub(super) struct Running<'a> {
    pub requester: UserId,
    pub follow_ups: &'a mut u32,
}

/// The messages waiting in one channel, in the order they are answered.
#[derive(Debug)]
pub(super) struct WaitingLine {
    entries: VecDeque<Pending>,
    /// Most messages that wait (`turn.queue_limit`); follow-ups are never dropped.
    limit: usize,
    /// Most follow-ups a turn takes, and messages one waiting message joins
    /// (`turn.max_follow_ups`).
    max_follow_ups: u32,
}

impl WaitingLine {
    pub(super) fn new(limit: usize, max_follow_ups: u32) -> Self {
        Self {
            entries: VecDeque::new(),
            limit,
            max_follow_ups,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The next message to answer.
    pub(super) fn next(&mut self) -> Option<Pending> {
        self.entries.pop_front()
    }

    /// A message that could not start yet (its server's settings did not answer) waits first.
    pub(super) fn wait_first(&mut self, pending: Pending) {
        self.entries.push_front(pending);
    }

    /// The routes of the waiting `/ask`s (SPEC A5).
    pub(super) fn routes(&self) -> impl Iterator<Item = (&super::Route, crate::locale::Locale)> {
        self.entries
            .iter()
            .filter_map(|q| q.route.as_ref().map(|r| (r, q.message.locale)))
    }

    /// Whether the stored message `id` waits here.
    pub(super) fn holds(&self, id: Option<i64>) -> bool {
        self.entries.iter().any(|q| q.store_id == id)
    }

    /// Whether a message of `user` waits here.
    pub(super) fn involves(&self, user: UserId) -> bool {
        self.entries.iter().any(|p| p.message.author == user)
    }

    /// A new message. With a turn running, its requester's message is a follow-up (up to
    /// `max_follow_ups` a turn; SPEC C7): it goes first, replacing an older waiting follow-up
    /// of theirs. Otherwise it joins its author's waiting message, or waits at the end, and the
    /// bound is kept.
    pub(super) fn arrive(
        &mut self,
        mut pending: Pending,
        running: Option<Running<'_>>,
    ) -> Vec<Decision> {
        let follow_up = match running {
            Some(running) => {
                pending.waited = true;
                // An `/ask` is a question of its own, never a follow-up (SPEC A5).
                let follow_up = pending.message.author == running.requester
                    && pending.route.is_none()
                    && *running.follow_ups < self.max_follow_ups;
                if follow_up {
                    *running.follow_ups += 1;
                }
                follow_up
            }
            None => {
                // A message found late (recovered, caught up) has waited already.
                pending.waited |= !self.entries.is_empty();
                false
            }
        };
        if !follow_up {
            return match self.join(&pending) {
                Some(mut decisions) => {
                    decisions.push(Decision::Forget(pending));
                    decisions
                }
                None => {
                    self.entries.push_back(pending);
                    self.keep_bound()
                }
            };
        }
        pending.message.follow_up = true;
        let mut decisions = Vec::new();
        if let Some(id) = pending.store_id {
            decisions.push(Decision::MarkFollowUp { id });
        }
        // A newer follow-up supersedes an older waiting one from the same user.
        let author = pending.message.author;
        if let Some(at) = self
            .entries
            .iter()
            .position(|q| q.message.follow_up && q.message.author == author)
            && let Some(old) = self.entries.remove(at)
        {
            decisions.push(Decision::Forget(old));
        }
        decisions.push(Decision::FollowUp);
        self.entries.push_front(pending);
        decisions
    }

    /// SPEC C2, C7: a message from someone whose own message already waits joins it (one turn
    /// answers both, replying to the first), up to `max_follow_ups` a message; its files come
    /// along within a message's worth. `None`: there is nothing to join; else what storing the
    /// joined text takes (the joined message is then forgotten).
    fn join(&mut self, pending: &Pending) -> Option<Vec<Decision>> {
        if pending.message.quiet || pending.route.is_some() {
            return None;
        }
        let max = self.max_follow_ups;
        let author = pending.message.author;
        let waiting = self.entries.iter_mut().find(|q| {
            q.message.author == author
                && !q.message.quiet
                && q.route.is_none()
                && !q.message.follow_up
                && q.folded < max
                && q.store_id != pending.store_id
        })?;
        waiting.message.content.push('\n');
        waiting.message.content.push_str(&pending.message.content);
        // The stored entry keeps the first message's files: after a restart the joined one's
        // files are named no more.
        let room = ATTACHMENTS_PER_MESSAGE.saturating_sub(waiting.message.attachments.len());
        let files = pending.message.attachments.iter().take(room).cloned();
        waiting.message.attachments.extend(files);
        waiting.folded += 1;
        tracing::debug!(channel = %pending.message.channel, "a message joined the same author's waiting one");
        let store = waiting.store_id.map(|id| Decision::StoreText {
            id,
            content: waiting.message.content.clone(),
            why: TextChange::Joined,
        });
        Some(store.into_iter().collect())
    }

    /// Past the bound, the oldest message that is not a follow-up is dropped (SPEC C3).
    fn keep_bound(&mut self) -> Vec<Decision> {
        let mut decisions = Vec::new();
        while self.entries.len() > self.limit {
            let Some(at) = self.entries.iter().position(|q| !q.message.follow_up) else {
                break;
            };
            let Some(dropped) = self.entries.remove(at) else {
                break;
            };
            decisions.push(Decision::Dropped(dropped));
        }
        decisions
    }

    /// SPEC C7: an edit of a waiting message replaces its text. `None`: it does not wait here.
    pub(super) fn edit(&mut self, message: MessageId, content: &str) -> Option<Vec<Decision>> {
        let pending = self
            .entries
            .iter_mut()
            .find(|p| p.message.message == message)?;
        pending.message.content = content.to_owned();
        Some(
            pending
                .store_id
                .map(|id| Decision::StoreText {
                    id,
                    content: content.to_owned(),
                    why: TextChange::Edited,
                })
                .into_iter()
                .collect(),
        )
    }

    /// SPEC C7: a deleted waiting message leaves the line; it is returned, to be forgotten.
    pub(super) fn delete(&mut self, message: MessageId) -> Option<Pending> {
        let at = self
            .entries
            .iter()
            .position(|p| p.message.message == message)?;
        self.entries.remove(at)
    }

    /// SPEC C6: what `/kill` drops: every waiting message, or only the requester's own.
    pub(super) fn take_for_kill(&mut self, reach: KillReach, requester: UserId) -> Vec<Pending> {
        match reach {
            KillReach::Channel => self.entries.drain(..).collect(),
            KillReach::Own => {
                let (own, others): (VecDeque<Pending>, _) = std::mem::take(&mut self.entries)
                    .into_iter()
                    .partition(|p| p.message.author == requester);
                self.entries = others;
                own.into()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ports::NewQueuedMessage;
    use crate::domain::scope::{ChannelId, PersonaId, Visibility};
    use crate::locale::Locale;

    const ALICE: UserId = UserId(1);
    const BOB: UserId = UserId(2);

    fn pending(id: i64, author: UserId, content: &str) -> Pending {
        let message = NewQueuedMessage {
            server: None,
            channel: ChannelId(9),
            message: MessageId(id.unsigned_abs()),
            author,
            author_name: "someone".into(),
            content: content.to_owned(),
            follow_up: false,
            enqueued_at_ms: 0,
            persona: PersonaId("aria".into()),
            visibility: Visibility::Public,
            locale: Locale::En,
            quiet: false,
            attachments: Vec::new(),
            mentions: Vec::new(),
        };
        Pending {
            store_id: Some(id),
            message,
            waited: false,
            edit: 0,
            folded: 0,
            again: None,
            route: None,
        }
    }

    fn contents(line: &WaitingLine) -> Vec<&str> {
        line.entries
            .iter()
            .map(|p| p.message.content.as_str())
            .collect()
    }

    // SPEC C7: while Alice's turn runs, her message is a follow-up: first in line, stored as
    // one, the turn told; a newer follow-up replaces the older; past the turn's follow-ups her
    // messages wait like anyone's.
    #[test]
    fn the_requesters_message_is_a_follow_up_until_the_limit() {
        let mut line = WaitingLine::new(10, 2);
        let mut follow_ups = 0;
        fn running(follow_ups: &mut u32) -> Option<Running<'_>> {
            Some(Running {
                requester: ALICE,
                follow_ups,
            })
        }
        assert!(
            line.arrive(pending(1, BOB, "bob"), running(&mut follow_ups))
                .is_empty()
        );
        let first = line.arrive(pending(2, ALICE, "more"), running(&mut follow_ups));
        assert_eq!(
            first,
            vec![Decision::MarkFollowUp { id: 2 }, Decision::FollowUp]
        );
        assert_eq!(contents(&line), ["more", "bob"]);
        let second = line.arrive(pending(3, ALICE, "even more"), running(&mut follow_ups));
        assert!(matches!(&second[1], Decision::Forget(old) if old.store_id == Some(2)));
        assert_eq!(contents(&line), ["even more", "bob"]);
        let third = line.arrive(pending(4, ALICE, "again"), running(&mut follow_ups));
        assert!(third.is_empty(), "past the limit it waits: {third:?}");
        assert_eq!(follow_ups, 2);
        assert_eq!(contents(&line), ["even more", "bob", "again"]);
    }

    // SPEC C2, C7: with no turn running, a second message of Bob's joins his waiting one (the
    // stored text follows), up to the limit; a quiet turn's entry never joins.
    #[test]
    fn a_waiting_authors_next_message_joins_theirs() {
        let mut line = WaitingLine::new(10, 1);
        assert!(line.arrive(pending(1, BOB, "hi"), None).is_empty());
        let joined = line.arrive(pending(2, BOB, "are you there"), None);
        assert_eq!(
            joined[0],
            Decision::StoreText {
                id: 1,
                content: "hi\nare you there".into(),
                why: TextChange::Joined,
            }
        );
        assert!(matches!(&joined[1], Decision::Forget(p) if p.store_id == Some(2)));
        assert!(line.arrive(pending(3, BOB, "hello?"), None).is_empty());
        let mut quiet = pending(4, BOB, "reminder");
        quiet.message.quiet = true;
        assert!(line.arrive(quiet, None).is_empty());
        assert_eq!(line.len(), 3);
        assert!(line.entries[1].waited, "it waited behind another");
    }

    // SPEC C3: past the bound the oldest message that is not a follow-up is dropped.
    #[test]
    fn past_the_bound_the_oldest_non_follow_up_is_dropped() {
        let mut line = WaitingLine::new(2, 3);
        let mut follow_ups = 0;
        line.arrive(
            pending(1, ALICE, "follow"),
            Some(Running {
                requester: ALICE,
                follow_ups: &mut follow_ups,
            }),
        );
        line.arrive(pending(2, BOB, "b"), None);
        let dropped = line.arrive(pending(3, UserId(3), "c"), None);
        assert!(matches!(&dropped[..], [Decision::Dropped(p)] if p.store_id == Some(2)));
        assert_eq!(contents(&line), ["follow", "c"]);
    }

    // SPEC C6, C7: an edit replaces a waiting text, a delete takes it out, and /kill takes the
    // requester's own or everyone's.
    #[test]
    fn edits_deletes_and_kills_find_their_messages() {
        let mut line = WaitingLine::new(10, 3);
        line.arrive(pending(1, ALICE, "a"), None);
        line.arrive(pending(2, BOB, "b"), None);
        line.arrive(pending(3, UserId(3), "c"), None);
        assert!(line.edit(MessageId(99), "x").is_none());
        assert_eq!(line.edit(MessageId(2), "b2").map(|d| d.len()), Some(1));
        assert_eq!(contents(&line), ["a", "b2", "c"]);
        assert_eq!(line.delete(MessageId(3)).and_then(|p| p.store_id), Some(3));
        let own = line.take_for_kill(KillReach::Own, ALICE);
        assert_eq!(own.len(), 1);
        assert!(line.involves(BOB) && !line.involves(ALICE));
        assert_eq!(line.take_for_kill(KillReach::Channel, ALICE).len(), 1);
        assert!(line.is_empty());
    }
}
