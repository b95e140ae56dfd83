//! Payload builders for users, members, roles, channels, stickers, guilds, READY and the
//! application (each one is checked against serenity's types by the smoke tests).

use serde_json::{Value, json};

use super::permissions::{EVERYONE_PERMISSIONS, MANAGE_GUILD, MANAGE_MESSAGES};
use super::world::{FakeChannel, FakeGuild, World};

impl World {
    /// A complete user object.
    pub fn user_json(&self, user_id: u64, name: &str, bot: bool) -> Value {
        json!({
            "id": user_id.to_string(),
            "username": name,
            "discriminator": "0",
            "global_name": if bot { Value::Null } else { json!(name) },
            "avatar": null,
            "bot": bot,
            "system": false,
            "banner": null,
            "accent_color": null,
            "public_flags": 0,
            "flags": 0,
            "avatar_decoration_data": null,
            "collectibles": null,
            "primary_guild": null,
        })
    }

    /// A user by id: the bot or a known member (not a bot), otherwise `user<id>`.
    pub fn user(&self, user_id: u64) -> Value {
        self.user_json(user_id, &self.user_name(user_id), user_id == self.bot_id)
    }

    /// The bot as the current user (READY, `GET /users/@me`).
    pub fn current_user_json(&self) -> Value {
        let mut user = self.user(self.bot_id);
        user["verified"] = json!(true);
        user["mfa_enabled"] = json!(false);
        user["email"] = Value::Null;
        user["locale"] = json!("en-US");
        user["premium_type"] = json!(0);
        user
    }

    /// A member without its `user` (as in MESSAGE_CREATE's `member` and `mentions[].member`).
    pub fn partial_member_json(&self, guild_id: u64, user_id: u64) -> Value {
        let roles: Vec<String> = self
            .member_roles(guild_id, user_id)
            .iter()
            .map(u64::to_string)
            .collect();
        json!({
            "roles": roles,
            "nick": null,
            "avatar": null,
            "banner": null,
            "joined_at": "2024-01-01T00:00:00.000000+00:00",
            "premium_since": null,
            "deaf": false,
            "mute": false,
            "flags": 0,
            "pending": false,
            "communication_disabled_until": null,
            "unusual_dm_activity_until": null,
            "avatar_decoration_data": null,
        })
    }

    /// A complete guild member (GUILD_CREATE, `GET /guilds/{id}/members/{user}`).
    pub fn member_json(&self, guild_id: u64, user_id: u64) -> Value {
        let mut member = self.partial_member_json(guild_id, user_id);
        member["user"] = self.user(user_id);
        member
    }

    /// The guild's roles: `@everyone` (id == guild id), "Moderator", "Manager" and the bot's.
    pub fn roles_json(&self, guild_id: u64) -> Vec<Value> {
        let role = |id: u64, name: &str, perms: u64, position: u64, managed: bool| {
            let mut tags = json!({});
            if managed {
                tags["bot_id"] = json!(self.bot_id.to_string());
            }
            json!({
                "id": id.to_string(),
                "name": name,
                "color": 0,
                "colors": {"primary_color": 0, "secondary_color": null, "tertiary_color": null},
                "hoist": false,
                "icon": null,
                "unicode_emoji": null,
                "position": position,
                "permissions": perms.to_string(),
                "managed": managed,
                "mentionable": false,
                "flags": 0,
                "tags": tags,
            })
        };
        vec![
            role(guild_id, "@everyone", EVERYONE_PERMISSIONS, 0, false),
            role(
                self.moderator_role(guild_id),
                "Moderator",
                MANAGE_MESSAGES,
                1,
                false,
            ),
            role(
                self.manager_role(guild_id),
                "Manager",
                MANAGE_GUILD,
                2,
                false,
            ),
            role(
                self.bot_role(guild_id),
                &self.bot_name,
                EVERYONE_PERMISSIONS,
                3,
                true,
            ),
        ]
    }

    /// A complete guild text channel (GUILD_CREATE, `GET /channels/{id}`).
    pub fn channel_json(&self, guild: &FakeGuild, channel: &FakeChannel) -> Value {
        let position = guild
            .channels
            .iter()
            .position(|c| c.id == channel.id)
            .unwrap_or(0);
        let overwrites: Vec<Value> = self
            .overwrites(guild, channel)
            .into_iter()
            .map(|(id, kind, allow, deny)| {
                json!({
                    "id": id.to_string(),
                    "type": kind,
                    "allow": allow.to_string(),
                    "deny": deny.to_string(),
                })
            })
            .collect();
        json!({
            "id": channel.id.to_string(),
            "type": 0,
            "guild_id": guild.id.to_string(),
            "name": channel.name,
            "position": position,
            "permission_overwrites": overwrites,
            "parent_id": null,
            "topic": null,
            "nsfw": false,
            "last_message_id": null,
            "last_pin_timestamp": null,
            "rate_limit_per_user": 0,
            "flags": 0,
            "icon_emoji": null,
            "theme_color": null,
        })
    }

    /// A DM channel with this user.
    pub fn dm_channel_json(&self, channel_id: u64, user_id: u64) -> Value {
        json!({
            "id": channel_id.to_string(),
            "type": 1,
            "last_message_id": null,
            "last_pin_timestamp": null,
            "flags": 0,
            "recipients": [self.user(user_id)],
        })
    }

    /// A complete guild sticker.
    pub fn sticker_json(&self, guild_id: u64, id: u64, name: &str) -> Value {
        json!({
            "id": id.to_string(),
            "pack_id": null,
            "name": name,
            "description": null,
            "tags": name,
            "type": 2,
            "format_type": 1,
            "available": true,
            "guild_id": guild_id.to_string(),
            "sort_value": null,
        })
    }

    /// A complete guild emoji.
    pub fn emoji_json(&self, id: u64, name: &str) -> Value {
        json!({
            "id": id.to_string(),
            "name": name,
            "roles": [],
            "require_colons": true,
            "managed": false,
            "animated": false,
            "available": true,
        })
    }

    /// The GUILD_CREATE payload: the guild with its roles, channels, members (the bot's too),
    /// stickers and emoji.
    pub fn guild_create_json(&self, guild: &FakeGuild) -> Value {
        let mut guild_json = self.guild_json(guild);
        let mut members: Vec<Value> = guild
            .members
            .iter()
            .map(|m| self.member_json(guild.id, m.user_id))
            .collect();
        if guild.members.iter().all(|m| m.user_id != self.bot_id) {
            members.push(self.member_json(guild.id, self.bot_id));
        }
        let channels: Vec<Value> = guild
            .channels
            .iter()
            .map(|c| {
                let mut c = self.channel_json(guild, c);
                // GUILD_CREATE channels carry no guild_id (serenity fills it in)
                c.as_object_mut().unwrap().remove("guild_id");
                c
            })
            .collect();
        let extra = json!({
            "joined_at": "2024-01-01T00:00:00.000000+00:00",
            "large": false,
            "unavailable": false,
            "member_count": members.len(),
            "voice_states": [],
            "members": members,
            "channels": channels,
            "threads": [],
            "presences": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
            "lazy": true,
        });
        for (k, v) in extra.as_object().unwrap() {
            guild_json[k] = v.clone();
        }
        guild_json
    }

    /// The guild object of `GET /guilds/{id}` (no GUILD_CREATE extras).
    pub fn guild_json(&self, guild: &FakeGuild) -> Value {
        let stickers: Vec<Value> = guild
            .stickers
            .iter()
            .map(|(id, name)| self.sticker_json(guild.id, *id, name))
            .collect();
        json!({
            "id": guild.id.to_string(),
            "name": guild.name,
            "icon": null,
            "icon_hash": null,
            "splash": null,
            "discovery_splash": null,
            "owner_id": guild.owner_id.to_string(),
            "afk_channel_id": null,
            "afk_timeout": 300,
            "widget_enabled": false,
            "widget_channel_id": null,
            "verification_level": 0,
            "default_message_notifications": 1,
            "explicit_content_filter": 0,
            "roles": self.roles_json(guild.id),
            "emojis": guild
                .emojis
                .iter()
                .map(|(id, name)| self.emoji_json(*id, name))
                .collect::<Vec<_>>(),
            "features": [],
            "mfa_level": 0,
            "application_id": null,
            "system_channel_id": guild.channels.first().map(|c| c.id.to_string()),
            "system_channel_flags": 0,
            "rules_channel_id": null,
            "max_presences": null,
            "max_members": 500000,
            "vanity_url_code": null,
            "description": null,
            "banner": null,
            "premium_tier": 0,
            "premium_subscription_count": 0,
            "preferred_locale": guild.preferred_locale,
            "public_updates_channel_id": null,
            "max_video_channel_users": 25,
            "max_stage_video_channel_users": 50,
            "nsfw_level": 0,
            "nsfw": false,
            "stickers": stickers,
            "premium_progress_bar_enabled": false,
            "safety_alerts_channel_id": null,
            "incidents_data": null,
            "hub_type": null,
        })
    }

    /// The READY payload of an unsharded session: the bot user, every guild as unavailable, this
    /// session.
    pub fn ready_json(&self, session_id: &str, resume_url: &str) -> Value {
        self.shard_ready_json(session_id, resume_url, 0, 1)
    }

    /// The READY payload of shard `id` of `total`: the bot user, the shard's guilds as
    /// unavailable, this session.
    pub fn shard_ready_json(
        &self,
        session_id: &str,
        resume_url: &str,
        id: u64,
        total: u64,
    ) -> Value {
        let guilds: Vec<Value> = self
            .shard_guilds(id, total)
            .map(|g| json!({"id": g.id.to_string(), "unavailable": true}))
            .collect();
        json!({
            "v": 10,
            "user": self.current_user_json(),
            "guilds": guilds,
            "session_id": session_id,
            "session_type": "normal",
            "resume_gateway_url": resume_url,
            "shard": [id, total],
            "application": {"id": self.application_id.to_string(), "flags": 1 << 19},
            "private_channels": [],
            "relationships": [],
            "presences": [],
            "guild_join_requests": [],
            "geo_ordered_rtc_regions": ["fake"],
            "user_settings": {},
            "auth": {},
            "_trace": ["[\"fake-discord\"]"],
        })
    }

    /// `GET /oauth2/applications/@me`; the owner is the first guild's owner.
    pub fn application_info_json(&self) -> Value {
        let owner_id = self.guilds.first().map_or(self.bot_id, |g| g.owner_id);
        json!({
            "id": self.application_id.to_string(),
            "name": self.bot_name,
            "icon": null,
            "description": "",
            "summary": "",
            "type": null,
            "rpc_origins": [],
            "bot_public": false,
            "bot_require_code_grant": false,
            "terms_of_service_url": null,
            "privacy_policy_url": null,
            "owner": self.user(owner_id),
            "verify_key": "0000000000000000000000000000000000000000000000000000000000000000",
            "team": null,
            "flags": 1 << 19,
            "tags": [],
            "install_params": null,
            "custom_install_url": null,
            "integration_types_config": {"0": {}},
            "approximate_guild_count": self.guilds.len(),
            "approximate_user_install_count": 0,
            "redirect_uris": [],
            "interactions_endpoint_url": null,
            "role_connections_verification_url": null,
            "is_monetized": false,
            "bot": self.user(self.bot_id),
        })
    }
}
