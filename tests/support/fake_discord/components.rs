//! Message components pressed, as Discord sends and answers them: a press of a button on one
//! of the app's messages is an interaction of type 3 (MESSAGE_COMPONENT) carrying the message
//! and the button's `custom_id`; Discord's client sends one only for a button that is on the
//! message now, not disabled. Its callback may be a message (4), deferred (5), a deferred update
//! (6: nothing shown, the message stays) or an update of the message (7: its content and
//! components replaced, dispatched as MESSAGE_UPDATE); after 6 or 7 the "original" of the
//! interaction's webhook is the pressed message. Also the bot's own message deleted
//! (`DELETE /channels/{id}/messages/{id}`, MESSAGE_DELETE dispatched) and a test's message aged.

// A refusal is the response to send, as elsewhere in the fake.
#![allow(clippy::result_large_err)]

use std::sync::Arc;
use std::time::Duration;

use axum::response::Response;
use serde_json::{Value, json};

use super::Slash;
use super::message_objects::now;
use super::permissions::MANAGE_MESSAGES;
use super::rest::{channel_guild, error, no_content, refusal_without};
use super::server::FakeDiscord;
use super::session::dispatch_locked;
use super::state::{InteractionState, Shared, snowflake_at};

/// A member pressing a button.
#[derive(Debug, Clone)]
pub struct ButtonPress {
    pub channel_id: u64,
    pub guild_id: Option<u64>,
    pub message_id: u64,
    pub custom_id: String,
    pub user_id: u64,
    /// The member's permissions in the channel (sent as a decimal string).
    pub permissions: u64,
}

impl ButtonPress {
    /// `user_id` presses the button `custom_id` on message `message_id` of guild 100's channel
    /// 200, with the permissions the fake world gives them there.
    pub fn new(fake: &FakeDiscord, message_id: u64, custom_id: &str, user_id: u64) -> Self {
        let channel_id = 200;
        Self {
            channel_id,
            guild_id: Some(100),
            message_id,
            custom_id: custom_id.to_owned(),
            user_id,
            permissions: fake.world().permissions_in(user_id, channel_id),
        }
    }
}

/// The custom ids of a message's buttons, row by row.
pub fn button_ids(message: &Value) -> Vec<String> {
    message["components"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|row| row["components"].as_array().cloned().unwrap_or_default())
        .filter_map(|button| button["custom_id"].as_str().map(str::to_owned))
        .collect()
}

fn find_message(shared: &Shared, channel_id: u64, message_id: u64) -> Option<Value> {
    let id = message_id.to_string();
    shared
        .lock()
        .history
        .get(&channel_id)
        .and_then(|h| h.iter().find(|m| m["id"].as_str() == Some(id.as_str())))
        .cloned()
}

impl FakeDiscord {
    /// Dispatches the press as INTERACTION_CREATE (type 3); returns the interaction's id (its
    /// token is `itoken-<id>`). Fails as Discord's client would not send it: no such message,
    /// not the app's own, no such button on it, or the button disabled.
    pub async fn press(&self, p: ButtonPress) -> Result<u64, String> {
        self.wait_ready().await;
        let Some(message) = find_message(&self.shared, p.channel_id, p.message_id) else {
            return Err(format!("no message {} in {}", p.message_id, p.channel_id));
        };
        let world = self.world();
        let own = message["author"]["id"] == json!(world.bot_id.to_string())
            || message["application_id"] == json!(world.application_id.to_string());
        if !own {
            return Err(format!("message {} is not the app's", p.message_id));
        }
        let button = message["components"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|row| row["components"].as_array().cloned().unwrap_or_default())
            .find(|b| b["custom_id"].as_str() == Some(p.custom_id.as_str()));
        match button {
            None => return Err(format!("no button `{}` on the message", p.custom_id)),
            Some(b) if b["disabled"] == json!(true) => {
                return Err(format!("button `{}` is disabled", p.custom_id));
            }
            Some(_) => {}
        }
        let id = self.shared.snowflake();
        let token = format!("itoken-{id}");
        let name = world.user_name(p.user_id);
        let mut base = Slash::new("", json!([]), p.guild_id, p.channel_id, p.user_id, &name);
        base.permissions = p.permissions;
        let mut payload = world.slash_json(&base, id, &token, 0);
        payload["type"] = json!(3);
        payload["data"] = json!({ "custom_id": p.custom_id, "component_type": 2 });
        payload["message"] = message;
        let mut inner = self.shared.lock();
        let state = InteractionState::new(id, p.channel_id, p.guild_id, payload.clone());
        inner.interactions.insert(token, state);
        dispatch_locked(&mut inner, "INTERACTION_CREATE", payload);
        Ok(id)
    }

    /// Makes a message look `age` older: its id (which carries its time) and timestamp as if
    /// it had been posted then. Returns its new id.
    pub fn age_message(&self, channel_id: u64, message_id: u64, age: Duration) -> Option<u64> {
        let id = message_id.to_string();
        let mut inner = self.shared.lock();
        let message = inner
            .history
            .get_mut(&channel_id)?
            .iter_mut()
            .find(|m| m["id"].as_str() == Some(id.as_str()))?;
        let at = std::time::SystemTime::now() - age;
        let aged = snowflake_at(at, message_id);
        message["id"] = json!(aged.to_string());
        message["timestamp"] = json!(chrono::DateTime::<chrono::Utc>::from(at).to_rfc3339());
        Some(aged)
    }
}

/// A component interaction's callback of type 6 or 7: the pressed message becomes the
/// interaction's original; an update (7) replaces its content and components first (checked
/// as an edit's are) and is dispatched.
pub(super) fn update_pressed(
    shared: &Arc<Shared>,
    state: &mut InteractionState,
    kind: u64,
    data: &Value,
) -> Result<Value, Response> {
    let mut message = state.payload["message"].clone();
    if kind == 7 {
        super::validation::check_components(data)?;
        for key in ["content", "components", "embeds"] {
            if let Some(v) = data.get(key).filter(|v| !v.is_null()) {
                message[key] = v.clone();
            }
        }
        message["edited_timestamp"] = json!(now());
    }
    let _ = shared;
    state.original = Some(message.clone());
    Ok(message)
}

/// `DELETE /channels/{id}/messages/{id}`: the bot's own message, or anyone's where it may
/// manage messages; 404 10008 for one that is not there.
pub(super) fn delete_message(shared: &Arc<Shared>, channel_id: u64, message_id: u64) -> Response {
    let guild_id = match channel_guild(shared, channel_id) {
        Ok(guild_id) => guild_id,
        Err(unknown) => return unknown,
    };
    let Some(message) = find_message(shared, channel_id, message_id) else {
        return error(404, "Unknown Message", 10008);
    };
    let world = &shared.world;
    let own = message["author"]["id"] == json!(world.bot_id.to_string());
    if !own && let Some(refusal) = refusal_without(shared, channel_id, MANAGE_MESSAGES) {
        return refusal;
    }
    let id = message_id.to_string();
    let mut inner = shared.lock();
    if let Some(h) = inner.history.get_mut(&channel_id) {
        h.retain(|m| m["id"].as_str() != Some(id.as_str()));
    }
    let mut deleted = json!({ "id": id, "channel_id": channel_id.to_string() });
    if let Some(guild_id) = guild_id {
        deleted["guild_id"] = json!(guild_id.to_string());
    }
    dispatch_locked(&mut inner, "MESSAGE_DELETE", deleted);
    no_content()
}
