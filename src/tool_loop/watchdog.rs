//! The watchdog: a tool runs raced against its own timeout and the turn's kill signal (SPEC T5).
//! The channel's active tool name is set for the run and cleared however the race ends.

use std::time::Duration;

use crate::tools::{PreparedCall, ToolError, ToolOutput, ToolSession};

/// How the race ended.
#[derive(Debug)]
pub enum Watched {
    Finished(Result<ToolOutput, ToolError>),
    /// The tool outlived its timeout. It was told to stop, but a tool that ignores cancellation
    /// may still finish its external work: the effect is unknown, never rolled back.
    TimedOut,
    /// `/kill` fired.
    Killed,
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
    let watched = tokio::select! {
        biased;
        () = turn.stop.kill_token().cancelled() => Watched::Killed,
        result = session.dispatch(call, &cancel) => Watched::Finished(result),
        () = tokio::time::sleep(timeout) => Watched::TimedOut,
    };
    cancel.cancel();
    watched
}
