//! Expression delivery, a sticker or a reaction: at most one per persona turn (SPEC T9, E1). The
//! allowance lives on the turn, so it survives passes, restarts, key rotation, fallback and
//! retries.

use crate::domain::ports::{ChatSink, Delivery, Expression, ExpressionSend, delivery_key};
use crate::domain::turn::{ExpressionState, Turn};

/// What happened to an expression the model chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpressionDelivery {
    /// Delivered and confirmed; the turn's allowance is used.
    Sent,
    /// This same expression was already delivered this turn; nothing was sent.
    AlreadyDelivered,
    /// A different expression was already delivered this turn; nothing was sent.
    LimitReached,
    /// Discord definitely refused; nothing was sent and the allowance is free again.
    Refused { reason: String },
    /// The send was not confirmed: it may be delivered. Every later send of the turn is blocked.
    Unconfirmed,
    /// An earlier send was not confirmed: nothing may be sent this turn.
    Blocked,
}

/// Whether the turn may still send anything: false once a send went unconfirmed. Key rotation,
/// fallback and review check this before sending again.
pub fn sends_allowed(turn: &Turn) -> bool {
    turn.expression() != ExpressionState::Blocked
}

/// Delivers `expression` under the turn's allowance.
pub async fn deliver(
    turn: &Turn,
    sink: &dyn ChatSink,
    expression: &Expression,
) -> ExpressionDelivery {
    match turn.expression() {
        ExpressionState::Blocked => return ExpressionDelivery::Blocked,
        ExpressionState::Delivered(id) if id == expression.id() => {
            return ExpressionDelivery::AlreadyDelivered;
        }
        ExpressionState::Delivered(_) => return ExpressionDelivery::LimitReached,
        ExpressionState::Available => {}
    }
    // Calls in a turn run one at a time, so the allowance cannot change during the send.
    let channel = turn.scope.channel;
    let sent = match expression {
        Expression::Sticker(sticker) => {
            // The same key in every run of the turn: a resumed turn's sticker is not shown twice.
            let key = delivery_key(turn.id, "sticker");
            sink.send_sticker(channel, sticker, Some(&key)).await
        }
        // Discord keeps one reaction per emoji and user: a resumed turn's is not shown twice.
        Expression::Reaction { message, emoji } => sink.react(channel, *message, emoji).await,
    };
    match sent {
        ExpressionSend::Confirmed => {
            turn.settle_expression(ExpressionState::Delivered(expression.id()));
            turn.mark_delivered();
            ExpressionDelivery::Sent
        }
        ExpressionSend::Refused { reason } => ExpressionDelivery::Refused { reason },
        ExpressionSend::Unconfirmed => {
            turn.settle_expression(ExpressionState::Blocked);
            ExpressionDelivery::Unconfirmed
        }
    }
}

/// The record of a delivered expression, which a resumed turn reads (SPEC D5).
pub fn record(expression: &Expression) -> Delivery {
    match expression {
        Expression::Sticker(sticker) => Delivery::Sticker {
            sticker: sticker.id,
        },
        Expression::Reaction { emoji, .. } => Delivery::Reaction { emoji: emoji.key() },
    }
}
