//! Discord's CDN for attachments, on the fake's own address: a message's files get attachment
//! objects as Discord sends them (id, filename, size, url, proxy_url, content_type) and their
//! bytes are served at `url` without any authorization, as the real CDN does. A request the
//! CDN does not hold is answered 404 with its text body.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::state::{Inner, Shared};

/// A file a test message carries.
#[derive(Debug, Clone)]
pub struct FakeFile {
    pub filename: String,
    /// The declared type, as Discord guesses it from the name (`None`: Discord had no guess).
    pub content_type: Option<String>,
    pub bytes: Vec<u8>,
}

impl FakeFile {
    pub fn new(filename: &str, content_type: Option<&str>, bytes: Vec<u8>) -> Self {
        Self {
            filename: filename.into(),
            content_type: content_type.map(str::to_owned),
            bytes,
        }
    }
}

impl Shared {
    /// The fake's base URL (`http://127.0.0.1:port`), which also serves as its CDN.
    pub(super) fn base_url(&self) -> String {
        self.ws_url
            .replace("ws://", "http://")
            .trim_end_matches("/gateway")
            .to_owned()
    }

    /// Stores `files` on the CDN and returns their attachment objects.
    pub(super) fn attachments_json(
        &self,
        inner: &mut Inner,
        channel_id: u64,
        files: &[FakeFile],
    ) -> Value {
        let base = self.base_url();
        let objects: Vec<Value> = files
            .iter()
            .map(|f| {
                let id = self.snowflake();
                let path = format!("{channel_id}/{id}/{}", f.filename);
                inner.files.insert(path.clone(), f.clone());
                let mut object = json!({
                    "id": id.to_string(),
                    "filename": f.filename,
                    "size": f.bytes.len(),
                    "url": format!("{base}/attachments/{path}?ex=1&is=2&hm=3"),
                    "proxy_url": format!("{base}/attachments/{path}?ex=1&is=2&hm=3"),
                });
                if let Some(kind) = &f.content_type {
                    object["content_type"] = json!(kind);
                }
                object
            })
            .collect();
        Value::Array(objects)
    }
}

/// `GET /attachments/{channel}/{id}/{filename}`.
pub(super) fn serve(shared: &Shared, method: &str, path: &str) -> Response {
    let file = shared.lock().files.get(path).cloned();
    match (method, file) {
        ("GET", Some(file)) => {
            let kind = file
                .content_type
                .unwrap_or_else(|| "application/octet-stream".into());
            (StatusCode::OK, [(header::CONTENT_TYPE, kind)], file.bytes).into_response()
        }
        _ => (
            StatusCode::NOT_FOUND,
            "This content is no longer available.",
        )
            .into_response(),
    }
}
