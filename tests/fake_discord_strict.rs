//! The fake Discord is as strict as Discord, by default: each rule driven with plain HTTP (and
//! the real serenity client on the gateway where a rule needs one): rate limits and their
//! headers, `allowed_mentions`, the MESSAGE_CONTENT intent, the interaction deadline, a 5xx after
//! the write with the nonce that makes a retry safe, and the bot's permissions.
// The shared fakes this binary uses (tests/support/). Public, so that what it leaves
// unused of them is not dead code.
pub mod support {
    pub mod fake_discord;
}

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use reqwest::Method;
use serde_json::{Value, json};
use serenity::all::{
    Client, ClientBuilder, Context, EventHandler, GatewayIntents, HttpBuilder, Message,
    MessageUpdateEvent,
};
use serenity::model::event::Event;
use support::fake_discord::{
    self as fd, ButtonPress, FakeChannel, FakeDiscord, Incoming, RateLimit, RateLimitCounts, Slash,
    World,
};

const GUILD: u64 = 100;
const GENERAL: u64 = 200;
const THOUGHTS: u64 = 201;
const PUBLIC_MODS: u64 = 202;
/// The bot may read but not send here.
const READ_ONLY: u64 = 203;
/// The bot may not even see this one.
const HIDDEN: u64 = 204;
/// The bot may mention @everyone, @here and every role here.
const ANNOUNCEMENTS: u64 = 205;
/// The bot may send but not read the history, nor attach files.
const NO_HISTORY: u64 = 206;
const BOT: u64 = 900;
const APP: u64 = 901;
const ALICE: u64 = 300;
const BOB: u64 = 301;
/// The guild's "Moderator" role.
const MODERATOR_ROLE: u64 = 100_001;
const LIMIT: Duration = Duration::from_secs(20);

/// [`World::simple`] with the channels the permission and mention rules need.
fn world() -> World {
    let mut world = World::simple();
    world.guilds[0].channels.extend([
        FakeChannel::new(READ_ONLY, "read-only", true).deny_bot(fd::SEND_MESSAGES),
        FakeChannel::new(HIDDEN, "hidden", true).deny_bot(fd::VIEW_CHANNEL),
        FakeChannel::new(ANNOUNCEMENTS, "announcements", true).allow_bot(fd::MENTION_EVERYONE),
        FakeChannel::new(NO_HISTORY, "no-history", true)
            .deny_bot(fd::READ_MESSAGE_HISTORY | fd::ATTACH_FILES),
    ]);
    world
}

// ----------------------------------------------------------------------------------------------
// Plain HTTP

/// An answer: status, headers, the body as text and as JSON (`Null` when it is not JSON).
struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    text: String,
    body: Value,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn header_f64(&self, name: &str) -> f64 {
        let value = self.header(name).unwrap_or_else(|| panic!("no {name}"));
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name} is not a number: {value}"))
    }

    fn id(&self) -> u64 {
        self.body["id"].as_str().unwrap().parse().unwrap()
    }
}

/// The bot's REST calls, as plain HTTP.
struct Api {
    http: reqwest::Client,
    base: String,
}

impl Api {
    fn new(fake: &FakeDiscord) -> Self {
        install_crypto();
        Self {
            http: reqwest::Client::new(),
            base: format!("{}/api/v10", fake.base_url),
        }
    }

    async fn send(&self, method: Method, path: &str, body: Option<&Value>) -> Answer {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("authorization", "Bot test-token");
        if let Some(body) = body {
            request = request.json(body);
        }
        Self::answer(request).await
    }

    async fn answer(request: reqwest::RequestBuilder) -> Answer {
        let response = request.send().await.expect("the fake answers");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.expect("a body");
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Answer {
            status,
            headers,
            text,
            body,
        }
    }

    async fn get(&self, path: &str) -> Answer {
        self.send(Method::GET, path, None).await
    }

    async fn post(&self, path: &str, body: Value) -> Answer {
        self.send(Method::POST, path, Some(&body)).await
    }

    async fn patch(&self, path: &str, body: Value) -> Answer {
        self.send(Method::PATCH, path, Some(&body)).await
    }

    async fn say(&self, channel: u64, content: &str) -> Answer {
        self.post(
            &format!("/channels/{channel}/messages"),
            json!({ "content": content }),
        )
        .await
    }

    /// A message with one file (multipart, as serenity and the bot send it).
    async fn say_with_file(&self, channel: u64, content: &str) -> Answer {
        let form = reqwest::multipart::Form::new()
            .text("payload_json", json!({ "content": content }).to_string())
            .part(
                "files[0]",
                reqwest::multipart::Part::bytes(b"hello".to_vec()).file_name("a.txt"),
            );
        let request = self
            .http
            .post(format!("{}/channels/{channel}/messages", self.base))
            .header("authorization", "Bot test-token")
            .multipart(form);
        Self::answer(request).await
    }
}

fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Waits (20 s at most) until `probe` gives something.
async fn until<T>(what: &str, probe: impl Fn() -> Option<T>) -> T {
    let deadline = Instant::now() + LIMIT;
    loop {
        if let Some(t) = probe() {
            return t;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// ----------------------------------------------------------------------------------------------
// The gateway, through the real serenity client

#[derive(Debug, Clone)]
enum Got {
    Message(Box<Message>),
    Update(Box<MessageUpdateEvent>),
}

#[derive(Default, Clone)]
struct Seen {
    events: Arc<Mutex<Vec<Got>>>,
    /// The kinds of the events serenity could not parse.
    unknown: Arc<Mutex<Vec<String>>>,
}

impl Seen {
    async fn message(&self, id: u64) -> Message {
        until(&format!("MESSAGE_CREATE {id}"), || {
            self.events.lock().unwrap().iter().find_map(|g| match g {
                Got::Message(m) if m.id.get() == id => Some((**m).clone()),
                _ => None,
            })
        })
        .await
    }

    async fn update(&self, id: u64) -> MessageUpdateEvent {
        until(&format!("MESSAGE_UPDATE {id}"), || {
            self.events.lock().unwrap().iter().find_map(|g| match g {
                Got::Update(u) if u.id.get() == id => Some((**u).clone()),
                _ => None,
            })
        })
        .await
    }

    fn assert_all_parsed(&self) {
        let unknown = self.unknown.lock().unwrap().clone();
        assert!(unknown.is_empty(), "serenity could not parse: {unknown:?}");
    }
}

#[serenity::async_trait]
impl EventHandler for Seen {
    async fn message(&self, _: Context, message: Message) {
        self.events
            .lock()
            .unwrap()
            .push(Got::Message(Box::new(message)));
    }

    async fn message_update(
        &self,
        _: Context,
        _old: Option<Message>,
        _new: Option<Message>,
        event: MessageUpdateEvent,
    ) {
        self.events
            .lock()
            .unwrap()
            .push(Got::Update(Box::new(event)));
    }
}

struct UnknownEvents(Arc<Mutex<Vec<String>>>);

#[serenity::async_trait]
impl serenity::all::RawEventHandler for UnknownEvents {
    async fn raw_event(&self, _: Context, event: Event) {
        if let Event::Unknown(u) = event {
            self.0.lock().unwrap().push(u.kind);
        }
    }
}

/// A serenity client on the fake's gateway, ready; what it receives goes into the `Seen`.
struct Gateway {
    seen: Seen,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn connect(fake: &FakeDiscord, intents: GatewayIntents) -> Gateway {
    install_crypto();
    let http = HttpBuilder::new("Bot test-token")
        .proxy(&fake.base_url)
        .ratelimiter_disabled(true)
        .build();
    let seen = Seen::default();
    let mut client: Client = ClientBuilder::new_with_http(http, intents)
        .event_handler(seen.clone())
        .raw_event_handler(UnknownEvents(seen.unknown.clone()))
        .await
        .expect("client");
    let task = tokio::spawn(async move {
        if let Err(e) = client.start().await {
            eprintln!("client stopped: {e}");
        }
    });
    fake.wait_ready().await;
    Gateway { seen, task }
}

fn all_intents() -> GatewayIntents {
    GatewayIntents::GUILDS
        | GatewayIntents::GUILD_MESSAGES
        | GatewayIntents::DIRECT_MESSAGES
        | GatewayIntents::MESSAGE_CONTENT
}

fn alice_says(channel: u64, content: &str) -> Incoming {
    Incoming::new(channel, Some(GUILD), ALICE, "alice", content)
}

// ----------------------------------------------------------------------------------------------
// 1. Rate limits

// A route's bucket is a fixed window of 5 per channel per 5 s; every answer tells where it
// stands, and the sixth gets Discord's 429, which creates nothing and takes no place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_creates_meet_a_fixed_window_of_five_per_channel_per_5s() {
    let fake = FakeDiscord::start(world()).await;
    let api = Api::new(&fake);
    let mut bucket = None;
    for n in 0..5 {
        let before = unix_now();
        let sent = api.say(GENERAL, &format!("m{n}")).await;
        assert_eq!(sent.status, 200, "{}", sent.text);
        assert_eq!(sent.header("x-ratelimit-limit"), Some("5"));
        assert_eq!(
            sent.header("x-ratelimit-remaining"),
            Some((4 - n).to_string().as_str())
        );
        let reset_after = sent.header("x-ratelimit-reset-after").unwrap();
        let (_, decimals) = reset_after.split_once('.').expect("a float");
        assert_eq!(decimals.len(), 3, "{reset_after}");
        let reset_after: f64 = reset_after.parse().unwrap();
        assert!(reset_after > 0.0 && reset_after <= 5.0, "{reset_after}");
        let reset = sent.header_f64("x-ratelimit-reset");
        assert!(
            reset > before && reset <= unix_now() + 5.0 + 0.01,
            "{reset}"
        );
        let hash = sent.header("x-ratelimit-bucket").unwrap().to_owned();
        assert_eq!(bucket.get_or_insert(hash.clone()), &hash, "one hash");
    }
    let refused = api.say(GENERAL, "m5").await;
    assert_eq!(refused.status, 429);
    assert_eq!(refused.body["message"], "You are being rate limited.");
    assert_eq!(refused.body["global"], false);
    assert_eq!(
        refused.body.as_object().unwrap().len(),
        3,
        "{}",
        refused.body
    );
    let retry_after = refused.body["retry_after"].as_f64().unwrap();
    assert!(retry_after > 0.0 && retry_after <= 5.0, "{retry_after}");
    assert_eq!(
        refused.header("retry-after"),
        Some(retry_after.ceil().to_string().as_str()),
        "whole seconds, rounded up"
    );
    assert_eq!(refused.header("x-ratelimit-scope"), Some("user"));
    assert_eq!(refused.header("x-ratelimit-global"), None);
    assert_eq!(refused.header("x-ratelimit-remaining"), Some("0"));
    assert_eq!(refused.header("x-ratelimit-bucket"), bucket.as_deref());
    assert_eq!(
        fake.messages_in(GENERAL).len(),
        5,
        "the 429 created nothing"
    );
    assert_eq!(fake.history(GENERAL).len(), 5);
    assert_eq!(fake.rate_limited(), 1);
    assert_eq!(
        fake.rate_limit_counts(),
        RateLimitCounts {
            bucket: 1,
            global: 0,
            scripted: 0
        }
    );
    let statuses: Vec<u16> = fake.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, vec![200, 200, 200, 200, 200, 429]);

    // the channel is the major parameter: another channel has a window of its own, same hash
    let elsewhere = api.say(PUBLIC_MODS, "elsewhere").await;
    assert_eq!(elsewhere.status, 200);
    assert_eq!(elsewhere.header("x-ratelimit-remaining"), Some("4"));
    assert_eq!(elsewhere.header("x-ratelimit-bucket"), bucket.as_deref());

    // once the window ends, the count starts again
    tokio::time::sleep(Duration::from_secs_f64(retry_after)).await;
    let again = api.say(GENERAL, "after the window").await;
    assert_eq!(again.status, 200, "{}", again.text);
    assert_eq!(again.header("x-ratelimit-remaining"), Some("4"));
}

// Message edits have a bucket (and hash) of their own; other routes answer without headers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_edits_have_a_bucket_of_their_own() {
    let fake = FakeDiscord::start(world()).await;
    let _gateway = connect(&fake, all_intents()).await;
    let api = Api::new(&fake);
    let created = api.say(GENERAL, "draft").await;
    let path = format!("/channels/{GENERAL}/messages/{}", created.id());
    for n in 0..5 {
        let edited = api
            .patch(&path, json!({ "content": format!("v{n}") }))
            .await;
        assert_eq!(edited.status, 200, "{}", edited.text);
        assert_eq!(edited.body["content"], format!("v{n}"));
        assert!(edited.body["edited_timestamp"].is_string());
        assert_eq!(
            edited.header("x-ratelimit-remaining"),
            Some((4 - n).to_string().as_str())
        );
        assert_ne!(
            edited.header("x-ratelimit-bucket"),
            created.header("x-ratelimit-bucket")
        );
    }
    let refused = api.patch(&path, json!({ "content": "v5" })).await;
    assert_eq!(refused.status, 429);
    assert_eq!(refused.header("x-ratelimit-scope"), Some("user"));
    assert_eq!(
        fake.history(GENERAL)[0]["content"],
        "v4",
        "the refused edit changed nothing"
    );
    let created_again = api.say(GENERAL, "creates are counted apart").await;
    assert_eq!(created_again.status, 200);
    assert_eq!(created_again.header("x-ratelimit-remaining"), Some("3"));
    let updates = fake.dispatches("MESSAGE_UPDATE");
    assert_eq!(updates.len(), 5);
    assert_eq!(updates[4]["content"], "v4");

    // Discord's checks on an edit
    let other = fake.send_message(alice_says(PUBLIC_MODS, "mine")).await;
    let theirs = api
        .patch(
            &format!("/channels/{PUBLIC_MODS}/messages/{other}"),
            json!({"content": "x"}),
        )
        .await;
    assert_eq!(
        (theirs.status, theirs.body.clone()),
        (
            403,
            json!({"message": "Cannot edit a message authored by another user", "code": 50005})
        )
    );
    let unknown = api
        .patch(
            &format!("/channels/{PUBLIC_MODS}/messages/42"),
            json!({"content": "x"}),
        )
        .await;
    assert_eq!(
        unknown.body,
        json!({"message": "Unknown Message", "code": 10008})
    );

    let typing = api
        .post(&format!("/channels/{GENERAL}/typing"), json!({}))
        .await;
    assert_eq!(typing.status, 204);
    assert_eq!(typing.header("x-ratelimit-bucket"), None);
}

// The bot's reactions (SPEC E1): a bucket of 1 per channel per 0.25 s for adding and removing;
// a Unicode emoji or the guild's own as `name:id`, anything else 10014; an unknown message
// 10008; a reaction already there is no change; READ_MESSAGE_HISTORY is needed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reactions_have_their_bucket_and_discords_refusals() {
    let fake = FakeDiscord::start(world()).await;
    let _gateway = connect(&fake, all_intents()).await;
    let api = Api::new(&fake);
    let message = fake.send_message(alice_says(GENERAL, "react to me")).await;
    let path = |emoji: &str| {
        let emoji =
            percent_encoding::utf8_percent_encode(emoji, percent_encoding::NON_ALPHANUMERIC);
        format!("/channels/{GENERAL}/messages/{message}/reactions/{emoji}/@me")
    };
    let added = api.send(Method::PUT, &path("👍"), None).await;
    assert_eq!(added.status, 204, "{}", added.text);
    assert_eq!(added.header("x-ratelimit-limit"), Some("1"));
    let too_soon = api.send(Method::PUT, &path("partyblob:750"), None).await;
    assert_eq!(too_soon.status, 429, "one per 0.25 s");
    tokio::time::sleep(Duration::from_secs_f64(
        too_soon.body["retry_after"].as_f64().unwrap_or(0.25),
    ))
    .await;
    let own = api.send(Method::PUT, &path("partyblob:750"), None).await;
    assert_eq!(own.status, 204, "{}", own.text);
    tokio::time::sleep(Duration::from_millis(260)).await;
    let again = api.send(Method::PUT, &path("👍"), None).await;
    assert_eq!(again.status, 204, "adding it again changes nothing");
    assert_eq!(
        fake.reactions(GENERAL, message),
        vec!["👍".to_owned(), "partyblob:750".to_owned()]
    );
    for (emoji, why) in [
        ("partyblob:751", "an id the guild does not have"),
        ("wave", "a name without an id"),
        ("👍👍", "two emoji"),
    ] {
        tokio::time::sleep(Duration::from_millis(260)).await;
        let refused = api.send(Method::PUT, &path(emoji), None).await;
        assert_eq!(
            refused.body,
            json!({"message": "Unknown Emoji", "code": 10014}),
            "{why}"
        );
    }
    tokio::time::sleep(Duration::from_millis(260)).await;
    let unknown = api
        .send(
            Method::PUT,
            &format!("/channels/{GENERAL}/messages/42/reactions/%F0%9F%91%8D/@me"),
            None,
        )
        .await;
    assert_eq!(
        unknown.body,
        json!({"message": "Unknown Message", "code": 10008})
    );
    let elsewhere = fake.send_message(alice_says(NO_HISTORY, "here")).await;
    let blind = api
        .send(
            Method::PUT,
            &format!("/channels/{NO_HISTORY}/messages/{elsewhere}/reactions/%F0%9F%91%8D/@me"),
            None,
        )
        .await;
    assert_eq!(blind.status, 403, "{}", blind.text);
    tokio::time::sleep(Duration::from_millis(260)).await;
    let removed = api.send(Method::DELETE, &path("👍"), None).await;
    assert_eq!(removed.status, 204);
    assert_eq!(
        fake.reactions(GENERAL, message),
        vec!["partyblob:750".to_owned()]
    );
}

// Components (the ground for a reply's buttons): a message's buttons are kept as sent;
// Discord's 50035 for more than 5 buttons in a row, a custom id over 100 characters, a repeated
// custom id, or a button with neither label nor emoji; on an edit as on a create.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn components_are_checked_as_discord_checks_them() {
    let fake = FakeDiscord::start(world()).await;
    let api = Api::new(&fake);
    let button = |id: &str| json!({"type": 2, "style": 2, "label": "ok", "custom_id": id});
    let row = |buttons: Vec<Value>| json!({"type": 1, "components": buttons});
    let sent = api
        .post(
            &format!("/channels/{GENERAL}/messages"),
            json!({"content": "pick", "components": [row(vec![button("a"), button("b")])]}),
        )
        .await;
    assert_eq!(sent.status, 200, "{}", sent.text);
    assert_eq!(
        sent.body["components"][0]["components"][1]["custom_id"],
        "b"
    );
    let six: Vec<Value> = (0..6).map(|n| button(&n.to_string())).collect();
    let long = "x".repeat(101);
    for (components, field, why) in [
        (json!([row(six)]), "components", "six buttons in a row"),
        (
            json!([row(vec![button(&long)])]),
            "custom_id",
            "a custom id of 101",
        ),
        (
            json!([row(vec![button("same"), button("same")])]),
            "custom_id",
            "a repeated custom id",
        ),
        (
            json!([row(vec![
                json!({"type": 2, "style": 1, "custom_id": "bare"})
            ])]),
            "label",
            "no label and no emoji",
        ),
    ] {
        let refused = api
            .post(
                &format!("/channels/{GENERAL}/messages"),
                json!({"content": "pick", "components": components}),
            )
            .await;
        assert_eq!(refused.status, 400, "{why}");
        assert_eq!(refused.body["code"], 50035, "{why}");
        assert!(refused.text.contains(field), "{why}: {}", refused.text);
    }
    let edit = api
        .patch(
            &format!("/channels/{GENERAL}/messages/{}", sent.id()),
            json!({"components": [row(vec![button(&long)])]}),
        )
        .await;
    assert_eq!(edit.body["code"], 50035, "an edit is checked too");
    let cleared = api
        .patch(
            &format!("/channels/{GENERAL}/messages/{}", sent.id()),
            json!({"components": []}),
        )
        .await;
    assert_eq!(cleared.status, 200, "{}", cleared.text);
    assert_eq!(cleared.body["components"], json!([]));
}

// A press is sent only for a button on the app's own message; its callback may update the
// message (7: content and components replaced, checked as an edit is) or defer that (6), once;
// a command's interaction takes neither. The app deletes its own message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn presses_are_sent_and_answered_as_discord_does() {
    let fake = FakeDiscord::start(world()).await;
    let _gateway = connect(&fake, all_intents()).await;
    let api = Api::new(&fake);
    let button = json!({"type": 2, "style": 2, "label": "ok", "custom_id": "ok"});
    let sent = api
        .post(
            &format!("/channels/{GENERAL}/messages"),
            json!({"content": "pick", "components": [{"type": 1, "components": [button]}]}),
        )
        .await;
    let press = |custom_id: &str| ButtonPress {
        channel_id: GENERAL,
        guild_id: Some(GUILD),
        message_id: sent.id(),
        custom_id: custom_id.to_owned(),
        user_id: ALICE,
        permissions: 0,
    };
    assert!(fake.press(press("other")).await.is_err(), "no such button");
    let pressed = fake.press(press("ok")).await.expect("a press");
    let long = "x".repeat(101);
    let update = |data: Value| json!({"type": 7, "data": data});
    let path = format!("/interactions/{pressed}/itoken-{pressed}/callback");
    let bad = api
        .post(
            &path,
            update(json!({"components": [{"type": 1, "components": [
                {"type": 2, "style": 2, "label": "x", "custom_id": long}
            ]}]})),
        )
        .await;
    assert_eq!(bad.body["code"], 50035, "checked as an edit: {}", bad.text);
    let updated = api
        .post(
            &path,
            update(json!({"content": "picked", "components": []})),
        )
        .await;
    assert_eq!(updated.status, 204, "{}", updated.text);
    let now = fake.history(GENERAL);
    let message = now
        .iter()
        .find(|m| m["id"] == sent.body["id"])
        .expect("kept");
    assert_eq!(message["content"], "picked");
    assert_eq!(message["components"], json!([]));
    assert!(fake.press(press("ok")).await.is_err(), "the button is gone");
    let again = api.post(&path, update(json!({"content": "twice"}))).await;
    assert_eq!(again.body["code"], 40060);
    let command = fake
        .slash(Slash::new(
            "ping",
            json!([]),
            Some(GUILD),
            GENERAL,
            ALICE,
            "alice",
        ))
        .await;
    let deferred_update = api
        .post(
            &format!("/interactions/{command}/itoken-{command}/callback"),
            json!({"type": 6}),
        )
        .await;
    assert_eq!(deferred_update.status, 400, "not for a command");
    let deleted = api
        .send(
            Method::DELETE,
            &format!("/channels/{GENERAL}/messages/{}", sent.id()),
            None,
        )
        .await;
    assert_eq!(deleted.status, 204);
    let gone = api
        .send(
            Method::DELETE,
            &format!("/channels/{GENERAL}/messages/{}", sent.id()),
            None,
        )
        .await;
    assert_eq!(gone.body["code"], 10008);
}

// The global budget: 50 requests per second over every route, interaction callbacks excepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_global_limit_is_fifty_per_second_and_spares_interaction_callbacks() {
    let fake = FakeDiscord::start(world()).await;
    let api = Arc::new(Api::new(&fake));
    let burst: Vec<_> = (0..60)
        .map(|_| {
            let api = api.clone();
            tokio::spawn(async move { api.get("/users/@me").await })
        })
        .collect();
    let mut answers = Vec::new();
    for request in burst {
        answers.push(request.await.unwrap());
    }
    let passed = answers.iter().filter(|a| a.status == 200).count();
    let refused: Vec<&Answer> = answers.iter().filter(|a| a.status == 429).collect();
    assert_eq!((passed, refused.len()), (50, 10));
    for answer in &refused {
        assert_eq!(answer.body["global"], true);
        assert_eq!(answer.body["message"], "You are being rate limited.");
        let retry_after = answer.body["retry_after"].as_f64().unwrap();
        assert!(retry_after > 0.0 && retry_after <= 1.0, "{retry_after}");
        assert_eq!(answer.header("retry-after"), Some("1"));
        assert_eq!(answer.header("x-ratelimit-global"), Some("true"));
        assert_eq!(answer.header("x-ratelimit-scope"), Some("global"));
    }
    assert_eq!(fake.rate_limit_counts().global, 10);
    // a route with a bucket is refused too, before its bucket is asked
    let create = api.say(GENERAL, "spent").await;
    assert_eq!(create.status, 429);
    assert_eq!(create.body["global"], true);
    assert!(fake.messages_in(GENERAL).is_empty());

    // callbacks are exempt: with one request a minute, an interaction is still answered (the
    // client connects once the spent second is over)
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let _gateway = connect(&fake, all_intents()).await;
    fake.set_rate_limit(RateLimit::Global, 1, Duration::from_secs(60));
    assert_eq!(api.get("/users/@me").await.status, 200);
    assert_eq!(api.get("/users/@me").await.status, 429);
    let id = fake
        .slash(Slash::new(
            "ping",
            json!([]),
            Some(GUILD),
            GENERAL,
            ALICE,
            "alice",
        ))
        .await;
    let callback = api
        .post(
            &format!("/interactions/{id}/itoken-{id}/callback"),
            json!({"type": 4, "data": {"content": "pong"}}),
        )
        .await;
    assert_eq!(callback.status, 204, "{}", callback.text);
    assert_eq!(fake.interaction_responses().len(), 1);
}

// A scripted 429 looks like a real one, carries the route's real headers and takes no place in
// the window; with the limits off nothing is refused and no rate-limit header is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_429s_look_real_and_limits_can_be_switched_off() {
    let fake = FakeDiscord::start(world()).await;
    let api = Api::new(&fake);
    let bucket = api
        .say(THOUGHTS, "first")
        .await
        .header("x-ratelimit-bucket")
        .map(str::to_owned);
    fake.rate_limit_next(GENERAL, 1, 0.25);
    let scripted = api.say(GENERAL, "x").await;
    assert_eq!(scripted.status, 429);
    assert_eq!(
        scripted.body,
        json!({"message": "You are being rate limited.", "retry_after": 0.25, "global": false})
    );
    assert_eq!(scripted.header("retry-after"), Some("1"));
    assert_eq!(scripted.header("x-ratelimit-reset-after"), Some("0.250"));
    assert_eq!(scripted.header("x-ratelimit-remaining"), Some("0"));
    assert_eq!(scripted.header("x-ratelimit-limit"), Some("5"));
    assert_eq!(scripted.header("x-ratelimit-scope"), Some("user"));
    assert_eq!(
        scripted.header("x-ratelimit-bucket").map(str::to_owned),
        bucket
    );
    let reset = scripted.header_f64("x-ratelimit-reset");
    assert!((reset - unix_now()).abs() < 1.0, "{reset}");
    for n in 0..5 {
        let sent = api.say(GENERAL, &format!("m{n}")).await;
        assert_eq!(
            sent.status, 200,
            "the scripted 429 took no place (message {n})"
        );
    }
    assert_eq!(api.say(GENERAL, "m5").await.status, 429);
    assert_eq!(
        fake.rate_limit_counts(),
        RateLimitCounts {
            bucket: 1,
            global: 0,
            scripted: 1
        }
    );

    // a changed window
    fake.set_rate_limit(RateLimit::MessageCreate, 2, Duration::from_millis(300));
    assert_eq!(api.say(PUBLIC_MODS, "a").await.status, 200);
    let second = api.say(PUBLIC_MODS, "b").await;
    assert_eq!(second.header("x-ratelimit-limit"), Some("2"));
    let third = api.say(PUBLIC_MODS, "c").await;
    assert_eq!(third.status, 429);
    assert!(third.body["retry_after"].as_f64().unwrap() <= 0.3);

    fake.set_rate_limits(false);
    for n in 0..8 {
        let sent = api.say(GENERAL, &format!("unlimited {n}")).await;
        assert_eq!(sent.status, 200);
        assert_eq!(sent.header("x-ratelimit-remaining"), None);
    }
}

// ----------------------------------------------------------------------------------------------
// 2. allowed_mentions

async fn post_in(api: &Api, channel: u64, body: Value) -> Answer {
    api.post(&format!("/channels/{channel}/messages"), body)
        .await
}

fn user_ids(message: &Value) -> Vec<u64> {
    message["mentions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["id"].as_str().unwrap().parse().unwrap())
        .collect()
}

// The created message's `mentions`, `mention_roles` and `mention_everyone` list only who was
// pinged, by Discord's rules; contradictory settings are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_mentions_decide_who_is_pinged() {
    let fake = FakeDiscord::start(world()).await;
    let _gateway = connect(&fake, all_intents()).await;
    let api = Api::new(&fake);
    fake.set_rate_limits(false); // a dozen messages in one channel: about mentions, not pacing
    let text = format!("<@{ALICE}> <@!{BOB}> <@&{MODERATOR_ROLE}> @everyone");
    let cases = [
        (json!({ "content": text }), vec![ALICE, BOB]),
        (json!({ "content": text, "allowed_mentions": {} }), vec![]),
        (
            json!({ "content": text, "allowed_mentions": {"parse": []} }),
            vec![],
        ),
        (
            json!({ "content": text, "allowed_mentions": {"parse": ["users"]} }),
            vec![ALICE, BOB],
        ),
        (
            json!({ "content": text, "allowed_mentions": {"users": [BOB.to_string()]} }),
            vec![BOB],
        ),
    ];
    let mut expected = Vec::new();
    for (body, pinged) in cases {
        let sent = post_in(&api, GENERAL, body.clone()).await;
        assert_eq!(sent.status, 200, "{}", sent.text);
        assert_eq!(user_ids(&sent.body), pinged, "{body}");
        // the bot lacks MENTION_EVERYONE in #general: no role, @everyone or @here pings
        assert_eq!(sent.body["mention_roles"], json!([]), "{body}");
        assert_eq!(sent.body["mention_everyone"], false, "{body}");
        expected.push((sent.id(), pinged));
    }

    // a reply pings its author by default, and with allowed_mentions only when asked to
    let alices = fake.send_message(alice_says(GENERAL, "a question")).await;
    let reference = json!({ "message_id": alices.to_string() });
    for (allowed, pinged) in [
        (None, vec![BOB, ALICE]),
        (Some(json!({"parse": []})), vec![]),
        (
            Some(json!({"parse": [], "replied_user": true})),
            vec![ALICE],
        ),
        (Some(json!({"parse": ["users"]})), vec![BOB]),
        (
            Some(json!({"parse": ["users"], "replied_user": true})),
            vec![BOB, ALICE],
        ),
    ] {
        let mut body =
            json!({ "content": format!("<@{BOB}> see"), "message_reference": reference });
        if let Some(allowed) = &allowed {
            body["allowed_mentions"] = allowed.clone();
        }
        let sent = post_in(&api, GENERAL, body).await;
        assert_eq!(sent.status, 200, "{}", sent.text);
        assert_eq!(user_ids(&sent.body), pinged, "{allowed:?}");
        expected.push((sent.id(), pinged));
    }
    assert_eq!(fake.pinged_in(GENERAL), expected);

    // with MENTION_EVERYONE, roles and @everyone/@here ping as allowed
    let sent = post_in(
        &api,
        ANNOUNCEMENTS,
        json!({ "content": format!("@here <@&{MODERATOR_ROLE}>"), "allowed_mentions": {"parse": ["everyone", "roles"]} }),
    )
    .await;
    assert_eq!(sent.body["mention_everyone"], true);
    assert_eq!(
        sent.body["mention_roles"],
        json!([MODERATOR_ROLE.to_string()])
    );
    let sent = post_in(
        &api,
        ANNOUNCEMENTS,
        json!({ "content": format!("@everyone <@&{MODERATOR_ROLE}>"), "allowed_mentions": {"parse": ["users"]} }),
    )
    .await;
    assert_eq!(sent.body["mention_everyone"], false);
    assert_eq!(sent.body["mention_roles"], json!([]));
    let sent = post_in(
        &api,
        ANNOUNCEMENTS,
        json!({ "content": format!("@everyone <@&{MODERATOR_ROLE}>"), "allowed_mentions": {"roles": [MODERATOR_ROLE.to_string()]} }),
    )
    .await;
    assert_eq!(sent.body["mention_everyone"], false);
    assert_eq!(
        sent.body["mention_roles"],
        json!([MODERATOR_ROLE.to_string()])
    );
    let sent = post_in(
        &api,
        ANNOUNCEMENTS,
        json!({ "content": format!("@everyone <@&{MODERATOR_ROLE}>") }),
    )
    .await;
    assert_eq!(
        sent.body["mention_everyone"], true,
        "no allowed_mentions: all parse"
    );

    // Discord refuses what contradicts itself
    let before = fake.history(GENERAL).len();
    for (allowed, list) in [
        (
            json!({"parse": ["users"], "users": [ALICE.to_string()]}),
            "users",
        ),
        (
            json!({"parse": ["roles"], "roles": [MODERATOR_ROLE.to_string()]}),
            "roles",
        ),
    ] {
        let refused = post_in(
            &api,
            GENERAL,
            json!({ "content": text, "allowed_mentions": allowed }),
        )
        .await;
        assert_eq!(refused.status, 400);
        assert_eq!(
            refused.body,
            json!({
                "message": "Invalid Form Body",
                "code": 50035,
                "errors": {"allowed_mentions": {"_errors": [{
                    "code": "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE",
                    "message": format!("parse:[\"{list}\"] and {list}: [ids...] are mutually exclusive."),
                }]}},
            })
        );
    }
    let unknown_kind = post_in(
        &api,
        GENERAL,
        json!({ "content": text, "allowed_mentions": {"parse": ["channels"]} }),
    )
    .await;
    assert_eq!(unknown_kind.body["code"], 50035);
    assert_eq!(
        unknown_kind.body["errors"]["allowed_mentions"]["parse"]["0"]["_errors"][0]["code"],
        "BASE_TYPE_CHOICES"
    );
    assert_eq!(
        fake.history(GENERAL).len(),
        before,
        "nothing refused was created"
    );
}

// ----------------------------------------------------------------------------------------------
// 3. The MESSAGE_CONTENT intent

// Without MESSAGE_CONTENT, a guild message arrives with its content, embeds, attachments and
// components empty (the fields still there, so serenity parses it), unless it mentions the bot,
// is a DM or is the bot's own; message events need GUILD_MESSAGES or DIRECT_MESSAGES at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_message_content_intent_messages_arrive_empty() {
    let fake = FakeDiscord::start(world()).await;
    let intents =
        GatewayIntents::GUILDS | GatewayIntents::GUILD_MESSAGES | GatewayIntents::DIRECT_MESSAGES;
    let gateway = connect(&fake, intents).await;
    let seen = &gateway.seen;
    assert_eq!(fake.identifies()[0]["intents"], json!(intents.bits()));
    assert_eq!(intents.bits() & fd::MESSAGE_CONTENT, 0);

    let plain = fake.send_message(alice_says(GENERAL, "hello there")).await;
    assert_eq!(seen.message(plain).await.content, "");
    assert_eq!(
        fake.history(GENERAL)[0]["content"],
        "hello there",
        "Discord keeps it"
    );

    let mut to_bot = alice_says(GENERAL, &format!("<@{BOT}> hi"));
    to_bot.mentions = vec![(BOT, "Aria".into())];
    let to_bot = fake.send_message(to_bot).await;
    assert_eq!(seen.message(to_bot).await.content, format!("<@{BOT}> hi"));

    let (_, dm) = fake.send_dm(ALICE, "psst").await;
    assert_eq!(seen.message(dm).await.content, "psst");

    let api = Api::new(&fake);
    let own = api.say(GENERAL, "the bot's own").await;
    let own_seen = seen.message(own.id()).await;
    assert_eq!(own_seen.content, "the bot's own");
    assert_eq!(own_seen.author.id.get(), BOT);

    // everything MESSAGE_CONTENT guards, on a message with all of it
    let rich_id = 77_000;
    let mut rich = fake.world().message_json(
        rich_id,
        GENERAL,
        Some(GUILD),
        fake.world().user(ALICE),
        "rich",
    );
    rich["embeds"] = json!([{"type": "rich", "title": "t"}]);
    rich["attachments"] = json!([{
        "id": "77001", "filename": "a.txt", "size": 5,
        "url": "https://cdn.discordapp.com/attachments/200/77001/a.txt",
        "proxy_url": "https://media.discordapp.net/attachments/200/77001/a.txt",
    }]);
    rich["components"] = json!([{"type": 1, "components": [
        {"type": 2, "style": 1, "label": "go", "custom_id": "go"}
    ]}]);
    fake.dispatch("MESSAGE_CREATE", rich.clone()).await;
    let rich_seen = seen.message(rich_id).await;
    assert_eq!(rich_seen.content, "");
    assert!(rich_seen.embeds.is_empty());
    assert!(rich_seen.attachments.is_empty());
    assert!(rich_seen.components.is_empty());

    rich["content"] = json!("rich, edited");
    rich["edited_timestamp"] = json!("2024-01-01T00:00:00.000000+00:00");
    fake.dispatch("MESSAGE_UPDATE", rich).await;
    let update = seen.update(rich_id).await;
    assert_eq!(update.content.as_deref(), Some(""));
    assert_eq!(update.embeds.as_deref().map(<[_]>::len), Some(0));

    let edited = api
        .patch(
            &format!("/channels/{GENERAL}/messages/{}", own.id()),
            json!({"content": "the bot's own, edited"}),
        )
        .await;
    assert_eq!(edited.status, 200);
    let update = seen.update(own.id()).await;
    assert_eq!(update.content.as_deref(), Some("the bot's own, edited"));
    seen.assert_all_parsed();
    drop(gateway);

    // with the intent, the same message arrives whole
    let fake = FakeDiscord::start(world()).await;
    let gateway = connect(&fake, all_intents()).await;
    let plain = fake.send_message(alice_says(GENERAL, "hello there")).await;
    assert_eq!(gateway.seen.message(plain).await.content, "hello there");
    drop(gateway);

    // and without GUILD_MESSAGES no guild message event is sent at all; DMs still are
    let fake = FakeDiscord::start(world()).await;
    let gateway = connect(
        &fake,
        GatewayIntents::GUILDS | GatewayIntents::DIRECT_MESSAGES,
    )
    .await;
    fake.send_message(alice_says(GENERAL, "unseen")).await;
    let (_, dm) = fake.send_dm(BOB, "seen").await;
    assert_eq!(gateway.seen.message(dm).await.content, "seen");
    let created: Vec<Value> = fake.dispatches("MESSAGE_CREATE");
    assert_eq!(created.len(), 1, "{created:?}");
    gateway.seen.assert_all_parsed();
}

// ----------------------------------------------------------------------------------------------
// 4. The interaction deadline

async fn callback(api: &Api, id: u64) -> Answer {
    api.post(
        &format!("/interactions/{id}/itoken-{id}/callback"),
        json!({"type": 4, "data": {"content": "answer"}}),
    )
    .await
}

// A callback is taken once, within 3 s of the dispatch; after a timely one, follow-ups and edits
// of the original response keep working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interaction_answered_late_or_twice_is_refused() {
    let fake = FakeDiscord::start(world()).await;
    let _gateway = connect(&fake, all_intents()).await;
    let api = Api::new(&fake);
    let slash = || Slash::new("ping", json!([]), Some(GUILD), GENERAL, ALICE, "alice");

    let timely = fake.slash(slash()).await;
    let late = fake.slash(slash()).await;
    let first = callback(&api, timely).await;
    assert_eq!(first.status, 204, "{}", first.text);
    let twice = callback(&api, timely).await;
    assert_eq!(twice.status, 400);
    assert_eq!(
        twice.body,
        json!({"message": "Interaction has already been acknowledged.", "code": 40060})
    );
    let followup = api
        .post(
            &format!("/webhooks/{APP}/itoken-{timely}"),
            json!({"content": "more"}),
        )
        .await;
    assert_eq!(followup.status, 200, "{}", followup.text);
    let edited = api
        .patch(
            &format!("/webhooks/{APP}/itoken-{timely}/messages/@original"),
            json!({"content": "answer, edited"}),
        )
        .await;
    assert_eq!(edited.status, 200, "{}", edited.text);
    assert_eq!(edited.body["content"], "answer, edited");

    // the default deadline is 3 s
    tokio::time::sleep(Duration::from_millis(3_200)).await;
    let too_late = callback(&api, late).await;
    assert_eq!(too_late.status, 404);
    assert_eq!(
        too_late.body,
        json!({"message": "Unknown interaction", "code": 10062})
    );
    let answered: Vec<u64> = fake
        .interaction_responses()
        .iter()
        .map(|(id, _)| *id)
        .collect();
    assert_eq!(answered, vec![timely]);
    // the timely one's token still lives
    let later = api
        .post(
            &format!("/webhooks/{APP}/itoken-{timely}"),
            json!({"content": "still here"}),
        )
        .await;
    assert_eq!(later.status, 200);

    // a test may shorten it
    fake.set_interaction_deadline(Duration::from_millis(300));
    let slow = fake.slash(slash()).await;
    let quick = fake.slash(slash()).await;
    assert_eq!(callback(&api, quick).await.status, 204);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(callback(&api, slow).await.body["code"], 10062);
}

// ----------------------------------------------------------------------------------------------
// 5. A 5xx after the write, and the nonce

fn with_nonce(content: &str, nonce: &str) -> Value {
    json!({ "content": content, "nonce": nonce, "enforce_nonce": true })
}

fn bot_messages(fake: &FakeDiscord, channel: u64) -> Vec<Value> {
    fake.history(channel)
        .into_iter()
        .filter(|m| m["author"]["id"] == json!(BOT.to_string()))
        .collect()
}

// A scripted 5xx after the write: the message is there (stored, dispatched) though the answer
// failed; the retry with the same nonce and enforce_nonce gets that message and posts nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_send_with_the_same_nonce_posts_once() {
    let fake = FakeDiscord::start(world()).await;
    let gateway = connect(&fake, all_intents()).await;
    let api = Api::new(&fake);

    fake.fail_after_create_next(GENERAL, 500);
    let failed = post_in(&api, GENERAL, with_nonce("once", "nonce-1")).await;
    assert_eq!(failed.status, 500);
    assert_eq!(
        failed.body,
        json!({"message": "500: Internal Server Error", "code": 0})
    );
    let stored = bot_messages(&fake, GENERAL);
    assert_eq!(stored.len(), 1, "created despite the 500");
    let id: u64 = stored[0]["id"].as_str().unwrap().parse().unwrap();
    assert_eq!(gateway.seen.message(id).await.content, "once", "dispatched");
    let retried = post_in(&api, GENERAL, with_nonce("once", "nonce-1")).await;
    assert_eq!(retried.status, 200);
    assert_eq!(retried.id(), id, "the message the first try created");
    assert_eq!(bot_messages(&fake, GENERAL).len(), 1, "posted once");
    assert_eq!(fake.messages_in(GENERAL).len(), 1);
    assert_eq!(fake.dispatches("MESSAGE_CREATE").len(), 1);

    // without enforce_nonce Discord does not look: a second message
    let unenforced = post_in(
        &api,
        GENERAL,
        json!({"content": "once", "nonce": "nonce-1"}),
    )
    .await;
    assert_eq!(unenforced.status, 200);
    assert_ne!(unenforced.id(), id);
    assert_eq!(bot_messages(&fake, GENERAL).len(), 2);

    // a 502 from the edge is an HTML page, a 503 text; the write happened all the same
    fake.fail_after_create_next(PUBLIC_MODS, 502);
    let failed = post_in(&api, PUBLIC_MODS, with_nonce("twice?", "nonce-2")).await;
    assert_eq!(failed.status, 502);
    assert_eq!(failed.header("content-type"), Some("text/html"));
    assert!(failed.text.contains("502 Bad Gateway"), "{}", failed.text);
    let retried = post_in(&api, PUBLIC_MODS, with_nonce("twice?", "nonce-2")).await;
    assert_eq!(retried.status, 200);
    assert_eq!(bot_messages(&fake, PUBLIC_MODS).len(), 1);
    // a nonce is per channel
    let same_nonce_elsewhere = post_in(&api, PUBLIC_MODS, with_nonce("once", "nonce-1")).await;
    assert_eq!(same_nonce_elsewhere.status, 200);
    assert_eq!(bot_messages(&fake, PUBLIC_MODS).len(), 2);

    fake.fail_after_create_next(THOUGHTS, 503);
    let failed = post_in(&api, THOUGHTS, with_nonce("noted", "nonce-3")).await;
    assert_eq!(failed.status, 503);
    assert_eq!(failed.body, Value::Null, "not JSON: {}", failed.text);
    assert_eq!(bot_messages(&fake, THOUGHTS).len(), 1);
    let too_long = post_in(&api, THOUGHTS, with_nonce("x", &"n".repeat(26))).await;
    assert_eq!(too_long.body["code"], 50035);
    assert_eq!(
        too_long.body["errors"]["nonce"]["_errors"][0]["code"],
        "BASE_TYPE_MAX_LENGTH"
    );
    gateway.seen.assert_all_parsed();
}

// ----------------------------------------------------------------------------------------------
// 6. The bot's permissions

// Without SEND_MESSAGES a create is refused with 50013, without VIEW_CHANNEL with 50001, by
// Discord's permission algorithm over the world's roles and overwrites.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_where_the_bot_may_not_send_refuses_with_discords_codes() {
    let fake = FakeDiscord::start(world()).await;
    let api = Api::new(&fake);
    let missing_permissions = json!({"message": "Missing Permissions", "code": 50013});
    let missing_access = json!({"message": "Missing Access", "code": 50001});
    assert_eq!(
        fake.world().permissions_in(BOT, READ_ONLY) & fd::SEND_MESSAGES,
        0
    );

    let refused = api.say(READ_ONLY, "hello?").await;
    assert_eq!(
        (refused.status, refused.body.clone()),
        (403, missing_permissions.clone())
    );
    let typing = api
        .post(&format!("/channels/{READ_ONLY}/typing"), json!({}))
        .await;
    assert_eq!(typing.body, missing_permissions);
    assert_eq!(
        api.get(&format!("/channels/{READ_ONLY}/messages"))
            .await
            .status,
        200,
        "reading is allowed"
    );

    let refused = api.say(HIDDEN, "hello?").await;
    assert_eq!(
        (refused.status, refused.body.clone()),
        (403, missing_access.clone())
    );
    assert_eq!(
        api.get(&format!("/channels/{HIDDEN}/messages")).await.body,
        missing_access
    );

    // a file needs ATTACH_FILES, a reply READ_MESSAGE_HISTORY; without it history reads empty
    let file = api.say_with_file(NO_HISTORY, "a file").await;
    assert_eq!(file.body, missing_permissions);
    let sent = api.say(NO_HISTORY, "plain text is fine").await;
    assert_eq!(sent.status, 200, "{}", sent.text);
    let reply = post_in(
        &api,
        NO_HISTORY,
        json!({"content": "re", "message_reference": {"message_id": sent.id().to_string()}}),
    )
    .await;
    assert_eq!(reply.body, missing_permissions);
    assert_eq!(
        api.get(&format!("/channels/{NO_HISTORY}/messages"))
            .await
            .body,
        json!([])
    );

    // where the bot has the permissions (public, and private with its overwrite) it may
    assert_eq!(api.say(GENERAL, "hi").await.status, 200);
    assert_eq!(api.say(THOUGHTS, "hi").await.status, 200);
    assert_eq!(api.say_with_file(GENERAL, "a file").await.status, 200);
    assert!(fake.history(READ_ONLY).is_empty());
    assert!(fake.history(HIDDEN).is_empty());
}

// ----------------------------------------------------------------------------------------------
// 5. Modals

fn modal(title: &str, label: &str, value: &str) -> Value {
    json!({"type": 9, "data": {"custom_id": "form", "title": title, "components": [
        {"type": 1, "components": [{"type": 4, "custom_id": "text", "label": label,
            "style": 2, "max_length": 10, "value": value}]},
    ]}})
}

// A modal is taken only within Discord's limits and only as a command's answer; its submit
// carries what was typed, fits the field's bounds, and is answered with a message, never with
// another modal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modals_are_checked_and_submitted_as_discord_does() {
    let fake = FakeDiscord::start(world()).await;
    let _gateway = connect(&fake, all_intents()).await;
    let api = Api::new(&fake);
    let slash = || Slash::new("form", json!([]), Some(GUILD), GENERAL, ALICE, "alice");
    let at = |id: u64| format!("/interactions/{id}/itoken-{id}/callback");

    let id = fake.slash(slash()).await;
    let long_label = "a label longer than the forty-five characters Discord takes";
    for bad in [
        modal("", "Text", ""),
        modal("Form", long_label, ""),
        modal("Form", "Text", "longer than ten"),
    ] {
        let refused = api.post(&at(id), bad.clone()).await;
        assert_eq!(refused.status, 400, "{bad}");
        assert_eq!(refused.body["code"], 50035);
    }
    assert!(
        fake.submit_modal(id, &[("text", "hi")]).is_err(),
        "no modal shown"
    );
    let shown = api.post(&at(id), modal("Form", "Text", "draft")).await;
    assert_eq!(shown.status, 204, "{}", shown.text);
    assert!(fake.submit_modal(id, &[("text", "more than ten")]).is_err());
    assert!(fake.submit_modal(id, &[("other", "x")]).is_err());
    assert!(fake.submit_modal(id, &[]).is_err(), "the field is required");
    let submit = fake
        .submit_modal(id, &[("text", "typed")])
        .expect("submitted");
    let dispatched = fake.dispatches("INTERACTION_CREATE");
    let last = dispatched.last().expect("the submit");
    assert_eq!(last["type"], 5);
    assert_eq!(last["data"]["custom_id"], "form");
    assert_eq!(
        last["data"]["components"][0]["components"][0]["value"],
        "typed"
    );
    let again = api.post(&at(submit), modal("Form", "Text", "")).await;
    assert_eq!(again.status, 400, "a submit is not answered with a modal");
    let answered = callback(&api, submit).await;
    assert_eq!(answered.status, 204, "{}", answered.text);
}

// ----------------------------------------------------------------------------------------------
// 7. Webhooks

/// The bot may manage webhooks here (its member overwrite allows MANAGE_WEBHOOKS).
const HOOKS: u64 = 207;

/// [`world`] with [`HOOKS`].
fn webhook_world() -> World {
    let mut world = world();
    world.guilds[0]
        .channels
        .push(FakeChannel::new(HOOKS, "hooks", true).allow_bot(fd::MANAGE_WEBHOOKS));
    world
}

/// The inner error code of a 400 Invalid Form Body at `field`.
fn form_error(answer: &Answer, field: &str) -> String {
    assert_eq!((answer.status, &answer.body["code"]), (400, &json!(50035)));
    answer.body["errors"][field]["_errors"][0]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("no error at {field}: {}", answer.text))
        .to_owned()
}

// Listing and making a channel's webhooks needs MANAGE_WEBHOOKS there (and VIEW_CHANNEL); a name
// is 1 to 80 characters without "clyde" or "discord"; a channel holds 15 at most. The webhook
// object is Discord's (serenity reads it), with the bot as its user.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channel_webhooks_need_manage_webhooks_and_a_good_name() {
    let fake = FakeDiscord::start(webhook_world()).await;
    let api = Api::new(&fake);
    let hooks = |channel: u64| format!("/channels/{channel}/webhooks");
    let missing_permissions = json!({"message": "Missing Permissions", "code": 50013});
    assert_eq!(
        fake.world().permissions_in(BOT, GENERAL) & fd::MANAGE_WEBHOOKS,
        0
    );

    let listed = api.get(&hooks(GENERAL)).await;
    assert_eq!(
        (listed.status, listed.body),
        (403, missing_permissions.clone())
    );
    let made = api.post(&hooks(GENERAL), json!({"name": "relay"})).await;
    assert_eq!((made.status, made.body), (403, missing_permissions));
    assert_eq!(api.get(&hooks(HIDDEN)).await.body["code"], 50001);
    let unknown = api.get(&hooks(999)).await;
    assert_eq!(
        (unknown.status, unknown.body),
        (404, json!({"message": "Unknown Channel", "code": 10003}))
    );
    assert!(fake.webhooks(GENERAL).is_empty());

    let listed = api.get(&hooks(HOOKS)).await;
    assert_eq!((listed.status, listed.body), (200, json!([])));
    for reserved in ["Clyde", "my discord relay"] {
        let refused = api.post(&hooks(HOOKS), json!({ "name": reserved })).await;
        assert_eq!(form_error(&refused, "name"), "USERNAME_INVALID_CONTAINS");
    }
    let too_long = "x".repeat(81);
    for bad in [json!({}), json!({"name": ""}), json!({ "name": too_long })] {
        let refused = api.post(&hooks(HOOKS), bad.clone()).await;
        assert_eq!(refused.body["code"], 50035, "{bad}: {}", refused.text);
    }
    assert!(fake.webhooks(HOOKS).is_empty());

    let made = api.post(&hooks(HOOKS), json!({"name": "relay"})).await;
    assert_eq!(made.status, 200, "{}", made.text);
    let id = made.id();
    assert_eq!(made.body["type"], 1);
    assert_eq!(made.body["name"], "relay");
    assert_eq!(made.body["channel_id"], HOOKS.to_string());
    assert_eq!(made.body["guild_id"], GUILD.to_string());
    assert_eq!(made.body["token"], format!("wtoken-{id}"));
    assert_eq!(made.body["application_id"], APP.to_string());
    assert_eq!(made.body["user"]["id"], BOT.to_string());
    let parsed: serenity::all::Webhook =
        serde_json::from_value(made.body.clone()).expect("serenity reads the webhook");
    assert_eq!(parsed.id.get(), id);
    assert_eq!(parsed.user.map(|u| u.id.get()), Some(BOT));
    let listed = api.get(&hooks(HOOKS)).await;
    assert_eq!(listed.body, json!([made.body.clone()]));
    assert_eq!(fake.webhooks(HOOKS), vec![made.body]);

    for n in 2..=15 {
        let made = api
            .post(&hooks(HOOKS), json!({ "name": format!("relay {n}") }))
            .await;
        assert_eq!(made.status, 200, "webhook {n}: {}", made.text);
    }
    let full = api
        .post(&hooks(HOOKS), json!({"name": "one too many"}))
        .await;
    assert_eq!(
        (full.status, full.body),
        (
            400,
            json!({"message": "Maximum number of webhooks reached (15)", "code": 30007})
        )
    );
    assert_eq!(fake.webhooks(HOOKS).len(), 15);
    fake.delete_webhooks(HOOKS);
    assert!(fake.webhooks(HOOKS).is_empty());
    assert_eq!(api.get(&hooks(HOOKS)).await.body, json!([]));
    assert!(fake.unexpected().is_empty());
}

// An execute needs the webhook's token, and Discord's checks: a `username` without "clyde" or
// "discord", an http(s) `avatar_url`, no stickers, not empty. A good one posts as the webhook
// (its `username`, `webhook_id`, no member), in the history and as MESSAGE_CREATE that serenity
// parses; it has a bucket of its own (5 per webhook per 2 s); a deleted webhook is unknown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_executes_are_checked_and_post_as_the_webhook() {
    let fake = FakeDiscord::start(webhook_world()).await;
    let gateway = connect(&fake, all_intents()).await;
    let api = Api::new(&fake);
    let made = api
        .post(
            &format!("/channels/{HOOKS}/webhooks"),
            json!({"name": "relay"}),
        )
        .await;
    assert_eq!(made.status, 200, "{}", made.text);
    let hook = made.id();
    let execute = format!("/webhooks/{hook}/wtoken-{hook}");
    let waiting = format!("{execute}?wait=true");

    let wrong = api
        .post(
            &format!("/webhooks/{hook}/nope?wait=true"),
            json!({"content": "hi"}),
        )
        .await;
    assert_eq!(
        (wrong.status, wrong.body.clone()),
        (
            401,
            json!({"message": "Invalid Webhook Token", "code": 50027})
        )
    );
    // the webhook's own bucket, 5 per 2 s by default; wide enough for the checks below
    assert_eq!(wrong.header("x-ratelimit-limit"), Some("5"));
    assert!(wrong.header("x-ratelimit-bucket").is_some());
    fake.set_rate_limit(RateLimit::WebhookExecute, 100, Duration::from_secs(2));

    let refused = api
        .post(&waiting, json!({"content": "hi", "username": "Not Clyde"}))
        .await;
    assert_eq!(
        form_error(&refused, "username"),
        "USERNAME_INVALID_CONTAINS"
    );
    let refused = api
        .post(&waiting, json!({"content": "hi", "username": ""}))
        .await;
    assert_eq!(form_error(&refused, "username"), "BASE_TYPE_BAD_LENGTH");
    let refused = api
        .post(
            &waiting,
            json!({"content": "hi", "avatar_url": "not a url"}),
        )
        .await;
    assert_eq!(form_error(&refused, "avatar_url"), "URL_TYPE_INVALID_URL");
    let refused = api
        .post(&waiting, json!({"content": "hi", "sticker_ids": ["700"]}))
        .await;
    form_error(&refused, "sticker_ids");
    let empty = api.post(&waiting, json!({"username": "Nova"})).await;
    assert_eq!(
        (empty.status, empty.body),
        (
            400,
            json!({"message": "Cannot send an empty message", "code": 50006})
        )
    );
    let long = api
        .post(&waiting, json!({ "content": "x".repeat(2001) }))
        .await;
    assert_eq!(form_error(&long, "content"), "BASE_TYPE_MAX_LENGTH");
    assert!(fake.history(HOOKS).is_empty());
    assert!(fake.webhook_posts(HOOKS).is_empty());

    // the application's id is still an interaction's webhook, not a channel's
    let followup = api
        .post(
            &format!("/webhooks/{APP}/wtoken-{hook}"),
            json!({"content": "hi"}),
        )
        .await;
    assert_eq!(followup.body["code"], 10015);

    let body = json!({
        "content": "hello <@300>",
        "username": "Nova",
        "avatar_url": "https://example.com/nova.png",
        "message_reference": {"message_id": "123"},
    });
    let sent = api.post(&waiting, body.clone()).await;
    assert_eq!(sent.status, 200, "{}", sent.text);
    let message = &sent.body;
    assert_eq!(
        message["author"],
        json!({"id": hook.to_string(), "username": "Nova", "avatar": null,
            "discriminator": "0000", "bot": true, "global_name": null, "public_flags": 0})
    );
    assert_eq!(message["webhook_id"], hook.to_string());
    assert_eq!(message["application_id"], APP.to_string());
    assert_eq!(message["type"], 0, "the message_reference is ignored");
    assert!(message.get("member").is_none());
    assert_eq!(user_ids(message), vec![ALICE]);
    let parsed = gateway.seen.message(sent.id()).await;
    assert_eq!(parsed.webhook_id.map(|w| w.get()), Some(hook));
    assert_eq!(parsed.author.id.get(), hook);
    assert_eq!(parsed.author.name, "Nova");
    assert!(parsed.author.bot);
    assert!(parsed.member.is_none());
    assert_eq!(parsed.guild_id.map(|g| g.get()), Some(GUILD));
    let dispatched = fake.dispatches("MESSAGE_CREATE");
    assert!(dispatched.iter().any(|d| d["id"] == message["id"]));

    // without wait: 204, posted under the webhook's own name
    let quiet = api.post(&execute, json!({"content": "quietly"})).await;
    assert_eq!((quiet.status, quiet.text.as_str()), (204, ""));
    let history = fake.history(HOOKS);
    assert_eq!(history.len(), 2);
    assert_eq!(history[1]["author"]["username"], "relay");
    let mut expected = body;
    expected["webhook_id"] = json!(hook.to_string());
    assert_eq!(
        fake.webhook_posts(HOOKS),
        vec![
            expected,
            json!({"content": "quietly", "webhook_id": hook.to_string()})
        ]
    );

    // a reply to the webhook's message carries it whole
    let mut reply = alice_says(HOOKS, "nice");
    reply.reply_to = Some(sent.id());
    let reply = fake.send_message(reply).await;
    let reply = gateway.seen.message(reply).await;
    let referenced = reply.referenced_message.expect("the replied-to message");
    assert_eq!(referenced.webhook_id.map(|w| w.get()), Some(hook));

    // Discord's default bucket: 5 per webhook per 2 s, then a 429 that posts nothing
    fake.set_rate_limit(RateLimit::WebhookExecute, 5, Duration::from_secs(2));
    for remaining in (0..5).rev() {
        let sent = api.post(&execute, json!({"content": "again"})).await;
        assert_eq!(sent.status, 204, "{}", sent.text);
        assert_eq!(
            sent.header("x-ratelimit-remaining"),
            Some(remaining.to_string().as_str())
        );
    }
    let limited = api.post(&execute, json!({"content": "one too many"})).await;
    assert_eq!(limited.status, 429);
    assert!(limited.body["retry_after"].as_f64().unwrap() <= 2.0);
    assert_eq!(limited.header("x-ratelimit-limit"), Some("5"));
    assert_eq!(fake.webhook_posts(HOOKS).len(), 7);

    // a moderator deletes the webhook (the windows start anew, so the bucket lets it through)
    fake.delete_webhooks(HOOKS);
    fake.set_rate_limit(RateLimit::WebhookExecute, 5, Duration::from_secs(2));
    let gone = api.post(&waiting, json!({"content": "still there?"})).await;
    assert_eq!(
        (gone.status, gone.body),
        (404, json!({"message": "Unknown Webhook", "code": 10015}))
    );
    assert_eq!(fake.webhook_posts(HOOKS).len(), 7);
    gateway.seen.assert_all_parsed();
    assert!(fake.unexpected().is_empty());
}
