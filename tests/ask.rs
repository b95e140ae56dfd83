//! SPEC A5: `/ask`, end to end through serenity and poise against the fake Discord, with the
//! default configuration: answered in the interaction (deferred at once, edited as it is
//! written, follow-ups for a long answer), privately when asked, stopped by `/kill`, in a DM
//! and where the bot is not a member (nothing posted in the channel, no history read), and
//! bounded by the interaction token's 15 minutes.

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
use support::fake_discord::Slash;
use support::fake_openai::{Reply, Sse};
use support::harness::Behaviour;

/// A server the bot is not in, and one of its channels.
const ELSEWHERE: u64 = 555;
const ELSEWHERE_CHANNEL: u64 = 556;

fn ask_options(text: &str, private: bool) -> Value {
    let mut options = vec![json!({"name": "text", "type": 3, "value": text})];
    if private {
        options.push(json!({"name": "private", "type": 5, "value": true}));
    }
    json!(options)
}

fn ask_in(guild: Option<u64>, channel: u64, text: &str, private: bool) -> Slash {
    Slash::new(
        "ask",
        ask_options(text, private),
        guild,
        channel,
        ALICE,
        "alice",
    )
}

/// The original response of interaction `id` once it shows a finished text (not loading, no
/// draft).
async fn answered(e: &E2e, id: u64) -> Value {
    e.until("the /ask is answered", |e| {
        e.discord.interaction_messages(id).0.is_some_and(finished)
    })
    .await;
    e.discord.interaction_messages(id).0.expect("original")
}

/// A message that shows a finished text: not loading, no draft mark.
fn finished(m: Value) -> bool {
    let loading = m["flags"].as_u64().unwrap_or(0) & (1 << 7) != 0;
    m["content"]
        .as_str()
        .is_some_and(|c| !c.is_empty() && !c.ends_with(" …"))
        && !loading
}

/// Requests the bot made to `path`'s start with `method`.
fn requests_to(e: &E2e, method: &str, path: &str) -> Vec<Value> {
    e.discord
        .requests()
        .into_iter()
        .filter(|r| r.method == method && r.path.starts_with(path))
        .map(|r| r.body)
        .collect()
}

// SPEC A5: `/ask` is a turn like a mention, deferred at once and answered in the interaction's
// original response; nothing is posted in the channel. A private `/ask` is deferred ephemeral and
// its answer is only the asker's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_is_answered_in_the_interaction_publicly_or_privately() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![
            Reply::text(&["Tea is a drink."]),
            Reply::text(&["Only you see this."]),
        ],
    )
    .await;
    let (_, command) = e
        .discord
        .commands()
        .into_iter()
        .find(|(_, c)| c["name"] == "ask")
        .expect("registered");
    assert_eq!(command["integration_types"], json!([0, 1]), "{command}");
    assert_eq!(command["contexts"], json!([0, 1, 2]), "{command}");

    let id = e
        .discord
        .slash(ask_in(Some(GUILD), GENERAL, "what is tea?", false))
        .await;
    assert_eq!(e.answer_to(id).await["type"], 5, "deferred at once");
    let original = answered(&e, id).await;
    assert_eq!(original["content"], "Tea is a drink.");
    assert_eq!(original["flags"].as_u64().unwrap_or(0) & 64, 0);
    let asked = e.last_model_message(0)["content"].clone();
    assert!(
        asked.as_str().is_some_and(|c| c.contains("what is tea?")),
        "{asked}"
    );
    assert!(
        e.posted(GENERAL).is_empty(),
        "nothing posted in the channel"
    );

    let id = e
        .discord
        .slash(ask_in(Some(GUILD), GENERAL, "a secret?", true))
        .await;
    let deferred = e.answer_to(id).await;
    assert_eq!(deferred["type"], 5);
    assert_eq!(deferred["data"]["flags"], 64, "{deferred}");
    e.until("the private answer", |e| {
        e.discord
            .interaction_messages(id)
            .0
            .is_some_and(|m| m["content"] == "Only you see this.")
    })
    .await;
    let original = e.discord.interaction_messages(id).0.expect("original");
    assert_eq!(
        original["flags"].as_u64().unwrap_or(0) & 64,
        64,
        "{original}"
    );
    assert!(e.posted(GENERAL).is_empty());
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC A5: a long answer is shown as it is written (the original response edited with the
// draft), then cut like any reply: its first message the original response, the rest
// follow-ups, each within Discord's 2000 characters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_answer_streams_by_edits_and_continues_in_follow_ups() {
    let paragraph = |n: usize| format!("Paragraph {n}: {}", "word ".repeat(300).trim_end());
    let mut steps = Vec::new();
    for n in 0..4 {
        for chunk in paragraph(n).as_bytes().chunks(500) {
            steps.push(Sse::text(std::str::from_utf8(chunk).expect("ascii")));
            steps.push(Sse::Delay(Duration::from_millis(400)));
        }
        steps.push(Sse::text("\n\n"));
    }
    steps.push(Sse::finish("stop"));
    steps.push(Sse::Done);
    let e = E2e::start(Behaviour::succeed(), vec![Reply::Stream(steps)]).await;
    let id = e
        .discord
        .slash(ask_in(Some(GUILD), GENERAL, "tell me a lot", false))
        .await;
    e.until("the answer is over", |e| {
        let (_, followups) = e.discord.interaction_messages(id);
        followups.last().is_some_and(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.contains("Paragraph 3"))
        }) && followups.into_iter().all(finished)
    })
    .await;
    let (original, followups) = e.discord.interaction_messages(id);
    let original = original.expect("original");
    let mut shown = vec![original["content"].as_str().unwrap_or("").to_owned()];
    shown.extend(
        followups
            .iter()
            .map(|m| m["content"].as_str().unwrap_or("").to_owned()),
    );
    assert!(shown.len() >= 2, "{shown:?}");
    assert!(
        shown
            .iter()
            .all(|m| m.chars().count() <= 2000 && !m.ends_with(" …")),
        "{shown:?}"
    );
    let whole = shown.join("\n\n");
    for n in 0..4 {
        assert!(whole.contains(&paragraph(n)), "paragraph {n} in {shown:?}");
    }
    let drafts = requests_to(&e, "PATCH", "/webhooks/")
        .into_iter()
        .filter(|b| b["content"].as_str().is_some_and(|c| c.ends_with(" …")))
        .count();
    assert!(
        drafts >= 2,
        "the answer was shown as it was written: {drafts} drafts"
    );
    assert!(e.posted(GENERAL).is_empty());
    let refused: Vec<_> = e
        .discord
        .requests()
        .into_iter()
        .filter(|r| r.status >= 400 && r.status != 429)
        .map(|r| format!("{} {} {}", r.method, r.path, r.status))
        .collect();
    assert!(refused.is_empty(), "Discord refused nothing: {refused:?}");
    e.stop().await;
}

// SPEC A5, C6: `/kill` in the channel stops an `/ask` turn; its answer keeps what was complete
// and the model's stream is dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_stops_an_ask_turn() {
    let (_open, gate) = tokio::sync::watch::channel(false);
    let e = E2e::start(
        Behaviour::succeed(),
        vec![Reply::Stream(vec![
            Sse::text("The first sentence is done. The second is half"),
            Sse::Until(gate),
            Sse::text(" written."),
            Sse::finish("stop"),
            Sse::Done,
        ])],
    )
    .await;
    let id = e
        .discord
        .slash(ask_in(Some(GUILD), GENERAL, "talk", false))
        .await;
    e.until("the draft is shown", |e| {
        e.discord
            .interaction_messages(id)
            .0
            .is_some_and(|m| m["content"].as_str().is_some_and(|c| c.contains("half")))
    })
    .await;
    let killed = e.slash(ALICE, "kill", 0, json!([])).await;
    assert!(
        content_of(&killed).contains("Stopped your reply"),
        "{killed}"
    );
    e.until("the answer settled", |e| {
        e.discord
            .interaction_messages(id)
            .0
            .is_some_and(|m| m["content"] == "The first sentence is done.")
    })
    .await;
    assert!(e.posted(GENERAL).is_empty());
    e.stop().await;
}

// SPEC A5: `/ask` in a DM with the bot, and through the user's own install in a server the bot
// is not in: answered in the interaction, nothing posted in that channel, no history read there,
// and the server's memory not used.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_in_a_dm_and_where_the_bot_is_not_a_member() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![
            Reply::text(&["Hello in the DM."]),
            Reply::text(&["Hello from elsewhere."]),
        ],
    )
    .await;
    // What Alice told the persona in her DM stays there.
    let dm = e.discord.dm_channel(ALICE);
    let fact = persona_bot::domain::ports::NewFact {
        server: None,
        persona: persona_bot::domain::scope::PersonaId("aria".into()),
        about: Some(persona_bot::domain::scope::UserId(ALICE)),
        text: "her private plan".into(),
        at_ms: 1,
        private_to: Some(persona_bot::domain::scope::ChannelId(dm)),
        source: None,
    };
    let memory = &e.running().storage.memory;
    persona_bot::domain::ports::MemoryStore::add_fact(memory.as_ref(), fact, 100)
        .await
        .expect("stored");
    let id = e.discord.slash(ask_in(None, dm, "hi", false)).await;
    assert_eq!(answered(&e, id).await["content"], "Hello in the DM.");
    assert!(
        e.system_prompt(0).contains("her private plan"),
        "read in the DM"
    );

    let id = e
        .discord
        .try_user_slash(ask_in(
            Some(ELSEWHERE),
            ELSEWHERE_CHANNEL,
            "hi there",
            false,
        ))
        .await
        .expect("offered for user install");
    e.until("answered elsewhere", |e| {
        e.discord
            .interaction_messages(id)
            .0
            .is_some_and(|m| m["content"] == "Hello from elsewhere.")
    })
    .await;
    assert!(e.posted(ELSEWHERE_CHANNEL).is_empty());
    let read = e
        .discord
        .requests()
        .into_iter()
        .filter(|r| {
            r.path
                .starts_with(&format!("/channels/{ELSEWHERE_CHANNEL}"))
        })
        .count();
    assert_eq!(
        read, 0,
        "nothing read or posted in a channel the bot is not in"
    );
    let prompt = e.system_prompt(1);
    assert!(!prompt.contains("private plan"), "{prompt}");
    e.stop().await;
}

// SPEC A5: the interaction's token lives 15 minutes from the interaction's creation. A public
// answer where the bot may post continues in the channel past it; a private one is stopped just
// before it and says it was cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tokens_life_bounds_the_answer() {
    let slow = |pause: u64| {
        Reply::Stream(vec![
            Sse::text("First part.\n\n"),
            Sse::Delay(Duration::from_millis(pause)),
            Sse::text("Second part."),
            Sse::finish("stop"),
            Sse::Done,
        ])
    };
    let e = E2e::start_with(
        Behaviour::succeed(),
        vec![slow(4500), slow(4000)],
        E2e::every_paragraph_a_message,
    )
    .await;
    // Made 14 min 57 s ago: 3 s left.
    e.discord
        .set_interaction_age(Duration::from_secs(15 * 60 - 3));
    let id = e
        .discord
        .slash(ask_in(Some(GUILD), GENERAL, "public", false))
        .await;
    e.until("the rest in the channel", |e| {
        e.texts(GENERAL) == ["Second part."]
    })
    .await;
    let original = e.discord.interaction_messages(id).0.expect("original");
    assert_eq!(original["content"], "First part.");

    // Made 14 min 47 s ago: 13 s left, so it is stopped 3 s from now, in its long pause.
    e.discord
        .set_interaction_age(Duration::from_secs(15 * 60 - 13));
    let id = e
        .discord
        .slash(ask_in(Some(GUILD), GENERAL, "private", true))
        .await;
    e.until("cut", |e| {
        e.discord.interaction_messages(id).1.iter().any(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.contains("15 minutes"))
        })
    })
    .await;
    let (original, _) = e.discord.interaction_messages(id);
    assert_eq!(original.expect("original")["content"], "First part.");
    assert_eq!(
        e.texts(GENERAL),
        ["Second part."],
        "nothing private in the channel"
    );
    e.stop().await;
}

// SPEC A5: an `/ask` is not stored, so it does not resume after a restart: when the process
// stops, the running one and a waiting one both tell their askers to ask again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_tells_each_ask_to_ask_again() {
    let (_open, gate) = tokio::sync::watch::channel(false);
    let mut e = E2e::start_with(
        Behaviour::succeed(),
        vec![Reply::Stream(vec![
            Sse::text("Thinking about it"),
            Sse::Until(gate),
            Sse::finish("stop"),
            Sse::Done,
        ])],
        |config| config.shutdown.grace_secs = 2,
    )
    .await;
    let running = e
        .discord
        .slash(ask_in(Some(GUILD), GENERAL, "first", false))
        .await;
    e.until("the first is shown", |e| {
        e.discord.interaction_messages(running).0.is_some_and(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.contains("Thinking"))
        })
    })
    .await;
    let mut bobs = ask_in(Some(GUILD), GENERAL, "second", true);
    bobs.user_id = BOB;
    let waiting = e.discord.slash(bobs).await;
    e.answer_to(waiting).await;
    e.running.take().expect("running").shutdown().await;
    for id in [running, waiting] {
        let (original, followups) = e.discord.interaction_messages(id);
        let mut shown: Vec<Value> = original.into_iter().collect();
        shown.extend(followups);
        assert!(
            shown.iter().any(|m| m["content"]
                .as_str()
                .is_some_and(|c| c.contains("ask again"))),
            "{id}: {shown:?}"
        );
    }
}
