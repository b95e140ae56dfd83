//! ComfyUI over its HTTP API: queue the configured workflow (`POST /prompt`) with the prompt,
//! size and seed filled in, poll `GET /history/{id}` until it finishes, fetch the image with
//! `GET /view`. A missing model file is reported with the workflow's own file name.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{body_failure, failure, http};
use crate::domain::ports::{GeneratedImage, ImageBackend, ImageRequest};
use crate::domain::provider_failure::ProviderFailure;
use crate::http_body::{ERROR_TEXT_MAX, json_bounded, read_bounded, text_bounded};

/// How often the history is polled.
const POLL: Duration = Duration::from_millis(250);
/// Largest JSON answer read (`/prompt`, `/history`): a history entry repeats the whole workflow,
/// which stays well under this.
const ANSWER_MAX: usize = 4 << 20;

pub struct ComfyUi {
    http: reqwest::Client,
    base: String,
    workflow: Value,
    /// The checkpoint (or UNet) file the workflow loads.
    model_file: Option<String>,
    /// Largest image file fetched; a larger one fails the task.
    max_image_bytes: usize,
}

impl ComfyUi {
    pub fn new(
        base: &str,
        workflow: Value,
        max_image_bytes: usize,
    ) -> Result<Self, reqwest::Error> {
        let model_file = model_file(&workflow);
        Ok(Self {
            http: http()?,
            base: base.trim_end_matches('/').to_owned(),
            workflow,
            model_file,
            max_image_bytes,
        })
    }

    fn fail(&self, status: Option<u16>, message: String) -> ProviderFailure {
        failure(status, message, self.model_file.clone())
    }

    async fn get_json(&self, path: &str) -> Result<Value, ProviderFailure> {
        let response = self
            .http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .map_err(|e| self.fail(None, e.without_url().to_string()))?;
        let status = response.status();
        if !status.is_success() {
            let text = text_bounded(response, ERROR_TEXT_MAX).await;
            return Err(self.fail(Some(status.as_u16()), text));
        }
        json_bounded(response, ANSWER_MAX)
            .await
            .map_err(|e| body_failure(path, &e, self.model_file.clone()))
    }
}

/// The first checkpoint, UNet or diffusion model file name in the workflow.
fn model_file(workflow: &Value) -> Option<String> {
    workflow.as_object()?.values().find_map(|node| {
        let inputs = node.get("inputs")?;
        ["ckpt_name", "unet_name", "model_name"]
            .iter()
            .find_map(|k| inputs.get(*k)?.as_str().map(str::to_owned))
    })
}

/// The workflow with its placeholders filled in.
fn fill(value: &Value, request: &ImageRequest) -> Value {
    let (width, height) = request.size();
    match value {
        Value::String(s) => match s.as_str() {
            "{{prompt}}" => json!(request.prompt),
            "{{width}}" => json!(width),
            "{{height}}" => json!(height),
            "{{seed}}" => json!(request.seed),
            _ => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(|v| fill(v, request)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), fill(v, request)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[async_trait]
impl ImageBackend for ComfyUi {
    async fn generate(
        &self,
        request: &ImageRequest,
        cancel: &CancellationToken,
    ) -> Result<GeneratedImage, ProviderFailure> {
        let body = json!({
            "prompt": fill(&self.workflow, request),
            "client_id": format!("persona-bot-{}", uuid::Uuid::now_v7().simple()),
        });
        let response = self
            .http
            .post(format!("{}/prompt", self.base))
            .json(&body)
            .send()
            .await
            .map_err(|e| self.fail(None, e.without_url().to_string()))?;
        let status = response.status();
        if !status.is_success() {
            let text = text_bounded(response, ERROR_TEXT_MAX).await;
            return Err(self.fail(Some(status.as_u16()), text));
        }
        let queued: Value = json_bounded(response, ANSWER_MAX)
            .await
            .map_err(|e| body_failure("/prompt", &e, self.model_file.clone()))?;
        let Some(id) = queued
            .get("prompt_id")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return Err(self.fail(Some(502), format!("no prompt_id in {queued}")));
        };
        let image = loop {
            let history = self.get_json(&format!("/history/{id}")).await?;
            if let Some(entry) = history.get(&id) {
                let at = |pointer: &str| entry.pointer(pointer).unwrap_or(&Value::Null);
                if at("/status/status_str") == "error" {
                    return Err(self.fail(Some(500), at("/status/messages").to_string()));
                }
                let first = at("/outputs").as_object().and_then(|outputs| {
                    outputs
                        .values()
                        .find_map(|o| o.get("images")?.as_array()?.first().cloned())
                });
                if let Some(image) = first {
                    break image;
                }
                if at("/status/completed") == true {
                    return Err(self.fail(Some(500), "finished without an image".into()));
                }
            }
            tokio::select! {
                () = cancel.cancelled() => return Err(self.fail(None, "cancelled: timed out".into())),
                () = tokio::time::sleep(POLL) => {}
            }
        };
        self.fetch_image(&image).await
    }
}

impl ComfyUi {
    /// `GET /view` for a finished image, read up to the image bound.
    async fn fetch_image(&self, image: &Value) -> Result<GeneratedImage, ProviderFailure> {
        let filename = image["filename"].as_str().unwrap_or_default().to_owned();
        let response = self
            .http
            .get(format!("{}/view", self.base))
            .query(&[
                ("filename", filename.as_str()),
                ("subfolder", image["subfolder"].as_str().unwrap_or_default()),
                ("type", image["type"].as_str().unwrap_or("output")),
            ])
            .send()
            .await
            .map_err(|e| self.fail(None, e.without_url().to_string()))?;
        let status = response.status();
        if !status.is_success() {
            return Err(self.fail(Some(status.as_u16()), "image fetch failed".into()));
        }
        let mime = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("image/png")
            .to_owned();
        let bytes = read_bounded(response, self.max_image_bytes)
            .await
            .map_err(|e| self.fail(None, e.without_url().to_string()))?
            .complete(self.max_image_bytes)
            .map_err(|e| body_failure("image", &e, self.model_file.clone()))?;
        Ok(GeneratedImage {
            bytes,
            mime,
            filename: if filename.is_empty() {
                "image.png".into()
            } else {
                filename
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workflow_is_filled_and_its_model_file_found() {
        let workflow: Value =
            serde_json::from_str(include_str!("../../config/comfyui_workflow.json"))
                .expect("shipped workflow is JSON");
        assert_eq!(
            model_file(&workflow).as_deref(),
            Some("sd_xl_base_1.0.safetensors")
        );
        let request = ImageRequest {
            prompt: "a fox".into(),
            aspect: "portrait".into(),
            seed: 7,
        };
        let filled = fill(&workflow, &request);
        assert_eq!(filled["6"]["inputs"]["text"], "a fox");
        assert_eq!(filled["5"]["inputs"]["width"], 832);
        assert_eq!(filled["5"]["inputs"]["height"], 1216);
        assert_eq!(filled["3"]["inputs"]["seed"], 7);
        assert!(!filled.to_string().contains("{{"));
    }
}
