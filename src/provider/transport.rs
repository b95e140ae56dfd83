//! The HTTP transport under async-openai: one request, no retries (the pass loop owns retries,
//! key rotation and fallback), and every non-2xx answer turned into an API error that keeps its
//! HTTP status and the provider's message, so failures classify correctly (SPEC C11).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use async_openai::error::{ApiError, ApiErrorResponse, OpenAIError};
use async_openai::middleware::HttpRequestFactory;
use serde::Deserialize;

use crate::http_body::ERROR_TEXT_MAX;

/// Longest provider error text kept (for classification and operator logs).
const MAX_ERROR_TEXT: usize = 2_000;

#[derive(Clone)]
pub struct NoRetryTransport {
    http: reqwest::Client,
}

impl NoRetryTransport {
    pub fn new(http: reqwest::Client) -> Self {
        Self { http }
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
        Box::pin(async move {
            let request = factory.build().await?;
            let response = http.execute(request).await.map_err(OpenAIError::Reqwest)?;
            if response.status().is_success() {
                return Ok(response);
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

/// `{"error": {"message", "type", "code", "param"}}` as OpenAI-compatible servers send it
/// (codes may be numbers); anything else becomes the message as is.
fn parse_error_body(body: &str) -> ApiError {
    #[derive(Deserialize)]
    struct Wrapped {
        error: Inner,
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
    match serde_json::from_str::<Wrapped>(body) {
        Ok(Wrapped { error }) => ApiError {
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
        Err(_) => ApiError {
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
    }
}
