//! Two fake image backends on 127.0.0.1, for black-box tests of image generation.
//!
//! - [`FakeComfy`] speaks the ComfyUI HTTP API: `POST /prompt` queues a workflow,
//!   `GET /history/{prompt_id}` reports it (`{}` until it is finished), and `GET /view` serves
//!   the finished image. Error modes answer with the shapes ComfyUI (or a paid ComfyUI host)
//!   really uses: failed validation naming a server-side model, exhausted credits, a safety
//!   refusal, a bare 500, or no answer at all.
//! - [`FakeImages`] is an OpenAI-compatible `POST /v1/images/generations`, answering with
//!   `b64_json` images or OpenAI-style errors (quota, content policy, server error, hang).
//!
//! Each fake has a standing mode (`set_mode`) and a script of modes taken first, one per request
//! (`script`). Both record every request they receive, whatever its mode, and both serve the
//! same image: [`FakeComfy::png`], a valid 1x1 PNG.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine as _;
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::time::Instant;

/// A valid 1x1 RGBA PNG (one opaque blue pixel), 70 bytes.
const PNG: [u8; 70] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, // signature
    0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, // IHDR, 13 bytes
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, // width 1, height 1
    0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, // 8-bit RGBA, crc
    0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, // IDAT, 13 bytes
    0x78, 0xda, 0x63, 0xf0, 0xe9, 0xbf, 0xf6, 0x1f, 0x00, 0x05, 0x8d, 0x02, 0xb1, // zlib data
    0xf1, 0xff, 0x95, 0x51, // crc
    0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82, // IEND, crc
];

/// The file name every finished ComfyUI job reports, and the only one `/view` serves.
pub const COMFY_FILENAME: &str = "ComfyUI_00001_.png";

/// The checkpoint name a `MissingModel` error names: a server-side file, never the workflow's.
pub const COMFY_SECRET_MODEL: &str = "SERVER-SIDE-SECRET.safetensors";

/// The output node every finished ComfyUI job reports.
const COMFY_OUTPUT_NODE: &str = "9";

/// How the fake ComfyUI answers one `POST /prompt`.
#[derive(Debug, Clone)]
pub enum ComfyMode {
    /// Queued and finished at once.
    Success,
    /// Queued at once; `/history` reports it only once this long has passed since the POST.
    Slow(Duration),
    /// 400 `prompt_outputs_failed_validation`: the checkpoint is not on the server.
    MissingModel,
    /// 402 `insufficient_credits` (a paid ComfyUI host).
    ExhaustedBalance,
    /// 400 `content_policy`: the safety filter refused the prompt.
    SafetyRefusal,
    /// 500 with a plain-text `Internal Server Error`.
    ServerError,
    /// Never answers; the connection stays open.
    Hang,
}

/// A queued ComfyUI job.
struct Job {
    number: u64,
    finished_at: Instant,
}

struct ComfyShared {
    mode: Mutex<ComfyMode>,
    script: Mutex<VecDeque<ComfyMode>>,
    prompts: Mutex<Vec<Value>>,
    jobs: Mutex<HashMap<String, Job>>,
    /// ComfyUI's queue number: 0 for the first accepted prompt.
    number: AtomicU64,
    views: AtomicUsize,
}

/// A fake ComfyUI server.
pub struct FakeComfy {
    /// `http://127.0.0.1:<port>`
    pub base_url: String,
    shared: Arc<ComfyShared>,
    _server: tokio::task::JoinHandle<()>,
}

impl FakeComfy {
    /// Starts the server in mode [`ComfyMode::Success`].
    pub async fn start() -> Self {
        let shared = Arc::new(ComfyShared {
            mode: Mutex::new(ComfyMode::Success),
            script: Mutex::new(VecDeque::new()),
            prompts: Mutex::new(Vec::new()),
            jobs: Mutex::new(HashMap::new()),
            number: AtomicU64::new(0),
            views: AtomicUsize::new(0),
        });
        let app = Router::new()
            .route("/prompt", post(comfy_prompt))
            .route("/history/{prompt_id}", get(comfy_history))
            .route("/view", get(comfy_view))
            .with_state(shared.clone());
        let (base_url, server) = serve(app, "").await;
        Self {
            base_url,
            shared,
            _server: server,
        }
    }

    /// The mode of every later prompt (after any scripted ones).
    pub fn set_mode(&self, mode: ComfyMode) {
        *self.shared.mode.lock().unwrap() = mode;
    }

    /// The next prompts take these modes in order; then the set mode applies again.
    pub fn script(&self, modes: Vec<ComfyMode>) {
        self.shared.script.lock().unwrap().extend(modes);
    }

    /// Every `POST /prompt` body received, in order, whatever its answer (`null` if not JSON).
    pub fn prompts(&self) -> Vec<Value> {
        self.shared.prompts.lock().unwrap().clone()
    }

    /// How many `GET /view` requests came (found or not).
    pub fn views(&self) -> usize {
        self.shared.views.load(Ordering::SeqCst)
    }

    /// The exact bytes `/view` serves: a valid 1x1 PNG.
    pub fn png() -> Vec<u8> {
        PNG.to_vec()
    }
}

async fn comfy_prompt(State(shared): State<Arc<ComfyShared>>, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    shared.prompts.lock().unwrap().push(body.clone());
    if !body["prompt"].is_object() {
        // What ComfyUI says to a body without a workflow; no scripted mode is used up.
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({
                "error": {"type": "no_prompt", "message": "No prompt provided", "details": "No prompt provided", "extra_info": {}},
                "node_errors": [],
            })),
        )
            .into_response();
    }
    let scripted = shared.script.lock().unwrap().pop_front();
    let mode = scripted.unwrap_or_else(|| shared.mode.lock().unwrap().clone());
    let delay = match mode {
        ComfyMode::Success => Duration::ZERO,
        ComfyMode::Slow(delay) => delay,
        ComfyMode::MissingModel => {
            return (
                StatusCode::BAD_REQUEST,
                Json(json!({
                    "error": {
                        "type": "prompt_outputs_failed_validation",
                        "message": "Prompt outputs failed validation",
                        "details": "",
                        "extra_info": {},
                    },
                    "node_errors": {
                        "4": {
                            "errors": [{
                                "type": "value_not_in_list",
                                "message": "Value not in list",
                                "details": format!("ckpt_name: '{COMFY_SECRET_MODEL}' not in ['other_model.safetensors']"),
                                "extra_info": {"input_name": "ckpt_name"},
                            }],
                            "dependent_outputs": [COMFY_OUTPUT_NODE],
                            "class_type": "CheckpointLoaderSimple",
                        }
                    },
                })),
            )
                .into_response();
        }
        ComfyMode::ExhaustedBalance => {
            return (
                StatusCode::PAYMENT_REQUIRED,
                Json(json!({
                    "error": {
                        "type": "insufficient_credits",
                        "message": "Insufficient credits: your account balance is exhausted",
                    }
                })),
            )
                .into_response();
        }
        ComfyMode::SafetyRefusal => {
            return (
                StatusCode::BAD_REQUEST,
                Json(json!({
                    "error": {"type": "content_policy", "message": "Prompt rejected by the safety filter"},
                    "node_errors": {},
                })),
            )
                .into_response();
        }
        ComfyMode::ServerError => return server_error_text(),
        ComfyMode::Hang => hang().await,
    };
    let number = shared.number.fetch_add(1, Ordering::SeqCst);
    let prompt_id = uuid::Uuid::now_v7().to_string();
    shared.jobs.lock().unwrap().insert(
        prompt_id.clone(),
        Job {
            number,
            finished_at: Instant::now() + delay,
        },
    );
    Json(json!({"prompt_id": prompt_id, "number": number, "node_errors": {}})).into_response()
}

async fn comfy_history(
    State(shared): State<Arc<ComfyShared>>,
    Path(prompt_id): Path<String>,
) -> Json<Value> {
    let number = {
        let jobs = shared.jobs.lock().unwrap();
        match jobs.get(&prompt_id) {
            Some(job) if Instant::now() >= job.finished_at => Some(job.number),
            _ => None,
        }
    };
    let Some(number) = number else {
        return Json(json!({}));
    };
    let mut history = serde_json::Map::new();
    history.insert(
        prompt_id.clone(),
        json!({
            "prompt": [number, prompt_id, {}, {}, [COMFY_OUTPUT_NODE]],
            "outputs": {
                COMFY_OUTPUT_NODE: {
                    "images": [{"filename": COMFY_FILENAME, "subfolder": "", "type": "output"}]
                }
            },
            "status": {"status_str": "success", "completed": true, "messages": []},
        }),
    );
    Json(Value::Object(history))
}

async fn comfy_view(
    State(shared): State<Arc<ComfyShared>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    shared.views.fetch_add(1, Ordering::SeqCst);
    let filename = query.get("filename").map(String::as_str);
    let subfolder = query.get("subfolder").map_or("", String::as_str);
    let kind = query.get("type").map_or("output", String::as_str);
    if filename == Some(COMFY_FILENAME) && subfolder.is_empty() && kind == "output" {
        (
            [(header::CONTENT_TYPE, "image/png")],
            Bytes::from_static(&PNG),
        )
            .into_response()
    } else {
        StatusCode::NOT_FOUND.into_response()
    }
}

/// How the fake images endpoint answers one request.
#[derive(Debug, Clone)]
pub enum ImagesMode {
    /// 200 with `b64_json` images.
    Success,
    /// Success after this delay.
    Slow(Duration),
    /// 429 `insufficient_quota`.
    ExhaustedBalance,
    /// 400 `content_policy_violation`.
    SafetyRefusal,
    /// 500 `server_error`.
    ServerError,
    /// Never answers; the connection stays open.
    Hang,
}

struct ImagesShared {
    mode: Mutex<ImagesMode>,
    script: Mutex<VecDeque<ImagesMode>>,
    requests: Mutex<Vec<(Option<String>, Value)>>,
}

/// A fake OpenAI-compatible images endpoint.
pub struct FakeImages {
    /// `http://127.0.0.1:<port>/v1`
    pub base_url: String,
    shared: Arc<ImagesShared>,
    _server: tokio::task::JoinHandle<()>,
}

impl FakeImages {
    /// Starts the server in mode [`ImagesMode::Success`].
    pub async fn start() -> Self {
        let shared = Arc::new(ImagesShared {
            mode: Mutex::new(ImagesMode::Success),
            script: Mutex::new(VecDeque::new()),
            requests: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .route("/v1/images/generations", post(images_generations))
            .with_state(shared.clone());
        let (base_url, server) = serve(app, "/v1").await;
        Self {
            base_url,
            shared,
            _server: server,
        }
    }

    /// The mode of every later request (after any scripted ones).
    pub fn set_mode(&self, mode: ImagesMode) {
        *self.shared.mode.lock().unwrap() = mode;
    }

    /// The next requests take these modes in order; then the set mode applies again.
    pub fn script(&self, modes: Vec<ImagesMode>) {
        self.shared.script.lock().unwrap().extend(modes);
    }

    /// Every request received, in order: its `Authorization` header and JSON body (`null` if
    /// not JSON), whatever its answer.
    pub fn requests(&self) -> Vec<(Option<String>, Value)> {
        self.shared.requests.lock().unwrap().clone()
    }
}

async fn images_generations(
    State(shared): State<Arc<ImagesShared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    shared
        .requests
        .lock()
        .unwrap()
        .push((authorization, body.clone()));
    let Some(prompt) = body["prompt"].as_str().map(str::to_owned) else {
        // What OpenAI says to a request without a prompt; no scripted mode is used up.
        return openai_error(
            StatusCode::BAD_REQUEST,
            json!({
                "message": "Missing required parameter: 'prompt'.",
                "type": "invalid_request_error",
                "param": "prompt",
                "code": "missing_required_parameter",
            }),
        );
    };
    let scripted = shared.script.lock().unwrap().pop_front();
    let mode = scripted.unwrap_or_else(|| shared.mode.lock().unwrap().clone());
    match mode {
        ImagesMode::Success => {}
        ImagesMode::Slow(delay) => tokio::time::sleep(delay).await,
        ImagesMode::ExhaustedBalance => {
            return openai_error(
                StatusCode::TOO_MANY_REQUESTS,
                json!({
                    "message": "You exceeded your current quota, please check your plan and billing details.",
                    "type": "insufficient_quota",
                    "param": null,
                    "code": "insufficient_quota",
                }),
            );
        }
        ImagesMode::SafetyRefusal => {
            return openai_error(
                StatusCode::BAD_REQUEST,
                json!({
                    "message": "Your request was rejected as a result of our safety system.",
                    "type": "invalid_request_error",
                    "param": null,
                    "code": "content_policy_violation",
                }),
            );
        }
        ImagesMode::ServerError => {
            return openai_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                json!({
                    "message": "The server had an error while processing your request.",
                    "type": "server_error",
                }),
            );
        }
        ImagesMode::Hang => hang().await,
    }
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let n = body["n"].as_u64().unwrap_or(1).clamp(1, 10);
    let b64 = base64::engine::general_purpose::STANDARD.encode(PNG);
    let image = json!({"b64_json": b64, "revised_prompt": format!("A picture of: {prompt}")});
    let data: Vec<Value> = (0..n).map(|_| image.clone()).collect();
    Json(json!({"created": created, "data": data})).into_response()
}

fn openai_error(status: StatusCode, error: Value) -> Response {
    (status, Json(json!({"error": error}))).into_response()
}

fn server_error_text() -> Response {
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "Internal Server Error",
    )
        .into_response()
}

/// Never returns; the request's connection stays open until the client drops it.
async fn hang() -> ! {
    std::future::pending::<()>().await;
    unreachable!()
}

/// Serves `app` on a free port of 127.0.0.1; returns `http://127.0.0.1:<port><suffix>`.
async fn serve(app: Router, suffix: &str) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = tokio::spawn(async move {
        axum::serve(listener, app).await.expect("fake image server");
    });
    (format!("http://{addr}{suffix}"), server)
}
