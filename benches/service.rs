//! The bot as a service: the release binary (`persona-bot run`) as a child process against the
//! fake Discord (REST + gateway) and the fake OpenAI-compatible server, both in this process on
//! 127.0.0.1, with a temporary SQLite file and the shipped defaults (only the fakes' URLs, the
//! user cooldown and the provider's first-token and idle timeouts set, through the environment,
//! as the end-to-end tests set them).
//!
//! Measured, from `/proc/<pid>/status`:
//! - **Idle**: VmRSS 5 s after the gateway READY.
//! - **Turns**: VmRSS after 1,000 turns across 100 channels: ten rounds of one mention in each
//!   channel, each round waiting until every channel has its reply (one message a turn, streamed
//!   at once by the fake model), then 5 s of quiet.
//! - **SIGTERM**: a slow streamed reply in progress (a chunk every 250 ms for 30 s), SIGTERM once
//!   the stream's first bytes went out; the time from the signal to the process's exit, and its
//!   exit status.
//!
//! Every wait has a limit; on one that runs out, the bench says which, kills the child and
//! exits non-zero.
//!
//! Run: `scripts/measure-service` (`cargo bench --bench service`; about a minute after the
//! release build).

// The fakes of the end-to-end tests (tests/support/), and the benches' own helpers. Public, so
// that what this bench leaves unused of them is not dead code.
#[path = "../tests/support"]
pub mod support {
    pub mod fake_discord;
    pub mod fake_openai;
}
pub mod common;

use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use support::fake_discord::{FakeChannel, FakeDiscord, Incoming, World};
use support::fake_openai::{FakeOpenAi, Reply, Sse};

const GUILD: u64 = 100;
const BOT: u64 = 900;
const ALICE: u64 = 300;
/// The general channel of the fake's simple world, where the SIGTERM turn runs.
const GENERAL: u64 = 200;
/// The turn channels are `FIRST_ROOM..FIRST_ROOM + ROOMS`.
const FIRST_ROOM: u64 = 1000;
const ROOMS: u64 = 100;
const ROUNDS: usize = 10;
const REPLY: &str = "Here you are, in one message.";
const IDLE_AFTER_READY: Duration = Duration::from_secs(5);
const QUIET_AFTER_TURNS: Duration = Duration::from_secs(5);
const READY_WITHIN: Duration = Duration::from_secs(30);
const ROUND_WITHIN: Duration = Duration::from_secs(120);
const EXIT_WITHIN: Duration = Duration::from_secs(60);
/// The slow reply: this many chunks, one every `SLOW_STEP`.
const SLOW_CHUNKS: usize = 120;
const SLOW_STEP: Duration = Duration::from_millis(250);

/// The bot's process; killed when dropped unless it already exited.
struct Bot {
    child: Child,
    log: std::path::PathBuf,
}

impl Drop for Bot {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Bot {
    fn spawn(dir: &Path, discord: &FakeDiscord, openai: &FakeOpenAi) -> Self {
        let log = dir.join("bot.log");
        let out = std::fs::File::create(&log).expect("log file");
        let err = out.try_clone().expect("log file");
        // A clean environment: only what this run sets counts (no RUST_LOG, no overrides of the
        // caller's). The working directory has no config/, so the built-in defaults apply.
        let child = Command::new(env!("CARGO_BIN_EXE_persona-bot"))
            .arg("run")
            .current_dir(dir)
            .env_clear()
            .env("DISCORD_TOKEN", "bench-token")
            .env("PROVIDER_API_KEYS", "bench-key")
            .env("DATABASE_URL", format!("sqlite://{}/bot.db", dir.display()))
            .env("PERSONA_BOT_DISCORD__API_BASE_URL", &discord.base_url)
            .env("PERSONA_BOT_PROVIDER__BASE_URL", &openai.base_url)
            .env("PERSONA_BOT_PROVIDER__FIRST_TOKEN_TIMEOUT_SECS", "5")
            .env("PERSONA_BOT_PROVIDER__IDLE_TIMEOUT_SECS", "5")
            .env("PERSONA_BOT_TURN__USER_COOLDOWN_MS", "0")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .expect("spawn the release binary");
        Self { child, log }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The bot's log so far, last lines (for a failed wait).
    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Ends the run: what did not happen in time, the bot's last log lines, the bot killed,
    /// exit code 1.
    fn fail(&mut self, what: &str) -> ! {
        eprintln!(
            "service: timed out waiting for {what}; the bot's last log lines:\n{}",
            self.log_tail()
        );
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::process::exit(1);
    }

    fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Polls `done` every 10 ms for up to `within`; fails the run (naming `what`) past it or
    /// when the bot exits first.
    async fn until(&mut self, what: &str, within: Duration, done: impl Fn() -> bool) {
        let deadline = Instant::now() + within;
        while !done() {
            if let Some(status) = self.exited() {
                eprintln!("service: the bot exited ({status}) while waiting for {what}");
                self.fail(what);
            }
            if Instant::now() >= deadline {
                self.fail(what);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// `/proc/<pid>/status` figures, in KiB.
#[derive(Debug, Clone, Copy, Default)]
struct Memory {
    rss: u64,
    anon: u64,
    file: u64,
    peak: u64,
    threads: u64,
}

impl Memory {
    fn of(pid: u32) -> Self {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)
        };
        Self {
            rss: field("VmRSS:"),
            anon: field("RssAnon:"),
            file: field("RssFile:"),
            peak: field("VmHWM:"),
            threads: field("Threads:"),
        }
    }

    fn print(&self, label: &str) {
        let mib = |kib: u64| kib as f64 / 1024.0;
        println!(
            "{label}: VmRSS {:.1} MiB (anon {:.1}, file {:.1}), peak {:.1} MiB, {} threads",
            mib(self.rss),
            mib(self.anon),
            mib(self.file),
            mib(self.peak),
            self.threads
        );
    }
}

/// Resident KiB of the process's mappings, summed by what backs them (a file's path, `[heap]`,
/// `[stack]`, or `[anon]` for unnamed anonymous mappings), largest first.
fn resident_by_mapping(pid: u32) -> Vec<(String, u64)> {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
    let mut sums: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
    let mut current = String::new();
    for line in smaps.lines() {
        let mut fields = line.split_whitespace();
        let first = fields.next().unwrap_or_default();
        if first.contains('-') && first.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            // `start-end perms offset dev inode [path]`
            current = fields.nth(4).unwrap_or("[anon]").to_owned();
        } else if first == "Rss:" {
            let kib: u64 = fields.next().and_then(|n| n.parse().ok()).unwrap_or(0);
            *sums.entry(current.clone()).or_default() += kib;
        }
    }
    let mut sums: Vec<(String, u64)> = sums.into_iter().filter(|(_, k)| *k > 0).collect();
    sums.sort_by_key(|(_, kib)| std::cmp::Reverse(*kib));
    sums
}

fn print_mappings(pid: u32) {
    let parts: Vec<String> = resident_by_mapping(pid)
        .into_iter()
        .take(6)
        .map(|(path, kib)| {
            let name = path.rsplit('/').next().unwrap_or(&path).to_owned();
            format!("{name} {:.1}", kib as f64 / 1024.0)
        })
        .collect();
    println!("  resident by mapping (MiB): {}", parts.join(", "));
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

fn mention(channel: u64, text: &str) -> Incoming {
    let mut m = Incoming::new(
        channel,
        Some(GUILD),
        ALICE,
        "alice",
        &format!("<@{BOT}> {text}"),
    );
    m.mentions = vec![(BOT, "Aria".into())];
    m
}

fn answer() -> Reply {
    Reply::Stream(vec![Sse::text(REPLY), Sse::finish("stop"), Sse::Done])
}

/// A reply that takes `SLOW_CHUNKS * SLOW_STEP` to stream.
fn slow_answer() -> Reply {
    let mut steps = Vec::new();
    for n in 0..SLOW_CHUNKS {
        steps.push(Sse::text(&format!("word{n} ")));
        steps.push(Sse::Delay(SLOW_STEP));
    }
    steps.push(Sse::finish("stop"));
    steps.push(Sse::Done);
    Reply::Stream(steps)
}

fn sigterm(pid: u32) {
    let pid = libc::pid_t::try_from(pid).expect("pid fits");
    // SAFETY: kill(2) with a valid signal number touches no memory of this process.
    let sent = unsafe { libc::kill(pid, libc::SIGTERM) };
    assert_eq!(sent, 0, "SIGTERM sent");
}

async fn measure() {
    let dir = tempfile::tempdir().expect("temp dir");
    let discord = FakeDiscord::start(rooms()).await;
    let openai = FakeOpenAi::start().await;
    let started = Instant::now();
    let mut bot = Bot::spawn(dir.path(), &discord, &openai);
    let size = std::fs::metadata(env!("CARGO_BIN_EXE_persona-bot")).map_or(0, |m| m.len());
    println!(
        "bot: {} ({:.1} MiB, pid {})",
        env!("CARGO_BIN_EXE_persona-bot"),
        size as f64 / 1_048_576.0,
        bot.pid()
    );

    // (a) idle
    let ready = tokio::time::timeout(READY_WITHIN, discord.wait_ready()).await;
    if ready.is_err() {
        bot.fail("the gateway READY");
    }
    println!(
        "ready {:.0} ms after spawn",
        started.elapsed().as_secs_f64() * 1000.0
    );
    tokio::time::sleep(IDLE_AFTER_READY).await;
    let idle = Memory::of(bot.pid());
    idle.print("idle (5 s after READY)");
    print_mappings(bot.pid());

    // (b) 1,000 turns across 100 channels
    let turns_started = Instant::now();
    for round in 1..=ROUNDS {
        for _ in FIRST_ROOM..FIRST_ROOM + ROOMS {
            openai.push(answer());
        }
        for channel in FIRST_ROOM..FIRST_ROOM + ROOMS {
            discord
                .send_message(mention(channel, &format!("question {round}")))
                .await;
        }
        bot.until(&format!("round {round}'s replies"), ROUND_WITHIN, || {
            (FIRST_ROOM..FIRST_ROOM + ROOMS).all(|c| discord.messages_in(c).len() >= round)
        })
        .await;
    }
    let turns_took = turns_started.elapsed();
    let wrong = (FIRST_ROOM..FIRST_ROOM + ROOMS)
        .filter(|c| {
            let texts: Vec<String> = discord
                .messages_in(*c)
                .iter()
                .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
                .collect();
            texts != vec![REPLY.to_owned(); ROUNDS]
        })
        .count();
    let after_turns_now = Memory::of(bot.pid());
    tokio::time::sleep(QUIET_AFTER_TURNS).await;
    let after_turns = Memory::of(bot.pid());
    let turns = ROUNDS as u64 * ROOMS;
    println!(
        "{turns} turns in {ROOMS} channels answered in {:.1} s ({:.1} turns/s), {} model \
         requests{}",
        turns_took.as_secs_f64(),
        turns as f64 / turns_took.as_secs_f64(),
        openai.requests().len(),
        if wrong > 0 {
            format!(", !! {wrong} channels without exactly the scripted replies")
        } else {
            String::new()
        }
    );
    after_turns_now.print("after the turns (at the last reply)");
    after_turns.print("after the turns (5 s later)");
    print_mappings(bot.pid());

    // (c) SIGTERM mid-turn
    let requests = openai.requests().len();
    openai.push(slow_answer());
    discord.send_message(mention(GENERAL, "a long story")).await;
    bot.until("the slow turn's model request", READY_WITHIN, || {
        openai.requests().len() > requests
    })
    .await;
    // A few chunks out: the reply is in progress.
    tokio::time::sleep(SLOW_STEP * 4).await;
    let before_term = Memory::of(bot.pid());
    let signalled = Instant::now();
    sigterm(bot.pid());
    let deadline = signalled + EXIT_WITHIN;
    let status = loop {
        if let Some(status) = bot.exited() {
            break status;
        }
        if Instant::now() >= deadline {
            bot.fail("the exit after SIGTERM");
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    let took = signalled.elapsed();
    before_term.print("mid-turn, before SIGTERM");
    println!(
        "SIGTERM mid-turn -> exit: {:.0} ms, {status}; the slow stream {}",
        took.as_secs_f64() * 1000.0,
        if openai.dropped_streams() > 0 {
            "was dropped by the bot"
        } else {
            "was read to its end"
        }
    );
    println!(
        "summary: idle {:.1} MiB, after {turns} turns {:.1} MiB, SIGTERM to exit {:.0} ms ({status})",
        idle.rss as f64 / 1024.0,
        after_turns.rss as f64 / 1024.0,
        took.as_secs_f64() * 1000.0,
    );
}

fn main() {
    if !common::asked_for("service") {
        return;
    }
    common::block_on(measure());
}
