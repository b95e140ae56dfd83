//! The HTTP transport under async-openai: one request, no retries (the pass loop owns retries,
//! key rotation and fallback), and every non-2xx answer turned into an API error that keeps its
//! HTTP status and the provider's message, so failures classify correctly (SPEC C11).
//!
//! A streamed answer's body is bounded in size and in time ([`StreamLimits`]): async-openai reads
//! it in a task of its own, as fast as it comes, into an unbounded queue, so the bound must sit
//! under it. When a bound cuts the body the transport says which in the stream's [`CutReport`],
//! because the error that reaches the event stream has lost all detail on the way.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use async_openai::error::{ApiError, ApiErrorResponse, OpenAIError};
use async_openai::middleware::HttpRequestFactory;
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use serde::Deserialize;

use crate::http_body::ERROR_TEXT_MAX;

/// Longest provider error text kept (for classification and operator logs).
const MAX_ERROR_TEXT: usize = 2_000;

/// Bounds on one streamed answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// Most bytes of body (SSE lines, as sent).
    pub max_bytes: usize,
    /// Longest time from the answer's headers to its end.
    pub max_duration: Duration,
}

/// Which bound cut a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    Bytes(usize),
    Time(Duration),
}

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Bytes(max) => write!(f, "the streamed answer went past {max} bytes"),
            Self::Time(max) => write!(f, "the streamed answer went on past {}s", max.as_secs()),
        }
    }
}

/// Where one request's transport says that (and why) it cut the body: set once, by the body
/// stream; read by the event stream.
#[derive(Debug, Default)]
pub struct CutReport(OnceLock<Cut>);

impl CutReport {
    pub fn get(&self) -> Option<Cut> {
        self.0.get().copied()
    }

    pub(crate) fn set(&self, cut: Cut) {
        // Only the first cut counts; the body ends with it.
        let _ = self.0.set(cut);
    }
}

/// The transport of one streamed request (a client is built per request, so the report is
/// this request's own).
#[derive(Clone)]
pub struct NoRetryTransport {
    http: reqwest::Client,
    limits: StreamLimits,
    report: Arc<CutReport>,
}

impl NoRetryTransport {
    pub fn new(http: reqwest::Client, limits: StreamLimits, report: Arc<CutReport>) -> Self {
        Self {
            http,
            limits,
            report,
        }
    }
}

impl tower::Service<HttpRequestFactory> for NoRetryTransport {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, factory: HttpRequestFactory) -> Self::Future {
        let http = self.http.clone();
        let (limits, report) = (self.limits, self.report.clone());
        Box::pin(async move {
            let request = factory.build().await?;
            let response = http.execute(request).await.map_err(OpenAIError::Reqwest)?;
            if response.status().is_success() {
                return Ok(bounded(response, limits, report));
            }
            let status = response.status();
            let body = crate::http_body::text_bounded(response, ERROR_TEXT_MAX).await;
            Err(OpenAIError::ApiError(ApiErrorResponse {
                status_code: status,
                api_error: parse_error_body(&body),
            }))
        })
    }
}

/// The answer with its body under `limits`: past either bound the body fails (and the report
/// says which), which ends the stream above it.
fn bounded(
    response: reqwest::Response,
    limits: StreamLimits,
    report: Arc<CutReport>,
) -> reqwest::Response {
    let status = response.status();
    let version = response.version();
    let headers = response.headers().clone();
    let body = reqwest::Body::wrap_stream(bounded_body(
        response.bytes_stream().boxed(),
        limits,
        report,
    ));
    let mut rebuilt = http::Response::new(body);
    *rebuilt.status_mut() = status;
    *rebuilt.version_mut() = version;
    *rebuilt.headers_mut() = headers;
    reqwest::Response::from(rebuilt)
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// `bytes` until it ends, goes past `limits.max_bytes`, or outlasts `limits.max_duration`.
pub fn bounded_body(
    bytes: BoxStream<'static, reqwest::Result<Bytes>>,
    limits: StreamLimits,
    report: Arc<CutReport>,
) -> BoxStream<'static, Result<Bytes, BoxError>> {
    struct State {
        bytes: BoxStream<'static, reqwest::Result<Bytes>>,
        read: usize,
        limits: StreamLimits,
        /// Sleeps far past any clock when the duration is huge (tokio caps it).
        deadline: Pin<Box<tokio::time::Sleep>>,
        report: Arc<CutReport>,
        ended: bool,
    }
    let state = State {
        bytes,
        read: 0,
        limits,
        deadline: Box::pin(tokio::time::sleep(limits.max_duration)),
        report,
        ended: false,
    };
    futures::stream::unfold(state, |mut s| async move {
        if s.ended {
            return None;
        }
        let next = tokio::select! {
            biased;
            () = &mut s.deadline => Err(Cut::Time(s.limits.max_duration)),
            next = s.bytes.next() => Ok(next),
        };
        let cut = match next {
            Ok(None) => return None,
            Ok(Some(Ok(chunk))) => {
                s.read = s.read.saturating_add(chunk.len());
                if s.read <= s.limits.max_bytes {
                    return Some((Ok(chunk), s));
                }
                Cut::Bytes(s.limits.max_bytes)
            }
            Ok(Some(Err(error))) => {
                s.ended = true;
                return Some((Err(BoxError::from(error)), s));
            }
            Err(cut) => cut,
        };
        // A bound was passed: say which, then end the body with an error.
        s.report.set(cut);
        s.ended = true;
        Some((Err(BoxError::from(cut.to_string())), s))
    })
    .boxed()
}

/// `{"error": {"message", "type", "code", "param"}}` as OpenAI-compatible servers send it
/// (codes may be numbers), the same fields at the top level (vLLM: `{"object": "error", ...}`),
/// or `{"error": "text"}` (Ollama's own API); anything else becomes the message as is.
fn parse_error_body(body: &str) -> ApiError {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Wrapped {
        Nested { error: Inner },
        Text { error: String },
        Flat(Inner),
    }
    #[derive(Deserialize)]
    struct Inner {
        #[serde(default)]
        message: Option<String>,
        #[serde(default, rename = "type")]
        kind: Option<serde_json::Value>,
        #[serde(default)]
        code: Option<serde_json::Value>,
        #[serde(default)]
        param: Option<serde_json::Value>,
    }
    let text = |v: Option<serde_json::Value>| {
        v.and_then(|v| match v {
            serde_json::Value::Null => None,
            serde_json::Value::String(s) => Some(s),
            other => Some(other.to_string()),
        })
    };
    let parsed = match serde_json::from_str::<Wrapped>(body) {
        Ok(Wrapped::Nested { error }) => Some(error),
        Ok(Wrapped::Text { error }) => Some(Inner {
            message: Some(error),
            kind: None,
            code: None,
            param: None,
        }),
        Ok(Wrapped::Flat(inner)) if inner.message.is_some() => Some(inner),
        _ => None,
    };
    match parsed {
        Some(error) => ApiError {
            message: error
                .message
                .unwrap_or_default()
                .chars()
                .take(MAX_ERROR_TEXT)
                .collect(),
            r#type: text(error.kind),
            param: text(error.param),
            code: text(error.code),
            misalignment: None,
        },
        None => ApiError {
            message: body.chars().take(MAX_ERROR_TEXT).collect(),
            r#type: None,
            param: None,
            code: None,
            misalignment: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_bytes: usize, secs: u64) -> StreamLimits {
        StreamLimits {
            max_bytes,
            max_duration: Duration::from_secs(secs),
        }
    }

    async fn drain(
        chunks: Vec<&'static str>,
        limits: StreamLimits,
    ) -> (Vec<Result<Bytes, String>>, Option<Cut>) {
        let report = Arc::new(CutReport::default());
        let bytes = futures::stream::iter(chunks.into_iter().map(|c| Ok(Bytes::from(c))));
        let out = bounded_body(bytes.boxed(), limits, report.clone())
            .map(|r| r.map_err(|e| e.to_string()))
            .collect()
            .await;
        (out, report.get())
    }

    // A body of exactly the bound passes; one byte more ends it, reported.
    #[tokio::test]
    async fn the_byte_bound_is_inclusive_and_reported() {
        let (whole, cut) = drain(vec!["12345", "67890"], limits(10, 60)).await;
        assert_eq!(whole.len(), 2);
        assert!(whole.iter().all(Result::is_ok));
        assert_eq!(cut, None);
        let (over, cut) = drain(vec!["12345", "67890", "more"], limits(9, 60)).await;
        assert_eq!(
            over.len(),
            2,
            "the passing chunk, then the error; nothing after"
        );
        assert!(over[1].as_ref().is_err_and(|e| e.contains("9 bytes")));
        assert_eq!(cut, Some(Cut::Bytes(9)));
    }

    // A body that never ends is cut at the time bound, even with no bytes coming.
    #[tokio::test(start_paused = true)]
    async fn a_body_that_never_ends_is_cut_at_the_time_bound() {
        let report = Arc::new(CutReport::default());
        let mut body = bounded_body(
            futures::stream::pending().boxed(),
            limits(10, 600),
            report.clone(),
        );
        let next = tokio::time::timeout(Duration::from_secs(601), body.next()).await;
        assert!(matches!(next, Ok(Some(Err(_)))), "{next:?}");
        assert_eq!(report.get(), Some(Cut::Time(Duration::from_secs(600))));
        assert!(body.next().await.is_none());
    }

    #[test]
    fn error_bodies_parse_leniently() {
        let e = parse_error_body(
            r#"{"error":{"message":"quota","type":"insufficient_quota","code":429}}"#,
        );
        assert_eq!(e.message, "quota");
        assert_eq!(e.r#type.as_deref(), Some("insufficient_quota"));
        assert_eq!(e.code.as_deref(), Some("429"));
        let plain = parse_error_body("Too Many Requests");
        assert_eq!(plain.message, "Too Many Requests");
        // vLLM's top-level error object, and Ollama's error as a string.
        let vllm = parse_error_body(
            r#"{"object":"error","message":"The model `x` does not exist.","type":"NotFoundError","param":null,"code":404}"#,
        );
        assert_eq!(vllm.message, "The model `x` does not exist.");
        assert_eq!(vllm.r#type.as_deref(), Some("NotFoundError"));
        assert_eq!(vllm.code.as_deref(), Some("404"));
        let ollama = parse_error_body(r#"{"error":"model \"x\" not found, try pulling it first"}"#);
        assert_eq!(
            ollama.message,
            "model \"x\" not found, try pulling it first"
        );
        let other = parse_error_body(r#"{"detail":"Not Found"}"#);
        assert_eq!(other.message, r#"{"detail":"Not Found"}"#);
    }
}
