//! Turns end to end through the real provider client (async-openai, our wire types, the no-retry
//! transport) against the fake OpenAI-compatible server on 127.0.0.1: streaming, tool-call
//! fragments and the provider quirks, timeouts, key rotation and model fallback, and `/kill`
//! dropping the HTTP request.

// The shared fakes this binary uses (tests/support/). Public, so that what it leaves
// unused of them is not dead code.
pub mod support {
    pub mod bot;
    pub mod fake_openai;
    pub mod harness;
}

use std::time::Duration;

use persona_bot::config::{Config, ProviderConfig};
use persona_bot::domain::ports::{ExpressionSend, Sticker};
use persona_bot::domain::turn::TurnStatus;
use persona_bot::engine::orchestrator::KillReport;
use persona_bot::engine::passes::TurnEnd;
use persona_bot::provider::OpenAiProvider;
use persona_bot::testkit::Fakes;
use secrecy::SecretString;
use serde_json::json;
use support::bot::{ALICE, BOB, Bot, CHANNEL, message};
use support::fake_openai::{FakeOpenAi, Profile, Reply, Sse};
use support::harness::{Behaviour, Harness};

fn provider(fake: &FakeOpenAi, models: &[&str], keys: &[&str]) -> OpenAiProvider {
    provider_with(fake, models, keys, |_| {})
}

fn provider_with(
    fake: &FakeOpenAi,
    models: &[&str],
    keys: &[&str],
    edit: impl FnOnce(&mut ProviderConfig),
) -> OpenAiProvider {
    let mut config: ProviderConfig = Config::shipped_defaults().provider;
    config.base_url = fake.base_url.clone();
    config.models = models.iter().map(|m| (*m).to_owned()).collect();
    config.first_token_timeout_secs = 1;
    config.idle_timeout_secs = 1;
    let keys: Vec<SecretString> = keys
        .iter()
        .map(|k| SecretString::from(k.to_string()))
        .collect();
    edit(&mut config);
    persona_bot::app::install_crypto_provider();
    OpenAiProvider::new(config, &keys).expect("provider")
}

/// The model of each request the fake got, in order.
fn models_asked(fake: &FakeOpenAi) -> Vec<String> {
    fake.requests()
        .iter()
        .map(|r| r.model().to_owned())
        .collect()
}

fn bot(fake: &FakeOpenAi, models: &[&str], keys: &[&str]) -> Bot<OpenAiProvider> {
    Bot::new(provider(fake, models, keys))
}

fn bot_with(
    fake: &FakeOpenAi,
    keys: &[&str],
    probe: Behaviour,
    fakes: Fakes,
) -> Bot<OpenAiProvider> {
    let h = Harness::build(fakes, probe, |r| r);
    Bot::with_queue(h, provider(fake, &["model-a"], keys), Default::default())
}

// SPEC C4, C9: a turn runs end to end: the request carries the persona, the trigger, the tools
// and parallel_tool_calls=false; the streamed text reaches the channel cut at paragraphs.
#[tokio::test]
async fn a_turn_runs_end_to_end_through_the_real_client() {
    let fake = FakeOpenAi::start().await;
    fake.push(Reply::Stream(vec![
        Sse::text("Hello "),
        Sse::text("there!\n\nSecond"),
        Sse::text(" paragraph."),
        Sse::finish("stop"),
        Sse::usage(12, 5),
        Sse::Done,
    ]));
    let mut bot = bot(&fake, &["model-a"], &["key-one"]);
    bot.say(message(1, ALICE, "hi aria")).await;
    let finished = bot.next().await;
    assert_eq!(finished.report.status, TurnStatus::Completed);
    assert_eq!(finished.report.usage.prompt, 12);
    assert_eq!(bot.transcript(), "Hello there!\n\nSecond paragraph.");
    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.key(), "key-one");
    assert_eq!(r.model(), "model-a");
    assert_eq!(r.body["stream"], true);
    assert_eq!(r.body["parallel_tool_calls"], false);
    let offered: Vec<&str> = r.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    // SPEC C12: only tools that can do something here (no image backend, no stickers, no facts
    // and no older history in this channel; a message to react to).
    assert_eq!(
        offered,
        [
            "react_to_message",
            "update_short_term_memory",
            "remember_fact",
            "create_reminder",
            "probe"
        ]
    );
    let messages = r.body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert!(messages[0]["content"].as_str().unwrap().contains("Aria"));
    assert_eq!(messages.last().unwrap()["content"], "[alice] hi aria");
    assert_eq!(fake.unexpected(), 0);
}

// SPEC T3, C9: fragments join by index, the id comes from the first chunk, and the tool runs
// with the joined arguments; the next pass sees its result.
#[tokio::test]
async fn tool_call_fragments_are_joined_and_the_tool_runs() {
    let fake = FakeOpenAi::start().await;
    fake.push(Reply::Stream(vec![
        Sse::text("Let me check."),
        Sse::fragment(Some(0), Some("call_abc"), Some("probe"), ""),
        Sse::fragment(Some(0), None, None, "{\"n\""),
        Sse::fragment(Some(0), None, None, ":42}"),
        Sse::finish("tool_calls"),
        Sse::Done,
    ]));
    fake.push(Reply::text(&["Checked."]));
    let mut bot = bot(&fake, &["m"], &["k"]);
    bot.say(message(1, ALICE, "probe it")).await;
    assert_eq!(bot.next().await.report.status, TurnStatus::Completed);
    assert_eq!(bot.h.probe.runs(), 1);
    assert_eq!(
        *bot.h.probe.last_args.lock().unwrap(),
        Some(json!({"n": 42}))
    );
    let second = &fake.requests()[1].body["messages"];
    let assistant = second
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_calls"].is_array())
        .unwrap();
    assert_eq!(assistant["tool_calls"][0]["id"], "call_abc");
    assert_eq!(assistant["content"], "Let me check.");
    let tool = second
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert_eq!(tool["tool_call_id"], "call_abc");
    assert!(tool["content"].as_str().unwrap().contains("completed"));
    assert_eq!(bot.transcript(), "Let me check.\n\nChecked.");
}

// Provider quirks: no `index`, the id only in the first fragment, and `stop` (not
// `tool_calls`) ending a tool call: the call is decided from the fragments.
#[tokio::test]
async fn fragments_without_index_and_a_stop_finish_still_make_a_call() {
    let fake = FakeOpenAi::start().await;
    fake.push(Reply::Stream(vec![
        Sse::fragment(None, Some("c1"), Some("probe"), "{\"n\":"),
        Sse::fragment(None, None, None, "7}"),
        Sse::finish("stop"),
        Sse::Done,
    ]));
    fake.push(Reply::text(&["ok."]));
    let mut bot = bot(&fake, &["m"], &["k"]);
    bot.say(message(1, ALICE, "go")).await;
    bot.next().await;
    assert_eq!(
        *bot.h.probe.last_args.lock().unwrap(),
        Some(json!({"n": 7}))
    );
}

// Provider quirks: unknown finish reasons ("", "eos_token") do not break the stream.
#[tokio::test]
async fn odd_finish_reasons_do_not_break_the_stream() {
    let fake = FakeOpenAi::start().await;
    fake.push(Reply::Stream(vec![
        Sse::text("One."),
        Sse::finish(""),
        Sse::Done,
    ]));
    fake.push(Reply::Stream(vec![
        Sse::text("Two."),
        Sse::finish("eos_token"),
        Sse::Done,
    ]));
    let mut bot = bot(&fake, &["m"], &["k"]);
    bot.say(message(1, ALICE, "a")).await;
    bot.say(message(2, BOB, "b")).await;
    assert_eq!(bot.next().await.report.status, TurnStatus::Completed);
    assert_eq!(bot.next().await.report.status, TurnStatus::Completed);
    assert_eq!(bot.transcript(), "One.\n\nTwo.");
}

// SPEC T3: a stream that ends without [DONE] or any finish reason cuts the arguments: the call
// is refused as truncated, never dispatched.
#[tokio::test]
async fn a_stream_cut_without_finish_flags_the_call_truncated() {
    let fake = FakeOpenAi::start().await;
    fake.push(Reply::Stream(vec![Sse::fragment(
        Some(0),
        Some("c1"),
        Some("probe"),
        "{\"n\":1}",
    )]));
    fake.push(Reply::text(&["Sorry."]));
    let mut bot = bot(&fake, &["m"], &["k"]);
    bot.say(message(1, ALICE, "go")).await;
    bot.next().await;
    assert_eq!(bot.h.probe.runs(), 0, "never dispatched");
    let tool = fake.requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .unwrap();
    assert!(
        tool["content"]
            .as_str()
            .unwrap()
            .contains("truncated_arguments"),
        "{tool}"
    );
}

// SPEC T3: `finish_reason: length` flags the arguments truncated even when they happen to
// parse as complete JSON: the call is never dispatched, and the model is told to resend it.
#[tokio::test]
async fn finish_length_flags_even_parseable_arguments_truncated() {
    let fake = FakeOpenAi::start().await;
    fake.push(Reply::Stream(vec![
        Sse::fragment(Some(0), Some("c1"), Some("probe"), "{\"n\":1}"),
        Sse::finish("length"),
        Sse::Done,
    ]));
    fake.push(Reply::text(&["Sorry."]));
    let mut bot = bot(&fake, &["m"], &["k"]);
    bot.say(message(1, ALICE, "go")).await;
    bot.next().await;
    assert_eq!(bot.h.probe.runs(), 0, "never dispatched");
    let tool = fake.requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .unwrap();
    assert!(
        tool["content"]
            .as_str()
            .unwrap()
            .contains("truncated_arguments"),
        "{tool}"
    );
}

// SPEC C11, R4, T9: a 429 whose message says the balance is exhausted rotates to the next key,
// and the sticker the turn already sent is not sent again when the model repeats the call.
#[tokio::test]
async fn exhausted_balance_429_rotates_the_key_and_the_sticker_is_not_resent() {
    let fake = FakeOpenAi::start().await;
    let fakes = Fakes::default().with_stickers(vec![Sticker {
        id: 5,
        name: "wave".into(),
    }]);
    fakes.sink.script_expression(ExpressionSend::Confirmed);
    fake.push(Reply::call(
        "c1",
        "select_sticker_for_response",
        r#"{"name":"wave"}"#,
    ));
    fake.push(Reply::error(
        429,
        "You exceeded your current quota, please check your plan and billing details.",
        "insufficient_quota",
    ));
    fake.push(Reply::call(
        "c2",
        "select_sticker_for_response",
        r#"{"name":"wave"}"#,
    ));
    fake.push(Reply::text(&["Waved at you!"]));
    let mut bot = bot_with(&fake, &["key-a", "key-b"], Behaviour::succeed(), fakes);
    bot.say(message(1, ALICE, "wave")).await;
    assert_eq!(bot.next().await.report.status, TurnStatus::Completed);
    let keys: Vec<String> = fake.requests().iter().map(|r| r.key().to_owned()).collect();
    assert_eq!(keys, vec!["key-a", "key-a", "key-b", "key-b"]);
    assert_eq!(bot.h.fakes.sink.stickers().len(), 1, "one sticker");
    assert_eq!(bot.transcript(), "Waved at you!");
    assert_eq!(fake.unexpected(), 0);
}

// SPEC C11: a cooled key is used last by the next turn.
#[tokio::test]
async fn a_rate_limited_key_rests_for_the_next_turn() {
    let fake = FakeOpenAi::start().await;
    fake.push(Reply::error(
        429,
        "Rate limit reached for requests",
        "rate_limit_exceeded",
    ));
    fake.push(Reply::text(&["First."]));
    fake.push(Reply::text(&["Second."]));
    let mut bot = bot(&fake, &["m"], &["key-a", "key-b"]);
    bot.say(message(1, ALICE, "a")).await;
    bot.next().await;
    bot.say(message(2, ALICE, "b")).await;
    bot.next().await;
    let keys: Vec<String> = fake.requests().iter().map(|r| r.key().to_owned()).collect();
    assert_eq!(keys, vec!["key-a", "key-b", "key-b"], "key-a rests");
}

// SPEC C11: an unknown model (404) falls back to the next model in the list.
#[tokio::test]
async fn unknown_model_falls_back_to_the_next_one() {
    let fake = FakeOpenAi::start().await;
    fake.push(Reply::error(
        404,
        "The model `gone-model` does not exist",
        "model_not_found",
    ));
    fake.push(Reply::text(&["From the fallback."]));
    let mut bot = bot(&fake, &["gone-model", "backup-model"], &["k"]);
    bot.say(message(1, ALICE, "hi")).await;
    bot.next().await;
    let models = models_asked(&fake);
    assert_eq!(models, vec!["gone-model", "backup-model"]);
    assert_eq!(bot.transcript(), "From the fallback.");
}

// llama.cpp's 400 for an unknown model is a reason to try the next model, not an invalid request
// the user should rephrase.
#[tokio::test]
async fn llama_cpp_unknown_model_falls_back_to_the_next_one() {
    let fake = FakeOpenAi::start().await;
    fake.push(Reply::Status(
        400,
        json!({"error": {"code": 400, "message": "model 'no-such-model' not found",
            "type": "invalid_request_error"}})
        .to_string(),
    ));
    fake.push(Reply::text(&["From the model that is there."]));
    let mut bot = bot(&fake, &["no-such-model", "smollm2"], &["k"]);
    bot.say(message(1, ALICE, "hi")).await;
    assert_eq!(bot.next().await.report.status, TurnStatus::Completed);
    let models = models_asked(&fake);
    assert_eq!(models, vec!["no-such-model", "smollm2"]);
    assert_eq!(bot.transcript(), "From the model that is there.");
}

// An error event inside the stream (llama.cpp: `data: {"error": ...}`, then the end without
// finish_reason or [DONE]) is the server's failure, classed by its code, not a dropped connection;
// with nothing else to try the user is told it is a server error.
#[tokio::test]
async fn an_error_inside_the_stream_is_a_server_error() {
    let fake = FakeOpenAi::start().await;
    fake.push(Reply::Stream(vec![
        Sse::text("Partly "),
        Sse::Data(
            json!({"error": {"code": 500, "message": "llama_decode failed",
            "type": "server_error"}}),
        ),
    ]));
    let mut bot = bot(&fake, &["m"], &["k"]);
    bot.say(message(1, ALICE, "hi")).await;
    let finished = bot.next().await;
    assert_eq!(
        finished.report.end,
        TurnEnd::ProviderFailed {
            code: "server_error"
        }
    );
}

// A reply the token limit cut (`finish_reason: length`) ends with a note saying so, and the thought
// log records it.
#[tokio::test]
async fn a_reply_cut_by_the_token_limit_says_so() {
    let fake = FakeOpenAi::start().await;
    fake.push(Reply::Stream(vec![
        Sse::text("The three reasons are: first, the"),
        Sse::finish("length"),
        Sse::Done,
    ]));
    let mut bot = bot(&fake, &["m"], &["k"]);
    bot.say(message(1, ALICE, "why?")).await;
    assert_eq!(bot.next().await.report.status, TurnStatus::Completed);
    assert_eq!(
        bot.transcript(),
        "The three reasons are: first, the\n\n*(This reply reached its length limit and stops \
         here.)*"
    );
    let notices = bot.h.fakes.thought_log.notices();
    assert!(
        notices
            .iter()
            .any(|(_, n)| matches!(n, persona_bot::domain::thought_log::Notice::ReplyCut { .. })),
        "{notices:?}"
    );
}

// SPEC C12 (strict templates): the pieces of one posted reply go back as one assistant message and
// messages of several people in a row as one user message, so roles alternate after the one system
// message, as llama.cpp's stricter chat templates demand.
#[tokio::test]
async fn requests_alternate_roles_after_one_system_message() {
    use persona_bot::domain::ports::HistoryMessage;
    use persona_bot::domain::scope::MessageId;
    let fake = FakeOpenAi::start().await;
    fake.push(Reply::text(&["Sure."]));
    // Newest first, as Discord gives history.
    let history: Vec<HistoryMessage> = [
        (4, "bob", false, "me too"),
        (3, "Aria", true, "piece two"),
        (2, "Aria", true, "piece one"),
        (1, "alice", false, "tell me a story"),
    ]
    .into_iter()
    .map(|(id, author, from_bot, content)| HistoryMessage {
        id: MessageId(id),
        author: author.into(),
        from_bot,
        content: content.into(),
        at_ms: 0,
        attachments: Vec::new(),
    })
    .collect();
    let mut bot = bot_with(
        &fake,
        &["k"],
        Behaviour::succeed(),
        Fakes::default().with_history(history),
    );
    bot.say(message(9, ALICE, "another one")).await;
    bot.next().await;
    let body = &fake.requests()[0].body;
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    assert_eq!(body["messages"][2]["content"], "piece one\n\npiece two");
    assert_eq!(
        body["messages"][3]["content"],
        "[bob] me too\n\n[alice] another one"
    );
}

/// Thirty history messages of about 130 tokens each, newest first, numbered 1 (oldest) to 30.
fn long_history() -> Vec<persona_bot::domain::ports::HistoryMessage> {
    (1..=30u64)
        .rev()
        .map(|n| persona_bot::domain::ports::HistoryMessage {
            id: persona_bot::domain::scope::MessageId(n),
            author: "bob".into(),
            from_bot: false,
            content: format!("message {n:02} {}", "words ".repeat(64)),
            at_ms: 0,
            attachments: Vec::new(),
        })
        .collect()
}

fn trimmed_notices(bot: &Bot<OpenAiProvider>) -> Vec<u32> {
    bot.h
        .fakes
        .thought_log
        .notices()
        .into_iter()
        .filter_map(|(_, n)| match n {
            persona_bot::domain::thought_log::Notice::ContextTrimmed { left_out, .. } => {
                Some(left_out)
            }
            _ => None,
        })
        .collect()
}

// With a model's context window configured, the oldest history is left out until the request fits
// (less the reply's max_tokens); the newest history, the system prompt and the trigger stay; the
// thought log says how many were left out.
#[tokio::test]
async fn history_is_trimmed_to_a_configured_context_window() {
    let fake = FakeOpenAi::start().await;
    fake.push(Reply::text(&["Fits."]));
    let provider = provider_with(&fake, &["smollm2"], &["k"], |c| {
        c.context_tokens.insert("smollm2".into(), 4096);
    });
    let h = Harness::build(
        Fakes::default().with_history(long_history()),
        Behaviour::succeed(),
        |r| r,
    );
    let mut bot = Bot::with_queue(h, provider, Default::default());
    bot.say(message(99, ALICE, "and now?")).await;
    assert_eq!(bot.next().await.report.status, TurnStatus::Completed);
    let sent = fake.requests()[0].body["messages"].to_string();
    assert!(
        sent.contains("message 30") && sent.contains("and now?"),
        "{sent:.300}"
    );
    assert!(!sent.contains("message 01"), "the oldest is left out");
    let left_out = trimmed_notices(&bot);
    assert_eq!(left_out.len(), 1, "one notice");
    assert!((1..30).contains(&left_out[0]), "{left_out:?}");
    assert!(!sent.contains(&format!("message {:02}", left_out[0])));
    assert!(sent.contains(&format!("message {:02}", left_out[0] + 1)));
}

// llama.cpp's "context full" (with no window configured) is answered by asking the same model once
// more with about half the history, and the reply is posted.
#[tokio::test]
async fn a_full_context_is_retried_once_with_half_the_history() {
    let fake = FakeOpenAi::start().await;
    fake.set_profile(Profile::LlamaCpp);
    fake.push(Reply::context_full(Profile::LlamaCpp, 4568, 1024, 4096).unwrap());
    fake.push(Reply::text(&["Fits now."]));
    let h = Harness::build(
        Fakes::default().with_history(long_history()),
        Behaviour::succeed(),
        |r| r,
    );
    let mut bot = Bot::with_queue(h, provider(&fake, &["smollm2"], &["k"]), Default::default());
    bot.say(message(99, ALICE, "and now?")).await;
    assert_eq!(bot.next().await.report.status, TurnStatus::Completed);
    assert_eq!(bot.transcript(), "Fits now.");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "one retry, on the same model");
    assert_eq!(requests[1].model(), "smollm2");
    let size = |n: usize| requests[n].body["messages"].to_string().len();
    assert!(size(1) < size(0) * 3 / 4, "{} then {}", size(0), size(1));
    let second = requests[1].body["messages"].to_string();
    assert!(second.contains("and now?"));
    // Half, not all: the newest history stays, the oldest goes.
    assert!(
        second.contains("message 30") && !second.contains("message 01"),
        "{second:.300}"
    );
    assert_eq!(trimmed_notices(&bot).len(), 1);
}

// A model still "full" after the shorter retry is left for the next model, which gets the whole
// history again.
#[tokio::test]
async fn a_context_still_full_goes_to_the_next_model() {
    let fake = FakeOpenAi::start().await;
    fake.set_profile(Profile::LlamaCpp);
    for _ in 0..2 {
        fake.push(Reply::context_full(Profile::LlamaCpp, 4568, 1024, 4096).unwrap());
    }
    fake.push(Reply::text(&["From the big model."]));
    let h = Harness::build(
        Fakes::default().with_history(long_history()),
        Behaviour::succeed(),
        |r| r,
    );
    let provider = provider(&fake, &["small", "big"], &["k"]);
    let mut bot = Bot::with_queue(h, provider, Default::default());
    bot.say(message(99, ALICE, "and now?")).await;
    assert_eq!(bot.next().await.report.status, TurnStatus::Completed);
    let models = models_asked(&fake);
    assert_eq!(models, ["small", "small", "big"]);
    assert!(
        fake.requests()[2].body["messages"]
            .to_string()
            .contains("message 01")
    );
}

// The client does not retry by itself: one 500 with one key and one model is one request, and
// the user sees one localized error.
#[tokio::test]
async fn the_client_does_not_retry_on_its_own() {
    let fake = FakeOpenAi::start().await;
    fake.push(Reply::Status(500, "upstream exploded".into()));
    let mut bot = bot(&fake, &["m"], &["k"]);
    bot.say(message(1, ALICE, "hi")).await;
    let finished = bot.next().await;
    assert_eq!(
        finished.report.end,
        TurnEnd::ProviderFailed {
            code: "server_error"
        }
    );
    assert_eq!(fake.requests().len(), 1);
    let texts = bot.h.fakes.sink.texts();
    assert_eq!(texts.len(), 1);
    assert!(
        !texts[0].text.contains("exploded"),
        "no raw provider text: {}",
        texts[0].text
    );
}

// SPEC C11: a 500, then success on the next attempt.
#[tokio::test]
async fn a_server_error_is_retried_on_the_next_attempt() {
    let fake = FakeOpenAi::start().await;
    fake.push(Reply::Status(503, "Service Unavailable".into()));
    fake.push(Reply::text(&["Recovered."]));
    let mut bot = bot(&fake, &["m"], &["k1", "k2"]);
    bot.say(message(1, ALICE, "hi")).await;
    assert_eq!(bot.next().await.report.status, TurnStatus::Completed);
    assert_eq!(bot.transcript(), "Recovered.");
}

// SPEC C11: a 500 with a 50 MB body is read only as far as its message: the error is classified
// from the message's beginning (an exhausted balance, though the status says 500), the turn answers
// with the localized error, and the server never hands out the whole body.
#[tokio::test]
async fn a_huge_error_body_is_not_read_whole_and_the_turn_answers() {
    let fake = FakeOpenAi::start().await;
    fake.push(Reply::Huge {
        status: 500,
        prefix: r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota"},"padding":""#.into(),
        size: 50_000_000,
    });
    let mut bot = bot(&fake, &["m"], &["k"]);
    let started = std::time::Instant::now();
    bot.say(message(1, ALICE, "hi")).await;
    let finished = bot.next().await;
    assert_eq!(
        finished.report.end,
        TurnEnd::ProviderFailed {
            code: "insufficient_balance"
        }
    );
    assert!(
        bot.transcript().contains("run out of credit"),
        "{}",
        bot.transcript()
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let sent = fake.padding_sent();
    assert!(sent < 10_000_000, "the server handed out {sent} bytes");
}

/// Runs one turn against a provider whose streams are bounded to 64 KiB and 2 s, and checks it
/// ends quickly as `reply_too_long` with the localized reason, the stream dropped.
async fn assert_cut_as_too_long(fake: &FakeOpenAi) -> String {
    let provider = provider_with(fake, &["m"], &["k"], |c| {
        c.stream_max_bytes = 64 * 1024;
        c.stream_max_secs = 2;
    });
    let mut bot = Bot::new(provider);
    let started = std::time::Instant::now();
    bot.say(message(1, ALICE, "talk")).await;
    let finished = bot.next().await;
    assert_eq!(
        finished.report.end,
        TurnEnd::ProviderFailed {
            code: "reply_too_long"
        }
    );
    assert!(started.elapsed() < Duration::from_secs(5), "not hung");
    let transcript = bot.transcript();
    assert!(
        transcript.ends_with(
            "I couldn't reply just now. The AI service's answer ran far too long, so I stopped it.\n\
             - Try again, or ask for a shorter answer."
        ),
        "{transcript}"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while fake.dropped_streams() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the stream was not dropped"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    transcript
}

// SPEC C11: an answer past provider.stream_max_bytes is cut: the pass fails as reply_too_long
// (another model would be tried), the user is told why, and what came before the cut stays sent.
#[tokio::test]
async fn a_stream_past_the_byte_bound_is_cut_with_a_visible_reason() {
    let fake = FakeOpenAi::start().await;
    let mut steps: Vec<Sse> = (0..2000)
        .map(|n| Sse::text(&format!("Sentence number {n} goes on and on. ")))
        .collect();
    // Never finished: without the bound the pass would end as an idle timeout instead.
    steps.push(Sse::Hang);
    fake.push(Reply::Stream(steps));
    let transcript = assert_cut_as_too_long(&fake).await;
    assert!(transcript.starts_with("Sentence number 0"), "{transcript}");
    assert!(!transcript.contains("number 1999"), "{transcript}");
}

// One endless SSE line (no newline, so no chunk ever completes) is cut at the byte bound too,
// rather than buffered whole while the idle timeout waits for a chunk.
#[tokio::test]
async fn one_endless_line_is_cut_at_the_byte_bound() {
    let fake = FakeOpenAi::start().await;
    let line = format!(
        "data: {{\"choices\":[{{\"delta\":{{\"content\":\"{}",
        "a".repeat(1 << 20)
    );
    fake.push(Reply::Stream(vec![Sse::Raw(line), Sse::Hang]));
    let transcript = assert_cut_as_too_long(&fake).await;
    assert!(!transcript.contains("aaaa"), "{transcript}");
}

// An answer still going after provider.stream_max_secs is cut, although every chunk comes well
// within the idle timeout.
#[tokio::test]
async fn a_stream_past_the_time_bound_is_cut_with_a_visible_reason() {
    let fake = FakeOpenAi::start().await;
    let mut steps = Vec::new();
    for n in 0..40 {
        steps.push(Sse::text(&format!("Part {n}.\n\n")));
        steps.push(Sse::Delay(Duration::from_millis(200)));
    }
    steps.push(Sse::finish("stop"));
    steps.push(Sse::Done);
    fake.push(Reply::Stream(steps));
    let transcript = assert_cut_as_too_long(&fake).await;
    assert!(transcript.starts_with("Part 0."), "{transcript}");
    assert!(!transcript.contains("Part 39."), "{transcript}");
}

// SPEC C11: the first-token timeout ends a hung request.
#[tokio::test]
async fn first_token_timeout_ends_a_hung_request() {
    let fake = FakeOpenAi::start().await;
    fake.push(Reply::Hang);
    let mut bot = bot(&fake, &["m"], &["k"]);
    let started = std::time::Instant::now();
    bot.say(message(1, ALICE, "hi")).await;
    let finished = bot.next().await;
    assert_eq!(
        finished.report.end,
        TurnEnd::ProviderFailed { code: "timeout" }
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

// SPEC C11: the idle timeout ends a stream that stalls mid-way; the next key continues without
// repeating what was sent.
#[tokio::test]
async fn idle_timeout_ends_a_stalled_stream_and_the_next_attempt_continues() {
    let fake = FakeOpenAi::start().await;
    fake.push(Reply::Stream(vec![
        Sse::text("Sent part.\n\n"),
        Sse::text("lost"),
        Sse::Hang,
    ]));
    fake.push(Reply::text(&["Rest."]));
    let mut bot = bot(&fake, &["m"], &["k1", "k2"]);
    bot.say(message(1, ALICE, "hi")).await;
    assert_eq!(bot.next().await.report.status, TurnStatus::Completed);
    assert_eq!(bot.transcript(), "Sent part.\n\nRest.");
    let retry = &fake.requests()[1].body["messages"];
    assert!(retry.to_string().contains("Continue from where it stopped"));
}

// A stream broken mid-way (connection aborted) is a network failure, retried.
#[tokio::test]
async fn an_aborted_stream_is_retried() {
    let fake = FakeOpenAi::start().await;
    fake.push(Reply::Stream(vec![Sse::text("Par"), Sse::Abort]));
    fake.push(Reply::text(&["Whole answer."]));
    let mut bot = bot(&fake, &["m"], &["k1", "k2"]);
    bot.say(message(1, ALICE, "hi")).await;
    assert_eq!(bot.next().await.report.status, TurnStatus::Completed);
    assert_eq!(bot.transcript(), "Whole answer.");
}

// SPEC C6: /kill during streaming drops the HTTP request (the server sees the stream go).
#[tokio::test]
async fn kill_during_streaming_drops_the_http_request() {
    let fake = FakeOpenAi::start().await;
    // A paragraph long enough to go out as it completes (a short one waits for the next).
    let before = format!(
        "Before the kill. {}",
        "Still before. ".repeat(25).trim_end()
    );
    fake.push(Reply::Stream(vec![
        Sse::text(&format!("{before}\n\n")),
        Sse::Delay(Duration::from_millis(300)),
        Sse::text("After."),
        Sse::Delay(Duration::from_secs(30)),
        Sse::finish("stop"),
        Sse::Done,
    ]));
    let mut bot = bot(&fake, &["m"], &["k"]);
    bot.say(message(1, ALICE, "talk")).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while bot.h.fakes.sink.texts().is_empty() {
        assert!(std::time::Instant::now() < deadline, "no text arrived");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let report = bot.orchestrator.kill(CHANNEL, ALICE, false).await;
    assert!(
        matches!(
            report,
            KillReport::Stopped {
                turn_stopped: true,
                ..
            }
        ),
        "{report:?}"
    );
    assert_eq!(bot.next().await.report.status, TurnStatus::StoppedByUser);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while fake.dropped_streams() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never saw the request dropped"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(bot.transcript(), before);
}
