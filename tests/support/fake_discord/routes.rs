//! The REST routes the fake knows: gateway, users, DMs, commands, interactions, channels,
//! messages (created, edited, read), the bot's reactions, typing, channel webhooks (listed, made,
//! executed) and guilds (their stickers and emoji); each with the permission Discord wants of the
//! bot there.

use std::collections::HashMap;
use std::sync::Arc;

use axum::http::Method;
use axum::response::Response;
use serde_json::{Value, json};

use super::Upload;
use super::channel_messages::create_message;
use super::gateway::{gateway_bot_json, gateway_json};
use super::interactions::{followup, interaction_callback, original_message};
use super::message_edits::edit_message;
use super::permissions::{READ_MESSAGE_HISTORY, VIEW_CHANNEL};
use super::reactions::react;
use super::rest::{
    SEND, error, invalid_form_body, invalid_form_body_at, no_content, ok, parse_id, refusal_without,
};
use super::state::Shared;
use super::webhooks::{create_webhook, execute_webhook, list_webhooks};

/// `None`: a route the fake does not know.
pub(super) fn route(
    shared: &Arc<Shared>,
    method: &Method,
    segments: &[&str],
    query: &HashMap<String, String>,
    body: Value,
    files: Vec<Upload>,
) -> Option<Response> {
    let world = &shared.world;
    let m = method.as_str();
    let response = match (m, segments) {
        ("GET", ["gateway"]) => {
            shared.lock().gateway_answered = true;
            ok(&gateway_json(&shared.ws_url))
        }
        ("GET", ["gateway", "bot"]) => {
            let shards = {
                let mut inner = shared.lock();
                inner.gateway_answered = true;
                inner.recommended_shards
            };
            ok(&gateway_bot_json(&shared.ws_url, shards))
        }
        ("GET", ["users", "@me"]) => ok(&world.current_user_json()),
        ("GET", ["users", id]) => ok(&world.user(parse_id(id)?)),
        ("POST", ["users", "@me", "channels"]) => {
            let user_id = match &body["recipient_id"] {
                Value::String(s) => s.parse().ok(),
                Value::Number(n) => n.as_u64(),
                _ => None,
            };
            let Some(user_id) = user_id else {
                return Some(invalid_form_body(
                    "recipient_id",
                    "BASE_TYPE_REQUIRED",
                    "This field is required",
                ));
            };
            let channel_id = {
                let mut inner = shared.lock();
                shared.dm_channel(&mut inner, user_id)
            };
            ok(&dm_channel_object(shared, channel_id, user_id))
        }
        ("GET", ["oauth2", "applications", "@me"]) => {
            let mut info = world.application_info_json();
            // GATEWAY_MESSAGE_CONTENT_LIMITED (1 << 19) only while the intent is granted
            if shared.lock().ungranted_intents & super::intents::MESSAGE_CONTENT != 0 {
                info["flags"] = json!(0);
            }
            ok(&info)
        }
        ("GET", ["applications", app, "commands"]) => {
            if parse_id(app)? != world.application_id {
                return Some(error(404, "Unknown Application", 10002));
            }
            let inner = shared.lock();
            let list: Vec<Value> = inner
                .commands
                .iter()
                .filter(|(g, _)| g.is_none())
                .map(|(_, c)| c.clone())
                .collect();
            ok(&json!(list))
        }
        ("GET", ["applications", app, "guilds", guild, "commands"]) => {
            if parse_id(app)? != world.application_id {
                return Some(error(404, "Unknown Application", 10002));
            }
            let guild_id = parse_id(guild)?;
            let inner = shared.lock();
            let list: Vec<Value> = inner
                .commands
                .iter()
                .filter(|(g, _)| *g == Some(guild_id))
                .map(|(_, c)| c.clone())
                .collect();
            ok(&json!(list))
        }
        ("PUT", ["applications", app, "commands"]) => {
            if parse_id(app)? != world.application_id {
                return Some(error(404, "Unknown Application", 10002));
            }
            put_commands(shared, None, &body)
        }
        ("PUT", ["applications", app, "guilds", guild, "commands"]) => {
            if parse_id(app)? != world.application_id {
                return Some(error(404, "Unknown Application", 10002));
            }
            let guild_id = parse_id(guild)?;
            if world.guild(guild_id).is_none() {
                return Some(error(404, "Unknown Guild", 10004));
            }
            put_commands(shared, Some(guild_id), &body)
        }
        ("POST", ["interactions", id, token, "callback"]) => {
            interaction_callback(shared, parse_id(id)?, token, body, &files)
        }
        (_, ["webhooks", app, token, "messages", "@original"]) => {
            if parse_id(app)? != world.application_id {
                return Some(error(404, "Unknown Webhook", 10015));
            }
            original_message(shared, m, token, body, &files)?
        }
        (m @ ("PATCH" | "DELETE"), ["webhooks", id, token, "messages", message_id]) => {
            let (id, message_id) = (parse_id(id)?, parse_id(message_id)?);
            // the application's id: an interaction's follow-up; any other: a channel webhook's
            if id == world.application_id {
                return Some(super::interactions::followup_message(
                    shared, m, token, message_id, &body,
                ));
            }
            super::webhooks::webhook_message(shared, m, id, token, message_id, &body)
        }
        // the application's id: an interaction follow-up; any other: a channel webhook's execute
        ("POST", ["webhooks", id, token]) => {
            let id = parse_id(id)?;
            if id != world.application_id {
                return Some(execute_webhook(shared, id, token, query, body, &files));
            }
            followup(shared, token, body, &files)
        }
        ("GET", ["channels", id, "webhooks"]) => list_webhooks(shared, parse_id(id)?),
        ("POST", ["channels", id, "webhooks"]) => create_webhook(shared, parse_id(id)?, &body),
        ("POST", ["channels", id, "messages"]) => {
            create_message(shared, parse_id(id)?, body, &files)
        }
        ("DELETE", ["channels", id, "messages", message_id]) => {
            super::components::delete_message(shared, parse_id(id)?, parse_id(message_id)?)
        }
        ("PATCH", ["channels", id, "messages", message_id]) => {
            edit_message(shared, parse_id(id)?, parse_id(message_id)?, &body, &files)
        }
        ("GET", ["channels", id, "messages"]) => {
            let channel_id = parse_id(id)?;
            if !channel_exists(shared, channel_id) {
                return Some(error(404, "Unknown Channel", 10003));
            }
            if let Some(refusal) = refusal_without(shared, channel_id, VIEW_CHANNEL) {
                return Some(refusal);
            }
            if world.channel(channel_id).is_some()
                && world.permissions_in(world.bot_id, channel_id) & READ_MESSAGE_HISTORY == 0
            {
                // without READ_MESSAGE_HISTORY Discord returns no messages, and no error
                return Some(ok(&json!([])));
            }
            let limit: usize = query
                .get("limit")
                .and_then(|l| l.parse().ok())
                .unwrap_or(50)
                .clamp(1, 100);
            let before = query.get("before").and_then(|b| parse_id(b));
            let after = query.get("after").and_then(|a| parse_id(a));
            let inner = shared.lock();
            let history = inner.history.get(&channel_id).cloned().unwrap_or_default();
            let id_of = |m: &Value| m["id"].as_str().and_then(parse_id).unwrap_or(0);
            let mut selected: Vec<Value> = history
                .into_iter()
                .filter(|m| before.is_none_or(|b| id_of(m) < b))
                .filter(|m| after.is_none_or(|a| id_of(m) > a))
                .collect();
            selected.sort_by_key(|m| std::cmp::Reverse(id_of(m)));
            if after.is_some() && before.is_none() {
                // Discord returns the `limit` messages right after `after`, newest first
                let skip = selected.len().saturating_sub(limit);
                selected.drain(..skip);
            } else {
                selected.truncate(limit);
            }
            // REST messages lack the gateway's extra fields (`guild_id`, `member`, and each
            // mentioned user's `member`).
            for message in &mut selected {
                super::intents::as_read_by(inner.ungranted_intents, inner.bot_id, message);
                as_rest(message);
            }
            ok(&json!(selected))
        }
        ("GET", ["channels", id, "messages", message_id]) => {
            let channel_id = parse_id(id)?;
            let message_id = parse_id(message_id)?;
            if let Some(refusal) =
                refusal_without(shared, channel_id, VIEW_CHANNEL | READ_MESSAGE_HISTORY)
            {
                return Some(refusal);
            }
            let inner = shared.lock();
            let found = inner.history.get(&channel_id).and_then(|h| {
                h.iter()
                    .find(|m| m["id"] == json!(message_id.to_string()))
                    .cloned()
            });
            match found {
                Some(mut message) => {
                    super::intents::as_read_by(inner.ungranted_intents, inner.bot_id, &mut message);
                    ok(&message)
                }
                None => error(404, "Unknown Message", 10008),
            }
        }
        (
            "PUT" | "DELETE",
            [
                "channels",
                id,
                "messages",
                message_id,
                "reactions",
                emoji,
                "@me",
            ],
        ) => react(shared, m, parse_id(id)?, parse_id(message_id)?, emoji),
        ("GET", ["guilds", id, "emojis"]) => match world.guild(parse_id(id)?) {
            Some(guild) => ok(&json!(
                guild
                    .emojis
                    .iter()
                    .map(|(eid, name)| world.emoji_json(*eid, name))
                    .collect::<Vec<_>>()
            )),
            None => error(404, "Unknown Guild", 10004),
        },
        ("POST", ["channels", id, "typing"]) => {
            let channel_id = parse_id(id)?;
            if !channel_exists(shared, channel_id) {
                return Some(error(404, "Unknown Channel", 10003));
            }
            if let Some(refusal) = refusal_without(shared, channel_id, SEND) {
                return Some(refusal);
            }
            *shared.lock().typing.entry(channel_id).or_default() += 1;
            no_content()
        }
        ("GET", ["channels", id]) => {
            let channel_id = parse_id(id)?;
            if let Some(refusal) = refusal_without(shared, channel_id, VIEW_CHANNEL) {
                return Some(refusal);
            }
            if let Some((guild, channel)) = world.channel(channel_id) {
                let mut v = world.channel_json(guild, channel);
                v["last_message_id"] = last_message_id(shared, channel_id);
                ok(&v)
            } else {
                let user = Shared::dm_user(&shared.lock(), channel_id);
                match user {
                    Some(user_id) => ok(&dm_channel_object(shared, channel_id, user_id)),
                    None => error(404, "Unknown Channel", 10003),
                }
            }
        }
        ("GET", ["guilds", id]) => match world.guild(parse_id(id)?) {
            Some(guild) => {
                let mut v = world.guild_json(guild);
                v["approximate_member_count"] = json!(guild.members.len() + 1);
                v["approximate_presence_count"] = json!(0);
                ok(&v)
            }
            None => error(404, "Unknown Guild", 10004),
        },
        ("GET", ["guilds", id, "stickers"]) => match world.guild(parse_id(id)?) {
            Some(guild) => {
                let stickers: Vec<Value> = guild
                    .stickers
                    .iter()
                    .map(|(sid, name)| world.sticker_json(guild.id, *sid, name))
                    .collect();
                ok(&json!(stickers))
            }
            None => error(404, "Unknown Guild", 10004),
        },
        ("GET", ["guilds", id, "members", user]) => {
            let guild_id = parse_id(id)?;
            let user_id = parse_id(user)?;
            if world.guild(guild_id).is_none() {
                return Some(error(404, "Unknown Guild", 10004));
            }
            if user_id != world.bot_id && world.member(guild_id, user_id).is_none() {
                return Some(error(404, "Unknown Member", 10007));
            }
            ok(&world.member_json(guild_id, user_id))
        }
        ("GET", ["guilds", id, "roles"]) => match world.guild(parse_id(id)?) {
            Some(guild) => ok(&json!(world.roles_json(guild.id))),
            None => error(404, "Unknown Guild", 10004),
        },
        ("GET", ["guilds", id, "channels"]) => match world.guild(parse_id(id)?) {
            Some(guild) => {
                let channels: Vec<Value> = guild
                    .channels
                    .iter()
                    .map(|c| world.channel_json(guild, c))
                    .collect();
                ok(&json!(channels))
            }
            None => error(404, "Unknown Guild", 10004),
        },
        _ => return None,
    };
    Some(response)
}

fn channel_exists(shared: &Arc<Shared>, channel_id: u64) -> bool {
    shared.world.channel(channel_id).is_some()
        || Shared::dm_user(&shared.lock(), channel_id).is_some()
}

fn last_message_id(shared: &Arc<Shared>, channel_id: u64) -> Value {
    shared
        .lock()
        .history
        .get(&channel_id)
        .and_then(|h| h.last())
        .map_or(Value::Null, |m| m["id"].clone())
}

fn dm_channel_object(shared: &Arc<Shared>, channel_id: u64, user_id: u64) -> Value {
    let mut v = shared.world.dm_channel_json(channel_id, user_id);
    v["last_message_id"] = last_message_id(shared, channel_id);
    v
}

fn put_commands(shared: &Arc<Shared>, guild_id: Option<u64>, body: &Value) -> Response {
    {
        let mut inner = shared.lock();
        if inner.commands_rate_limited > 0 {
            inner.commands_rate_limited -= 1;
            return super::rate_limits::too_many_requests_secs(0.5, false);
        }
    }
    if shared.lock().refuse_commands {
        // What Discord answers for a field it does not accept, e.g. a name with capitals.
        return invalid_form_body_at(
            &["0", "name"],
            "APPLICATION_COMMAND_INVALID_NAME",
            "Command name is invalid",
        );
    }
    let Some(list) = body.as_array() else {
        return invalid_form_body("_", "BASE_TYPE_ARRAY", "Must be an array");
    };
    let mut inner = shared.lock();
    // keep the ids of commands that are already registered under the same name
    let previous: Vec<(String, Value)> = inner
        .commands
        .iter()
        .filter(|(g, _)| *g == guild_id)
        .map(|(_, c)| (c["name"].as_str().unwrap_or("").to_owned(), c["id"].clone()))
        .collect();
    inner.commands.retain(|(g, _)| *g != guild_id);
    let mut echoed = Vec::new();
    for command in list {
        let name = command["name"].as_str().unwrap_or("");
        let id = previous
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, id)| id.as_str().and_then(parse_id))
            .unwrap_or_else(|| shared.snowflake());
        let v = shared.world.command_json(command, id, guild_id);
        inner.commands.push((guild_id, v.clone()));
        echoed.push(v);
    }
    ok(&json!(echoed))
}

/// A stored (gateway) message as Discord's REST API returns it.
fn as_rest(message: &mut Value) {
    if let Some(fields) = message.as_object_mut() {
        fields.remove("guild_id");
        fields.remove("member");
    }
    if let Some(mentions) = message["mentions"].as_array_mut() {
        for user in mentions {
            if let Some(fields) = user.as_object_mut() {
                fields.remove("member");
            }
        }
    }
}
