//! persona-bot's entry point: parse the command line, load config, set up tracing, run the
//! command. A bad configuration is one line on stderr and exit code 2, never a panic.
// Outside tests nothing may panic on outside input: every such site is handled, or allowed
// at the site with a one-line reason (clippy.toml exempts #[test] code).
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use persona_bot::app;
use persona_bot::config::{Config, Secrets};
use persona_bot::storage::Database;

#[derive(Parser)]
#[command(
    name = "persona-bot",
    version,
    about = "A Discord persona bot with a built-in, role-scoped LLM tool loop"
)]
struct Cli {
    /// Directory holding overrides of the built-in defaults: local.toml (and default.toml, an
    /// edited copy of the shipped one), both optional. Without it, ./config is used when it exists.
    #[arg(long, global = true)]
    config_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the bot: reads DISCORD_TOKEN and PROVIDER_API_KEYS from the environment, config from
    /// the config directory, and stores data in the configured database (a SQLite file under
    /// data/ by default, created and migrated at start). Stops cleanly on Ctrl-C or SIGTERM.
    Run,
    /// Run an image worker alone (for scaling out): claims planned images from the shared
    /// database, makes them, and posts them through Discord's REST API.
    Worker,
    /// Load and check the configuration and the built-in tools, then exit.
    CheckConfig {
        /// Also open the database and ask the provider and Discord whether they take the
        /// bot's credentials (one line each; exit 2 when one is refused, 1 when one does not
        /// answer).
        #[arg(long)]
        connect: bool,
    },
    /// Create the database if needed and apply its migrations, then exit. (Start-up applies
    /// them too; this is for deployments that migrate before rolling out.)
    Migrate,
    /// Ask the running bot's /healthz (at metrics.listen) whether it is healthy: one line, exit
    /// code 0 when healthy, 1 otherwise. For container health checks.
    Health,
}

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(run_command());
    // Everything that had to end has ended (the stop waited for it). A task that never yields
    // (serenity's shard runner polling a dead connection) would hold a plain drop for ever.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    code
}

async fn run_command() -> ExitCode {
    let cli = Cli::parse();
    app::install_crypto_provider();
    // An explicit --config-dir must exist; the implicit ./config is read only when present, so
    // the binary runs from any directory with its built-in defaults.
    let config_dir = cli
        .config_dir
        .clone()
        .or_else(|| Some(PathBuf::from("config")).filter(|dir| dir.is_dir()));
    let config = match Config::load(config_dir.as_deref()) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(2);
        }
    };
    persona_bot::telemetry::init(&config.general.log_filter);
    if let Err(error) = Secrets::from_env().check() {
        eprintln!("{error}");
        return ExitCode::from(2);
    }
    match cli.command {
        Command::Run => run(config).await,
        Command::Worker => worker(config).await,
        Command::CheckConfig { connect } => {
            let registry = persona_bot::tools::Registry::builtin(&config);
            let tools: Vec<&str> = registry.iter().map(|t| t.name).collect();
            let source = config_dir.map_or_else(
                || "built-in defaults".to_owned(),
                |dir| format!("built-in defaults and {}", dir.display()),
            );
            println!("config OK ({source}); tools: {}", tools.join(", "));
            if !connect {
                return ExitCode::SUCCESS;
            }
            let found = app::checks::check_connections(&config, &Secrets::from_env()).await;
            for line in found.lines() {
                println!("{line}");
            }
            ExitCode::from(found.exit_status())
        }
        Command::Health => health(&config).await,
        Command::Migrate => {
            let secrets = Secrets::from_env();
            let url = secrets.database_url_or(&config.database);
            let migrated = async {
                let db = Database::connect(&url, 1, config.database.connect_timeout()).await?;
                db.migrate().await?;
                db.close().await;
                Ok::<_, persona_bot::storage::StoreError>(db.backend())
            };
            match migrated.await {
                Ok(backend) => {
                    println!("{backend:?} database migrated");
                    ExitCode::SUCCESS
                }
                Err(error) => {
                    eprintln!("{error}");
                    ExitCode::from(app::exit_status(&error.into()))
                }
            }
        }
    }
}

/// How long `persona-bot health` waits for the answer.
const HEALTH_WITHIN: std::time::Duration = std::time::Duration::from_secs(3);

async fn health(config: &Config) -> ExitCode {
    let (line, healthy) = match config.metrics.listen_addr() {
        None => (
            "unhealthy: metrics.listen is empty, so the bot serves no /healthz".to_owned(),
            false,
        ),
        Some(address) => ask_health(address).await,
    };
    println!("{line}");
    if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// GETs `/healthz`; an unspecified address (0.0.0.0, [::]) is asked on loopback.
async fn ask_health(mut address: std::net::SocketAddr) -> (String, bool) {
    use persona_bot::observe::health::HealthReport;
    if address.ip().is_unspecified() {
        address.set_ip(if address.is_ipv4() {
            std::net::Ipv4Addr::LOCALHOST.into()
        } else {
            std::net::Ipv6Addr::LOCALHOST.into()
        });
    }
    let url = format!("http://{address}/healthz");
    let asked = async {
        let client = reqwest::Client::builder().timeout(HEALTH_WITHIN).build()?;
        client.get(&url).send().await
    };
    let response = match asked.await {
        Ok(response) => response,
        Err(error) => {
            let error = error.without_url();
            return (format!("unhealthy: {url}: {}", causes(&error)), false);
        }
    };
    let status = response.status();
    match persona_bot::http_body::json_bounded::<HealthReport>(response, 4096).await {
        Ok(report) => (report.line(), status.is_success() && report.healthy),
        Err(_) => (format!("unhealthy: {url} answered {status}"), false),
    }
}

/// An error and its causes, on one line ("error sending request: ...: Connection refused").
fn causes(error: &dyn std::error::Error) -> String {
    let mut line = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        line.push_str(": ");
        line.push_str(&cause.to_string());
        source = cause.source();
    }
    line.replace('\n', " ")
}

async fn run(config: Config) -> ExitCode {
    let secrets = Secrets::from_env();
    match app::run(config, &secrets).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // One line: the outermost context and its cause.
            eprintln!("{error}");
            match error {
                app::RunError::Start(error) => ExitCode::from(app::exit_status(&error)),
                app::RunError::Credentials(_) => ExitCode::from(2),
                app::RunError::Stopped(_) => ExitCode::FAILURE,
            }
        }
    }
}

async fn worker(config: Config) -> ExitCode {
    let secrets = Secrets::from_env();
    match app::run_worker(config, &secrets).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{error:#}");
            ExitCode::from(app::exit_status(&error))
        }
    }
}
