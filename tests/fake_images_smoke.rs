//! Smoke tests of the fake image backends over real HTTP: every mode of the fake ComfyUI and of
//! the fake OpenAI-compatible images endpoint answers with the documented status and body,
//! scripts run in order before the standing mode, and every request is recorded.
// The shared fakes this binary uses (tests/support/). Public, so that what it leaves
// unused of them is not dead code.
pub mod support {
    pub mod fake_images;
}

use std::time::Duration;

use base64::Engine as _;
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use support::fake_images::{ComfyMode, FakeComfy, FakeImages, ImagesMode};

/// The most any single request may take here.
const LIMIT: Duration = Duration::from_secs(10);
/// How long a hanging request is watched for an answer.
const HANG: Duration = Duration::from_millis(300);

fn client() -> Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    Client::builder().no_proxy().build().expect("client")
}

/// A small ComfyUI workflow: checkpoint, prompts, sampler, decode, save.
fn workflow(prompt: &str) -> Value {
    json!({
        "prompt": {
            "3": {"class_type": "KSampler", "inputs": {"seed": 1, "steps": 4, "cfg": 7.0, "sampler_name": "euler", "scheduler": "normal", "denoise": 1.0, "model": ["4", 0], "positive": ["6", 0], "negative": ["7", 0], "latent_image": ["5", 0]}},
            "4": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "workflow_model.safetensors"}},
            "5": {"class_type": "EmptyLatentImage", "inputs": {"width": 512, "height": 512, "batch_size": 1}},
            "6": {"class_type": "CLIPTextEncode", "inputs": {"text": prompt, "clip": ["4", 1]}},
            "7": {"class_type": "CLIPTextEncode", "inputs": {"text": "", "clip": ["4", 1]}},
            "8": {"class_type": "VAEDecode", "inputs": {"samples": ["3", 0], "vae": ["4", 2]}},
            "9": {"class_type": "SaveImage", "inputs": {"filename_prefix": "ComfyUI", "images": ["8", 0]}},
        },
        "client_id": "smoke-client",
    })
}

fn images_request(prompt: &str) -> Value {
    json!({"model": "gpt-image-1", "prompt": prompt, "size": "1024x1024", "n": 1, "response_format": "b64_json"})
}

/// Sends a request, bounded by [`LIMIT`].
async fn send(request: reqwest::RequestBuilder) -> reqwest::Response {
    tokio::time::timeout(LIMIT, request.send())
        .await
        .expect("the fake answers in time")
        .expect("the request goes through")
}

/// Status, content type and body text of a request.
async fn fetch(request: reqwest::RequestBuilder) -> (StatusCode, String, String) {
    let response = send(request).await;
    let status = response.status();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let text = tokio::time::timeout(LIMIT, response.text())
        .await
        .expect("the body arrives in time")
        .expect("a body");
    (status, content_type, text)
}

async fn fetch_json(request: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let (status, content_type, text) = fetch(request).await;
    assert!(
        content_type.starts_with("application/json"),
        "content type {content_type:?} for {text}"
    );
    let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    (status, body)
}

/// Asserts a request gets no answer within [`HANG`].
async fn assert_hangs(request: reqwest::RequestBuilder) {
    let outcome = tokio::time::timeout(HANG, request.send()).await;
    assert!(outcome.is_err(), "expected no answer, got {outcome:?}");
}

async fn post_prompt(client: &Client, comfy: &FakeComfy, prompt: &str) -> (StatusCode, Value) {
    fetch_json(
        client
            .post(format!("{}/prompt", comfy.base_url))
            .json(&workflow(prompt)),
    )
    .await
}

async fn history(client: &Client, comfy: &FakeComfy, id: &str) -> Value {
    let (status, body) = fetch_json(client.get(format!("{}/history/{id}", comfy.base_url))).await;
    assert_eq!(status, StatusCode::OK);
    body
}

/// Checks `png` is a well-formed 1x1 PNG: signature, chunks with good CRCs, IHDR, IDAT, IEND.
fn assert_valid_png(png: &[u8]) {
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = 0xffff_ffff_u32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xedb8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "signature");
    let mut rest = &png[8..];
    let mut kinds = Vec::new();
    while !rest.is_empty() {
        let len = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
        let kind = &rest[4..8];
        let data = &rest[8..8 + len];
        let crc = u32::from_be_bytes(rest[8 + len..12 + len].try_into().unwrap());
        assert_eq!(crc, crc32(&rest[4..8 + len]), "CRC of {:?}", kind);
        if kind == b"IHDR" {
            assert_eq!(&data[..8], &[0, 0, 0, 1, 0, 0, 0, 1], "1x1");
        }
        kinds.push(String::from_utf8(kind.to_vec()).unwrap());
        rest = &rest[12 + len..];
    }
    assert_eq!(kinds, ["IHDR", "IDAT", "IEND"]);
}

#[test]
fn the_png_is_a_valid_1x1_png() {
    assert_valid_png(&FakeComfy::png());
}

#[tokio::test]
async fn comfy_success_queues_reports_and_serves_the_image() {
    let comfy = FakeComfy::start().await;
    let client = client();
    assert!(comfy.base_url.starts_with("http://127.0.0.1:"));

    let (status, body) = post_prompt(&client, &comfy, "a red fox").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let id = body["prompt_id"].as_str().expect("a prompt id").to_owned();
    assert_eq!(id.len(), 36, "uuid-like: {id}");
    assert_eq!(id.matches('-').count(), 4, "uuid-like: {id}");
    assert!(body["number"].is_u64(), "{body}");
    assert_eq!(body["node_errors"], json!({}));
    assert_eq!(comfy.prompts(), vec![workflow("a red fox")]);

    let found = history(&client, &comfy, &id).await;
    let entry = &found[&id];
    assert_eq!(entry["prompt"][0], body["number"]);
    assert_eq!(entry["prompt"][1], json!(id));
    assert_eq!(entry["prompt"][4], json!(["9"]));
    assert_eq!(entry["status"]["status_str"], "success");
    assert_eq!(entry["status"]["completed"], true);
    let image = &entry["outputs"]["9"]["images"][0];
    assert_eq!(
        image,
        &json!({"filename": "ComfyUI_00001_.png", "subfolder": "", "type": "output"})
    );

    assert_eq!(comfy.views(), 0);
    let url = format!(
        "{}/view?filename={}&subfolder={}&type={}",
        comfy.base_url,
        image["filename"].as_str().unwrap(),
        image["subfolder"].as_str().unwrap(),
        image["type"].as_str().unwrap(),
    );
    let response = send(client.get(url)).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()[reqwest::header::CONTENT_TYPE],
        "image/png"
    );
    let bytes = response.bytes().await.expect("image bytes");
    assert_eq!(bytes.as_ref(), FakeComfy::png().as_slice());
    assert_eq!(comfy.views(), 1);

    // A second prompt gets another id and the next number.
    let (_, second) = post_prompt(&client, &comfy, "a blue fox").await;
    assert_ne!(second["prompt_id"], body["prompt_id"]);
    assert_eq!(
        second["number"].as_u64(),
        Some(body["number"].as_u64().unwrap() + 1)
    );
    assert_eq!(comfy.prompts().len(), 2);
    assert_eq!(comfy.prompts()[1]["client_id"], "smoke-client");
}

#[tokio::test]
async fn comfy_unknown_history_and_files() {
    let comfy = FakeComfy::start().await;
    let client = client();
    assert_eq!(history(&client, &comfy, "no-such-prompt").await, json!({}));
    let response = send(client.get(format!(
        "{}/view?filename=other.png&subfolder=&type=output",
        comfy.base_url
    )))
    .await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(comfy.views(), 1);
}

#[tokio::test]
async fn comfy_slow_reports_nothing_until_the_delay_has_passed() {
    let comfy = FakeComfy::start().await;
    let client = client();
    comfy.set_mode(ComfyMode::Slow(Duration::from_millis(500)));
    let started = tokio::time::Instant::now();
    let (status, body) = post_prompt(&client, &comfy, "slow").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let id = body["prompt_id"].as_str().unwrap().to_owned();
    assert_eq!(history(&client, &comfy, &id).await, json!({}));
    tokio::time::sleep(Duration::from_millis(100)).await;
    if started.elapsed() < Duration::from_millis(450) {
        assert_eq!(history(&client, &comfy, &id).await, json!({}));
    }
    tokio::time::sleep_until(started + Duration::from_millis(600)).await;
    let found = history(&client, &comfy, &id).await;
    assert_eq!(found[&id]["status"]["completed"], true, "{found}");
}

#[tokio::test]
async fn comfy_missing_model_names_a_server_side_checkpoint() {
    let comfy = FakeComfy::start().await;
    let client = client();
    comfy.set_mode(ComfyMode::MissingModel);
    let (status, body) = post_prompt(&client, &comfy, "fox").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["type"], "prompt_outputs_failed_validation");
    assert_eq!(body["error"]["message"], "Prompt outputs failed validation");
    let node = &body["node_errors"]["4"];
    assert_eq!(node["class_type"], "CheckpointLoaderSimple");
    assert_eq!(node["dependent_outputs"], json!(["9"]));
    let error = &node["errors"][0];
    assert_eq!(error["type"], "value_not_in_list");
    assert_eq!(error["extra_info"]["input_name"], "ckpt_name");
    let details = error["details"].as_str().unwrap();
    assert!(
        details.contains("SERVER-SIDE-SECRET.safetensors"),
        "{details}"
    );
    let sent = workflow("fox");
    let workflow_model = sent["prompt"]["4"]["inputs"]["ckpt_name"].as_str().unwrap();
    assert!(!details.contains(workflow_model), "{details}");
    assert_eq!(comfy.prompts(), vec![sent]);
}

#[tokio::test]
async fn comfy_exhausted_balance_is_402() {
    let comfy = FakeComfy::start().await;
    let client = client();
    comfy.set_mode(ComfyMode::ExhaustedBalance);
    let (status, body) = post_prompt(&client, &comfy, "fox").await;
    assert_eq!(status, StatusCode::PAYMENT_REQUIRED);
    assert_eq!(
        body,
        json!({"error": {"type": "insufficient_credits", "message": "Insufficient credits: your account balance is exhausted"}})
    );
}

#[tokio::test]
async fn comfy_safety_refusal_is_400_content_policy() {
    let comfy = FakeComfy::start().await;
    let client = client();
    comfy.set_mode(ComfyMode::SafetyRefusal);
    let (status, body) = post_prompt(&client, &comfy, "fox").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body,
        json!({"error": {"type": "content_policy", "message": "Prompt rejected by the safety filter"}, "node_errors": {}})
    );
}

#[tokio::test]
async fn comfy_server_error_is_a_plain_500() {
    let comfy = FakeComfy::start().await;
    let client = client();
    comfy.set_mode(ComfyMode::ServerError);
    let (status, content_type, text) = fetch(
        client
            .post(format!("{}/prompt", comfy.base_url))
            .json(&workflow("fox")),
    )
    .await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    assert_eq!(text, "Internal Server Error");
}

#[tokio::test]
async fn comfy_hang_never_answers_but_records_the_prompt() {
    let comfy = FakeComfy::start().await;
    let client = client();
    comfy.set_mode(ComfyMode::Hang);
    assert_hangs(
        client
            .post(format!("{}/prompt", comfy.base_url))
            .json(&workflow("fox")),
    )
    .await;
    assert_eq!(comfy.prompts(), vec![workflow("fox")]);
    // The server still answers other requests.
    assert_eq!(history(&client, &comfy, "x").await, json!({}));
}

#[tokio::test]
async fn comfy_script_runs_in_order_then_the_set_mode() {
    let comfy = FakeComfy::start().await;
    let client = client();
    comfy.set_mode(ComfyMode::SafetyRefusal);
    comfy.script(vec![
        ComfyMode::Success,
        ComfyMode::MissingModel,
        ComfyMode::ExhaustedBalance,
    ]);
    let mut statuses = Vec::new();
    for i in 0..5 {
        let (status, _) = post_prompt(&client, &comfy, &format!("p{i}")).await;
        statuses.push(status.as_u16());
        if i == 3 {
            comfy.set_mode(ComfyMode::Success);
        }
    }
    assert_eq!(statuses, [200, 400, 402, 400, 200]);
    let texts: Vec<Value> = comfy
        .prompts()
        .iter()
        .map(|p| p["prompt"]["6"]["inputs"]["text"].clone())
        .collect();
    assert_eq!(texts, ["p0", "p1", "p2", "p3", "p4"]);
}

#[tokio::test]
async fn images_success_returns_the_png_as_base64() {
    let images = FakeImages::start().await;
    let client = client();
    assert!(images.base_url.starts_with("http://127.0.0.1:"));
    assert!(images.base_url.ends_with("/v1"));
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let (status, body) = fetch_json(
        client
            .post(format!("{}/images/generations", images.base_url))
            .bearer_auth("sk-test")
            .json(&images_request("a red fox")),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["created"].as_u64().unwrap() >= before, "{body}");
    let data = body["data"].as_array().unwrap();
    assert_eq!(data.len(), 1);
    assert!(data[0]["revised_prompt"].is_string());
    let png = base64::engine::general_purpose::STANDARD
        .decode(data[0]["b64_json"].as_str().unwrap())
        .expect("base64");
    assert_eq!(png, FakeComfy::png());
    assert_eq!(
        images.requests(),
        vec![(
            Some("Bearer sk-test".to_owned()),
            images_request("a red fox")
        )]
    );

    // No key: recorded as such.
    let (status, _) = fetch_json(
        client
            .post(format!("{}/images/generations", images.base_url))
            .json(&images_request("x")),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(images.requests()[1].0, None);
}

#[tokio::test]
async fn images_slow_answers_after_the_delay() {
    let images = FakeImages::start().await;
    let client = client();
    images.set_mode(ImagesMode::Slow(Duration::from_millis(400)));
    let started = tokio::time::Instant::now();
    let (status, body) = fetch_json(
        client
            .post(format!("{}/images/generations", images.base_url))
            .json(&images_request("slow")),
    )
    .await;
    assert!(started.elapsed() >= Duration::from_millis(400));
    assert_eq!(status, StatusCode::OK);
    assert!(body["data"][0]["b64_json"].is_string());
}

#[tokio::test]
async fn images_errors_have_openai_shapes() {
    let images = FakeImages::start().await;
    let client = client();
    let cases = [
        (
            ImagesMode::ExhaustedBalance,
            429,
            json!({"error": {"message": "You exceeded your current quota, please check your plan and billing details.", "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}),
        ),
        (
            ImagesMode::SafetyRefusal,
            400,
            json!({"error": {"message": "Your request was rejected as a result of our safety system.", "type": "invalid_request_error", "param": null, "code": "content_policy_violation"}}),
        ),
        (
            ImagesMode::ServerError,
            500,
            json!({"error": {"message": "The server had an error while processing your request.", "type": "server_error"}}),
        ),
    ];
    for (mode, code, expected) in cases {
        images.set_mode(mode.clone());
        let (status, body) = fetch_json(
            client
                .post(format!("{}/images/generations", images.base_url))
                .bearer_auth("sk-test")
                .json(&images_request("fox")),
        )
        .await;
        assert_eq!(status.as_u16(), code, "{mode:?}");
        assert_eq!(body, expected, "{mode:?}");
    }
    assert_eq!(images.requests().len(), 3);
}

#[tokio::test]
async fn images_hang_never_answers_but_records_the_request() {
    let images = FakeImages::start().await;
    let client = client();
    images.set_mode(ImagesMode::Hang);
    assert_hangs(
        client
            .post(format!("{}/images/generations", images.base_url))
            .bearer_auth("sk-test")
            .json(&images_request("fox")),
    )
    .await;
    assert_eq!(
        images.requests(),
        vec![(Some("Bearer sk-test".to_owned()), images_request("fox"))]
    );
}

#[tokio::test]
async fn images_script_runs_in_order_then_the_set_mode() {
    let images = FakeImages::start().await;
    let client = client();
    images.script(vec![
        ImagesMode::ServerError,
        ImagesMode::ExhaustedBalance,
        ImagesMode::Slow(Duration::from_millis(10)),
    ]);
    let mut statuses = Vec::new();
    for i in 0..4 {
        let (status, _) = fetch_json(
            client
                .post(format!("{}/images/generations", images.base_url))
                .json(&images_request(&format!("p{i}"))),
        )
        .await;
        statuses.push(status.as_u16());
    }
    assert_eq!(statuses, [500, 429, 200, 200]);
    images.set_mode(ImagesMode::SafetyRefusal);
    let (status, _) = fetch_json(
        client
            .post(format!("{}/images/generations", images.base_url))
            .json(&images_request("p4")),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let prompts: Vec<Value> = images
        .requests()
        .iter()
        .map(|(_, body)| body["prompt"].clone())
        .collect();
    assert_eq!(prompts, ["p0", "p1", "p2", "p3", "p4"]);
}

#[tokio::test]
async fn requests_without_a_prompt_are_refused_without_using_the_script() {
    let client = client();
    let comfy = FakeComfy::start().await;
    comfy.script(vec![ComfyMode::ServerError]);
    let (status, body) = fetch_json(
        client
            .post(format!("{}/prompt", comfy.base_url))
            .json(&json!({"client_id": "c"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["type"], "no_prompt");
    let (status, _, _) = fetch(
        client
            .post(format!("{}/prompt", comfy.base_url))
            .json(&workflow("fox")),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::INTERNAL_SERVER_ERROR,
        "the script is intact"
    );
    assert_eq!(comfy.prompts().len(), 2);

    let images = FakeImages::start().await;
    images.script(vec![ImagesMode::ServerError]);
    let (status, body) = fetch_json(
        client
            .post(format!("{}/images/generations", images.base_url))
            .json(&json!({"model": "m"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["code"], "missing_required_parameter");
    let (status, _) = fetch_json(
        client
            .post(format!("{}/images/generations", images.base_url))
            .json(&images_request("fox")),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::INTERNAL_SERVER_ERROR,
        "the script is intact"
    );
    assert_eq!(images.requests().len(), 2);
}
