//! Channel webhooks, as Discord answers them: listed and made (`GET`/`POST
//! /channels/{id}/webhooks`) by a bot with MANAGE_WEBHOOKS there, at most 15 per channel, a name
//! of 1 to 80 characters without "clyde" or "discord"; and executed (`POST
//! /webhooks/{id}/{token}`, `?wait=true` for the message, else 204) with its token and no bot
//! permission. An executed message is checked and built as a channel message is (content length,
//! empty message, `allowed_mentions`, pings), then has the webhook as its author (under the
//! body's `username`, if any), `webhook_id` and no `member`; it is stored in the channel's
//! history and dispatched as MESSAGE_CREATE. Discord ignores a webhook message's
//! `message_reference` (and nonce), and refuses its `sticker_ids`.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use axum::response::Response;
use serde_json::{Value, json};

use super::Upload;
use super::channel_messages::build_message;
use super::permissions::{MANAGE_WEBHOOKS, VIEW_CHANNEL};
use super::rest::{
    channel_guild, error, invalid_form_body, no_content, ok, refusal_without, server_error,
};
use super::session::dispatch_locked;
use super::state::Shared;
use super::world::World;

/// How many webhooks a channel may have.
pub(super) const MAX_WEBHOOKS_PER_CHANNEL: usize = 15;
/// The longest webhook name (and execute `username`).
const NAME_MAX: usize = 80;
/// What no webhook name (or execute `username`) may contain, in any case.
const RESERVED: [&str; 2] = ["clyde", "discord"];

/// Its token, as the fake makes them.
fn token_of(webhook_id: u64) -> String {
    format!("wtoken-{webhook_id}")
}

/// The guild of a channel whose webhooks the bot may manage, or Discord's refusal: 10003 for an
/// unknown channel, 50003 for a DM, 50001/50013 without VIEW_CHANNEL/MANAGE_WEBHOOKS.
#[allow(clippy::result_large_err)] // the error is the response to send
fn managed_channel(shared: &Arc<Shared>, channel_id: u64) -> Result<u64, Response> {
    let Some(guild_id) = channel_guild(shared, channel_id)? else {
        return Err(error(403, "Cannot execute action on a DM channel", 50003));
    };
    match refusal_without(shared, channel_id, VIEW_CHANNEL | MANAGE_WEBHOOKS) {
        Some(refusal) => Err(refusal),
        None => Ok(guild_id),
    }
}

/// A webhook name or execute `username` (at `field`) as Discord checks it: a string of 1 to 80
/// characters containing neither "clyde" nor "discord".
#[allow(clippy::result_large_err)] // the error is the response to send
fn check_name(field: &str, value: &Value) -> Result<String, Response> {
    let Some(name) = value.as_str() else {
        return Err(invalid_form_body(
            field,
            "BASE_TYPE_STRING",
            "Must be a string.",
        ));
    };
    let length = name.chars().count();
    if !(1..=NAME_MAX).contains(&length) {
        return Err(invalid_form_body(
            field,
            "BASE_TYPE_BAD_LENGTH",
            &format!("Must be between 1 and {NAME_MAX} in length."),
        ));
    }
    let lower = name.to_lowercase();
    if let Some(word) = RESERVED.iter().find(|w| lower.contains(*w)) {
        return Err(invalid_form_body(
            field,
            "USERNAME_INVALID_CONTAINS",
            &format!("Username cannot contain \"{word}\""),
        ));
    }
    Ok(name.to_owned())
}

/// `GET /channels/{id}/webhooks`: the channel's webhooks, oldest first.
pub(super) fn list_webhooks(shared: &Arc<Shared>, channel_id: u64) -> Response {
    if let Err(refusal) = managed_channel(shared, channel_id) {
        return refusal;
    }
    ok(&json!(channel_webhooks(
        &shared.lock().webhooks,
        channel_id
    )))
}

/// The webhooks of a channel, oldest first.
pub(super) fn channel_webhooks(
    webhooks: &std::collections::BTreeMap<u64, Value>,
    channel_id: u64,
) -> Vec<Value> {
    let channel = json!(channel_id.to_string());
    webhooks
        .values()
        .filter(|w| w["channel_id"] == channel)
        .cloned()
        .collect()
}

/// `POST /channels/{id}/webhooks` with `{"name", "avatar"?}`.
pub(super) fn create_webhook(shared: &Arc<Shared>, channel_id: u64, body: &Value) -> Response {
    if let Err(refusal) = managed_channel(shared, channel_id) {
        return refusal;
    }
    let name = match body.get("name").filter(|n| !n.is_null()) {
        None => {
            return invalid_form_body("name", "BASE_TYPE_REQUIRED", "This field is required");
        }
        Some(name) => match check_name("name", name) {
            Ok(name) => name,
            Err(refusal) => return refusal,
        },
    };
    let world = &shared.world;
    let mut inner = shared.lock();
    if channel_webhooks(&inner.webhooks, channel_id).len() >= MAX_WEBHOOKS_PER_CHANNEL {
        return error(
            400,
            &format!("Maximum number of webhooks reached ({MAX_WEBHOOKS_PER_CHANNEL})"),
            30007,
        );
    }
    let id = shared.snowflake();
    let mut webhook = incoming_webhook(world, id, channel_id, &name, world.bot_id);
    webhook["application_id"] = json!(world.application_id.to_string());
    inner.webhooks.insert(id, webhook.clone());
    inner.limits.webhooks.insert(id);
    ok(&webhook)
}

/// An incoming webhook (type 1) of a guild channel, made by `owner`, as Discord returns it
/// (token included; `application_id` null: set when an application made it).
pub(super) fn incoming_webhook(
    world: &World,
    id: u64,
    channel_id: u64,
    name: &str,
    owner: u64,
) -> Value {
    let guild_id = world.channel(channel_id).map_or(0, |(g, _)| g.id);
    json!({
        "id": id.to_string(),
        "type": 1,
        "guild_id": guild_id.to_string(),
        "channel_id": channel_id.to_string(),
        "name": name,
        "avatar": null,
        "token": token_of(id),
        "application_id": null,
        "user": world.user(owner),
    })
}

/// Discord's checks of an execute's own fields (beyond a channel message's): `username`,
/// `avatar_url`, and no `sticker_ids`.
#[allow(clippy::result_large_err)] // the error is the response to send
fn check_execute(body: &Value) -> Result<Option<String>, Response> {
    let username = match body.get("username").filter(|u| !u.is_null()) {
        Some(username) => Some(check_name("username", username)?),
        None => None,
    };
    if let Some(avatar_url) = body.get("avatar_url").filter(|a| !a.is_null()) {
        let parsed = avatar_url.as_str().and_then(|a| url::Url::parse(a).ok());
        if !parsed.is_some_and(|u| matches!(u.scheme(), "http" | "https")) {
            return Err(invalid_form_body(
                "avatar_url",
                "URL_TYPE_INVALID_URL",
                "Not a well formed URL.",
            ));
        }
    }
    if body.get("sticker_ids").is_some_and(|s| !s.is_null()) {
        // webhooks cannot send stickers (the error's inner code and wording are the fake's)
        return Err(invalid_form_body(
            "sticker_ids",
            "WEBHOOK_STICKERS_INVALID",
            "Webhooks cannot send stickers.",
        ));
    }
    Ok(username)
}

/// Makes `message` the webhook's post, under `name`: the webhook is its author.
fn posted_by(message: &mut Value, webhook_id: u64, name: &str, world: &World) {
    message["author"] = json!({
        "id": webhook_id.to_string(),
        "username": name,
        "avatar": null,
        "discriminator": "0000",
        "bot": true,
        "global_name": null,
        "public_flags": 0,
    });
    message["webhook_id"] = json!(webhook_id.to_string());
    message["application_id"] = json!(world.application_id.to_string());
}

/// `POST /webhooks/{id}/{token}` of a channel webhook (an interaction follow-up has the
/// application's id there, and is not for here).
pub(super) fn execute_webhook(
    shared: &Arc<Shared>,
    webhook_id: u64,
    token: &str,
    query: &HashMap<String, String>,
    body: Value,
    files: &[Upload],
) -> Response {
    let Some(webhook) = shared.lock().webhooks.get(&webhook_id).cloned() else {
        return error(404, "Unknown Webhook", 10015);
    };
    if webhook["token"].as_str() != Some(token) {
        return error(401, "Invalid Webhook Token", 50027);
    }
    let id_of = |v: &Value| v.as_str().and_then(|s| s.parse::<u64>().ok());
    let (Some(channel_id), Some(guild_id)) =
        (id_of(&webhook["channel_id"]), id_of(&webhook["guild_id"]))
    else {
        return error(404, "Unknown Webhook", 10015);
    };
    let username = match check_execute(&body) {
        Ok(username) => username,
        Err(refusal) => return refusal,
    };
    // what Discord ignores in a webhook message
    let mut sent = body.clone();
    if let Some(fields) = sent.as_object_mut() {
        for key in ["message_reference", "nonce", "enforce_nonce"] {
            fields.remove(key);
        }
    }
    let mut message = match build_message(shared, channel_id, Some(guild_id), &sent, files) {
        Ok(message) => message,
        Err(refusal) => return refusal,
    };
    let world = &shared.world;
    let name = username.unwrap_or_else(|| webhook["name"].as_str().unwrap_or("").to_owned());
    posted_by(&mut message, webhook_id, &name, world);
    let mut inner = shared.lock();
    if !inner.webhooks.contains_key(&webhook_id) {
        // deleted meanwhile
        return error(404, "Unknown Webhook", 10015);
    }
    let mut posted = body;
    if posted.is_object() {
        posted["webhook_id"] = json!(webhook_id.to_string());
    }
    inner
        .webhook_posts
        .entry(channel_id)
        .or_default()
        .push(posted);
    inner
        .history
        .entry(channel_id)
        .or_default()
        .push(message.clone());
    let dispatched = world.as_dispatched(message.clone(), Some(guild_id));
    dispatch_locked(&mut inner, "MESSAGE_CREATE", dispatched);
    let fail_after = inner
        .webhook_fail_after
        .get_mut(&channel_id)
        .and_then(VecDeque::pop_front);
    drop(inner);
    if let Some(status) = fail_after {
        return server_error(status);
    }
    let wait = query
        .get("wait")
        .is_some_and(|w| matches!(w.to_ascii_lowercase().as_str(), "true" | "1"));
    if wait { ok(&message) } else { no_content() }
}

/// `PATCH`/`DELETE /webhooks/{id}/{token}/messages/{message}`: a channel webhook edits (content,
/// components, checked as a channel edit is) or deletes a message it posted itself, with its
/// token; another's message is 10008 Unknown Message.
pub(super) fn webhook_message(
    shared: &Arc<Shared>,
    method: &str,
    webhook_id: u64,
    token: &str,
    message_id: u64,
    body: &Value,
) -> Response {
    let Some(webhook) = shared.lock().webhooks.get(&webhook_id).cloned() else {
        return error(404, "Unknown Webhook", 10015);
    };
    if webhook["token"].as_str() != Some(token) {
        return error(401, "Invalid Webhook Token", 50027);
    }
    if method == "PATCH"
        && let Err(refusal) = super::validation::check_components(body)
    {
        return refusal;
    }
    let channel_id = webhook["channel_id"]
        .as_str()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(0);
    let id = message_id.to_string();
    let hook = webhook_id.to_string();
    let mut inner = shared.lock();
    let Some(history) = inner.history.get_mut(&channel_id) else {
        return error(404, "Unknown Message", 10008);
    };
    let Some(at) = history
        .iter()
        .position(|m| m["id"].as_str() == Some(id.as_str()) && m["webhook_id"] == json!(hook))
    else {
        return error(404, "Unknown Message", 10008);
    };
    let guild_id = webhook["guild_id"]
        .as_str()
        .and_then(|s| s.parse::<u64>().ok());
    if method == "DELETE" {
        history.remove(at);
        let mut deleted = json!({ "id": id, "channel_id": channel_id.to_string() });
        if let Some(guild_id) = guild_id {
            deleted["guild_id"] = json!(guild_id.to_string());
        }
        dispatch_locked(&mut inner, "MESSAGE_DELETE", deleted);
        return no_content();
    }
    let message = &mut history[at];
    for key in ["content", "components"] {
        if let Some(v) = body.get(key).filter(|v| !v.is_null()) {
            message[key] = v.clone();
        }
    }
    message["edited_timestamp"] = json!(super::message_objects::now());
    let edited = message.clone();
    let dispatched = shared.world.as_dispatched(edited.clone(), guild_id);
    dispatch_locked(&mut inner, "MESSAGE_UPDATE", dispatched);
    ok(&edited)
}
