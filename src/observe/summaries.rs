//! The thought log's "Turn summary" cards (SPEC T11): each finished turn of a public server
//! channel, as its server's `summaries` setting chooses: `problems` (the default) posts only turns
//! that did not end cleanly ([`troubled`]), `all` every turn, `off` none. The thought-log adapter
//! drops a summary rather than make a notice wait behind it.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::domain::ports::{SettingsStore, ThoughtLog};
use crate::domain::thought_log::Notice;
use crate::domain::turn::TurnStatus;
use crate::engine::orchestrator::{Orchestrator, TurnFinished, next_finished};
use crate::engine::passes::{TurnEnd, TurnReport};

/// Whether a turn did not end cleanly: anything but an answer (or a turn a run before a restart
/// had finished) is a problem: an error, a provider failure, an empty or malformed answer, a
/// pass or failure limit, `/kill`, an unconfirmed delivery, a release, review stopping the tool
/// chain. A follow-up's interrupt is none: the asker's next message carries the conversation.
pub fn troubled(report: &TurnReport) -> bool {
    let answered = matches!(report.end, TurnEnd::Answered | TurnEnd::AlreadyFinished);
    match report.status {
        TurnStatus::FollowUpInterrupt => false,
        TurnStatus::Completed => !answered,
        TurnStatus::StoppedByUser
        | TurnStatus::DeliveryUnconfirmed
        | TurnStatus::Error
        | TurnStatus::HeldResponse => true,
    }
}

/// Posts the summary of each finished turn its server's setting asks for, until `stop`.
pub async fn post_summaries(
    orchestrator: Orchestrator,
    thought_log: Arc<dyn ThoughtLog>,
    settings: Arc<dyn SettingsStore>,
    stop: CancellationToken,
) {
    let mut finished = orchestrator.subscribe();
    drop(orchestrator);
    while let Some(turn) = next_finished(&mut finished, &stop, "turn summaries").await {
        let Some(server) = turn.scope.thought_log_server() else {
            continue;
        };
        // Settings that cannot be read post nothing here: the thought log reads them too.
        let Ok(settings) = settings.settings(server).await else {
            continue;
        };
        if settings.summaries.posts(troubled(&turn.report)) {
            thought_log.post(server, summary(&turn)).await;
        }
    }
}

/// A finished turn as the thought log's summary card.
fn summary(turn: &TurnFinished) -> Notice {
    let report = &turn.report;
    Notice::TurnSummary {
        channel: turn.channel,
        status: report.status.as_str().to_owned(),
        passes: report.passes,
        tool_calls: report.tool_calls,
        duration_ms: u64::try_from(turn.elapsed.as_millis()).unwrap_or(u64::MAX),
        prompt_tokens: report.usage.prompt,
        completion_tokens: report.usage.completion,
        reviews: report
            .reviews
            .iter()
            .map(|r| {
                if r.findings.is_empty() {
                    format!("{}: {}", r.subject, r.verdict)
                } else {
                    format!("{}: {} ({})", r.subject, r.verdict, r.findings.join("; "))
                }
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ports::SummaryMode;

    fn report(status: TurnStatus, end: TurnEnd) -> TurnReport {
        TurnReport {
            status,
            end,
            passes: 1,
            tool_calls: 0,
            messages_sent: 1,
            usage: Default::default(),
            reviews: Vec::new(),
        }
    }

    // SPEC T11 (summaries by choice): a clean answer (or a follow-up's interrupt) is no problem;
    // errors, provider failures, limits, stops, releases and held responses are.
    #[test]
    fn only_turns_that_did_not_end_cleanly_are_problems() {
        use TurnStatus::*;
        let clean = [
            report(Completed, TurnEnd::Answered),
            report(Completed, TurnEnd::AlreadyFinished),
            report(FollowUpInterrupt, TurnEnd::Stopped),
        ];
        let problems = [
            report(Error, TurnEnd::ProviderFailed { code: "timeout" }),
            report(Error, TurnEnd::Empty),
            report(Error, TurnEnd::Crashed),
            report(Completed, TurnEnd::PassLimit),
            report(Completed, TurnEnd::FailureLimit),
            report(Completed, TurnEnd::HeldResponse),
            report(StoppedByUser, TurnEnd::Stopped),
            report(StoppedByUser, TurnEnd::Released),
            report(DeliveryUnconfirmed, TurnEnd::Stopped),
        ];
        for r in &clean {
            assert!(!troubled(r), "{r:?}");
            assert!(!SummaryMode::Problems.posts(troubled(r)), "{r:?}");
            assert!(SummaryMode::All.posts(troubled(r)), "{r:?}");
        }
        for r in &problems {
            assert!(troubled(r), "{r:?}");
            assert!(SummaryMode::Problems.posts(troubled(r)), "{r:?}");
            assert!(!SummaryMode::Off.posts(troubled(r)), "{r:?}");
        }
    }
}
