//! Restarts repeat nothing (SPEC D5), proved the hard way: the real `persona-bot run` binary as a
//! child process, against the fake Discord and the fake OpenAI-compatible server in this test,
//! killed with SIGKILL at a point of a turn (mid-stream, after a sticker, after
//! `create_reminder`) and started again on the same database, after Discord's five-minute nonce
//! memory is over (so only the bot's own records stand between a resumed turn and a repeat). The
//! resumed turn must post no message and no sticker twice and create no reminder twice. Each case
//! runs on SQLite and on PostgreSQL. Gateway sessions the bot does not choose (a rolling deploy,
//! a RESUME Discord refuses) are in `restart_cases/sessions.rs`.

// The shared fakes this binary uses (tests/support/). Public, so that what it leaves
// unused of them is not dead code.
pub mod support {
    pub mod db;
    pub mod fake_discord;
    pub mod fake_openai;
    pub mod mcp_server;
}

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use sqlx::Connection;
use support::db::TestDb;
use support::fake_discord::{FakeDiscord, Incoming, MANAGE_GUILD, Slash, World};
use support::fake_openai::{FakeOpenAi, Reply, Sse};

const GUILD: u64 = 100;
const GENERAL: u64 = 200;
const BOT: u64 = 900;
const ALICE: u64 = 300;
const BOB: u64 = 301;
/// The fake world's "wave" sticker.
const WAVE: u64 = 700;

on_both_databases!(
    a_turn_killed_mid_stream_posts_each_message_once,
    a_turn_killed_after_a_pause_cuts_its_reply_the_same_way,
    a_turn_killed_after_its_sticker_sends_it_once,
    a_turn_killed_after_its_reaction_keeps_its_one_expression,
    a_turn_killed_after_create_reminder_creates_it_once,
    an_approval_survives_a_restart_and_the_approved_call_runs_once,
    an_outside_effect_runs_once_across_kill_9_after_approval,
    sigterm_mid_turn_exits_0_and_the_next_start_goes_on,
    two_processes_split_the_shards_and_a_stopped_ones_messages_are_taken_over,
    messages_sent_while_the_bot_was_down_are_answered_once_after_it_starts,
    a_start_on_an_empty_database_answers_nothing_twice,
    a_webhook_post_whose_record_was_lost_is_posted_once,
    a_refused_mention_stays_unanswered_after_a_crash,
    a_killed_question_stays_stopped_after_a_crash,
    a_killed_question_stays_stopped_after_a_clean_stop,
    a_rolling_deploy_asks_the_model_once,
    a_mention_sent_while_the_session_could_not_resume_is_answered_once,
    a_mention_sent_while_no_session_is_answered_once_without_last_message_ids,
);

#[path = "restart_cases/answered.rs"]
mod answered;
use answered::{
    a_killed_question_stays_stopped_after_a_clean_stop,
    a_killed_question_stays_stopped_after_a_crash,
    a_refused_mention_stays_unanswered_after_a_crash,
    a_start_on_an_empty_database_answers_nothing_twice,
    a_webhook_post_whose_record_was_lost_is_posted_once,
};
#[path = "restart_cases/outside.rs"]
mod outside;
use outside::an_outside_effect_runs_once_across_kill_9_after_approval;
#[path = "restart_cases/sessions.rs"]
mod sessions;
use sessions::{
    a_mention_sent_while_no_session_is_answered_once_without_last_message_ids,
    a_mention_sent_while_the_session_could_not_resume_is_answered_once,
    a_rolling_deploy_asks_the_model_once,
};

/// The bot as a child process, with its stderr kept in a file for a failure's message.
struct Bot {
    child: Child,
    log: std::path::PathBuf,
}

impl Bot {
    fn start(dir: &Path, db: &TestDb, round: u32) -> Self {
        Self::start_with(dir, db, round, &[])
    }

    /// Starts the bot with extra environment (settings as `PERSONA_BOT_...`).
    fn start_with(dir: &Path, db: &TestDb, round: u32, env: &[(&str, &str)]) -> Self {
        let log = dir.join(format!("bot-{round}.log"));
        let stderr = std::fs::File::create(&log).expect("log file");
        let mut command = Command::new(env!("CARGO_BIN_EXE_persona-bot"));
        for (key, _) in std::env::vars() {
            if key.starts_with("PERSONA_BOT_") {
                command.env_remove(key);
            }
        }
        let child = command
            .args(["run", "--config-dir"])
            .arg(dir)
            .env("DISCORD_TOKEN", "test-token")
            .env("PROVIDER_API_KEYS", "provider-key")
            .env("DATABASE_URL", &db.url)
            .env("RUST_LOG", "info,persona_bot=debug")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("start persona-bot");
        Self { child, log }
    }

    fn kill(mut self) {
        // SIGKILL: nothing is flushed, nothing winds down.
        self.child.kill().expect("kill -9");
        self.child.wait().expect("reap");
    }

    /// SIGTERM, then waits for the exit (a hang fails the test after 30 s).
    fn terminate(self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill -TERM");
        assert!(sent.success());
        self.wait_exit(Duration::from_secs(30))
    }

    /// Waits for the process to end by itself (a hang fails the test after `within`).
    fn wait_exit(mut self, within: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "no exit in time\n--- bot log ---\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Bot {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The fakes, a config directory pointing the bot at them, and the database.
struct Stage {
    discord: FakeDiscord,
    openai: FakeOpenAi,
    db: TestDb,
    dir: tempfile::TempDir,
}

impl Stage {
    async fn new(db: TestDb) -> Self {
        Self::in_world(db, World::simple()).await
    }

    async fn in_world(db: TestDb, world: World) -> Self {
        let discord = FakeDiscord::start(world).await;
        let openai = FakeOpenAi::start().await;
        let dir = tempfile::tempdir().expect("temp dir");
        let local = format!(
            "[discord]\napi_base_url = \"{}\"\n\
             [provider]\nbase_url = \"{}\"\nmodels = [\"test-model\"]\n\
             idle_timeout_secs = 120\nfirst_token_timeout_secs = 120\n\
             [image_worker]\nrun_in_bot = false\n\
             [shutdown]\ngrace_secs = 2\n\
             [turn]\nqueue_lease_secs = 1\n",
            discord.base_url, openai.base_url
        );
        std::fs::write(dir.path().join("local.toml"), local).expect("local.toml");
        Self {
            discord,
            openai,
            db,
            dir,
        }
    }

    /// Starts the bot and waits until its `round`-th gateway session identified. A restart
    /// comes after Discord forgot the nonces of the first run's messages.
    async fn start_bot(&self, round: u32) -> Bot {
        self.start_bot_with(round, &[]).await
    }

    /// [`Self::start_bot`] with extra environment (settings as `PERSONA_BOT_...`).
    async fn start_bot_with(&self, round: u32, env: &[(&str, &str)]) -> Bot {
        if round > 1 {
            self.discord.expire_nonces();
        }
        let bot = Bot::start_with(self.dir.path(), &self.db, round, env);
        let identified = usize::try_from(round).expect("round");
        self.until(&bot, "the bot identifies", |s| {
            s.discord.identifies().len() >= identified
        })
        .await;
        bot
    }

    async fn until(&self, bot: &Bot, what: &str, done: impl Fn(&Self) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !done(self) {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for: {what}\n--- bot log ---\n{}",
                bot.log()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Alice mentions the bot in the first guild's general channel.
    async fn mention(&self, text: &str) {
        self.mention_in(GUILD, GENERAL, ALICE, text).await;
    }

    /// A mention of the bot by `author` in `channel` of `guild`.
    async fn mention_in(&self, guild: u64, channel: u64, author: u64, text: &str) {
        let mut m = Incoming::new(
            channel,
            Some(guild),
            author,
            "someone",
            &format!("<@{BOT}> {text}"),
        );
        m.mentions = vec![(BOT, "Aria".into())];
        self.discord.send_message(m).await;
    }

    /// What the bot posted in the channel.
    fn posted(&self) -> Vec<Value> {
        self.discord.messages_in(GENERAL)
    }

    fn texts(&self) -> Vec<String> {
        self.texts_in(GENERAL)
    }

    /// The bot's text messages in `channel`.
    fn texts_in(&self, channel: u64) -> Vec<String> {
        self.discord
            .messages_in(channel)
            .iter()
            .filter_map(|m| m["content"].as_str().map(str::to_owned))
            .filter(|t| !t.is_empty())
            .collect()
    }

    fn stickers(&self) -> usize {
        self.posted()
            .iter()
            .filter(|m| m["sticker_ids"].as_array().is_some_and(|s| !s.is_empty()))
            .count()
    }

    async fn count(&self, table: &str) -> i64 {
        sqlx::any::install_default_drivers();
        let mut conn = sqlx::AnyConnection::connect(&self.db.url)
            .await
            .expect("connect");
        let (count,): (i64,) =
            sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {table}")))
                .fetch_one(&mut conn)
                .await
                .expect("count");
        conn.close().await.ok();
        count
    }

    /// Waits until the channel's queue is empty: the resumed turn ended and was forgotten, so
    /// everything it would post is posted.
    async fn until_answered(&self, bot: &Bot) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.count("queued_messages").await > 0 {
            assert!(
                Instant::now() < deadline,
                "the resumed turn did not finish\n--- bot log ---\n{}",
                bot.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// A long reply under way: the model streams enough for one full message, then stalls; returns
/// once that message is posted, with the reply's two halves (the full reply is `head + tail`).
async fn a_long_turn_under_way(stage: &Stage) -> (Bot, String, String) {
    let (head, tail) = (sentences(0, 45), sentences(45, 45));
    stage.openai.push(Reply::Stream(vec![
        Sse::text(&head),
        Sse::text(&tail[..100]),
        Sse::Hang,
    ]));
    let bot = stage.start_bot(1).await;
    stage.mention("tell me a long story").await;
    stage
        .until(&bot, "the first message is posted", |s| {
            s.texts().len() == 1
        })
        .await;
    // And recorded: a process killed between Discord's answer and the record posts the message
    // again once Discord forgot its nonce (these tests expire nonces on purpose).
    let deadline = Instant::now() + Duration::from_secs(30);
    while stage.count("turn_deliveries").await == 0 {
        assert!(
            Instant::now() < deadline,
            "the first message was not recorded"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (bot, head, tail)
}

/// Every one of the 90 sentences of the long reply was posted once, in order.
fn assert_each_sentence_once(texts: &[String]) {
    let whole: String = texts.concat();
    assert_eq!(whole.matches("Sentence number").count(), 90, "{texts:#?}");
    assert!(
        whole
            .trim_end()
            .ends_with("Sentence number 0089 says a little more here."),
        "{texts:#?}"
    );
}

/// `n` sentences of about 50 characters: long enough text to be cut into several messages.
fn sentences(from: usize, n: usize) -> String {
    (from..from + n)
        .map(|i| format!("Sentence number {i:04} says a little more here. "))
        .collect()
}

// SPEC D5: killed after the first message of a long reply went out, the resumed turn (the model
// answering the same) posts the rest, and the first message once.
async fn a_turn_killed_mid_stream_posts_each_message_once(db: TestDb) {
    let stage = Stage::new(db).await;
    let (bot, head, tail) = a_long_turn_under_way(&stage).await;
    let first = stage.texts();
    bot.kill();

    stage.openai.push(Reply::text(&[&head, &tail]));
    let bot = stage.start_bot(2).await;
    stage.until_answered(&bot).await;
    let texts = stage.texts();
    assert_eq!(texts.first(), first.first(), "{}", bot.log());
    // No message was posted twice.
    assert_each_sentence_once(&texts);
    assert_eq!(stage.openai.requests().len(), 2);
}

// SPEC C4, D5: the model paused after a short first paragraph, so it went out alone; the next
// message (short lines held together) went out too, then the process was killed. The resumed
// turn, the model answering the same without the pause, cuts the reply as the first run did:
// every line is posted once, in order, none lost in a message cut differently.
async fn a_turn_killed_after_a_pause_cuts_its_reply_the_same_way(db: TestDb) {
    let stage = Stage::new(db).await;
    let opening = "Hmm, let me think.";
    let lines: Vec<String> = (0..40)
        .map(|i| format!("Line {i:02} of the story, told briefly."))
        .collect();
    let head = lines[..12].join("\n\n");
    stage.openai.push(Reply::Stream(vec![
        Sse::text(&format!("{opening}\n\n")),
        // Longer than `turn.paragraph_wait_ms` (1.5 s by default): the opening is shown.
        Sse::Delay(Duration::from_secs(3)),
        Sse::text(&format!("{head}\n\n")),
        Sse::Hang,
    ]));
    let bot = stage.start_bot(1).await;
    stage.mention("tell me a story").await;
    stage
        .until(&bot, "the opening and the next message", |s| {
            s.texts().len() == 2
        })
        .await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while stage.count("turn_deliveries WHERE kind = 'piece'").await < 2 {
        assert!(Instant::now() < deadline, "the messages were not recorded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let first = stage.texts();
    assert_eq!(first[0], opening);
    bot.kill();

    let whole = format!("{opening}\n\n{}", lines.join("\n\n"));
    stage.openai.push(Reply::text(&[&whole]));
    let bot = stage.start_bot(2).await;
    stage.until_answered(&bot).await;
    let texts = stage.texts();
    assert_eq!(texts[..2], first[..], "{}", bot.log());
    let all = texts.join("\n\n");
    assert_eq!(all.matches(opening).count(), 1, "{texts:#?}");
    for line in &lines {
        assert_eq!(all.matches(line.as_str()).count(), 1, "{line}: {texts:#?}");
    }
    let at: Vec<usize> = lines.iter().filter_map(|l| all.find(l.as_str())).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "in order: {texts:#?}");
}

// SPEC D5, T9: killed after the sticker went out (the next pass waiting on the model), the
// resumed turn, asking for another sticker, posts none: the turn's one sticker is out.
async fn a_turn_killed_after_its_sticker_sends_it_once(db: TestDb) {
    let stage = Stage::new(db).await;
    let wave = r#"{"name":"wave"}"#;
    stage
        .openai
        .push(Reply::call("call_1", "select_sticker_for_response", wave));
    stage.openai.push(Reply::Stream(vec![Sse::Hang]));
    let bot = stage.start_bot(1).await;
    stage.mention("wave at me").await;
    stage
        .until(&bot, "the second pass asks the model", |s| {
            s.openai.requests().len() == 2
        })
        .await;
    assert_eq!(stage.stickers(), 1);
    bot.kill();

    stage.openai.push(Reply::call(
        "call_1",
        "select_sticker_for_response",
        r#"{"name":"heart"}"#,
    ));
    stage.openai.push(Reply::text(&["There you go!"]));
    let bot = stage.start_bot(2).await;
    stage.until_answered(&bot).await;
    assert_eq!(stage.stickers(), 1, "{:#?}", stage.posted());
    assert_eq!(stage.texts(), vec!["There you go!".to_owned()]);
    let sticker = stage
        .posted()
        .iter()
        .find_map(|m| m["sticker_ids"].get(0).cloned());
    assert_eq!(sticker, Some(Value::String(WAVE.to_string())));
}

// SPEC E1, D5: killed after the persona's reaction went on (the next pass waiting on the
// model), the resumed turn knows its one expression is used: asked for a sticker, it posts none,
// and the reaction is requested once.
async fn a_turn_killed_after_its_reaction_keeps_its_one_expression(db: TestDb) {
    let stage = Stage::new(db).await;
    let reactions = |s: &Stage| {
        s.discord
            .requests()
            .iter()
            .filter(|r| r.method == "PUT" && r.path.contains("/reactions/"))
            .count()
    };
    stage.openai.push(Reply::call(
        "call_1",
        "react_to_message",
        r#"{"emoji":"👍"}"#,
    ));
    stage.openai.push(Reply::Stream(vec![Sse::Hang]));
    let bot = stage.start_bot(1).await;
    stage.mention("like this?").await;
    stage
        .until(&bot, "the second pass asks the model", |s| {
            s.openai.requests().len() == 2
        })
        .await;
    assert_eq!(reactions(&stage), 1);
    bot.kill();

    stage.openai.push(Reply::call(
        "call_2",
        "select_sticker_for_response",
        r#"{"name":"heart"}"#,
    ));
    stage.openai.push(Reply::text(&["Liked."]));
    let bot = stage.start_bot(2).await;
    stage.until_answered(&bot).await;
    assert_eq!(stage.stickers(), 0, "{:#?}", stage.posted());
    assert_eq!(reactions(&stage), 1);
    assert_eq!(stage.texts(), vec!["Liked.".to_owned()]);
}

// SPEC D5: killed after create_reminder ran (the next pass waiting on the model), the resumed
// turn reuses its outcome: one reminder.
async fn a_turn_killed_after_create_reminder_creates_it_once(db: TestDb) {
    let stage = Stage::new(db).await;
    let remind = r#"{"text":"stretch","in_minutes":60}"#;
    stage
        .openai
        .push(Reply::call("call_1", "create_reminder", remind));
    stage.openai.push(Reply::Stream(vec![Sse::Hang]));
    let bot = stage.start_bot(1).await;
    stage.mention("remind me to stretch in an hour").await;
    stage
        .until(&bot, "the second pass asks the model", |s| {
            s.openai.requests().len() == 2
        })
        .await;
    assert_eq!(stage.count("reminders").await, 1);
    bot.kill();

    stage
        .openai
        .push(Reply::call("call_1", "create_reminder", remind));
    stage.openai.push(Reply::text(&["Reminder set."]));
    let bot = stage.start_bot(2).await;
    stage.until_answered(&bot).await;
    assert_eq!(stage.count("reminders").await, 1, "{}", bot.log());
    assert_eq!(stage.texts(), vec!["Reminder set.".to_owned()]);
}

/// Alice presses Approve on the one approval card.
async fn approve_the_card(stage: &Stage) {
    use support::fake_discord::{ButtonPress, button_ids};
    let card = cards(stage).remove(0);
    let approve = button_ids(&card)
        .into_iter()
        .find(|id| id.starts_with("pa1:y:"))
        .expect("Approve");
    let id = card["id"]
        .as_str()
        .and_then(|i| i.parse().ok())
        .expect("id");
    let press = ButtonPress::new(&stage.discord, id, &approve, ALICE);
    stage.discord.press(press).await.expect("a press");
}

/// After a kill -9 while `call` waited for approval: the bot started again, its resumed turn
/// asking the model for `call` again (then hanging), and still one card, not a second.
async fn resumed_on_the_same_card(stage: &Stage, call: Reply) -> Bot {
    stage.openai.push(call);
    stage.openai.push(Reply::Stream(vec![Sse::Hang]));
    let bot = stage.start_bot(2).await;
    stage
        .until(&bot, "the resumed turn asks the model", |s| {
            s.openai.requests().len() == 2
        })
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(cards(stage).len(), 1, "the same card, not a second");
    bot
}

/// The approval cards posted in #general.
fn cards(stage: &Stage) -> Vec<Value> {
    stage
        .discord
        .history(GENERAL)
        .into_iter()
        .filter(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.contains("Approval needed"))
        })
        .collect()
}

// SPEC E3, D5: killed (-9) while a call waits for approval, the resumed turn waits on the same
// request and card (no second card); Approve pressed then runs the call; killed again after
// it ran, the next start reuses its outcome: the call ran once.
async fn an_approval_survives_a_restart_and_the_approved_call_runs_once(db: TestDb) {
    let stage = Stage::new(db).await;
    let remind = r#"{"text":"stand-up","in_minutes":30,"for_channel":true}"#;
    let call = || Reply::call("call_1", "create_reminder", remind);
    stage.openai.push(call());
    let bot = stage.start_bot(1).await;
    stage.mention("remind everyone of the stand-up").await;
    stage
        .until(&bot, "the approval card", |s| cards(s).len() == 1)
        .await;
    bot.kill();

    let bot = resumed_on_the_same_card(&stage, call()).await;
    assert_eq!(stage.count("reminders").await, 0, "nothing runs unapproved");
    approve_the_card(&stage).await;
    stage
        .until(&bot, "the approved call ran", |s| {
            s.openai.requests().len() == 3
        })
        .await;
    assert_eq!(stage.count("reminders").await, 1);
    bot.kill();

    stage.openai.push(call());
    stage.openai.push(Reply::text(&["Done."]));
    let bot = stage.start_bot(3).await;
    stage.until_answered(&bot).await;
    assert_eq!(stage.count("reminders").await, 1, "{}", bot.log());
    assert_eq!(cards(&stage).len(), 1);
    assert!(stage.texts().contains(&"Done.".to_owned()));
}

// SPEC D5: SIGTERM mid-turn (what `docker stop` sends) exits with status 0 within
// `shutdown.grace_secs`: the text posted so far stays, the interrupted message and the one
// waiting behind it stay queued, and the next start answers both, posting nothing twice.
async fn sigterm_mid_turn_exits_0_and_the_next_start_goes_on(db: TestDb) {
    let stage = Stage::new(db).await;
    let (bot, head, tail) = a_long_turn_under_way(&stage).await;
    stage.mention_in(GUILD, GENERAL, BOB, "me next").await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while stage.count("queued_messages").await < 2 {
        assert!(Instant::now() < deadline, "bob's message was not queued");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let status = bot.terminate();
    assert!(status.success(), "exit status {status:?}");
    assert_eq!(stage.texts().len(), 1, "nothing half-said at the stop");
    assert_eq!(
        stage.count("queued_messages").await,
        2,
        "both messages kept"
    );

    stage.openai.push(Reply::text(&[&head, &tail]));
    stage.openai.push(Reply::text(&["Bob's answer."]));
    let bot = stage.start_bot(2).await;
    stage.until_answered(&bot).await;
    let mut texts = stage.texts();
    assert_eq!(texts.pop().as_deref(), Some("Bob's answer."));
    assert_each_sentence_once(&texts);
}

// SPEC D6: two `run` processes on one database split the shards ("0/2", "1/2"): each guild's
// message is answered once, by the process running its shard. When the second process dies in
// the middle of a turn, a process started later for every shard takes its message over once its
// lease ran out, and answers it once.
async fn two_processes_split_the_shards_and_a_stopped_ones_messages_are_taken_over(db: TestDb) {
    use support::fake_discord::SHARD_1_GUILD;
    const SECOND_GENERAL: u64 = 210;
    let stage = Stage::in_world(db, World::sharded()).await;
    stage.discord.set_recommended_shards(2);
    let dir = stage.dir.path();
    let one = Bot::start_with(dir, &stage.db, 1, &[("PERSONA_BOT_DISCORD__SHARDS", "0/2")]);
    let two = Bot::start_with(dir, &stage.db, 2, &[("PERSONA_BOT_DISCORD__SHARDS", "1/2")]);
    stage
        .until(&two, "both shards are ready", |s| {
            s.discord.live_shards().len() == 2
        })
        .await;
    stage.discord.wait_shards_ready(2).await;

    stage.openai.push(Reply::text(&["Hello from shard zero."]));
    stage.mention_in(GUILD, GENERAL, ALICE, "hi").await;
    stage
        .until(&one, "the first guild's answer", |s| {
            !s.texts_in(GENERAL).is_empty()
        })
        .await;
    stage.openai.push(Reply::text(&["Hello from shard one."]));
    stage
        .mention_in(SHARD_1_GUILD, SECOND_GENERAL, ALICE, "hi")
        .await;
    stage
        .until(&two, "the second guild's answer", |s| {
            !s.texts_in(SECOND_GENERAL).is_empty()
        })
        .await;
    stage.until_answered(&two).await;
    assert_eq!(stage.texts_in(GENERAL), vec!["Hello from shard zero."]);
    assert_eq!(
        stage.texts_in(SECOND_GENERAL),
        vec!["Hello from shard one."]
    );
    assert!(one.log().contains("channel=200"), "{}", one.log());
    assert!(!one.log().contains("channel=210"), "{}", one.log());
    assert!(two.log().contains("channel=210"), "{}", two.log());

    // The second process dies mid-turn; its message stays held under its name.
    stage.openai.push(Reply::Stream(vec![Sse::Hang]));
    stage
        .mention_in(SHARD_1_GUILD, SECOND_GENERAL, BOB, "still there?")
        .await;
    stage
        .until(&two, "the model is asked", |s| {
            s.openai.requests().len() == 3
        })
        .await;
    two.kill();
    let status = one.terminate();
    assert!(status.success(), "exit status {status:?}");
    // One process for every shard now: it takes the message over once the lease (1 s) ran out.
    stage.openai.push(Reply::text(&["Sorry for the wait."]));
    let all = Bot::start_with(
        dir,
        &stage.db,
        3,
        &[("PERSONA_BOT_DISCORD__SHARDS", "auto")],
    );
    stage.until_answered(&all).await;
    assert_eq!(
        stage.texts_in(SECOND_GENERAL),
        vec!["Hello from shard one.", "Sorry for the wait."]
    );
    assert!(
        all.log().contains("took over queued messages"),
        "{}",
        all.log()
    );
}

fn count_requests(stage: &Stage, method: &str, path_end: &str) -> usize {
    stage
        .discord
        .requests()
        .iter()
        .filter(|r| r.method == method && r.path.ends_with(path_end))
        .count()
}

// SPEC D8: Discord refusing the command registration (400 on every try) leaves the bot
// answering messages; the refusal is one ERROR line with Discord's message and the field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_registration_leaves_the_bot_answering() {
    let stage = Stage::new(TestDb::sqlite().await).await;
    stage.discord.refuse_commands(true);
    let bot = stage.start_bot(1).await;
    stage
        .until(&bot, "the registration is refused", |s| {
            count_requests(s, "PUT", "/commands") == 1
        })
        .await;
    stage.openai.push(Reply::text(&["Still here."]));
    stage.mention("are you deaf?").await;
    stage
        .until(&bot, "the answer", |s| !s.texts().is_empty())
        .await;
    assert_eq!(stage.texts(), vec!["Still here.".to_owned()]);
    let log = bot.log();
    let refusals: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("ERROR") && l.contains("refused the slash commands"))
        .collect();
    assert_eq!(refusals.len(), 1, "{log}");
    assert!(
        refusals[0].contains("0.name: Command name is invalid"),
        "{log}"
    );
}

// SPEC D8: a restart with unchanged commands reads them and writes none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_with_unchanged_commands_writes_none() {
    let stage = Stage::new(TestDb::sqlite().await).await;
    let bot = stage.start_bot(1).await;
    stage
        .until(&bot, "the commands are registered", |s| {
            count_requests(s, "PUT", "/commands") == 1
        })
        .await;
    let status = bot.terminate();
    assert!(status.success());
    let bot = stage.start_bot(2).await;
    stage
        .until(&bot, "the second start reads the commands", |s| {
            count_requests(s, "GET", "/commands") == 2
        })
        .await;
    stage
        .until(&bot, "the second start finds them unchanged", |_| {
            bot.log().contains("slash commands up to date")
        })
        .await;
    assert_eq!(count_requests(&stage, "PUT", "/commands"), 1);
}

// SPEC D8: a 429 on the command registration is waited out (its `retry_after`), and the
// commands land; it is not reported as a refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_on_registration_is_waited_out_and_the_commands_land() {
    let stage = Stage::new(TestDb::sqlite().await).await;
    stage.discord.rate_limit_commands_next(2);
    let bot = stage.start_bot(1).await;
    stage
        .until(&bot, "the commands land after two 429s", |s| {
            count_requests(s, "PUT", "/commands") == 3 && !s.discord.commands().is_empty()
        })
        .await;
    stage
        .until(&bot, "the registration is logged", |_| {
            bot.log().contains("slash commands registered")
        })
        .await;
    assert!(!bot.log().contains("ERROR"), "{}", bot.log());
}

// SPEC D8: a Discord that cannot be reached at start is tried again with a growing pause
// (capped by discord.reconnect_max_secs), one warning per try naming the address and the
// cause; /healthz answers 503 meanwhile; SIGTERM still ends the process at once, with status 0.
// It used to log serenity's warning every 5 s without the cause, and ignore the signal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_discord_is_retried_with_capped_backoff_and_reported() {
    let stage = Stage::new(TestDb::sqlite().await).await;
    let metrics = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = metrics.local_addr().expect("address").to_string();
    drop(metrics);
    let bot = Bot::start_with(
        stage.dir.path(),
        &stage.db,
        1,
        &[
            ("PERSONA_BOT_DISCORD__API_BASE_URL", "http://127.0.0.1:1"),
            ("PERSONA_BOT_DISCORD__RECONNECT_MAX_SECS", "2"),
            ("PERSONA_BOT_METRICS__LISTEN", &address),
        ],
    );
    let tries = |log: &str| -> Vec<String> {
        log.lines()
            .filter(|l| l.contains("Discord cannot be reached"))
            .map(str::to_owned)
            .collect()
    };
    stage
        .until(&bot, "four tries", |_| tries(&bot.log()).len() >= 4)
        .await;
    let tries = tries(&bot.log());
    for line in &tries {
        assert!(line.contains("WARN"), "{line}");
        assert!(line.contains("http://127.0.0.1:1/api/v10"), "{line}");
        assert!(line.contains("Connection refused"), "the cause: {line}");
    }
    let pauses: Vec<&str> = tries
        .iter()
        .map(|l| l.split("retry_in_secs=").nth(1).unwrap_or("").trim())
        .collect();
    assert_eq!(pauses[..4], ["1", "2", "2", "2"], "{tries:?}");
    let health = std::process::Command::new(env!("CARGO_BIN_EXE_persona-bot"))
        .args(["health", "--config-dir"])
        .arg(stage.dir.path())
        .env("PERSONA_BOT_METRICS__LISTEN", &address)
        .output()
        .expect("persona-bot health");
    let said = String::from_utf8_lossy(&health.stdout);
    assert_eq!(health.status.code(), Some(1), "{said}");
    assert!(said.contains("gateway not connected"), "{said}");
    assert!(!stage.discord.gateway_used());
    let status = bot.terminate();
    assert_eq!(status.code(), Some(0));

    // An API that takes the connection and never answers: each try ends after
    // discord.request_timeout_secs and says so (it used to be 20 s of silence).
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let silent_url = format!("http://{}", silent.local_addr().expect("address"));
    let bot = Bot::start_with(
        stage.dir.path(),
        &stage.db,
        2,
        &[
            ("PERSONA_BOT_DISCORD__API_BASE_URL", &silent_url),
            ("PERSONA_BOT_DISCORD__REQUEST_TIMEOUT_SECS", "1"),
        ],
    );
    let timed_out = |log: &str| {
        log.lines()
            .filter(|l| l.contains("Discord cannot be reached") && l.contains("timed out"))
            .count()
    };
    stage
        .until(&bot, "two tries that time out", |_| {
            timed_out(&bot.log()) >= 2
        })
        .await;
    assert_eq!(bot.terminate().code(), Some(0));
    drop(silent);
}

// SPEC D8: each way the gateway client can end ends the process cleanly, in one line, with the
// status of the README's table and no panic: Ctrl-C (SIGINT) exits 0; a gateway refusing the
// intents (close 4014) exits 2 naming the Message Content Intent; a gateway that refuses every
// session for another reason (4010, a shard it may not run) exits 1 once no shard was connected
// for discord.gateway_stuck_secs, so a service manager starts it afresh (it used to stay up,
// deaf, trying again every 41 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_way_the_gateway_client_ends_is_a_clean_exit() {
    let stage = Stage::new(TestDb::sqlite().await).await;
    let bot = stage.start_bot(1).await;
    stage.discord.wait_ready().await;
    let pid = bot.child.id().to_string();
    let sent = Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill -INT");
    assert!(sent.success());
    let status = bot.wait_exit(Duration::from_secs(30));
    assert_eq!(status.code(), Some(0));

    for (code, status, says) in [
        (4014, 2, "Message Content Intent"),
        (4010, 1, "has not been connected for 10 s"),
    ] {
        stage.discord.close_identifies_with(Some(code));
        let bot = Bot::start_with(
            stage.dir.path(),
            &stage.db,
            code.into(),
            &[("PERSONA_BOT_DISCORD__GATEWAY_STUCK_SECS", "10")],
        );
        let log_path = bot.log.clone();
        let exit = bot.wait_exit(Duration::from_secs(30));
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        assert_eq!(exit.code(), Some(status), "close {code}: {log}");
        assert!(!log.contains("panicked"), "{log}");
        let last = log.lines().last().unwrap_or_default();
        assert!(
            last.contains(says),
            "close {code}, last line: {last}\n{log}"
        );
    }
}

// SPEC D10: `check-config --connect` opens the database and asks the provider and Discord who
// they are: one line each and exit 0 when all answer; a refused key or token is exit 2 naming
// the variable (never its value); a database that does not answer is exit 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_config_connect_asks_each_service() {
    let stage = Stage::new(TestDb::sqlite().await).await;
    let check = |env: &[(&str, &str)]| {
        let out = Command::new(env!("CARGO_BIN_EXE_persona-bot"))
            .args(["check-config", "--connect", "--config-dir"])
            .arg(stage.dir.path())
            .env("DISCORD_TOKEN", "test-token")
            .env("PROVIDER_API_KEYS", "provider-key")
            .env("DATABASE_URL", &stage.db.url)
            .envs(env.iter().copied())
            .output()
            .expect("check-config");
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        (out.status.code(), said)
    };
    let (code, said) = tokio::task::block_in_place(|| check(&[]));
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("database: ok, Sqlite"), "{said}");
    assert!(said.contains("lists model test-model"), "{said}");
    assert!(said.contains("accepts the token of Aria (900)"), "{said}");
    assert!(!said.contains("Message Content"), "{said}");

    // SPEC D14: an app without the Message Content intent is told what the bot will do.
    stage
        .discord
        .withhold_intents(support::fake_discord::MESSAGE_CONTENT);
    let (code, said) = tokio::task::block_in_place(|| check(&[]));
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains("the Message Content intent is not granted")
            && said.contains("trigger words"),
        "{said}"
    );
    stage.discord.withhold_intents(0);

    stage.openai.refuse_key("provider-key");
    stage.discord.reject_token("test-token", true);
    let (code, said) = tokio::task::block_in_place(|| check(&[]));
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains("provider: refused") && said.contains("PROVIDER_API_KEYS"),
        "{said}"
    );
    assert!(
        said.contains("discord: refused") && said.contains("DISCORD_TOKEN"),
        "{said}"
    );
    assert!(
        !said.contains("provider-key") && !said.contains("test-token"),
        "{said}"
    );

    let (code, said) = tokio::task::block_in_place(|| {
        check(&[
            ("DATABASE_URL", "postgres://postgres@127.0.0.1:1/none"),
            ("PROVIDER_API_KEYS", "another-key"),
            ("DISCORD_TOKEN", "another-token"),
        ])
    });
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("database: not reachable") && said.contains("connection refused"),
        "{said}"
    );
}

// SPEC D8: a token Discord refuses ends the process within seconds with status 2 and one line
// naming DISCORD_TOKEN (never its value), without a panic: refused on REST at start, and
// refused only by the gateway (close 4004).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_token_ends_with_status_2_and_one_line() {
    for on_rest in [true, false] {
        let stage = Stage::new(TestDb::sqlite().await).await;
        stage.discord.reject_token("test-token", on_rest);
        let bot = Bot::start(stage.dir.path(), &stage.db, 1);
        let log_path = bot.log.clone();
        let status = bot.wait_exit(Duration::from_secs(10));
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        assert_eq!(status.code(), Some(2), "on_rest {on_rest}: {log}");
        let named: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("DISCORD_TOKEN"))
            .collect();
        assert_eq!(named.len(), 1, "on_rest {on_rest}: {log}");
        assert!(!log.contains("panicked"), "{log}");
        assert!(
            !log.contains("test-token"),
            "the token itself is never shown: {log}"
        );
    }
}

/// The bot's messages in `channel` that reply to `message`.
fn replies_to(stage: &Stage, channel: u64, message: u64) -> usize {
    stage
        .discord
        .messages_in(channel)
        .iter()
        .filter(|m| {
            m["message_reference"]["message_id"]
                .as_str()
                .and_then(|id| id.parse::<u64>().ok())
                == Some(message)
        })
        .count()
}

/// A message someone sends while the bot is down, `age` ago: a mention of the bot or not.
fn sent_while_down(
    stage: &Stage,
    (channel, guild): (u64, Option<u64>),
    author: u64,
    text: &str,
    mention: bool,
    age: Duration,
) -> u64 {
    let content = if mention {
        format!("<@{BOT}> {text}")
    } else {
        text.to_owned()
    };
    let mut m = Incoming::new(channel, guild, author, "someone", &content);
    if mention {
        m.mentions = vec![(BOT, "Aria".into())];
    }
    stage.discord.post_unseen(m, age)
}

// SPEC D9: what was sent while the bot was down is answered once after it starts, each as a
// reply, oldest first: a mention in a channel the bot saw before (read after the last message
// it saw there), a mention in a channel it never saw (read from the window's start) and a DM.
// A message from the gap not addressed to the bot and a mention older than the window
// (ten minutes by default) are left alone. The thought log says what the catch-up found.
async fn messages_sent_while_the_bot_was_down_are_answered_once_after_it_starts(db: TestDb) {
    const MODS_PUBLIC: u64 = 202;
    const THOUGHTS: u64 = 201;
    let stage = Stage::new(db).await;
    stage.openai.push(Reply::text(&["Hello Alice."]));
    stage.openai.push(Reply::text(&["Hello in a DM."]));
    let bot = stage.start_bot(1).await;
    let set = stage
        .discord
        .slash(Slash {
            name: "thoughtlog".into(),
            options: serde_json::json!([{ "name": "set", "type": 1, "options": [
                { "name": "channel", "type": 7, "value": THOUGHTS.to_string() }] }]),
            guild_id: Some(GUILD),
            channel_id: GENERAL,
            user_id: 500,
            user_name: "owner".into(),
            permissions: MANAGE_GUILD,
            locale: "en-US".into(),
        })
        .await;
    stage
        .until(&bot, "the thought log is set", |s| {
            s.discord
                .interaction_responses()
                .iter()
                .any(|(i, _)| *i == set)
        })
        .await;
    stage.mention("hello").await;
    // Bob, not Alice: a second message within Alice's cooldown would not be answered.
    let (dm, _) = stage.discord.send_dm(BOB, "hi").await;
    stage
        .until(&bot, "the first answers", |s| {
            s.texts().len() == 1 && s.texts_in(dm).len() == 1
        })
        .await;
    assert!(bot.terminate().success());

    let now = Duration::ZERO;
    let general = (GENERAL, Some(GUILD));
    let mods = (MODS_PUBLIC, Some(GUILD));
    let too_old = sent_while_down(
        &stage,
        mods,
        ALICE,
        "an old question",
        true,
        Duration::from_secs(700),
    );
    let question = sent_while_down(&stage, general, BOB, "are you there?", true, now);
    let chatter = sent_while_down(&stage, general, ALICE, "just chatting", false, now);
    let new_channel = sent_while_down(&stage, mods, BOB, "and here?", true, now);
    let in_dm = sent_while_down(&stage, (dm, None), BOB, "still there?", false, now);
    for _ in 0..3 {
        stage.openai.push(Reply::text(&["Back now."]));
    }
    let bot = stage.start_bot(2).await;
    stage
        .until(&bot, "the three missed messages are answered", |s| {
            replies_to(s, GENERAL, question) == 1
                && replies_to(s, MODS_PUBLIC, new_channel) == 1
                && replies_to(s, dm, in_dm) == 1
        })
        .await;
    stage
        .until(&bot, "the thought log says what was caught up", |s| {
            s.discord.messages_in(THOUGHTS).iter().any(|m| {
                m["embeds"][0]["title"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("Caught up"))
            })
        })
        .await;
    // Time for a wrong second answer to show.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(stage.openai.requests().len(), 5, "{}", bot.log());
    assert_eq!(replies_to(&stage, GENERAL, chatter), 0);
    assert_eq!(replies_to(&stage, MODS_PUBLIC, too_old), 0);
    assert_eq!(stage.texts().len(), 2, "{:?}", stage.texts());
    assert_eq!(stage.texts_in(MODS_PUBLIC).len(), 1);
    assert_eq!(stage.texts_in(dm).len(), 2);
    let caught_up: Vec<Value> = stage
        .discord
        .messages_in(THOUGHTS)
        .iter()
        .map(|m| m["embeds"][0].clone())
        .filter(|e| {
            e["title"]
                .as_str()
                .is_some_and(|t| t.starts_with("Caught up"))
        })
        .collect();
    assert_eq!(caught_up.len(), 1, "one notice per catch-up: {caught_up:?}");
    let embed = &caught_up[0];
    let field = |name: &str| {
        embed["fields"]
            .as_array()
            .and_then(|f| f.iter().find(|f| f["name"] == name))
            .map(|f| f["value"].clone())
    };
    assert_eq!(field("Channels read"), Some("2".into()), "{embed}");
    assert_eq!(
        field("Unanswered messages addressed to the bot"),
        Some("2".into()),
        "{embed}"
    );
    assert_eq!(field("Queued to be answered"), Some("2".into()), "{embed}");
}
