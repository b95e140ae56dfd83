//! The reply review of Response Drafting (SPEC C8): the held draft passes, or gets one revision
//! with the reviewer's findings; the latest draft is delivered after at most two reviews, or at
//! once when the reviewer is unavailable. `/kill` or a follow-up discards it.

use super::TurnRun;
use super::attempts::PassKind;
use crate::domain::ports::ChatMessage;
use crate::domain::review::{NoteVerdict, ReviewNote, ReviewOutcome, ReviewVerdict};
use crate::domain::turn::TurnStatus;
use crate::engine::stream::PassEnd;
use crate::tools::Reviewer;

impl TurnRun<'_> {
    /// Reviews, revises and delivers the held reply; `Err` with the status when a stop request
    /// discarded it.
    pub(super) async fn settle_held_reply(&mut self) -> Result<(), TurnStatus> {
        let mut draft = self.delivery.take_held();
        let Some(reviewer) = self.deps.env.reviewer.clone() else {
            self.delivery.release(&draft).await;
            return Ok(());
        };
        for round in 1..=2 {
            if draft.trim().is_empty() || self.turn.review(|r| r.unavailable) {
                break;
            }
            let Some(findings) = self.review_draft(reviewer.as_ref(), &draft).await? else {
                break;
            };
            if round == 2 {
                break;
            }
            if let Some(revised) = self.revise(&draft, &findings).await? {
                draft = revised;
            }
        }
        if self.turn.stop.is_killed() {
            return Err(TurnStatus::StoppedByUser);
        }
        self.delivery.release(&draft).await;
        Ok(())
    }

    /// Asks the reviewer about the draft and notes the verdict: `None` when it goes out as
    /// written (passed, or the reviewer is unavailable), else the findings to revise it with.
    async fn review_draft(
        &self,
        reviewer: &dyn Reviewer,
        draft: &str,
    ) -> Result<Option<Vec<String>>, TurnStatus> {
        let turn = self.turn;
        let outcome = tokio::select! {
            biased;
            () = turn.stop.kill_token().cancelled() => return Err(TurnStatus::StoppedByUser),
            () = turn.stop.follow_up() => return Err(TurnStatus::FollowUpInterrupt),
            outcome = reviewer.review_reply(&self.session, draft) => outcome,
        };
        let note = |verdict, findings: &[String]| ReviewNote::new("reply", verdict, findings);
        match outcome {
            ReviewOutcome::Verdict(ReviewVerdict::Pass) => {
                turn.review(|r| r.notes.push(note(NoteVerdict::Pass, &[])));
                Ok(None)
            }
            ReviewOutcome::Unavailable(why) => {
                tracing::warn!(turn = %turn.id, %why, "reviewer unavailable; the draft goes out as written");
                turn.review(|r| {
                    r.notes.push(note(NoteVerdict::Unavailable, &[]));
                    r.unavailable = true;
                });
                Ok(None)
            }
            ReviewOutcome::Verdict(ReviewVerdict::Reject { findings, .. }) => {
                let revise = note(NoteVerdict::Revise, &findings);
                turn.review(|r| r.notes.push(revise));
                Ok(Some(findings))
            }
        }
    }

    /// One revision pass with the findings: the revised draft, or `None` when the pass wrote
    /// none (a failed revision keeps the draft it had).
    async fn revise(
        &mut self,
        draft: &str,
        findings: &[String],
    ) -> Result<Option<String>, TurnStatus> {
        let tail = [
            ChatMessage::Assistant {
                content: Some(draft.to_owned()),
                tool_calls: Vec::new(),
            },
            ChatMessage::System {
                content: format!(
                    "A reviewer asked you to revise that reply before it is posted. Findings: {}. Write the whole reply again, revised.",
                    findings.join("; ")
                ),
            },
        ];
        self.report.passes += 1;
        match self.run_pass(PassKind::Revision(&tail)).await {
            PassEnd::Text => {
                let revised = self.delivery.take_held();
                Ok((!revised.trim().is_empty()).then_some(revised))
            }
            PassEnd::Stopped(status) => Err(status),
            PassEnd::Failed(_) | PassEnd::ToolCalls(_) => {
                self.delivery.take_held();
                Ok(None)
            }
        }
    }
}
