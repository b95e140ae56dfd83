//! What a turn completed, kept so a turn resumed after a restart repeats nothing (SPEC R4, D5):
//! its tool outcomes, the messages and sticker it delivered, and whether it finished.

use async_trait::async_trait;
use serde_json::Value;

use super::PortError;
use crate::domain::scope::MessageId;
use crate::domain::turn::TurnId;

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
    /// The turn ended: a resumed copy of it has nothing left to do.
    Finished,
}

/// What a turn delivered before, as a resumed run of it reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delivered {
    /// Messages delivered, counted from the first: a resumed run skips that many.
    pub pieces: u32,
    pub sticker: Option<u64>,
    pub finished: bool,
}

impl Delivered {
    /// Folds stored deliveries into what a resumed turn needs. Pieces count up to the first gap,
    /// so a lost record never makes a resumed turn skip a message nobody saw.
    pub fn from_records(records: &[Delivery]) -> Self {
        let mut delivered = Self::default();
        let mut indices: Vec<u32> = Vec::new();
        for record in records {
            match *record {
                Delivery::Piece { index, .. } => indices.push(index),
                Delivery::Sticker { sticker } => delivered.sticker = Some(sticker),
                Delivery::Finished => delivered.finished = true,
            }
        }
        indices.sort_unstable();
        indices.dedup();
        for index in indices {
            if index != delivered.pieces {
                break;
            }
            delivered.pieces += 1;
        }
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
                sticker: Some(7),
                finished: true
            }
        );
        assert_eq!(Delivered::from_records(&[piece(2)]).pieces, 0);
    }
}
