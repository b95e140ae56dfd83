//! What a turn resumed after a restart takes from its earlier run (SPEC R4, D5, D11): the tool
//! outcomes it completed, and what it delivered (its messages are not posted again, its sticker
//! uses the turn's allowance). A message the earlier run was about to send when it stopped, and
//! whose post was never recorded, is looked for in the channel before anything is sent again.

use crate::domain::ports::{
    Delivered, Delivery, OutcomeStore, Ports, remember_delivery, text_digest,
};
use crate::domain::scope::MessageId;
use crate::domain::turn::{ExpressionState, Turn};

/// How many of the channel's newest messages are looked through for an unrecorded post.
const LOOK_BACK: u8 = 50;
/// How many unrecorded posts one resume looks for (each needs a read of the channel).
const MAX_FOUND: usize = 4;

/// What an earlier run of this turn delivered: its sticker uses the turn's allowance again
/// (SPEC T9), and the returned count of messages is not posted again.
pub async fn delivered_before(turn: &Turn, ports: &Ports, trigger: MessageId) -> Delivered {
    let mut records = match ports.outcomes.deliveries(turn.id).await {
        Ok(records) => records,
        Err(error) => {
            tracing::warn!(turn = %turn.id, %error, "stored deliveries unavailable");
            return Delivered::default();
        }
    };
    let mut delivered = Delivered::from_records(&records);
    // Each post found fills its gap; the records after it may then count too.
    for _ in 0..MAX_FOUND {
        let Some(found) = find_unrecorded(turn, ports, trigger, &delivered).await else {
            break;
        };
        match found {
            Found::Posted(piece) => {
                remember_delivery(ports, turn.id, piece).await;
                records.push(piece);
                delivered = Delivered::from_records(&records);
            }
            Found::Unknown => {
                delivered.pieces += 1;
                delivered.unrecorded = None;
                break;
            }
        }
    }
    if let Some(expression) = delivered.expression {
        turn.settle_expression(ExpressionState::Delivered(expression));
    }
    if delivered.pieces > 0 {
        turn.mark_delivered();
    }
    delivered
}

/// Loads outcomes a previous run of this turn stored, as completed by an earlier invocation.
pub async fn seed_stored_outcomes(turn: &Turn, store: &dyn OutcomeStore) {
    match store.outcomes(turn.id).await {
        Ok(stored) => turn.restore_outcomes(
            stored
                .into_iter()
                .map(|o| (o.identity, o.response, o.invocation)),
        ),
        Err(error) => {
            tracing::warn!(turn = %turn.id, %error, "stored tool outcomes unavailable");
        }
    }
}

/// What became of a message about to be sent when the earlier run stopped.
enum Found {
    /// It is in the channel: its record.
    Posted(Delivery),
    /// The channel could not be read.
    Unknown,
}

/// The earlier run was about to send its next message when it stopped, and its post was never
/// recorded: the post may be in the channel (a webhook takes no nonce, and Discord forgets a
/// nonce after minutes). The bot's newest posts after the last recorded one (or the trigger)
/// are looked through for its text. When the channel cannot be read the message counts as
/// said, as an unconfirmed send does: a repeat is worse than a gap. `None`: nothing to look
/// for, or not found (it is sent).
async fn find_unrecorded(
    turn: &Turn,
    ports: &Ports,
    trigger: MessageId,
    delivered: &Delivered,
) -> Option<Found> {
    let digest = delivered.unrecorded?;
    let after = delivered
        .last_piece
        .map_or(trigger, |last| last.max(trigger));
    let channel = turn.scope.channel;
    let page = ports
        .history
        .older(channel, None, LOOK_BACK, &turn.persona_name)
        .await;
    let page = match page {
        Ok(page) => page,
        Err(error) => {
            tracing::warn!(turn = %turn.id, %error, "could not look for a message sent before the restart; it counts as said");
            return Some(Found::Unknown);
        }
    };
    let Some(post) = page
        .into_iter()
        .find(|m| m.from_bot && m.id > after && text_digest(&m.content) == digest)
    else {
        tracing::debug!(turn = %turn.id, "the message about to be sent before the restart is not in the channel; it is sent");
        return None;
    };
    tracing::info!(turn = %turn.id, message = %post.id, "a message posted before the restart was found in the channel; not posted again");
    Some(Found::Posted(Delivery::Piece {
        index: delivered.pieces,
        message: post.id,
    }))
}
