//! SPEC E3 end to end: a tool call that needs approval (a reminder for the whole channel) waits
//! for Approve or Deny on a card, through the real start-up, serenity and poise against the fake
//! Discord, the fake model and a real SQLite file, with the default configuration (but for a
//! short deadline where the test waits it out).

pub mod support {
    pub mod e2e;
    pub mod fake_discord;
    pub mod fake_images;
    pub mod fake_openai;
    pub mod harness;
}

use std::time::Duration;

use persona_bot::domain::ports::ReminderStore as _;
use persona_bot::domain::scope::UserId;
use serde_json::{Value, json};
use support::e2e::*;
use support::fake_discord::{ButtonPress, button_ids};
use support::fake_openai::Reply;
use support::harness::Behaviour;

const CHANNEL_REMINDER: &str = r#"{"text":"stand-up","in_minutes":30,"for_channel":true}"#;

fn script() -> Vec<Reply> {
    vec![
        Reply::call("call_1", "create_reminder", CHANNEL_REMINDER),
        Reply::text(&["Done."]),
    ]
}

/// The approval card in #general, once it is there.
async fn card(e: &E2e) -> Value {
    e.until("the approval card", |e| {
        e.discord.history(GENERAL).iter().any(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.contains("Approval needed"))
        })
    })
    .await;
    e.discord
        .history(GENERAL)
        .into_iter()
        .find(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.contains("Approval needed"))
        })
        .expect("card")
}

fn id_of(message: &Value) -> u64 {
    message["id"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("id")
}

/// `user` presses Approve (`y`) or Deny (`n`) on the card; the bot's callback.
async fn press(e: &E2e, card: &Value, code: &str, user: u64) -> Value {
    let custom_id = button_ids(card)
        .into_iter()
        .find(|id| id.split(':').nth(1) == Some(code))
        .expect("button");
    let p = ButtonPress::new(&e.discord, id_of(card), &custom_id, user);
    let id = e.discord.press(p).await.expect("a press Discord sends");
    e.answer_to(id).await
}

/// What the model was told the call came to (the tool message of its second request).
async fn tool_result(e: &E2e) -> String {
    e.until("the model hears the outcome", |e| {
        e.openai.requests().len() == 2
    })
    .await;
    e.openai.requests()[1].body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == json!("tool")).cloned())
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_default()
}

async fn reminders_of(e: &E2e, user: u64) -> usize {
    let store = &e.running().storage.reminders;
    store.for_user(UserId(user)).await.expect("reminders").len()
}

/// The card as it is now.
fn card_now(e: &E2e, card: &Value) -> Value {
    e.discord
        .history(GENERAL)
        .into_iter()
        .find(|m| m["id"] == card["id"])
        .expect("card")
}

// SPEC E3: the card says in the bot's words what will happen; someone not allowed is refused
// (only they see it); the requester's Approve runs the call once and closes the card.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_call_runs_once_and_the_card_says_who() {
    let e = E2e::start(Behaviour::succeed(), script()).await;
    e.mention(ALICE, "alice", "remind everyone of the stand-up")
        .await;
    let card = card(&e).await;
    let text = card["content"].as_str().unwrap_or_default().to_owned();
    assert!(
        text.contains("Set a reminder for everyone in this channel, in 30 min: “stand-up”"),
        "{text}"
    );
    assert_eq!(
        reminders_of(&e, ALICE).await,
        0,
        "nothing runs before approval"
    );
    let refused = press(&e, &card, "y", BOB).await;
    assert_eq!(refused["data"]["flags"], json!(64));
    assert!(content_of(&refused).contains("may not decide"), "{refused}");
    let approved = press(&e, &card, "y", ALICE).await;
    assert_eq!(approved["type"], json!(6), "a deferred update");
    assert!(tool_result(&e).await.contains("reminder_id"));
    assert_eq!(reminders_of(&e, ALICE).await, 1);
    e.until("the card is closed", |e| {
        button_ids(&card_now(e, &card)).is_empty()
    })
    .await;
    let closed = card_now(&e, &card)["content"].to_string();
    assert!(
        closed.contains(&format!("Approved by <@{ALICE}>")),
        "{closed}"
    );
    e.until("the answer", |e| {
        e.texts(GENERAL).iter().any(|t| t == "Done.")
    })
    .await;
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC E3: Deny does not run the call; the model hears `approval_denied` with who, and the
// thought log gets a card saying what was asked and who denied it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_call_does_not_run_and_the_model_hears_who() {
    let e = E2e::start(Behaviour::succeed(), script()).await;
    e.set_thought_log().await;
    e.mention(ALICE, "alice", "remind everyone").await;
    let card = card(&e).await;
    let denied = press(&e, &card, "n", MODERATOR).await;
    assert_eq!(denied["type"], json!(6));
    let result = tool_result(&e).await;
    assert!(result.contains("approval_denied"), "{result}");
    assert!(
        result.contains(&format!("Denied by <@{MODERATOR}>")),
        "{result}"
    );
    assert_eq!(reminders_of(&e, ALICE).await, 0);
    e.until("the thought log's card", |e| {
        e.posted(THOUGHTS).iter().any(|m| {
            let card = m.to_string();
            card.contains("asked for approval")
                && card.contains(&format!("denied (<@{MODERATOR}>)"))
                && card.contains("in 30 min")
        })
    })
    .await;
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC E3: no answer within the deadline is a denial, said on the card and to the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silence_is_a_denial() {
    let e = E2e::start_with(Behaviour::succeed(), script(), |c| {
        c.turn.approval_timeout_secs = 1;
    })
    .await;
    e.mention(ALICE, "alice", "remind everyone").await;
    let card = card(&e).await;
    let result = tool_result(&e).await;
    assert!(result.contains("Nobody approved it within 1 s"), "{result}");
    let closed = card_now(&e, &card);
    assert!(button_ids(&closed).is_empty());
    assert!(
        closed["content"]
            .to_string()
            .contains("Nobody answered in time")
    );
    assert_eq!(reminders_of(&e, ALICE).await, 0);
    let late = press_if_any(&e, &closed).await;
    assert!(late.is_none(), "a closed card has no buttons to press");
    e.assert_fakes_used();
    e.stop().await;
}

async fn press_if_any(e: &E2e, card: &Value) -> Option<Value> {
    let id = button_ids(card).into_iter().next()?;
    let p = ButtonPress::new(&e.discord, id_of(card), &id, ALICE);
    let interaction = e.discord.press(p).await.ok()?;
    Some(e.answer_to(interaction).await)
}

// SPEC E3, C6: /kill during the wait ends it at once; the card says it was withdrawn and the
// call never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_during_the_wait_withdraws_the_request() {
    let e = E2e::start(Behaviour::succeed(), script()).await;
    e.mention(ALICE, "alice", "remind everyone").await;
    let card = card(&e).await;
    let killed = e.slash(ALICE, "kill", 0, json!([])).await;
    assert!(
        content_of(&killed).contains("Stopped your reply"),
        "{killed}"
    );
    e.until("the card is closed", |e| {
        button_ids(&card_now(e, &card)).is_empty()
    })
    .await;
    assert!(
        card_now(&e, &card)["content"]
            .to_string()
            .contains("withdrawn")
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(reminders_of(&e, ALICE).await, 0);
    assert_eq!(e.openai.requests().len(), 1, "the model is not asked again");
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC E3: under "moderators only", the requester's own Approve is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moderators_only_refuses_the_requester() {
    let e = E2e::start(Behaviour::succeed(), script()).await;
    let set = e
        .slash(
            MODERATOR,
            "tools",
            MANAGE_GUILD,
            json!([{ "name": "approvals", "type": 1,
                     "options": [{ "name": "by", "type": 4, "value": 1 }] }]),
        )
        .await;
    assert!(content_of(&set).contains("moderators only"), "{set}");
    e.mention(ALICE, "alice", "remind everyone").await;
    let card = card(&e).await;
    assert!(
        card["content"]
            .to_string()
            .contains("A moderator may press")
    );
    let refused = press(&e, &card, "y", ALICE).await;
    assert!(content_of(&refused).contains("may not decide"), "{refused}");
    press(&e, &card, "y", MODERATOR).await;
    assert!(tool_result(&e).await.contains("reminder_id"));
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC E3: forgetting a fact about the whole server asks first, in the bot's words with the
// fact's own text; denied, the fact stays. (A member's own fact needs no approval:
// `a_forgotten_fact_is_gone_from_the_next_prompt` in discord_e2e.rs.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forgetting_a_server_fact_asks_first() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![
            Reply::call("c1", "forget_fact", r#"{"id":1}"#),
            Reply::text(&["Kept."]),
            Reply::text(&["It is Onwards."]),
        ],
    )
    .await;
    let id = e
        .store_fact(Some(GUILD), None, "The server's motto is Onwards")
        .await;
    assert_eq!(id, 1);
    e.mention(ALICE, "alice", "forget the motto").await;
    let card = card(&e).await;
    let text = card["content"].to_string();
    assert!(
        text.contains(
            "Forget what I remember for the whole server (fact #1): “The server's motto is Onwards”"
        ),
        "{text}"
    );
    press(&e, &card, "n", ALICE).await;
    assert!(tool_result(&e).await.contains("approval_denied"));
    e.until("the answer", |e| {
        e.texts(GENERAL).iter().any(|t| t == "Kept.")
    })
    .await;
    e.mention(ALICE, "alice", "what is the motto?").await;
    e.until("asked again", |e| e.openai.requests().len() == 3)
        .await;
    let system = e.system_prompt(2);
    assert!(system.contains("Onwards"), "the fact stays: {system}");
    e.assert_fakes_used();
    e.stop().await;
}
