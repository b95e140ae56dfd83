//! End to end: the real `persona-bot` start-up (`app::start`), the real serenity client and
//! poise against the fake Discord on 127.0.0.1, the real provider client against the fake
//! OpenAI-compatible server, and a real SQLite file. Every test checks the fakes were used.

// The shared fakes this binary uses (tests/support/). Public, so that what it leaves
// unused of them is not dead code.
pub mod support {
    pub mod e2e;
    pub mod fake_discord;
    pub mod fake_images;
    pub mod fake_openai;
    pub mod harness;
}

use std::time::{Duration, Instant};

use persona_bot::config::ImageBackendKind;
use persona_bot::domain::ports::{
    AccessLists, NewReminder, ReminderStore, Repeat, ServerSettings, SettingsStore, SummaryMode,
};
use persona_bot::domain::scope::{ChannelId, PersonaId, ServerId, UserId, Visibility};
use persona_bot::locale::Locale;
use persona_bot::tools::ToolError;
use serde_json::{Value, json};
use support::e2e::*;
use support::fake_discord::{Incoming, Recorded};
use support::fake_images::{ComfyMode, FakeComfy};
use support::fake_openai::{Reply, Sse};
use support::harness::Behaviour;

// SPEC C1, C4: a mention gets a streamed reply cut at paragraphs, with safe mentions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mention_gets_a_streamed_reply_cut_at_paragraphs() {
    let e = E2e::start_with(
        Behaviour::succeed(),
        vec![Reply::Stream(vec![
            Sse::text("First paragraph, "),
            Sse::text("streamed.\n\nSecond "),
            Sse::text("paragraph."),
            Sse::finish("stop"),
            Sse::Done,
        ])],
        E2e::every_paragraph_a_message,
    )
    .await;
    e.mention(ALICE, "alice", "hello there").await;
    e.until("two messages", |e| e.posted(GENERAL).len() == 2)
        .await;
    assert_eq!(
        e.texts(GENERAL),
        vec!["First paragraph, streamed.", "Second paragraph."]
    );
    for message in e.posted(GENERAL) {
        assert_eq!(
            message["allowed_mentions"],
            json!({ "parse": [], "users": [ALICE.to_string()], "replied_user": false }),
            "only the asker may be notified: no everyone/here/role pings, no other user"
        );
        assert!(
            message.get("message_reference").is_none(),
            "not a queued trigger"
        );
    }
    let request = &e.openai.requests()[0];
    assert_eq!(request.key(), "provider-key");
    assert_eq!(
        e.last_model_message(0)["content"],
        "[alice] @Aria hello there"
    );
    // Typing waits for turn.typing_delay_ms and is skipped when the reply is already posted;
    // tests/turns.rs checks it with paused time.
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC C3, C4: a message arriving while the channel is busy is answered after the turn, as a
// reply to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_in_a_busy_channel_is_answered_after_the_turn() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![
            Reply::Stream(vec![
                Sse::Delay(Duration::from_millis(400)),
                Sse::text("Answer to alice."),
                Sse::finish("stop"),
                Sse::Done,
            ]),
            Reply::text(&["Answer to bob."]),
        ],
    )
    .await;
    e.mention(ALICE, "alice", "first").await;
    e.until("alice's turn started", |e| e.openai.requests().len() == 1)
        .await;
    let bobs = e.mention(BOB, "bob", "second").await;
    e.until("two answers", |e| e.texts(GENERAL).len() == 2)
        .await;
    assert_eq!(e.texts(GENERAL), vec!["Answer to alice.", "Answer to bob."]);
    let second = &e.posted(GENERAL)[1];
    assert_eq!(
        second["message_reference"]["message_id"],
        json!(bobs.to_string())
    );
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC C6, T5: /kill during a slow tool stops it and replies ephemerally, naming the tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_during_a_slow_tool_stops_it_and_replies_ephemerally() {
    let e = E2e::start(
        Behaviour::Sleep {
            duration: Duration::from_secs(600),
            honour_cancel: false,
        },
        vec![Reply::call("call_1", "probe", r#"{"n":1}"#)],
    )
    .await;
    e.mention(ALICE, "alice", "run the probe").await;
    e.until("the tool runs", |e| e.probe.runs() == 1).await;
    let asked = Instant::now();
    let response = e.slash(ALICE, "kill", 0, json!([])).await;
    assert!(
        asked.elapsed() < Duration::from_secs(3),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(response["data"]["flags"], json!(64), "ephemeral");
    let said = content_of(&response);
    assert!(
        said.contains("probe") && said.contains("may still finish"),
        "it ignores cancellation: {response}"
    );
    assert!(e.probe.was_cancelled());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(e.texts(GENERAL).is_empty(), "nothing posted after the kill");
    let all: Vec<Value> = e.posted(GENERAL);
    assert_eq!(
        all.len(),
        1,
        "only the progress line, before the kill: {all:?}"
    );
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC C6, D9, row 30: a requester's /kill stops their own turn and drops their own waiting
// message; another member's waiting message stays and is answered afterwards. The ephemeral answer
// says whose, with the count, and that the tool was cancelled, as the thought-log notice does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requesters_kill_leaves_another_members_waiting_message_to_be_answered() {
    let e = E2e::start(
        Behaviour::Sleep {
            duration: Duration::from_secs(600),
            honour_cancel: true,
        },
        vec![
            Reply::call("call_1", "probe", r#"{"n":1}"#),
            Reply::text(&["Answer to bob."]),
        ],
    )
    .await;
    e.set_thought_log().await;
    e.mention(ALICE, "alice", "run the probe").await;
    e.until("the tool runs", |e| e.probe.runs() == 1).await;
    let bobs = e.mention(BOB, "bob", "my own question").await;
    e.mention(ALICE, "alice", "and this too").await;
    assert!(e.until_waiting(2).await.contains("waiting here: 2"));
    let response = e.slash(ALICE, "kill", 0, json!([])).await;
    assert_eq!(response["data"]["flags"], json!(64), "ephemeral");
    let said = content_of(&response);
    assert_eq!(
        said,
        "Stopped your reply in progress.\n\
         The tool `probe` was cancelled before it finished.\n\
         Your waiting messages dropped: 1."
    );
    e.until("bob is answered", |e| !e.texts(GENERAL).is_empty())
        .await;
    assert_eq!(e.texts(GENERAL), vec!["Answer to bob."]);
    let answer = e.posted(GENERAL).last().cloned().unwrap();
    assert_eq!(
        answer["message_reference"]["message_id"],
        json!(bobs.to_string())
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        e.openai.requests().len(),
        2,
        "alice's dropped message is not asked"
    );
    let stop = e
        .posted(THOUGHTS)
        .into_iter()
        .map(|n| n.to_string())
        .find(|n| n.contains("Tool stopped by /kill"));
    let stop = stop.expect("a stop notice in the thought log");
    assert!(stop.contains("Cancelled: the tool stopped"), "{stop}");
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC C6: by default another member without Manage Messages may not /kill; a moderator may.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_by_another_member_is_denied_but_a_moderator_may() {
    let e = E2e::start(
        Behaviour::Sleep {
            duration: Duration::from_secs(600),
            honour_cancel: true,
        },
        vec![Reply::call("call_1", "probe", r#"{"n":1}"#)],
    )
    .await;
    e.mention(ALICE, "alice", "run it").await;
    e.until("the tool runs", |e| e.probe.runs() == 1).await;
    let denied = e.slash(BOB, "kill", 0, json!([])).await;
    assert!(
        content_of(&denied).contains("Only the person who asked"),
        "{denied}"
    );
    assert!(!e.probe.was_cancelled(), "a denied /kill cancels nothing");
    let allowed = e.slash(MODERATOR, "kill", MANAGE_MESSAGES, json!([])).await;
    let said = content_of(&allowed);
    assert!(
        said.contains("probe") && said.contains("was cancelled"),
        "{allowed}"
    );
    assert!(
        e.probe.was_cancelled(),
        "the moderator's /kill cancels the tool"
    );
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC T9: a model calling the sticker tool twice posts one sticker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sticker_tool_called_twice_posts_one_sticker() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![
            Reply::call("c1", "select_sticker_for_response", r#"{"name":"wave"}"#),
            Reply::call("c2", "select_sticker_for_response", r#"{"name":"wave"}"#),
            Reply::text(&["Hi!"]),
        ],
    )
    .await;
    e.mention(ALICE, "alice", "wave please").await;
    e.until("the final text", |e| {
        e.texts(GENERAL).iter().any(|t| t == "Hi!")
    })
    .await;
    let stickers: Vec<Value> = e
        .posted(GENERAL)
        .into_iter()
        .filter(|m| m.get("sticker_ids").is_some())
        .collect();
    assert_eq!(stickers.len(), 1, "{stickers:?}");
    assert_eq!(stickers[0]["sticker_ids"], json!(["700"]));
    let second_answer = e.openai.requests()[2].body.to_string();
    assert!(
        second_answer.contains("already_delivered"),
        "{second_answer}"
    );
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC S2: a model guessing a hidden tool name gets tool_denied; nothing of it is posted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guessed_hidden_tool_is_denied_and_nothing_is_posted() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![
            Reply::call("c1", "submit_review", r#"{"decision":"pass"}"#),
            Reply::text(&["Never mind."]),
        ],
    )
    .await;
    e.mention(ALICE, "alice", "review yourself").await;
    e.until("the final text", |e| !e.texts(GENERAL).is_empty())
        .await;
    assert_eq!(e.texts(GENERAL), vec!["Never mind."]);
    let tool_result = e.openai.requests()[1].body.to_string();
    assert!(tool_result.contains("tool_denied"), "{tool_result}");
    let storage = &e.running().storage;
    storage.writes.flush().await;
    assert_eq!(
        storage
            .events
            .count(ServerId(GUILD), "tool_denied")
            .await
            .unwrap(),
        1
    );
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC T11: a failed tool posts a redacted notice to the thought-log channel (set with
// /thoughtlog), with notifications suppressed; a turn summary follows (with summaries of every
// turn: the turn itself ended cleanly).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_tool_posts_a_redacted_notice_to_the_thought_log() {
    let e = E2e::start(
        Behaviour::Fail(ToolError::Failed {
            code: Some("jammed".into()),
            message: "the widget jammed".into(),
        }),
        vec![
            Reply::call(
                "c1",
                "probe",
                r#"{"n":1,"note":"my key is sk-live-abcdefghijklmnopqrstuvwx"}"#,
            ),
            Reply::text(&["That did not work."]),
        ],
    )
    .await;
    e.set_thought_log().await;
    e.set_summaries(SummaryMode::All).await;
    e.mention(ALICE, "alice", "use the probe").await;
    e.until("a notice and a summary", |e| e.posted(THOUGHTS).len() >= 2)
        .await;
    let notices = e.posted(THOUGHTS);
    let failure = notices[0].to_string();
    assert!(
        failure.contains("probe") && failure.contains("jammed"),
        "{failure}"
    );
    assert!(
        failure.contains("[redacted]") && !failure.contains("sk-live"),
        "{failure}"
    );
    assert_eq!(notices[0]["flags"], json!(4096), "notifications suppressed");
    assert_eq!(notices[0]["allowed_mentions"]["parse"], json!([]));
    assert!(
        notices[1].to_string().contains("Turn summary"),
        "{}",
        notices[1]
    );
    assert!(e.texts(GENERAL).contains(&"That did not work.".to_owned()));
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC T11: the thought log refuses a channel @everyone can view, and says so to the setter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_thought_log_refuses_a_public_channel() {
    let e = E2e::start(Behaviour::succeed(), vec![]).await;
    let refused = e
        .slash(
            MODERATOR,
            "thoughtlog",
            MANAGE_GUILD,
            thought_log_set(PUBLIC_MODS),
        )
        .await;
    assert!(
        content_of(&refused).contains("visible to everyone"),
        "{refused}"
    );
    let settings = e.settings().await;
    assert_eq!(settings.thought_log_channel, None);
    let no_permission = e
        .slash(
            ALICE,
            "thoughtlog",
            0,
            json!([{ "name": "off", "type": 1, "options": [] }]),
        )
        .await;
    assert!(
        content_of(&no_permission).contains("Manage Server"),
        "{no_permission}"
    );
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC C8: /drafting on|off is stored per server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drafting_is_stored_per_server() {
    let e = E2e::start(Behaviour::succeed(), vec![]).await;
    let on = e
        // poise registers a choice parameter as an integer option: the choice's index.
        .slash(
            MODERATOR,
            "drafting",
            MANAGE_GUILD,
            json!([{ "name": "state", "type": 4, "value": 0 }]),
        )
        .await;
    assert!(content_of(&on).contains("Drafting is on"), "{on}");
    let settings = e.settings().await;
    assert!(settings.drafting);
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC C4: a 429 from Discord is waited out (its retry_after) and no text is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discord_429_is_waited_out_and_no_text_is_lost() {
    let e = E2e::start_with(
        Behaviour::succeed(),
        vec![Reply::text(&["One.\n\nTwo.\n\nThree."])],
        E2e::every_paragraph_a_message,
    )
    .await;
    e.discord.rate_limit_next(GENERAL, 2, 0.3);
    let started = Instant::now();
    e.mention(ALICE, "alice", "count").await;
    e.until("three messages", |e| e.texts(GENERAL).len() == 3)
        .await;
    assert!(
        started.elapsed() >= Duration::from_millis(600),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(e.texts(GENERAL), vec!["One.", "Two.", "Three."]);
    let posts = e
        .discord
        .requests()
        .into_iter()
        .filter(|r| {
            r.method == "POST" && r.path.starts_with(&format!("/channels/{GENERAL}/messages"))
        })
        .count();
    assert_eq!(posts, 5, "two refused, three accepted");
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC C4: a 429 whose wait is junk never panics the delivery. `1e20` and an infinite header
// (behind a body no JSON parser takes) are too long to wait for: that message is given up at once,
// the rest of the reply goes out, and the bot answers the next mention. A NaN or negative wait is
// no wait, and that message is delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discord_429_with_a_junk_retry_after_neither_panics_nor_waits() {
    let e = E2e::start_with(
        Behaviour::succeed(),
        vec![
            Reply::text(&["One.\n\nTwo.\n\nThree."]),
            Reply::text(&["Still here."]),
        ],
        E2e::every_paragraph_a_message,
    )
    .await;
    let body = |retry_after: &str| {
        format!(
            r#"{{"message":"You are being rate limited.","retry_after":{retry_after},"global":true}}"#
        )
    };
    e.discord.answer_next_raw(
        GENERAL,
        429,
        &body("1e20"),
        &[("x-ratelimit-global", "true")],
    );
    e.discord.answer_next_raw(
        GENERAL,
        429,
        &body("1e400"),
        &[("x-ratelimit-reset-after", "inf"), ("retry-after", "inf")],
    );
    e.discord.answer_next_raw(
        GENERAL,
        429,
        "not json",
        &[("x-ratelimit-reset-after", "NaN"), ("retry-after", "-5")],
    );
    e.discord
        .answer_next_raw(GENERAL, 429, &body("-1e300"), &[]);
    let started = Instant::now();
    e.mention(ALICE, "alice", "count").await;
    e.until("the third message", |e| {
        e.texts(GENERAL).iter().any(|t| t == "Three.")
    })
    .await;
    assert_eq!(
        e.texts(GENERAL),
        vec!["Three."],
        "One and Two were given up"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "no junk wait was waited: {:?}",
        started.elapsed()
    );
    e.mention(ALICE, "alice", "still there?").await;
    e.until("the next answer", |e| {
        e.texts(GENERAL).iter().any(|t| t == "Still here.")
    })
    .await;
    e.assert_fakes_used();
    e.stop().await;
}

// A hostile message through the real gateway: 4000 characters with 100 mentions, zero-width and
// direction characters and U+FFFD is answered, all of it reaching the model. A message whose JSON
// holds a lone surrogate (`\ud800`, which serde_json refuses) is dropped by serenity, and the bot
// keeps answering: the next message, with a real surrogate pair, is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_gateway_messages_do_not_stop_the_bot() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![
            Reply::text(&["That was a lot."]),
            Reply::text(&["Still answering."]),
        ],
    )
    .await;
    let odd = "\u{200b}\u{200d}\u{2060}\u{feff}\u{202e}\u{fffd}e\u{301}";
    let mut content = format!("<@{BOT}> ");
    let mut mentions = vec![(BOT, "Aria".to_owned())];
    for n in 0..100u64 {
        content.push_str(&format!("<@{}> ", 5_000 + n));
        mentions.push((5_000 + n, format!("user{n}")));
    }
    content.push_str(odd);
    while content.chars().count() < 4000 {
        content.push('w');
    }
    let mut hostile = Incoming::new(GENERAL, Some(GUILD), ALICE, "alice", &content);
    hostile.mentions = mentions;
    e.discord.send_message(hostile).await;
    e.until("the long message's answer", |e| {
        e.texts(GENERAL).iter().any(|t| t == "That was a lot.")
    })
    .await;
    let asked = e.openai.requests()[0].body["messages"].to_string();
    assert!(
        // Mentions read as names, at most 100 of them: the rest stay as written.
        asked.contains("@Aria @user0 @user1") && asked.contains("<@5099>"),
        "{asked:.300}"
    );
    assert!(asked.contains(odd), "{asked:.300}");

    let mut broken = Incoming::new(
        GENERAL,
        Some(GUILD),
        ALICE,
        "alice",
        &format!("<@{BOT}> broken LONE here"),
    );
    broken.mentions = vec![(BOT, "Aria".into())];
    e.discord.send_message_raw(broken, "LONE", "\\ud800").await;
    let mut paired = Incoming::new(
        GENERAL,
        Some(GUILD),
        ALICE,
        "alice",
        &format!("<@{BOT}> a face PAIR"),
    );
    paired.mentions = vec![(BOT, "Aria".into())];
    e.discord
        .send_message_raw(paired, "PAIR", "\\ud83d\\ude00")
        .await;
    e.until("the next answer", |e| {
        e.texts(GENERAL).iter().any(|t| t == "Still answering.")
    })
    .await;
    let requests = e.openai.requests();
    assert_eq!(requests.len(), 2, "the broken message made no model call");
    let last = requests[1].body["messages"].to_string();
    assert!(last.contains("a face \u{1f600}"), "{last:.400}");
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC C1, T10: DMs work, and record no usage stats.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dms_work_and_record_no_stats() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![
            Reply::call("c1", "probe", r#"{"n":2}"#),
            Reply::text(&["Hello in private."]),
        ],
    )
    .await;
    let (dm, _) = e.discord.send_dm(ALICE, "hi, privately").await;
    e.until("a DM reply", |e| !e.texts(dm).is_empty()).await;
    assert_eq!(e.texts(dm), vec!["Hello in private."]);
    assert_eq!(
        e.posted(dm)[0]["content"],
        PROGRESS,
        "progress shows in the conversation"
    );
    assert_eq!(e.probe.runs(), 1);
    let storage = &e.running().storage;
    storage.writes.flush().await;
    assert_eq!(
        storage
            .usage
            .total(ServerId(0), "tool_used", "probe")
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        storage
            .usage
            .total(ServerId(GUILD), "tool_used", "probe")
            .await
            .unwrap(),
        0
    );
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC C1, C2: bots, webhooks, plain chatter and blocked channels get no model call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bots_webhooks_chatter_and_blocked_channels_get_no_turn() {
    let e = E2e::start(Behaviour::succeed(), vec![Reply::text(&["Only this."])]).await;
    let mut from_bot = Incoming::new(
        GENERAL,
        Some(GUILD),
        555,
        "otherbot",
        &format!("<@{BOT}> hi"),
    );
    from_bot.author_is_bot = true;
    from_bot.mentions = vec![(BOT, "Aria".into())];
    e.discord.send_message(from_bot).await;
    let mut from_webhook =
        Incoming::new(GENERAL, Some(GUILD), 556, "hook", &format!("<@{BOT}> hi"));
    from_webhook.webhook_id = Some(557);
    from_webhook.mentions = vec![(BOT, "Aria".into())];
    e.discord.send_message(from_webhook).await;
    e.discord
        .send_message(Incoming::new(
            GENERAL,
            Some(GUILD),
            ALICE,
            "alice",
            "just chatting",
        ))
        .await;
    let blocked = ServerSettings {
        access: AccessLists {
            blocked_channels: vec![persona_bot::domain::scope::ChannelId(PUBLIC_MODS)],
            ..Default::default()
        },
        ..Default::default()
    };
    e.running()
        .storage
        .settings
        .save_settings(ServerId(GUILD), &blocked)
        .await
        .unwrap();
    let mut in_blocked = Incoming::new(
        PUBLIC_MODS,
        Some(GUILD),
        ALICE,
        "alice",
        &format!("<@{BOT}> hi"),
    );
    in_blocked.mentions = vec![(BOT, "Aria".into())];
    e.discord.send_message(in_blocked).await;
    // The trigger word (not a mention) still works where allowed.
    e.discord
        .send_message(Incoming::new(
            GENERAL,
            Some(GUILD),
            BOB,
            "bob",
            "hey aria, you there?",
        ))
        .await;
    e.until("one answer", |e| !e.texts(GENERAL).is_empty())
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        e.openai.requests().len(),
        1,
        "only bob's trigger word reached the model"
    );
    assert!(e.texts(PUBLIC_MODS).is_empty());
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC E1: a reaction is the turn's expression: the persona reacts to the message it answers
// (a Unicode emoji by its shortcode), says nothing more, and the turn completes as a
// sticker-only one does: no text, no notice, and the channel answers the next message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reaction_only_turn_reacts_to_the_message_and_completes() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![
            Reply::call("c1", "react_to_message", r#"{"emoji":":thumbsup:"}"#),
            Reply::text(&[]),
            Reply::text(&["Next."]),
        ],
    )
    .await;
    let asked = e.mention(ALICE, "alice", "nice work, right?").await;
    e.until("the reaction", |e| {
        !e.discord.reactions(GENERAL, asked).is_empty()
    })
    .await;
    let offered = e.openai.requests()[0].body.to_string();
    assert!(
        offered.contains("react_to_message") && offered.contains("partyblob"),
        "the tool is offered with the server's own emoji listed: {offered}"
    );
    e.until("the model hears the reaction", |e| {
        e.openai.requests().len() >= 2
    })
    .await;
    let told = e.openai.requests()[1].body.to_string();
    assert!(told.contains(r#"{\"reaction\":\"👍\"}"#), "{told}");
    e.mention(ALICE, "alice", "and now?").await;
    e.until("the next answer", |e| {
        e.texts(GENERAL).iter().any(|t| t == "Next.")
    })
    .await;
    assert_eq!(e.discord.reactions(GENERAL, asked), vec!["👍".to_owned()]);
    assert_eq!(
        e.texts(GENERAL),
        vec!["Next.".to_owned()],
        "a reaction-only turn posts no text and no notice"
    );
    e.assert_no_429();
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC E1, T9: a sticker and a reaction share the turn's one expression: after the sticker,
// a reaction (here the server's own emoji) is refused as over the allowance without a request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sticker_then_a_reaction_in_one_turn_sends_only_the_sticker() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![
            Reply::call("c1", "select_sticker_for_response", r#"{"name":"wave"}"#),
            Reply::call("c2", "react_to_message", r#"{"emoji":":partyblob:"}"#),
            Reply::text(&["Done."]),
        ],
    )
    .await;
    let asked = e.mention(ALICE, "alice", "celebrate!").await;
    e.until("the final text", |e| {
        e.texts(GENERAL).iter().any(|t| t == "Done.")
    })
    .await;
    let stickers = e
        .posted(GENERAL)
        .into_iter()
        .filter(|m| m.get("sticker_ids").is_some())
        .count();
    assert_eq!(stickers, 1);
    let refused = e.openai.requests()[2].body.to_string();
    assert!(refused.contains("limit_reached"), "{refused}");
    assert!(e.discord.reactions(GENERAL, asked).is_empty());
    assert!(
        !e.discord
            .requests()
            .iter()
            .any(|r| r.path.contains("/reactions/")),
        "a reaction over the allowance is never requested"
    );
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC E1: the server's own emoji goes to Discord as `name:id`, which the fake checks against
// the guild's emoji (an unknown one is refused with 10014).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_own_emoji_is_a_reaction_by_name() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![
            Reply::call("c1", "react_to_message", r#"{"emoji":"PartyBlob"}"#),
            Reply::text(&["Yay."]),
        ],
    )
    .await;
    let asked = e.mention(ALICE, "alice", "party?").await;
    e.until("the final text", |e| {
        e.texts(GENERAL).iter().any(|t| t == "Yay.")
    })
    .await;
    assert_eq!(
        e.discord.reactions(GENERAL, asked),
        vec!["partyblob:750".to_owned()]
    );
    e.assert_fakes_used();
    e.stop().await;
}

/// The bot's reaction requests so far: (method, emoji), in order, with the index of each in
/// every request the fake recorded.
fn reaction_requests(e: &E2e) -> Vec<(usize, String, String)> {
    e.discord
        .requests()
        .iter()
        .enumerate()
        .filter_map(|(at, r)| {
            let emoji = r.path.split("/reactions/").nth(1)?.split('/').next()?;
            let emoji = percent_encoding::percent_decode_str(emoji)
                .decode_utf8()
                .ok()?
                .into_owned();
            Some((at, r.method.clone(), emoji))
        })
        .collect()
}

async fn status_reactions(e: &E2e, on: bool) -> String {
    let options = json!([{
        "name": "reactions", "type": 1,
        "options": [{ "name": "state", "type": 4, "value": if on { 0 } else { 1 } }]
    }]);
    content_of(&e.slash(MODERATOR, "replies", MANAGE_GUILD, options).await)
}

// SPEC E1: status reactions, off by default: once a moderator turns them on, 👀 goes on the
// message when its turn starts and ⚙️ when a tool runs; both come off only after the reply is
// posted; a failed turn keeps ❌. /status says they are on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_reactions_show_the_work_and_leave_when_the_reply_is_up() {
    let e = E2e::start(
        // A tool that runs a while, as a real lookup does.
        Behaviour::Sleep {
            duration: Duration::from_millis(800),
            honour_cancel: true,
        },
        vec![
            Reply::text(&["First."]),
            Reply::call("c1", "probe", r#"{"n":1}"#),
            Reply::text(&["Done."]),
            Reply::error(400, "The request is invalid.", "invalid_request_error"),
        ],
    )
    .await;
    e.mention(ALICE, "alice", "hello").await;
    e.until("the first answer", |e| {
        e.texts(GENERAL).iter().any(|t| t == "First.")
    })
    .await;
    assert!(reaction_requests(&e).is_empty(), "off by default");

    let said = status_reactions(&e, true).await;
    assert!(said.contains("👀"), "{said}");
    let asked = e.mention(ALICE, "alice", "use the probe").await;
    e.until("the status reactions are taken off", |e| {
        reaction_requests(e).len() >= 4
    })
    .await;
    let requests = reaction_requests(&e);
    let sequence: Vec<(&str, &str)> = requests
        .iter()
        .map(|(_, method, emoji)| (method.as_str(), emoji.as_str()))
        .collect();
    assert_eq!(
        sequence,
        [
            ("PUT", "👀"),
            ("PUT", "⚙️"),
            ("DELETE", "⚙️"),
            ("DELETE", "👀")
        ]
    );
    let reply_at = e
        .discord
        .requests()
        .iter()
        .position(|r| r.method == "POST" && r.body["content"] == "Done.")
        .expect("the reply was posted");
    assert!(
        reply_at < requests[2].0,
        "nothing comes off before the reply"
    );
    assert!(e.discord.reactions(GENERAL, asked).is_empty());

    let failing = e.mention(ALICE, "alice", "this one fails").await;
    e.until("the failed turn's mark", |e| {
        e.discord.reactions(GENERAL, failing) == ["❌"]
    })
    .await;
    let status = content_of(&e.slash(ALICE, "status", 0, json!([])).await);
    assert!(status.contains("Status reactions: yes"), "{status}");
    e.assert_no_429();
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC T9: Discord's real answers map to the sticker outcomes: a 400 is a definite refusal
// (nothing posted, the allowance is free again: the next sticker goes out).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_sticker_frees_the_allowance() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![
            Reply::call("c1", "select_sticker_for_response", r#"{"name":"wave"}"#),
            Reply::call("c2", "select_sticker_for_response", r#"{"name":"heart"}"#),
            Reply::text(&["There."]),
        ],
    )
    .await;
    e.discord.fail_next(
        GENERAL,
        400,
        json!({"message": "Invalid Form Body", "code": 50035}),
    );
    e.mention(ALICE, "alice", "a sticker").await;
    e.until("the final text", |e| {
        e.texts(GENERAL).iter().any(|t| t == "There.")
    })
    .await;
    let refused = e.openai.requests()[1].body.to_string();
    assert!(refused.contains("sticker_refused"), "{refused}");
    let stickers: Vec<Value> = e
        .posted(GENERAL)
        .into_iter()
        .filter(|m| m.get("sticker_ids").is_some())
        .collect();
    assert_eq!(stickers.len(), 1);
    assert_eq!(stickers[0]["sticker_ids"], json!(["701"]));
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC T9, C4: a sticker still rate limited after every allowed wait was never posted: it is a
// refusal (the allowance is freed, the turn goes on), not an unconfirmed send.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sticker_rate_limited_past_every_wait_is_refused() {
    let e = E2e::start_with(
        Behaviour::succeed(),
        vec![
            Reply::call("c1", "select_sticker_for_response", r#"{"name":"wave"}"#),
            Reply::text(&["No sticker, then."]),
        ],
        |c| c.discord.max_rate_limit_waits = 1,
    )
    .await;
    e.discord.rate_limit_next(GENERAL, 2, 0.01);
    e.mention(ALICE, "alice", "a sticker").await;
    e.until("the final text", |e| {
        e.texts(GENERAL).iter().any(|t| t == "No sticker, then.")
    })
    .await;
    let refused = e.openai.requests()[1].body.to_string();
    assert!(refused.contains("sticker_refused"), "{refused}");
    assert!(
        e.posted(GENERAL)
            .iter()
            .all(|m| m.get("sticker_ids").is_none()),
        "nothing was posted for it"
    );
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC T9: a send Discord never confirms (5xx after every retry) blocks the rest of the turn:
// nothing more is sent, not even after the model asks again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unconfirmed_sticker_send_ends_the_turn_quietly() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![Reply::call(
            "c1",
            "select_sticker_for_response",
            r#"{"name":"wave"}"#,
        )],
    )
    .await;
    for _ in 0..4 {
        e.discord
            .fail_next(GENERAL, 502, json!({"message": "Bad Gateway", "code": 0}));
    }
    e.mention(ALICE, "alice", "a sticker").await;
    e.until("four attempts", |e| {
        e.discord
            .requests()
            .iter()
            .filter(|r| r.method == "POST" && r.path == format!("/channels/{GENERAL}/messages"))
            .count()
            == 4
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(e.posted(GENERAL).is_empty(), "nothing was accepted");
    assert_eq!(
        e.openai.requests().len(),
        1,
        "no further pass after an unconfirmed delivery"
    );
    e.assert_fakes_used();
    e.stop().await;
}

async fn drafting_on(e: &E2e) {
    let on = e
        .slash(
            MODERATOR,
            "drafting",
            MANAGE_GUILD,
            json!([{ "name": "state", "type": 4, "value": 0 }]),
        )
        .await;
    assert!(content_of(&on).contains("Drafting is on"), "{on}");
    e.set_thought_log().await;
}

// A reviewer whose submit_review arguments do not parse is asked again with `{}` in its history,
// not the broken text a strict server (llama.cpp) refuses, so the review goes on and the reply is
// posted once it passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_call_that_does_not_parse_does_not_break_the_review() {
    let e = E2e::start(Behaviour::succeed(), vec![Reply::text(&["Hello."])]).await;
    e.openai.push_for(
        REVIEW_MODEL,
        Reply::call("v1", "submit_review", r#"{"decision": "pass""#),
    );
    e.openai.push_for(REVIEW_MODEL, verdict("pass", &[]));
    drafting_on(&e).await;
    e.mention(ALICE, "alice", "hi").await;
    e.until("the reply", |e| !e.texts(GENERAL).is_empty()).await;
    assert_eq!(e.texts(GENERAL), vec!["Hello."]);
    let reviews: Vec<_> = e
        .openai
        .requests()
        .into_iter()
        .filter(|r| r.model() == REVIEW_MODEL)
        .collect();
    assert_eq!(reviews.len(), 2);
    let replayed = reviews[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|m| m["tool_calls"].as_array().cloned())
        .expect("the first call in the second request");
    assert_eq!(replayed[0]["function"]["arguments"], "{}");
    e.stop().await;
}

// SPEC C8: with /drafting on, the reviewer (a second model on the fake server) asks for a
// revision; only the revised reply is posted; the verdicts reach the thought log's summary
// (with summaries of every turn).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drafting_holds_the_reply_until_the_reviewer_passes_a_revision() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![
            Reply::text(&["A rambling first draft."]),
            Reply::text(&["Short reply."]),
        ],
    )
    .await;
    e.openai
        .push_for(REVIEW_MODEL, verdict("reject", &["be shorter"]));
    e.openai.push_for(REVIEW_MODEL, verdict("pass", &[]));
    drafting_on(&e).await;
    e.set_summaries(SummaryMode::All).await;
    e.mention(ALICE, "alice", "tell me something").await;
    e.until("the summary", |e| {
        e.posted(THOUGHTS)
            .iter()
            .any(|m| m.to_string().contains("Turn summary"))
    })
    .await;
    assert_eq!(
        e.texts(GENERAL),
        vec!["Short reply."],
        "only the reviewed revision"
    );
    let review_requests: Vec<_> = e
        .openai
        .requests()
        .into_iter()
        .filter(|r| r.model() == REVIEW_MODEL)
        .collect();
    assert_eq!(review_requests.len(), 2);
    assert!(
        review_requests[0]
            .body
            .to_string()
            .contains("A rambling first draft.")
    );
    assert!(
        review_requests[0].body["tools"]
            .to_string()
            .contains("submit_review")
    );
    let summary = e.posted(THOUGHTS).last().unwrap().to_string();
    assert!(
        summary.contains("reply: revise (be shorter)") && summary.contains("reply: pass"),
        "{summary}"
    );
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC R2 (end to end): a rejected tool request never runs; the author gets review_rejected,
// and no failure notice reaches the thought log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drafting_rejects_a_tool_request_before_it_runs() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![
            Reply::call("c1", "probe", r#"{"n":1}"#),
            Reply::text(&["Fine, I won't."]),
        ],
    )
    .await;
    e.openai
        .push_for(REVIEW_MODEL, verdict("reject", &["not requested"]));
    e.openai.push_for(REVIEW_MODEL, verdict("pass", &[]));
    drafting_on(&e).await;
    e.set_summaries(SummaryMode::All).await;
    e.mention(ALICE, "alice", "hello").await;
    e.until("the reply", |e| !e.texts(GENERAL).is_empty()).await;
    assert_eq!(e.probe.runs(), 0);
    let author: Vec<_> = e
        .openai
        .requests()
        .into_iter()
        .filter(|r| r.model() == "test-model")
        .collect();
    assert!(
        author[1].body.to_string().contains("review_rejected"),
        "{}",
        author[1].body
    );
    e.until("the summary", |e| !e.posted(THOUGHTS).is_empty())
        .await;
    assert!(
        e.posted(THOUGHTS)
            .iter()
            .all(|m| !m.to_string().contains("Tool call failed"))
    );
    e.assert_fakes_used();
    e.stop().await;
}

fn now_ms() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// Uploads (multipart message posts) the bot made.
fn uploads(e: &E2e) -> Vec<Recorded> {
    e.discord
        .requests()
        .into_iter()
        .filter(|r| !r.files.is_empty())
        .collect()
}

// SPEC S5: a planned image is made on ComfyUI by the worker inside `run` (the chat is not kept
// waiting), posted to the channel once with the task's nonce, and the model's next turn learns
// it was posted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planned_image_is_made_on_comfyui_and_posted_once() {
    let comfy = FakeComfy::start().await;
    // The chat reply comes before ComfyUI has finished.
    comfy.set_mode(ComfyMode::Slow(Duration::from_millis(300)));
    let comfy_url = comfy.base_url.clone();
    let e = E2e::start_with(
        Behaviour::succeed(),
        vec![
            Reply::call("c1", "plan_image", r#"{"prompt":"a cat on a windowsill"}"#),
            Reply::text(&["Painting it now."]),
            Reply::text(&["Glad you like it."]),
        ],
        |c| {
            c.image_worker.backend = ImageBackendKind::Comfyui;
            c.image_worker.comfyui_url = comfy_url;
            c.image_worker.comfyui_workflow =
                concat!(env!("CARGO_MANIFEST_DIR"), "/config/comfyui_workflow.json").into();
            c.image_worker.poll_ms = 20;
        },
    )
    .await;
    e.mention(ALICE, "alice", "draw me a cat").await;
    e.until("the chat reply", |e| {
        e.texts(GENERAL).contains(&"Painting it now.".to_owned())
    })
    .await;
    assert!(
        uploads(&e).is_empty(),
        "the reply did not wait for the image"
    );
    e.until("the image is posted", |e| !uploads(e).is_empty())
        .await;
    let prompts = comfy.prompts();
    assert_eq!(prompts.len(), 1, "one ComfyUI job");
    assert!(
        prompts[0].to_string().contains("a cat on a windowsill"),
        "{}",
        prompts[0]
    );
    let upload = &uploads(&e)[0];
    assert_eq!(upload.path, format!("/channels/{GENERAL}/messages"));
    assert_eq!(upload.files[0].data.as_ref(), FakeComfy::png().as_slice());
    assert!(
        upload.body["nonce"]
            .as_str()
            .is_some_and(|n| n.starts_with("plan-")),
        "{}",
        upload.body
    );
    e.mention(ALICE, "alice", "lovely!").await;
    e.until("the next turn", |e| e.openai.requests().len() == 3)
        .await;
    let system = e.system_prompt(2);
    assert!(
        system.contains("a cat on a windowsill") && system.contains("posted"),
        "{system}"
    );
    e.until("the reply to it", |e| {
        e.texts(GENERAL).contains(&"Glad you like it.".to_owned())
    })
    .await;
    assert_eq!(uploads(&e).len(), 1, "posted once");
    e.assert_fakes_used();
    e.stop().await;
}

fn due_reminder(creator: u64, due_at_ms: i64, text: &str) -> NewReminder {
    NewReminder {
        server: Some(ServerId(GUILD)),
        channel: ChannelId(GENERAL),
        creator: UserId(creator),
        target: Some(UserId(creator)),
        persona: PersonaId("aria".into()),
        text: text.into(),
        due_at_ms,
        repeat: Repeat::Once,
        time_zone: "Europe/Paris".into(),
        visibility: Visibility::Public,
        locale: Locale::En,
        created_at_ms: now_ms() - 60_000,
    }
}

fn cancel(id: i64) -> Value {
    json!([{ "name": "cancel", "type": 1, "options": [{ "name": "id", "type": 4, "value": id }] }])
}

// SPEC T11: a due reminder starts a quiet turn in its channel: the persona speaks (not as a
// reply), and its tool progress goes to the thought log as a card, not the conversation.
// /reminders lists and cancels only your own; a member with Manage Server cancels any in the
// server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_due_reminder_speaks_quietly_and_only_its_owner_may_cancel() {
    let e = E2e::start_with(
        Behaviour::succeed(),
        vec![
            Reply::call("c1", "probe", r#"{"n":1}"#),
            Reply::text(&["Time to stretch, <@300>!"]),
        ],
        |c| c.reminders.poll_ms = 20,
    )
    .await;
    e.set_thought_log().await;
    let reminders = &e.running().storage.reminders;
    let later = reminders
        .create(&due_reminder(
            BOB,
            now_ms() + 86_400_000,
            "water the plants",
        ))
        .await
        .unwrap();
    reminders
        .create(&due_reminder(ALICE, now_ms() - 1_000, "stretch your legs"))
        .await
        .unwrap();
    e.until("the reminder speaks", |e| {
        e.texts(GENERAL)
            .contains(&"Time to stretch, <@300>!".to_owned())
    })
    .await;
    let trigger = e.openai.requests()[0].body["messages"].to_string();
    assert!(trigger.contains("stretch your legs"), "{trigger}");
    for message in e.posted(GENERAL) {
        assert!(message.get("message_reference").is_none(), "not a reply");
        assert_ne!(message["content"], PROGRESS, "no progress line in the chat");
    }
    e.until("the progress card", |e| {
        e.posted(THOUGHTS)
            .iter()
            .any(|m| m.to_string().contains("Quiet turn progress"))
    })
    .await;
    assert!(
        reminders.for_user(UserId(ALICE)).await.unwrap().is_empty(),
        "a one-off reminder is done once fired"
    );

    let list = e
        .slash(
            BOB,
            "reminders",
            0,
            json!([{ "name": "list", "type": 1, "options": [] }]),
        )
        .await;
    let list = content_of(&list);
    assert!(
        list.contains(&format!("#{later}")) && list.contains("water the plants"),
        "{list}"
    );
    assert!(!list.contains("stretch"), "only Bob's: {list}");
    let denied = content_of(&e.slash(ALICE, "reminders", 0, cancel(later)).await);
    assert!(denied.contains("There is no reminder"), "{denied}");
    let cancelled = content_of(&e.slash(BOB, "reminders", 0, cancel(later)).await);
    assert!(cancelled.contains("is cancelled"), "{cancelled}");
    assert!(reminders.for_user(UserId(BOB)).await.unwrap().is_empty());
    // A moderator with Manage Server may cancel anyone's reminder in the server.
    let bobs = reminders
        .create(&due_reminder(BOB, now_ms() + 86_400_000, "feed the cat"))
        .await
        .unwrap();
    let by_moderator = content_of(
        &e.slash(MODERATOR, "reminders", MANAGE_GUILD, cancel(bobs))
            .await,
    );
    assert!(by_moderator.contains("is cancelled"), "{by_moderator}");
    assert!(reminders.for_user(UserId(BOB)).await.unwrap().is_empty());
    assert_eq!(e.openai.requests().len(), 2, "the reminder fired once");
    e.assert_fakes_used();
    e.stop().await;
}

/// A plain message (no mention) in the general channel.
async fn chatter(e: &E2e, author: u64, name: &str, text: &str) -> u64 {
    e.discord
        .send_message(Incoming::new(GENERAL, Some(GUILD), author, name, text))
        .await
}

// Random quiet turns: off by default, set per server with /random (Manage Server), a chance per
// message, bounded per hour; the persona speaks without replying to anyone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_turns_are_off_by_default_and_bounded_per_hour() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![
            Reply::text(&["Did someone say cake?"]),
            Reply::text(&["Hello Bob."]),
        ],
    )
    .await;
    let on = json!([
        { "name": "state", "type": 4, "value": 0 },
        { "name": "percent", "type": 4, "value": 100 },
        { "name": "per_hour", "type": 4, "value": 1 },
    ]);
    let denied = content_of(&e.slash(ALICE, "random", 0, on.clone()).await);
    assert!(denied.contains("Manage Server"), "{denied}");
    chatter(&e, ALICE, "alice", "anyone want cake?").await;
    // Events are handled concurrently: give this one time to be handled (and not answered)
    // before random turns are turned on, or it could roll after the switch.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(e.openai.requests().is_empty(), "off by default");
    let on = content_of(&e.slash(MODERATOR, "random", MANAGE_GUILD, on).await);
    assert!(on.contains("100%") && on.contains("at most 1"), "{on}");
    let settings = e.settings().await;
    assert!(settings.random.enabled);
    chatter(&e, ALICE, "alice", "cake is ready").await;
    e.until("the random turn", |e| {
        e.texts(GENERAL)
            .contains(&"Did someone say cake?".to_owned())
    })
    .await;
    let said = e.posted(GENERAL);
    assert!(said[0].get("message_reference").is_none(), "not a reply");
    let trigger = e.openai.requests()[0].body["messages"].to_string();
    assert!(trigger.contains("cake is ready"), "{trigger}");
    // The hour's one random turn is spent: this message is not answered, the mention after it is.
    chatter(&e, BOB, "bob", "more cake please").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    e.mention(BOB, "bob", "hi").await;
    e.until("the mention's reply", |e| {
        e.texts(GENERAL).contains(&"Hello Bob.".to_owned())
    })
    .await;
    assert_eq!(e.openai.requests().len(), 2, "no second random turn");
    e.assert_fakes_used();
    e.stop().await;
}

// With the database unreachable and the server's settings never read, the bot cannot know the
// server's rules: it does not answer, but someone who mentions it is told why, once a minute per
// channel, instead of silence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mention_during_a_database_outage_gets_a_reason_not_silence() {
    let e = E2e::start(Behaviour::succeed(), vec![]).await;
    e.running().storage.db.close().await;
    let first = e.mention(ALICE, "alice", "are you there?").await;
    e.until("the notice", |e| !e.texts(GENERAL).is_empty())
        .await;
    let notice = persona_bot::locale::text(Locale::En, "settings-unavailable");
    assert_eq!(e.texts(GENERAL), vec![notice]);
    let posted = e.posted(GENERAL);
    assert_eq!(
        posted[0]["message_reference"]["message_id"],
        json!(first.to_string())
    );
    // A second mention within the minute: no second notice (and no model call at all).
    e.mention(ALICE, "alice", "hello?").await;
    e.mention(BOB, "bob", "anyone?").await;
    let texts_after = e.texts(GENERAL).len();
    assert_eq!(texts_after, 1);
    assert!(e.openai.requests().is_empty());
}

// SPEC C7: during their own streaming turn, a requester's message without a mention is a
// follow-up: it reaches the model (it used to be ignored, since it does not mention the bot). A
// message from someone else without a mention is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_up_without_a_mention_reaches_the_running_turn() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![
            Reply::Stream(vec![
                Sse::text("Once upon a time, in a land far away, "),
                Sse::Delay(Duration::from_secs(3)),
                Sse::text("there lived a dragon."),
                Sse::finish("stop"),
                Sse::Done,
            ]),
            Reply::text(&["The short version: a dragon."]),
        ],
    )
    .await;
    e.mention(ALICE, "alice", "tell me a story").await;
    e.until("the model is asked", |e| e.openai.requests().len() == 1)
        .await;
    chatter(&e, BOB, "bob", "nice weather today").await;
    chatter(&e, ALICE, "alice", "wait, just the short version").await;
    e.until("the follow-up is asked", |e| e.openai.requests().len() == 2)
        .await;
    let asked = e.openai.requests()[1].body["messages"].to_string();
    assert!(asked.contains("just the short version"), "{asked}");
    e.until("the short answer", |e| {
        e.texts(GENERAL).iter().any(|t| t.contains("short version"))
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(e.openai.requests().len(), 2, "bob's message is no turn");
    e.stop().await;
}

// SPEC C2: with the default settings, a user's second question a moment after their first was
// answered is answered too (the old one-second cooldown dropped it without a word).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quick_second_question_is_answered() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![Reply::text(&["Paris."]), Reply::text(&["Madrid."])],
    )
    .await;
    e.mention(ALICE, "alice", "the capital of France?").await;
    e.until("the first answer", |e| e.texts(GENERAL).len() == 1)
        .await;
    e.mention(ALICE, "alice", "and the capital of Spain?").await;
    e.until("the second answer", |e| e.texts(GENERAL).len() == 2)
        .await;
    assert_eq!(e.texts(GENERAL), vec!["Paris.", "Madrid."]);
    e.stop().await;
}

// SPEC C2: a flood past turn.user_messages_per_minute gets no turn, and the user is told once
// per window: never silently, and never once per message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_is_refused_and_told_once() {
    let e = E2e::start_with(
        Behaviour::succeed(),
        vec![Reply::text(&["One."]), Reply::text(&["Two."])],
        |config| config.turn.user_messages_per_minute = 2,
    )
    .await;
    for (n, question) in ["one?", "two?"].into_iter().enumerate() {
        e.mention(ALICE, "alice", question).await;
        e.until("an answer", |e| e.texts(GENERAL).len() == n + 1)
            .await;
    }
    let third = e.mention(ALICE, "alice", "three?").await;
    e.until("the notice", |e| e.texts(GENERAL).len() == 3).await;
    e.mention(ALICE, "alice", "four?").await;
    e.mention(BOB, "bob", "and me?").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let posted = e.posted(GENERAL);
    let notice = &posted[2];
    assert!(
        notice["content"]
            .as_str()
            .is_some_and(|t| t.contains("faster than I can answer")),
        "{notice}"
    );
    assert_eq!(notice["message_reference"]["message_id"], third.to_string());
    let notices = e
        .texts(GENERAL)
        .iter()
        .filter(|t| t.contains("faster than I can answer"))
        .count();
    assert_eq!(notices, 1, "told once: {:?}", e.texts(GENERAL));
    e.until("bob is answered", |e| e.openai.requests().len() == 3)
        .await;
    e.stop().await;
}

// The system prompt names the persona and the server and says what day and time it is, in
// turn.time_zone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_system_prompt_says_who_where_and_when() {
    let e = E2e::start_with(
        Behaviour::succeed(),
        vec![Reply::text(&["Hello."])],
        |config| config.turn.time_zone = "Asia/Tokyo".into(),
    )
    .await;
    e.mention(ALICE, "alice", "what day is it?").await;
    e.until("the answer", |e| e.texts(GENERAL).len() == 1).await;
    let system = e.system_prompt(0);
    assert!(
        system.contains("You are Aria, in the Discord server \"Test Guild\". It is now "),
        "{system}"
    );
    let year = chrono::Utc::now()
        .with_timezone(&chrono_tz::Asia::Tokyo)
        .format("%Y")
        .to_string();
    assert!(system.contains(&format!("{year}, ")), "{system}");
    assert!(
        system.ends_with("(Asia/Tokyo).") || system.contains("(Asia/Tokyo)."),
        "{system}"
    );
    e.stop().await;
}

// The sticker tool's description lists the server's stickers, read from the gateway's cache (no
// REST request per turn), so the model picks one that exists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sticker_tool_lists_the_servers_stickers_from_the_cache() {
    let e = E2e::start(Behaviour::succeed(), vec![Reply::text(&["Hello."])]).await;
    e.mention(ALICE, "alice", "hi").await;
    e.until("the answer", |e| e.texts(GENERAL).len() == 1).await;
    let tools = e.openai.requests()[0].body["tools"].clone();
    let sticker_tool = tools
        .as_array()
        .and_then(|t| {
            t.iter()
                .find(|t| t["function"]["name"] == "select_sticker_for_response")
        })
        .cloned()
        .unwrap_or_default();
    let description = sticker_tool["function"]["description"]
        .as_str()
        .unwrap_or_default();
    assert!(
        description.ends_with("This server's stickers: \"heart\", \"wave\"."),
        "{description}"
    );
    let asked = e
        .discord
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path.contains("/stickers"))
        .count();
    assert_eq!(asked, 0, "read from the cache");
    e.stop().await;
}

/// A reply that takes `secs` before its text comes, then says `text`.
fn slow(secs: u64, text: &str) -> Reply {
    Reply::Stream(vec![
        Sse::Delay(Duration::from_secs(secs)),
        Sse::text(text),
        Sse::finish("stop"),
        Sse::Done,
    ])
}

// SPEC C7: an edit of a waiting message replaces its text; deleting a waiting message drops it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_waiting_message_is_answered_as_edited_and_a_deleted_one_not_at_all() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![slow(2, "Alice's answer."), Reply::text(&["Six."])],
    )
    .await;
    e.mention(ALICE, "alice", "first").await;
    e.until("alice's turn runs", |e| e.openai.requests().len() == 1)
        .await;
    let bob = e.mention(BOB, "bob", "what is 2+2?").await;
    let moderator = e.mention(MODERATOR, "mod", "never mind this").await;
    assert!(e.until_waiting(2).await.contains("waiting here: 2"));
    e.discord
        .user_edits(GENERAL, bob, &format!("<@{BOT}> what is 3+3?"));
    e.discord.user_deletes(GENERAL, moderator);
    e.until("bob is answered", |e| e.openai.requests().len() == 2)
        .await;
    assert_eq!(
        e.last_model_message(1)["content"],
        "[alice] @Aria first\n\n[bob] @Aria what is 3+3?"
    );
    e.until("both answers", |e| e.texts(GENERAL).len() == 2)
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        e.openai.requests().len(),
        2,
        "the deleted message is not answered"
    );
    e.stop().await;
}

// SPEC C7: an edit of the running turn's trigger is a follow-up with the new text; a turn whose
// trigger is deleted before any of its answer went out stops, and posts nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_trigger_is_a_follow_up_and_a_deleted_one_stops_its_turn() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![
            slow(3, "A long story."),
            Reply::text(&["A short story."]),
            slow(3, "Never posted."),
        ],
    )
    .await;
    let story = e.mention(ALICE, "alice", "tell me a story").await;
    e.until("the turn runs", |e| e.openai.requests().len() == 1)
        .await;
    e.discord
        .user_edits(GENERAL, story, &format!("<@{BOT}> tell me a short story"));
    e.until("the follow-up is asked", |e| e.openai.requests().len() == 2)
        .await;
    assert!(
        e.openai.requests()[1].body["messages"]
            .to_string()
            .contains("tell me a short story"),
    );
    e.until("the short story", |e| {
        e.texts(GENERAL).iter().any(|t| t == "A short story.")
    })
    .await;
    let posted = e.texts(GENERAL).len();
    let gone = e.mention(BOB, "bob", "tell me another").await;
    e.until("bob's turn runs", |e| e.openai.requests().len() == 3)
        .await;
    e.discord.user_deletes(GENERAL, gone);
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(e.texts(GENERAL).len(), posted, "{:?}", e.texts(GENERAL));
    e.stop().await;
}

// SPEC C2, C7: a second message from someone whose question is still waiting (here without a
// mention) joins it: one turn answers both, and no second turn repeats the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_message_joins_the_same_authors_waiting_one() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![slow(2, "Alice's answer."), Reply::text(&["Both answered."])],
    )
    .await;
    e.mention(ALICE, "alice", "first").await;
    e.until("alice's turn runs", |e| e.openai.requests().len() == 1)
        .await;
    e.mention(BOB, "bob", "what is 2+2?").await;
    assert!(e.until_waiting(1).await.contains("waiting here: 1"));
    chatter(&e, BOB, "bob", "and what is 3+3?").await;
    e.until("bob is answered", |e| e.openai.requests().len() == 2)
        .await;
    // Alice's message before it is joined to it (SPEC C12: roles alternate).
    assert_eq!(
        e.last_model_message(1)["content"],
        "[alice] @Aria first\n\n[bob] @Aria what is 2+2?\nand what is 3+3?"
    );
    e.until("both answers", |e| e.texts(GENERAL).len() == 2)
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(e.openai.requests().len(), 2, "one turn for both");
    e.stop().await;
}

// SPEC C2: a due reminder passes the server's channel rules as a message does: in a channel now
// blocked it starts no turn, the thought log says it was not delivered, and its creator is told in
// a DM.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_due_reminder_in_a_blocked_channel_is_skipped_and_reported() {
    let e = E2e::start_with(Behaviour::succeed(), vec![], |c| c.reminders.poll_ms = 20).await;
    e.set_thought_log().await;
    let settings = e.settings().await;
    let blocked = ServerSettings {
        access: AccessLists {
            blocked_channels: vec![ChannelId(GENERAL)],
            ..Default::default()
        },
        ..settings
    };
    e.running()
        .storage
        .settings
        .save_settings(ServerId(GUILD), &blocked)
        .await
        .unwrap();
    e.running()
        .storage
        .reminders
        .create(&due_reminder(ALICE, now_ms() - 1_000, "stretch your legs"))
        .await
        .unwrap();
    e.until("the thought log says so", |e| {
        e.posted(THOUGHTS)
            .iter()
            .any(|m| m.to_string().contains("A reminder was not delivered"))
    })
    .await;
    let dm = e.discord.dm_channel(ALICE);
    e.until("alice is told", |e| !e.texts(dm).is_empty()).await;
    assert_eq!(
        e.texts(dm),
        vec![format!(
            "Your reminder in <#{GENERAL}> was not delivered: I may no longer speak in that \
             channel. Ask a moderator, or set it again where I can speak."
        )]
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(e.openai.requests().is_empty(), "no turn");
    assert!(e.texts(GENERAL).is_empty());
    e.stop().await;
}

// SPEC A3 (memory with privacy): a fact the persona learned in a private channel reaches its
// prompts there, and never the prompts of the server's public channels.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fact_learned_in_a_private_channel_stays_there() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![
            Reply::call(
                "c1",
                "remember_fact",
                r#"{"fact":"the raid is on Friday","about":"server"}"#,
            ),
            Reply::text(&["Noted."]),
            Reply::text(&["Hello in general."]),
            Reply::text(&["Hello again in private."]),
        ],
    )
    .await;
    e.mention_in(THOUGHTS, ALICE, "alice", "remember: the raid is on Friday")
        .await;
    e.until("noted", |e| e.texts(THOUGHTS).len() == 1).await;
    e.mention_in(GENERAL, ALICE, "alice", "hi").await;
    e.until("general answered", |e| e.texts(GENERAL).len() == 1)
        .await;
    e.mention_in(THOUGHTS, ALICE, "alice", "hi again").await;
    e.until("private answered", |e| e.texts(THOUGHTS).len() == 2)
        .await;
    let system = |n: usize| e.system_prompt(n);
    assert!(!system(2).contains("raid"), "general: {}", system(2));
    assert!(
        system(3).contains("the raid is on Friday"),
        "private: {}",
        system(3)
    );
    e.stop().await;
}

// The persona forgets a fact by the number its prompt shows, only one the turn could see: Bob
// cannot make it forget what it knows about Alice; Alice can, and the fact is gone from the next
// prompt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forgotten_fact_is_gone_from_the_next_prompt() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![
            Reply::call(
                "c1",
                "remember_fact",
                r#"{"fact":"Alice's cat is called Miso","about":"requester"}"#,
            ),
            Reply::text(&["Noted."]),
            Reply::call("c2", "forget_fact", r#"{"id":1}"#),
            Reply::text(&["I cannot forget that."]),
            Reply::call("c3", "forget_fact", r#"{"id":1}"#),
            Reply::text(&["Forgotten."]),
            Reply::text(&["I do not know your cat."]),
        ],
    )
    .await;
    let answered = |n: usize| move |e: &E2e| e.texts(GENERAL).len() == n;
    e.mention(ALICE, "alice", "remember my cat is Miso").await;
    e.until("noted", answered(1)).await;
    e.mention(BOB, "bob", "forget fact 1").await;
    e.until("bob answered", answered(2)).await;
    e.mention(ALICE, "alice", "forget about my cat").await;
    e.until("forgotten", answered(3)).await;
    e.mention(ALICE, "alice", "what is my cat called?").await;
    e.until("asked", answered(4)).await;
    let requests = e.openai.requests();
    let system = |n: usize| requests[n].body["messages"][0]["content"].to_string();
    let last = |n: usize| {
        requests[n].body["messages"]
            .as_array()
            .unwrap()
            .last()
            .cloned()
    };
    assert!(
        last(3).unwrap().to_string().contains("no_such_fact"),
        "bob's turn cannot forget alice's fact: {:?}",
        last(3)
    );
    assert!(
        system(4).contains("Alice's cat is called Miso (about alice) (#1)"),
        "{}",
        system(4)
    );
    assert!(!system(6).contains("Miso"), "{}", system(6));
    e.stop().await;
}

// SPEC C12 (one mention form): mentions read `@name` in every message of a request: the bot's as
// the persona's name, in the trigger and in history alike, and a user's as theirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mentions_read_the_same_in_history_and_the_trigger() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![Reply::text(&["Hi."]), Reply::text(&["Bob said hey."])],
    )
    .await;
    e.mention(ALICE, "alice", "hi").await;
    e.until("first answer", |e| e.texts(GENERAL).len() == 1)
        .await;
    let mut bob = Incoming::new(GENERAL, Some(GUILD), BOB, "bob", &format!("hey <@{ALICE}>"));
    bob.mentions = vec![(ALICE, "alice".into())];
    e.discord.send_message(bob).await;
    e.mention(ALICE, "alice", "what did bob say?").await;
    e.until("second answer", |e| e.texts(GENERAL).len() == 2)
        .await;
    let requests = e.openai.requests();
    let messages = requests[1].body["messages"].to_string();
    assert!(messages.contains("[alice] @Aria hi"), "{messages}");
    assert!(messages.contains("[bob] hey @alice"), "{messages}");
    assert!(
        messages.contains("[alice] @Aria what did bob say?"),
        "{messages}"
    );
    assert!(!messages.contains(&format!("<@{BOT}>")), "{messages}");
    assert!(!messages.contains(&format!("<@{ALICE}>")), "{messages}");
    e.stop().await;
}

fn forget(target: &str) -> Value {
    json!([{ "name": "forget", "type": 1,
        "options": [{ "name": "target", "type": 3, "value": target }] }])
}

// SPEC A3 (memory): /memory show lists what the persona remembers about the caller (for a
// moderator: about a given member), /memory server the server's for a moderator only, /memory
// forget deletes the caller's own facts (a moderator's: any of the server's), and /forget-me every
// fact about the caller everywhere; a forgotten fact is gone from the next prompt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_commands_show_and_forget() {
    let e = E2e::start(Behaviour::succeed(), vec![Reply::text(&["Hello Bob."])]).await;
    let alices = e
        .store_fact(Some(GUILD), Some(ALICE), "Alice likes tea")
        .await;
    let bobs = e
        .store_fact(Some(GUILD), Some(BOB), "Bob's dog is Rex")
        .await;
    e.store_fact(Some(7), Some(BOB), "Bob elsewhere").await;
    e.store_fact(None, Some(BOB), "Bob in a DM").await;
    let server_wide = e.store_fact(Some(GUILD), None, "Raids are on Friday").await;
    let private = persona_bot::domain::ports::NewFact {
        server: Some(ServerId(GUILD)),
        persona: PersonaId("aria".into()),
        about: Some(UserId(BOB)),
        text: "Bob said in private".into(),
        at_ms: now_ms(),
        private_to: Some(ChannelId(THOUGHTS)),
        source: None,
    };
    let memory = &e.running().storage.memory;
    persona_bot::domain::ports::MemoryStore::add_fact(memory.as_ref(), private, 100)
        .await
        .unwrap();
    let show = json!([{ "name": "show", "type": 1, "options": [] }]);
    let mine = content_of(&e.slash(ALICE, "memory", 0, show.clone()).await);
    assert!(
        mine.contains(&format!("#{alices} Alice likes tea")),
        "{mine}"
    );
    assert!(!mine.contains("Rex"), "{mine}");
    // A moderator sees what is remembered about a member; a member may not look at another.
    let about_bob = json!([{ "name": "show", "type": 1, "options": [
        { "name": "member", "type": 6, "value": BOB.to_string() },
    ] }]);
    let nosy = content_of(&e.slash(ALICE, "memory", 0, about_bob.clone()).await);
    assert_eq!(nosy, "You need the Manage Server permission for this.");
    let bob_seen = content_of(&e.slash(MODERATOR, "memory", MANAGE_GUILD, about_bob).await);
    assert!(
        bob_seen.contains(&format!("#{bobs} Bob's dog is Rex")) && !bob_seen.contains("tea"),
        "{bob_seen}"
    );
    assert!(
        !bob_seen.contains("in private"),
        "not what a private channel heard: {bob_seen}"
    );
    assert!(
        !bob_seen.contains("elsewhere"),
        "only this server's: {bob_seen}"
    );
    let server = json!([{ "name": "server", "type": 1, "options": [] }]);
    let refused = content_of(&e.slash(ALICE, "memory", 0, server.clone()).await);
    assert_eq!(refused, "You need the Manage Server permission for this.");
    let listed = content_of(&e.slash(MODERATOR, "memory", MANAGE_GUILD, server).await);
    assert!(
        listed.contains("Raids are on Friday") && !listed.contains("tea"),
        "{listed}"
    );
    let theirs = content_of(&e.slash(ALICE, "memory", 0, forget(&bobs.to_string())).await);
    assert!(theirs.starts_with("Nothing to forget"), "{theirs}");
    let own = content_of(
        &e.slash(ALICE, "memory", 0, forget(&format!("#{alices}")))
            .await,
    );
    assert_eq!(own, "Forgotten: 1 fact(s).");
    let by_moderator = e
        .slash(
            MODERATOR,
            "memory",
            MANAGE_GUILD,
            forget(&server_wide.to_string()),
        )
        .await;
    assert_eq!(content_of(&by_moderator), "Forgotten: 1 fact(s).");
    let me = content_of(&e.slash(BOB, "forget-me", 0, json!([])).await);
    assert_eq!(
        me,
        "Done: I forgot 4 fact(s) about you, in every server and DM."
    );
    e.mention(BOB, "bob", "what is my dog called?").await;
    e.until("bob is answered", |e| e.texts(GENERAL).len() == 1)
        .await;
    let system = e.system_prompt(0);
    assert!(
        !system.contains("Rex") && !system.contains("Friday"),
        "{system}"
    );
    e.stop().await;
}

/// `/channels` or `/roles` options: the rule (a choice, sent as its index, as Discord does)
/// and the channel (7) or role (8).
fn rule(option: &str, rule: &str, kind: u8, id: u64) -> Value {
    let choices: &[&str] = if kind == 7 {
        &["allow", "block", "always", "clear"]
    } else {
        &["allow", "block", "clear"]
    };
    let index = choices.iter().position(|c| *c == rule).expect("a rule");
    json!([
        { "name": "rule", "type": 4, "value": index },
        { "name": option, "type": kind, "value": id.to_string() },
    ])
}

// SPEC A2 (access): /channels and /roles change who is answered where, for members with Manage
// Server only (checked when the command runs); each change reaches the thought log, and /access
// shows the rules; a blocked channel or role gets no turn, a cleared one is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_commands_change_who_is_answered() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![Reply::text(&["Answered after the clear."])],
    )
    .await;
    e.set_thought_log().await;
    let refused = e
        .slash(ALICE, "channels", 0, rule("channel", "block", 7, GENERAL))
        .await;
    assert_eq!(
        content_of(&refused),
        "You need the Manage Server permission for this."
    );
    let blocked = e
        .slash(
            MODERATOR,
            "channels",
            MANAGE_GUILD,
            rule("channel", "block", 7, GENERAL),
        )
        .await;
    assert_eq!(
        content_of(&blocked),
        format!("Done: block for <#{GENERAL}>.")
    );
    let role = e.discord.world().moderator_role(GUILD);
    let role_blocked = e
        .slash(
            MODERATOR,
            "roles",
            MANAGE_GUILD,
            rule("role", "block", 8, role),
        )
        .await;
    assert_eq!(
        content_of(&role_blocked),
        format!("Done: block for <@&{role}>.")
    );
    let shown = content_of(&e.slash(MODERATOR, "access", MANAGE_GUILD, json!([])).await);
    assert!(
        shown.contains(&format!("Blocked channels: <#{GENERAL}>")),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("Blocked roles: <@&{role}>")),
        "{shown}"
    );
    e.until("two settings notices", |e| {
        e.posted(THOUGHTS)
            .iter()
            .filter(|m| m.to_string().contains("A setting was changed"))
            .count()
            == 2
    })
    .await;
    e.mention(ALICE, "alice", "hello?").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        e.openai.requests().is_empty(),
        "a blocked channel gets no turn"
    );
    e.slash(
        MODERATOR,
        "channels",
        MANAGE_GUILD,
        rule("channel", "clear", 7, GENERAL),
    )
    .await;
    e.mention(MODERATOR, "moderator", "a blocked role speaks")
        .await;
    e.mention(ALICE, "alice", "and now?").await;
    e.until("alice is answered", |e| e.texts(GENERAL).len() == 1)
        .await;
    let requests = e.openai.requests();
    assert_eq!(requests.len(), 1, "the blocked role got no turn");
    assert!(requests[0].body.to_string().contains("and now?"));
    e.stop().await;
}

// SPEC A4 (status and help): /status says how the bot is set up in this channel, /help what it does
// and the commands the caller may use (the moderators' only to moderators).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_and_help_describe_the_bot_here() {
    let e = E2e::start(Behaviour::succeed(), vec![]).await;
    drafting_on(&e).await;
    let status = content_of(&e.slash(ALICE, "status", 0, json!([])).await);
    for line in [
        "Persona: Aria".to_owned(),
        "Model: test-model".to_owned(),
        "Response Drafting: yes".to_owned(),
        format!("Thought log: <#{THOUGHTS}>"),
        "Answering now here: no; waiting here: 0".to_owned(),
        "I may post here: yes".to_owned(),
        "Your reminders: 0".to_owned(),
    ] {
        assert!(status.contains(&line), "{line} in {status}");
    }
    let help = content_of(&e.slash(ALICE, "help", 0, json!([])).await);
    assert!(
        help.starts_with("I am Aria.") && help.contains("/forget-me"),
        "{help}"
    );
    assert!(!help.contains("With Manage Server"), "{help}");
    let for_moderator = content_of(&e.slash(MODERATOR, "help", MANAGE_GUILD, json!([])).await);
    assert!(
        for_moderator.contains("With Manage Server: /channels"),
        "{for_moderator}"
    );
    // A slow answer runs, and a second person's message waits.
    e.openai.push(Reply::Stream(vec![
        Sse::Delay(Duration::from_secs(2)),
        Sse::text("Slow."),
        Sse::finish("stop"),
        Sse::Done,
    ]));
    e.mention(ALICE, "alice", "take your time").await;
    e.until("alice's turn runs", |e| e.openai.requests().len() == 1)
        .await;
    e.mention(BOB, "bob", "me next").await;
    let busy = e.until_waiting(1).await;
    assert!(
        busy.contains("Answering now here: yes; waiting here: 1"),
        "{busy}"
    );
    e.stop().await;
}

/// The tool names a model request offered.
fn offered(request: &support::fake_openai::Recorded) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

// SPEC A2 (tools): /tools deliberate on gates the persona's tools behind trigger phrases, a phrase
// a moderator adds with /tools phrases offers its tool, /tools show lists it; members without
// Manage Server are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_commands_gate_tools_behind_phrases() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![Reply::text(&["Noted."]), Reply::text(&["Noted again."])],
    )
    .await;
    let deliberate = json!([{ "name": "deliberate", "type": 1,
        "options": [{ "name": "state", "type": 4, "value": 0 }] }]);
    let refused = content_of(&e.slash(ALICE, "tools", 0, deliberate.clone()).await);
    assert_eq!(refused, "You need the Manage Server permission for this.");
    let on = content_of(&e.slash(MODERATOR, "tools", MANAGE_GUILD, deliberate).await);
    assert!(on.starts_with("Deliberate tool mode is on"), "{on}");
    e.mention(ALICE, "alice", "note the meeting at noon").await;
    e.until("first answer", |e| e.texts(GENERAL).len() == 1)
        .await;
    assert!(!offered(&e.openai.requests()[0]).contains(&"create_reminder".to_owned()));
    let add = json!([{ "name": "phrases", "type": 1, "options": [
        { "name": "action", "type": 4, "value": 0 },
        { "name": "tool", "type": 4, "value": 4 },
        { "name": "phrase", "type": 3, "value": "Note" },
    ] }]);
    let added = content_of(&e.slash(MODERATOR, "tools", MANAGE_GUILD, add).await);
    assert_eq!(added, "Added: \"Note\" offers create_reminder.");
    e.mention(ALICE, "alice", "note the meeting at one").await;
    e.until("second answer", |e| e.texts(GENERAL).len() == 2)
        .await;
    assert!(offered(&e.openai.requests()[1]).contains(&"create_reminder".to_owned()));
    let show = json!([{ "name": "show", "type": 1, "options": [] }]);
    let shown = content_of(&e.slash(MODERATOR, "tools", MANAGE_GUILD, show).await);
    assert!(shown.contains("- create_reminder: note"), "{shown}");
    e.stop().await;
}

// SPEC A2 (review): /drafting sets what Response Drafting checks and this server's reviewer model
// in the same update; the next review asks that model first; a member without Manage Server is
// refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drafting_sets_what_is_checked_and_the_reviewer_model() {
    // A second configured reviewer model, for the server to choose (SPEC C8, A2).
    let e = E2e::start_with(
        Behaviour::succeed(),
        vec![Reply::text(&["Reviewed hello."])],
        |config| config.review.models.push("small-reviewer".into()),
    )
    .await;
    e.set_thought_log().await;
    let options = json!([
        { "name": "state", "type": 4, "value": 0 },
        { "name": "check", "type": 4, "value": 1 },
        { "name": "model", "type": 3, "value": "small-reviewer" },
    ]);
    let refused = content_of(&e.slash(ALICE, "drafting", 0, options.clone()).await);
    assert_eq!(refused, "You need the Manage Server permission for this.");
    let set = content_of(&e.slash(MODERATOR, "drafting", MANAGE_GUILD, options).await);
    assert!(
        set.ends_with(
            "Reviewed: replies; this server's reviewer model: small-reviewer; reviewer prompt: \
             the default one."
        ),
        "{set}"
    );
    let stored = e.settings().await;
    assert!(stored.drafting && stored.review.replies && !stored.review.tool_calls);
    assert_eq!(stored.review.model.as_deref(), Some("small-reviewer"));
    e.openai.push_for("small-reviewer", verdict("pass", &[]));
    e.mention(ALICE, "alice", "hello").await;
    e.until("the reviewed reply", |e| !e.texts(GENERAL).is_empty())
        .await;
    let models: Vec<String> = e
        .openai
        .requests()
        .iter()
        .map(|r| r.model().to_owned())
        .collect();
    assert_eq!(models, ["test-model", "small-reviewer"]);
    e.until("the change on the thought log", |e| {
        e.posted(THOUGHTS)
            .iter()
            .any(|m| m.to_string().contains("model:small-reviewer"))
    })
    .await;
    e.stop().await;
}
