//! Reading an HTTP answer's body with a bound: every body the bot reads from outside (provider
//! error answers, Discord's REST answers, image backends) goes through [`read_bounded`], which
//! takes the body chunk by chunk and stops at the bound, so a 50 MB error page or an endless
//! answer costs at most the bound in memory. What is past the bound is never read: dropping the
//! response closes its connection.

use serde::de::DeserializeOwned;

/// How far an error answer is read: far more than any server's error message (its text is cut
/// to 2000 characters for classification anyway), never a whole error page.
pub const ERROR_TEXT_MAX: usize = 64 * 1024;

/// A body read up to a bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounded {
    /// At most the bound.
    pub bytes: Vec<u8>,
    /// The body went on past the bound; `bytes` is its beginning.
    pub cut: bool,
}

impl Bounded {
    /// The text, invalid UTF-8 replaced (a cut may split a character): for error messages.
    pub fn text_lossy(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }

    /// The whole body, or [`BodyError::TooLarge`] when it was cut.
    pub fn complete(self, max: usize) -> Result<Vec<u8>, BodyError> {
        if self.cut {
            return Err(BodyError::TooLarge { max });
        }
        Ok(self.bytes)
    }
}

/// Why a body could not be used.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("the answer is larger than {max} bytes; the rest was not read")]
    TooLarge { max: usize },
    /// The connection failed while reading (the URL is left out).
    #[error("the answer could not be read: {0}")]
    Read(reqwest::Error),
    #[error("the answer is not the expected JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// Reads at most `max` bytes of `response`'s body, chunk by chunk.
pub async fn read_bounded(
    mut response: reqwest::Response,
    max: usize,
) -> Result<Bounded, reqwest::Error> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = max.saturating_sub(bytes.len());
        if chunk.len() > room {
            bytes.extend_from_slice(chunk.get(..room).unwrap_or_default());
            return Ok(Bounded { bytes, cut: true });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Bounded { bytes, cut: false })
}

/// The body as JSON, refused when it is larger than `max`.
pub async fn json_bounded<T: DeserializeOwned>(
    response: reqwest::Response,
    max: usize,
) -> Result<T, BodyError> {
    let body = read_bounded(response, max)
        .await
        .map_err(|e| BodyError::Read(e.without_url()))?;
    Ok(serde_json::from_slice(&body.complete(max)?)?)
}

/// The body as text for an error message, cut at `max` bytes; a read failure keeps what came.
pub async fn text_bounded(response: reqwest::Response, max: usize) -> String {
    match read_bounded(response, max).await {
        Ok(body) => body.text_lossy(),
        Err(error) => format!("(the answer could not be read: {})", error.without_url()),
    }
}

/// Installs the TLS crypto provider every HTTPS client here uses (rustls with ring; reqwest is
/// built without a default one). `main` calls it once, before any client is built; a program
/// embedding the bot (the tests) calls it before `app::start`. A second call does nothing.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::Router;
    use axum::body::Body;
    use axum::routing::get;
    use bytes::Bytes;

    use super::*;

    const MIB: usize = 1 << 20;
    const SMALL: &str = r#"{"ok":true,"text":"hé"}"#;

    /// A server on 127.0.0.1 answering `/big` with 50 MiB of `a`, made lazily in 64 KiB
    /// chunks (it counts the bytes it has handed out), and `/small` with a short JSON body.
    async fn server() -> (String, Arc<AtomicUsize>) {
        let sent = Arc::new(AtomicUsize::new(0));
        let counter = sent.clone();
        let big = move || {
            let counter = counter.clone();
            async move {
                let chunks = (0..800).map(move |_| {
                    counter.fetch_add(64 * 1024, Ordering::SeqCst);
                    Ok::<_, std::io::Error>(Bytes::from(vec![b'a'; 64 * 1024]))
                });
                Body::from_stream(futures::stream::iter(chunks))
            }
        };
        let app = Router::new()
            .route("/big", get(big))
            .route("/small", get(|| async { SMALL }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move { axum::serve(listener, app).await });
        (format!("http://{addr}"), sent)
    }

    async fn fetch(url: &str) -> reqwest::Response {
        let _ = rustls::crypto::ring::default_provider().install_default();
        reqwest::get(url).await.expect("answer")
    }

    // A 50 MiB body is read only up to the bound, and said to be cut.
    #[tokio::test]
    async fn a_huge_body_is_read_only_up_to_the_bound() {
        let (base, sent) = server().await;
        let body = read_bounded(fetch(&format!("{base}/big")).await, 100_000)
            .await
            .expect("read");
        assert!(body.cut);
        assert_eq!(body.bytes.len(), 100_000);
        assert!(body.bytes.iter().all(|b| *b == b'a'));
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let sent = sent.load(Ordering::SeqCst);
        assert!(sent < 10 * MIB, "the server handed out {sent} bytes");
        let error = json_bounded::<serde_json::Value>(fetch(&format!("{base}/big")).await, 1000)
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("larger than 1000 bytes"),
            "{error}"
        );
        let text = text_bounded(fetch(&format!("{base}/big")).await, 10).await;
        assert_eq!(text, "aaaaaaaaaa", "error text is cut, not refused");
    }

    // A body within the bound is read whole; the bound itself is inclusive.
    #[tokio::test]
    async fn a_body_within_the_bound_is_read_whole() {
        let (base, _) = server().await;
        let small = format!("{base}/small");
        let value: serde_json::Value = json_bounded(fetch(&small).await, 1000).await.expect("json");
        assert_eq!(value["text"], "hé");
        let exact = SMALL.len();
        let body = read_bounded(fetch(&small).await, exact)
            .await
            .expect("read");
        assert!(!body.cut);
        let cut = read_bounded(fetch(&small).await, exact - 1)
            .await
            .expect("read");
        assert!(cut.cut);
        assert_eq!(cut.bytes.len(), exact - 1);
        assert!(cut.complete(exact - 1).is_err());
        let split = Bounded {
            bytes: "hé".as_bytes().get(..2).expect("two bytes").to_vec(),
            cut: true,
        };
        assert_eq!(
            split.text_lossy(),
            "h\u{fffd}",
            "a split character is replaced"
        );
    }
}
