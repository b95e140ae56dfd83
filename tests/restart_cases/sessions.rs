//! Gateway sessions the bot does not choose, with the real binary: a rolling deploy, where a
//! second process runs the same shard as the first and Discord sends every event to both
//! (SPEC D11), and a session that cannot resume, where a mention sent in the gap reaches no
//! session and only the catch-up of the new one can find it (SPEC D9).

use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::watch;

use super::support::db::TestDb;
use super::support::fake_discord::{
    FakeChannel, FakeMember, MANAGE_GUILD, MANAGE_WEBHOOKS, Slash, World,
};
use super::support::fake_openai::{Reply, Sse};
use super::{ALICE, BOB, Bot, GENERAL, GUILD, Stage, replies_to, sent_while_down};

/// #mods-public: where the bot may manage webhooks in [`deploy_world`].
const MODS_PUBLIC: u64 = 202;
/// The other channel where it may, in [`deploy_world`].
const HOOKED: u64 = 206;
const OWNER: u64 = 500;
const MODERATOR: u64 = 302;
const CAROL: u64 = 303;
const DAVE: u64 = 304;

/// The simple world with four more public channels (203 to 206) and two more members (303
/// "carol", 304 "dave"), where the bot may manage webhooks in #mods-public and in 206.
fn deploy_world() -> World {
    let mut world = World::simple();
    let guild = &mut world.guilds[0];
    assert_eq!(guild.channels[2].id, MODS_PUBLIC);
    guild.channels[2] =
        FakeChannel::new(MODS_PUBLIC, "mods-public", true).allow_bot(MANAGE_WEBHOOKS);
    for id in 203..HOOKED {
        guild
            .channels
            .push(FakeChannel::new(id, &format!("room-{id}"), true));
    }
    guild
        .channels
        .push(FakeChannel::new(HOOKED, "hooked", true).allow_bot(MANAGE_WEBHOOKS));
    guild
        .members
        .push(FakeMember::new(CAROL, "carol", false, false));
    guild
        .members
        .push(FakeMember::new(DAVE, "dave", false, false));
    world
}

/// How many model requests were made for this message: those whose last message (the one that
/// started the turn) holds its text.
fn asked(stage: &Stage, text: &str) -> usize {
    stage
        .openai
        .requests()
        .iter()
        .filter(|r| {
            r.body["messages"]
                .as_array()
                .and_then(|m| m.last())
                .is_some_and(|m| m["content"].to_string().contains(text))
        })
        .count()
}

/// What was said in the channel in answer: the bot's messages and its webhooks' posts.
fn answers(stage: &Stage, channel: u64) -> Vec<String> {
    let posts = stage.discord.webhook_posts(channel);
    let posted = posts.iter().filter_map(|p| p["content"].as_str());
    let mut said = stage.texts_in(channel);
    said.extend(posted.map(str::to_owned));
    said
}

/// A model answer that waits for the test to open `gate`.
fn held_answer(gate: &watch::Receiver<bool>) -> Reply {
    Reply::Stream(vec![
        Sse::Until(gate.clone()),
        Sse::text("Here is my answer."),
        Sse::finish("stop"),
        Sse::Done,
    ])
}

/// The owner gives the server its own copy of the Aria persona (`/persona use`), so its replies
/// go through a webhook where the bot may manage them.
async fn use_own_persona(stage: &Stage, bot: &Bot) {
    let options = json!([{ "name": "use", "type": 1, "options": [
        { "name": "name", "type": 3, "value": "aria" }] }]);
    let used = stage
        .discord
        .slash(Slash {
            permissions: MANAGE_GUILD,
            ..Slash::new("persona", options, Some(GUILD), MODS_PUBLIC, OWNER, "owner")
        })
        .await;
    stage
        .until(bot, "the server speaks as its own persona", |s| {
            s.discord.interaction_messages(used).0.is_some_and(|m| {
                m["content"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("This server now speaks as"))
            })
        })
        .await;
}

/// GET requests for a channel's messages (a catch-up's reads) made since `since`.
fn reads_since(stage: &Stage, channel: u64, since: Instant) -> usize {
    let path = format!("/channels/{channel}/messages?");
    stage
        .discord
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.at >= since && r.path.starts_with(&path))
        .count()
}

/// Waits until no message is queued, then a little more: time for a wrong second answer to show.
async fn settle(stage: &Stage, bot: &Bot) {
    stage.until_answered(bot).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
}

// SPEC D11: a rolling deploy. The first process runs with the default shard setting and its five
// questions wait on a slow model; a second process starts with the same setting while they do, and
// Discord sends both processes everything (the second's catch-up reads the five channels). Each
// question reaches the model once and is answered once, also the one in a channel where the
// server's own persona speaks through a webhook (no nonce protects such a post). Then, with both
// running, a question in another such channel reaches the model once and is posted once.
pub(super) async fn a_rolling_deploy_asks_the_model_once(db: TestDb) {
    let stage = Stage::in_world(db, deploy_world()).await;
    let first = Bot::start(stage.dir.path(), &stage.db, 1);
    stage
        .until(&first, "the first process identifies", |s| {
            !s.discord.identifies().is_empty()
        })
        .await;
    stage.discord.wait_sessions_ready(1).await;
    use_own_persona(&stage, &first).await;

    let (open, gate) = watch::channel(false);
    let questions = [
        (GENERAL, ALICE, "Question one: how far away is the moon?"),
        (203, BOB, "Question two: why is the sky blue?"),
        (204, OWNER, "Question three: what do owls eat?"),
        (205, MODERATOR, "Question four: how do tides work?"),
        (HOOKED, CAROL, "Question five: who built the first clock?"),
    ];
    for _ in &questions {
        stage.openai.push(held_answer(&gate));
    }
    // Then enough answers for a process that asks again (the test then fails on the counts,
    // not on a model that has nothing to say), and for the last question. Each takes a while, as
    // a model's does: longer than a third of the queue lease (1 s), so a process that takes over
    // what another holds would do it mid-turn.
    for _ in 0..12 {
        stage.openai.push(Reply::Stream(vec![
            Sse::Delay(Duration::from_millis(1500)),
            Sse::text("Another answer."),
            Sse::finish("stop"),
            Sse::Done,
        ]));
    }
    for (channel, author, text) in questions {
        stage.mention_in(GUILD, channel, author, text).await;
    }
    stage
        .until(&first, "the first process asks the model five times", |s| {
            s.openai.requests().len() == questions.len()
        })
        .await;

    let since = Instant::now();
    let second = Bot::start(stage.dir.path(), &stage.db, 2);
    stage
        .until(&second, "both processes run shard 0", |s| {
            s.discord.live_sessions() == [(0, 1), (0, 1)]
        })
        .await;
    stage.discord.wait_sessions_ready(2).await;
    stage
        .until(&second, "the second process reads the five channels", |s| {
            questions
                .iter()
                .all(|(channel, _, _)| reads_since(s, *channel, since) > 0)
        })
        .await;
    open.send_replace(true);
    stage
        .until(&first, "each question is answered", |s| {
            questions
                .iter()
                .all(|(channel, _, _)| !answers(s, *channel).is_empty())
        })
        .await;
    settle(&stage, &first).await;
    let mut wrong: Vec<String> = Vec::new();
    for (channel, _, text) in questions {
        let (times, said) = (asked(&stage, text), answers(&stage, channel));
        if times != 1 || said.len() != 1 {
            wrong.push(format!(
                "{text:?}: the model was asked {times} times, answers in <#{channel}>: {said:?}"
            ));
        }
    }

    // Both run; the server's persona speaks through a webhook in #mods-public.
    assert_eq!(stage.discord.live_sessions(), [(0, 1), (0, 1)]);
    let text = "Question six: how do webhooks work?";
    stage.mention_in(GUILD, MODS_PUBLIC, DAVE, text).await;
    stage
        .until(&second, "the persona's answer through a webhook", |s| {
            !s.discord.webhook_posts(MODS_PUBLIC).is_empty()
        })
        .await;
    settle(&stage, &second).await;
    let posts = stage.discord.webhook_posts(MODS_PUBLIC);
    if asked(&stage, text) != 1 || posts.len() != 1 {
        wrong.push(format!(
            "{text:?}: the model was asked {} times, webhook posts: {posts:#?}",
            asked(&stage, text)
        ));
    }
    assert!(
        wrong.is_empty(),
        "{wrong:#?}\n--- first process ---\n{}\n--- second process ---\n{}",
        first.log(),
        second.log()
    );
    assert!(
        stage.texts_in(MODS_PUBLIC).is_empty(),
        "nothing as the bot user"
    );
}

// SPEC D9: the bot answered a mention; its connection drops, Discord refuses the RESUME (op 9, `d:
// false`), and a mention sent while it has no session reaches no session at all. The bot identifies
// again (a fresh READY and GUILD_CREATE) and answers that mention once, as a reply to it, and
// nothing else again.
pub(super) async fn a_mention_sent_while_the_session_could_not_resume_is_answered_once(db: TestDb) {
    a_mention_in_the_gap_is_answered_once(db, false).await;
}

// SPEC D9: the same, with GUILD_CREATE's channels carrying no `last_message_id`, as Discord sends
// them for some channel kinds and other backends for all.
pub(super) async fn a_mention_sent_while_no_session_is_answered_once_without_last_message_ids(
    db: TestDb,
) {
    a_mention_in_the_gap_is_answered_once(db, true).await;
}

async fn a_mention_in_the_gap_is_answered_once(db: TestDb, omit_last_message_ids: bool) {
    let stage = Stage::new(db).await;
    stage.discord.omit_last_message_ids(omit_last_message_ids);
    stage.openai.push(Reply::text(&["Hello Alice."]));
    let bot = stage.start_bot(1).await;
    stage.mention("hello").await;
    stage
        .until(&bot, "the first answer", |s| s.texts().len() == 1)
        .await;
    stage.until_answered(&bot).await;

    stage.discord.refuse_resumes(true);
    stage.discord.cut_gateway();
    let general = (GENERAL, Some(GUILD));
    let gap = sent_while_down(
        &stage,
        general,
        BOB,
        "did you miss me?",
        true,
        Duration::ZERO,
    );
    assert_eq!(
        stage.discord.identifies().len(),
        1,
        "the mention was sent before a new session"
    );
    stage.openai.push(Reply::text(&["I did, Bob."]));
    stage
        .until(&bot, "a new session after a refused RESUME", |s| {
            s.discord.refused_resumes() == 1 && s.discord.identifies().len() == 2
        })
        .await;
    stage.discord.wait_sessions_ready(1).await;
    stage
        .until(&bot, "the mention from the gap is answered", |s| {
            replies_to(s, GENERAL, gap) == 1
        })
        .await;
    settle(&stage, &bot).await;
    assert_eq!(replies_to(&stage, GENERAL, gap), 1, "{}", bot.log());
    assert_eq!(
        stage.texts(),
        ["Hello Alice.", "I did, Bob."],
        "{}",
        bot.log()
    );
    assert_eq!(stage.openai.requests().len(), 2, "{}", bot.log());
    assert_eq!(stage.discord.resumes(), 0);
}
