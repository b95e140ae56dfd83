//! The bot's main turn paths against the model servers self-hosters run. The fake OpenAI-compatible
//! server speaks as llama.cpp's `llama-server`, Ollama or vLLM (`Profile`), rendering each script
//! the way that server puts it on the wire: its first chunk, envelopes, tool-call ids and
//! fragments, usage chunk. The real bot runs against it end to end: a streamed reply, a tool call
//! and its follow-up pass, a reply cut into several messages, a DM. Smoke tests check, with plain
//! HTTP, that the error helpers answer what each server answers.

pub mod support {
    pub mod e2e;
    pub mod fake_discord;
    pub mod fake_images;
    pub mod fake_openai;
    pub mod harness;
}

use persona_bot::domain::ports::SummaryMode;
use serde_json::{Value, json};
use support::e2e::*;
use support::fake_openai::{FakeOpenAi, Profile, Reply, Sse};
use support::harness::Behaviour;

/// The bot started against the fake speaking as `profile`.
async fn start(profile: Profile, replies: Vec<Reply>) -> E2e {
    let e = E2e::start(Behaviour::succeed(), replies).await;
    e.openai.set_profile(profile);
    e
}

/// The tool-call id looks like the ones `profile`'s server makes up.
fn id_is_the_servers(profile: Profile, id: &str) -> bool {
    let alnum = |s: &str, n: usize| s.len() == n && s.chars().all(|c| c.is_ascii_alphanumeric());
    let hex = |s: &str| s.len() == 32 && s.chars().all(|c| c.is_ascii_hexdigit());
    match profile {
        Profile::OpenAi => true,
        Profile::LlamaCpp => alnum(id, 32),
        Profile::Ollama => id
            .strip_prefix("call_")
            .is_some_and(|s| alnum(s, 8) && s == s.to_lowercase()),
        Profile::Vllm => id.strip_prefix("chatcmpl-tool-").is_some_and(hex),
    }
}

// A reply streamed in several text chunks is posted as one message, and the usage the server sends
// after the finish (in its own chunk) reaches the turn summary.
async fn streamed_text_reply_is_posted(profile: Profile) {
    let e = start(
        profile,
        vec![Reply::Stream(vec![
            Sse::text("Hello "),
            Sse::text("from "),
            Sse::text("the model."),
            Sse::finish("stop"),
            Sse::usage(321, 3),
            Sse::Done,
        ])],
    )
    .await;
    e.set_thought_log().await;
    e.set_summaries(SummaryMode::All).await;
    e.mention(ALICE, "alice", "hello there").await;
    let summary = |e: &E2e| {
        e.posted(THOUGHTS)
            .iter()
            .map(Value::to_string)
            .find(|m| m.contains("Turn summary"))
    };
    e.until("the turn summary", |e| summary(e).is_some()).await;
    assert_eq!(e.texts(GENERAL), vec!["Hello from the model."]);
    let summary = summary(&e).unwrap();
    assert!(
        summary.contains("321 / 3"),
        "the usage chunk was read: {summary}"
    );
    let request = &e.openai.requests()[0];
    assert_eq!(request.body["stream"], true);
    assert_eq!(request.body["stream_options"]["include_usage"], true);
    e.assert_fakes_used();
    e.stop().await;
}

// A tool call, with the id the server made up, runs, and the follow-up pass's text is posted; the
// second request carries the call and its result, paired by that id.
async fn tool_call_runs(profile: Profile) {
    let arguments = r#"{"fact":"Alice drinks green tea","about":"requester"}"#;
    let e = start(
        profile,
        vec![
            Reply::call("call_1", "remember_fact", arguments),
            Reply::text(&["Noted: ", "green tea."]),
        ],
    )
    .await;
    e.mention(ALICE, "alice", "remember that I drink green tea")
        .await;
    e.until("the follow-up's text", |e| !e.texts(GENERAL).is_empty())
        .await;
    assert_eq!(e.texts(GENERAL), vec!["Noted: green tea."]);
    let requests = e.openai.requests();
    assert_eq!(requests.len(), 2, "the call's pass and the follow-up");
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    let at = messages
        .iter()
        .position(|m| m["role"] == "assistant" && m["tool_calls"].is_array())
        .expect("the call in the history");
    let call = &messages[at]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "remember_fact");
    let sent: Value = serde_json::from_str(call["function"]["arguments"].as_str().unwrap())
        .expect("the joined fragments are JSON");
    assert_eq!(sent, serde_json::from_str::<Value>(arguments).unwrap());
    let id = call["id"].as_str().unwrap();
    assert_eq!(e.openai.call_ids(), vec![id.to_owned()], "the server's id");
    assert!(id_is_the_servers(profile, id), "{id}");
    let result = &messages[at + 1];
    assert_eq!(result["role"], "tool", "{messages:?}");
    assert_eq!(result["tool_call_id"], id, "paired by the same id");
    let content = result["content"].as_str().unwrap();
    assert!(content.contains("\"saved\":true"), "{content}");
    e.assert_fakes_used();
    e.stop().await;
}

// A reply of a short paragraph and a paragraph past Discord's limit, streamed in small chunks, is
// posted as the first paragraph and the long one cut at sentence ends, every message within the
// limit.
async fn long_reply_is_cut(profile: Profile) {
    let long: String = (1..=60)
        .map(|n| format!("Sentence number {n} of the long paragraph goes on a little."))
        .collect::<Vec<_>>()
        .join(" ");
    assert!(long.chars().count() > 3000);
    let text = format!("First paragraph, streamed.\n\n{long}");
    let chars: Vec<char> = text.chars().collect();
    let mut steps: Vec<Sse> = chars
        .chunks(90)
        .map(|c| Sse::text(&c.iter().collect::<String>()))
        .collect();
    steps.extend([Sse::finish("stop"), Sse::Done]);
    let e = start(profile, vec![Reply::Stream(steps)]).await;
    e.mention(ALICE, "alice", "tell me a long story").await;
    let end = "Sentence number 60 of the long paragraph goes on a little.";
    e.until("the whole reply", |e| {
        e.texts(GENERAL).last().is_some_and(|t| t.ends_with(end))
    })
    .await;
    let texts = e.texts(GENERAL);
    assert_eq!(texts[0], "First paragraph, streamed.");
    assert_eq!(
        texts[1..].join(" "),
        long,
        "only white space at the cuts is left out"
    );
    assert!(
        texts.len() >= 3,
        "the long paragraph is cut: {}",
        texts.len()
    );
    for message in &texts {
        assert!(message.chars().count() <= 2000, "{}", message.len());
        assert!(
            message.ends_with('.'),
            "cut at a sentence end: {message:.80}"
        );
    }
    e.assert_fakes_used();
    e.stop().await;
}

// A DM is answered in the DM.
async fn dm_is_answered(profile: Profile) {
    let e = start(profile, vec![Reply::text(&["Hello ", "in private."])]).await;
    let (dm, _) = e.discord.send_dm(ALICE, "hi, privately").await;
    e.until("a DM reply", |e| !e.texts(dm).is_empty()).await;
    assert_eq!(e.texts(dm), vec!["Hello in private."]);
    assert!(e.texts(GENERAL).is_empty());
    e.assert_fakes_used();
    e.stop().await;
}

/// Each turn path, as a named test, for each self-hosted server.
macro_rules! each_server {
    ($($server:ident: $profile:expr;)*) => {$(
        mod $server {
            use super::*;

            const PROFILE: Profile = $profile;

            // A streamed text reply is posted.
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_streamed_text_reply_is_posted() {
                streamed_text_reply_is_posted(PROFILE).await;
            }

            // A tool call runs and the follow-up pass is posted.
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_tool_call_runs() {
                tool_call_runs(PROFILE).await;
            }

            // A reply over two paragraphs, one long, is cut.
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_long_reply_is_cut_into_messages() {
                long_reply_is_cut(PROFILE).await;
            }

            // A DM is answered.
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_dm_is_answered() {
                dm_is_answered(PROFILE).await;
            }
        }
    )*};
}

each_server! {
    llama_cpp: Profile::LlamaCpp;
    ollama: Profile::Ollama;
    vllm: Profile::Vllm;
}

/// A streamed request to the fake, as the bot makes one: its status, content type and body.
async fn ask(fake: &FakeOpenAi, model: &str) -> (u16, String, String) {
    let body = json!({"model": model, "stream": true, "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": "hi"}]});
    persona_bot::app::install_crypto_provider();
    let response = reqwest::Client::new()
        .post(format!("{}/chat/completions", fake.base_url))
        .json(&body)
        .send()
        .await
        .expect("the fake answers");
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, kind, response.text().await.expect("a body"))
}

/// The `data:` payloads of an SSE body, in order.
fn events(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .map(str::to_owned)
        .collect()
}

/// The JSON chunks of an SSE body (all but `[DONE]`).
fn chunks(body: &str) -> Vec<Value> {
    events(body)
        .iter()
        .filter(|e| *e != "[DONE]")
        .map(|e| serde_json::from_str(e).expect("a JSON chunk"))
        .collect()
}

// Each error helper answers with the status and JSON body the server really sends, as plain JSON
// though the request asked for a stream.
#[tokio::test]
async fn error_helpers_answer_each_servers_real_bodies() {
    let fake = FakeOpenAi::start().await;
    let cases = [
        (
            Reply::model_not_found(Profile::LlamaCpp, "x"),
            400,
            json!({"error": {"code": 400, "message": "model not found",
                "type": "invalid_request_error"}}),
        ),
        (
            Reply::model_not_found(Profile::Ollama, "x"),
            404,
            json!({"error": {"message": "model \"x\" not found, try pulling it first",
                "type": "api_error", "param": null, "code": null}}),
        ),
        (
            Reply::model_not_found(Profile::Vllm, "x"),
            404,
            json!({"object": "error", "message": "The model `x` does not exist.",
                "type": "NotFoundError", "param": null, "code": 404}),
        ),
        (
            Reply::model_not_found(Profile::OpenAi, "x"),
            404,
            json!({"error": {"message": "The model `x` does not exist or you do not have access to it.",
                "type": "invalid_request_error", "param": null, "code": "model_not_found"}}),
        ),
    ];
    for (reply, status, body) in cases {
        fake.push(reply);
        let (got, kind, text) = ask(&fake, "x").await;
        assert_eq!(got, status, "{text}");
        assert!(kind.starts_with("application/json"), "{kind}");
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), body);
    }
}

// The context-full helper answers each server's real body; Ollama, which cuts the prompt instead,
// has none.
#[tokio::test]
async fn context_full_helpers_answer_each_servers_real_bodies() {
    let fake = FakeOpenAi::start().await;
    assert!(Reply::context_full(Profile::Ollama, 9000, 1024, 8192).is_none());
    let vllm_message = "This model's maximum context length is 8192 tokens. However, you \
        requested 10024 tokens (9000 in the messages, 1024 in the completion). Please reduce the \
        length of the messages or completion.";
    let cases = [
        (
            Profile::LlamaCpp,
            json!({"error": {"code": 400, "message":
                "request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it",
                "type": "exceed_context_size_error", "n_prompt_tokens": 9000, "n_ctx": 8192}}),
        ),
        (
            Profile::Vllm,
            json!({"object": "error", "message": vllm_message, "type": "BadRequestError",
                "param": null, "code": 400}),
        ),
        (
            Profile::OpenAi,
            json!({"error": {"message": vllm_message, "type": "invalid_request_error",
                "param": "messages", "code": "context_length_exceeded"}}),
        ),
    ];
    for (profile, body) in cases {
        fake.push(Reply::context_full(profile, 9000, 1024, 8192).unwrap());
        let (status, kind, text) = ask(&fake, "x").await;
        assert_eq!(status, 400, "{text}");
        assert!(kind.starts_with("application/json"), "{kind}");
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            body,
            "{profile:?}"
        );
    }
}

// llama.cpp's error inside a stream: the text, then `data: {"error": ...}` (code 500,
// server_error), then nothing: no finish_reason, no [DONE].
#[tokio::test]
async fn a_llama_cpp_stream_error_ends_the_stream() {
    let fake = FakeOpenAi::start().await;
    fake.set_profile(Profile::LlamaCpp);
    fake.push(Reply::stream_error_after("Half an ans"));
    let (status, kind, body) = ask(&fake, "x").await;
    assert_eq!(status, 200);
    assert!(kind.starts_with("text/event-stream"), "{kind}");
    let events = events(&body);
    assert!(!events.iter().any(|e| e == "[DONE]"), "{body}");
    let chunks = chunks(&body);
    assert_eq!(chunks.len(), 3, "role, text, error: {body}");
    assert_eq!(chunks[1]["choices"][0]["delta"]["content"], "Half an ans");
    assert!(
        chunks
            .iter()
            .all(|c| c["choices"][0]["finish_reason"].is_null())
    );
    assert_eq!(
        chunks[2],
        json!({"error": {"code": 500, "message": "Compute error.", "type": "server_error"}})
    );
}

// llama.cpp's stream: a first chunk with the role and null content, every chunk with its envelope,
// a tool call with an id of its own (no `call_`) and its arguments in pieces, the finish, then a
// usage chunk with no choices and `timings`, [DONE].
#[tokio::test]
async fn llama_cpp_streams_as_llama_server_does() {
    let fake = FakeOpenAi::start().await;
    fake.set_profile(Profile::LlamaCpp);
    fake.push(Reply::call("call_1", "remember_fact", r#"{"fact":"tea"}"#));
    let (_, _, body) = ask(&fake, "qwen").await;
    assert_eq!(events(&body).last().map(String::as_str), Some("[DONE]"));
    let chunks = chunks(&body);
    let first = &chunks[0];
    assert_eq!(
        first["choices"][0]["delta"],
        json!({"role": "assistant", "content": null})
    );
    for chunk in &chunks {
        assert!(chunk["id"].as_str().unwrap().starts_with("chatcmpl-"));
        assert_eq!(chunk["id"], first["id"], "one id for the stream");
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["model"], "qwen");
        assert!(chunk["created"].is_u64() && chunk["system_fingerprint"].is_string());
    }
    let head = &chunks[1]["choices"][0]["delta"]["tool_calls"][0];
    let id = head["id"].as_str().unwrap();
    assert!(id_is_the_servers(Profile::LlamaCpp, id), "{id}");
    assert_eq!(fake.call_ids(), vec![id.to_owned()]);
    assert_eq!(
        head["function"],
        json!({"name": "remember_fact", "arguments": ""})
    );
    let (arguments, finish) = arguments_and_finish(&chunks);
    assert_eq!(arguments, r#"{"fact":"tea"}"#);
    assert_eq!(finish, (chunks.len() - 2, "tool_calls".to_owned()));
    let usage = chunks.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert!(usage["usage"]["total_tokens"].is_u64() && usage["timings"]["predicted_n"].is_u64());
}

/// The arguments of call 0's fragments after its head, joined (checking each has the index), and
/// where the finish came, with its reason.
fn arguments_and_finish(chunks: &[Value]) -> (String, (usize, String)) {
    let mut arguments = String::new();
    let mut finish = (0, String::new());
    for (n, chunk) in chunks.iter().enumerate().skip(2) {
        let choice = &chunk["choices"][0];
        if let Some(reason) = choice["finish_reason"].as_str() {
            finish = (n, reason.to_owned());
        }
        for part in choice["delta"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            assert_eq!(part["index"], 0, "{part}");
            assert!(part.get("id").is_none(), "only the head has the id: {part}");
            arguments.push_str(part["function"]["arguments"].as_str().unwrap());
        }
    }
    (arguments, finish)
}

// Ollama's stream: the role in every chunk, a tool call whole in one chunk with no `index` and an
// id `call_` and 8 characters, then finish `tool_calls`, the usage chunk (no choices), [DONE].
#[tokio::test]
async fn ollama_streams_as_ollama_does() {
    let fake = FakeOpenAi::start().await;
    fake.set_profile(Profile::Ollama);
    fake.push(Reply::Stream(vec![
        Sse::fragment(
            Some(0),
            Some("call_1"),
            Some("remember_fact"),
            r#"{"fact":"#,
        ),
        Sse::fragment(Some(0), None, None, r#""tea"}"#),
        Sse::finish("tool_calls"),
        Sse::Done,
    ]));
    let (_, _, body) = ask(&fake, "llama3.2").await;
    assert_eq!(events(&body).last().map(String::as_str), Some("[DONE]"));
    let chunks = chunks(&body);
    assert_eq!(chunks.len(), 3, "call, finish, usage: {body}");
    for chunk in &chunks {
        assert_eq!(chunk["system_fingerprint"], "fp_ollama");
        assert_eq!(chunk["model"], "llama3.2");
    }
    let delta = &chunks[0]["choices"][0]["delta"];
    assert_eq!(
        (&delta["role"], &delta["content"]),
        (&json!("assistant"), &json!(""))
    );
    let call = &delta["tool_calls"][0];
    assert!(call.get("index").is_none(), "{call}");
    assert!(id_is_the_servers(
        Profile::Ollama,
        call["id"].as_str().unwrap()
    ));
    assert_eq!(
        call["function"],
        json!({"name": "remember_fact", "arguments": r#"{"fact":"tea"}"#})
    );
    assert_eq!(chunks[1]["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(chunks[2]["choices"], json!([]));
    assert!(chunks[2]["usage"]["prompt_tokens"].is_u64());
}

// vLLM's stream: a first chunk with the role and "" content, the tool call's name first (with its
// index and id, no arguments), the arguments in pieces, the finish, a usage chunk with no choices,
// [DONE].
#[tokio::test]
async fn vllm_streams_as_vllm_does() {
    let fake = FakeOpenAi::start().await;
    fake.set_profile(Profile::Vllm);
    fake.push(Reply::call("call_1", "remember_fact", r#"{"fact":"tea"}"#));
    let (_, _, body) = ask(&fake, "Qwen/Qwen3-8B").await;
    assert_eq!(events(&body).last().map(String::as_str), Some("[DONE]"));
    let chunks = chunks(&body);
    assert_eq!(
        chunks[0]["choices"][0]["delta"],
        json!({"role": "assistant", "content": ""})
    );
    assert!(chunks.iter().all(|c| c.get("system_fingerprint").is_none()));
    let head = &chunks[1]["choices"][0]["delta"]["tool_calls"][0];
    assert_eq!(head["index"], 0);
    assert_eq!(head["function"], json!({"name": "remember_fact"}));
    assert!(id_is_the_servers(
        Profile::Vllm,
        head["id"].as_str().unwrap()
    ));
    let (arguments, finish) = arguments_and_finish(&chunks);
    assert_eq!(arguments, r#"{"fact":"tea"}"#);
    assert!(chunks.len() >= 6, "the arguments in pieces: {body}");
    assert_eq!(finish, (chunks.len() - 2, "tool_calls".to_owned()));
    assert_eq!(chunks.last().unwrap()["choices"], json!([]));
}
