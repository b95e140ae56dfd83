//! Tracing set-up. Call [`init`] once, early in `main`; later calls are no-ops, so tests may call
//! it freely. The filter comes from `RUST_LOG` when set, else from the configured default; either
//! way the lines that could quote a secret are held back ([`QUIET`]).

use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::Directive;

/// Targets held at `error` whatever the filter says (SPEC D13), each a module's own target, so
/// no directive can name it more narrowly. sqlx warns of a database URL parameter it does not
/// know with its value (`?pwd=...`), and of a `.pgpass` line it cannot read with the line.
pub const QUIET: &[&str] = &[
    "sqlx_postgres::options::parse=error",
    "sqlx_postgres::options::pgpass=error",
];

/// `filter` with [`QUIET`] added last, so it wins over whatever `filter` says of those targets.
fn quieted(mut filter: EnvFilter) -> EnvFilter {
    for directive in QUIET {
        match directive.parse::<Directive>() {
            Ok(directive) => filter = filter.add_directive(directive),
            Err(error) => unreachable!("a fixed directive parses: {error}"),
        }
    }
    filter
}

/// Installs the global subscriber (compact text to stderr; colours only on a terminal, so a log
/// file, `docker logs` or journald get plain text). Returns `false` when one was already
/// installed.
pub fn init(default_filter: &str) -> bool {
    use std::io::IsTerminal as _;
    let filter = quieted(
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter)),
    );
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
        .with_env_filter(quieted(EnvFilter::new("warn")))
        .with_test_writer()
        .try_init();
}
