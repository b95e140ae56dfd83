//! The fake Discord's gateway sessions, driven with a raw websocket client, as Discord has them
//! during a rolling deploy and a reconnect: two sessions of one shard both get every dispatch of
//! it, and an interaction both got is answered once; a RESUME Discord will not take gets op 9
//! with `d: false`, and a new IDENTIFY a fresh session (a message sent while no session was live
//! is in the channel, not replayed); GUILD_CREATE leaves `last_message_id` out when a test asks.
// The shared fakes this binary uses (tests/support/). Public, so that what it leaves
// unused of them is not dead code.
pub mod support {
    pub mod fake_discord;
    pub mod gateway_client;
}

use std::time::Duration;

use serde_json::{Value, json};
use support::fake_discord::{FakeDiscord, Incoming, Slash, World};
use support::gateway_client::{Shard, id};

const GUILD: u64 = 100;
const GENERAL: u64 = 200;
const ALICE: u64 = 300;

fn says(content: &str) -> Incoming {
    Incoming::new(GENERAL, Some(GUILD), ALICE, "alice", content)
}

/// Two sessions of shard 0 of 1 on `World::simple()`, both ready: (fake, older, newer).
async fn two_sessions_of_shard_0() -> (FakeDiscord, Shard, Shard) {
    let fake = FakeDiscord::start(World::simple()).await;
    let mut old = Shard::identify(&fake, None).await;
    old.ready().await;
    let mut new = Shard::identify(&fake, None).await;
    new.ready().await;
    fake.wait_sessions_ready(2).await;
    (fake, old, new)
}

// Break: in `session::dispatch_to`, `.filter(|s| s.shard[0] == shard)` ->
// `.filter(|s| s.shard[0] == shard).rev().take(1)` (the newest session only): the older one
// never gets the message.
#[tokio::test]
async fn two_sessions_of_one_shard_both_get_every_dispatch() {
    let (fake, mut old, mut new) = two_sessions_of_shard_0().await;
    assert_eq!(fake.live_sessions(), [(0, 1), (0, 1)]);
    assert_eq!(fake.live_shards(), [(0, 1)]);
    assert_eq!(fake.identifies().len(), 2);
    let message = fake.send_message(says("to everyone")).await;
    let (dm_channel, dm) = fake.send_dm(ALICE, "a DM").await;
    for session in [&mut old, &mut new] {
        let got = session.expect("MESSAGE_CREATE").await;
        assert_eq!(
            (id(&got["id"]), got["content"].clone()),
            (message, json!("to everyone"))
        );
        let got = session.expect("MESSAGE_CREATE").await;
        assert_eq!((id(&got["id"]), id(&got["channel_id"])), (dm, dm_channel));
        // READY 1, GUILD_CREATE 2, then the two messages: each session counts its own
        assert_eq!(session.seq, 4);
    }
}

/// Discord's answer to an interaction callback: (status, JSON body or `null`).
async fn callback(fake: &FakeDiscord, interaction: &Value, content: &str) -> (u16, Value) {
    let url = format!(
        "{}/api/v10/interactions/{}/{}/callback",
        fake.base_url,
        interaction["id"].as_str().expect("an id"),
        interaction["token"].as_str().expect("a token"),
    );
    let answer = reqwest::Client::new()
        .post(url)
        .json(&json!({"type": 4, "data": {"content": content}}))
        .send()
        .await
        .expect("the fake answers");
    let status = answer.status().as_u16();
    (status, answer.json().await.unwrap_or(Value::Null))
}

// Both sessions get the interaction (one id, one token); the first callback wins, the second
// gets Discord's 40060. Break: in `interactions::interaction_callback`, `if state.acknowledged`
// -> `if false`: the second answer is taken too.
#[tokio::test]
async fn an_interaction_answered_by_one_session_is_refused_to_the_other() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (fake, mut old, mut new) = two_sessions_of_shard_0().await;
    let sent = fake
        .slash(Slash::new(
            "ping",
            json!([]),
            Some(GUILD),
            GENERAL,
            ALICE,
            "alice",
        ))
        .await;
    let to_old = old.expect("INTERACTION_CREATE").await;
    let to_new = new.expect("INTERACTION_CREATE").await;
    assert_eq!(id(&to_old["id"]), sent);
    assert_eq!(
        (&to_old["id"], &to_old["token"]),
        (&to_new["id"], &to_new["token"])
    );

    let (status, _) = callback(&fake, &to_new, "pong from the new process").await;
    assert_eq!(status, 204);
    let (status, refused) = callback(&fake, &to_old, "pong from the old process").await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["code"], 40060, "{refused}");
    assert_eq!(
        refused["message"],
        "Interaction has already been acknowledged."
    );
    let answers = fake.interaction_responses();
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0].1["data"]["content"], "pong from the new process");
}

// A cut connection (no close frame) leaves its session waiting for a RESUME; with resumes
// refused, the RESUME gets op 9 `d: false` and the session is gone, so a new IDENTIFY is a fresh
// session: READY, GUILD_CREATE naming the message sent in the gap as the channel's newest, and
// nothing replayed. Break: in `gateway::resume`, `if inner.refuse_resumes` -> `if false`: the
// RESUME is taken and RESUMED comes instead of op 9.
#[tokio::test]
async fn a_refused_resume_gets_op_9_and_a_new_identify_a_fresh_session() {
    let fake = FakeDiscord::start(World::simple()).await;
    let mut first = Shard::identify(&fake, None).await;
    let (ready, _) = first.ready().await;
    let seen = fake.send_message(says("before the cut")).await;
    first.expect("MESSAGE_CREATE").await;
    fake.refuse_resumes(true);
    fake.cut_gateway();
    assert_eq!(first.close_code().await, None, "cut without a close frame");
    assert!(fake.live_sessions().is_empty());
    let in_gap = fake.post_unseen(says("while nobody listens"), Duration::ZERO);
    let history: Vec<u64> = fake.history(GENERAL).iter().map(|m| id(&m["id"])).collect();
    assert_eq!(history, [seen, in_gap], "kept in the channel");

    let mut back = Shard::resume(&fake, &ready["session_id"], first.seq).await;
    assert_eq!(back.invalid_session().await, json!(false));
    assert_eq!((fake.refused_resumes(), fake.resumes()), (1, 0));
    let mut fresh = Shard::identify(&fake, None).await;
    let (again, _) = fresh.ready().await;
    assert_ne!(again["session_id"], ready["session_id"]);
    let created = fake.dispatches("GUILD_CREATE");
    let general = created[0]["channels"]
        .as_array()
        .and_then(|c| c.iter().find(|c| id(&c["id"]) == GENERAL))
        .cloned()
        .expect("#general");
    assert_eq!(id(&general["last_message_id"]), in_gap);
    let next = fake.send_message(says("after")).await;
    assert_eq!(
        id(&fresh.expect("MESSAGE_CREATE").await["id"]),
        next,
        "nothing replayed"
    );
    assert_eq!(fresh.seq, 3);

    // The refused session stays gone when resumes are taken again.
    fake.refuse_resumes(false);
    let mut stale = Shard::resume(&fake, &ready["session_id"], first.seq).await;
    assert_eq!(stale.invalid_session().await, json!(false));
    assert_eq!((fake.refused_resumes(), fake.resumes()), (1, 0));
}

/// The channels of the newest GUILD_CREATE.
fn created_channels(fake: &FakeDiscord) -> Vec<Value> {
    let created = fake.dispatches("GUILD_CREATE");
    let last = created.last().expect("a GUILD_CREATE");
    last["channels"].as_array().cloned().expect("channels")
}

// Break: in `gateway::guild_create`, `if inner.omit_last_message_ids` -> `if false`: #general
// keeps its `last_message_id`.
#[tokio::test]
async fn guild_create_leaves_last_message_id_out_when_asked() {
    let fake = FakeDiscord::start(World::simple()).await;
    let newest = fake.post_unseen(says("hello"), Duration::ZERO);
    let mut with = Shard::identify(&fake, None).await;
    with.ready().await;
    let general = |channels: &[Value]| {
        channels
            .iter()
            .find(|c| id(&c["id"]) == GENERAL)
            .cloned()
            .expect("#general")
    };
    assert_eq!(
        id(&general(&created_channels(&fake))["last_message_id"]),
        newest
    );

    fake.omit_last_message_ids(true);
    let mut without = Shard::identify(&fake, None).await;
    let (_, guilds) = without.ready().await;
    assert_eq!(guilds, [GUILD]);
    let channels = created_channels(&fake);
    assert!(
        channels.iter().all(|c| c.get("last_message_id").is_none()),
        "{channels:#?}"
    );
    // serenity takes the guild as it is
    let guild = fake
        .dispatches("GUILD_CREATE")
        .pop()
        .expect("a GUILD_CREATE");
    let parsed: serenity::all::Guild = serde_json::from_value(guild).expect("a serenity Guild");
    let parsed_general = parsed
        .channels
        .get(&serenity::all::ChannelId::new(GENERAL))
        .expect("#general");
    assert_eq!(parsed_general.last_message_id, None);
}
