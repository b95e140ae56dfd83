//! `POST /channels/{id}/messages`: scripted answers first, then Discord's checks (the bot's
//! permissions, empty message, content over 2000 characters, unknown sticker or replied-to
//! message, `allowed_mentions`, the nonce), then the message as Discord returns it, stored and
//! dispatched as MESSAGE_CREATE. An `enforce_nonce` create whose nonce matches a recent message
//! of the channel returns that message and creates nothing.

use std::collections::VecDeque;
use std::sync::Arc;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::Upload;
use super::mentions::{Pings, pings};
use super::message_objects::reference_json;
use super::permissions::{ATTACH_FILES, READ_MESSAGE_HISTORY};
use super::rate_limits::{AsScripted, ScriptedRateLimit};
use super::rest::{
    SEND, channel_guild, error, invalid_form_body, ok, parse_id, refusal_without, server_error,
};
use super::session::dispatch_locked;
use super::state::{Inner, NONCE_LIFETIME, Scripted, Shared};
use super::world::World;

pub(super) const SETTABLE_MESSAGE_FLAGS: u64 = 1 << 2 | 1 << 12 | 1 << 13 | 1 << 15;
pub(super) const EPHEMERAL: u64 = 1 << 6;
pub(super) const LOADING: u64 = 1 << 7;

/// Checks a message body as Discord would, and builds the message.
#[allow(clippy::result_large_err)] // the error is the response to send
pub(super) fn build_message(
    shared: &Arc<Shared>,
    channel_id: u64,
    guild_id: Option<u64>,
    body: &Value,
    files: &[Upload],
) -> Result<Value, Response> {
    let world = &shared.world;
    let content = body["content"].as_str().unwrap_or("");
    if content.chars().count() > 2000 {
        return Err(invalid_form_body(
            "content",
            "BASE_TYPE_MAX_LENGTH",
            "Must be 2000 or fewer in length.",
        ));
    }
    super::validation::check_components(body)?;
    let mut sticker_items = Vec::new();
    for sticker in body["sticker_ids"].as_array().into_iter().flatten() {
        let id = match sticker {
            Value::String(s) => parse_id(s),
            Value::Number(n) => n.as_u64(),
            _ => None,
        };
        let found = id.and_then(|id| {
            guild_id
                .and_then(|g| world.guild(g))
                .and_then(|g| g.stickers.iter().find(|(sid, _)| *sid == id))
        });
        match found {
            Some((sid, name)) => sticker_items.push(json!({
                "id": sid.to_string(), "name": name, "format_type": 1,
            })),
            None => {
                return Err(invalid_form_body(
                    "sticker_ids",
                    "STICKER_NOT_FOUND",
                    "Unknown sticker",
                ));
            }
        }
    }
    let embeds: Vec<Value> = body["embeds"]
        .as_array()
        .into_iter()
        .flatten()
        .map(normalize_embed)
        .collect();
    let attachments: Vec<Value> = files
        .iter()
        .map(|f| {
            let id = shared.snowflake();
            let url = format!(
                "https://cdn.discordapp.com/attachments/{channel_id}/{id}/{}",
                f.filename
            );
            json!({
                "id": id.to_string(),
                "filename": f.filename,
                "size": f.data.len(),
                "url": url,
                "proxy_url": url.replace("cdn.discordapp.com", "media.discordapp.net"),
                "content_type": f.content_type,
            })
        })
        .collect();
    if content.trim().is_empty()
        && embeds.is_empty()
        && sticker_items.is_empty()
        && attachments.is_empty()
        && body["components"].as_array().is_none_or(Vec::is_empty)
        && body.get("poll").is_none_or(Value::is_null)
    {
        return Err(error(400, "Cannot send an empty message", 50006));
    }
    let id = shared.snowflake();
    let author = world.user(world.bot_id);
    let mut message = world.message_json(id, channel_id, guild_id, author, content);
    message["embeds"] = json!(embeds);
    message["sticker_items"] = json!(sticker_items);
    message["attachments"] = json!(attachments);
    message["tts"] = json!(body["tts"].as_bool().unwrap_or(false));
    // a channel message may only set SUPPRESS_EMBEDS, SUPPRESS_NOTIFICATIONS, IS_VOICE_MESSAGE
    // and IS_COMPONENTS_V2
    message["flags"] = json!(body["flags"].as_u64().unwrap_or(0) & SETTABLE_MESSAGE_FLAGS);
    if let Some(nonce) = body.get("nonce").filter(|n| !n.is_null()) {
        message["nonce"] = nonce.clone();
    }
    if let Some(components) = body.get("components").filter(|c| c.is_array()) {
        message["components"] = components.clone();
    }
    let mut replied_author = None;
    if let Some(reference) = body.get("message_reference").filter(|r| r.is_object()) {
        let ref_id = match &reference["message_id"] {
            Value::String(s) => parse_id(s),
            Value::Number(n) => n.as_u64(),
            _ => None,
        };
        if let Some(ref_id) = ref_id {
            let ref_channel = match &reference["channel_id"] {
                Value::String(s) => parse_id(s).unwrap_or(channel_id),
                Value::Number(n) => n.as_u64().unwrap_or(channel_id),
                _ => channel_id,
            };
            let referenced = shared.lock().history.get(&ref_channel).and_then(|h| {
                h.iter()
                    .find(|m| m["id"] == json!(ref_id.to_string()))
                    .cloned()
            });
            let fail = reference["fail_if_not_exists"].as_bool().unwrap_or(true);
            if referenced.is_none() && fail {
                return Err(invalid_form_body(
                    "message_reference",
                    "MESSAGE_REFERENCE_UNKNOWN_MESSAGE",
                    "Unknown message",
                ));
            }
            if let Some(referenced) = referenced {
                replied_author = referenced["author"]["id"].as_str().and_then(parse_id);
                message["type"] = json!(19);
                message["message_reference"] = reference_json(ref_id, ref_channel, guild_id);
                message["referenced_message"] = referenced;
            }
        }
    }
    let pinged = pings(world, channel_id, guild_id, content, body, replied_author)?;
    set_pings(world, &mut message, guild_id, &pinged);
    Ok(message)
}

/// Writes who a message pings into its `mentions` (users, with their member in a guild),
/// `mention_roles` and `mention_everyone`.
pub(super) fn set_pings(world: &World, message: &mut Value, guild_id: Option<u64>, pinged: &Pings) {
    let mentions: Vec<Value> = pinged
        .users
        .iter()
        .map(|uid| {
            let mut user = world.user(*uid);
            if let Some(g) = guild_id
                && (*uid == world.bot_id || world.member(g, *uid).is_some())
            {
                user["member"] = world.partial_member_json(g, *uid);
            }
            user
        })
        .collect();
    message["mentions"] = json!(mentions);
    message["mention_roles"] = json!(pinged.roles.iter().map(u64::to_string).collect::<Vec<_>>());
    message["mention_everyone"] = json!(pinged.everyone);
}

/// An embed as Discord returns it: `type: rich`, media with `proxy_url`.
pub(super) fn normalize_embed(embed: &Value) -> Value {
    let mut e = embed.clone();
    if !e.is_object() {
        return json!({"type": "rich"});
    }
    if e.get("type").is_none_or(Value::is_null) {
        e["type"] = json!("rich");
    }
    for media in ["image", "thumbnail"] {
        if let Some(url) = e[media]["url"].as_str().map(str::to_owned)
            && e[media].get("proxy_url").is_none()
        {
            e[media]["proxy_url"] = json!(url);
        }
    }
    if let Some(fields) = e.get_mut("fields").and_then(Value::as_array_mut) {
        for f in fields {
            if f.get("inline").is_none() {
                f["inline"] = json!(false);
            }
        }
    }
    e
}

/// The longest nonce Discord takes.
const NONCE_MAX: usize = 25;

/// A nonce as a key: a string as is, a number in decimal.
fn nonce_key(nonce: &Value) -> Option<String> {
    match nonce {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The channel's message created in the last [`NONCE_LIFETIME`] with this nonce, if any.
fn same_nonce(inner: &Inner, channel_id: u64, nonce: &str) -> Option<Value> {
    let (id, at) = inner.nonces.get(&(channel_id, nonce.to_owned()))?;
    if at.elapsed() > NONCE_LIFETIME {
        return None;
    }
    inner
        .history
        .get(&channel_id)?
        .iter()
        .find(|m| m["id"] == json!(id.to_string()))
        .cloned()
}

/// A scripted answer, as the test wrote it.
fn scripted_answer(
    status: u16,
    body: String,
    headers: Vec<(&'static str, String)>,
    as_is: bool,
) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, [(header::CONTENT_TYPE, "application/json")], body).into_response();
    for (name, value) in headers {
        if let Ok(value) = value.parse() {
            response.headers_mut().insert(name, value);
        }
    }
    if as_is {
        response.extensions_mut().insert(AsScripted);
    }
    response
}

pub(super) fn create_message(
    shared: &Arc<Shared>,
    channel_id: u64,
    body: Value,
    files: &[Upload],
) -> Response {
    let guild_id = match channel_guild(shared, channel_id) {
        Ok(guild_id) => guild_id,
        Err(unknown) => return unknown,
    };
    let scripted = shared
        .lock()
        .scripted
        .get_mut(&channel_id)
        .and_then(VecDeque::pop_front);
    let fail_after_create = match scripted {
        Some(Scripted::Answer {
            status,
            body,
            headers,
            as_is,
        }) => return scripted_answer(status, body, headers, as_is),
        Some(Scripted::RateLimited { retry_after }) => {
            let mut response = StatusCode::TOO_MANY_REQUESTS.into_response();
            response
                .extensions_mut()
                .insert(ScriptedRateLimit(retry_after));
            return response;
        }
        Some(Scripted::FailAfterCreate { status }) => Some(status),
        None => None,
    };
    let mut needed = SEND;
    if !files.is_empty() {
        needed |= ATTACH_FILES;
    }
    if body.get("message_reference").is_some_and(Value::is_object) {
        needed |= READ_MESSAGE_HISTORY;
    }
    if let Some(refusal) = refusal_without(shared, channel_id, needed) {
        return refusal;
    }
    let nonce = body.get("nonce").and_then(nonce_key);
    if nonce
        .as_ref()
        .is_some_and(|n| n.chars().count() > NONCE_MAX)
    {
        return invalid_form_body(
            "nonce",
            "BASE_TYPE_MAX_LENGTH",
            "Must be 25 or fewer in length.",
        );
    }
    let enforce_nonce = body["enforce_nonce"].as_bool().unwrap_or(false);
    let message = match build_message(shared, channel_id, guild_id, &body, files) {
        Ok(m) => m,
        Err(response) => return response,
    };
    let mut inner = shared.lock();
    let existing = nonce
        .as_deref()
        .filter(|_| enforce_nonce)
        .and_then(|n| same_nonce(&inner, channel_id, n));
    let message = match existing {
        Some(existing) => existing,
        None => {
            if let Some(nonce) = nonce {
                let id = message["id"].as_str().and_then(parse_id).unwrap_or(0);
                inner
                    .nonces
                    .insert((channel_id, nonce), (id, Instant::now()));
            }
            inner.posted.entry(channel_id).or_default().push(body);
            inner
                .history
                .entry(channel_id)
                .or_default()
                .push(message.clone());
            let dispatched = shared.world.as_dispatched(message.clone(), guild_id);
            dispatch_locked(&mut inner, "MESSAGE_CREATE", dispatched);
            message
        }
    };
    drop(inner);
    match fail_after_create {
        Some(status) => server_error(status),
        None => ok(&message),
    }
}
