//! Media ports: an image backend that makes a planned image, and a poster that puts it in the
//! channel. The worker (`crate::engine::image_worker`) drives them; `media/` and `discord/` implement them.

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::PortError;
use crate::domain::provider_failure::ProviderFailure;
use crate::domain::scope::{ChannelId, MessageId};

/// What to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRequest {
    pub prompt: String,
    /// `square`, `portrait` or `landscape`.
    pub aspect: String,
    /// Fixed per plan, so a retried task asks for the same image.
    pub seed: u64,
}

impl ImageRequest {
    /// Pixel size for the aspect.
    pub fn size(&self) -> (u32, u32) {
        match self.aspect.as_str() {
            "portrait" => (832, 1216),
            "landscape" => (1216, 832),
            _ => (1024, 1024),
        }
    }
}

/// A made image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedImage {
    pub bytes: Vec<u8>,
    pub mime: String,
    pub filename: String,
}

/// Makes images. A failure is a [`ProviderFailure`]: classified by the failure builder, its raw
/// text never shown to anyone but operators (SPEC T8).
#[async_trait]
pub trait ImageBackend: Send + Sync {
    async fn generate(
        &self,
        request: &ImageRequest,
        cancel: &CancellationToken,
    ) -> Result<GeneratedImage, ProviderFailure>;
}

/// What posting an image gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Posted {
    Confirmed(MessageId),
    /// Discord definitely refused.
    Refused(String),
    /// It may or may not be posted.
    Unconfirmed(String),
}

/// Posts images into channels.
#[async_trait]
pub trait ImagePoster: Send + Sync {
    /// Posts `image` with an optional caption. `nonce` makes a repeated post of the same task
    /// a no-op on Discord's side.
    async fn post_image(
        &self,
        channel: ChannelId,
        image: &GeneratedImage,
        caption: Option<&str>,
        nonce: &str,
    ) -> Posted;
}

/// An image backend that is not configured: every task fails with a clear reason.
pub struct NoBackend;

#[async_trait]
impl ImageBackend for NoBackend {
    async fn generate(
        &self,
        _request: &ImageRequest,
        _cancel: &CancellationToken,
    ) -> Result<GeneratedImage, ProviderFailure> {
        Err(ProviderFailure {
            status: Some(503),
            message: "service unavailable: no image backend is configured".into(),
            workflow_model_file: None,
        })
    }
}

impl From<PortError> for Posted {
    fn from(error: PortError) -> Self {
        Posted::Unconfirmed(error.to_string())
    }
}
