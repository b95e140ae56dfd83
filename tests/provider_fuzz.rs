//! Property tests, a bad-input corpus for the provider client: arbitrary chunk JSON, arbitrary SSE
//! bodies through the real line splitting (async-openai's event stream) and our chunk decoding and
//! assembly, and arbitrary tool-call fragment sequences. Nothing panics, every stream ends, and
//! what is kept stays bounded by what came in.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use futures::StreamExt;
use persona_bot::domain::ports::{ModelEvent, ModelStream};
use persona_bot::provider::assemble::{self, Assembler, MAX_CALLS_PER_PASS};
use persona_bot::provider::transport::{CutReport, StreamLimits, bounded_body};
use persona_bot::provider::wire::{Choice, Chunk, Delta, FunctionDelta, ToolCallDelta};
use proptest::prelude::*;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Strategies

/// Any JSON value, a few levels deep, with the keys a chunk has mixed in.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        any::<String>().prop_map(Value::String),
        Just(json!(-1)),
        Just(json!(4_000_000_000u64)),
        Just(json!(u64::MAX)),
    ];
    let key = prop_oneof![
        Just("choices".to_owned()),
        Just("delta".to_owned()),
        Just("content".to_owned()),
        Just("tool_calls".to_owned()),
        Just("index".to_owned()),
        Just("id".to_owned()),
        Just("function".to_owned()),
        Just("name".to_owned()),
        Just("arguments".to_owned()),
        Just("finish_reason".to_owned()),
        Just("usage".to_owned()),
        Just("error".to_owned()),
        any::<String>(),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(key.clone(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn index() -> impl Strategy<Value = Option<usize>> {
    prop_oneof![
        Just(None),
        (0usize..4).prop_map(Some),
        Just(Some(4_000_000_000)),
        Just(Some(usize::MAX)),
        Just(Some(usize::MAX - 1)),
        any::<usize>().prop_map(Some),
    ]
}

fn id() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        Just(Some(String::new())),
        Just(Some("call_a".to_owned())),
        Just(Some("call_b".to_owned())),
        "[a-z0-9_]{1,8}".prop_map(Some),
    ]
}

fn fragment() -> impl Strategy<Value = ToolCallDelta> {
    let text = || {
        prop_oneof![
            Just(None),
            Just(Some(String::new())),
            Just(Some("{\"n\":".to_owned())),
            Just(Some("1}".to_owned())),
            Just(Some("probe".to_owned())),
            any::<String>().prop_map(Some),
        ]
    };
    (index(), id(), prop::option::of((text(), text()))).prop_map(|(index, id, function)| {
        ToolCallDelta {
            index,
            id,
            function: function.map(|(name, arguments)| FunctionDelta { name, arguments }),
        }
    })
}

fn chunk_of(fragments: Vec<ToolCallDelta>, finish: Option<String>) -> Chunk {
    Chunk {
        choices: vec![Choice {
            delta: Some(Delta {
                content: None,
                tool_calls: Some(fragments),
            }),
            finish_reason: finish,
        }],
        ..Chunk::default()
    }
}

/// One SSE event or piece of noise, as bytes.
fn sse_piece() -> impl Strategy<Value = Vec<u8>> {
    fn data(v: Value) -> Vec<u8> {
        format!("data: {v}\n\n").into_bytes()
    }
    prop_oneof![
        "[ -~]{0,40}".prop_map(|t| data(json!({"choices":[{"delta":{"content": t}}]}))),
        (index(), id(), "[ -~]{0,12}").prop_map(|(i, id, args)| {
            let mut call = json!({"function": {"name": "probe", "arguments": args}});
            if let Some(i) = i {
                call["index"] = json!(i);
            }
            if let Some(id) = id {
                call["id"] = json!(id);
            }
            data(json!({"choices":[{"delta":{"tool_calls":[call]}}]}))
        }),
        json_value().prop_map(data),
        Just(data(
            json!({"choices":[{"delta":{},"finish_reason":"tool_calls"}]})
        )),
        Just(b"data: [DONE]\n\n".to_vec()),
        Just(b": keep-alive comment\n\n".to_vec()),
        Just(b"event: keepalive\ndata: {}\n\n".to_vec()),
        Just(b"data: {\"choices\":[{\"delta\":{\"content\":\"cut".to_vec()),
        Just(b"\r\n\r\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\xef\xbb\xbf".to_vec()),
        Just(b"data: \xff\xfe not utf-8\n\n".to_vec()),
        Just(b"data: {\"choices\":[{\"delta\":{\"content\":\"\\ud800\"}}]}\n\n".to_vec()),
        Just(b"retry: 99999999999999999999\nid: \0\n\n".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..48),
    ]
}

// ---------------------------------------------------------------------------------------------
// A canned answer through the real client

/// A transport answering every request with one canned SSE body, split into the given pieces
/// and bounded like the real transport.
#[derive(Clone)]
struct Canned {
    pieces: Vec<Vec<u8>>,
    limits: StreamLimits,
    report: Arc<CutReport>,
}

impl tower::Service<HttpRequestFactory> for Canned {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _factory: HttpRequestFactory) -> Self::Future {
        let pieces = self.pieces.clone();
        let body = futures::stream::iter(pieces.into_iter().map(|p| Ok(bytes::Bytes::from(p))));
        let bounded = bounded_body(body.boxed(), self.limits, self.report.clone());
        let mut response = http::Response::new(reqwest::Body::wrap_stream(bounded));
        response.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("text/event-stream"),
        );
        Box::pin(async move { Ok(reqwest::Response::from(response)) })
    }
}

/// The pass's events for a canned body, the way the provider makes them; `None` when opening
/// the stream failed.
async fn events_for(pieces: Vec<Vec<u8>>, max_bytes: usize) -> Option<ModelStream> {
    let report = Arc::new(CutReport::default());
    let canned = Canned {
        pieces,
        limits: StreamLimits {
            max_bytes,
            max_duration: Duration::from_secs(60),
        },
        report: report.clone(),
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client =
        Client::build(reqwest::Client::new(), OpenAIConfig::new()).with_http_service(canned);
    let chunks = client
        .chat()
        .create_stream_byot::<Value, Chunk>(json!({"model": "m", "stream": true}))
        .await
        .ok()?;
    Some(assemble::events(
        chunks.boxed(),
        None,
        Duration::from_secs(5),
        "gen".into(),
        report,
    ))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    // Any text, and any JSON value, decodes as a chunk or fails cleanly.
    #[test]
    fn chunk_decoding_never_panics(text in any::<String>(), value in json_value()) {
        let _ = serde_json::from_str::<Chunk>(&text);
        let _ = serde_json::from_value::<Chunk>(value.clone());
        let _ = serde_json::from_str::<Chunk>(&value.to_string());
    }

    // Any SSE body, cut anywhere, goes through the client's line splitting, our chunk decoding and
    // assembly without a panic; the stream ends with one End or one error, never hangs, and keeps
    // no more text, and no more calls, than came in.
    #[test]
    fn arbitrary_sse_bodies_end_cleanly(
        pieces in proptest::collection::vec(sse_piece(), 0..24),
        max_bytes in prop_oneof![Just(usize::MAX), 1usize..600],
    ) {
        let total: usize = pieces.iter().map(Vec::len).sum();
        let events = runtime().block_on(async {
            let Some(stream) = events_for(pieces, max_bytes).await else {
                return Vec::new();
            };
            tokio::time::timeout(Duration::from_secs(10), stream.collect::<Vec<_>>())
                .await
                .expect("the stream ends")
        });
        let mut text = 0;
        for (n, event) in events.iter().enumerate() {
            let last = n + 1 == events.len();
            match event {
                Ok(ModelEvent::Text(t)) => {
                    prop_assert!(!last, "a stream never ends on text");
                    text += t.len();
                }
                Ok(ModelEvent::End { tool_calls, .. }) => {
                    prop_assert!(last);
                    prop_assert!(tool_calls.len() <= MAX_CALLS_PER_PASS);
                    prop_assert!(tool_calls.iter().all(|c| !c.id.is_empty()));
                }
                Err(_) => prop_assert!(last, "an error ends the stream"),
            }
        }
        prop_assert!(text <= total, "{text} bytes of text from {total} bytes");
    }

    // Fragments with missing, duplicate, out-of-order or huge indexes (4 000 000 000, usize::MAX)
    // and null or empty ids never panic; calls stay few and their ids unique; the joined text is
    // never longer than what came in.
    #[test]
    fn arbitrary_fragments_assemble_within_bounds(
        chunks in proptest::collection::vec(
            proptest::collection::vec(fragment(), 0..6), 0..40),
        finish in prop::option::of(prop_oneof![
            Just("tool_calls".to_owned()), Just("length".to_owned()),
            Just("stop".to_owned()), any::<String>()]),
    ) {
        let input: usize = chunks
            .iter()
            .flatten()
            .filter_map(|f| f.function.as_ref())
            .map(|f| {
                f.name.as_ref().map_or(0, String::len) + f.arguments.as_ref().map_or(0, String::len)
            })
            .sum();
        let mut assembler = Assembler::default();
        let count = chunks.len();
        for (n, fragments) in chunks.into_iter().enumerate() {
            let finish = if n + 1 == count { finish.clone() } else { None };
            prop_assert!(assembler.take(chunk_of(fragments, finish)).is_ok());
        }
        let ModelEvent::End { tool_calls, .. } = assembler.end("gen") else {
            return Err(TestCaseError::fail("not an end"));
        };
        prop_assert!(tool_calls.len() <= MAX_CALLS_PER_PASS);
        let kept: usize = tool_calls.iter().map(|c| c.name.len() + c.arguments.len()).sum();
        prop_assert!(kept <= input, "{kept} bytes kept of {input}");
        let mut ids: Vec<&str> = tool_calls.iter().map(|c| c.id.as_str()).collect();
        prop_assert!(ids.iter().all(|id| !id.is_empty()));
        ids.sort_unstable();
        let before = ids.len();
        ids.dedup();
        prop_assert_eq!(ids.len(), before, "every call has its own id");
    }
}

// Found by the fragment property: a call at index usize::MAX followed by a fragment with a new id
// and no index asked for index usize::MAX + 1.
#[test]
fn a_new_call_after_index_usize_max_does_not_overflow() {
    let mut assembler = Assembler::default();
    let fragment = |index, id: &str| ToolCallDelta {
        index,
        id: Some(id.to_owned()),
        function: Some(FunctionDelta {
            name: Some("probe".into()),
            arguments: Some("{}".into()),
        }),
    };
    assembler
        .take(chunk_of(vec![fragment(Some(usize::MAX), "call_a")], None))
        .expect("taken");
    assembler
        .take(chunk_of(
            vec![fragment(None, "call_b")],
            Some("tool_calls".into()),
        ))
        .expect("taken");
    let ModelEvent::End { tool_calls, .. } = assembler.end("gen") else {
        panic!("an end");
    };
    assert_eq!(tool_calls.len(), 2);
}

// Found by the fragment property: a call opened by id alone and one opened by index with the same
// id were both sent as `call_a`, so their results could not be told apart.
#[test]
fn two_calls_never_share_an_id() {
    let mut assembler = Assembler::default();
    for index in [None, Some(1)] {
        let fragment = ToolCallDelta {
            index,
            id: Some("call_a".into()),
            function: None,
        };
        assembler
            .take(chunk_of(vec![fragment], None))
            .expect("taken");
    }
    let ModelEvent::End { tool_calls, .. } = assembler.end("gen") else {
        panic!("an end");
    };
    let ids: Vec<&str> = tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, vec!["call_a", "gen_1"]);
}

// A server opening thousands of calls in one pass (one fragment each) keeps a few: one call runs
// per pass, and every kept call is searched for each fragment.
#[test]
fn calls_past_the_bound_are_dropped() {
    let mut assembler = Assembler::default();
    for n in 0..10_000 {
        let fragment = ToolCallDelta {
            index: Some(n * 4_000_000),
            id: None,
            function: Some(FunctionDelta {
                name: Some("probe".into()),
                arguments: Some("{}".into()),
            }),
        };
        assembler
            .take(chunk_of(vec![fragment], None))
            .expect("taken");
    }
    let ModelEvent::End { tool_calls, .. } = assembler.end("gen") else {
        panic!("an end");
    };
    assert_eq!(tool_calls.len(), MAX_CALLS_PER_PASS);
    assert_eq!(
        tool_calls[0].arguments, "{}",
        "the first calls are kept whole"
    );
}
