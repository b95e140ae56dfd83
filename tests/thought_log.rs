//! Turn summaries end to end: which finished turns post a "Turn summary" card to the thought log
//! (`/thoughtlog summaries off|problems|all`, `problems` by default), and failure notices never
//! waiting behind summaries. The real serenity client and poise against the fake Discord (its rate
//! limits on), the real provider client against the fake model server, a real SQLite file.

// The shared fakes this binary uses (tests/support/). Public, so that what it leaves
// unused of them is not dead code.
pub mod support {
    pub mod e2e;
    pub mod fake_discord;
    pub mod fake_openai;
    pub mod harness;
}

use std::time::{Duration, Instant};

use persona_bot::domain::ports::SummaryMode;
use persona_bot::tools::ToolError;
use serde_json::json;
use support::e2e::*;
use support::fake_discord::RateLimit;
use support::fake_openai::{Reply, Sse};
use support::harness::Behaviour;

/// An answer with no text: the turn ends in an error (the "no reply" notice).
fn empty() -> Reply {
    Reply::Stream(vec![Sse::finish("stop"), Sse::Done])
}

/// `/thoughtlog summaries mode:<n>` (0 off, 1 problems, 2 all) by the moderator; its answer.
async fn summaries_command(e: &E2e, mode: u64) -> String {
    let options = json!([{
        "name": "summaries", "type": 1,
        "options": [{ "name": "mode", "type": 4, "value": mode }]
    }]);
    let answer = e
        .slash(MODERATOR, "thoughtlog", MANAGE_GUILD, options)
        .await;
    assert_eq!(answer["data"]["flags"], 64, "ephemeral: {answer}");
    content_of(&answer)
}

/// The cards on the thought log whose text holds `what`.
fn cards(e: &E2e, what: &str) -> usize {
    e.posted(THOUGHTS)
        .iter()
        .filter(|m| m.to_string().contains(what))
        .count()
}

// SPEC T11, A4: by default a turn that completed cleanly posts no summary, and one that ended in an
// error posts one; /status says which turns are summarized.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_only_a_troubled_turn_posts_a_summary() {
    let e = E2e::start(
        Behaviour::succeed(),
        vec![Reply::text(&["Hello."]), empty()],
    )
    .await;
    e.set_thought_log().await;
    let status = content_of(&e.slash(ALICE, "status", 0, json!([])).await);
    assert!(
        status.contains("Turn summaries: only turns that did not end cleanly"),
        "{status}"
    );
    e.mention(ALICE, "alice", "hello").await;
    e.until("the answer", |e| e.texts(GENERAL).len() == 1).await;
    e.mention(ALICE, "alice", "and again").await;
    e.until("the error turn's summary", |e| !e.summaries().is_empty())
        .await;
    // Summaries are posted in the order turns end: the clean turn's would have come first.
    let summaries = e.summaries();
    assert_eq!(summaries.len(), 1, "{summaries:?}");
    assert!(summaries[0].contains("error"), "{}", summaries[0]);
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC T11, A2, A4: with `all` every turn posts a summary, with `off` none does; a moderator sets
// it, and /status shows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_posts_every_turn_and_off_none() {
    let replies = vec![
        Reply::text(&["One."]),
        Reply::text(&["Two."]),
        empty(),
        Reply::text(&["Four."]),
    ];
    let e = E2e::start(Behaviour::succeed(), replies).await;
    e.set_thought_log().await;
    let set = summaries_command(&e, 2).await;
    assert_eq!(set, "Turn summaries on the thought log: every turn.");
    assert_eq!(e.settings().await.summaries, SummaryMode::All);
    let status = content_of(&e.slash(ALICE, "status", 0, json!([])).await);
    assert!(status.contains("Turn summaries: every turn"), "{status}");
    e.until("the change on the thought log", |e| {
        cards(e, "/thoughtlog summaries all") == 1
    })
    .await;
    e.mention(ALICE, "alice", "one").await;
    e.until("the first summary", |e| e.summaries().len() == 1)
        .await;
    assert!(
        e.summaries()[0].contains("completed"),
        "{:?}",
        e.summaries()
    );
    e.set_summaries(SummaryMode::Off).await;
    e.mention(ALICE, "alice", "two").await;
    e.until("the second answer", |e| e.texts(GENERAL).len() == 2)
        .await;
    e.mention(ALICE, "alice", "three").await;
    e.until("the error notice", |e| e.texts(GENERAL).len() == 3)
        .await;
    e.set_summaries(SummaryMode::All).await;
    e.mention(ALICE, "alice", "four").await;
    e.until("the fourth answer", |e| e.texts(GENERAL).len() == 4)
        .await;
    // Summaries are posted in the order turns end: the `off` turns' would have come first.
    e.until("the fourth turn's summary", |e| e.summaries().len() >= 2)
        .await;
    let summaries = e.summaries();
    assert_eq!(summaries.len(), 2, "{summaries:?}");
    assert!(
        summaries.iter().all(|s| !s.contains("error")),
        "{summaries:?}"
    );
    e.assert_fakes_used();
    e.stop().await;
}

// SPEC D7, T11 (failure notices first): with a channel allowed two posts in five seconds, a failed
// tool's notice takes one place on the thought log and the turn's summary is dropped rather than
// take the last; the next turn's failure notice (another channel's turn: each turn posts a progress
// line and a reply in its own) is posted at once, not after the window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summary_never_keeps_a_failure_notice_waiting() {
    let failing = Behaviour::Fail(ToolError::Failed {
        code: Some("jammed".into()),
        message: "the widget jammed".into(),
    });
    let replies = vec![
        Reply::call("c1", "probe", r#"{"n":1}"#),
        Reply::text(&["That did not work."]),
        Reply::call("c2", "probe", r#"{"n":2}"#),
        Reply::text(&["Nor did that."]),
    ];
    let e = E2e::start(failing, replies).await;
    e.set_thought_log().await;
    e.set_summaries(SummaryMode::All).await;
    e.discord
        .set_rate_limit(RateLimit::MessageCreate, 2, Duration::from_secs(5));
    e.mention(ALICE, "alice", "use the probe").await;
    e.until("the first answer", |e| e.texts(GENERAL).len() == 1)
        .await;
    let second = Instant::now();
    e.mention_in(PUBLIC_MODS, ALICE, "alice", "once more").await;
    e.until("the second notice", |e| cards(e, "Tool call failed") == 2)
        .await;
    assert!(
        second.elapsed() < Duration::from_secs(3),
        "the notice did not wait for the window: {:?}",
        second.elapsed()
    );
    e.until("the second answer", |e| e.texts(PUBLIC_MODS).len() == 1)
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(e.summaries().is_empty(), "{:?}", e.summaries());
    e.assert_no_429();
    e.assert_fakes_used();
    e.stop().await;
}
