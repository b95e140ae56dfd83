//! The watchdog: a tool runs raced against its own timeout and the turn's kill signal (SPEC T5).
//! The channel's active tool name is set for the run and cleared however the race ends.
//!
//! A tool told to stop (its token cancelled) gets a short grace to come back, so what it did is
//! known rather than guessed (feature row 30): its result means its work is done, an error that
//! it was cancelled, and still running after the grace that it ignored cancellation and may
//! still finish (it is dropped; nothing is rolled back).

use std::time::Duration;

use crate::domain::turn::ToolEnding;
use crate::tools::{PreparedCall, ToolError, ToolOutput, ToolSession};

/// How long a tool told to stop has to come back before it is dropped as one that may still
/// finish. After `/kill` it is at most half of `turn.kill_grace_ms`, so the stopped turn still
/// records and reports it within the kill's own grace.
pub const STOP_GRACE: Duration = Duration::from_secs(1);

/// How the race ended.
#[derive(Debug)]
pub enum Watched {
    Finished(Result<ToolOutput, ToolError>),
    /// The tool outlived its timeout and was told to stop; how it ended within its grace.
    TimedOut(Stopped),
    /// `/kill` (or the process stopping) fired; how the tool ended within its grace.
    Killed(Stopped),
}

/// How a tool told to stop ended within its grace.
#[derive(Debug)]
pub enum Stopped {
    /// It came back with its result: its work is done.
    Done(ToolOutput),
    /// It came back with an error: it was cancelled.
    Cancelled,
    /// Still running after the grace: dropped, its work may still happen.
    MayStillFinish,
}

impl Stopped {
    pub fn ending(&self) -> ToolEnding {
        match self {
            Self::Done(_) => ToolEnding::Done,
            Self::Cancelled => ToolEnding::Cancelled,
            Self::MayStillFinish => ToolEnding::MayStillFinish,
        }
    }
}

/// Runs `call` under the watchdog.
pub async fn run_under_watchdog(
    session: &ToolSession,
    call: &PreparedCall,
    timeout: Duration,
) -> Watched {
    let turn = session.turn();
    let _active = turn.channel.mark_tool(call.name);
    // The tool has its own timeout: the stale-turn guard leaves it alone (SPEC C10).
    let _guarded = turn.progress.guard();
    // The tool's own token: cancelled by `/kill` (it is a child of the turn's) and by a timeout.
    let cancel = turn.stop.kill_token().child_token();
    let dispatch = session.dispatch(call, &cancel);
    tokio::pin!(dispatch);
    let killed = tokio::select! {
        biased;
        () = turn.stop.kill_token().cancelled() => true,
        result = &mut dispatch => {
            cancel.cancel();
            return Watched::Finished(result);
        }
        () = tokio::time::sleep(timeout) => false,
    };
    cancel.cancel();
    let grace = if killed {
        let kill_grace = Duration::from_millis(session.env().config.turn.kill_grace_ms);
        STOP_GRACE.min(kill_grace / 2)
    } else {
        STOP_GRACE
    };
    let stopped = match tokio::time::timeout(grace, dispatch).await {
        Ok(Ok(output)) => Stopped::Done(output),
        Ok(Err(_)) => Stopped::Cancelled,
        Err(_) => Stopped::MayStillFinish,
    };
    if killed {
        Watched::Killed(stopped)
    } else {
        Watched::TimedOut(stopped)
    }
}
