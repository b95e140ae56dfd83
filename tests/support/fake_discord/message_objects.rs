//! Payload builders for messages, slash-command interactions and registered commands (each one
//! is checked against serenity's types by the smoke tests).

use serde_json::{Value, json};

use super::permissions::DM_PERMISSIONS;
use super::world::World;
use super::{Incoming, Slash};

impl World {
    /// A complete message with nothing in it but its author and content. `guild_id` is set when
    /// given (gateway messages carry it; REST ones from Discord do not, but serenity accepts it).
    pub fn message_json(
        &self,
        id: u64,
        channel_id: u64,
        guild_id: Option<u64>,
        author: Value,
        content: &str,
    ) -> Value {
        let mut message = json!({
            "id": id.to_string(),
            "channel_id": channel_id.to_string(),
            "author": author,
            "content": content,
            "timestamp": now(),
            "edited_timestamp": null,
            "tts": false,
            "mention_everyone": false,
            "mentions": [],
            "mention_roles": [],
            "mention_channels": [],
            "attachments": [],
            "embeds": [],
            "reactions": [],
            "pinned": false,
            "type": 0,
            "flags": 0,
            "components": [],
            "sticker_items": [],
        });
        if let Some(guild_id) = guild_id {
            message["guild_id"] = json!(guild_id.to_string());
        }
        message
    }

    /// A message the bot created (its REST answer) as MESSAGE_CREATE carries it: with the
    /// author's `member` in a guild, `channel_type` in a DM.
    pub fn as_dispatched(&self, mut message: Value, guild_id: Option<u64>) -> Value {
        match guild_id {
            Some(guild_id) if message.get("webhook_id").is_none_or(Value::is_null) => {
                let author = message["author"]["id"]
                    .as_str()
                    .and_then(|a| a.parse().ok())
                    .unwrap_or(self.bot_id);
                message["member"] = self.partial_member_json(guild_id, author);
            }
            Some(_) => {}
            None => message["channel_type"] = json!(1),
        }
        message
    }

    /// The MESSAGE_CREATE payload of an incoming message; `referenced` is the replied-to
    /// message (its full object).
    pub fn incoming_json(&self, m: &Incoming, id: u64, referenced: Option<Value>) -> Value {
        let bot = m.author_is_bot || m.webhook_id.is_some();
        let author = self.user_json(m.author_id, &m.author_name, bot);
        let mut message = self.message_json(id, m.channel_id, m.guild_id, author, &m.content);
        let mentions: Vec<Value> = m
            .mentions
            .iter()
            .map(|(uid, name)| {
                let mut user = self.user_json(*uid, name, *uid == self.bot_id);
                if let Some(guild_id) = m.guild_id {
                    user["member"] = self.partial_member_json(guild_id, *uid);
                }
                user
            })
            .collect();
        message["mentions"] = json!(mentions);
        if let Some(guild_id) = m.guild_id {
            if m.webhook_id.is_none() {
                message["member"] = self.partial_member_json(guild_id, m.author_id);
            }
        } else {
            message["channel_type"] = json!(1);
        }
        if let Some(webhook_id) = m.webhook_id {
            message["webhook_id"] = json!(webhook_id.to_string());
        }
        if let Some(reply_to) = m.reply_to {
            message["type"] = json!(19);
            message["message_reference"] = reference_json(reply_to, m.channel_id, m.guild_id);
            message["referenced_message"] = referenced.unwrap_or(Value::Null);
        }
        message
    }

    /// The INTERACTION_CREATE payload of a slash command (type 2).
    pub fn slash_json(&self, c: &Slash, id: u64, token: &str, command_id: u64) -> Value {
        let options = if c.options.is_null() {
            json!([])
        } else {
            c.options.clone()
        };
        let mut data = json!({
            "id": command_id.to_string(),
            "name": c.name,
            "type": 1,
            "options": options,
        });
        if let Some(resolved) = self.resolved_json(&options, c.guild_id) {
            data["resolved"] = resolved;
        }
        if let Some(guild_id) = c.guild_id {
            data["guild_id"] = json!(guild_id.to_string());
        }
        let user = self.user_json(c.user_id, &c.user_name, false);
        let app_permissions = match c.guild_id {
            Some(_) => self.permissions_in(self.bot_id, c.channel_id),
            None => DM_PERMISSIONS,
        };
        let mut interaction = json!({
            "id": id.to_string(),
            "application_id": self.application_id.to_string(),
            "type": 2,
            "data": data,
            "channel_id": c.channel_id.to_string(),
            "token": token,
            "version": 1,
            "app_permissions": app_permissions.to_string(),
            "locale": c.locale,
            "entitlements": [],
            "entitlement_sku_ids": [],
            "attachment_size_limit": 26_214_400,
        });
        match c.guild_id {
            Some(guild_id) => {
                let mut member = self.partial_member_json(guild_id, c.user_id);
                member["user"] = user;
                member["permissions"] = json!(c.permissions.to_string());
                interaction["member"] = member;
                interaction["guild_id"] = json!(guild_id.to_string());
                interaction["guild"] = json!({
                    "id": guild_id.to_string(),
                    "locale": self.guild(guild_id).map(|g| g.preferred_locale.clone()),
                    "features": [],
                });
                interaction["guild_locale"] = json!(
                    self.guild(guild_id)
                        .map_or("en-US".to_owned(), |g| g.preferred_locale.clone())
                );
                interaction["authorizing_integration_owners"] = json!({"0": guild_id.to_string()});
                interaction["context"] = json!(0);
                let channel = match self.channel(c.channel_id) {
                    Some((g, ch)) => {
                        let mut v = self.channel_json(g, ch);
                        v["permissions"] =
                            json!(self.permissions_in(c.user_id, c.channel_id).to_string());
                        v
                    }
                    None => json!({"id": c.channel_id.to_string(), "type": 0, "name": "unknown"}),
                };
                interaction["channel"] = channel;
            }
            None => {
                interaction["user"] = user;
                interaction["authorizing_integration_owners"] = json!({"0": "0"});
                interaction["context"] = json!(1);
                let mut channel = self.dm_channel_json(c.channel_id, c.user_id);
                channel["permissions"] = json!(DM_PERMISSIONS.to_string());
                interaction["channel"] = channel;
            }
        }
        interaction
    }

    /// `resolved` for user (6), channel (7) and role (8) options found in `options` (nested too).
    fn resolved_json(&self, options: &Value, guild_id: Option<u64>) -> Option<Value> {
        fn walk(options: &Value, out: &mut Vec<(u64, u64)>) {
            for o in options.as_array().into_iter().flatten() {
                let kind = o["type"].as_u64().unwrap_or(0);
                if matches!(kind, 6..=9) {
                    let id = match &o["value"] {
                        Value::String(s) => s.parse().ok(),
                        Value::Number(n) => n.as_u64(),
                        _ => None,
                    };
                    if let Some(id) = id {
                        out.push((kind, id));
                    }
                }
                walk(&o["options"], out);
            }
        }
        let mut found = Vec::new();
        walk(options, &mut found);
        if found.is_empty() {
            return None;
        }
        let (mut users, mut members, mut channels, mut roles) =
            (json!({}), json!({}), json!({}), json!({}));
        for (kind, id) in found {
            let key = id.to_string();
            if kind == 7 {
                if let Some((g, ch)) = self.channel(id) {
                    let mut v = self.channel_json(g, ch);
                    v["permissions"] = json!(self.permissions_in(self.bot_id, id).to_string());
                    channels[&key] = v;
                }
                continue;
            }
            if let Some(guild_id) = guild_id
                && let Some(role) = self
                    .roles_json(guild_id)
                    .into_iter()
                    .find(|r| r["id"] == json!(key))
            {
                roles[&key] = role;
                continue;
            }
            users[&key] = self.user(id);
            if let Some(guild_id) = guild_id
                && (id == self.bot_id || self.member(guild_id, id).is_some())
            {
                let mut m = self.partial_member_json(guild_id, id);
                m["permissions"] = json!(self.guild_permissions(guild_id, id).to_string());
                members[&key] = m;
            }
        }
        let mut resolved = json!({});
        for (name, map) in [
            ("users", users),
            ("members", members),
            ("channels", channels),
            ("roles", roles),
        ] {
            if map.as_object().is_some_and(|m| !m.is_empty()) {
                resolved[name] = map;
            }
        }
        Some(resolved)
    }

    /// A registered command as Discord echoes it back from `PUT .../commands`.
    pub fn command_json(&self, body: &Value, id: u64, guild_id: Option<u64>) -> Value {
        let mut command = body.clone();
        if !command.is_object() {
            command = json!({});
        }
        command["id"] = json!(id.to_string());
        command["application_id"] = json!(self.application_id.to_string());
        command["version"] = json!(id.to_string());
        if command.get("type").is_none_or(Value::is_null) {
            command["type"] = json!(1);
        }
        for key in ["description", "name"] {
            if command.get(key).is_none_or(Value::is_null) {
                command[key] = json!("");
            }
        }
        if command.get("default_member_permissions").is_none() {
            command["default_member_permissions"] = Value::Null;
        }
        if command.get("nsfw").is_none_or(Value::is_null) {
            command["nsfw"] = json!(false);
        }
        if command.get("integration_types").is_none_or(Value::is_null) {
            command["integration_types"] = json!([0]);
        }
        if command.get("contexts").is_none() {
            command["contexts"] = Value::Null;
        }
        match guild_id {
            Some(g) => command["guild_id"] = json!(g.to_string()),
            None => {
                command["dm_permission"] = command
                    .get("dm_permission")
                    .filter(|v| !v.is_null())
                    .cloned()
                    .unwrap_or(json!(true));
            }
        }
        command
    }
}

pub(super) fn reference_json(message_id: u64, channel_id: u64, guild_id: Option<u64>) -> Value {
    let mut reference = json!({
        "type": 0,
        "message_id": message_id.to_string(),
        "channel_id": channel_id.to_string(),
    });
    if let Some(g) = guild_id {
        reference["guild_id"] = json!(g.to_string());
    }
    reference
}

/// Now, RFC 3339.
pub(super) fn now() -> String {
    serenity::model::Timestamp::now().to_string()
}
