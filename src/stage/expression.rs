//! Expression (sticker) delivery: at most one per persona turn (SPEC T9). The allowance lives on
//! the turn, so it survives passes, restarts, key rotation, fallback and retries.

use crate::domain::ports::{ChatSink, Sticker, StickerSend, delivery_key};
use crate::domain::turn::{ExpressionState, Turn};

/// What happened to a sticker the model selected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StickerDelivery {
    /// Posted and confirmed; the turn's allowance is used.
    Sent,
    /// This same sticker was already posted this turn; nothing was posted.
    AlreadyDelivered,
    /// A different sticker was already posted this turn; nothing was posted.
    LimitReached,
    /// Discord definitely refused; nothing was posted and the allowance is free again.
    Refused { reason: String },
    /// The send was not confirmed: it may be posted. Every later send of the turn is blocked.
    Unconfirmed,
    /// An earlier send was not confirmed: nothing may be sent this turn.
    Blocked,
}

/// Whether the turn may still send anything: false once a send went unconfirmed. Key rotation,
/// fallback and review check this before sending again.
pub fn sends_allowed(turn: &Turn) -> bool {
    turn.expression() != ExpressionState::Blocked
}

/// Delivers `sticker` under the turn's allowance.
pub async fn deliver(turn: &Turn, sink: &dyn ChatSink, sticker: &Sticker) -> StickerDelivery {
    match turn.expression() {
        ExpressionState::Blocked => return StickerDelivery::Blocked,
        ExpressionState::Delivered { sticker_id } if sticker_id == sticker.id => {
            return StickerDelivery::AlreadyDelivered;
        }
        ExpressionState::Delivered { .. } => return StickerDelivery::LimitReached,
        ExpressionState::Available => {}
    }
    // Calls in a turn run one at a time, so the allowance cannot change during the send.
    // The same key in every run of the turn: a resumed turn's sticker is not shown twice.
    let key = delivery_key(turn.id, "sticker");
    let sent = sink
        .send_sticker(turn.scope.channel, sticker, Some(&key))
        .await;
    match sent {
        StickerSend::Confirmed => {
            turn.settle_expression(ExpressionState::Delivered {
                sticker_id: sticker.id,
            });
            turn.mark_delivered();
            StickerDelivery::Sent
        }
        StickerSend::Refused { reason } => StickerDelivery::Refused { reason },
        StickerSend::Unconfirmed => {
            turn.settle_expression(ExpressionState::Blocked);
            StickerDelivery::Unconfirmed
        }
    }
}
