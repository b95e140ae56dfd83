//! Tracing set-up. Call [`init`] once, early in `main`; later calls are no-ops, so tests may call
//! it freely. The filter comes from `RUST_LOG` when set, else from the configured default.

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber (compact text to stderr; colours only on a terminal, so a log
/// file, `docker logs` or journald get plain text). Returns `false` when one was already
/// installed.
pub fn init(default_filter: &str) -> bool {
    use std::io::IsTerminal as _;
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .compact()
        .try_init()
        .is_ok()
}

/// For tests: warnings and errors, through the test harness's capture (shown only when a test
/// fails). Later calls are no-ops.
pub fn init_for_tests() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::new("warn"))
        .with_test_writer()
        .try_init();
}
