//! Image backends (HTTP adapters of [`crate::domain::ports::ImageBackend`]): ComfyUI, and any
//! OpenAI-compatible images endpoint. A failure carries the HTTP status and the backend's text
//! for classification only (SPEC T8); the only value a reason may name is the model file the
//! ComfyUI workflow sent.

pub mod comfyui;
pub mod openai_images;

use std::time::Duration;

/// The HTTP client image backends share.
pub(crate) fn http() -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .build()
}

/// A backend failure from an HTTP answer (status and text) or a transport error.
pub(crate) fn failure(
    status: Option<u16>,
    message: String,
    workflow_model_file: Option<String>,
) -> crate::domain::provider_failure::ProviderFailure {
    crate::domain::provider_failure::ProviderFailure {
        status,
        message,
        workflow_model_file,
    }
}

/// A backend failure from a body that could not be used: a broken connection is a network
/// failure, an answer too large or not the expected JSON a bad answer from the server.
pub(crate) fn body_failure(
    what: &str,
    error: &crate::http_body::BodyError,
    workflow_model_file: Option<String>,
) -> crate::domain::provider_failure::ProviderFailure {
    let status = match error {
        crate::http_body::BodyError::Read(_) => None,
        _ => Some(502),
    };
    failure(status, format!("{what}: {error}"), workflow_model_file)
}

/// The configured image backend.
pub fn backend(
    config: &crate::config::ImageWorkerConfig,
    secrets: &crate::config::Secrets,
) -> anyhow::Result<std::sync::Arc<dyn crate::domain::ports::ImageBackend>> {
    use crate::config::ImageBackendKind;
    use anyhow::Context as _;
    Ok(match config.backend {
        ImageBackendKind::None => std::sync::Arc::new(crate::domain::ports::NoBackend),
        ImageBackendKind::Comfyui => {
            let text = std::fs::read_to_string(&config.comfyui_workflow).with_context(|| {
                format!(
                    "image_worker.comfyui_workflow: cannot read {}",
                    config.comfyui_workflow
                )
            })?;
            let workflow = serde_json::from_str(&text).with_context(|| {
                format!(
                    "image_worker.comfyui_workflow: {} is not JSON",
                    config.comfyui_workflow
                )
            })?;
            std::sync::Arc::new(comfyui::ComfyUi::new(
                &config.comfyui_url,
                workflow,
                config.max_image_bytes,
            )?)
        }
        ImageBackendKind::Openai => {
            let key = secrets
                .images_key
                .clone()
                .or_else(|| secrets.provider_keys.first().cloned());
            std::sync::Arc::new(openai_images::OpenAiImages::new(
                &config.openai_url,
                &config.openai_model,
                key,
                config.max_image_bytes,
            )?)
        }
    })
}
