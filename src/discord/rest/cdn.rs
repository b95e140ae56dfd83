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

/// A transport error, without its URL (signed, though not with the bot's token): its cause.
fn transport(error: reqwest::Error) -> PortError {
    unavailable(format!("{}", error.without_url()))
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
            let response = self.http.get(url).send().await.map_err(transport)?;
            // Only a 2xx is the file: a redirect (not followed) or an error is no attachment.
            let status = response.status();
            if !status.is_success() {
                return Err(unavailable(format!("the CDN answered {status}")));
            }
            read_bounded(response, max).await.map_err(transport)
        };
        let body = tokio::time::timeout(self.timeout, download)
            .await
            .map_err(|_| unavailable(format!("no answer within {:?}", self.timeout)))??;
        Ok(Fetched {
            bytes: body.bytes,
            complete: !body.cut,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n rest of a png";

    /// A CDN on 127.0.0.1 answering every download with `status`, a `Location` and a picture.
    async fn cdn_answering(status: u16) -> String {
        let app = axum::Router::new().fallback(move || async move {
            let status = http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::OK);
            (
                status,
                [(http::header::LOCATION, "http://127.0.0.1:9/x.png")],
                PNG,
            )
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://{address}")
    }

    fn fetcher(origin: &str) -> CdnFetcher {
        crate::http_body::install_crypto_provider();
        let config = AttachmentsConfig {
            origins: vec![origin.to_owned()],
            ..crate::config::Config::shipped_defaults().attachments
        };
        CdnFetcher::new(&config).unwrap()
    }

    // SPEC D7: a redirect from the CDN is no file: "unavailable", its body unread, its target never
    // asked; a 200 is the file.
    #[tokio::test]
    async fn a_redirect_is_unavailable_never_the_file() {
        for status in [301, 302, 307] {
            let origin = cdn_answering(status).await;
            let url = format!("{origin}/attachments/1/2/a.png");
            match fetcher(&origin).fetch(&url, 1024).await {
                Err(PortError::Unavailable { detail, .. }) => {
                    assert!(detail.contains(&status.to_string()), "{detail}");
                }
                other => panic!("{status}: {other:?}"),
            }
        }
        let origin = cdn_answering(200).await;
        let url = format!("{origin}/attachments/1/2/a.png");
        let fetched = fetcher(&origin).fetch(&url, 1024).await.unwrap();
        assert_eq!(fetched.bytes, PNG);
    }
}
