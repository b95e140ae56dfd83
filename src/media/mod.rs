//! Image backends (HTTP adapters of [`crate::chat::media::ImageBackend`]): ComfyUI, and any
//! OpenAI-compatible images endpoint. A failure carries the HTTP status and the backend's text
//! for classification only (SPEC T8); the only value a reason may name is the model file the
//! ComfyUI workflow sent.

pub mod comfyui;
pub mod openai_images;

use std::time::Duration;

/// The HTTP client image backends share.
pub(crate) fn http() -> Result<reqwest::Client, reqwest::Error> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .build()
}

/// A backend failure from an HTTP answer (status and text) or a transport error.
pub(crate) fn failure(
    status: Option<u16>,
    message: String,
    workflow_model_file: Option<String>,
) -> crate::chat::provider_failure::ProviderFailure {
    crate::chat::provider_failure::ProviderFailure {
        status,
        message,
        workflow_model_file,
    }
}
