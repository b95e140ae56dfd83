//! Status reactions on the message a turn answers, where a server turned them on (SPEC E1): 👀
//! when the turn starts, ⚙️ once a tool is seen running (it is looked for every 200 ms, so a
//! quicker tool may pass unshown), both taken off when the turn has ended (its reply is up by
//! then); ❌ stays on a failed turn. Each is one request at most, in order, through the
//! sink (and so through the REST client's rate-limit scheduler); a refused first reaction (no
//! permission to react here) ends the rest, and an unconfirmed one is taken off like the others.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::domain::ports::{ChatSink, Emoji, ExpressionSend};
use crate::domain::scope::{ChannelId, MessageId};
use crate::domain::turn::{ExpressionId, ExpressionState, Turn, TurnStatus};

/// While the turn runs.
pub const WORKING: &str = "👀";
/// Once a tool has run.
pub const TOOL: &str = "⚙️";
/// Kept on a failed turn.
pub const FAILED: &str = "❌";

/// How often the follower looks whether a tool has run.
const LOOK_EVERY: Duration = Duration::from_millis(200);

/// Tells the follower how the turn ended (a dropped sender: it ended, not failed).
pub type TurnEnded = watch::Sender<Option<TurnStatus>>;

/// Follows `turn` until `ended` says how it ended; see the module's text.
pub async fn follow(
    sink: Arc<dyn ChatSink>,
    channel: ChannelId,
    message: MessageId,
    turn: Arc<Turn>,
    mut ended: watch::Receiver<Option<TurnStatus>>,
) {
    let working = Emoji::Unicode(WORKING.to_owned());
    // An unconfirmed one may be there: it is taken off at the end like a confirmed one.
    if let ExpressionSend::Refused { reason } = sink.react(channel, message, &working).await {
        tracing::debug!(%channel, %reason, "status reaction refused; none follow for this turn");
        return;
    }
    let mut shown = vec![working];
    let mut tool_shown = false;
    let status = loop {
        if let Some(status) = *ended.borrow_and_update() {
            break Some(status);
        }
        if !tool_shown && (turn.channel.active_tool().is_some() || turn.in_tool_chain()) {
            tool_shown = true;
            let tool = Emoji::Unicode(TOOL.to_owned());
            let added = sink.react(channel, message, &tool).await;
            if !matches!(added, ExpressionSend::Refused { .. }) {
                shown.push(tool);
            }
            continue;
        }
        tokio::select! {
            changed = ended.changed() => {
                if changed.is_err() {
                    break *ended.borrow();
                }
            }
            () = tokio::time::sleep(LOOK_EVERY) => {}
        }
    };
    let failed = matches!(
        status,
        Some(TurnStatus::Error | TurnStatus::DeliveryUnconfirmed)
    );
    if failed {
        let _ = sink
            .react(channel, message, &Emoji::Unicode(FAILED.to_owned()))
            .await;
    }
    for emoji in shown.iter().rev() {
        // The persona's own reaction (SPEC E1) stays, even when it is a status emoji.
        if turn.expression() == ExpressionState::Delivered(ExpressionId::Reaction(emoji.key())) {
            continue;
        }
        if let Err(error) = sink.unreact(channel, message, emoji).await {
            tracing::debug!(%channel, %error, "status reaction not removed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::scope::{PersonaId, Scope, UserId, Visibility};
    use crate::locale::Locale;
    use crate::testkit::RecordingSink;

    // SPEC E1: a status mark whose request went unconfirmed may be there: it is taken off at
    // the end like a confirmed one, and a completed turn leaves no mark.
    #[tokio::test]
    async fn an_unconfirmed_mark_is_taken_off_too() {
        let sink = Arc::new(RecordingSink::default());
        sink.script_expression(ExpressionSend::Unconfirmed);
        let scope = Scope {
            server: None,
            channel: ChannelId(1),
            user: UserId(2),
            persona: PersonaId("p".into()),
            visibility: Visibility::Dm,
        };
        let turn = Arc::new(Turn::new(scope, Locale::En));
        let (ended, watch) = watch::channel(None);
        let follower = tokio::spawn(follow(
            sink.clone(),
            ChannelId(1),
            MessageId(3),
            turn,
            watch,
        ));
        ended.send_replace(Some(TurnStatus::Completed));
        follower.await.expect("the follower ends");
        assert!(sink.reactions().is_empty(), "{:?}", sink.reactions());
    }
}
