//! The files of the messages a turn answers, end to end. The real serenity client reads attachment
//! objects from the fake Discord's gateway and history, the real CDN client downloads them from the
//! fake's CDN, and the real provider client sends them to the fake OpenAI-compatible server, which
//! refuses image parts for a model that cannot see (as OpenAI does) and records the pictures a
//! vision model received.

pub mod support {
    pub mod e2e;
    pub mod fake_discord;
    pub mod fake_images;
    pub mod fake_openai;
    pub mod harness;
}

use serde_json::{Value, json};
use support::e2e::*;
use support::fake_discord::{FakeFile, Incoming};
use support::fake_openai::Reply;
use support::harness::Behaviour;

/// A small real png (1 x 1, red).
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53,
    0xde, 0x00, 0x00, 0x00, 0x0c, 0x49, 0x44, 0x41, 0x54, 0x08, 0xd7, 0x63, 0xf8, 0xcf, 0xc0, 0x00,
    0x00, 0x03, 0x01, 0x01, 0x00, 0x18, 0xdd, 0x8d, 0xb0, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e,
    0x44, 0xae, 0x42, 0x60, 0x82,
];
/// The classic 1 x 1 gif.
const GIF: &[u8] = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;";

/// A mention of the bot by Alice in #general with `files`.
async fn ask_with(e: &E2e, text: &str, files: Vec<FakeFile>) -> u64 {
    let mut m = Incoming::new(
        GENERAL,
        Some(GUILD),
        ALICE,
        "alice",
        &format!("<@{BOT}> {text}"),
    );
    m.mentions = vec![(BOT, "Aria".into())];
    m.attachments = files;
    e.discord.send_message(m).await
}

/// The content of the request's last user message (text, or its parts).
fn last_user_content(e: &E2e) -> Value {
    let requests = e.openai.requests();
    let body = &requests.last().expect("a model request").body;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .expect("a user message")["content"]
        .clone()
}

/// Requests to the fake's CDN, and whether any carried an Authorization header.
fn cdn_requests(e: &E2e) -> (usize, bool) {
    let cdn: Vec<_> = e
        .discord
        .requests()
        .into_iter()
        .filter(|r| r.path.starts_with("/attachments/"))
        .collect();
    let authorized = cdn.iter().any(|r| r.authorization.is_some());
    (cdn.len(), authorized)
}

// A png and a gif posted with a question reach a vision model as image parts (the gif as its first
// frame, in png), after the text that names them; the CDN is asked without the bot's token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pictures_reach_a_vision_model_as_image_parts() {
    let e = E2e::start_with(
        Behaviour::succeed(),
        vec![Reply::text(&["A red dot and a white dot."])],
        |c| c.provider.vision = true,
    )
    .await;
    e.openai.sees("test-model");
    ask_with(
        &e,
        "what are these?",
        vec![
            FakeFile::new("dot.png", Some("image/png"), PNG.to_vec()),
            FakeFile::new("dot.gif", Some("image/gif"), GIF.to_vec()),
        ],
    )
    .await;
    e.until("the answer", |e| !e.posted(GENERAL).is_empty())
        .await;
    let content = last_user_content(&e);
    assert_eq!(content[0]["type"], "text", "{content}");
    assert_eq!(content[1]["type"], "image_url", "{content}");
    let text = content[0]["text"].as_str().unwrap();
    assert!(
        text.ends_with("what are these? [image: dot.png] [image: dot.gif]"),
        "{text}"
    );
    let images = e.openai.images();
    assert_eq!(images.len(), 2, "both pictures arrived");
    assert_eq!(images[0], ("test-model".to_owned(), PNG.to_vec()));
    assert!(
        images[1].1.starts_with(b"\x89PNG"),
        "the gif went as its first frame, in png"
    );
    assert_eq!(e.openai.unexpected(), 0);
    assert_eq!(cdn_requests(&e), (2, false), "two downloads, no token sent");
}

// A picture someone posted earlier in the channel reaches the model with the message it came with,
// for a question about it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_picture_in_recent_history_reaches_a_vision_model() {
    let e = E2e::start_with(
        Behaviour::succeed(),
        vec![Reply::text(&["Bob posted a red dot."])],
        |c| c.provider.vision = true,
    )
    .await;
    e.openai.sees("test-model");
    let mut bob = Incoming::new(GENERAL, Some(GUILD), BOB, "bob", "look at this");
    bob.attachments = vec![FakeFile::new("dot.png", Some("image/png"), PNG.to_vec())];
    // Bob's message is in the gateway's recent history, or in the REST page read back.
    e.discord.send_message(bob).await;
    ask_with(&e, "what did bob post?", Vec::new()).await;
    e.until("the answer", |e| !e.posted(GENERAL).is_empty())
        .await;
    let requests = e.openai.requests();
    let messages = requests.last().unwrap().body["messages"].clone();
    let from_bob = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["content"].to_string().contains("look at this"))
        .expect("bob's message in context")
        .clone();
    assert_eq!(from_bob["content"][1]["type"], "image_url", "{from_bob}");
    assert_eq!(
        e.openai.images(),
        vec![("test-model".to_owned(), PNG.to_vec())]
    );
}

// With the shipped configuration (vision off), a picture is named to the model, never downloaded,
// and no image part is sent (which the model would refuse).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_cannot_see_is_told_of_pictures_and_sent_none() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![Reply::text(&["I cannot see pictures, sorry."])],
    )
    .await;
    ask_with(
        &e,
        "what is this?",
        vec![FakeFile::new("dot.png", Some("image/png"), PNG.to_vec())],
    )
    .await;
    e.until("the answer", |e| !e.posted(GENERAL).is_empty())
        .await;
    let content = last_user_content(&e);
    let text = content.as_str().expect("plain text content");
    assert!(
        text.ends_with("what is this? [image: dot.png, 69 bytes, not shown]"),
        "{text}"
    );
    assert_eq!(cdn_requests(&e).0, 0, "nothing downloaded");
    assert_eq!(e.texts(GENERAL), vec!["I cannot see pictures, sorry."]);
}

// A text file goes to the model as text (cut at its bound, saying so), and a file of another kind
// is named with its size, never downloaded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_files_are_read_and_other_files_named() {
    let e = E2e::start_with(
        Behaviour::succeed(),
        vec![Reply::text(&["The log says the disk is full."])],
        |c| c.attachments.text_max_bytes = 40,
    )
    .await;
    let log = "error: disk full\nretrying in 5 s\n".repeat(4);
    ask_with(
        &e,
        "why did it fail?",
        vec![
            FakeFile::new(
                "build.log",
                Some("text/plain; charset=utf-8"),
                log.into_bytes(),
            ),
            FakeFile::new("core.dump", None, vec![0; 3000]),
        ],
    )
    .await;
    e.until("the answer", |e| !e.posted(GENERAL).is_empty())
        .await;
    let content = last_user_content(&e);
    let text = content.as_str().unwrap();
    assert!(
        text.contains(
            "why did it fail?\n[file: build.log]\nerror: disk full\nretrying in 5 s\nerror: \n[build.log is cut here: only its first 40 bytes were read]"
        ),
        "{text}"
    );
    assert!(
        text.ends_with("[file: core.dump, 2 KB, not opened]"),
        "{text}"
    );
    assert_eq!(
        cdn_requests(&e),
        (1, false),
        "only the text file is downloaded"
    );
}

// An attachment whose address is not Discord's CDN (a forged event, a proxy rewriting payloads) is
// never fetched: the model is told it is unavailable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_anywhere_but_the_cdn_is_never_fetched() {
    let elsewhere = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = elsewhere.local_addr().unwrap();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = accepted.clone();
    tokio::spawn(async move {
        while elsewhere.accept().await.is_ok() {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    let e = E2e::start_with(
        Behaviour::succeed(),
        vec![Reply::text(&["I could not open it."])],
        |c| c.provider.vision = true,
    )
    .await;
    e.openai.sees("test-model");
    let mut m = Incoming::new(
        GENERAL,
        Some(GUILD),
        ALICE,
        "alice",
        &format!("<@{BOT}> look"),
    );
    m.mentions = vec![(BOT, "Aria".into())];
    let mut message = e.discord.world().incoming_json(&m, 4_000_000, None);
    message["attachments"] = json!([{
        "id": "4000001", "filename": "evil.png", "size": 69, "content_type": "image/png",
        "url": format!("http://{address}/evil.png"), "proxy_url": format!("http://{address}/p.png"),
    }]);
    e.discord.dispatch("MESSAGE_CREATE", message).await;
    e.until("the answer", |e| !e.posted(GENERAL).is_empty())
        .await;
    let content = last_user_content(&e);
    let text = content.as_str().expect("no image part");
    assert!(
        text.ends_with("look [image: evil.png, 69 bytes, not shown: unavailable]"),
        "{text}"
    );
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 0);
}

// A file sent in a second message that joins its author's waiting one reaches the model with the
// joined text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_joined_message_keeps_its_files() {
    use std::time::Duration;
    use support::fake_openai::Sse;
    let slow = Reply::Stream(vec![
        Sse::Delay(Duration::from_secs(2)),
        Sse::text("Bob's answer."),
        Sse::finish("stop"),
        Sse::Done,
    ]);
    let e = E2e::start(
        Behaviour::succeed(),
        vec![slow, Reply::text(&["The log says the disk is full."])],
    )
    .await;
    e.mention(BOB, "bob", "hello").await;
    e.until("bob's turn runs", |e| e.openai.requests().len() == 1)
        .await;
    ask_with(&e, "why did the build fail?", Vec::new()).await;
    assert!(e.until_waiting(1).await.contains("waiting here: 1"));
    let mut more = Incoming::new(GENERAL, Some(GUILD), ALICE, "alice", "here is the log");
    more.attachments = vec![FakeFile::new(
        "build.log",
        Some("text/plain"),
        b"disk full".to_vec(),
    )];
    e.discord.send_message(more).await;
    e.until("alice is answered", |e| e.openai.requests().len() == 2)
        .await;
    let content = last_user_content(&e);
    let text = content.as_str().unwrap();
    assert!(
        text.ends_with("why did the build fail?\nhere is the log\n[file: build.log]\ndisk full\n[end of build.log]"),
        "{text}"
    );
}
