//! SPEC D14 end to end: the bot runs without the privileged Message Content intent, through the
//! real start-up, serenity and poise against a fake Discord that refuses the intent (close
//! 4014) as Discord does for an app not granted it, with the default configuration.

pub mod support {
    pub mod e2e;
    pub mod fake_discord;
    pub mod fake_images;
    pub mod fake_openai;
    pub mod harness;
}

use std::time::Duration;

use persona_bot::domain::ports::{ChannelRule, SettingsChange, SettingsStore as _};
use persona_bot::domain::scope::{ChannelId, ServerId};
use serde_json::json;
use support::e2e::*;
use support::fake_discord::{FakeDiscord, Incoming, MESSAGE_CONTENT, World};
use support::fake_openai::Reply;
use support::harness::Behaviour;

// SPEC D14: refused the intent, the bot connects again without it (one session, asked without
// it), answers a mention and a DM, leaves a trigger word in an always-reply channel alone, shows the model the trigger
// word's message as unreadable (never as an empty line), and `/status` says what is off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_the_intent_the_bot_connects_without_it_and_answers_what_is_for_it() {
    let discord = FakeDiscord::start(World::simple()).await;
    discord.withhold_intents(MESSAGE_CONTENT);
    let e = E2e::start_on(
        discord,
        Behaviour::succeed(),
        vec![
            Reply::text(&["Hi in general."]),
            Reply::text(&["Hi in private."]),
        ],
        |_| {},
    )
    .await;
    let identifies = e.discord.identifies();
    assert_eq!(identifies.len(), 1, "{identifies:?}");
    let intents = identifies[0]["intents"].as_u64().unwrap_or(0);
    assert_eq!(intents & MESSAGE_CONTENT, 0, "asked again without it");

    // #general answers every message, but not one the bot cannot read.
    let always = SettingsChange::Channel {
        channel: ChannelId(GENERAL),
        rule: ChannelRule::Always,
    };
    e.running()
        .storage
        .settings
        .update(ServerId(GUILD), always)
        .await
        .expect("settings");
    e.discord
        .send_message(Incoming::new(
            GENERAL,
            Some(GUILD),
            BOB,
            "bob",
            "hey aria, you there?",
        ))
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        e.openai.requests().is_empty(),
        "a trigger word does nothing"
    );

    e.mention(ALICE, "alice", "hello").await;
    e.until("the mention is answered", |e| {
        e.texts(GENERAL).iter().any(|t| t == "Hi in general.")
    })
    .await;
    let context = e.openai.requests()[0].body["messages"].to_string();
    assert!(
        context.contains("[bob] (a message whose text the bot cannot read)"),
        "{context}"
    );

    let (dm, _) = e.discord.send_dm(ALICE, "hi, privately").await;
    e.until("the DM is answered", |e| {
        e.texts(dm).iter().any(|t| t == "Hi in private.")
    })
    .await;

    let status = content_of(&e.slash(ALICE, "status", 0, json!([])).await);
    assert!(status.contains("no Message Content intent"), "{status}");
    assert!(status.contains("trigger words"), "{status}");
    e.stop().await;
}

// SPEC D14: `discord.message_content = "off"` never asks for the intent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_never_asks_for_the_intent() {
    let e = E2e::start_with(Behaviour::succeed(), vec![], |c| {
        c.discord.message_content = persona_bot::config::MessageContent::Off;
    })
    .await;
    let identifies = e.discord.identifies();
    let intents = identifies[0]["intents"].as_u64().unwrap_or(0);
    assert_eq!(intents & MESSAGE_CONTENT, 0);
    let status = content_of(&e.slash(ALICE, "status", 0, json!([])).await);
    assert!(status.contains("no Message Content intent"), "{status}");
    e.stop().await;
}
