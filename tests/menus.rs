//! SPEC A5: the message menus, end to end through serenity and poise against the fake Discord,
//! with the default configuration: "Ask about this" (the message and its files as context, the
//! question in a modal), "Remember this" (one's own at once; another member's only when they
//! allow it by button) and "Forget this", in a server and where the bot is not a member.

pub mod support {
    pub mod e2e;
    pub mod fake_discord;
    pub mod fake_images;
    pub mod fake_openai;
    pub mod harness;
}

use persona_bot::domain::ports::MemoryStore;
use serde_json::json;
use support::e2e::*;
use support::fake_discord::{ButtonPress, FakeFile, Incoming, MenuUse, button_ids};
use support::fake_openai::Reply;
use support::harness::Behaviour;

/// A server the bot is not in, and one of its channels.
const ELSEWHERE: u64 = 555;
const ELSEWHERE_CHANNEL: u64 = 556;

fn menu(name: &str, message_id: u64, user_id: u64) -> MenuUse {
    MenuUse {
        name: name.into(),
        message_id,
        guild_id: Some(GUILD),
        channel_id: GENERAL,
        user_id,
        user_name: format!("user{user_id}"),
        permissions: 0,
        user_install: false,
    }
}

/// A message `author` posts in #general (not to the bot); its id.
async fn said(e: &E2e, author: u64, text: &str) -> u64 {
    let m = Incoming::new(GENERAL, Some(GUILD), author, &format!("user{author}"), text);
    e.discord.send_message(m).await
}

/// The facts about `user` in `server` (`None`: the user's own, outside member servers).
async fn facts_about(e: &E2e, server: Option<u64>, user: u64) -> Vec<String> {
    let server = server.map(persona_bot::domain::scope::ServerId);
    let user = persona_bot::domain::scope::UserId(user);
    e.running()
        .storage
        .memory
        .list_facts(server, Some(user), true, 50)
        .await
        .expect("facts")
        .into_iter()
        .map(|f| f.text)
        .collect()
}

// SPEC A5: the three menus are registered as message commands for both install types in every
// context, their names localized; "Ask about this" asks for the question in a modal and
// answers it in the submit's interaction, with the message and its files as context.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_about_a_message_takes_it_and_its_files_as_context() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![Reply::text(&["He means the notes."])],
    )
    .await;
    for name in ["Ask about this", "Remember this", "Forget this"] {
        let (_, command) = e
            .discord
            .commands()
            .into_iter()
            .find(|(_, c)| c["name"] == name)
            .expect("registered");
        assert_eq!(command["type"], 3, "{command}");
        assert_eq!(command["integration_types"], json!([0, 1]), "{command}");
        assert_eq!(command["contexts"], json!([0, 1, 2]), "{command}");
        let ja = command["name_localizations"]["ja"].as_str().unwrap_or("");
        assert!(!ja.is_empty() && !ja.starts_with("menu-"), "{command}");
    }
    // In a server the bot is not in, through Alice's own install: the bot reads no history
    // there, so all it knows of the message comes with the menu.
    let mut bobs = Incoming::new(
        ELSEWHERE_CHANNEL,
        Some(ELSEWHERE),
        BOB,
        "bob",
        "see my notes",
    );
    bobs.attachments = vec![FakeFile::new(
        "notes.txt",
        Some("text/plain"),
        b"the notes say the meeting moved to Friday".to_vec(),
    )];
    let bobs = e.discord.post_unseen(bobs, std::time::Duration::ZERO);
    let mut asking = menu("Ask about this", bobs, ALICE);
    asking.guild_id = Some(ELSEWHERE);
    asking.channel_id = ELSEWHERE_CHANNEL;
    asking.user_install = true;
    let id = e.discord.use_menu(asking).await.expect("offered");
    assert_eq!(
        e.answer_to(id).await["type"],
        9,
        "a modal asks for the question"
    );
    let submit = e
        .discord
        .submit_modal(id, &[("question", "what does he mean?")])
        .expect("submitted");
    assert_eq!(e.answer_to(submit).await["type"], 5);
    e.until("answered in the submit's interaction", |e| {
        e.discord
            .interaction_messages(submit)
            .0
            .is_some_and(|m| m["content"] == "He means the notes.")
    })
    .await;
    let asked = e.last_model_message(0).to_string();
    assert!(asked.contains("what does he mean?"), "{asked}");
    assert!(asked.contains("see my notes"), "{asked}");
    assert!(
        asked.contains("moved to Friday"),
        "the message's file: {asked}"
    );
    assert!(
        e.posted(GENERAL).is_empty(),
        "answered in the interaction only"
    );
    e.stop().await;
}

// SPEC A5: "Remember this" on one's own message stores it at once; on another member's message
// that member is asked by button, and it is stored only when they allow it (another's press is
// refused, a decline stores nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remember_this_asks_another_member_first() {
    let e = E2e::start(Behaviour::succeed(), vec![]).await;
    let own = said(&e, ALICE, "I love green tea").await;
    let id = e
        .discord
        .use_menu(menu("Remember this", own, ALICE))
        .await
        .expect("offered");
    let done = e.answer_to(id).await;
    assert!(content_of(&done).contains("remember"), "{done}");
    assert_eq!(
        facts_about(&e, Some(GUILD), ALICE).await,
        ["I love green tea"]
    );

    let bobs = said(&e, BOB, "I live in Oslo").await;
    let id = e
        .discord
        .use_menu(menu("Remember this", bobs, ALICE))
        .await
        .expect("offered");
    let asked = e.answer_to(id).await;
    assert!(content_of(&asked).contains(&format!("<@{BOB}>")), "{asked}");
    assert_eq!(
        asked["data"]["allowed_mentions"]["users"],
        json!([BOB.to_string()])
    );
    let request = e.discord.interaction_messages(id).0.expect("the request");
    let ids = button_ids(&request);
    let allow = ids
        .iter()
        .find(|i| i.contains("yes"))
        .expect("allow")
        .clone();
    let decline = ids
        .iter()
        .find(|i| i.contains("no"))
        .expect("decline")
        .clone();
    let request_id: u64 = request["id"].as_str().unwrap().parse().unwrap();

    // Alice cannot allow it for Bob.
    let press = e
        .discord
        .press(ButtonPress::new(&e.discord, request_id, &allow, ALICE))
        .await
        .expect("pressed");
    let refused = e.answer_to(press).await;
    assert_eq!(refused["data"]["flags"], 64, "{refused}");
    assert!(facts_about(&e, Some(GUILD), BOB).await.is_empty());

    let press = e
        .discord
        .press(ButtonPress::new(&e.discord, request_id, &allow, BOB))
        .await
        .expect("pressed");
    let allowed = e.answer_to(press).await;
    assert_eq!(
        allowed["type"], 7,
        "the request says how it ended: {allowed}"
    );
    assert_eq!(allowed["data"]["components"], json!([]));
    assert_eq!(facts_about(&e, Some(GUILD), BOB).await, ["I live in Oslo"]);

    // Declined: nothing stored.
    let other = said(&e, BOB, "My cat is called Miso").await;
    let id = e
        .discord
        .use_menu(menu("Remember this", other, ALICE))
        .await
        .expect("offered");
    e.answer_to(id).await;
    let request = e.discord.interaction_messages(id).0.expect("the request");
    let request_id: u64 = request["id"].as_str().unwrap().parse().unwrap();
    let decline_again = button_ids(&request)
        .into_iter()
        .find(|i| i.contains("no"))
        .expect("decline");
    assert_ne!(decline_again, decline, "one request per use");
    let press = e
        .discord
        .press(ButtonPress::new(
            &e.discord,
            request_id,
            &decline_again,
            BOB,
        ))
        .await
        .expect("pressed");
    e.answer_to(press).await;
    assert_eq!(facts_about(&e, Some(GUILD), BOB).await, ["I live in Oslo"]);
    e.stop().await;
}

// SPEC A5: "Forget this" forgets what was learned from a message: the member's own facts from it,
// all of them for its author; and where the bot is not a member, the user's own memory is used.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forget_this_forgets_what_was_learned_from_the_message() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![
            Reply::call(
                "c1",
                "remember_fact",
                r#"{"fact":"plays chess","about":"requester"}"#,
            ),
            Reply::text(&["Noted."]),
        ],
    )
    .await;
    // A fact the persona remembered in a turn was learned from the message that started it.
    let told = e
        .mention(ALICE, "alice", "remember that I play chess")
        .await;
    e.until("noted", |e| e.texts(GENERAL).len() == 1).await;
    assert_eq!(facts_about(&e, Some(GUILD), ALICE).await, ["plays chess"]);
    let id = e
        .discord
        .use_menu(menu("Forget this", told, ALICE))
        .await
        .expect("offered");
    assert!(content_of(&e.answer_to(id).await).contains('1'));
    assert!(facts_about(&e, Some(GUILD), ALICE).await.is_empty());

    let own = said(&e, ALICE, "I work nights").await;
    let id = e
        .discord
        .use_menu(menu("Remember this", own, ALICE))
        .await
        .expect("offered");
    e.answer_to(id).await;
    let keep = said(&e, ALICE, "I have two dogs").await;
    let id = e
        .discord
        .use_menu(menu("Remember this", keep, ALICE))
        .await
        .expect("offered");
    e.answer_to(id).await;
    assert_eq!(facts_about(&e, Some(GUILD), ALICE).await.len(), 2);

    // Bob, neither its author nor a moderator, has nothing of his own from it to forget.
    let id = e
        .discord
        .use_menu(menu("Forget this", own, BOB))
        .await
        .expect("offered");
    assert!(content_of(&e.answer_to(id).await).contains('0'));
    let id = e
        .discord
        .use_menu(menu("Forget this", own, ALICE))
        .await
        .expect("offered");
    assert!(content_of(&e.answer_to(id).await).contains('1'));
    assert_eq!(
        facts_about(&e, Some(GUILD), ALICE).await,
        ["I have two dogs"]
    );

    // Through the user's own install, where the bot is not a member: the user's own memory.
    // Posted where the bot is not: no gateway event reaches it.
    let there = Incoming::new(
        ELSEWHERE_CHANNEL,
        Some(ELSEWHERE),
        ALICE,
        "alice",
        "I am learning Rust",
    );
    let message = e.discord.post_unseen(there, std::time::Duration::ZERO);
    let mut elsewhere = menu("Remember this", message, ALICE);
    elsewhere.guild_id = Some(ELSEWHERE);
    elsewhere.channel_id = ELSEWHERE_CHANNEL;
    elsewhere.user_install = true;
    let id = e.discord.use_menu(elsewhere).await.expect("offered");
    e.answer_to(id).await;
    assert_eq!(facts_about(&e, None, ALICE).await, ["I am learning Rust"]);
    assert!(facts_about(&e, Some(ELSEWHERE), ALICE).await.is_empty());
    assert!(e.posted(ELSEWHERE_CHANNEL).is_empty());
    e.stop().await;
}
