//! The review gate of the tool-call stage (SPEC R1-R5): with drafting On, the turn's review
//! ledger decides whether a prepared request runs, is refused (again), ends the turn through the
//! held response, or goes to the reviewer first; each verdict is noted for the turn summary.
//!
//! The gate decides only: it writes no event and builds no payload. The stage turns a
//! [`Rejection`] into its one `review_rejected` entry. The reviewer itself (a model in its
//! own role) is `review.rs`; this file is the stage's side of it.

use crate::domain::review::{
    Gate, NoteVerdict, ReviewLedger, ReviewNote, ReviewOutcome, ReviewVerdict,
};
use crate::domain::turn::TurnStatus;
use crate::tools::{PreparedCall, RegisteredTool, Reviewer, ToolSession};

/// What the gate decided for one prepared request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Review {
    /// The request may run.
    Run,
    /// End the turn with this status: a stop during review, or the held-response path (R3).
    Abort(TurnStatus),
    /// The request is refused and nothing runs (R2).
    Rejected(Rejection),
}

/// Why the request was refused, and whether the author may correct it once (R3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Rejection {
    pub findings: Vec<String>,
    pub correction_allowed: bool,
}

/// Reviews `prepared` (exactly what would run) when the server checks this kind of call and a
/// reviewer is configured; otherwise it runs.
pub(super) async fn review(
    session: &ToolSession,
    prepared: &PreparedCall,
    tool: &RegisteredTool,
) -> Review {
    let turn = session.turn();
    let checked = turn.review.tool_calls || (tool.public_output && turn.review.replies);
    let Some(reviewer) = session.env().reviewer.clone() else {
        return Review::Run;
    };
    if !checked {
        return Review::Run;
    }
    let gate = turn.review(|r| r.gate(prepared.key()));
    match gate {
        Gate::Proceed => Review::Run,
        Gate::Hold => Review::Abort(TurnStatus::HeldResponse),
        Gate::RejectAgain { findings } => Review::Rejected(Rejection {
            findings,
            correction_allowed: !turn.review(|r| r.unavailable),
        }),
        Gate::Review => ask(session, reviewer.as_ref(), prepared).await,
    }
}

/// Asks the reviewer, unless `/kill` or (drafting being On) a follow-up comes first (T2, C8).
async fn ask(session: &ToolSession, reviewer: &dyn Reviewer, prepared: &PreparedCall) -> Review {
    let turn = session.turn();
    let asked = tokio::select! {
        biased;
        () = turn.stop.kill_token().cancelled() => {
            return Review::Abort(TurnStatus::StoppedByUser);
        }
        () = turn.stop.follow_up() => return Review::Abort(TurnStatus::FollowUpInterrupt),
        asked = reviewer.review_request(session, prepared) => asked,
    };
    match asked {
        ReviewOutcome::Verdict(ReviewVerdict::Pass) => {
            turn.review(|r| note(r, prepared, NoteVerdict::Pass, &[]));
            Review::Run
        }
        ReviewOutcome::Verdict(ReviewVerdict::Reject {
            findings,
            correction_allowed,
        }) => {
            let correction_allowed = turn.review(|ledger| {
                note(ledger, prepared, NoteVerdict::Reject, &findings);
                ledger.reject(prepared.key(), &findings, correction_allowed)
            });
            Review::Rejected(Rejection {
                findings,
                correction_allowed,
            })
        }
        ReviewOutcome::Unavailable(why) => {
            tracing::warn!(turn = %turn.id, %why, "reviewer unavailable; review ends for this turn");
            turn.review(|r| end_review(r, prepared))
        }
    }
}

/// The reviewer could not answer: review ends for the turn (R5). Earlier rejections stand, so a
/// changed form of a rejected tool is refused again; anything else now runs as ordinary.
fn end_review(ledger: &mut ReviewLedger, prepared: &PreparedCall) -> Review {
    note(ledger, prepared, NoteVerdict::Unavailable, &[]);
    ledger.unavailable = true;
    match ledger.gate(prepared.key()) {
        Gate::RejectAgain { findings } => Review::Rejected(Rejection {
            findings,
            correction_allowed: false,
        }),
        _ => Review::Run,
    }
}

/// Notes the verdict for the turn summary.
fn note(
    ledger: &mut ReviewLedger,
    prepared: &PreparedCall,
    verdict: NoteVerdict,
    findings: &[String],
) {
    ledger
        .notes
        .push(ReviewNote::new(prepared.name, verdict, findings));
}
