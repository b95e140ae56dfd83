//! A fake OpenAI-compatible server on 127.0.0.1, serving `/v1/chat/completions` from a script:
//! SSE streams of text chunks and tool-call fragments, delays, gates the test opens, cut or
//! aborted streams, error statuses, and hangs. It records every request (its `Authorization`
//! header and JSON body) and counts streams the client dropped before their end. A request nobody scripted gets a 500 and
//! is counted, so a test can fail loudly on it. A [`Profile`] makes it speak as llama.cpp,
//! Ollama or vLLM do (see `fake_openai/profile.rs`), with helpers for their error bodies.

mod profile;

pub use profile::Profile;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use bytes::Bytes;
use serde_json::{Value, json};

/// One step of a scripted SSE stream.
#[derive(Debug, Clone)]
pub enum Sse {
    /// `data: <json>`.
    Data(Value),
    /// A raw line, sent as is (plus the blank line).
    Raw(String),
    /// `data: [DONE]`.
    Done,
    Delay(Duration),
    /// Wait until the test opens this gate (sends `true`): a model that answers when the test
    /// says, not after a guessed delay.
    Until(tokio::sync::watch::Receiver<bool>),
    /// Stop sending, keeping the connection open, forever.
    Hang,
    /// Break the connection mid-stream.
    Abort,
}

impl Sse {
    pub fn text(text: &str) -> Self {
        Sse::Data(json!({"choices": [{"index": 0, "delta": {"content": text}}]}))
    }

    /// A tool-call fragment; `None` fields are left out of the JSON.
    pub fn fragment(
        index: Option<u32>,
        id: Option<&str>,
        name: Option<&str>,
        arguments: &str,
    ) -> Self {
        let mut call = json!({"function": {"arguments": arguments}});
        if let Some(index) = index {
            call["index"] = json!(index);
        }
        if let Some(id) = id {
            call["id"] = json!(id);
            call["type"] = json!("function");
        }
        if let Some(name) = name {
            call["function"]["name"] = json!(name);
        }
        Sse::Data(json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}))
    }

    pub fn finish(reason: &str) -> Self {
        Sse::Data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}))
    }

    pub fn usage(prompt: u32, completion: u32) -> Self {
        Sse::Data(
            json!({"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion}}),
        )
    }
}

/// The answer to one request.
#[derive(Debug, Clone)]
pub enum Reply {
    Stream(Vec<Sse>),
    /// An error status with a body.
    Status(u16, String),
    /// An error status with `prefix` then `size` bytes of padding, made lazily in 64 KiB
    /// chunks as the client reads them (see [`FakeOpenAi::padding_sent`]).
    Huge {
        status: u16,
        prefix: String,
        size: usize,
    },
    /// Never answer.
    Hang,
}

impl Reply {
    /// A complete text answer: chunks, `stop`, `[DONE]`.
    pub fn text(chunks: &[&str]) -> Self {
        let mut steps: Vec<Sse> = chunks.iter().map(|c| Sse::text(c)).collect();
        steps.push(Sse::finish("stop"));
        steps.push(Sse::Done);
        Reply::Stream(steps)
    }

    /// One complete tool call: name and arguments in one fragment, `tool_calls`, `[DONE]`.
    pub fn call(id: &str, name: &str, arguments: &str) -> Self {
        Reply::Stream(vec![
            Sse::fragment(Some(0), Some(id), Some(name), arguments),
            Sse::finish("tool_calls"),
            Sse::Done,
        ])
    }

    /// An OpenAI-style error body with this status.
    pub fn error(status: u16, message: &str, code: &str) -> Self {
        Reply::Status(
            status,
            json!({"error": {"message": message, "type": code, "code": code, "param": null}})
                .to_string(),
        )
    }
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub authorization: Option<String>,
    pub body: Value,
}

impl Recorded {
    pub fn key(&self) -> &str {
        self.authorization
            .as_deref()
            .and_then(|a| a.strip_prefix("Bearer "))
            .unwrap_or("")
    }

    pub fn model(&self) -> &str {
        self.body["model"].as_str().unwrap_or("")
    }
}

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<Reply>>,
    /// Replies for one model only (a reviewer model beside the author's), taken first.
    by_model: Mutex<std::collections::HashMap<String, VecDeque<Reply>>>,
    requests: Mutex<Vec<Recorded>>,
    dropped: AtomicUsize,
    unexpected: AtomicUsize,
    /// Padding bytes of [`Reply::Huge`] answers handed to the connection so far.
    padding_sent: AtomicUsize,
    /// A key `GET /v1/models` answers 401, as OpenAI does a revoked one.
    refused_key: Mutex<Option<String>>,
    /// Models that take image parts; any other refuses a request with one, as OpenAI does.
    vision_models: Mutex<Vec<String>>,
    /// Every picture a vision model received: (model, its bytes, decoded from the data URL).
    images: Mutex<Vec<(String, Vec<u8>)>>,
    /// The server whose wire format streams are rendered in.
    profile: Mutex<Profile>,
    /// Tool-call ids a profile made up, in the order sent.
    call_ids: Mutex<Vec<String>>,
}

pub struct FakeOpenAi {
    /// `http://127.0.0.1:<port>/v1`
    pub base_url: String,
    shared: Arc<Shared>,
    _server: tokio::task::JoinHandle<()>,
}

impl FakeOpenAi {
    pub async fn start() -> Self {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/v1/chat/completions", post(completions))
            .route("/v1/models", axum::routing::get(models))
            // OpenAI takes requests far past axum's 2 MB default (pictures are inline).
            .layer(axum::extract::DefaultBodyLimit::max(64 * 1024 * 1024))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let server = tokio::spawn(async move {
            axum::serve(listener, app)
                .await
                .expect("fake OpenAI server");
        });
        Self {
            base_url: format!("http://{addr}/v1"),
            shared,
            _server: server,
        }
    }

    pub fn push(&self, reply: Reply) {
        self.shared.script.lock().unwrap().push_back(reply);
    }

    /// Queues a reply for requests naming `model` only.
    pub fn push_for(&self, model: &str, reply: Reply) {
        self.shared
            .by_model
            .lock()
            .unwrap()
            .entry(model.to_owned())
            .or_default()
            .push_back(reply);
    }

    /// `GET /v1/models` answers 401 to this key from now on (with OpenAI's error body).
    pub fn refuse_key(&self, key: &str) {
        *self.shared.refused_key.lock().unwrap() = Some(key.to_owned());
    }

    /// `model` takes image parts from now on.
    pub fn sees(&self, model: &str) {
        self.shared
            .vision_models
            .lock()
            .unwrap()
            .push(model.to_owned());
    }

    /// Every picture a vision model received, as (model, bytes).
    pub fn images(&self) -> Vec<(String, Vec<u8>)> {
        self.shared.images.lock().unwrap().clone()
    }

    /// Streams are rendered as `profile`'s server sends them from now on (the default,
    /// [`Profile::OpenAi`], sends every step as scripted).
    pub fn set_profile(&self, profile: Profile) {
        *self.shared.profile.lock().unwrap() = profile;
    }

    /// The tool-call ids a profile made up and sent, in order (none under OpenAI's, which
    /// sends the scripted ones).
    pub fn call_ids(&self) -> Vec<String> {
        self.shared.call_ids.lock().unwrap().clone()
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// Streams the client dropped before their last step.
    pub fn dropped_streams(&self) -> usize {
        self.shared.dropped.load(Ordering::SeqCst)
    }

    /// Requests that found no scripted reply.
    pub fn unexpected(&self) -> usize {
        self.shared.unexpected.load(Ordering::SeqCst)
    }

    /// Padding bytes of [`Reply::Huge`] answers the server has handed out so far.
    pub fn padding_sent(&self) -> usize {
        self.shared.padding_sent.load(Ordering::SeqCst)
    }

    pub fn remaining(&self) -> usize {
        self.shared.script.lock().unwrap().len()
    }
}

/// OpenAI's model list: the one model these tests configure.
async fn models(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let key = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    let refused = shared.refused_key.lock().unwrap().clone();
    if key.is_none() || key == refused {
        let body = json!({"error": {
            "message": "Incorrect API key provided.",
            "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}});
        return (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
    }
    axum::Json(json!({"object": "list", "data": [
        {"id": "test-model", "object": "model", "created": 1_700_000_000, "owned_by": "fake"}]}))
    .into_response()
}

async fn completions(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let model = body["model"].as_str().unwrap_or_default().to_owned();
    let asked = profile::Asked::of(&body);
    shared.requests.lock().unwrap().push(Recorded {
        authorization,
        body,
    });
    if let Some(refusal) = check_images(&shared, &model, &shared.requests.lock().unwrap()) {
        return refusal;
    }
    if let Some(refusal) = check_tool_arguments(&shared.requests.lock().unwrap()) {
        return refusal;
    }
    let for_model = shared
        .by_model
        .lock()
        .unwrap()
        .get_mut(&model)
        .and_then(VecDeque::pop_front);
    let reply = for_model.or_else(|| shared.script.lock().unwrap().pop_front());
    let Some(reply) = reply else {
        shared.unexpected.fetch_add(1, Ordering::SeqCst);
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            "unexpected request: nothing scripted",
        )
            .into_response();
    };
    match reply {
        Reply::Status(code, body) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
        }
        Reply::Huge {
            status,
            prefix,
            size,
        } => huge(shared, status, prefix, size),
        Reply::Hang => {
            std::future::pending::<()>().await;
            unreachable!()
        }
        Reply::Stream(steps) => {
            let profile = *shared.profile.lock().unwrap();
            let (steps, ids) = profile::render(profile, steps, asked);
            shared.call_ids.lock().unwrap().extend(ids);
            sse(shared, steps)
        }
    }
}

/// The last request's image parts, checked as OpenAI checks them: a model that cannot see
/// refuses any (400, `invalid_request_error`), and each must be a `data:` URL of a png, jpeg,
/// webp or gif picture in base64 (else 400 "Invalid image"). Accepted pictures are recorded.
fn check_images(shared: &Shared, model: &str, requests: &[Recorded]) -> Option<Response> {
    use base64::Engine as _;
    let body = &requests.last()?.body;
    let parts: Vec<&Value> = body["messages"]
        .as_array()?
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|p| p["type"] == "image_url")
        .collect();
    if parts.is_empty() {
        return None;
    }
    let refuse = |message: &str| {
        let body = json!({"error": {"message": message, "type": "invalid_request_error",
            "param": null, "code": null}});
        Some((StatusCode::BAD_REQUEST, axum::Json(body)).into_response())
    };
    if !shared
        .vision_models
        .lock()
        .unwrap()
        .iter()
        .any(|m| m == model)
    {
        return refuse("Invalid content type. image_url is only supported by certain models.");
    }
    let mut seen = Vec::new();
    for part in parts {
        let url = part["image_url"]["url"].as_str().unwrap_or_default();
        let data = ["png", "jpeg", "webp", "gif"]
            .iter()
            .find_map(|t| url.strip_prefix(&format!("data:image/{t};base64,")))
            .and_then(|d| base64::engine::general_purpose::STANDARD.decode(d).ok());
        let picture = data.filter(|d| {
            d.starts_with(b"\x89PNG")
                || d.starts_with(&[0xff, 0xd8, 0xff])
                || d.get(8..12) == Some(b"WEBP")
                || d.starts_with(b"GIF8")
        });
        let Some(picture) = picture else {
            return refuse("Invalid image.");
        };
        seen.push((model.to_owned(), picture));
    }
    shared.images.lock().unwrap().extend(seen);
    None
}

/// A history whose tool calls carry arguments that are not JSON is refused, as llama.cpp's
/// server refuses it (500, "Failed to parse tool call arguments as JSON") before running the
/// model: a bot that replays a broken call fails every later request of the conversation.
fn check_tool_arguments(requests: &[Recorded]) -> Option<Response> {
    let body = &requests.last()?.body;
    let broken = body["messages"]
        .as_array()?
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .any(|c| {
            let arguments = c["function"]["arguments"].as_str().unwrap_or_default();
            serde_json::from_str::<Value>(arguments).is_err()
        });
    broken.then(|| {
        let body = json!({"error": {"code": 500,
            "message": "Failed to parse tool call arguments as JSON", "type": "server_error"}});
        (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(body)).into_response()
    })
}

fn huge(shared: Arc<Shared>, status: u16, prefix: String, size: usize) -> Response {
    const CHUNK: usize = 64 * 1024;
    let padding = (0..size.div_ceil(CHUNK)).map(move |n| {
        let len = CHUNK.min(size - n * CHUNK);
        shared.padding_sent.fetch_add(len, Ordering::SeqCst);
        Ok::<_, std::io::Error>(Bytes::from(vec![b'x'; len]))
    });
    let stream = futures::stream::iter(std::iter::once(Ok(Bytes::from(prefix))).chain(padding));
    Response::builder()
        .status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(stream))
        .expect("response")
}

/// Counts the stream as dropped unless every step was sent.
struct DropGuard {
    shared: Arc<Shared>,
    done: bool,
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        if !self.done {
            self.shared.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

fn sse(shared: Arc<Shared>, steps: Vec<Sse>) -> Response {
    let guard = DropGuard {
        shared,
        done: false,
    };
    let state = (steps.into_iter(), guard);
    let stream = futures::stream::unfold(state, |(mut steps, mut guard)| async move {
        loop {
            let Some(step) = steps.next() else {
                guard.done = true;
                drop(guard);
                return None;
            };
            let line = match step {
                Sse::Data(value) => format!("data: {value}\n\n"),
                Sse::Raw(raw) => format!("{raw}\n\n"),
                Sse::Done => "data: [DONE]\n\n".to_owned(),
                Sse::Delay(d) => {
                    tokio::time::sleep(d).await;
                    continue;
                }
                Sse::Until(mut gate) => {
                    // a dropped sender opens it too: the test is over
                    let _ = gate.wait_for(|open| *open).await;
                    continue;
                }
                Sse::Hang => {
                    std::future::pending::<()>().await;
                    continue;
                }
                Sse::Abort => {
                    guard.done = true;
                    let error = std::io::Error::other("aborted by the script");
                    return Some((Err(error), (steps, guard)));
                }
            };
            return Some((Ok::<_, std::io::Error>(Bytes::from(line)), (steps, guard)));
        }
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(stream))
        .expect("response")
}
