//! The Discord adapter: the only module that imports serenity or poise. What comes in over the
//! gateway is in [`gateway`] (events, admission, catch-up, recent messages), what goes out over
//! REST in [`rest`] (the client and its rate limits, delivery, history, stickers, webhooks, the
//! thought log, command registration, CDN downloads), the slash commands in [`commands`]; what
//! the two share is [`data::BotData`]. Here: the wiring that connects the gateway client; the
//! app ([`crate::app`]) wires it to the rest.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use secrecy::SecretString;
use serenity::all::{ClientBuilder, ConnectionStage, GatewayIntents, HttpBuilder, ShardManager};
use tokio::task::JoinHandle;

use crate::config::Config;
use crate::config::{MessageContent, ShardPlan};
use crate::shutdown::Shutdown;

use data::{BotData, Error};

pub mod commands;
pub mod data;
pub mod gateway;
pub mod guild;
pub mod ids;
pub mod mentions;
pub mod recent;
pub mod rest;

/// The shard manager of the gateway client running now: replaced once when Discord refuses the
/// Message Content intent and the bot connects again without it (SPEC D14).
type ManagerCell = Arc<std::sync::Mutex<Arc<ShardManager>>>;

fn current(cell: &ManagerCell) -> Arc<ShardManager> {
    cell.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

/// The gateway client, running.
pub struct DiscordClient {
    shard_manager: ManagerCell,
    /// A gateway with no shard connected this long is given up on (see [`GatewayStuck`]).
    stuck_after: Duration,
    watchdog: Watchdog,
    /// `None` once it ended and was waited for (a finished task is not polled again).
    client: Option<JoinHandle<Result<(), serenity::Error>>>,
}

/// Discord refused the bot token (a 401, or the gateway's close 4004): a configuration problem,
/// not one that waiting fixes.
#[derive(Debug, thiserror::Error)]
#[error(
    "Discord refused the bot token in {}: check it (or reset it) in the Discord developer \
     portal",
    crate::config::DISCORD_TOKEN_ENV
)]
pub struct TokenRejected;

/// Discord's gateway refused the intents the bot asks for (close 4014, or 4013): the Message
/// Content intent is privileged and must be switched on for the bot; waiting does not fix it.
#[derive(Debug, thiserror::Error)]
#[error(
    "Discord refused the gateway intents the bot needs (Message Content, Server Messages, Direct \
     Messages): switch on the Message Content Intent under Bot in the Discord developer portal"
)]
pub struct IntentsRefused;

/// No shard of the gateway has been connected for `discord.gateway_stuck_secs`: the gateway
/// closed with a code that forbids reconnecting (4010 to 4012), or Discord has been unreachable
/// that long. The process ends, so a service manager starts it afresh.
#[derive(Debug, thiserror::Error)]
#[error(
    "the Discord gateway has not been connected for {0} s (discord.gateway_stuck_secs); the \
     warnings above say why; a restart starts a new session"
)]
pub struct GatewayStuck(u64);

impl DiscordClient {
    /// Waits until the gateway client stops (an error or a shutdown), or no shard has been
    /// connected for `stuck_after` ([`GatewayStuck`]). A refused token is a [`TokenRejected`]
    /// error. Once it has ended, it stays ended (pending for ever).
    pub async fn wait(&mut self) -> anyhow::Result<()> {
        let Some(client) = self.client.as_mut() else {
            return std::future::pending().await;
        };
        let ended = tokio::select! {
            ended = client => ended,
            () = self.watchdog.stuck.notified() => {
                return Err(GatewayStuck(self.stuck_after.as_secs()).into());
            }
        };
        self.client = None;
        match ended {
            Ok(Ok(())) => Ok(()),
            Ok(Err(serenity::Error::Gateway(
                serenity::gateway::GatewayError::InvalidAuthentication,
            ))) => Err(TokenRejected.into()),
            Ok(Err(serenity::Error::Gateway(
                serenity::gateway::GatewayError::DisallowedGatewayIntents
                | serenity::gateway::GatewayError::InvalidGatewayIntents,
            ))) => Err(IntentsRefused.into()),
            Ok(Err(error)) => Err(error).context("Discord client stopped"),
            Err(error) => Err(error).context("Discord client task failed"),
        }
    }

    /// Lets `status` follow this client's shards.
    pub fn report_to(&self, status: &GatewayStatus) {
        let _ = status.0.set(self.shard_manager.clone());
    }

    /// Closes the gateway connection and waits up to 5 s for the client to end.
    pub async fn stop(self) {
        current(&self.shard_manager).shutdown_all().await;
        let Some(client) = self.client else {
            return;
        };
        if tokio::time::timeout(Duration::from_secs(5), client)
            .await
            .is_err()
        {
            tracing::warn!("Discord client did not stop within 5 s");
        }
    }
}

/// Watches the gateway from a thread of its own and says when no shard has been connected for
/// `after` on end (checked every second). A thread, not a task: after some closes (4010 to
/// 4012) serenity's shard runner polls its dead connection in a loop that never yields, and
/// the runtime's timers stop firing; a task would never see the second it waits for.
struct Watchdog {
    stuck: Arc<tokio::sync::Notify>,
    done: Arc<std::sync::atomic::AtomicBool>,
}

impl Watchdog {
    fn start(managers: ManagerCell, after: Duration) -> Self {
        use std::sync::atomic::Ordering;
        let stuck = Arc::new(tokio::sync::Notify::new());
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (tell, finished) = (stuck.clone(), done.clone());
        let watch = move || {
            let mut down_since: Option<std::time::Instant> = None;
            while !finished.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_secs(1));
                // Never waits on the lock: the next second asks again.
                let manager = current(&managers);
                let Ok(runners) = manager.runners.try_lock() else {
                    continue;
                };
                let connected = runners
                    .values()
                    .any(|runner| runner.stage == ConnectionStage::Connected);
                drop(runners);
                if connected {
                    down_since = None;
                    continue;
                }
                if down_since
                    .get_or_insert_with(std::time::Instant::now)
                    .elapsed()
                    >= after
                {
                    tell.notify_one();
                    return;
                }
            }
        };
        if let Err(error) = std::thread::Builder::new()
            .name("gateway-watchdog".into())
            .spawn(watch)
        {
            tracing::warn!(%error, "no gateway watchdog: a gateway that stays down is not noticed");
        }
        Self { stuck, done }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.done.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Whether the gateway is connected, for health checks: not until the client is running
/// ([`DiscordClient::report_to`]), then while every shard is connected. Cheap to clone.
#[derive(Clone, Default)]
pub struct GatewayStatus(Arc<std::sync::OnceLock<ManagerCell>>);

impl GatewayStatus {
    pub async fn connected(&self) -> bool {
        let Some(managers) = self.0.get() else {
            return false;
        };
        let manager = current(managers);
        let runners = manager.runners.lock().await;
        !runners.is_empty()
            && runners
                .values()
                .all(|runner| runner.stage == ConnectionStage::Connected)
    }
}

/// What the gateway client is built from: the shared data, and the cells `setup` fills in.
#[derive(Clone)]
pub struct Connection {
    pub data: Arc<BotData>,
    pub bot: ids::BotId,
    pub cache: guild::CacheCell,
}

/// Connects the gateway client (poise framework, slash commands, event handler) and starts it
/// as a task of `shutdown`. With `discord.message_content = "auto"`, when Discord refuses the
/// Message Content intent (close 4014) the task says so once and connects again without it
/// (SPEC D14).
pub async fn connect(
    config: &Config,
    token: &SecretString,
    connection: Connection,
    rest: &Arc<rest::client::DiscordRest>,
    shutdown: &Shutdown,
) -> anyhow::Result<DiscordClient> {
    let token = secrecy::ExposeSecret::expose_secret(token)
        .trim()
        .to_owned();
    // First, on the scheduled client with its timeouts: is Discord there, does it take the
    // token, how many shards. serenity's own client (building it asks for the gateway URL) has
    // no timeout, and an API that never answers would hold the start without a word.
    let longest = Duration::from_secs(config.discord.reconnect_max_secs);
    let recommended = recommended_shards(rest, longest).await?;
    let plan = config.discord.shard_plan();
    // "auto" asks Discord for its recommended count through the scheduled client (serenity's
    // own autosharding would send one more request outside the global budget).
    let total = match plan {
        ShardPlan::Auto => recommended,
        ShardPlan::Range { total, .. } => total,
    };
    let gateway = Gateway {
        api_base_url: config.discord.api_base_url.clone(),
        token,
        rest: rest.clone(),
        shutdown: shutdown.clone(),
        plan,
        total,
    };
    let mode = config.discord.message_content;
    let first = gateway
        .client(connection.clone(), mode != MessageContent::Off)
        .await
        .context("Discord client")?;
    let managers: ManagerCell = Arc::new(std::sync::Mutex::new(first.shard_manager.clone()));
    let replaced = managers.clone();
    let client = shutdown.spawn(async move {
        let ended = gateway.run(first).await;
        let refused = matches!(
            ended,
            Err(serenity::Error::Gateway(
                serenity::gateway::GatewayError::DisallowedGatewayIntents
                    | serenity::gateway::GatewayError::InvalidGatewayIntents
            ))
        );
        if mode != MessageContent::Auto || !refused || gateway.shutdown.token().is_cancelled() {
            return ended;
        }
        tracing::warn!(
            "Discord refused the Message Content intent (close 4014): connecting again without \
             it. Mentions, replies to the bot, DMs and commands work; trigger words, \
             always-reply channels, follow-ups without a mention and random turns are off. \
             Switch the intent on under Bot in the Discord developer portal to have them."
        );
        connection
            .data
            .message_content
            .store(false, std::sync::atomic::Ordering::Relaxed);
        let second = gateway.client(connection, false).await?;
        *replaced
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = second.shard_manager.clone();
        gateway.run(second).await
    });
    let stuck_after = Duration::from_secs(config.discord.gateway_stuck_secs);
    Ok(DiscordClient {
        shard_manager: managers.clone(),
        stuck_after,
        watchdog: Watchdog::start(managers, stuck_after),
        client: Some(client),
    })
}

/// What every gateway client of this process is built with.
struct Gateway {
    api_base_url: String,
    token: String,
    rest: Arc<rest::client::DiscordRest>,
    shutdown: Shutdown,
    plan: ShardPlan,
    total: u32,
}

impl Gateway {
    /// A gateway client asking for the Message Content intent or not.
    async fn client(
        &self,
        connection: Connection,
        content: bool,
    ) -> Result<serenity::Client, serenity::Error> {
        let mut http = HttpBuilder::new(&self.token);
        if !self.api_base_url.is_empty() {
            // serenity rewrites REST URLs to the proxy only with its rate limiter off; delivery
            // handles rate limits itself (see `rest::ratelimit`).
            http = http
                .proxy(self.api_base_url.trim_end_matches('/'))
                .ratelimiter_disabled(true);
        }
        let framework = framework(connection, self.rest.clone(), self.shutdown.clone());
        let mut intents = GatewayIntents::GUILDS
            | GatewayIntents::GUILD_MESSAGES
            | GatewayIntents::DIRECT_MESSAGES;
        if content {
            intents |= GatewayIntents::MESSAGE_CONTENT;
        }
        ClientBuilder::new_with_http(http.build(), intents)
            .framework(framework)
            .await
    }

    /// Runs the client's shards until it ends.
    async fn run(&self, mut client: serenity::Client) -> Result<(), serenity::Error> {
        let (plan, total) = (self.plan, self.total);
        let content = client
            .shard_manager
            .intents()
            .contains(GatewayIntents::MESSAGE_CONTENT);
        tracing::info!(shards = %plan.owner(), total, content, "connecting to the Discord gateway");
        match plan {
            ShardPlan::Auto => client.start_shards(total).await,
            // serenity's range end is the last shard itself.
            ShardPlan::Range { first, last, total } => {
                client.start_shard_range(first..last, total).await
            }
        }
    }
}

/// The poise framework: the commands, the event handler, and a `setup` that cannot fail on the
/// network (poise keeps every event waiting for the data it returns), so command registration
/// goes on in the background (SPEC D8).
fn framework(
    connection: Connection,
    registration_rest: Arc<rest::client::DiscordRest>,
    registrar: Shutdown,
) -> poise::Framework<Arc<BotData>, Error> {
    let Connection { data, bot, cache } = connection;
    poise::Framework::builder()
        .options(poise::FrameworkOptions {
            commands: commands::all(),
            on_error: |error| Box::pin(commands::on_error(error)),
            event_handler: |ctx, event| {
                Box::pin(async move {
                    gateway::events::handle(event, ctx.user_data, &ctx.serenity_context.http)
                        .await;
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
                let commands = poise::builtins::create_application_commands(
                    &framework.options().commands,
                )
                .iter()
                .filter_map(|command| serde_json::to_value(command).ok())
                .map(|mut command| {
                    commands::localize_menu_names(&mut command);
                    command
                })
                .collect();
                registrar.spawn(rest::registration::keep_registered(
                    registration_rest,
                    ready.application.id.get(),
                    commands,
                    registrar.token().clone(),
                ));
                tracing::info!(user = %ready.user.name, guilds = ready.guilds.len(), "connected to Discord");
                Ok(data)
            })
        })
        .build()
}

/// The shard count Discord recommends (`GET /gateway/bot`, which also checks the token), or 1
/// when it does not say. While Discord cannot be reached (no connection, no answer, a 5xx) it
/// tries again after 1 s, then twice as long each time up to `longest`, with one warning per
/// try naming the address and the cause (SPEC D8). A refused token is [`TokenRejected`].
async fn recommended_shards(
    rest: &rest::client::DiscordRest,
    longest: Duration,
) -> anyhow::Result<u32> {
    let route = rest::ratelimit::Route {
        template: "GET /gateway/bot",
        major: 0,
        local_per_5s: None,
    };
    let mut pause = Duration::from_secs(1).min(longest);
    loop {
        match rest.get_answer(route, "/gateway/bot").await {
            Ok(answer) => {
                return Ok(answer
                    .get("shards")
                    .and_then(serde_json::Value::as_u64)
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|n| (1..=16_384).contains(n))
                    .unwrap_or(1));
            }
            Err(rest::client::GetError::Status(401)) => return Err(TokenRejected.into()),
            Err(rest::client::GetError::Status(status)) if status < 500 => {
                tracing::warn!(
                    status,
                    "Discord did not say how many shards to run; running one"
                );
                return Ok(1);
            }
            Err(error) => {
                tracing::warn!(
                    address = %rest.base(),
                    %error,
                    retry_in_secs = pause.as_secs(),
                    "Discord cannot be reached; trying again"
                );
                tokio::time::sleep(pause).await;
                pause = pause.saturating_mul(2).min(longest);
            }
        }
    }
}

/// Delivery's REST client (its own rate limits and retries, see [`rest::client`]).
pub fn discord_rest(
    config: &Config,
    token: &SecretString,
) -> anyhow::Result<Arc<rest::client::DiscordRest>> {
    let rest =
        rest::client::DiscordRest::new(&config.discord, token).context("Discord HTTP client")?;
    Ok(Arc::new(rest))
}
