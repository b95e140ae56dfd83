//! How the process stops: one root cancellation token, the signals that trip it (Ctrl-C, and
//! SIGTERM on unix, which service managers and container runtimes send), and one task tracker
//! that every long-lived task of `run` and `worker` joins, so stopping waits for all of them.

use std::future::Future;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The root token and the tracker of everything the app spawned.
#[derive(Debug, Clone, Default)]
pub struct Shutdown {
    token: CancellationToken,
    tasks: TaskTracker,
}

impl Shutdown {
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancelled when the process stops; long-lived tasks watch it (or a child of it).
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// Starts a task the stop waits for.
    pub fn spawn<F>(&self, task: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.tasks.spawn(task)
    }

    /// Trips the token, then waits up to `within` for every tracked task. Returns whether all
    /// ended in time.
    pub async fn stop(&self, within: Duration) -> bool {
        self.token.cancel();
        self.tasks.close();
        tokio::time::timeout(within, self.tasks.wait())
            .await
            .is_ok()
    }
}

/// Waits for Ctrl-C or (on unix) SIGTERM. A signal that cannot be listened for is logged once and
/// the other still counts.
pub async fn signalled() {
    let ctrl_c = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::warn!(%error, "cannot listen for Ctrl-C; SIGTERM still stops the bot");
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        () = ctrl_c => tracing::info!("Ctrl-C: shutting down"),
        () = terminate() => tracing::info!("SIGTERM: shutting down"),
    }
}

#[cfg(unix)]
async fn terminate() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            term.recv().await;
        }
        Err(error) => {
            tracing::warn!(%error, "cannot listen for SIGTERM; Ctrl-C still stops the bot");
            std::future::pending::<()>().await;
        }
    }
}

#[cfg(not(unix))]
async fn terminate() {
    std::future::pending::<()>().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    // A stop cancels the token and waits for every tracked task, and reports one that hangs.
    #[tokio::test(start_paused = true)]
    async fn stop_waits_for_tracked_tasks_and_reports_a_hung_one() {
        let shutdown = Shutdown::new();
        let token = shutdown.token().clone();
        let done = shutdown.spawn(async move { token.cancelled().await });
        assert!(shutdown.stop(Duration::from_secs(1)).await);
        assert!(done.is_finished());

        let shutdown = Shutdown::new();
        shutdown.spawn(std::future::pending::<()>());
        assert!(!shutdown.stop(Duration::from_secs(1)).await);
    }
}
