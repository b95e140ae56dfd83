//! The bot's reactions, `PUT` (add) and `DELETE` (remove)
//! `/channels/{id}/messages/{message}/reactions/{emoji}/@me`, as Discord answers them: the
//! channel and the message must exist (10003, 10008); in a guild channel the bot needs
//! READ_MESSAGE_HISTORY, and ADD_REACTIONS to add (50013); the emoji must be one Unicode emoji
//! or `name:id` of the guild's own (10014 Unknown Emoji). Adding a reaction that is there, or
//! removing one that is not, changes nothing (204). Their bucket (1 per channel per 0.25 s) is
//! in `rate_limits.rs`.

use std::sync::Arc;

use axum::response::Response;

use super::permissions::{ADD_REACTIONS, READ_MESSAGE_HISTORY};
use super::rest::{channel_guild, error, no_content, refusal_without};
use super::state::Shared;

pub(super) fn react(
    shared: &Arc<Shared>,
    method: &str,
    channel_id: u64,
    message_id: u64,
    emoji: &str,
) -> Response {
    let guild = match channel_guild(shared, channel_id) {
        Ok(guild) => guild,
        Err(refusal) => return refusal,
    };
    let needed = if method == "PUT" {
        READ_MESSAGE_HISTORY | ADD_REACTIONS
    } else {
        READ_MESSAGE_HISTORY
    };
    if let Some(refusal) = refusal_without(shared, channel_id, needed) {
        return refusal;
    }
    let exists = shared.lock().history.get(&channel_id).is_some_and(|h| {
        h.iter()
            .any(|m| m["id"].as_str() == Some(message_id.to_string().as_str()))
    });
    if !exists {
        return error(404, "Unknown Message", 10008);
    }
    let Some(emoji) = known_emoji(shared, guild, emoji) else {
        return error(400, "Unknown Emoji", 10014);
    };
    let mut inner = shared.lock();
    let on_message = inner.reactions.entry((channel_id, message_id)).or_default();
    if method == "PUT" {
        if !on_message.contains(&emoji) {
            on_message.push(emoji);
        }
    } else {
        on_message.retain(|e| *e != emoji);
    }
    no_content()
}

/// The emoji a path segment names, as the fake keeps it: one Unicode emoji, or `name:id` of
/// one of the guild's own (the name must match its id, as on Discord).
fn known_emoji(shared: &Shared, guild: Option<u64>, segment: &str) -> Option<String> {
    let decoded = percent_encoding::percent_decode_str(segment)
        .decode_utf8()
        .ok()?
        .into_owned();
    if emojis::get(&decoded).is_some() {
        return Some(decoded);
    }
    let (name, id) = decoded.split_once(':')?;
    let id: u64 = id.parse().ok()?;
    let guild = shared.world.guild(guild?)?;
    guild
        .emojis
        .iter()
        .any(|(own, own_name)| *own == id && own_name == name)
        .then_some(decoded)
}
