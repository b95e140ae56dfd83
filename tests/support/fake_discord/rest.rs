//! The REST entry point: records every request, parses its body (JSON or multipart), lets the
//! rate limiter admit it, checks the bot token, and hands it to the routes; and the answers they
//! give, Discord's permission refusals among them.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Value, json};

use super::permissions::{SEND_MESSAGES, VIEW_CHANNEL};
use super::routes::route;
use super::state::Shared;
use super::{Recorded, Upload};

fn json_response(status: u16, body: &Value) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

pub(super) fn ok(body: &Value) -> Response {
    json_response(200, body)
}

pub(super) fn no_content() -> Response {
    StatusCode::NO_CONTENT.into_response()
}

pub(super) fn error(status: u16, message: &str, code: u64) -> Response {
    json_response(status, &json!({"message": message, "code": code}))
}

fn not_found() -> Response {
    error(404, "404: Not Found", 0)
}

pub(super) fn invalid_form_body(field: &str, code: &str, message: &str) -> Response {
    invalid_form_body_at(&[field], code, message)
}

/// Invalid Form Body for a nested field, e.g. `["allowed_mentions", "parse", "0"]`.
pub(super) fn invalid_form_body_at(path: &[&str], code: &str, message: &str) -> Response {
    let mut errors = json!({"_errors": [{"code": code, "message": message}]});
    for key in path.iter().rev() {
        errors = json!({ *key: errors });
    }
    json_response(
        400,
        &json!({"message": "Invalid Form Body", "code": 50035, "errors": errors}),
    )
}

/// A 5xx as it reaches a client: Discord's JSON for a 500, the edge proxy's page for a 502 or
/// 504, the load balancer's text for a 503.
pub(super) fn server_error(status: u16) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let reason = code.canonical_reason().unwrap_or("Server Error");
    let (content_type, body) = match status {
        502 | 504 => (
            "text/html",
            format!(
                "<html>\r\n<head><title>{status} {reason}</title></head>\r\n<body>\r\n\
                 <center><h1>{status} {reason}</h1></center>\r\n<hr><center>cloudflare</center>\r\n\
                 </body>\r\n</html>\r\n"
            ),
        ),
        503 => (
            "text/plain",
            "upstream connect error or disconnect/reset before headers. reset reason: \
             connection termination"
                .to_owned(),
        ),
        _ => (
            "application/json",
            json!({"message": format!("{status}: {reason}"), "code": 0}).to_string(),
        ),
    };
    (code, [(header::CONTENT_TYPE, content_type)], body).into_response()
}

/// The guild of a channel: `Some` for a guild channel, `None` for a DM; Discord's 404 Unknown
/// Channel (10003) for neither.
#[allow(clippy::result_large_err)] // the error is the response to send
pub(super) fn channel_guild(shared: &Shared, channel_id: u64) -> Result<Option<u64>, Response> {
    match shared.world.channel(channel_id) {
        Some((guild, _)) => Ok(Some(guild.id)),
        None if Shared::dm_user(&shared.lock(), channel_id).is_some() => Ok(None),
        None => Err(error(404, "Unknown Channel", 10003)),
    }
}

/// Discord's refusal when the bot lacks one of `needed` in a guild channel: 50001 Missing Access
/// without VIEW_CHANNEL, 50013 Missing Permissions for the rest. A DM needs nothing.
pub(super) fn refusal_without(shared: &Shared, channel_id: u64, needed: u64) -> Option<Response> {
    let world = &shared.world;
    world.channel(channel_id)?;
    let has = world.permissions_in(world.bot_id, channel_id);
    if has & VIEW_CHANNEL == 0 {
        return Some(error(403, "Missing Access", 50001));
    }
    if has & needed != needed {
        return Some(error(403, "Missing Permissions", 50013));
    }
    None
}

/// What sending a message in a channel needs.
pub(super) const SEND: u64 = VIEW_CHANNEL | SEND_MESSAGES;

/// The JSON body and files of a request (JSON, or multipart with `payload_json`).
fn parse_body(headers: &HeaderMap, body: &[u8]) -> (Value, Vec<Upload>) {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if let Some(boundary) = content_type
        .strip_prefix("multipart/form-data")
        .and_then(|rest| rest.split("boundary=").nth(1))
    {
        return parse_multipart(body, boundary.trim_matches('"'));
    }
    if body.is_empty() {
        return (Value::Null, Vec::new());
    }
    let json = serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()));
    (json, Vec::new())
}

fn parse_multipart(body: &[u8], boundary: &str) -> (Value, Vec<Upload>) {
    let delimiter = format!("--{boundary}");
    let delimiter = delimiter.as_bytes();
    let mut json = Value::Null;
    let mut files = Vec::new();
    let mut starts = Vec::new();
    let mut i = 0;
    while i + delimiter.len() <= body.len() {
        if &body[i..i + delimiter.len()] == delimiter {
            starts.push(i);
            i += delimiter.len();
        } else {
            i += 1;
        }
    }
    for pair in starts.windows(2) {
        let part = &body[pair[0] + delimiter.len()..pair[1]];
        let part = part.strip_prefix(b"\r\n").unwrap_or(part);
        let part = part.strip_suffix(b"\r\n").unwrap_or(part);
        let Some(split) = part.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&part[..split]).into_owned();
        let data = &part[split + 4..];
        let disposition = head
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("content-disposition:"))
            .unwrap_or("");
        let param = |name: &str| {
            disposition.split(';').find_map(|kv| {
                let (k, v) = kv.trim().split_once('=')?;
                (k == name).then(|| v.trim_matches('"').to_owned())
            })
        };
        let field = param("name").unwrap_or_default();
        let filename = param("filename");
        let content_type = head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_owned())
        });
        if field == "payload_json" {
            json = serde_json::from_slice(data).unwrap_or(Value::Null);
        } else if let Some(filename) = filename {
            files.push(Upload {
                field,
                filename,
                content_type,
                data: Bytes::copy_from_slice(data),
            });
        }
    }
    (json, files)
}

fn query_params(query: Option<&str>) -> HashMap<String, String> {
    query
        .unwrap_or("")
        .split('&')
        .filter(|kv| !kv.is_empty())
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            Some((k.to_owned(), v.to_owned()))
        })
        .collect()
}

/// The request as tests see it: its path without `/api/v10` (with the query as sent), body,
/// authorization and files.
fn record(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    json: &Value,
    files: &[Upload],
) -> Recorded {
    let full_path = uri.path();
    let path = full_path.strip_prefix("/api/v10").unwrap_or(full_path);
    Recorded {
        method: method.to_string(),
        path: match uri.query() {
            Some(q) => format!("{path}?{q}"),
            None => path.to_owned(),
        },
        body: json.clone(),
        authorization: headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        files: files.to_vec(),
        status: 0,
        at: std::time::Instant::now(),
    }
}

pub(super) async fn rest(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (json, files) = parse_body(&headers, &body);
    let full_path = uri.path();
    let path = full_path.strip_prefix("/api/v10").unwrap_or(full_path);
    let recorded = record(&method, &uri, &headers, &json, &files);
    let authorization = recorded.authorization.clone();
    let index = {
        let mut inner = shared.lock();
        inner.requests.push(recorded.clone());
        inner.requests.len() - 1
    };
    let answered = |response: Response| {
        if let Some(r) = shared.lock().requests.get_mut(index) {
            r.status = response.status().as_u16();
        }
        response
    };
    if let Some(file) = full_path.strip_prefix("/attachments/") {
        return answered(super::cdn::serve(&shared, method.as_str(), file));
    }
    if !full_path.starts_with("/api/v10/") {
        shared.lock().unexpected.push(Recorded {
            status: 404,
            ..recorded
        });
        return answered(not_found());
    }
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let admitted = shared.lock().limits.admit(method.as_str(), &segments);
    let admission = match admitted {
        Ok(admission) => admission,
        Err(too_many) => return answered(too_many),
    };
    let query = query_params(uri.query());
    let needs_bot_auth = !matches!(segments.first(), Some(&"interactions" | &"webhooks"));
    let rejected = {
        let inner = shared.lock();
        inner.rejected_on_rest
            && inner
                .rejected_token
                .as_deref()
                .is_some_and(|t| authorization.as_deref() == Some(&format!("Bot {t}")))
    };
    let response = if needs_bot_auth
        && (rejected
            || !authorization
                .as_deref()
                .is_some_and(|a| a.starts_with("Bot ")))
    {
        error(401, "401: Unauthorized", 0)
    } else {
        match route(&shared, &method, &segments, &query, json, files) {
            Some(response) => response,
            None => {
                shared.lock().unexpected.push(Recorded {
                    status: 404,
                    ..recorded
                });
                not_found()
            }
        }
    };
    let response = shared.lock().limits.answered(admission, response);
    answered(response)
}

pub(super) fn parse_id(s: &str) -> Option<u64> {
    s.parse().ok()
}
