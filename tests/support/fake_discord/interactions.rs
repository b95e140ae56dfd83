//! Interaction answers: the callback (once, within the deadline: 3 s after the dispatch by
//! default), the original response (read, edited, deleted) and follow-ups (while the token
//! lives, 15 minutes), each kept as the message Discord would show and, unless ephemeral,
//! dispatched as Discord does (MESSAGE_CREATE, MESSAGE_UPDATE, MESSAGE_DELETE).

use std::sync::Arc;

use axum::response::Response;
use serde_json::{Value, json};

use super::Upload;
use super::channel_messages::{
    EPHEMERAL, LOADING, SETTABLE_MESSAGE_FLAGS, build_message, normalize_embed,
};
use super::message_objects::now;
use super::rest::{error, invalid_form_body_at, no_content, ok};
use super::session::dispatch_locked;
use super::state::{INTERACTION_TOKEN_LIFETIME, Inner, InteractionState, Shared};

/// Where an interaction's messages go.
#[derive(Clone, Copy)]
struct Target {
    channel_id: u64,
    guild_id: Option<u64>,
}

impl Target {
    fn of(state: &InteractionState) -> Self {
        Self {
            channel_id: state.channel_id,
            guild_id: state.guild_id,
        }
    }
}

fn ephemeral(message: &Value) -> bool {
    message["flags"].as_u64().unwrap_or(0) & EPHEMERAL != 0
}

/// Dispatches an interaction's message unless it is ephemeral (only its user sees those).
fn dispatch_unless_ephemeral(
    shared: &Shared,
    inner: &mut Inner,
    t: &str,
    message: &Value,
    to: Target,
) {
    if !ephemeral(message) {
        let d = shared.world.as_dispatched(message.clone(), to.guild_id);
        dispatch_locked(inner, t, d);
    }
}

/// Discord's answer to a webhook call with an interaction token that no longer lives: it lives
/// 15 minutes from the interaction's creation, the time its id holds.
fn expired(state: &InteractionState) -> Option<Response> {
    let made_ms = (state.id >> 22) + super::state::DISCORD_EPOCH_MS;
    let made = std::time::UNIX_EPOCH + std::time::Duration::from_millis(made_ms);
    let age = std::time::SystemTime::now()
        .duration_since(made)
        .unwrap_or_default();
    (age > INTERACTION_TOKEN_LIFETIME).then(|| error(401, "Invalid Webhook Token", 50027))
}

/// Discord's refusal of an edit whose text is over a message's 2000 characters.
fn too_long(body: &Value) -> Option<Response> {
    let content = body["content"].as_str().unwrap_or("");
    (content.chars().count() > 2000).then(|| {
        invalid_form_body_at(
            &["content"],
            "BASE_TYPE_MAX_LENGTH",
            "Must be 2000 or fewer in length.",
        )
    })
}

/// Applies an edit's `body` to `message` (text, embeds, components, flags), as Discord shows it.
fn edited_message(shared: &Arc<Shared>, message: &Value, body: &Value, files: &[Upload]) -> Value {
    let mut edited = message.clone();
    for key in ["content", "embeds", "components", "flags"] {
        if let Some(v) = body.get(key).filter(|v| !v.is_null()) {
            edited[key] = if key == "embeds" {
                json!(
                    v.as_array()
                        .into_iter()
                        .flatten()
                        .map(normalize_embed)
                        .collect::<Vec<_>>()
                )
            } else {
                v.clone()
            };
        }
    }
    // an edit of a deferred response ends its "thinking..." state; ephemeral stays as it was
    let kept = message["flags"].as_u64().unwrap_or(0) & EPHEMERAL;
    edited["flags"] = json!((edited["flags"].as_u64().unwrap_or(0) & !LOADING) | kept);
    if !files.is_empty() {
        let extra: Vec<Value> = files
            .iter()
            .map(|f| {
                let url = format!("https://cdn.discordapp.com/attachments/x/{}", f.filename);
                json!({
                    "id": shared.snowflake().to_string(),
                    "filename": f.filename, "size": f.data.len(),
                    "url": url, "proxy_url": url, "content_type": f.content_type,
                })
            })
            .collect();
        edited["attachments"] = json!(extra);
    }
    edited["edited_timestamp"] = json!(now());
    edited
}

/// Puts an edited interaction message where the channel shows it, and tells the gateway.
fn show_edit(shared: &Shared, inner: &mut Inner, edited: &Value, to: Target) {
    if let Some(m) = inner
        .history
        .get_mut(&to.channel_id)
        .and_then(|h| h.iter_mut().find(|m| m["id"] == edited["id"]))
    {
        *m = edited.clone();
    }
    dispatch_unless_ephemeral(shared, inner, "MESSAGE_UPDATE", edited, to);
}

/// Takes an interaction message out of the channel, and tells the gateway.
fn show_delete(inner: &mut Inner, message: &Value, to: Target) {
    if let Some(h) = inner.history.get_mut(&to.channel_id) {
        h.retain(|m| m["id"] != message["id"]);
    }
    if !ephemeral(message) {
        let mut deleted = json!({
            "id": message["id"],
            "channel_id": to.channel_id.to_string(),
        });
        if let Some(g) = to.guild_id {
            deleted["guild_id"] = json!(g.to_string());
        }
        dispatch_locked(inner, "MESSAGE_DELETE", deleted);
    }
}

/// A message from an interaction webhook (original response or follow-up). `lenient`: a body
/// that would not make a channel message (a deferred response) still makes an empty one.
#[allow(clippy::result_large_err)] // the error is the response to send
fn interaction_message(
    shared: &Arc<Shared>,
    to: Target,
    data: &Value,
    files: &[Upload],
    lenient: bool,
) -> Result<Value, Response> {
    let world = &shared.world;
    let mut message = match build_message(shared, to.channel_id, to.guild_id, data, files) {
        Ok(m) => m,
        Err(_) if lenient => world.message_json(
            shared.snowflake(),
            to.channel_id,
            to.guild_id,
            world.user(world.bot_id),
            "",
        ),
        Err(response) => return Err(response),
    };
    message["type"] = json!(20);
    message["webhook_id"] = json!(world.application_id.to_string());
    message["application_id"] = json!(world.application_id.to_string());
    let flags = data["flags"].as_u64().unwrap_or(0);
    message["flags"] = json!(flags & (SETTABLE_MESSAGE_FLAGS | EPHEMERAL));
    Ok(message)
}

pub(super) fn interaction_callback(
    shared: &Arc<Shared>,
    id: u64,
    token: &str,
    body: Value,
    files: &[Upload],
) -> Response {
    let mut inner = shared.lock();
    let deadline = inner.interaction_deadline;
    let Some(state) = inner.interactions.get_mut(token).filter(|s| s.id == id) else {
        return error(404, "Unknown interaction", 10062);
    };
    if state.acknowledged {
        return error(400, "Interaction has already been acknowledged.", 40060);
    }
    // too late: Discord has already shown the user that the application did not respond
    if state.dispatched_at.elapsed() > deadline {
        return error(404, "Unknown interaction", 10062);
    }
    let kind = body["type"].as_u64().unwrap_or(0);
    // A command is answered with a message, a deferred one or a modal; a modal's submit with a
    // message or a deferred one; a pressed component also with an update of its message (a
    // deferred one, 6, or at once, 7).
    let allowed = match state.payload["type"].as_u64() {
        Some(5) => matches!(kind, 4 | 5),
        Some(3) => matches!(kind, 4..=7),
        _ => matches!(kind, 4 | 5 | 9),
    };
    if !allowed {
        return invalid_form_body_at(
            &["type"],
            "INTERACTION_RESPONSE_TYPE_INVALID",
            "Invalid interaction response type",
        );
    }
    if kind == 9 {
        if let Err(refusal) = super::modals::check_modal(&body["data"]) {
            return refusal;
        }
        state.modal = Some(body["data"].clone());
    }
    if matches!(kind, 6 | 7) {
        let updated = match super::components::update_pressed(shared, state, kind, &body["data"]) {
            Ok(updated) => updated,
            Err(refusal) => return refusal,
        };
        state.acknowledged = true;
        let to = Target::of(state);
        if kind == 7 {
            if let Some(m) = inner
                .history
                .get_mut(&to.channel_id)
                .and_then(|h| h.iter_mut().find(|m| m["id"] == updated["id"]))
            {
                *m = updated.clone();
            }
            dispatch_unless_ephemeral(shared, &mut inner, "MESSAGE_UPDATE", &updated, to);
        }
        inner.interaction_responses.push((id, body));
        return no_content();
    }
    state.acknowledged = true;
    let to = Target::of(state);
    drop(inner);
    let original = match kind {
        // CHANNEL_MESSAGE_WITH_SOURCE, DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE
        4 | 5 => {
            let data = if body["data"].is_object() {
                body["data"].clone()
            } else {
                json!({})
            };
            match interaction_message(shared, to, &data, files, kind == 5) {
                Ok(mut message) => {
                    if kind == 5 {
                        message["content"] = json!("");
                        let flags = message["flags"].as_u64().unwrap_or(0);
                        message["flags"] = json!(flags | LOADING);
                    }
                    Some(message)
                }
                Err(response) => {
                    // not acknowledged after all
                    if let Some(state) = shared.lock().interactions.get_mut(token) {
                        state.acknowledged = false;
                    }
                    return response;
                }
            }
        }
        _ => None,
    };
    let mut inner = shared.lock();
    if let Some(message) = &original
        && !ephemeral(message)
    {
        inner
            .history
            .entry(to.channel_id)
            .or_default()
            .push(message.clone());
        dispatch_unless_ephemeral(shared, &mut inner, "MESSAGE_CREATE", message, to);
    }
    if let Some(state) = inner.interactions.get_mut(token) {
        state.original = original;
    }
    inner.interaction_responses.push((id, body));
    no_content()
}

pub(super) fn original_message(
    shared: &Arc<Shared>,
    method: &str,
    token: &str,
    body: Value,
    files: &[Upload],
) -> Option<Response> {
    let mut inner = shared.lock();
    let Some(state) = inner.interactions.get_mut(token) else {
        return Some(error(404, "Unknown Webhook", 10015));
    };
    if let Some(refusal) = expired(state) {
        return Some(refusal);
    }
    let Some(original) = state.original.clone() else {
        return Some(error(404, "Unknown Message", 10008));
    };
    let to = Target::of(state);
    let response = match method {
        "GET" => ok(&original),
        "DELETE" => {
            state.original = None;
            show_delete(&mut inner, &original, to);
            no_content()
        }
        "PATCH" => {
            if let Some(refusal) = too_long(&body) {
                return Some(refusal);
            }
            let edited = edited_message(shared, &original, &body, files);
            state.original = Some(edited.clone());
            show_edit(shared, &mut inner, &edited, to);
            ok(&edited)
        }
        _ => return None,
    };
    Some(response)
}

/// An edit (`PATCH`) or a delete of one of an interaction's follow-ups, by its token, while the
/// token lives.
pub(super) fn followup_message(
    shared: &Arc<Shared>,
    method: &str,
    token: &str,
    message_id: u64,
    body: &Value,
) -> Response {
    let mut inner = shared.lock();
    let Some(state) = inner.interactions.get_mut(token) else {
        return error(401, "Invalid Webhook Token", 50027);
    };
    if let Some(refusal) = expired(state) {
        return refusal;
    }
    let id = message_id.to_string();
    let Some(at) = state.followups.iter().position(|m| m["id"] == json!(id)) else {
        return error(404, "Unknown Message", 10008);
    };
    let to = Target::of(state);
    if method == "DELETE" {
        let message = state.followups.remove(at);
        show_delete(&mut inner, &message, to);
        return no_content();
    }
    if let Some(refusal) = too_long(body) {
        return refusal;
    }
    if let Err(refusal) = super::validation::check_components(body) {
        return refusal;
    }
    let edited = edited_message(shared, &state.followups[at], body, &[]);
    state.followups[at] = edited.clone();
    show_edit(shared, &mut inner, &edited, to);
    ok(&edited)
}

pub(super) fn followup(
    shared: &Arc<Shared>,
    token: &str,
    body: Value,
    files: &[Upload],
) -> Response {
    let to = {
        let inner = shared.lock();
        let Some(state) = inner.interactions.get(token) else {
            return error(404, "Unknown Webhook", 10015);
        };
        if !state.acknowledged {
            return error(404, "Unknown Webhook", 10015);
        }
        if let Some(refusal) = expired(state) {
            return refusal;
        }
        Target::of(state)
    };
    let message = match interaction_message(shared, to, &body, files, false) {
        Ok(m) => m,
        Err(response) => return response,
    };
    let mut inner = shared.lock();
    if !ephemeral(&message) {
        inner
            .history
            .entry(to.channel_id)
            .or_default()
            .push(message.clone());
        dispatch_unless_ephemeral(shared, &mut inner, "MESSAGE_CREATE", &message, to);
    }
    if let Some(state) = inner.interactions.get_mut(token) {
        state.followups.push(message.clone());
    }
    ok(&message)
}
