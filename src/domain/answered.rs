//! Answered, as Discord shows it (SPEC D12): which messages addressed to the bot a channel's
//! history shows answered, so a catch-up on a database that knows nothing of the past (a new
//! volume, a move to PostgreSQL, a restored backup) answers nothing twice.
//!
//! A reply reference alone cannot tell: the bot replies by reference only to a message that
//! waited, so an answer in an idle channel has none, nor has a webhook post (a server's own
//! persona). What history does show is order. Reading a page oldest first, each message
//! addressed to the bot waits for an answer; a post of the bot's (its user's or its own
//! webhook's):
//! - with a reply reference answers that message;
//! - without one, when it is the first post since an addressed message came, answers the oldest
//!   message still waiting (turns in a channel run one at a time, oldest first); later posts of
//!   the same run are the same answer's further messages;
//! - and the message it answers takes with it the waiting messages of the same author before
//!   the post: joined to it, or follow-ups spoken in its turn.
//!
//! A deliberate non-answer leaves no post (or a notice replying to it); the database's finished
//! mark covers it (`ports::is_closed`).

use std::collections::{HashSet, VecDeque};

use super::scope::{MessageId, UserId};

/// A message of a channel's history, as far as judging answers goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub id: MessageId,
    pub author: UserId,
    /// From the bot itself: its user, or one of its own webhooks (the persona's posts).
    pub by_bot: bool,
    /// The message it replies to, if any.
    pub reply_to: Option<MessageId>,
    /// Addressed to the bot: it mentions the bot, replies to it, or is a DM, and is from a
    /// person (not a bot or a webhook).
    pub addressed: bool,
}

/// The messages to answer among `found` (any order, duplicates allowed): addressed to the bot,
/// after `after`, and not answered by the bot's posts among `found`; oldest first.
pub fn pick(found: &[Found], after: MessageId) -> Vec<MessageId> {
    let ordered = in_order(found);
    let answered = answered(&ordered);
    ordered
        .iter()
        .filter(|m| m.addressed && !m.by_bot && m.id > after && !answered.contains(&m.id))
        .map(|m| m.id)
        .collect()
}

/// One of each message, oldest first (a snowflake grows with time).
fn in_order(found: &[Found]) -> Vec<&Found> {
    let mut ordered: Vec<&Found> = found.iter().collect();
    ordered.sort_by_key(|m| m.id);
    ordered.dedup_by_key(|m| m.id);
    ordered
}

/// The messages the bot's posts answer, by the rules in the module's header.
fn answered(ordered: &[&Found]) -> HashSet<MessageId> {
    let mut answered = HashSet::new();
    // Addressed messages not yet answered, oldest first, with their authors.
    let mut waiting: VecDeque<(MessageId, UserId)> = VecDeque::new();
    // An addressed message came since the bot's last post: the next post starts an answer.
    let mut fresh = false;
    for m in ordered {
        if !m.by_bot {
            if m.addressed {
                waiting.push_back((m.id, m.author));
                fresh = true;
            }
            continue;
        }
        let target = match m.reply_to {
            Some(to) => Some(to),
            None if fresh => waiting.front().map(|(id, _)| *id),
            None => None,
        };
        fresh = false;
        let Some(target) = target else {
            continue;
        };
        answered.insert(target);
        let author = waiting
            .iter()
            .find(|(id, _)| *id == target)
            .map(|(_, author)| *author);
        waiting.retain(|(id, by)| {
            let taken = *id == target || Some(*by) == author;
            if taken {
                answered.insert(*id);
            }
            !taken
        });
    }
    answered
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ALICE: u64 = 1;
    const BOB: u64 = 2;
    const BOT: u64 = 9;

    /// A person's message, addressed to the bot or not.
    fn person(id: u64, author: u64, addressed: bool) -> Found {
        Found {
            id: MessageId(id),
            author: UserId(author),
            by_bot: false,
            reply_to: None,
            addressed,
        }
    }

    /// A post of the bot's, replying to `reply_to` or not.
    fn post(id: u64, reply_to: Option<u64>) -> Found {
        Found {
            id: MessageId(id),
            author: UserId(BOT),
            by_bot: true,
            reply_to: reply_to.map(MessageId),
            addressed: false,
        }
    }

    fn ids(ids: &[u64]) -> Vec<MessageId> {
        ids.iter().copied().map(MessageId).collect()
    }

    // SPEC D9: addressed messages not yet answered, once each, oldest first.
    #[test]
    fn pick_takes_unanswered_addressed_messages_oldest_first() {
        let messages = [
            person(14, ALICE, true),
            post(13, Some(11)),
            person(12, BOB, false),
            person(11, BOB, true),
            person(10, ALICE, true),
            person(14, ALICE, true),
            person(9, ALICE, true),
        ];
        // 13 replies to 11; 10 came before it, but 13 names what it answers.
        assert_eq!(pick(&messages, MessageId(9)), ids(&[10, 14]));
    }

    // SPEC D12: an answer in an idle channel has no reply reference (nor has a webhook post):
    // the post that follows a question answers it, and its further messages answer nothing.
    #[test]
    fn a_post_without_a_reference_answers_the_question_before_it() {
        let messages = [
            person(1, ALICE, true),
            post(2, None),
            post(3, None),
            person(4, BOB, true),
            person(5, ALICE, false),
            post(6, None),
            person(7, BOB, true),
        ];
        assert_eq!(pick(&messages, MessageId(0)), ids(&[7]));
    }

    // SPEC D12: two questions at once: the first is answered without a reference (it did not
    // wait), the second by reference; a crash before the second's answer leaves it waiting.
    #[test]
    fn answers_go_to_the_oldest_waiting_question_first() {
        let both = [
            person(1, ALICE, true),
            person(2, BOB, true),
            post(3, None),
            post(4, Some(2)),
        ];
        assert!(pick(&both, MessageId(0)).is_empty());
        let crashed = [person(1, ALICE, true), person(2, BOB, true), post(3, None)];
        assert_eq!(pick(&crashed, MessageId(0)), ids(&[2]));
    }

    // SPEC D12: messages joined to a waiting one (same author) and follow-ups are answered with
    // it; another member's question is not.
    #[test]
    fn an_answer_takes_its_authors_joined_messages_with_it() {
        let messages = [
            person(1, BOB, true),
            person(2, ALICE, true),
            person(3, ALICE, true),
            person(4, BOB, true),
            post(5, Some(2)),
            post(6, Some(1)),
        ];
        assert!(pick(&messages, MessageId(0)).is_empty());
        let one = [
            person(2, ALICE, true),
            person(3, ALICE, true),
            person(4, BOB, true),
            post(5, Some(2)),
        ];
        assert_eq!(pick(&one, MessageId(0)), ids(&[4]));
    }

    proptest! {
        #[test]
        fn picks_are_sorted_unique_addressed_and_after(
            messages in proptest::collection::vec(
                (any::<u64>(), 0u64..3, any::<bool>(), proptest::option::of(any::<u64>()), any::<bool>()),
                0..60,
            ),
            after in any::<u64>(),
        ) {
            let found: Vec<Found> = messages
                .iter()
                .map(|(id, author, by_bot, reply_to, addressed)| Found {
                    id: MessageId(*id),
                    author: UserId(*author),
                    by_bot: *by_bot,
                    reply_to: reply_to.map(MessageId),
                    addressed: *addressed,
                })
                .collect();
            let picked = pick(&found, MessageId(after));
            prop_assert!(picked.windows(2).all(|w| w[0] < w[1]));
            prop_assert!(picked.iter().all(|m| m.0 > after));
            prop_assert!(picked.iter().all(|m| found.iter().any(|f| f.id == *m && f.addressed)));
        }
    }
}
