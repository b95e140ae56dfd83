//! Downloads of message attachments from Discord's CDN: only from the configured origins, never
//! following a redirect, without the bot's token (the CDN needs none), within a time and a size
//! bound.

use std::time::Duration;

use async_trait::async_trait;

use crate::config::AttachmentsConfig;
use crate::domain::ports::{AttachmentFetcher, Fetched, PortError};
use crate::http_body::read_bounded;

/// The CDN client.
pub struct CdnFetcher {
    http: reqwest::Client,
    origins: Vec<url::Origin>,
    timeout: Duration,
}

impl CdnFetcher {
    /// `config.origins` were checked at load: one that does not parse is left out.
    pub fn new(config: &AttachmentsConfig) -> Result<Self, reqwest::Error> {
        let timeout = Duration::from_secs(config.fetch_timeout_secs);
        Ok(Self {
            http: reqwest::Client::builder()
                .connect_timeout(timeout.min(Duration::from_secs(10)))
                .timeout(timeout)
                // A redirect could lead anywhere: an attachment is where Discord says, or nowhere.
                .redirect(reqwest::redirect::Policy::none())
                .build()?,
            origins: config
                .origins
                .iter()
                .filter_map(|o| url::Url::parse(o).ok())
                .map(|u| u.origin())
                .collect(),
            timeout,
        })
    }
}

fn unavailable(detail: impl Into<String>) -> PortError {
    PortError::Unavailable {
        what: "attachment",
        detail: detail.into(),
    }
}

#[async_trait]
impl AttachmentFetcher for CdnFetcher {
    async fn fetch(&self, url: &str, max_bytes: u64) -> Result<Fetched, PortError> {
        let url = url::Url::parse(url).map_err(|_| unavailable("not a URL"))?;
        if !self.origins.contains(&url.origin()) {
            return Err(unavailable("not on Discord's CDN; never fetched"));
        }
        let max = usize::try_from(max_bytes).unwrap_or(usize::MAX);
        let download = async {
            let response = self.http.get(url).send().await?.error_for_status()?;
            read_bounded(response, max).await
        };
        let body = tokio::time::timeout(self.timeout, download)
            .await
            .map_err(|_| unavailable(format!("no answer within {:?}", self.timeout)))?
            // The error's text carries the URL (signed, but not the bot's): status or cause only.
            .map_err(|e| match e.status() {
                Some(status) => unavailable(format!("the CDN answered {status}")),
                None => unavailable(format!("{}", e.without_url())),
            })?;
        Ok(Fetched {
            bytes: body.bytes,
            complete: !body.cut,
        })
    }
}
