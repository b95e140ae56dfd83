//! An OpenAI-compatible images endpoint (`POST /images/generations`), answering with base64
//! image data.

use async_trait::async_trait;
use base64::Engine as _;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{body_failure, failure, http};
use crate::domain::ports::{GeneratedImage, ImageBackend, ImageRequest};
use crate::domain::provider_failure::ProviderFailure;
use crate::http_body::{ERROR_TEXT_MAX, json_bounded, text_bounded};

pub struct OpenAiImages {
    http: reqwest::Client,
    base: String,
    model: String,
    key: Option<SecretString>,
    /// Largest answer read: the JSON carrying the base64 image.
    max_image_bytes: usize,
}

impl OpenAiImages {
    pub fn new(
        base: &str,
        model: &str,
        key: Option<SecretString>,
        max_image_bytes: usize,
    ) -> Result<Self, reqwest::Error> {
        Ok(Self {
            http: http()?,
            base: base.trim_end_matches('/').to_owned(),
            model: model.to_owned(),
            key,
            max_image_bytes,
        })
    }
}

#[async_trait]
impl ImageBackend for OpenAiImages {
    async fn generate(
        &self,
        request: &ImageRequest,
        cancel: &CancellationToken,
    ) -> Result<GeneratedImage, ProviderFailure> {
        let size = match request.aspect.as_str() {
            "portrait" => "1024x1536",
            "landscape" => "1536x1024",
            _ => "1024x1024",
        };
        let body = if self.model.starts_with("dall-e") {
            json!({ "model": self.model, "prompt": request.prompt, "size": size, "n": 1,
                    "response_format": "b64_json" })
        } else {
            json!({ "model": self.model, "prompt": request.prompt, "size": size, "n": 1 })
        };
        let mut call = self
            .http
            .post(format!("{}/images/generations", self.base))
            .json(&body);
        if let Some(key) = &self.key {
            call = call.bearer_auth(key.expose_secret());
        }
        let response = tokio::select! {
            () = cancel.cancelled() => return Err(failure(None, "cancelled: timed out".into(), None)),
            response = call.send() => response.map_err(|e| failure(None, e.without_url().to_string(), None))?,
        };
        let status = response.status();
        if !status.is_success() {
            let text = text_bounded(response, ERROR_TEXT_MAX).await;
            let parsed: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            let field = |pointer: &str| parsed.pointer(pointer).and_then(Value::as_str);
            let message = field("/error/message").map_or(text.clone(), |m| {
                format!("{m} {}", field("/error/code").unwrap_or_default())
            });
            return Err(failure(Some(status.as_u16()), message, None));
        }
        let read = tokio::select! {
            () = cancel.cancelled() => return Err(failure(None, "cancelled: timed out".into(), None)),
            read = json_bounded::<Value>(response, self.max_image_bytes) => read,
        };
        let parsed = read.map_err(|e| body_failure("answer", &e, None))?;
        let encoded = parsed
            .pointer("/data/0/b64_json")
            .and_then(Value::as_str)
            .ok_or_else(|| failure(Some(502), "no image data in the answer".into(), None))?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|e| failure(Some(502), format!("bad image data: {e}"), None))?;
        Ok(GeneratedImage {
            bytes,
            mime: "image/png".into(),
            filename: "image.png".into(),
        })
    }
}
