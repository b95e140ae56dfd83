//! Message menus (a message's Apps menu): Discord offers one only when the command was
//! registered as a message command (type 3), for that install type and context, and sends its
//! target message whole in `resolved.messages`, its text included even without the Message
//! Content intent (as for any interaction).

use serde_json::{Value, json};

use super::session::dispatch_locked;
use super::state::InteractionState;
use super::{FakeDiscord, Slash};

/// A message menu's use: which menu, on which message of the channel's history, by whom.
pub struct MenuUse {
    /// The menu's registered name ("Remember this").
    pub name: String,
    pub message_id: u64,
    /// Where: a server (`None`: a private channel or DM) and its channel.
    pub guild_id: Option<u64>,
    pub channel_id: u64,
    pub user_id: u64,
    pub user_name: String,
    /// The member's permissions in the channel.
    pub permissions: u64,
    /// Through the user's own install (the bot may not be a member there).
    pub user_install: bool,
}

impl FakeDiscord {
    /// Dispatches the menu's interaction; its id (token `itoken-<id>`). Refused as Discord's
    /// client would not offer it: no such message command, not for that install type or
    /// context, or no such message in the channel.
    pub async fn use_menu(&self, m: MenuUse) -> Result<u64, String> {
        self.wait_ready().await;
        let id = self.shared.snowflake();
        let token = format!("itoken-{id}");
        let mut inner = self.shared.lock();
        let registered = inner
            .commands
            .iter()
            .rev()
            .find(|(g, cmd)| cmd["name"] == json!(m.name) && (g.is_none() || *g == m.guild_id))
            .map(|(_, cmd)| cmd.clone())
            .ok_or_else(|| format!("no command `{}`", m.name))?;
        if registered["type"].as_u64() != Some(3) {
            return Err(format!(
                "`{}` is not a message command: {registered}",
                m.name
            ));
        }
        let context = match (m.guild_id, m.user_install) {
            (Some(_), _) => 0,
            (None, false) => 1,
            (None, true) => 2,
        };
        let offered = |key: &str, value: u64| {
            registered[key]
                .as_array()
                .is_some_and(|v| v.contains(&json!(value)))
        };
        let install = u64::from(m.user_install);
        if !offered("integration_types", install) || !offered("contexts", context) {
            return Err(format!(
                "`{}` is not offered here (install {install}, context {context})",
                m.name
            ));
        }
        let target = inner
            .history
            .get(&m.channel_id)
            .and_then(|h| {
                h.iter()
                    .find(|msg| msg["id"] == json!(m.message_id.to_string()))
            })
            .cloned()
            .ok_or_else(|| format!("no message {} in channel {}", m.message_id, m.channel_id))?;
        let mut slash = Slash::new(
            &m.name,
            json!([]),
            m.guild_id,
            m.channel_id,
            m.user_id,
            &m.user_name,
        );
        slash.permissions = m.permissions;
        let command_id = registered["id"]
            .as_str()
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(0);
        let mut payload = self.shared.world.slash_json(&slash, id, &token, command_id);
        let mut data = json!({
            "id": command_id.to_string(),
            "name": m.name,
            "type": 3,
            "target_id": m.message_id.to_string(),
            "resolved": { "messages": { m.message_id.to_string(): target } },
        });
        if let Some(guild_id) = m.guild_id {
            data["guild_id"] = json!(guild_id.to_string());
        }
        payload["data"] = data;
        if m.user_install {
            payload["authorizing_integration_owners"] = json!({"1": m.user_id.to_string()});
            payload["context"] = json!(context);
            payload["app_permissions"] = json!(super::USER_INSTALL_PERMISSIONS.to_string());
        }
        let state = InteractionState::new(id, m.channel_id, m.guild_id, payload.clone());
        inner.interactions.insert(token, state);
        dispatch_locked(&mut inner, "INTERACTION_CREATE", payload);
        Ok(id)
    }
}

#[allow(dead_code)]
fn _unused(_: Value) {}
