//! Answered once, whatever the bot's database knows (SPEC D5, D11, D12), with the real binary:
//! a start on an empty database, a webhook post whose record was lost in a crash, and the
//! deliberate non-answers (a refusal by the per-user rate, `/kill`) that no restart revives.

use std::time::Duration;

use sqlx::Connection as _;

use super::support::db::TestDb;
use super::support::fake_discord::{Slash, World};
use super::support::fake_openai::{Reply, Sse};
use super::{
    ALICE, BOB, Bot, GENERAL, GUILD, Stage, assert_each_sentence_once, count_requests, replies_to,
    sent_while_down, sentences,
};

/// A fresh database of the same kind as the stage's: what a container run without its volume,
/// a move to another database or a restored backup starts on.
async fn an_empty_database_like(db: &TestDb) -> TestDb {
    match db.backend {
        persona_bot::storage::Backend::Sqlite => TestDb::sqlite().await,
        persona_bot::storage::Backend::Postgres => TestDb::postgres().await,
    }
}

// SPEC D12: started on a database that knows nothing of the channel's past, the bot judges
// what was answered from the channel's history: an answer in an idle channel (no reply
// reference), an answer that waited behind another turn (by reference), and the message its
// author joined to it while it waited are all answered already; only the mention sent while
// the bot was down is asked and answered.
pub(super) async fn a_start_on_an_empty_database_answers_nothing_twice(db: TestDb) {
    let stage = Stage::new(db).await;
    stage.openai.push(Reply::text(&["Answer one."]));
    stage.openai.push(Reply::Stream(vec![
        Sse::Delay(Duration::from_millis(1500)),
        Sse::text("The slow answer."),
        Sse::finish("stop"),
        Sse::Done,
    ]));
    stage.openai.push(Reply::text(&["Bob's answer."]));
    let bot = stage.start_bot(1).await;
    stage.mention("first question").await;
    stage
        .until(&bot, "the idle channel's answer", |s| s.texts().len() == 1)
        .await;
    stage.mention_in(GUILD, GENERAL, 302, "slow question").await;
    stage
        .until(&bot, "the slow question is asked", |s| {
            s.openai.requests().len() == 2
        })
        .await;
    stage
        .mention_in(GUILD, GENERAL, BOB, "bob's question")
        .await;
    stage.mention_in(GUILD, GENERAL, BOB, "bob adds this").await;
    stage
        .until(&bot, "all three answers", |s| s.texts().len() == 3)
        .await;
    stage.until_answered(&bot).await;
    assert!(bot.terminate().success());
    assert_eq!(
        stage.openai.requests().len(),
        3,
        "bob's two messages, one turn"
    );

    let missed = sent_while_down(
        &stage,
        (GENERAL, Some(GUILD)),
        ALICE,
        "did you miss me?",
        true,
        Duration::ZERO,
    );
    stage.openai.push(Reply::text(&["I did."]));
    let empty = an_empty_database_like(&stage.db).await;
    stage.discord.expire_nonces();
    let bot = Bot::start(stage.dir.path(), &empty, 2);
    stage
        .until(&bot, "the missed mention is answered", |s| {
            replies_to(s, GENERAL, missed) == 1
        })
        .await;
    // Time for a wrong second answer to show.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let requests = stage.openai.requests();
    assert_eq!(requests.len(), 4, "{}", bot.log());
    let last = requests[3].body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned();
    assert!(
        last.is_some_and(|m| m["content"].to_string().contains("did you miss me?")),
        "only the missed mention is asked"
    );
    assert_eq!(stage.texts().len(), 4, "{:?}", stage.texts());
}

/// The simple world, where the bot may manage webhooks in #general.
fn webhook_world() -> World {
    let mut world = World::simple();
    let general = &mut world.guilds[0].channels[0];
    assert_eq!(general.id, GENERAL);
    *general = super::support::fake_discord::FakeChannel::new(GENERAL, "general", true)
        .allow_bot(super::support::fake_discord::MANAGE_WEBHOOKS);
    world
}

/// The server speaks as its own persona, Mira, stored as `/persona edit` stores it.
async fn mira_speaks(db: &TestDb) {
    use persona_bot::domain::ports::{Persona, SettingsChange, SettingsStore as _};
    let storage = db.open().await;
    let persona = Persona {
        id: persona_bot::domain::scope::PersonaId("aria".into()),
        display_name: "Mira".into(),
        system_prompt: "You are Mira.".into(),
        trigger_words: vec!["mira".into()],
        avatar_url: None,
    };
    let change = SettingsChange::Persona(Some(persona));
    let server = persona_bot::domain::scope::ServerId(GUILD);
    storage.settings.update(server, change).await.unwrap();
    storage.close().await;
}

// SPEC D5, D11: a webhook takes no nonce. The persona's first message is posted through the
// channel's webhook but its record never lands (Discord answered 500 after posting, as a crash
// between the post and its record leaves it); the process is killed mid-turn. The resumed
// turn finds that post in the channel and posts every sentence once.
pub(super) async fn a_webhook_post_whose_record_was_lost_is_posted_once(db: TestDb) {
    mira_speaks(&db).await;
    let stage = Stage::in_world(db, webhook_world()).await;
    let (head, tail) = (sentences(0, 45), sentences(45, 45));
    stage.openai.push(Reply::Stream(vec![
        Sse::text(&head),
        Sse::text(&tail[..100]),
        Sse::Hang,
    ]));
    stage.discord.fail_after_webhook_post_next(GENERAL, 500);
    let bot = stage.start_bot(1).await;
    stage.mention("tell me a long story").await;
    stage
        .until(&bot, "the first post, unrecorded", |s| {
            s.discord.webhook_posts(GENERAL).len() == 1
        })
        .await;
    stage
        .until(&bot, "the model streams on", |s| {
            s.openai.requests().len() == 1
        })
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    bot.kill();

    stage.openai.push(Reply::text(&[&head, &tail]));
    let bot = stage.start_bot(2).await;
    stage.until_answered(&bot).await;
    let posts: Vec<String> = stage
        .discord
        .webhook_posts(GENERAL)
        .iter()
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect();
    assert_each_sentence_once(&posts);
    assert!(stage.texts().is_empty(), "all by the persona's webhook");
}

// SPEC D12: a mention refused by the per-user rate is a deliberate non-answer. The process is
// killed before its last-seen marks were stored (they are removed here, as a crash within
// their few seconds leaves them); the catch-up after the start reads the refused mention back,
// and leaves it unanswered.
pub(super) async fn a_refused_mention_stays_unanswered_after_a_crash(db: TestDb) {
    let stage = Stage::new(db).await;
    stage.openai.push(Reply::text(&["Hello Alice."]));
    let once_a_minute = [("PERSONA_BOT_TURN__USER_MESSAGES_PER_MINUTE", "1")];
    let bot = stage.start_bot_with(1, &once_a_minute).await;
    stage.mention("hello").await;
    stage
        .until(&bot, "the answer", |s| s.texts().len() == 1)
        .await;
    stage.until_answered(&bot).await;
    // The first refusal is told (a notice replying to it), the second is not.
    stage.mention("again").await;
    stage
        .until(&bot, "the rate notice", |s| s.texts().len() == 2)
        .await;
    stage.mention("and again").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    bot.kill();
    lose_the_seen_marks(&stage.db).await;
    let reads = catch_up_reads(&stage);

    stage.openai.push(Reply::text(&["Should not be asked."]));
    let bot = stage.start_bot(2).await;
    until_caught_up(&stage, &bot, reads).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(stage.openai.requests().len(), 1, "{}", bot.log());
}

/// Removes the stored last-seen marks, as a crash within the few seconds before they are
/// stored leaves them: a catch-up then reads the channel from the window's start.
async fn lose_the_seen_marks(db: &TestDb) {
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(&db.url).await.unwrap();
    sqlx::query("DELETE FROM seen_channels")
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.ok();
}

/// How often the general channel was read back as a catch-up reads it.
fn catch_up_reads(stage: &Stage) -> usize {
    count_requests(
        stage,
        "GET",
        &format!("/channels/{GENERAL}/messages?limit=50"),
    )
}

/// The start after a restart has read the general channel back (its catch-up).
async fn until_caught_up(stage: &Stage, bot: &Bot, reads_before: usize) {
    stage
        .until(bot, "the catch-up read the channel", |s| {
            catch_up_reads(s) > reads_before
        })
        .await;
}

/// A question stopped with `/kill` by its asker, then a stop of the process (SIGKILL with the
/// marks lost, or SIGTERM) and a start: the model is asked once in all.
async fn killed_then_restarted(db: TestDb, hard: bool) {
    let stage = Stage::new(db).await;
    stage.openai.push(Reply::Stream(vec![Sse::Hang]));
    let bot = stage.start_bot(1).await;
    stage.mention("a question to stop").await;
    stage
        .until(&bot, "the model is asked", |s| {
            s.openai.requests().len() == 1
        })
        .await;
    let kill = stage
        .discord
        .slash(Slash {
            name: "kill".into(),
            options: serde_json::json!([]),
            guild_id: Some(GUILD),
            channel_id: GENERAL,
            user_id: ALICE,
            user_name: "alice".into(),
            permissions: 0,
            locale: "en-US".into(),
        })
        .await;
    stage
        .until(&bot, "the /kill answer", |s| {
            s.discord
                .interaction_responses()
                .iter()
                .any(|(i, _)| *i == kill)
        })
        .await;
    if hard {
        bot.kill();
        lose_the_seen_marks(&stage.db).await;
    } else {
        assert!(bot.terminate().success());
    }
    let reads = catch_up_reads(&stage);
    stage.openai.push(Reply::text(&["Should not be asked."]));
    let bot = stage.start_bot(2).await;
    if hard {
        until_caught_up(&stage, &bot, reads).await;
    }
    // (after SIGTERM the stored marks say the channel has nothing new: it is not read)
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(stage.openai.requests().len(), 1, "{}", bot.log());
    assert!(stage.texts().is_empty(), "{:?}", stage.texts());
}

// SPEC C6, D12: /kill, then SIGKILL before the marks were stored, then a start.
pub(super) async fn a_killed_question_stays_stopped_after_a_crash(db: TestDb) {
    killed_then_restarted(db, true).await;
}

// SPEC C6, D12: /kill, then SIGTERM, then a start.
pub(super) async fn a_killed_question_stays_stopped_after_a_clean_stop(db: TestDb) {
    killed_then_restarted(db, false).await;
}
