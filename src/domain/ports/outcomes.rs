//! What a turn completed, kept so a turn resumed after a restart repeats nothing (SPEC R4, D5):
//! its tool outcomes, the messages and sticker it delivered, and whether it finished.

use async_trait::async_trait;
use serde_json::Value;

use super::PortError;
use crate::domain::scope::{ChannelId, MessageId};
use crate::domain::turn::{ExpressionId, TurnId};

/// A completed tool outcome, kept so a retried or resumed turn reuses it (SPEC R4).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredOutcome {
    pub identity: String,
    pub response: Value,
    pub invocation: u32,
}

/// When a write must be in the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Before the call returns: the outcome of a tool with external effects, which a resumed
    /// turn must not run again.
    Now,
    /// With the next background batch: bookkeeping a crash may lose at no cost.
    Batched,
}

/// Something a turn delivered, or its end (SPEC D5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// The turn's `index`-th message (0 first), posted as `message`.
    Piece { index: u32, message: MessageId },
    /// The turn's sticker.
    Sticker { sticker: u64 },
    /// The turn's reaction, by its emoji's key (SPEC E1).
    Reaction { emoji: u64 },
    /// The turn ended: a resumed copy of it has nothing left to do.
    Finished,
    /// The turn's `index`-th message is about to be sent; `digest` is [`text_digest`] of its
    /// text. Recorded first, so a crash between the post and its [`Delivery::Piece`] record is
    /// found out by looking for the post (a webhook takes no nonce, SPEC D11). `paused_after`:
    /// the message went out because the stream paused, after that many of the cutter's pieces
    /// (SPEC C4); a resumed run pauses there too, so it cuts the reply the same way.
    Intended {
        index: u32,
        digest: u64,
        paused_after: Option<u32>,
    },
}

/// A digest of a message's text as it reads, whatever form its mentions take: its words, with
/// every word holding a mention (`<@1>` as sent, `@name` as history reads it) left out.
pub fn text_digest(text: &str) -> u64 {
    use sha2::Digest as _;
    let mut hash = sha2::Sha256::new();
    for word in text.split_whitespace().filter(|w| !w.contains('@')) {
        hash.update(word.as_bytes());
        hash.update(b" ");
    }
    leading_u64(&hash.finalize())
}

/// A digest's first 8 bytes as a number: what the delivery records keep of a hash.
pub(crate) fn leading_u64(digest: &[u8]) -> u64 {
    let mut first = [0u8; 8];
    for (to, from) in first.iter_mut().zip(digest) {
        *to = *from;
    }
    u64::from_be_bytes(first)
}

/// What a turn delivered before, as a resumed run of it reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delivered {
    /// Messages delivered, counted from the first: a resumed run skips that many.
    pub pieces: u32,
    /// The expression (sticker or reaction) it delivered.
    pub expression: Option<ExpressionId>,
    pub finished: bool,
    /// The last delivered message (the `pieces - 1`-th), when recorded.
    pub last_piece: Option<MessageId>,
    /// The digest of the next message (the `pieces`-th), when it was about to be sent and its
    /// post was never recorded: it may be in the channel.
    pub unrecorded: Option<u64>,
    /// Where the earlier run's reply paused (after how many of the cutter's pieces): a resumed
    /// run pauses there too (SPEC C4, D5).
    pub pauses: Vec<u32>,
}

impl Delivered {
    /// Folds stored deliveries into what a resumed turn needs. Pieces count up to the first gap,
    /// so a lost record never makes a resumed turn skip a message nobody saw.
    pub fn from_records(records: &[Delivery]) -> Self {
        let mut delivered = Self::default();
        let mut pieces: Vec<(u32, MessageId)> = Vec::new();
        let mut intents: Vec<(u32, u64)> = Vec::new();
        for record in records {
            match *record {
                Delivery::Piece { index, message } => pieces.push((index, message)),
                Delivery::Sticker { sticker } => {
                    delivered.expression = Some(ExpressionId::Sticker(sticker));
                }
                Delivery::Reaction { emoji } => {
                    delivered.expression = Some(ExpressionId::Reaction(emoji));
                }
                Delivery::Finished => delivered.finished = true,
                Delivery::Intended {
                    index,
                    digest,
                    paused_after,
                } => {
                    intents.push((index, digest));
                    delivered.pauses.extend(paused_after);
                }
            }
        }
        pieces.sort_unstable();
        pieces.dedup_by_key(|(index, _)| *index);
        for (index, message) in pieces {
            if index != delivered.pieces {
                break;
            }
            delivered.pieces += 1;
            delivered.last_piece = Some(message);
        }
        delivered.unrecorded = intents
            .iter()
            .find(|(index, _)| *index == delivered.pieces)
            .map(|(_, digest)| *digest);
        delivered
    }
}

/// The idempotency key of a turn's delivery, the same however often the turn runs: Discord
/// posts a message once per key (`nonce` with `enforce_nonce`), so a send the process did not
/// live to record is not posted twice by the resumed turn either.
pub fn delivery_key(turn: TurnId, what: &str) -> String {
    format!("{}:{what}", turn.0.simple())
}

/// Records what the turn delivered, before it goes on (SPEC D5). A failed write is logged: the
/// delivery's idempotency key still keeps Discord from showing it twice for a while.
pub async fn remember_delivery(ports: &super::Ports, turn: TurnId, delivery: Delivery) {
    if let Err(error) = ports
        .outcomes
        .record_delivery(turn, delivery, ports.clock.now_ms())
        .await
    {
        tracing::warn!(%turn, %error, "could not record a delivery; a resumed turn may repeat it");
    }
}

/// A message the bot deliberately leaves unanswered (`/kill`, a full queue, the per-user rate,
/// the stale-turn guard, a refusal by admission) is closed as an answered one is: its turn is
/// recorded finished, so no restart and no catch-up revives it (SPEC D12).
pub async fn close_unanswered(
    store: &dyn OutcomeStore,
    channel: ChannelId,
    message: MessageId,
    at_ms: i64,
) {
    let turn = TurnId::for_message(channel, message);
    if let Err(error) = store.record_delivery(turn, Delivery::Finished, at_ms).await {
        tracing::warn!(%channel, %message, %error, "could not record a message left unanswered; a catch-up after a restart may answer it");
    }
}

/// Whether the message's turn is finished: answered, or deliberately left unanswered.
pub async fn is_closed(
    store: &dyn OutcomeStore,
    channel: ChannelId,
    message: MessageId,
) -> Result<bool, PortError> {
    let records = store
        .deliveries(TurnId::for_message(channel, message))
        .await?;
    Ok(records.contains(&Delivery::Finished))
}

#[async_trait]
pub trait OutcomeStore: Send + Sync {
    async fn record_outcome(
        &self,
        turn: TurnId,
        outcome: &StoredOutcome,
        at_ms: i64,
        durability: Durability,
    ) -> Result<(), PortError>;
    async fn outcomes(&self, turn: TurnId) -> Result<Vec<StoredOutcome>, PortError>;
    /// Records a delivery before the turn goes on (always [`Durability::Now`]). Recording one
    /// twice keeps one record.
    async fn record_delivery(
        &self,
        turn: TurnId,
        delivery: Delivery,
        at_ms: i64,
    ) -> Result<(), PortError>;
    /// What the turn delivered before, in any run of it.
    async fn deliveries(&self, turn: TurnId) -> Result<Vec<Delivery>, PortError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(index: u32) -> Delivery {
        Delivery::Piece {
            index,
            message: MessageId(u64::from(index) + 1),
        }
    }

    // SPEC D5: pieces count up to the first gap; repeats count once.
    #[test]
    fn delivered_pieces_count_to_the_first_gap() {
        let folded = Delivered::from_records(&[piece(1), piece(0), piece(1), piece(3)]);
        assert_eq!(folded.pieces, 2);
        assert!(!folded.finished);
        let folded = Delivered::from_records(&[
            piece(0),
            Delivery::Sticker { sticker: 7 },
            Delivery::Finished,
        ]);
        assert_eq!(
            folded,
            Delivered {
                pieces: 1,
                expression: Some(ExpressionId::Sticker(7)),
                finished: true,
                last_piece: Some(MessageId(1)),
                unrecorded: None,
                pauses: Vec::new(),
            }
        );
        assert_eq!(Delivered::from_records(&[piece(2)]).pieces, 0);
    }

    // SPEC E1, D5: a resumed turn knows the reaction it made, so its allowance stays used.
    #[test]
    fn a_recorded_reaction_is_the_turns_expression() {
        let folded = Delivered::from_records(&[Delivery::Reaction { emoji: 42 }]);
        assert_eq!(folded.expression, Some(ExpressionId::Reaction(42)));
        assert_eq!(folded.pieces, 0);
    }

    // SPEC D11: a message about to be sent whose post was never recorded is the one to look
    // for; an intent already followed by its post is not.
    #[test]
    fn an_intent_without_its_post_is_unrecorded() {
        let intent = |index| Delivery::Intended {
            index,
            digest: 40 + u64::from(index),
            paused_after: (index == 0).then_some(3),
        };
        let folded = Delivered::from_records(&[intent(0), piece(0), intent(1)]);
        assert_eq!((folded.pieces, folded.unrecorded), (1, Some(41)));
        assert_eq!(folded.pauses, vec![3]);
        let folded = Delivered::from_records(&[intent(0), piece(0)]);
        assert_eq!(folded.unrecorded, None);
    }

    // The digest reads a text as history shows it: mentions in any form, any spacing.
    #[test]
    fn a_digest_ignores_the_form_of_mentions() {
        assert_eq!(
            text_digest("Hi <@123>, all  is\nwell."),
            text_digest("Hi @Mika, all is well.")
        );
        assert_ne!(text_digest("all is well"), text_digest("all is not well"));
    }
}
