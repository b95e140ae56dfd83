//! Delivery under Discord's real limits, end to end: the real bot (`app::start`, serenity, poise,
//! the provider client, SQLite) against the strict fake Discord with its default limits (5
//! message creates per channel per 5 s, 50 requests per second) and the bot's default
//! configuration, as the end-to-end tests start it. The fake model answers every turn at once
//! with a one-message reply.
//!
//! - **Burst**: one mention in each of 50 channels at once, until all 50 replies are posted.
//! - **Sequence**: 30 turns in one channel, one after another (a mention, its reply, the next).
//!
//! For each run: the REST requests the bot made once the scenario began, per turn and by route,
//! the 429s the fake sent, the wall time and turns per second, and p50/p95 of each turn's
//! latency (its message's MESSAGE_CREATE to the bot's last write in that channel for the turn);
//! for the burst also the least time the global limit allows for that many requests.
//!
//! Run: `cargo bench --bench delivery` (about a minute and a half).

// The shared fakes of the end-to-end tests (tests/support/), and the benches' own helpers.
// Public, so that what this bench leaves unused of them is not dead code.
#[path = "../tests/support"]
pub mod support {
    pub mod e2e;
    pub mod fake_discord;
    pub mod fake_openai;
    pub mod harness;
}
pub mod common;

use std::time::{Duration, Instant};

use persona_bot::config::Config;
use support::e2e::{ALICE, BOT, E2e, GENERAL, GUILD};
use support::fake_discord::{FakeChannel, Incoming, RateLimitCounts, Recorded, World};
use support::fake_openai::{Reply, Sse};
use support::harness::Behaviour;

/// The burst's channels are `FIRST_ROOM..FIRST_ROOM + ROOMS`.
const FIRST_ROOM: u64 = 1000;
const ROOMS: u64 = 50;
const SEQUENCE_TURNS: usize = 30;
/// Discord's global limit, which the burst's throughput is held against.
const DISCORD_GLOBAL: u32 = 50;
const RUNS: usize = 3;
const REPLY: &str = "Here you are, in one message.";
/// Quiet time after the last reply, so a late request of the scenario is still counted.
const QUIET: Duration = Duration::from_millis(300);
/// Wait after start-up before a scenario: the start-up requests (outside delivery's scheduler)
/// leave the fake's one-second global window first, so they cost the scenario nothing.
const SETTLE: Duration = Duration::from_millis(1100);

/// The bot against both fakes, started as the end-to-end tests start it.
struct Bot(E2e);

impl std::ops::Deref for Bot {
    type Target = E2e;

    fn deref(&self) -> &E2e {
        &self.0
    }
}

impl Bot {
    async fn start(world: World) -> Self {
        // One user asking in fifty channels at once is past the default per-user rate (SPEC
        // C2); this bench measures Discord's limits, so that rate is off.
        let e2e = E2e::start_in(world, Behaviour::succeed(), Vec::new(), |config| {
            config.turn.user_messages_per_minute = 0;
        })
        .await;
        tokio::time::sleep(SETTLE).await;
        Self(e2e)
    }

    /// A mention of the bot by alice in `channel`; returns when it was sent (its MESSAGE_CREATE
    /// dispatched).
    async fn mention(&self, channel: u64, text: &str) -> Instant {
        let mut m = Incoming::new(
            channel,
            Some(GUILD),
            ALICE,
            "alice",
            &format!("<@{BOT}> {text}"),
        );
        m.mentions = vec![(BOT, "Aria".into())];
        let sent = Instant::now();
        self.discord.send_message(m).await;
        sent
    }

    /// Everything the bot sent from request `from` on, once the scenario has gone quiet.
    async fn requests_since(&self, from: usize) -> Vec<Recorded> {
        tokio::time::sleep(QUIET).await;
        self.discord.requests().split_off(from)
    }
}

/// A turn the scenario started: its channel, when its message was sent, and until when the
/// bot's writes in that channel belong to it.
struct Turn {
    channel: u64,
    sent: Instant,
    until: Option<Instant>,
}

/// What one run of a scenario measured.
struct Run {
    turns: Vec<Turn>,
    /// The bot's requests after the scenario began.
    requests: Vec<Recorded>,
    started: Instant,
    limited: RateLimitCounts,
    /// Turns whose reply is not exactly the one scripted message.
    wrong: usize,
    model_requests: usize,
}

fn answer() -> Reply {
    Reply::Stream(vec![Sse::text(REPLY), Sse::finish("stop"), Sse::Done])
}

fn rooms() -> World {
    let mut world = World::simple();
    for id in FIRST_ROOM..FIRST_ROOM + ROOMS {
        world.guilds[0]
            .channels
            .push(FakeChannel::new(id, &format!("room-{id}"), true));
    }
    world
}

async fn burst() -> Run {
    let bot = Bot::start(rooms()).await;
    for _ in 0..ROOMS {
        bot.openai.push(answer());
    }
    let from = bot.discord.requests().len();
    let before = bot.discord.rate_limit_counts();
    let started = Instant::now();
    let mut turns = Vec::new();
    for channel in FIRST_ROOM..FIRST_ROOM + ROOMS {
        let sent = bot.mention(channel, "a question").await;
        turns.push(Turn {
            channel,
            sent,
            until: None,
        });
    }
    bot.until("every room's reply", |b| {
        (FIRST_ROOM..FIRST_ROOM + ROOMS).all(|c| !b.posted(c).is_empty())
    })
    .await;
    finish(bot, turns, from, before, started).await
}

async fn sequence() -> Run {
    let bot = Bot::start(World::simple()).await;
    for _ in 0..SEQUENCE_TURNS {
        bot.openai.push(answer());
    }
    let from = bot.discord.requests().len();
    let before = bot.discord.rate_limit_counts();
    let started = Instant::now();
    let mut turns: Vec<Turn> = Vec::new();
    for n in 1..=SEQUENCE_TURNS {
        let sent = bot.mention(GENERAL, &format!("question {n}")).await;
        if let Some(last) = turns.last_mut() {
            last.until = Some(sent);
        }
        turns.push(Turn {
            channel: GENERAL,
            sent,
            until: None,
        });
        bot.until("the turn's reply", |b| b.posted(GENERAL).len() >= n)
            .await;
    }
    finish(bot, turns, from, before, started).await
}

async fn finish(
    bot: Bot,
    turns: Vec<Turn>,
    from: usize,
    before: RateLimitCounts,
    started: Instant,
) -> Run {
    let requests = bot.requests_since(from).await;
    let after = bot.discord.rate_limit_counts();
    let mut channels: Vec<u64> = turns.iter().map(|t| t.channel).collect();
    channels.dedup();
    let per_channel = turns.len() / channels.len();
    let wrong = channels
        .iter()
        .filter(|c| {
            let texts: Vec<_> = bot
                .discord
                .messages_in(**c)
                .iter()
                .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
                .collect();
            texts != vec![REPLY.to_owned(); per_channel]
        })
        .count();
    let model_requests = bot.openai.requests().len();
    bot.0.stop().await;
    Run {
        turns,
        requests,
        started,
        limited: RateLimitCounts {
            bucket: after.bucket - before.bucket,
            global: after.global - before.global,
            scripted: after.scripted - before.scripted,
        },
        wrong,
        model_requests,
    }
}

/// Which of the routes the figures split by a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    PostMessage,
    Typing,
    GetMessages,
    Other,
}

fn kind(r: &Recorded) -> Kind {
    let segments: Vec<&str> = r.path.split('?').next().unwrap_or("").split('/').collect();
    match (r.method.as_str(), segments.as_slice()) {
        ("POST", ["", "channels", _, "messages"]) => Kind::PostMessage,
        ("POST", ["", "channels", _, "typing"]) => Kind::Typing,
        ("GET", ["", "channels", _, "messages"]) => Kind::GetMessages,
        _ => Kind::Other,
    }
}

/// Whether the request writes in `channel` (anything but a GET under `/channels/{channel}/`).
fn writes_in(r: &Recorded, channel: u64) -> bool {
    r.method != "GET" && r.path.starts_with(&format!("/channels/{channel}/"))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

impl Run {
    /// Each turn's latency: its message sent to the bot's last write in its channel before the
    /// next turn there began (`None`: the bot wrote nothing for it).
    fn latencies(&self) -> Vec<Option<Duration>> {
        self.turns
            .iter()
            .map(|t| {
                self.requests
                    .iter()
                    .filter(|r| writes_in(r, t.channel) && r.at >= t.sent)
                    .filter(|r| t.until.is_none_or(|until| r.at < until))
                    .map(|r| r.at - t.sent)
                    .max()
            })
            .collect()
    }

    fn count(&self, k: Kind) -> usize {
        self.requests.iter().filter(|r| kind(r) == k).count()
    }

    /// From the first message sent to the bot's last write.
    fn wall(&self) -> Duration {
        self.requests
            .iter()
            .filter(|r| r.method != "GET")
            .map(|r| r.at - self.started)
            .max()
            .unwrap_or_default()
    }

    /// From the bot's first request of the scenario to its last.
    fn span(&self) -> Duration {
        let at = self.requests.iter().map(|r| r.at);
        match (at.clone().min(), at.max()) {
            (Some(first), Some(last)) => last - first,
            _ => Duration::ZERO,
        }
    }

    fn print(&self, name: &str, run: usize, global_per_second: u32) {
        let turns = self.turns.len();
        let total = self.requests.len();
        let per_turn = |n: usize| n as f64 / turns as f64;
        let wall = self.wall();
        println!(
            "{name} run {run}: {turns} turns, {total} requests ({:.2} per turn), {} 429s \
             (bucket {}, global {}, scripted {}), wall {:.0} ms, {:.1} turns/s",
            per_turn(total),
            self.limited.total(),
            self.limited.bucket,
            self.limited.global,
            self.limited.scripted,
            ms(wall),
            turns as f64 / wall.as_secs_f64(),
        );
        let by_kind = [
            ("POST messages", Kind::PostMessage),
            ("POST typing", Kind::Typing),
            ("GET messages", Kind::GetMessages),
            ("other", Kind::Other),
        ]
        .map(|(label, k)| {
            let n = self.count(k);
            format!("{label} {n} ({:.2})", per_turn(n))
        });
        println!("  by route (per turn): {}", by_kind.join(", "));
        let others: Vec<String> = self
            .requests
            .iter()
            .filter(|r| kind(r) == Kind::Other)
            .map(|r| format!("{} {}", r.method, r.path))
            .collect();
        if !others.is_empty() {
            println!("  other requests: {others:?}");
        }
        let latencies = self.latencies();
        let silent = latencies.iter().filter(|l| l.is_none()).count();
        let mut sorted: Vec<Duration> = latencies.into_iter().flatten().collect();
        sorted.sort();
        if let (Some(first), Some(last)) = (sorted.first(), sorted.last()) {
            println!(
                "  message created -> last write: p50 {:.0} ms, p95 {:.0} ms (min {:.0}, max \
                 {:.0}){}",
                ms(common::percentile(&sorted, 0.5)),
                ms(common::percentile(&sorted, 0.95)),
                ms(*first),
                ms(*last),
                if silent > 0 {
                    format!(", {silent} turns with no write")
                } else {
                    String::new()
                },
            );
        }
        let typing: Vec<String> = self
            .turns
            .iter()
            .filter_map(|t| {
                let first = self
                    .requests
                    .iter()
                    .filter(|r| kind(r) == Kind::Typing && writes_in(r, t.channel))
                    .find(|r| r.at >= t.sent && t.until.is_none_or(|until| r.at < until))?;
                Some(format!("{:.0}", ms(first.at - t.sent)))
            })
            .collect();
        if !typing.is_empty() {
            println!(
                "  typing sent in {} turns, this many ms after their message: {}",
                typing.len(),
                typing.join(", ")
            );
        }
        if self.wrong > 0 || self.model_requests != turns {
            println!(
                "  !! {} channels without exactly the scripted replies; {} model requests \
                 for {turns} turns",
                self.wrong, self.model_requests
            );
        }
        if name == "burst" {
            self.print_global(total, global_per_second);
        }
    }

    /// What the global limit allows for this many requests, beside what the run took.
    fn print_global(&self, total: usize, per_second: u32) {
        let per_second = per_second.max(1) as usize;
        // `per_second` go at once, and each further `per_second` a second after the last.
        let least = Duration::from_secs((total.saturating_sub(1) / per_second) as u64);
        let span = self.span();
        let closeness = if least.is_zero() {
            "no wait needed".to_owned()
        } else {
            format!(
                "{:.0}% of the allowed rate",
                100.0 * least.as_secs_f64() / span.as_secs_f64()
            )
        };
        println!(
            "  global limit {per_second}/s: {total} requests need at least {:.0} ms (at a steady \
             {per_second}/s: {:.0} ms); the bot's took {:.0} ms first to last ({closeness}), \
             wall {:.0} ms",
            ms(least),
            total as f64 * 1000.0 / per_second as f64,
            ms(span),
            ms(self.wall()),
        );
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn print_median(name: &str, runs: &[Run]) {
    let of = |f: &dyn Fn(&Run) -> f64| median(runs.iter().map(f).collect());
    let p = |q: f64| {
        move |r: &Run| {
            let mut sorted: Vec<Duration> = r.latencies().into_iter().flatten().collect();
            sorted.sort();
            if sorted.is_empty() {
                0.0
            } else {
                ms(common::percentile(&sorted, q))
            }
        }
    };
    println!(
        "{name} median of {} runs: {:.2} requests per turn, {:.0} 429s, wall {:.0} ms, {:.1} \
         turns/s, p50 {:.0} ms, p95 {:.0} ms",
        runs.len(),
        of(&|r| r.requests.len() as f64 / r.turns.len() as f64),
        of(&|r| r.limited.total() as f64),
        of(&|r| ms(r.wall())),
        of(&|r| r.turns.len() as f64 / r.wall().as_secs_f64()),
        of(&p(0.5)),
        of(&p(0.95)),
    );
}

fn main() {
    if !common::asked_for("delivery") {
        return;
    }
    // Warnings of the bot go to stderr. A shard stopped against the fake gets no close frame
    // back; serenity's warning for it says nothing about delivery.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(
            "warn,serenity::gateway::bridge::shard_runner=error",
        ))
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
    let defaults = Config::shipped_defaults();
    let global = defaults.discord.global_requests_per_second;
    println!(
        "Counted: every REST request the bot made after the scenario's first message (start-up's \
         command registration, /oauth2, /gateway and /users/@me come before it). Latency: the \
         fake's MESSAGE_CREATE of the user's message to the bot's last write (not GET) in that \
         channel for the turn, as the fake received it. Bot defaults: {global} requests/s global, \
         {} message creates per channel per 5 s, typing after {} ms.",
        defaults.discord.channel_messages_per_5s, defaults.turn.typing_delay_ms,
    );
    println!(
        "Targets: 0 429s; at most 1.2 requests per turn; the burst within 10% of the global \
         limit's rate."
    );
    common::block_on(async {
        let mut runs = Vec::new();
        for n in 1..=RUNS {
            let run = burst().await;
            run.print("burst", n, DISCORD_GLOBAL);
            runs.push(run);
        }
        print_median("burst", &runs);
        let mut runs = Vec::new();
        for n in 1..=RUNS {
            let run = sequence().await;
            run.print("sequence", n, DISCORD_GLOBAL);
            runs.push(run);
        }
        print_median("sequence", &runs);
    });
}
