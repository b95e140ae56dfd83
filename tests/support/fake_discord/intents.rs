//! What a session's gateway intents let through, as Discord does: message events need
//! GUILD_MESSAGES (in a guild) or DIRECT_MESSAGES (in a DM), and without MESSAGE_CONTENT a
//! message's `content`, `embeds`, `attachments`, `components` (and a poll) come empty, unless the
//! message mentions the bot, is in a DM or is the bot's own. The fields stay in the payload, only
//! empty: serenity drops a gateway event that misses a required field.

use serde_json::{Value, json};

pub const GUILD_MESSAGES: u64 = 1 << 9;
pub const DIRECT_MESSAGES: u64 = 1 << 12;
pub const MESSAGE_CONTENT: u64 = 1 << 15;

/// The dispatch `d` as a session with these intents gets it, or `None` when it gets none.
pub(super) fn as_seen(intents: u64, bot_id: u64, t: &str, mut d: Value) -> Option<Value> {
    if !matches!(t, "MESSAGE_CREATE" | "MESSAGE_UPDATE" | "MESSAGE_DELETE") {
        return Some(d);
    }
    let in_guild = d.get("guild_id").is_some_and(|g| !g.is_null());
    let needed = if in_guild {
        GUILD_MESSAGES
    } else {
        DIRECT_MESSAGES
    };
    if intents & needed == 0 {
        return None;
    }
    if intents & MESSAGE_CONTENT == 0 && t != "MESSAGE_DELETE" {
        hide_content(&mut d, bot_id, in_guild);
    }
    Some(d)
}

/// A message an app reads over REST: without MESSAGE_CONTENT granted, the same fields come
/// empty as on the gateway (Discord applies the intent to both).
pub(super) fn as_read_by(ungranted: u64, bot_id: u64, message: &mut Value) {
    if ungranted & MESSAGE_CONTENT != 0 {
        let in_guild = message.get("guild_id").is_some_and(|g| !g.is_null());
        hide_content(message, bot_id, in_guild);
    }
}

/// Empties what MESSAGE_CONTENT guards, unless the message mentions the bot, is in a DM or was
/// authored by the bot; a replied-to message is judged on its own.
fn hide_content(message: &mut Value, bot_id: u64, in_guild: bool) {
    let bot = json!(bot_id.to_string());
    let mentions_bot = message["mentions"]
        .as_array()
        .is_some_and(|m| m.iter().any(|u| u["id"] == bot));
    let by_bot = message["author"]["id"] == bot;
    if let Some(referenced) = message
        .get_mut("referenced_message")
        .filter(|r| r.is_object())
    {
        hide_content(referenced, bot_id, in_guild);
    }
    if !in_guild || mentions_bot || by_bot {
        return;
    }
    let Some(fields) = message.as_object_mut() else {
        return;
    };
    // only what the event carries: a partial MESSAGE_UPDATE keeps its shape
    for (key, empty) in [
        ("content", json!("")),
        ("embeds", json!([])),
        ("attachments", json!([])),
        ("components", json!([])),
    ] {
        if let Some(value) = fields.get_mut(key) {
            *value = empty;
        }
    }
    fields.remove("poll");
}
