//! The app: start-up and wiring for `persona-bot run` and `persona-bot worker`, and nothing
//! else. It opens storage, builds the provider and the reviewer, the orchestrator (recovering
//! queued messages), the background work (reminders, the image worker), the turn summaries and
//! turn lines, the metrics listener when configured, connects Discord, and stops it all through
//! one [`Shutdown`].

pub mod checks;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;

use crate::config::{Config, Secrets, ShardPlan};
use crate::discord::data::BotData;
use crate::discord::ids::BotId;
use crate::discord::recent::RecentMessages;
use crate::discord::rest::cdn::CdnFetcher;
use crate::discord::rest::delivery::DiscordSink;
use crate::discord::{self, Connection, DiscordClient, guild};
use crate::domain::admission::RateLimit;
use crate::domain::personas::Personas;
use crate::domain::ports::{ChatPorts, ChatSink, SystemClock, ThoughtLog};
use crate::domain::review::reviewer_choices;
use crate::engine::attachments::AttachmentPolicy;
use crate::engine::image_worker::{ImageWorker, WorkerPorts};
use crate::engine::orchestrator::{Orchestrator, OrchestratorDeps};
use crate::engine::passes::TurnDeps;
use crate::engine::reminders::ReminderScheduler;
use crate::engine::reviewer::ModelReviewer;
use crate::mcp::McpHub;
use crate::observe::events::MeteredEvents;
use crate::observe::health::Health;
use crate::observe::model::MeteredModel;
use crate::provider::OpenAiProvider;
use crate::shutdown::Shutdown;
use crate::stage::deliberate::KeywordPacks;
use crate::storage::Storage;
use crate::tools::outside::OutsideCatalog;
use crate::tools::{Registry, Reviewer, ToolEnv};

/// Recent messages kept per channel beyond a turn's history (edits and deletes eat into it).
const RECENT_MARGIN: usize = 20;
/// How long a stop waits for background tasks (the image worker, reminders, summaries).
const STOP_WITHIN: Duration = Duration::from_secs(10);

pub use crate::http_body::install_crypto_provider;

/// A running bot.
pub struct RunningBot {
    pub orchestrator: Orchestrator,
    pub storage: Storage,
    discord: DiscordClient,
    shutdown: Shutdown,
    config: Arc<Config>,
    metrics_address: Option<std::net::SocketAddr>,
}

impl RunningBot {
    /// Where `/metrics` and `/healthz` are served; `None` when `metrics.listen` is empty.
    pub fn metrics_address(&self) -> Option<std::net::SocketAddr> {
        self.metrics_address
    }

    /// Waits until the gateway client stops (an error or a shutdown).
    pub async fn wait(&mut self) -> anyhow::Result<()> {
        self.discord.wait().await
    }

    /// Stops within `shutdown.grace_secs`: background work first (reminders feed the
    /// orchestrator), then turns (see [`Orchestrator::stop_within`]: running ones may finish,
    /// queued ones stay stored), then the gateway, the remaining tasks, and storage (pending
    /// writes flushed). Returns whether everything ended in time.
    pub async fn shutdown(self) -> bool {
        let grace = Duration::from_secs(self.config.shutdown.grace_secs);
        let deadline = tokio::time::Instant::now() + grace;
        // Turns get three quarters; the gateway, tasks and the flush the rest.
        let for_turns = grace.mul_f64(0.75);
        self.shutdown.token().cancel();
        let mut clean = self.orchestrator.stop_within(for_turns).await;
        self.discord.stop().await;
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if !self.shutdown.stop(left.min(STOP_WITHIN)).await {
            tracing::warn!("background work did not stop in time");
            clean = false;
        }
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        // The flush gets at least a second: dropping pending writes is worse than a late exit.
        if tokio::time::timeout(left.max(Duration::from_secs(1)), self.storage.close())
            .await
            .is_err()
        {
            tracing::error!("pending database writes were not flushed before the deadline");
            clean = false;
        }
        clean
    }
}

/// A secret the command needs is not in the environment (a configuration problem: exit 2).
#[derive(Debug, thiserror::Error)]
#[error("{variable} is not set: {why}")]
pub struct MissingSecret {
    pub variable: &'static str,
    pub why: &'static str,
}

/// The exit status for an error that stopped a command: 2 for what the operator must change
/// (a setting, a secret, the token, the database URL), 1 for what went wrong at run time (a
/// database that does not answer, a client that stopped). The README's exit-status table.
pub fn exit_status(error: &anyhow::Error) -> u8 {
    let configuration = error.chain().any(|cause| {
        cause.is::<crate::config::ConfigError>()
            || cause.is::<MissingSecret>()
            || cause.is::<discord::TokenRejected>()
            || cause.is::<discord::IntentsRefused>()
            || matches!(
                cause.downcast_ref::<crate::storage::StoreError>(),
                Some(crate::storage::StoreError::UnsupportedUrl)
            )
    });
    if configuration { 2 } else { 1 }
}

/// Why `run` ended badly: it could not start (a setting or the environment), or the gateway
/// client stopped with an error after start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0:#}")]
    Start(anyhow::Error),
    #[error("{0:#}")]
    Stopped(anyhow::Error),
    /// Discord refused the token or the intents after start (the gateway's close 4004, 4014).
    #[error("{0}")]
    Credentials(anyhow::Error),
}

/// `persona-bot run` until a signal or the gateway client stops.
pub async fn run(config: Config, secrets: &Secrets) -> Result<(), RunError> {
    // A signal while starting (Discord or the database not answering yet) ends the start:
    // nothing has run that needs winding down.
    let mut running = tokio::select! {
        started = start(Arc::new(config), secrets, |r| r) => started.map_err(RunError::Start)?,
        () = crate::shutdown::signalled() => {
            tracing::info!("stopped while starting");
            return Ok(());
        }
    };
    let stopped = tokio::select! {
        result = running.wait() => result,
        () = crate::shutdown::signalled() => Ok(()),
    };
    let grace = running.config.shutdown.grace_secs;
    let clean = running.shutdown().await;
    stopped.map_err(|error| {
        if error.is::<discord::TokenRejected>() || error.is::<discord::IntentsRefused>() {
            RunError::Credentials(error)
        } else {
            RunError::Stopped(error)
        }
    })?;
    if clean {
        tracing::info!("stopped");
        Ok(())
    } else {
        Err(RunError::Stopped(anyhow::anyhow!(
            "the stop took longer than shutdown.grace_secs ({grace} s); see the warnings above"
        )))
    }
}

/// Starts the bot: storage (migrated), provider, orchestrator (recovering queued messages), the
/// background work, the Discord client. `extend` may add tools (tests use it for slow or failing
/// tools). The TLS provider must be installed first ([`install_crypto_provider`]).
pub async fn start(
    config: Arc<Config>,
    secrets: &Secrets,
    extend: impl FnOnce(Registry) -> Registry,
) -> anyhow::Result<RunningBot> {
    let token = secrets.discord_token.clone().ok_or(MissingSecret {
        variable: crate::config::DISCORD_TOKEN_ENV,
        why: "the bot needs its Discord token in the environment",
    })?;
    let (storage, personas) = open_storage(&config, secrets).await?;
    let shutdown = Shutdown::new();
    let gateway = discord::GatewayStatus::default();
    let metrics_address = serve_metrics(&config, &gateway, &storage, &shutdown).await?;
    let rest = discord::discord_rest(&config, &token)?;
    let bot = BotId::default();
    let cache = guild::CacheCell::default();
    let (recent, webhooks, sink) = chat_sink(&config, &rest, &bot, &cache);
    let thought_log = thought_log(&config, &rest, &storage, &cache);
    let outside = outside_tools(&config, &shutdown).await;
    let chat = Chat {
        sink: &sink,
        thought_log: &thought_log,
        personas: &personas,
        outside: outside.clone(),
    };
    let orchestrator = orchestrator(&config, secrets, &storage, chat, extend)?;
    let sink_for_notices: Arc<dyn ChatSink> = sink.clone();
    recover(&orchestrator, &shutdown).await?;
    spawn_background(&config, &orchestrator, &storage, &thought_log, &shutdown);
    if config.image_worker.run_in_bot {
        let worker = image_worker(&config, secrets, &storage, sink, thought_log.clone())?;
        shutdown.spawn(worker.run(shutdown.token().clone()));
    }
    let data = Arc::new(BotData {
        seen: seen_marks(&config, &storage, &shutdown).await,
        catch_up: catch_up_limits(&config),
        outcomes: storage.outcomes.clone(),
        feedback: storage.feedback.clone(),
        approvals: storage.approvals.clone(),
        consents: Default::default(),
        fact_max_chars: config.memory.fact_max_chars,
        facts_per_user: config.memory.facts_per_user,
        rest: rest.clone(),
        webhooks,
        thought_log,
        orchestrator: orchestrator.clone(),
        settings: storage.settings.clone(),
        personas,
        rate: RateLimit::new(config.turn.user_messages_per_minute),
        random: Default::default(),
        reminders: storage.reminders.clone(),
        memory: storage.memory.clone(),
        model_name: config.provider.models.first().cloned().unwrap_or_default(),
        reply_style: config.turn.reply_style,
        review_models: reviewer_choices(&config.review.models, &config.provider.models),
        cache: cache.clone(),
        bot: bot.clone(),
        recent,
        default_locale: config.general.default_locale,
        sink: sink_for_notices,
        outage_notices: Default::default(),
        shutdown: shutdown.clone(),
        outside,
        message_content: std::sync::atomic::AtomicBool::new(
            config.discord.message_content != crate::config::MessageContent::Off,
        ),
    });
    let connection = Connection { data, bot, cache };
    let discord = discord::connect(&config, &token, connection, &rest, &shutdown).await?;
    discord.report_to(&gateway);
    Ok(RunningBot {
        orchestrator,
        storage,
        discord,
        shutdown,
        config,
        metrics_address,
    })
}

/// The store, migrated, claiming queued messages as this process; the configured personas
/// saved in it, where `/persona` lists them and queued turns find them; old delivery records
/// pruned.
async fn open_storage(
    config: &Config,
    secrets: &Secrets,
) -> anyhow::Result<(Storage, Arc<Personas>)> {
    let mut storage = Storage::open(&secrets.database_url_or(&config.database), &config.database)
        .await
        .context("database")?;
    storage.claim_queue_as(queue_claims(config));
    let personas = Arc::new(Personas::new(
        config,
        storage.personas.clone(),
        storage.settings.clone(),
    ));
    personas.save_configured().await.context("personas")?;
    prune_deliveries(&storage).await;
    Ok((storage, personas))
}

/// The moderators' thought log, posted through Discord's REST API to each server's channel.
fn thought_log(
    config: &Config,
    rest: &Arc<discord::rest::client::DiscordRest>,
    storage: &Storage,
    cache: &guild::CacheCell,
) -> Arc<dyn ThoughtLog> {
    Arc::new(discord::rest::thought_log::DiscordThoughtLog::new(
        rest.clone(),
        storage.settings.clone(),
        cache.clone(),
        config.general.default_locale,
    ))
}

/// With `metrics.listen` set, binds it and serves /metrics and /healthz. Bound before Discord is
/// connected, so a taken port stops start-up; it answers "not connected" until the gateway is.
async fn serve_metrics(
    config: &Config,
    gateway: &discord::GatewayStatus,
    storage: &Storage,
    shutdown: &Shutdown,
) -> anyhow::Result<Option<std::net::SocketAddr>> {
    let Some(address) = config.metrics.listen_addr() else {
        return Ok(None);
    };
    let endpoint = crate::observe::server::Endpoint::bind(address).await?;
    let bound = endpoint.address();
    let health = Health::new(gateway.clone(), storage.clone());
    let limits = crate::observe::server::Limits::from_config(&config.metrics);
    shutdown.spawn(endpoint.serve(health, limits, shutdown.token().clone()));
    if let Some(bound) = bound {
        tracing::info!(address = %bound, "serving /metrics and /healthz");
    }
    Ok(bound)
}

/// The long-lived background work of `run`: thought-log summaries, the queue's hold and
/// take-over, and due reminders.
fn spawn_background(
    config: &Config,
    orchestrator: &Orchestrator,
    storage: &Storage,
    thought_log: &Arc<dyn ThoughtLog>,
    shutdown: &Shutdown,
) {
    shutdown.spawn(crate::observe::summaries::post_summaries(
        orchestrator.clone(),
        thought_log.clone(),
        storage.settings.clone(),
        shutdown.token().clone(),
    ));
    shutdown.spawn(crate::engine::orchestrator::hold_the_queue(
        orchestrator.clone(),
        storage.queue.clone(),
        Duration::from_secs(config.turn.queue_lease_secs),
        shutdown.token().clone(),
    ));
    shutdown.spawn(
        ReminderScheduler::new(
            storage.reminders.clone(),
            orchestrator.clone(),
            Arc::new(SystemClock),
            Duration::from_millis(config.reminders.poll_ms),
        )
        .run(shutdown.token().clone()),
    );
}

/// How this process claims queued messages: under a name of its own (its shard range's, made
/// unique to this run, SPEC D11), for its shards.
fn queue_claims(config: &Config) -> crate::storage::queue::Claims {
    let plan = config.discord.shard_plan();
    let (first_shard, last_shard, total_shards) = match plan {
        ShardPlan::Auto => (0, 0, 1),
        ShardPlan::Range { first, last, total } => (first, last, total),
    };
    crate::storage::queue::Claims {
        owner: crate::storage::queue::Claims::instance_of(&plan.owner()),
        first_shard,
        last_shard,
        total_shards,
        lease_ms: i64::try_from(config.turn.queue_lease_secs.saturating_mul(1000))
            .unwrap_or(i64::MAX),
    }
}

/// Takes back the stored queue, once the turn lines are watched (recovered messages start at
/// once, and their ends must be logged).
async fn recover(orchestrator: &Orchestrator, shutdown: &Shutdown) -> anyhow::Result<()> {
    shutdown.spawn(crate::observe::turns::watch(
        orchestrator.subscribe(),
        shutdown.token().clone(),
    ));
    let recovered = orchestrator.recover().await?;
    if recovered > 0 {
        tracing::info!(
            recovered,
            "queued messages from before the restart are back in line"
        );
    }
    Ok(())
}

/// The catch-up's limits from `catch_up.*` (SPEC D9).
fn catch_up_limits(config: &Config) -> crate::domain::catch_up::Limits {
    let c = &config.catch_up;
    crate::domain::catch_up::Limits {
        window_ms: i64::try_from(c.window_secs.saturating_mul(1000)).unwrap_or(i64::MAX),
        messages: usize::from(c.max_messages),
        channels: usize::from(c.max_channels),
    }
}

/// The last message seen in each channel (SPEC D9), loaded from the store and kept saved until
/// the stop.
async fn seen_marks(
    config: &Config,
    storage: &Storage,
    shutdown: &Shutdown,
) -> Arc<crate::domain::catch_up::SeenMarks> {
    let window = catch_up_limits(config).window_ms;
    let marks = crate::engine::seen_marks::load(storage.seen.as_ref(), window).await;
    shutdown.spawn(crate::engine::seen_marks::keep_saved(
        marks.clone(),
        storage.seen.clone(),
        shutdown.token().clone(),
    ));
    marks
}

/// Drops delivery records of turns long over (SPEC D5 keeps them for resumed turns only).
async fn prune_deliveries(storage: &Storage) {
    use crate::domain::ports::Clock as _;
    let before = SystemClock.now_ms() - crate::storage::outcomes::DELIVERIES_KEPT_MS;
    match storage.outcomes.prune_deliveries(before).await {
        Ok(0) => {}
        Ok(pruned) => tracing::debug!(pruned, "old delivery records pruned"),
        Err(error) => tracing::warn!(%error, "could not prune old delivery records"),
    }
}

/// The orchestrator with its turn dependencies: the provider, the reviewer, the tools. The
/// model and the tool events are metered (the metrics go nowhere until a recorder is installed).
/// What the orchestrator shares with the Discord side.
struct Chat<'a> {
    sink: &'a Arc<DiscordSink>,
    thought_log: &'a Arc<dyn ThoughtLog>,
    personas: &'a Arc<Personas>,
    outside: Option<Arc<dyn OutsideCatalog>>,
}

/// What the bot has seen lately, the persona's webhooks, and the sink that posts through them.
fn chat_sink(
    config: &Config,
    rest: &Arc<crate::discord::rest::client::DiscordRest>,
    bot: &BotId,
    cache: &guild::CacheCell,
) -> (
    Arc<RecentMessages>,
    Arc<discord::rest::webhooks::Webhooks>,
    Arc<DiscordSink>,
) {
    let recent = Arc::new(RecentMessages::new(
        usize::from(config.turn.history_messages) + RECENT_MARGIN,
    ));
    let webhooks = Arc::new(discord::rest::webhooks::Webhooks::new(
        rest.clone(),
        bot.clone(),
    ));
    let sink = Arc::new(
        DiscordSink::new(rest.clone(), bot.clone(), recent.clone())
            .with_cache(cache.clone())
            .with_webhooks(webhooks.clone()),
    );
    (recent, webhooks, sink)
}

/// The MCP servers (SPEC E4), each kept connected by a task of its own until the stop. Turns
/// resumed at start-up may call their tools, so each server's first attempt is waited for
/// (each within `mcp.connect_timeout_secs`); `None` when no server is configured.
async fn outside_tools(config: &Config, shutdown: &Shutdown) -> Option<Arc<dyn OutsideCatalog>> {
    if config.mcp.servers.is_empty() {
        return None;
    }
    let hub = McpHub::new(config);
    hub.start(shutdown);
    hub.first_attempts().await;
    Some(hub)
}

fn orchestrator(
    config: &Arc<Config>,
    secrets: &Secrets,
    storage: &Storage,
    chat: Chat<'_>,
    extend: impl FnOnce(Registry) -> Registry,
) -> anyhow::Result<Orchestrator> {
    let Chat {
        sink,
        thought_log,
        personas,
        outside,
    } = chat;
    let provider = OpenAiProvider::new(config.provider.clone(), &secrets.provider_keys)
        .context("provider HTTP client")?;
    let mut review_provider = config.provider.clone();
    review_provider.models = config.review.models.clone();
    let configured = reviewer_choices(&config.review.models, &config.provider.models);
    let reviewer: Arc<dyn Reviewer> = Arc::new(
        ModelReviewer::new(
            Arc::new(MeteredModel::new(
                Arc::new(
                    OpenAiProvider::new(review_provider, &secrets.provider_keys)
                        .context("reviewer HTTP client")?,
                ),
                "reviewer",
                configured.clone(),
            )),
            config.review.prompt.clone(),
            Duration::from_secs(config.review.timeout_secs),
        )
        .with_server_models(configured.clone()),
    );
    let chat_sink: Arc<dyn ChatSink> = sink.clone();
    let registry = Arc::new(extend(Registry::builtin(config)));
    let mut ports = storage.ports(ChatPorts {
        sink: chat_sink,
        thought_log: thought_log.clone(),
        stickers: sink.clone(),
        history: sink.clone(),
        clock: Arc::new(SystemClock),
        attachments: Arc::new(
            CdnFetcher::new(&config.attachments).context("attachment HTTP client")?,
        ),
    });
    ports.events = Arc::new(MeteredEvents::new(
        ports.events,
        registry.iter().map(|tool| tool.name),
    ));
    Ok(Orchestrator::new(OrchestratorDeps {
        turn: TurnDeps {
            model: Arc::new(MeteredModel::new(Arc::new(provider), "persona", configured)),
            registry,
            env: Arc::new(ToolEnv {
                ports,
                config: config.clone(),
                reviewer: Some(reviewer),
                outside,
            }),
            files: AttachmentPolicy::from_config(config),
            strict_roles: config.provider.strict_roles,
        },
        queue: storage.queue.clone(),
        settings: storage.settings.clone(),
        personas: personas.clone(),
        packs: KeywordPacks::from_config(&config.deliberate),
        config: config.clone(),
    }))
}

/// An image worker posting through Discord's REST API.
fn image_worker(
    config: &Config,
    secrets: &Secrets,
    storage: &Storage,
    sink: Arc<DiscordSink>,
    thought_log: Arc<dyn ThoughtLog>,
) -> anyhow::Result<ImageWorker> {
    let backend = crate::media::backend(&config.image_worker, secrets)?;
    Ok(ImageWorker::new(
        format!("{}-{}", std::process::id(), uuid::Uuid::now_v7().simple()),
        WorkerPorts {
            tasks: storage.plans.clone(),
            plans: storage.plans.clone(),
            backend,
            poster: sink.clone(),
            sink,
            thought_log,
            clock: Arc::new(SystemClock),
        },
        config.image_worker.clone(),
    ))
}

/// `persona-bot worker`: an image worker alone (scaling out), posting through Discord's REST
/// API (no gateway connection), until a signal.
pub async fn run_worker(config: Config, secrets: &Secrets) -> anyhow::Result<()> {
    let shutdown = Shutdown::new();
    let stop = shutdown.clone();
    shutdown.spawn(async move {
        tokio::select! {
            () = crate::shutdown::signalled() => stop.token().cancel(),
            () = stop.token().cancelled() => {}
        }
    });
    let result = worker_until(Arc::new(config), secrets, shutdown.token().clone()).await;
    shutdown.stop(STOP_WITHIN).await;
    result
}

/// An image worker alone until `stop` is cancelled.
pub async fn worker_until(
    config: Arc<Config>,
    secrets: &Secrets,
    stop: tokio_util::sync::CancellationToken,
) -> anyhow::Result<()> {
    let token = secrets.discord_token.clone().ok_or(MissingSecret {
        variable: crate::config::DISCORD_TOKEN_ENV,
        why: "the worker posts images as the bot",
    })?;
    let storage = Storage::open(&secrets.database_url_or(&config.database), &config.database)
        .await
        .context("database")?;
    let rest = discord::discord_rest(&config, &token)?;
    // Without a gateway cache the thought log cannot tell a channel is private: it stays
    // silent (it never posts where it cannot check).
    let thought_log: Arc<dyn ThoughtLog> =
        Arc::new(discord::rest::thought_log::DiscordThoughtLog::new(
            rest.clone(),
            storage.settings.clone(),
            guild::CacheCell::default(),
            config.general.default_locale,
        ));
    // The worker only posts: it reads no history, so it keeps no recent messages.
    let sink = Arc::new(DiscordSink::new(
        rest,
        BotId::default(),
        Arc::new(RecentMessages::new(1)),
    ));
    let worker = image_worker(&config, secrets, &storage, sink, thought_log.clone())?;
    tracing::info!(worker = %worker.id, "image worker started");
    worker.run(stop).await;
    storage.close().await;
    Ok(())
}
