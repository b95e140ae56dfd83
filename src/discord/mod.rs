//! The Discord adapter: the only module that imports serenity or poise. It turns gateway events
//! into the orchestrator's messages, implements the chat-facing ports (delivery, typing,
//! history, stickers, the thought log) and the slash commands, and starts everything for
//! `persona-bot run`.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use secrecy::SecretString;
use serenity::all::{ClientBuilder, GatewayIntents, HttpBuilder, ShardManager};
use tokio::task::JoinHandle;

use crate::chat::admission::Cooldowns;
use crate::chat::orchestrator::{Orchestrator, OrchestratorDeps};
use crate::chat::ports::{ChatPorts, SystemClock, ThoughtLog};
use crate::chat::scope::PersonaId;
use crate::chat::stores::{Persona, PersonaStore, SettingsStore};
use crate::config::{Config, Secrets};
use crate::locale::Locale;
use crate::provider::OpenAiProvider;
use crate::storage::Storage;
use crate::thought_log::Notice;
use crate::tool_loop::deliberate::KeywordPacks;
use crate::tool_loop::passes::TurnDeps;
use crate::tools::{Registry, ToolEnv};

pub mod commands;
pub mod events;
pub mod guild;
pub mod rest;
pub mod sink;
pub mod thought_log;

pub type Error = anyhow::Error;
pub type Context<'a> = poise::Context<'a, Arc<BotData>, Error>;

/// What commands and event handlers share.
pub struct BotData {
    pub orchestrator: Orchestrator,
    pub settings: Arc<dyn SettingsStore>,
    /// The persona that answers (its trigger words and name).
    pub persona: Persona,
    pub cooldowns: Cooldowns,
    pub random: crate::chat::admission::RandomBudget,
    pub reminders: Arc<dyn crate::chat::stores::ReminderStore>,
    pub cache: guild::CacheCell,
    pub bot: sink::BotId,
    pub default_locale: Locale,
}

/// A running bot.
pub struct RunningBot {
    pub orchestrator: Orchestrator,
    pub storage: Storage,
    shard_manager: Arc<ShardManager>,
    client: JoinHandle<Result<(), serenity::Error>>,
    summaries: JoinHandle<()>,
    /// Stops the image worker and the reminder scheduler.
    background: tokio_util::sync::CancellationToken,
    tasks: tokio_util::task::TaskTracker,
}

impl RunningBot {
    /// Waits until the gateway client stops (an error or a shutdown).
    pub async fn wait(&mut self) -> anyhow::Result<()> {
        match (&mut self.client).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(error).context("Discord client stopped"),
            Err(error) => Err(error).context("Discord client task failed"),
        }
    }

    /// Stops turns (keeping queued messages for the next start), the gateway, and storage.
    pub async fn shutdown(self) {
        self.background.cancel();
        self.tasks.close();
        self.tasks.wait().await;
        self.orchestrator.shutdown().await;
        self.shard_manager.shutdown_all().await;
        self.summaries.abort();
        if tokio::time::timeout(Duration::from_secs(5), self.client)
            .await
            .is_err()
        {
            tracing::warn!("Discord client did not stop within 5 s");
        }
        self.storage.close().await;
    }
}

/// The persona configured as the default, from the store (config personas are saved there at
/// start).
async fn default_persona(config: &Config, storage: &Storage) -> anyhow::Result<Persona> {
    for p in &config.personas {
        storage
            .personas
            .save_persona(&Persona {
                id: PersonaId(p.id.clone()),
                display_name: p.display_name.clone(),
                system_prompt: p.system_prompt.clone(),
                trigger_words: p.trigger_words.clone(),
                avatar_url: p.avatar_url.clone(),
            })
            .await?;
    }
    let id = PersonaId(config.turn.default_persona.clone());
    storage
        .personas
        .persona(&id)
        .await?
        .with_context(|| format!("persona {id} is not configured"))
}

/// Starts the bot: storage (migrated), provider, orchestrator (recovering queued messages), the
/// Discord client. `extend` may add tools (tests use it for slow or failing tools).
pub async fn start(
    config: Arc<Config>,
    secrets: &Secrets,
    extend: impl FnOnce(Registry) -> Registry,
) -> anyhow::Result<RunningBot> {
    let token = secrets
        .discord_token
        .clone()
        .context("DISCORD_TOKEN is not set: the bot needs its Discord token in the environment")?;
    let storage = Storage::open(&secrets.database_url_or(&config.database), &config.database)
        .await
        .context("database")?;
    let persona = default_persona(&config, &storage).await?;
    let default_locale = config.general.default_locale;

    let provider = OpenAiProvider::new(config.provider.clone(), &secrets.provider_keys)
        .context("provider HTTP client")?;
    let mut review_provider = config.provider.clone();
    review_provider.models = config.review.models.clone();
    let reviewer: Arc<dyn crate::chat::review::Reviewer> =
        Arc::new(crate::tool_loop::review::ModelReviewer::new(
            Arc::new(
                OpenAiProvider::new(review_provider, &secrets.provider_keys)
                    .context("reviewer HTTP client")?,
            ),
            config.review.prompt.clone(),
            Duration::from_secs(config.review.timeout_secs),
        ));
    let rest = discord_rest(&config, &token)?;
    let bot = sink::BotId::default();
    let cache = guild::CacheCell::default();
    let sink = Arc::new(sink::DiscordSink::new(rest.clone(), bot.clone()));
    let chat_sink: Arc<dyn crate::chat::ports::ChatSink> = sink.clone();
    let thought_log: Arc<dyn ThoughtLog> = Arc::new(thought_log::DiscordThoughtLog::new(
        rest.clone(),
        storage.settings.clone(),
        cache.clone(),
        default_locale,
    ));
    let ports = storage.ports(ChatPorts {
        sink: chat_sink,
        thought_log: thought_log.clone(),
        stickers: sink.clone(),
        history: sink.clone(),
        clock: Arc::new(SystemClock),
    });
    let registry = Arc::new(extend(Registry::builtin(&config)));
    let orchestrator = Orchestrator::new(OrchestratorDeps {
        turn: TurnDeps {
            model: Arc::new(provider),
            registry,
            env: Arc::new(ToolEnv {
                ports,
                config: config.clone(),
                reviewer: Some(reviewer),
            }),
        },
        queue: storage.queue.clone(),
        settings: storage.settings.clone(),
        personas: storage.personas.clone(),
        packs: KeywordPacks::from_config(&config.deliberate),
        config: config.clone(),
    });
    let recovered = orchestrator.recover().await?;
    if recovered > 0 {
        tracing::info!(
            recovered,
            "queued messages from before the restart are back in line"
        );
    }
    let summaries = tokio::spawn(post_summaries(orchestrator.clone(), thought_log.clone()));

    // Background work: reminders coming due, and (unless run apart) the image worker.
    let background = tokio_util::sync::CancellationToken::new();
    let tasks = tokio_util::task::TaskTracker::new();
    tasks.spawn(
        crate::reminders::ReminderScheduler::new(
            storage.reminders.clone(),
            orchestrator.clone(),
            Arc::new(SystemClock),
            Duration::from_millis(config.reminders.poll_ms),
        )
        .run(background.clone()),
    );
    if config.image_worker.run_in_bot {
        let worker = image_worker(&config, secrets, &storage, sink.clone(), thought_log)?;
        tasks.spawn(worker.run(background.clone()));
    }

    let data = Arc::new(BotData {
        orchestrator: orchestrator.clone(),
        settings: storage.settings.clone(),
        persona,
        cooldowns: Cooldowns::new(Duration::from_millis(config.turn.user_cooldown_ms)),
        random: Default::default(),
        reminders: storage.reminders.clone(),
        cache: cache.clone(),
        bot: bot.clone(),
        default_locale,
    });

    let token = secrecy::ExposeSecret::expose_secret(&token)
        .trim()
        .to_owned();
    let mut http = HttpBuilder::new(&token);
    if !config.discord.api_base_url.is_empty() {
        // serenity rewrites REST URLs to the proxy only with its rate limiter off; delivery
        // handles rate limits itself (see `rest`).
        http = http
            .proxy(config.discord.api_base_url.trim_end_matches('/'))
            .ratelimiter_disabled(true);
    }
    let framework = poise::Framework::builder()
        .options(poise::FrameworkOptions {
            commands: commands::all(),
            on_error: |error| Box::pin(commands::on_error(error)),
            event_handler: |ctx, event| {
                Box::pin(async move {
                    events::handle(event, ctx.user_data).await;
                    Ok(())
                })
            },
            prefix_options: poise::PrefixFrameworkOptions {
                // A leading mention is a chat message, not a command prefix.
                mention_as_prefix: false,
                ..Default::default()
            },
            ..Default::default()
        })
        .initialize_owners(false)
        .setup(move |ctx, ready, framework| {
            Box::pin(async move {
                bot.set(ready.user.id.get());
                cache.set(ctx.cache.clone());
                poise::builtins::register_globally(ctx, &framework.options().commands).await?;
                tracing::info!(user = %ready.user.name, guilds = ready.guilds.len(), "connected to Discord");
                Ok(data)
            })
        })
        .build();
    let intents = GatewayIntents::GUILDS
        | GatewayIntents::GUILD_MESSAGES
        | GatewayIntents::DIRECT_MESSAGES
        | GatewayIntents::MESSAGE_CONTENT;
    let mut client = ClientBuilder::new_with_http(http.build(), intents)
        .framework(framework)
        .await
        .context("Discord client")?;
    let shard_manager = client.shard_manager.clone();
    let client = tokio::spawn(async move { client.start().await });
    Ok(RunningBot {
        orchestrator,
        storage,
        shard_manager,
        client,
        summaries,
        background,
        tasks,
    })
}

/// Delivery's REST client (its own rate limits and retries, see `rest`).
fn discord_rest(config: &Config, token: &SecretString) -> anyhow::Result<Arc<rest::DiscordRest>> {
    let rest = rest::DiscordRest::new(&config.discord, token).context("Discord HTTP client")?;
    Ok(Arc::new(rest))
}

/// An image worker posting through Discord's REST API.
fn image_worker(
    config: &Config,
    secrets: &Secrets,
    storage: &Storage,
    sink: Arc<sink::DiscordSink>,
    thought_log: Arc<dyn ThoughtLog>,
) -> anyhow::Result<crate::worker::ImageWorker> {
    let backend = crate::media::backend(&config.image_worker, secrets)?;
    Ok(crate::worker::ImageWorker::new(
        format!("{}-{}", std::process::id(), uuid::Uuid::now_v7().simple()),
        crate::worker::WorkerPorts {
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
/// API (no gateway connection). Runs until `shutdown`.
pub async fn run_worker(
    config: Arc<Config>,
    secrets: &Secrets,
    shutdown: tokio_util::sync::CancellationToken,
) -> anyhow::Result<()> {
    let token = secrets
        .discord_token
        .clone()
        .context("DISCORD_TOKEN is not set: the worker posts images as the bot")?;
    let storage = Storage::open(&secrets.database_url_or(&config.database), &config.database)
        .await
        .context("database")?;
    let rest = discord_rest(&config, &token)?;
    let cache = guild::CacheCell::default();
    // Without a gateway cache the thought log cannot tell a channel is private: it stays
    // silent (it never posts where it cannot check).
    let thought_log: Arc<dyn ThoughtLog> = Arc::new(thought_log::DiscordThoughtLog::new(
        rest.clone(),
        storage.settings.clone(),
        cache,
        config.general.default_locale,
    ));
    let sink = Arc::new(sink::DiscordSink::new(rest, sink::BotId::default()));
    let worker = image_worker(&config, secrets, &storage, sink, thought_log)?;
    tracing::info!(worker = %worker.id, "image worker started");
    worker.run(shutdown).await;
    storage.close().await;
    Ok(())
}

/// Posts each finished turn's summary to its server's thought log (public channels only).
async fn post_summaries(orchestrator: Orchestrator, thought_log: Arc<dyn ThoughtLog>) {
    let mut finished = orchestrator.subscribe();
    loop {
        let turn = match finished.recv().await {
            Ok(turn) => turn,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                tracing::warn!(missed, "turn summaries skipped (too many at once)");
                continue;
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        };
        let Some(server) = turn.scope.thought_log_server() else {
            continue;
        };
        let report = &turn.report;
        let notice = Notice::TurnSummary {
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
        };
        thought_log.post(server, notice).await;
    }
}
