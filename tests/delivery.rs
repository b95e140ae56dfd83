//! Delivery inside Discord's real limits, end to end: the real bot (serenity, poise, the
//! provider client, SQLite) against the strict fake Discord with its default limits (5 message
//! creates per channel per 5 s, 50 requests per second, real headers), in the bot's default
//! configuration.

// The shared fakes this binary uses (tests/support/). Public, so that what it leaves
// unused of them is not dead code.
pub mod support {
    pub mod e2e;
    pub mod fake_discord;
    pub mod fake_openai;
    pub mod harness;
}

use std::time::{Duration, Instant};

use persona_bot::domain::ports::{AccessLists, ServerSettings, SettingsStore};
use persona_bot::domain::scope::{ChannelId, ServerId};
use serde_json::json;
use support::e2e::*;
use support::fake_discord::{FakeChannel, Incoming, MESSAGE_CONTENT, Recorded, World};
use support::fake_openai::{Reply, Sse};
use support::harness::Behaviour;

/// The first of the burst's channels.
const FIRST: u64 = 1000;

fn world_with_channels(n: u64) -> World {
    let mut world = World::simple();
    for id in FIRST..FIRST + n {
        world.guilds[0]
            .channels
            .push(FakeChannel::new(id, &format!("room-{id}"), true));
    }
    world
}

fn answer(text: &str) -> Reply {
    Reply::Stream(vec![Sse::text(text), Sse::finish("stop"), Sse::Done])
}

/// The bot's POSTs of messages to a channel, answered or not.
fn message_posts(e: &E2e, channel: u64) -> Vec<Recorded> {
    e.discord
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path == format!("/channels/{channel}/messages"))
        .collect()
}

// A burst of one mention in each of 50 channels draws no 429 at all (it drew 51 for
// 151 requests before the scheduler), and every reply is whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_across_fifty_channels_draws_no_429() {
    let replies = (0..50).map(|_| answer("Here you are, whole.")).collect();
    // One user asking in fifty channels at once is past the default per-user rate (SPEC C2);
    // this test is about Discord's limits, so that rate is off.
    let e = E2e::start_in(
        world_with_channels(50),
        Behaviour::succeed(),
        replies,
        |config| config.turn.user_messages_per_minute = 0,
    )
    .await;
    for channel in FIRST..FIRST + 50 {
        e.mention_in(channel, ALICE, "alice", "a question").await;
    }
    e.until("fifty replies", |e| {
        (FIRST..FIRST + 50).all(|c| !e.texts(c).is_empty())
    })
    .await;
    for channel in FIRST..FIRST + 50 {
        assert_eq!(e.texts(channel), vec!["Here you are, whole."], "{channel}");
    }
    e.assert_no_429();
    e.assert_fakes_used();
    e.stop().await;
}

// A reply of twelve messages in one channel paces itself to the channel's window
// (5 per 5 s) from the headers: no 429, every message whole and in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_twelve_message_reply_paces_itself_without_429s() {
    let paragraphs: Vec<String> = (1..=12).map(|n| format!("Paragraph {n}.")).collect();
    let e = E2e::start_with(
        Behaviour::succeed(),
        vec![answer(&paragraphs.join("\n\n"))],
        E2e::every_paragraph_a_message,
    )
    .await;
    e.mention(ALICE, "alice", "tell me a long story").await;
    e.until("twelve messages", |e| e.texts(GENERAL).len() == 12)
        .await;
    assert_eq!(e.texts(GENERAL), paragraphs);
    assert_eq!(
        message_posts(&e, GENERAL).len(),
        12,
        "none refused, none repeated"
    );
    e.assert_no_429();
    e.assert_fakes_used();
    e.stop().await;
}

// A global 429 holds every channel for its retry_after, not only the one it answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_global_429_holds_every_channel() {
    let e = E2e::start_in(
        world_with_channels(1),
        Behaviour::succeed(),
        vec![answer("First."), answer("Second.")],
        |_| {},
    )
    .await;
    e.discord.answer_next_raw(
        GENERAL,
        429,
        r#"{"message":"You are being rate limited.","retry_after":2.0,"global":true}"#,
        &[
            ("retry-after", "2"),
            ("x-ratelimit-global", "true"),
            ("x-ratelimit-scope", "global"),
        ],
    );
    e.mention(ALICE, "alice", "first").await;
    e.until("the global 429", |e| {
        e.discord.requests().iter().any(|r| r.status == 429)
    })
    .await;
    let limited = Instant::now();
    e.mention_in(FIRST, ALICE, "alice", "second").await;
    e.until("the other channel's reply", |e| !e.texts(FIRST).is_empty())
        .await;
    assert!(
        limited.elapsed() >= Duration::from_millis(1500),
        "the other channel waited out the global limit: {:?}",
        limited.elapsed()
    );
    e.until("the first reply", |e| !e.texts(GENERAL).is_empty())
        .await;
    assert_eq!(e.texts(FIRST), vec!["Second."]);
    assert_eq!(e.texts(GENERAL), vec!["First."]);
    e.assert_fakes_used();
    e.stop().await;
}

// The bot asks for the MESSAGE_CONTENT intent: a message in an always-reply channel
// that does not mention the bot reaches the model with its text (Discord sends it empty
// otherwise).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_without_a_mention_arrives_with_its_text() {
    let e = E2e::start(Behaviour::succeed(), vec![answer("Heard you.")]).await;
    let identify = &e.discord.identifies()[0];
    assert_ne!(
        identify["intents"].as_u64().unwrap_or(0) & MESSAGE_CONTENT,
        0,
        "{identify}"
    );
    let always = ServerSettings {
        access: AccessLists {
            always_reply_channels: vec![ChannelId(GENERAL)],
            ..Default::default()
        },
        ..Default::default()
    };
    e.running()
        .storage
        .settings
        .save_settings(ServerId(GUILD), &always)
        .await
        .unwrap();
    let m = Incoming::new(
        GENERAL,
        Some(GUILD),
        ALICE,
        "alice",
        "what is the tide today",
    );
    e.discord.send_message(m).await;
    e.until("the answer", |e| !e.texts(GENERAL).is_empty())
        .await;
    assert_eq!(
        e.last_model_message(0)["content"],
        "[alice] what is the tide today"
    );
    e.assert_fakes_used();
    e.stop().await;
}

// /kill is answered within Discord's 3 s interaction deadline while the turn's send
// waits on a rate limit (the fake refuses a later callback with 10062).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_answers_in_time_while_a_send_waits_on_a_rate_limit() {
    let e = E2e::start(Behaviour::succeed(), vec![answer("Never shown.")]).await;
    e.discord.rate_limit_next(GENERAL, 1, 30.0);
    e.mention(ALICE, "alice", "hello").await;
    e.until("the 429", |e| {
        e.discord.requests().iter().any(|r| r.status == 429)
    })
    .await;
    let response = e.slash(ALICE, "kill", 0, json!([])).await;
    assert_eq!(
        response["data"]["flags"],
        json!(64),
        "answered, ephemerally: {response}"
    );
    let refused = e
        .discord
        .requests()
        .into_iter()
        .filter(|r| r.path.contains("/callback") && r.status >= 400)
        .count();
    assert_eq!(refused, 0, "the callback met the deadline");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        e.texts(GENERAL).is_empty(),
        "the killed reply is not posted later"
    );
    e.assert_fakes_used();
    e.stop().await;
}

// A reply notifies only the person it answers; another user the model names is a
// mention without a notification, and @everyone stays silent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_notifies_only_the_asker() {
    let text = format!("Hi <@{ALICE}>! I asked <@{BOB}> too. @everyone");
    let e = E2e::start(Behaviour::succeed(), vec![answer(&text)]).await;
    e.mention(ALICE, "alice", "who else knows?").await;
    e.until("the answer", |e| !e.texts(GENERAL).is_empty())
        .await;
    assert_eq!(e.texts(GENERAL), vec![text]);
    let pinged = e.discord.pinged_in(GENERAL);
    assert_eq!(pinged.len(), 1);
    assert_eq!(pinged[0].1, vec![ALICE], "not Bob, not everyone");
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC C4: a reply to "ask @Bob", Bob being in the message's mentions, may notify
// Bob and the asker and nobody else: the model's "@Bob" and "@alice" are posted as their
// mentions; "@Carol" (not named), another user's id and @everyone notify nobody.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_to_ask_bob_notifies_bob_and_the_asker_only() {
    let text = format!("@alice, I will ask @Bob. @Carol and <@{MODERATOR}> too? @everyone");
    let e = E2e::start(Behaviour::succeed(), vec![answer(&text)]).await;
    let ask = format!("<@{BOT}> ask <@{BOB}> about the tide");
    let mut m = Incoming::new(GENERAL, Some(GUILD), ALICE, "alice", &ask);
    m.mentions = vec![(BOT, "Aria".into()), (BOB, "Bob".into())];
    e.discord.send_message(m).await;
    e.until("the answer", |e| !e.texts(GENERAL).is_empty())
        .await;
    assert_eq!(
        e.last_model_message(0)["content"],
        "[alice] @Aria ask @Bob about the tide"
    );
    let linked =
        format!("<@{ALICE}>, I will ask <@{BOB}>. @Carol and <@{MODERATOR}> too? @everyone");
    assert_eq!(e.texts(GENERAL), vec![linked]);
    assert_eq!(
        e.posted(GENERAL)[0]["allowed_mentions"],
        json!({ "parse": [], "users": [ALICE.to_string(), BOB.to_string()], "replied_user": false })
    );
    let pinged = e.discord.pinged_in(GENERAL);
    assert_eq!(pinged.len(), 1);
    let mut users = pinged[0].1.clone();
    users.sort_unstable();
    assert_eq!(users, vec![ALICE, BOB], "not the moderator, not everyone");
    e.assert_fakes_used();
    e.stop().await;
}

// Discord fails after writing the message (a 500 once it is created): the retry
// carries the same nonce, so the reply is posted once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_retried_after_a_5xx_posts_once() {
    let e = E2e::start(Behaviour::succeed(), vec![answer("Only once.")]).await;
    e.discord.fail_after_create_next(GENERAL, 500);
    e.mention(ALICE, "alice", "hello").await;
    e.until("two tries", |e| message_posts(e, GENERAL).len() == 2)
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(e.texts(GENERAL), vec!["Only once."]);
    let nonces: Vec<_> = message_posts(&e, GENERAL)
        .into_iter()
        .map(|r| r.body["nonce"].clone())
        .collect();
    assert_eq!(nonces[0], nonces[1], "the same nonce");
    e.assert_fakes_used();
    e.stop().await;
}

// A channel's second turn takes its history from what the gateway delivered: no
// `GET /messages`, and the history still holds the first exchange.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_turn_reads_history_without_asking_discord() {
    let e = E2e::start(Behaviour::succeed(), vec![answer("One."), answer("Two.")]).await;
    e.mention(ALICE, "alice", "first question").await;
    e.until("the first answer", |e| e.texts(GENERAL).len() == 1)
        .await;
    e.mention(ALICE, "alice", "second question").await;
    e.until("the second answer", |e| e.texts(GENERAL).len() == 2)
        .await;
    let reads = e
        .discord
        .requests()
        .iter()
        .filter(|r| {
            r.method == "GET" && r.path.starts_with(&format!("/channels/{GENERAL}/messages"))
        })
        .count();
    assert_eq!(reads, 1, "only the first turn asked Discord");
    let second = &e.openai.requests()[1];
    let all = second.body["messages"].to_string();
    assert!(
        all.contains("first question") && all.contains("One."),
        "{all}"
    );
    e.assert_fakes_used();
    e.stop().await;
}

/// The words of a text, whatever the white space between them.
fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_owned).collect()
}

// SPEC C4: a chatty answer of 300 one-line paragraphs, streamed in small chunks as a
// real model server sends it, takes at most ceil(len / 1900) + 4 messages in the default
// configuration (it took 300 before), with every word kept in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chatty_reply_takes_a_few_messages() {
    let text = (0..300)
        .map(|i| format!("He loved them too, line {i}."))
        .collect::<Vec<_>>()
        .join("\n\n");
    let e = E2e::start(Behaviour::succeed(), vec![streamed(&text, 40)]).await;
    e.mention(ALICE, "alice", "tell me how he felt").await;
    e.until("the last line", |e| {
        e.texts(GENERAL)
            .last()
            .is_some_and(|t| t.ends_with("line 299."))
    })
    .await;
    let texts = e.texts(GENERAL);
    let bound = text.chars().count().div_ceil(1900) + 4;
    assert!(
        texts.len() <= bound,
        "{} messages, at most {bound}",
        texts.len()
    );
    assert_eq!(words(&texts.join("\n\n")), words(&text));
    e.assert_no_429();
    e.stop().await;
}

/// `text` streamed in `chunk`-byte pieces (at character boundaries), then finished.
fn streamed(text: &str, chunk: usize) -> Reply {
    let mut steps = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut at = chunk.min(rest.len());
        while !rest.is_char_boundary(at) {
            at += 1;
        }
        steps.push(Sse::text(&rest[..at]));
        rest = &rest[at..];
    }
    steps.extend([Sse::finish("stop"), Sse::Done]);
    Reply::Stream(steps)
}

// SPEC C4, default configuration: a reply of three long paragraphs is three messages, as a person
// writes them; a code block longer than a message, among many short paragraphs, is closed and
// reopened with its language at each cut, within the bound, and no line of it is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_paragraphs_keep_their_messages_and_a_long_code_block_survives_packing() {
    let paragraph = |name: &str| format!("{name} {}end.", "is a long paragraph, ".repeat(30));
    let three = [paragraph("One"), paragraph("Two"), paragraph("Three")].join("\n\n");
    let code: String = (0..150).map(|i| format!("let x{i:03} = {i};\n")).collect();
    let chatter: Vec<String> = (0..40).map(|i| format!("Chatter line {i:02}.")).collect();
    let closing: Vec<String> = (0..40).map(|i| format!("Closing line {i:02}.")).collect();
    let fenced = format!(
        "{}\n\n```rust\n{code}```\n\n{}",
        chatter.join("\n\n"),
        closing.join("\n\n")
    );
    let e = E2e::start(
        Behaviour::succeed(),
        vec![streamed(&three, 64), streamed(&fenced, 64)],
    )
    .await;
    e.mention(ALICE, "alice", "three thoughts").await;
    e.until("three messages", |e| {
        e.texts(GENERAL)
            .last()
            .is_some_and(|t| t.starts_with("Three"))
    })
    .await;
    let texts = e.texts(GENERAL);
    assert_eq!(texts.len(), 3, "{texts:#?}");
    assert_eq!(words(&texts.join("\n\n")), words(&three));

    e.mention(ALICE, "alice", "show me the code").await;
    e.until("the code reply", |e| {
        e.texts(GENERAL)
            .last()
            .is_some_and(|t| t.ends_with("Closing line 39."))
            && e.texts(GENERAL).len() > 3
    })
    .await;
    let texts = e.texts(GENERAL)[3..].to_vec();
    assert!(
        texts.len() <= fenced.chars().count().div_ceil(1900) + 4,
        "{}",
        texts.len()
    );
    for text in &texts {
        assert!(text.chars().count() <= 2000);
        assert_eq!(text.matches("```").count() % 2, 0, "balanced: {text}");
    }
    let cut_blocks = texts.iter().filter(|t| t.starts_with("```rust")).count();
    assert!(
        cut_blocks >= 1,
        "the block was cut and reopened: {texts:#?}"
    );
    let joined = texts.join("\n").replace("```\n```rust\n", "");
    for i in 0..150 {
        assert_eq!(
            joined.matches(&format!("let x{i:03} = {i};")).count(),
            1,
            "line {i}"
        );
    }
    assert_eq!(words(&joined).len(), words(&fenced).len());
    e.assert_no_429();
    e.stop().await;
}

/// A reply of `n` paragraphs of about 40 characters, streamed in 40-byte chunks.
fn chatty(n: usize) -> (String, Reply) {
    let text = (0..n)
        .map(|i| format!("A short line of the answer, line {i:03}."))
        .collect::<Vec<_>>()
        .join("\n\n");
    let reply = streamed(&text, 40);
    (text, reply)
}

/// `/replies style style:<n>` (0 paragraphs, 1 compact, 2 default) by the moderator; its answer.
async fn replies_style(e: &E2e, style: u64) -> String {
    let options = json!([{
        "name": "style", "type": 1,
        "options": [{ "name": "style", "type": 4, "value": style }]
    }]);
    let answer = e.slash(MODERATOR, "replies", MANAGE_GUILD, options).await;
    assert_eq!(answer["data"]["flags"], 64, "ephemeral: {answer}");
    content_of(&answer)
}

// SPEC C4: a moderator chooses `compact` for the server; the same chatty reply then takes only
// the messages its length needs, and /status says which style is in force (the default one,
// then the server's own).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moderator_chooses_compact_replies_for_the_server() {
    let (text, first) = chatty(100);
    let (_, second) = chatty(100);
    let e = E2e::start(Behaviour::succeed(), vec![first, second]).await;
    let status = content_of(&e.slash(ALICE, "status", 0, json!([])).await);
    assert!(
        status.contains(
            "Replies: paragraphs (a few messages, short paragraphs together), the default"
        ),
        "{status}"
    );
    e.mention(ALICE, "alice", "tell me everything").await;
    e.until("the paragraphs reply", |e| {
        e.texts(GENERAL)
            .last()
            .is_some_and(|t| t.ends_with("line 099."))
    })
    .await;
    let paragraphs = e.texts(GENERAL).len();

    let set = replies_style(&e, 1).await;
    assert_eq!(
        set,
        "Replies here: compact (as few messages as the length needs)."
    );
    let status = content_of(&e.slash(ALICE, "status", 0, json!([])).await);
    assert!(
        status.contains("Replies: compact (as few messages as the length needs)"),
        "{status}"
    );
    e.mention(ALICE, "alice", "once more").await;
    e.until("the compact reply", |e| {
        e.texts(GENERAL)
            .iter()
            .filter(|t| t.ends_with("line 099."))
            .count()
            == 2
    })
    .await;
    let compact = e.texts(GENERAL).len() - paragraphs;
    let needs = text.chars().count().div_ceil(1900);
    assert!(
        compact <= needs,
        "compact: {compact}, the length needs {needs}"
    );
    assert!(
        paragraphs > compact,
        "paragraphs {paragraphs}, compact {compact}"
    );
    assert_eq!(
        words(&e.texts(GENERAL)[paragraphs..].join("\n\n")),
        words(&text)
    );
    assert_eq!(
        replies_style(&e, 2).await,
        "Replies here: paragraphs (a few messages, short paragraphs together), the default."
    );
    e.stop().await;
}

// SPEC C4: a short paragraph waits for the next, unless the model pauses: then it is
// shown before the rest comes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_paragraph_is_shown_when_the_model_pauses() {
    let pause = Duration::from_secs(4);
    let e = E2e::start(
        Behaviour::succeed(),
        vec![Reply::Stream(vec![
            Sse::text("Hmm, let me think.\n\n"),
            Sse::Delay(pause),
            Sse::text("Here is what I think."),
            Sse::finish("stop"),
            Sse::Done,
        ])],
    )
    .await;
    let asked = Instant::now();
    e.mention(ALICE, "alice", "what do you think?").await;
    e.until("the first paragraph", |e| e.texts(GENERAL).len() == 1)
        .await;
    assert!(
        asked.elapsed() < pause,
        "shown during the pause: {:?}",
        asked.elapsed()
    );
    e.until("the second", |e| e.texts(GENERAL).len() == 2).await;
    assert_eq!(
        e.texts(GENERAL),
        vec!["Hmm, let me think.", "Here is what I think."]
    );
    e.stop().await;
}
