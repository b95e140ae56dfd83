//! SPEC E2 end to end: buttons on replies, through the real start-up, serenity and poise against
//! the fake Discord (presses are MESSAGE_COMPONENT interactions with Discord's deadline and
//! callback rules), the fake model and a real SQLite file, with the default configuration.

pub mod support {
    pub mod e2e;
    pub mod fake_discord;
    pub mod fake_images;
    pub mod fake_openai;
    pub mod harness;
}

use std::time::Duration;

use serde_json::{Value, json};
use support::e2e::*;
use support::fake_discord::{ButtonPress, button_ids};
use support::fake_openai::{Reply, Sse};
use support::harness::Behaviour;

/// The bot's messages in #general as they are now (edits applied, deletions gone).
fn replies(e: &E2e) -> Vec<Value> {
    e.discord
        .history(GENERAL)
        .into_iter()
        .filter(|m| m["author"]["id"] == json!(BOT.to_string()))
        .collect()
}

/// The custom id of the button whose id has `code` (`s`, `a`, `u`, `d`) on `message`.
fn button(message: &Value, code: &str) -> String {
    button_ids(message)
        .into_iter()
        .find(|id| id.split(':').nth(1) == Some(code))
        .unwrap_or_else(|| panic!("no `{code}` button on {message}"))
}

fn codes(message: &Value) -> Vec<String> {
    button_ids(message)
        .iter()
        .filter_map(|id| id.split(':').nth(1).map(str::to_owned))
        .collect()
}

fn id_of(message: &Value) -> u64 {
    message["id"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("id")
}

/// `user` presses `custom_id` on `message`; the bot's callback body.
async fn press(e: &E2e, message: u64, custom_id: &str, user: u64) -> Value {
    let p = ButtonPress::new(&e.discord, message, custom_id, user);
    let id = e.discord.press(p).await.expect("a press Discord sends");
    e.answer_to(id).await
}

/// The ephemeral follow-up the bot sent after acknowledging interaction `id`.
async fn follow_up_of(e: &E2e, id: u64) -> String {
    e.until("a follow-up", |e| {
        !e.discord.interaction_messages(id).1.is_empty()
    })
    .await;
    let (_, followups) = e.discord.interaction_messages(id);
    assert_eq!(followups[0]["flags"], json!(64), "only the presser sees it");
    followups[0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A reply streamed as two paragraphs with a pause between them.
fn two_paragraphs(pause: Duration) -> Reply {
    Reply::Stream(vec![
        Sse::text("First paragraph.\n\n"),
        Sse::Delay(pause),
        Sse::text("Second paragraph."),
        Sse::finish("stop"),
        Sse::Done,
    ])
}

fn edits(e: &E2e) -> usize {
    e.discord
        .requests()
        .iter()
        .filter(|r| r.method == "PATCH" && r.path.starts_with("/channels/"))
        .count()
}

// SPEC E2: a reply streaming over two messages shows Stop on the first while it streams; the
// last carries Again, 👍 and 👎 on its own post, and Stop is taken off with one edit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streaming_reply_shows_stop_then_again_and_feedback() {
    let e = E2e::start_with(
        Behaviour::succeed(),
        vec![two_paragraphs(Duration::from_millis(1500))],
        E2e::every_paragraph_a_message,
    )
    .await;
    e.mention(ALICE, "alice", "tell me").await;
    e.until("the first paragraph", |e| replies(e).len() == 1)
        .await;
    assert_eq!(codes(&replies(&e)[0]), vec!["s"], "Stop while it streams");
    e.until("the second paragraph", |e| replies(e).len() == 2)
        .await;
    e.until("Stop taken off", |e| codes(&replies(e)[0]).is_empty())
        .await;
    let posted = e.posted(GENERAL);
    assert_eq!(
        posted[1]["components"][0]["components"]
            .as_array()
            .map(Vec::len),
        Some(3),
        "the last message is posted with its buttons: {}",
        posted[1]
    );
    assert_eq!(codes(&replies(&e)[1]), vec!["a", "u", "d"]);
    assert_eq!(edits(&e), 1, "one edit: Stop off the first message");
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC E2: Stop by someone else is refused, only to them; by the requester it stops the reply
// at once (a deferred update within the deadline), and the stopped reply gets Again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_is_the_requesters_and_stops_the_reply() {
    let e = E2e::start_with(
        Behaviour::succeed(),
        vec![two_paragraphs(Duration::from_secs(600))],
        E2e::every_paragraph_a_message,
    )
    .await;
    e.mention(ALICE, "alice", "tell me").await;
    e.until("the first paragraph", |e| replies(e).len() == 1)
        .await;
    let first = replies(&e)[0].clone();
    let stop = button(&first, "s");
    let refused = press(&e, id_of(&first), &stop, BOB).await;
    assert_eq!(refused["type"], json!(4));
    assert_eq!(refused["data"]["flags"], json!(64), "only Bob sees it");
    assert!(
        content_of(&refused).contains("Only the person I am answering"),
        "{refused}"
    );
    let (running, _) = e
        .running()
        .orchestrator
        .load_of(persona_bot::domain::scope::ChannelId(GENERAL))
        .await;
    assert!(running, "Bob's press stopped nothing");
    let stopped = press(&e, id_of(&first), &stop, ALICE).await;
    assert_eq!(stopped["type"], json!(6), "a deferred update");
    e.until("Again instead of Stop", |e| {
        codes(&replies(e)[0]) == vec!["a", "u", "d"]
    })
    .await;
    let (running, _) = e
        .running()
        .orchestrator
        .load_of(persona_bot::domain::scope::ChannelId(GENERAL))
        .await;
    assert!(!running, "the turn is stopped");
    assert_eq!(replies(&e).len(), 1, "nothing more was posted");
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC E2: Again is the requester's: a new answer to the same question replaces the old one's
// messages, three times; the fourth press is refused, only to the requester.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn again_replaces_the_answer_three_times_and_no_more() {
    let answers: Vec<Reply> = (0..4)
        .map(|n| Reply::text(&[&format!("Answer {n}.")]))
        .collect();
    let e = E2e::start(Behaviour::succeed(), answers).await;
    let question = e.mention(ALICE, "alice", "what is it").await;
    e.until("the answer", |e| replies(e).len() == 1).await;
    let refused = press(
        &e,
        id_of(&replies(&e)[0]),
        &button(&replies(&e)[0], "a"),
        BOB,
    )
    .await;
    assert!(
        content_of(&refused).contains("Only the person who asked"),
        "{refused}"
    );
    for n in 1..=3 {
        let old = replies(&e)[0].clone();
        let again = press(&e, id_of(&old), &button(&old, "a"), ALICE).await;
        assert_eq!(again["type"], json!(6), "a deferred update");
        let expected = format!("Answer {n}.");
        e.until("the new answer replaces the old", |e| {
            let now = replies(e);
            now.len() == 1 && now[0]["content"] == json!(expected)
        })
        .await;
        let new = &replies(&e)[0];
        assert_eq!(
            new["message_reference"]["message_id"],
            json!(question.to_string()),
            "the new answer replies to the question"
        );
        let request = &e.openai.requests()[n];
        let messages = request.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            messages.last().map(|m| m["content"].clone()),
            Some(json!("[alice] @Aria what is it")),
            "the same question"
        );
        assert!(
            !request
                .body
                .to_string()
                .contains(&format!("Answer {}.", n - 1)),
            "the old answer is not in the new one's context"
        );
    }
    let last = replies(&e)[0].clone();
    let fourth = press(&e, id_of(&last), &button(&last, "a"), ALICE).await;
    assert_eq!(fourth["data"]["flags"], json!(64));
    assert!(content_of(&fourth).contains("3 new answers"), "{fourth}");
    assert_eq!(e.openai.requests().len(), 4, "no fifth answer");
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC E2: 👍 and 👎 are stored per reply and member (a second press replaces the first), the
// thought log gets a card, and /status shows moderators the counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn feedback_is_stored_and_shown_to_moderators() {
    let e = E2e::start(Behaviour::succeed(), vec![Reply::text(&["An answer."])]).await;
    e.set_thought_log().await;
    e.mention(ALICE, "alice", "rate me").await;
    e.until("the answer", |e| replies(e).len() == 1).await;
    let answer = replies(&e)[0].clone();
    let (up, down) = (button(&answer, "u"), button(&answer, "d"));
    for (user, id) in [(BOB, &up), (ALICE, &down), (ALICE, &up)] {
        let p = ButtonPress::new(&e.discord, id_of(&answer), id, user);
        let interaction = e.discord.press(p).await.expect("press");
        assert_eq!(e.answer_to(interaction).await["type"], json!(6));
        assert!(follow_up_of(&e, interaction).await.contains("noted"));
    }
    e.until("three feedback cards", |e| {
        e.posted(THOUGHTS)
            .iter()
            .filter(|m| m.to_string().contains("rated a reply"))
            .count()
            == 3
    })
    .await;
    let last_card = e
        .posted(THOUGHTS)
        .last()
        .map(Value::to_string)
        .unwrap_or_default();
    assert!(last_card.contains("👍 2 · 👎 0"), "{last_card}");
    let status = e.slash(MODERATOR, "status", MANAGE_GUILD, json!([])).await;
    assert!(content_of(&status).contains("👍 2 · 👎 0"), "{status}");
    let member_status = e.slash(BOB, "status", 0, json!([])).await;
    assert!(
        !content_of(&member_status).contains("👍"),
        "counts are for moderators: {member_status}"
    );
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC E2: a button pressed after 15 minutes is answered, only to the presser, that it expired,
// and the message's buttons are taken off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_button_says_so_and_is_taken_off() {
    let e = E2e::start(Behaviour::succeed(), vec![Reply::text(&["An answer."])]).await;
    e.mention(ALICE, "alice", "hello").await;
    e.until("the answer", |e| replies(e).len() == 1).await;
    let answer = replies(&e)[0].clone();
    let aged = e
        .discord
        .age_message(GENERAL, id_of(&answer), Duration::from_secs(16 * 60))
        .expect("aged");
    let answer = e
        .discord
        .history(GENERAL)
        .into_iter()
        .find(|m| id_of(m) == aged)
        .expect("aged message");
    let expired = press(&e, aged, &button(&answer, "u"), BOB).await;
    assert_eq!(expired["type"], json!(4));
    assert_eq!(expired["data"]["flags"], json!(64));
    assert!(content_of(&expired).contains("expired"), "{expired}");
    e.until("buttons taken off", |e| {
        e.discord
            .history(GENERAL)
            .iter()
            .find(|m| id_of(m) == aged)
            .is_some_and(|m| codes(m).is_empty())
    })
    .await;
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC E2: buttons are on by default and a moderator turns them off per server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buttons_off_leaves_replies_plain() {
    let e = E2e::start(Behaviour::succeed(), vec![Reply::text(&["Plain."])]).await;
    let set = e
        .slash(
            MODERATOR,
            "replies",
            MANAGE_GUILD,
            json!([{ "name": "buttons", "type": 1,
                     "options": [{ "name": "state", "type": 4, "value": 1 }] }]),
        )
        .await;
    assert!(content_of(&set).contains("Buttons are off"), "{set}");
    e.mention(ALICE, "alice", "hello").await;
    e.until("the answer", |e| replies(e).len() == 1).await;
    assert!(codes(&replies(&e)[0]).is_empty());
    assert!(e.posted(GENERAL)[0].get("components").is_none());
    e.assert_fakes_used();
    e.stop().await;
}

/// The simple world, where the bot may manage #general's webhooks (a server persona posts
/// through one).
fn webhook_world() -> support::fake_discord::World {
    let mut world = support::fake_discord::World::simple();
    world.guilds[0].channels[0] = support::fake_discord::FakeChannel::new(GENERAL, "general", true)
        .allow_bot(support::fake_discord::MANAGE_WEBHOOKS);
    world
}

/// The persona's posts in #general as they are now.
fn persona_posts(e: &E2e) -> Vec<Value> {
    e.discord
        .history(GENERAL)
        .into_iter()
        .filter(|m| m["webhook_id"].is_string())
        .collect()
}

// SPEC E2, A1: a reply under the server's own persona is a webhook's post; it carries its
// buttons too, Stop comes off through the webhook, and Again replaces it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persona_reply_through_a_webhook_has_its_buttons() {
    let e = E2e::start_in(
        webhook_world(),
        Behaviour::succeed(),
        vec![
            two_paragraphs(Duration::from_millis(800)),
            Reply::text(&["Mira again."]),
        ],
        E2e::every_paragraph_a_message,
    )
    .await;
    let persona = persona_bot::domain::ports::Persona {
        id: persona_bot::domain::scope::PersonaId("aria".into()),
        display_name: "Mira".into(),
        system_prompt: "You are Mira.".into(),
        trigger_words: vec![],
        avatar_url: None,
    };
    let change = persona_bot::domain::ports::SettingsChange::Persona(Some(persona));
    let server = persona_bot::domain::scope::ServerId(GUILD);
    use persona_bot::domain::ports::SettingsStore as _;
    e.running()
        .storage
        .settings
        .update(server, change)
        .await
        .unwrap();
    e.mention(ALICE, "alice", "who are you?").await;
    e.until("two persona posts, Stop off the first", |e| {
        let posts = persona_posts(e);
        posts.len() == 2 && codes(&posts[0]).is_empty()
    })
    .await;
    assert!(e.posted(GENERAL).is_empty(), "nothing as the bot user");
    let last = persona_posts(&e)[1].clone();
    assert_eq!(codes(&last), vec!["a", "u", "d"]);
    let again = press(&e, id_of(&last), &button(&last, "a"), ALICE).await;
    assert_eq!(again["type"], json!(6));
    e.until("the new answer replaces both posts", |e| {
        let posts = persona_posts(e);
        posts.len() == 1 && posts[0]["content"] == json!("Mira again.")
    })
    .await;
    e.assert_fakes_used();
    e.stop().await;
}
