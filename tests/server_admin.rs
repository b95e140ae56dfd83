//! Server administration end to end: moderators shape their server's persona and its reviewer from
//! Discord, through forms (modals) as well as options. The real serenity client and poise against
//! the fake Discord, the real provider client against the fake model server, a real SQLite file.

// The shared fakes this binary uses (tests/support/). Public, so that what it leaves
// unused of them is not dead code.
pub mod support {
    pub mod e2e;
    pub mod fake_discord;
    pub mod fake_images;
    pub mod fake_openai;
    pub mod harness;
}

use persona_bot::domain::ports::{PersonaStore, SettingsStore};
use persona_bot::domain::scope::{PersonaId, ServerId};
use serde_json::{Value, json};
use support::e2e::*;
use support::fake_openai::Reply;
use support::harness::Behaviour;

/// The first text input of a modal answer (callback type 9): (custom id, shown value).
fn modal_field(answer: &Value, n: usize) -> (String, String) {
    let input = &answer["data"]["components"][n]["components"][0];
    (
        input["custom_id"].as_str().unwrap_or_default().to_owned(),
        input["value"].as_str().unwrap_or_default().to_owned(),
    )
}

// SPEC A2 (review): `/drafting prompt:edit` shows the server's reviewer prompt in a modal; what the
// moderator submits is the prompt the next review gets, and the next modal shows it. A member
// without Manage Server gets no modal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reviewer_prompt_is_edited_in_a_modal() {
    let e = E2e::start(Behaviour::succeed(), vec![Reply::text(&["Hello."])]).await;
    let edit = json!([
        { "name": "state", "type": 4, "value": 0 },
        { "name": "prompt", "type": 4, "value": 0 },
    ]);
    let refused = e.slash(ALICE, "drafting", 0, edit.clone()).await;
    assert_eq!(refused["type"], 4, "{refused}");
    assert_eq!(
        content_of(&refused),
        "You need the Manage Server permission for this."
    );
    let (shown, modal) = e
        .slash_with_id(MODERATOR, "drafting", MANAGE_GUILD, edit.clone())
        .await;
    assert_eq!(modal["type"], 9, "a modal: {modal}");
    assert_eq!(modal["data"]["title"], "Reviewer instructions");
    assert_eq!(modal_field(&modal, 0), ("prompt".into(), String::new()));
    let prompt = "Only look for spoilers of the new film.";
    let done = e.submit_modal(shown, &[("prompt", prompt)]).await;
    assert_eq!(done["type"], 4, "{done}");
    assert_eq!(done["data"]["flags"], 64, "ephemeral: {done}");
    assert!(
        content_of(&done).contains("reviewer prompt: this server's own"),
        "{done}"
    );
    assert_eq!(e.settings().await.review.prompt.as_deref(), Some(prompt));
    e.openai.push_for(REVIEW_MODEL, verdict("pass", &[]));
    e.mention(ALICE, "alice", "hello").await;
    e.until("the reviewed reply", |e| !e.texts(GENERAL).is_empty())
        .await;
    let review = e
        .openai
        .requests()
        .into_iter()
        .find(|r| r.model() == REVIEW_MODEL)
        .expect("a review");
    assert_eq!(system_prompt_of(&review), prompt);
    let (_, again) = e
        .slash_with_id(MODERATOR, "drafting", MANAGE_GUILD, edit)
        .await;
    assert_eq!(modal_field(&again, 0), ("prompt".into(), prompt.into()));
    let default = json!([
        { "name": "state", "type": 4, "value": 0 },
        { "name": "prompt", "type": 4, "value": 1 },
    ]);
    let back = e.slash(MODERATOR, "drafting", MANAGE_GUILD, default).await;
    assert!(
        content_of(&back).contains("reviewer prompt: the default one"),
        "{back}"
    );
    assert_eq!(e.settings().await.review.prompt, None);
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC A2: permissions are checked when a change is made. A modal's submit may come up to 15
// minutes after its command; a moderator who lost Manage Server in between is refused on the
// submit, and neither the persona nor the reviewer prompt changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submit_after_losing_manage_server_changes_nothing() {
    let e = E2e::start(Behaviour::succeed(), vec![]).await;
    let (shown, _) = e
        .slash_with_id(
            MODERATOR,
            "persona",
            MANAGE_GUILD,
            persona_sub("edit", json!([])),
        )
        .await;
    let values = [("name", "Mira"), ("prompt", "You are Mira.")];
    let refused = e.submit_modal_as(shown, Some(0), &values).await;
    assert_eq!(refused["data"]["flags"], 64, "ephemeral: {refused}");
    assert_eq!(
        content_of(&refused),
        "You need the Manage Server permission for this."
    );
    let edit = json!([
        { "name": "state", "type": 4, "value": 0 },
        { "name": "prompt", "type": 4, "value": 0 },
    ]);
    let (shown, _) = e
        .slash_with_id(MODERATOR, "drafting", MANAGE_GUILD, edit)
        .await;
    let refused = e
        .submit_modal_as(shown, Some(0), &[("prompt", "Pass everything.")])
        .await;
    assert_eq!(
        content_of(&refused),
        "You need the Manage Server permission for this."
    );
    let settings = e.settings().await;
    assert_eq!((settings.persona, settings.review.prompt), (None, None));
    assert!(
        !settings.drafting,
        "the command's other options wait for the submit too"
    );
    e.assert_fakes_used();
    e.stop().await;
}

/// The options of `/persona <sub>`.
fn persona_sub(sub: &str, options: Value) -> Value {
    json!([{ "name": sub, "type": 1, "options": options }])
}

// SPEC A1 (personas): `/persona edit` shows the server's persona in a modal; what is submitted is
// this server's own copy: the next turn's system prompt and trigger words are the edited ones (its
// avatar is stored, and the thought log hears of it), while a DM and the template keep the default
// and another server its own. A reserved name changes nothing; `/persona use` gives a fresh copy of
// the template back; a member without Manage Server gets no modal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_edits_its_own_persona_in_a_modal() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![Reply::text(&["Ahoy."]), Reply::text(&["Hello from a DM."])],
    )
    .await;
    // Another server already speaks as its own copy.
    let elsewhere = ServerId(GUILD + 1);
    let theirs = persona_bot::domain::ports::Persona {
        display_name: "Nova".into(),
        ..e.running()
            .storage
            .personas
            .persona(&PersonaId("aria".into()))
            .await
            .unwrap()
            .unwrap()
    };
    set_persona(&e, elsewhere, theirs.clone()).await;
    let settings = &e.running().storage.settings;
    e.set_thought_log().await;
    let edit = persona_sub("edit", json!([]));
    let refused = e.slash(ALICE, "persona", 0, edit.clone()).await;
    assert_eq!(refused["type"], 4, "no modal: {refused}");
    let (shown, modal) = e
        .slash_with_id(MODERATOR, "persona", MANAGE_GUILD, edit.clone())
        .await;
    assert_eq!(modal["type"], 9, "{modal}");
    assert_eq!(modal_field(&modal, 0), ("name".into(), "Aria".into()));
    assert!(modal_field(&modal, 1).1.starts_with("You are Aria"));
    assert_eq!(modal_field(&modal, 2), ("words".into(), "aria".into()));
    let reserved = e
        .submit_modal(shown, &[("name", "Discord Helper"), ("prompt", "x")])
        .await;
    assert!(
        content_of(&reserved).starts_with("Nothing was changed"),
        "{reserved}"
    );
    assert_eq!(e.settings().await.persona, None, "nothing stored");
    let (shown, _) = e
        .slash_with_id(MODERATOR, "persona", MANAGE_GUILD, edit)
        .await;
    let prompt = "You are Mira, the keeper of an old lighthouse.";
    let saved = e
        .submit_modal(
            shown,
            &[
                ("name", "Mira"),
                ("prompt", prompt),
                ("words", "Lighthouse, mira"),
                ("avatar", "https://cdn.example.com/mira.png"),
            ],
        )
        .await;
    assert!(content_of(&saved).starts_with("Saved"), "{saved}");
    let stored = e
        .settings()
        .await
        .persona
        .expect("the server's own persona");
    assert_eq!(
        stored.avatar_url.as_deref(),
        Some("https://cdn.example.com/mira.png")
    );
    // The change is announced to the moderators, after the submit's answer.
    e.until("the settings notice", |e| {
        e.posted(THOUGHTS)
            .iter()
            .any(|m| m.to_string().contains("/persona edit name:Mira"))
    })
    .await;
    // A trigger word of the edited persona starts a turn.
    let said = support::fake_discord::Incoming::new(
        GENERAL,
        Some(GUILD),
        ALICE,
        "alice",
        "is the lighthouse open?",
    );
    e.discord.send_message(said).await;
    e.until("the answer", |e| e.texts(GENERAL).len() == 1).await;
    assert!(e.system_prompt(0).contains(prompt));
    e.discord.send_dm(ALICE, "hello").await;
    e.until("the DM's answer", |e| e.openai.requests().len() == 2)
        .await;
    let dm = e.system_prompt(1);
    assert!(dm.contains("You are Aria") && !dm.contains("Mira"), "{dm}");
    let template = e
        .running()
        .storage
        .personas
        .persona(&PersonaId("aria".into()))
        .await;
    assert!(
        template
            .unwrap()
            .unwrap()
            .system_prompt
            .starts_with("You are Aria")
    );
    let other = settings.settings(elsewhere).await.unwrap();
    assert_eq!(other.persona, Some(theirs), "another server keeps its own");
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC A1 (personas): `/persona show` gives the server's own copy (name, origin, trigger words,
// prompt), `/persona list` the templates, and `/persona use` a fresh copy of a template by its id
// (for moderators only; an unknown one is named with the ids there are).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persona_show_list_and_use() {
    let e = E2e::start(Behaviour::succeed(), vec![]).await;
    let prompt = "You are Mira, the keeper of an old lighthouse.";
    let mira = persona_bot::domain::ports::Persona {
        id: PersonaId("aria".into()),
        display_name: "Mira".into(),
        system_prompt: prompt.into(),
        trigger_words: vec!["lighthouse".into(), "mira".into()],
        avatar_url: None,
    };
    set_persona(&e, ServerId(GUILD), mira).await;
    let show = e
        .slash(
            MODERATOR,
            "persona",
            MANAGE_GUILD,
            persona_sub("show", json!([])),
        )
        .await;
    let show = content_of(&show);
    assert!(
        show.contains("Persona: Mira (this server's own copy, from aria)"),
        "{show}"
    );
    assert!(show.contains("Trigger words: lighthouse, mira") && show.contains(prompt));
    let list = e
        .slash(
            MODERATOR,
            "persona",
            MANAGE_GUILD,
            persona_sub("list", json!([])),
        )
        .await;
    assert!(
        content_of(&list).contains("- aria: Aria (in use here)"),
        "{list}"
    );
    let back = persona_sub(
        "use",
        json!([{ "name": "name", "type": 3, "value": "aria" }]),
    );
    let member = content_of(&e.slash(ALICE, "persona", 0, back.clone()).await);
    assert_eq!(member, "You need the Manage Server permission for this.");
    let unknown = persona_sub(
        "use",
        json!([{ "name": "name", "type": 3, "value": "zed" }]),
    );
    let unknown = content_of(&e.slash(MODERATOR, "persona", MANAGE_GUILD, unknown).await);
    assert_eq!(unknown, "There is no persona \"zed\". Personas: aria.");
    let used = content_of(&e.slash(MODERATOR, "persona", MANAGE_GUILD, back).await);
    assert!(used.starts_with("This server now speaks as Aria"), "{used}");
    let own = e.settings().await.persona.expect("a copy");
    assert!(own.system_prompt.starts_with("You are Aria"));
    e.assert_fakes_used();
    e.stop().await;
}

/// The simple world, where the bot may manage webhooks in #general.
fn webhook_world() -> support::fake_discord::World {
    let mut world = support::fake_discord::World::simple();
    let general = &mut world.guilds[0].channels[0];
    assert_eq!(general.id, GENERAL);
    *general = support::fake_discord::FakeChannel::new(GENERAL, "general", true)
        .allow_bot(support::fake_discord::MANAGE_WEBHOOKS);
    world
}

/// The server speaks as Mira (its own persona, with an avatar).
async fn mira(e: &E2e) {
    let persona = persona_bot::domain::ports::Persona {
        id: PersonaId("aria".into()),
        display_name: "Mira".into(),
        system_prompt: "You are Mira.".into(),
        trigger_words: vec!["mira".into()],
        avatar_url: Some("https://cdn.example.com/mira.png".into()),
    };
    set_persona(e, ServerId(GUILD), persona).await;
}

/// The server speaks as its own `persona`, stored as `/persona edit` stores it.
async fn set_persona(e: &E2e, server: ServerId, persona: persona_bot::domain::ports::Persona) {
    let change = persona_bot::domain::ports::SettingsChange::Persona(Some(persona));
    let settings = &e.running().storage.settings;
    settings.update(server, change).await.unwrap();
}

// SPEC A1, C1 (webhooks): where the bot may manage webhooks, the persona's reply is posted through
// one webhook of its own, under the persona's name and avatar; a reply to that post is a reply to
// the bot, and the model reads the post as its own words. A webhook a moderator deleted costs no
// reply: it goes as the bot user, and the next one makes a new webhook. Without the permission
// (#mods-public) the bot user posts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_persona_speaks_through_a_webhook_where_it_may() {
    let replies = [
        "I am Mira.",
        "The light turns at dusk.",
        "Still here.",
        "Back as Mira.",
        "Hi.",
    ];
    let replies = replies.iter().map(|r| Reply::text(&[r])).collect();
    let e = E2e::start_in(webhook_world(), Behaviour::succeed(), replies, |_| {}).await;
    mira(&e).await;
    e.mention(ALICE, "alice", "who are you?").await;
    e.until("the webhook post", |e| {
        e.discord.webhook_posts(GENERAL).len() == 1
    })
    .await;
    let post = &e.discord.webhook_posts(GENERAL)[0];
    assert_eq!(post["content"], "I am Mira.");
    assert_eq!(post["username"], "Mira");
    assert_eq!(post["avatar_url"], "https://cdn.example.com/mira.png");
    assert_eq!(
        post["allowed_mentions"]["parse"],
        json!([]),
        "a webhook post pings no @everyone or role: {post}"
    );
    assert!(e.posted(GENERAL).is_empty(), "nothing as the bot user");
    let hooks = e.discord.webhooks(GENERAL);
    assert_eq!(hooks.len(), 1);
    assert_eq!(hooks[0]["name"], "persona-bot");
    let posted_id = e
        .discord
        .history(GENERAL)
        .iter()
        .rev()
        .find(|m| m["webhook_id"].is_string())
        .and_then(|m| m["id"].as_str().map(str::to_owned))
        .expect("the post in history");
    let mut reply = support::fake_discord::Incoming::new(
        GENERAL,
        Some(GUILD),
        ALICE,
        "alice",
        "when does the light turn?",
    );
    reply.reply_to = posted_id.parse().ok();
    e.discord.send_message(reply).await;
    e.until("the answer to the reply", |e| {
        e.discord.webhook_posts(GENERAL).len() == 2
    })
    .await;
    // The reply started the turn (the persona's own post, which says "Mira", started none).
    assert_eq!(e.openai.requests().len(), 2);
    let trigger = e.last_model_message(1).to_string();
    assert!(trigger.contains("when does the light turn?"), "{trigger}");
    let history = e.openai.requests()[1].body["messages"].clone();
    let own = json!({ "role": "assistant", "content": "I am Mira." });
    assert!(
        history.as_array().is_some_and(|m| m.contains(&own)),
        "the post is the persona's own: {history}"
    );
    assert_eq!(e.discord.webhooks(GENERAL).len(), 1, "one webhook, kept");
    e.discord.delete_webhooks(GENERAL);
    e.mention(ALICE, "alice", "still there?").await;
    e.until("the reply as the bot user", |e| {
        e.texts(GENERAL) == ["Still here."]
    })
    .await;
    e.mention(ALICE, "alice", "and now?").await;
    e.until("a post through a new webhook", |e| {
        e.discord.webhook_posts(GENERAL).len() == 3
    })
    .await;
    assert_eq!(e.discord.webhooks(GENERAL).len(), 1, "a new one");
    e.mention_in(PUBLIC_MODS, ALICE, "alice", "hi").await;
    e.until("a reply without webhooks", |e| {
        e.texts(PUBLIC_MODS) == ["Hi."]
    })
    .await;
    let asked = e.discord.requests().into_iter().any(|r| {
        r.path
            .starts_with(&format!("/channels/{PUBLIC_MODS}/webhooks"))
    });
    assert!(!asked, "no webhook asked for without Manage Webhooks");
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC A3 (memory): /forget-me works in a DM with the bot (a data subject request needs no server),
// and removes what is remembered about the caller in every server and DM, nobody else's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forget_me_works_in_a_dm() {
    use persona_bot::domain::ports::MemoryStore;
    use persona_bot::domain::scope::UserId;
    let e = E2e::start(Behaviour::succeed(), vec![]).await;
    let memory = &e.running().storage.memory;
    for (server, about) in [
        (Some(GUILD), BOB),
        (Some(7), BOB),
        (None, BOB),
        (Some(GUILD), ALICE),
    ] {
        e.store_fact(server, Some(about), &format!("a fact about {about}"))
            .await;
    }
    let id = e
        .discord
        .slash(support::fake_discord::Slash::new(
            "forget-me",
            json!([]),
            None,
            e.discord.dm_channel(BOB),
            BOB,
            "bob",
        ))
        .await;
    let answer = e.answer_to(id).await;
    assert_eq!(
        content_of(&answer),
        "Done: I forgot 3 fact(s) about you, in every server and DM."
    );
    let here = Some(ServerId(GUILD));
    let alices = memory
        .list_facts(here, Some(UserId(ALICE)), true, 20)
        .await
        .unwrap();
    assert_eq!(alices.len(), 1, "someone else's fact stays: {alices:?}");
    for server in [here, Some(ServerId(7)), None] {
        let bobs = memory
            .list_facts(server, Some(UserId(BOB)), true, 20)
            .await
            .unwrap();
        assert!(bobs.is_empty(), "{server:?}: {bobs:?}");
    }
    e.assert_fakes_used();
    e.stop().await;
}

/// The requests the bot made to execute a channel webhook.
fn webhook_executes(e: &E2e) -> usize {
    e.discord
        .requests()
        .iter()
        .filter(|r| {
            r.method == "POST" && r.path.starts_with("/webhooks/") && !r.path.contains("itoken")
        })
        .count()
}

// SPEC A1, D5 (webhooks): a webhook takes no nonce, so a post Discord answers with a 5xx may be
// shown already: it is posted neither again nor by the bot user. The channel's next turn posts
// through the webhook as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_post_answered_5xx_is_not_posted_again() {
    let replies = vec![Reply::text(&["Only once."]), Reply::text(&["Next."])];
    let e = E2e::start_in(webhook_world(), Behaviour::succeed(), replies, |_| {}).await;
    mira(&e).await;
    e.discord.fail_after_webhook_post_next(GENERAL, 500);
    e.mention(ALICE, "alice", "hello").await;
    e.until("the post answered 500", |e| webhook_executes(e) == 1)
        .await;
    // The channel's next turn starts after the first has ended.
    e.mention(ALICE, "alice", "and then?").await;
    e.until("the next turn's post", |e| {
        e.discord.webhook_posts(GENERAL).len() == 2
    })
    .await;
    let posted: Vec<Value> = e.discord.webhook_posts(GENERAL);
    assert_eq!(posted[0]["content"], "Only once.");
    assert_eq!(posted[1]["content"], "Next.");
    assert_eq!(
        webhook_executes(&e),
        2,
        "the first post was not tried again"
    );
    assert!(
        e.texts(GENERAL).is_empty(),
        "nothing by the bot user: {:?}",
        e.texts(GENERAL)
    );
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC A1 (webhooks): a server that never chose a persona keeps the bot user (which can reply and
// ping) even where webhooks are allowed; a webhook post Discord refuses (a name it will not take)
// is posted by the bot user instead, and the next post does not ask the webhook again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_webhook_post_goes_as_the_bot_user() {
    let replies = ["Default voice.", "Refused, then the bot.", "The bot again."];
    let replies = replies.iter().map(|r| Reply::text(&[r])).collect();
    let e = E2e::start_in(webhook_world(), Behaviour::succeed(), replies, |_| {}).await;
    e.mention(ALICE, "alice", "hello").await;
    e.until("the default persona's reply", |e| {
        e.texts(GENERAL).len() == 1
    })
    .await;
    assert!(
        e.discord.webhooks(GENERAL).is_empty(),
        "no webhook without a persona of its own"
    );
    // Stored past `/persona edit`'s checks: Discord refuses the name for a webhook.
    let persona = persona_bot::domain::ports::Persona {
        id: PersonaId("aria".into()),
        display_name: "Discord Pal".into(),
        system_prompt: "You are a pal.".into(),
        trigger_words: vec![],
        avatar_url: None,
    };
    set_persona(&e, ServerId(GUILD), persona).await;
    e.mention(ALICE, "alice", "and now?").await;
    e.until("the reply as the bot user", |e| e.texts(GENERAL).len() == 2)
        .await;
    assert_eq!(webhook_executes(&e), 1, "the refused post");
    assert!(e.discord.webhook_posts(GENERAL).is_empty());
    e.mention(ALICE, "alice", "again?").await;
    e.until("the next reply", |e| e.texts(GENERAL).len() == 3)
        .await;
    assert_eq!(webhook_executes(&e), 1, "the webhook is not asked again");
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC A2: every command that changes or shows a server's settings, its persona or what is
// remembered about others is refused to a member without Manage Server when it runs (Discord's
// default permissions hide them, but hiding is not authorizing), says so, shows no modal, and
// changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_moderator_command_refuses_a_member() {
    let e = E2e::start(Behaviour::succeed(), vec![]).await;
    let sub = |name: &str, options: Value| json!([{ "name": name, "type": 1, "options": options }]);
    let role = GUILD * 1000 + 1;
    let commands: Vec<(&str, Value)> = vec![
        (
            "drafting",
            json!([{ "name": "state", "type": 4, "value": 0 }]),
        ),
        (
            "random",
            json!([{ "name": "state", "type": 4, "value": 0 }]),
        ),
        ("thoughtlog", thought_log_set(THOUGHTS)),
        ("thoughtlog", sub("off", json!([]))),
        (
            "channels",
            json!([
                { "name": "rule", "type": 4, "value": 1 },
                { "name": "channel", "type": 7, "value": GENERAL.to_string() },
            ]),
        ),
        (
            "roles",
            json!([
                { "name": "rule", "type": 4, "value": 1 },
                { "name": "role", "type": 8, "value": role.to_string() },
            ]),
        ),
        ("access", json!([])),
        (
            "tools",
            sub(
                "deliberate",
                json!([{ "name": "state", "type": 4, "value": 0 }]),
            ),
        ),
        (
            "tools",
            sub(
                "phrases",
                json!([
                    { "name": "action", "type": 4, "value": 0 },
                    { "name": "tool", "type": 4, "value": 4 },
                    { "name": "phrase", "type": 3, "value": "note" },
                ]),
            ),
        ),
        ("tools", sub("show", json!([]))),
        ("memory", sub("server", json!([]))),
        (
            "memory",
            sub(
                "show",
                json!([{ "name": "member", "type": 6, "value": BOB.to_string() }]),
            ),
        ),
        ("persona", sub("list", json!([]))),
        (
            "persona",
            sub(
                "use",
                json!([{ "name": "name", "type": 3, "value": "aria" }]),
            ),
        ),
        ("persona", sub("show", json!([]))),
        ("persona", sub("edit", json!([]))),
    ];
    for (name, options) in commands {
        let answer = e.slash(ALICE, name, 0, options.clone()).await;
        assert_eq!(answer["type"], 4, "/{name} {options}: {answer}");
        assert_eq!(answer["data"]["flags"], 64, "ephemeral: /{name}");
        assert_eq!(
            content_of(&answer),
            "You need the Manage Server permission for this.",
            "/{name} {options}"
        );
    }
    assert_eq!(e.settings().await, Default::default(), "nothing changed");
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC C12 (personas): one request reads the bot's mention one way, as the server's persona: in
// history read back from Discord (a channel's first turn after a start), in history the gateway
// delivered, and in the trigger.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_names_the_servers_persona() {
    let replies = vec![Reply::text(&["The tide."]), Reply::text(&["The moon."])];
    let e = E2e::start(Behaviour::succeed(), replies).await;
    mira(&e).await;
    let mut old = support::fake_discord::Incoming::new(
        GENERAL,
        Some(GUILD),
        BOB,
        "bob",
        &format!("<@{BOT}> remember the tide"),
    );
    old.mentions = vec![(BOT, "Aria".into())];
    e.discord
        .post_unseen(old, std::time::Duration::from_secs(60));
    e.mention(ALICE, "alice", "what did bob say?").await;
    e.until("the answer", |e| e.texts(GENERAL).len() == 1).await;
    // Runs of one role are joined (strict chat templates): both lines are in the one message.
    let last = e.last_model_message(0)["content"].to_string();
    assert!(last.contains("[bob] @Mira remember the tide"), "{last}");
    assert!(last.contains("[alice] @Mira what did bob say?"), "{last}");
    let messages = e.openai.requests()[0].body["messages"].to_string();
    assert!(!messages.contains("@Aria"), "{messages}");
    // Alice's message came by the gateway: in the next turn's history it names Mira too.
    e.mention(BOB, "bob", "and then?").await;
    e.until("the second answer", |e| e.texts(GENERAL).len() == 2)
        .await;
    let messages = e.openai.requests()[1].body["messages"].to_string();
    assert!(
        messages.contains("[alice] @Mira what did bob say?"),
        "{messages}"
    );
    assert!(!messages.contains("@Aria"), "{messages}");
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC C1 (webhooks): only the bot's own webhook speaks for it. A reply to another webhook's post
// (a moderator's feed) is no reply to the bot, and starts no turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_to_another_webhooks_post_is_not_a_reply_to_the_bot() {
    let e = E2e::start_in(
        webhook_world(),
        Behaviour::succeed(),
        vec![Reply::text(&["Yes?"])],
        |_| {},
    )
    .await;
    mira(&e).await;
    let feed = e.discord.add_webhook(GENERAL, MODERATOR, "Announcements");
    let mut post = support::fake_discord::Incoming::new(
        GENERAL,
        Some(GUILD),
        feed,
        "Announcements",
        "The shop opens at nine.",
    );
    post.webhook_id = Some(feed);
    post.author_is_bot = true;
    let post_id = e.discord.send_message(post).await;
    let mut reply = support::fake_discord::Incoming::new(
        GENERAL,
        Some(GUILD),
        ALICE,
        "alice",
        "thanks for telling us",
    );
    reply.reply_to = Some(post_id);
    e.discord.send_message(reply).await;
    e.mention(ALICE, "alice", "are you there?").await;
    e.until("the answer to the mention", |e| {
        e.discord.webhook_posts(GENERAL).len() == 1
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(
        e.openai.requests().len(),
        1,
        "only the mention started a turn"
    );
    let trigger = e.last_model_message(0).to_string();
    assert!(trigger.contains("are you there?"), "{trigger}");
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC A1 (webhooks): a notice from the bot (here: the model wrote nothing) is the bot's, not the
// persona's: the bot user posts it even where the persona speaks by webhook.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notice_is_posted_by_the_bot_user_not_the_persona() {
    let empty = Reply::Stream(vec![support::fake_openai::Sse::finish("stop")]);
    let e = E2e::start_in(webhook_world(), Behaviour::succeed(), vec![empty], |_| {}).await;
    mira(&e).await;
    e.mention(ALICE, "alice", "say something").await;
    e.until("the notice", |e| !e.texts(GENERAL).is_empty())
        .await;
    assert_eq!(
        e.texts(GENERAL),
        ["I couldn't come up with a reply. Please try again."]
    );
    assert!(e.discord.webhook_posts(GENERAL).is_empty());
    e.assert_fakes_used();
    e.stop().await;
}

/// The models the fake OpenAI server was asked for, in order.
fn models_asked(e: &E2e) -> Vec<String> {
    e.openai
        .requests()
        .iter()
        .map(|r| r.model().to_owned())
        .collect()
}

// SPEC C8, A2: `/drafting model` offers the configured models (autocomplete); a moderator's
// `model:rogue-model` is refused ephemerally, naming the allowed ones, and nothing is stored, not
// even `state:on`; the next reviewed turn never asks for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_model_outside_the_configured_ones_is_refused_and_never_asked() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![Reply::text(&["Reviewed hello."])],
    )
    .await;
    let drafting = e
        .discord
        .commands()
        .into_iter()
        .map(|(_, command)| command)
        .find(|command| command["name"] == "drafting")
        .expect("/drafting is registered");
    let model = drafting["options"]
        .as_array()
        .and_then(|options| options.iter().find(|o| o["name"] == "model"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(model["autocomplete"], true, "{model}");
    let rogue = json!([
        { "name": "state", "type": 4, "value": 0 },
        { "name": "model", "type": 3, "value": "rogue-model" },
    ]);
    let refused = e.slash(MODERATOR, "drafting", MANAGE_GUILD, rogue).await;
    assert_eq!(refused["data"]["flags"], 64, "ephemeral: {refused}");
    assert_eq!(
        content_of(&refused),
        "`rogue-model` is not one of this bot's models, so nothing was changed. Choose one of: \
         review-model, test-model (or \"default\")."
    );
    assert_eq!(e.settings().await, Default::default(), "nothing stored");
    e.openai.push_for(REVIEW_MODEL, verdict("pass", &[]));
    let on = json!([{ "name": "state", "type": 4, "value": 0 }]);
    let on = e.slash(MODERATOR, "drafting", MANAGE_GUILD, on).await;
    assert!(content_of(&on).contains("model: -"), "{on}");
    e.mention(ALICE, "alice", "hello").await;
    e.until("the reviewed reply", |e| !e.texts(GENERAL).is_empty())
        .await;
    assert_eq!(models_asked(&e), ["test-model", REVIEW_MODEL]);
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC C8, A2: a reviewer model a server stored before choices were checked (or one taken out of
// the configuration since) is ignored: the reviewer asks the configured ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_reviewer_model_no_longer_configured_is_ignored() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![Reply::text(&["Reviewed hello."])],
    )
    .await;
    let mut settings = e.settings().await;
    settings.drafting = true;
    settings.review.model = Some("rogue-model".into());
    e.running()
        .storage
        .settings
        .save_settings(ServerId(GUILD), &settings)
        .await
        .unwrap();
    e.openai.push_for(REVIEW_MODEL, verdict("pass", &[]));
    e.mention(ALICE, "alice", "hello").await;
    e.until("the reviewed reply", |e| !e.texts(GENERAL).is_empty())
        .await;
    assert_eq!(e.texts(GENERAL), ["Reviewed hello."]);
    assert_eq!(models_asked(&e), ["test-model", REVIEW_MODEL]);
    e.assert_fakes_used();
    e.stop().await;
}
