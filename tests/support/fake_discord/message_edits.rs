//! `PATCH /channels/{id}/messages/{message}`: the bot edits one of its own messages (content,
//! embeds, components, the SUPPRESS_EMBEDS flag, kept attachments and new files), with Discord's
//! checks; the edited message is stored, dispatched as MESSAGE_UPDATE and returned.

use std::sync::Arc;

use serde_json::{Value, json};

use axum::response::Response;

use super::Upload;
use super::channel_messages::{normalize_embed, set_pings};
use super::mentions::pings;
use super::message_objects::now;
use super::permissions::VIEW_CHANNEL;
use super::rest::{channel_guild, error, invalid_form_body, ok, parse_id, refusal_without};
use super::session::dispatch_locked;
use super::state::Shared;

const SUPPRESS_EMBEDS: u64 = 1 << 2;

fn id_of(v: &Value) -> Option<u64> {
    match v {
        Value::String(s) => parse_id(s),
        Value::Number(n) => n.as_u64(),
        _ => None,
    }
}

pub(super) fn edit_message(
    shared: &Arc<Shared>,
    channel_id: u64,
    message_id: u64,
    body: &Value,
    files: &[Upload],
) -> Response {
    let world = &shared.world;
    let guild_id = match channel_guild(shared, channel_id) {
        Ok(guild_id) => guild_id,
        Err(unknown) => return unknown,
    };
    if let Some(refusal) = refusal_without(shared, channel_id, VIEW_CHANNEL) {
        return refusal;
    }
    let original = shared.lock().history.get(&channel_id).and_then(|h| {
        h.iter()
            .find(|m| m["id"] == json!(message_id.to_string()))
            .cloned()
    });
    let Some(original) = original else {
        return error(404, "Unknown Message", 10008);
    };
    if original["author"]["id"] != json!(world.bot_id.to_string()) {
        return error(403, "Cannot edit a message authored by another user", 50005);
    }
    if let Err(refusal) = super::validation::check_components(body) {
        return refusal;
    }
    let mut edited = original.clone();
    if let Some(content) = body.get("content").filter(|c| !c.is_null()) {
        let content = content.as_str().unwrap_or("");
        if content.chars().count() > 2000 {
            return invalid_form_body(
                "content",
                "BASE_TYPE_MAX_LENGTH",
                "Must be 2000 or fewer in length.",
            );
        }
        edited["content"] = json!(content);
    }
    if let Some(embeds) = body.get("embeds").filter(|e| !e.is_null()) {
        let embeds: Vec<Value> = embeds
            .as_array()
            .into_iter()
            .flatten()
            .map(normalize_embed)
            .collect();
        edited["embeds"] = json!(embeds);
    }
    if let Some(components) = body.get("components").filter(|c| c.is_array()) {
        edited["components"] = components.clone();
    }
    if let Some(flags) = body.get("flags").and_then(Value::as_u64) {
        // only SUPPRESS_EMBEDS may be switched by an edit
        let kept = original["flags"].as_u64().unwrap_or(0) & !SUPPRESS_EMBEDS;
        edited["flags"] = json!(kept | (flags & SUPPRESS_EMBEDS));
    }
    let mut attachments: Vec<Value> = match body.get("attachments").and_then(Value::as_array) {
        // the listed attachments stay, the others go
        Some(kept) => {
            let kept: Vec<u64> = kept.iter().filter_map(|a| id_of(&a["id"])).collect();
            original["attachments"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|a| id_of(&a["id"]).is_some_and(|id| kept.contains(&id)))
                .cloned()
                .collect()
        }
        None => original["attachments"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
    };
    for f in files {
        let id = shared.snowflake();
        let url = format!(
            "https://cdn.discordapp.com/attachments/{channel_id}/{id}/{}",
            f.filename
        );
        attachments.push(json!({
            "id": id.to_string(),
            "filename": f.filename,
            "size": f.data.len(),
            "url": url,
            "proxy_url": url.replace("cdn.discordapp.com", "media.discordapp.net"),
            "content_type": f.content_type,
        }));
    }
    edited["attachments"] = json!(attachments);
    let empty = |key: &str| edited[key].as_array().is_none_or(Vec::is_empty);
    if edited["content"]
        .as_str()
        .is_none_or(|c| c.trim().is_empty())
        && empty("embeds")
        && empty("attachments")
        && empty("sticker_items")
        && empty("components")
    {
        return error(400, "Cannot send an empty message", 50006);
    }
    let content = edited["content"].as_str().unwrap_or("").to_owned();
    let mut pinged = match pings(world, channel_id, guild_id, &content, body, None) {
        Ok(p) => p,
        Err(refusal) => return refusal,
    };
    // a reply's author stays pinged when the reply pinged them
    let replied = original["referenced_message"]["author"]["id"].clone();
    if let Some(author) = replied.as_str().and_then(parse_id)
        && original["mentions"]
            .as_array()
            .is_some_and(|m| m.iter().any(|u| u["id"] == replied))
        && !pinged.users.contains(&author)
    {
        pinged.users.push(author);
    }
    set_pings(world, &mut edited, guild_id, &pinged);
    edited["edited_timestamp"] = json!(now());
    let mut inner = shared.lock();
    if let Some(m) = inner
        .history
        .get_mut(&channel_id)
        .and_then(|h| h.iter_mut().find(|m| m["id"] == edited["id"]))
    {
        *m = edited.clone();
    }
    let dispatched = world.as_dispatched(edited.clone(), guild_id);
    dispatch_locked(&mut inner, "MESSAGE_UPDATE", dispatched);
    drop(inner);
    ok(&edited)
}
