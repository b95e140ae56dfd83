//! The turn subscriber: each finished turn is one `info` line and a few metrics.

use std::collections::HashMap;

use tokio::sync::broadcast::Receiver;
use tokio_util::sync::CancellationToken;

use super::{QUEUE_WAITING, TURN_SECONDS, TURN_TOKENS, TURNS, as_f64};
use crate::domain::scope::ChannelId;
use crate::engine::orchestrator::{TurnFinished, next_finished};

/// Logs and counts each finished turn until `stop`. Subscribe before turns can finish (before
/// queued messages are recovered), so none is missed.
pub async fn watch(mut finished: Receiver<TurnFinished>, stop: CancellationToken) {
    let mut waiting = Waiting::default();
    while let Some(turn) = next_finished(&mut finished, &stop, "turn lines and metrics").await {
        log(&turn);
        record(&turn, &mut waiting);
    }
}

/// The turn's line: no message text, no names but the persona's id.
pub fn log(turn: &TurnFinished) {
    let report = &turn.report;
    tracing::info!(
        channel = %turn.channel,
        turn = %turn.turn,
        persona = %turn.scope.persona,
        status = %report.status.as_str(),
        passes = report.passes,
        tool_calls = report.tool_calls,
        prompt_tokens = report.usage.prompt,
        completion_tokens = report.usage.completion,
        duration_ms = u64::try_from(turn.elapsed.as_millis()).unwrap_or(u64::MAX),
        queued = turn.queued,
        "turn finished"
    );
}

fn record(turn: &TurnFinished, waiting: &mut Waiting) {
    let report = &turn.report;
    metrics::counter!(TURNS, "status" => report.status.as_str()).increment(1);
    metrics::histogram!(TURN_SECONDS).record(turn.elapsed.as_secs_f64());
    metrics::counter!(TURN_TOKENS, "kind" => "prompt").increment(report.usage.prompt.into());
    metrics::counter!(TURN_TOKENS, "kind" => "completion")
        .increment(report.usage.completion.into());
    metrics::gauge!(QUEUE_WAITING).set(as_f64(waiting.update(turn.channel, turn.queued)));
}

/// Each channel's waiting messages as of its last turn end; channels with none are not kept.
#[derive(Default)]
struct Waiting {
    channels: HashMap<ChannelId, usize>,
    total: usize,
}

impl Waiting {
    /// Records `channel`'s count and returns the total.
    fn update(&mut self, channel: ChannelId, queued: usize) -> usize {
        let before = if queued == 0 {
            self.channels.remove(&channel)
        } else {
            self.channels.insert(channel, queued)
        };
        self.total = self.total - before.unwrap_or(0) + queued;
        self.total
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::*;
    use crate::domain::ports::TokenUsage;
    use crate::domain::scope::{MessageId, PersonaId, Scope, ServerId, UserId, Visibility};
    use crate::domain::turn::{TurnId, TurnStatus};
    use crate::engine::passes::{TurnEnd, TurnReport};

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn finished() -> TurnFinished {
        TurnFinished {
            channel: ChannelId(200),
            message: MessageId(7),
            turn: TurnId::for_message(ChannelId(200), MessageId(7)),
            scope: Scope {
                server: Some(ServerId(100)),
                channel: ChannelId(200),
                user: UserId(300),
                persona: PersonaId("aria".into()),
                visibility: Visibility::Public,
            },
            report: TurnReport {
                status: TurnStatus::Completed,
                end: TurnEnd::Answered,
                passes: 2,
                tool_calls: 1,
                messages_sent: 1,
                usage: TokenUsage {
                    prompt: 120,
                    completion: 34,
                },
                reviews: Vec::new(),
            },
            elapsed: Duration::from_millis(1500),
            queued: 3,
        }
    }

    // One line per turn at the default level (info), with every field an operator reads.
    #[test]
    fn a_finished_turn_is_one_info_line_with_its_numbers() {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || log(&finished()));
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        for field in [
            " INFO ",
            "turn finished",
            "channel=200",
            "persona=aria",
            "status=completed",
            "passes=2",
            "tool_calls=1",
            "prompt_tokens=120",
            "completion_tokens=34",
            "duration_ms=1500",
            "queued=3",
        ] {
            assert!(text.contains(field), "{field} missing: {text}");
        }
    }

    #[test]
    fn waiting_messages_sum_each_channels_last_count() {
        let mut waiting = Waiting::default();
        assert_eq!(waiting.update(ChannelId(1), 3), 3);
        assert_eq!(waiting.update(ChannelId(2), 2), 5);
        assert_eq!(waiting.update(ChannelId(1), 1), 3);
        assert_eq!(waiting.update(ChannelId(2), 0), 1);
        assert_eq!(waiting.update(ChannelId(1), 0), 0);
        assert!(waiting.channels.is_empty());
    }
}
