//! A fake Discord on 127.0.0.1 that the real serenity 0.12 client (and poise) can connect to:
//! the REST API under `/api/v10/` and a gateway websocket at `/gateway`.
//!
//! Point serenity at it with `HttpBuilder::new(token).proxy(&fake.base_url)`; `GET /gateway` then
//! hands out the fake's websocket URL. The gateway speaks the JSON protocol (HELLO, IDENTIFY ->
//! READY + one GUILD_CREATE per guild, heartbeats, RESUME with replay of missed dispatches), and
//! the test pushes MESSAGE_CREATE and INTERACTION_CREATE dispatches through it.
//!
//! Every payload is complete for serenity 0.12.5's model types: serenity drops a gateway event
//! that misses a required field (only a `warn!` log line), so `fake_discord_smoke.rs` checks each
//! builder against serenity's own types.
//!
//! Every REST request is recorded (method, path without `/api/v10`, JSON body, `Authorization`);
//! requests to routes the fake does not know get a 404 and are also kept in `unexpected()`, so a
//! test can fail loudly on them. `POST /channels/{id}/messages` can be scripted to answer 429s or
//! other failures, and validates like Discord does (empty message, content over 2000 characters,
//! unknown sticker).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

// ----------------------------------------------------------------------------------------------
// Permission bits (https://discord.com/developers/docs/topics/permissions)

pub const CREATE_INSTANT_INVITE: u64 = 1 << 0;
pub const ADMINISTRATOR: u64 = 1 << 3;
pub const MANAGE_GUILD: u64 = 1 << 5;
pub const ADD_REACTIONS: u64 = 1 << 6;
pub const VIEW_CHANNEL: u64 = 1 << 10;
pub const SEND_MESSAGES: u64 = 1 << 11;
pub const MANAGE_MESSAGES: u64 = 1 << 13;
pub const EMBED_LINKS: u64 = 1 << 14;
pub const ATTACH_FILES: u64 = 1 << 15;
pub const READ_MESSAGE_HISTORY: u64 = 1 << 16;
pub const USE_EXTERNAL_EMOJIS: u64 = 1 << 18;
pub const CONNECT: u64 = 1 << 20;
pub const SPEAK: u64 = 1 << 21;
pub const CHANGE_NICKNAME: u64 = 1 << 26;
pub const USE_APPLICATION_COMMANDS: u64 = 1 << 31;
pub const USE_EXTERNAL_STICKERS: u64 = 1 << 37;
pub const SEND_MESSAGES_IN_THREADS: u64 = 1 << 38;
/// Every permission bit Discord defines today (up to `SEND_POLLS`/`USE_EXTERNAL_APPS`, bit 50).
pub const ALL_PERMISSIONS: u64 = (1 << 51) - 1;

/// What `@everyone` may do in every fake guild.
pub const EVERYONE_PERMISSIONS: u64 = CREATE_INSTANT_INVITE
    | ADD_REACTIONS
    | VIEW_CHANNEL
    | SEND_MESSAGES
    | EMBED_LINKS
    | ATTACH_FILES
    | READ_MESSAGE_HISTORY
    | USE_EXTERNAL_EMOJIS
    | CONNECT
    | SPEAK
    | CHANGE_NICKNAME
    | USE_APPLICATION_COMMANDS
    | USE_EXTERNAL_STICKERS
    | SEND_MESSAGES_IN_THREADS;

/// What the bot's member overwrite allows on private channels.
pub const BOT_PRIVATE_ALLOW: u64 =
    VIEW_CHANNEL | SEND_MESSAGES | READ_MESSAGE_HISTORY | EMBED_LINKS | ATTACH_FILES;

/// What a user may do in a DM, as Discord reports it in `app_permissions` there.
pub const DM_PERMISSIONS: u64 = ADD_REACTIONS
    | VIEW_CHANNEL
    | SEND_MESSAGES
    | EMBED_LINKS
    | ATTACH_FILES
    | READ_MESSAGE_HISTORY
    | USE_EXTERNAL_EMOJIS
    | USE_EXTERNAL_STICKERS;

/// The first generated snowflake.
pub const FIRST_SNOWFLAKE: u64 = 1_000_000;
/// `heartbeat_interval` in HELLO.
pub const HEARTBEAT_INTERVAL_MS: u64 = 41_250;

// ----------------------------------------------------------------------------------------------
// The world the fake serves

#[derive(Debug, Clone)]
pub struct World {
    pub bot_id: u64,
    pub bot_name: String,
    pub application_id: u64,
    pub guilds: Vec<FakeGuild>,
}

#[derive(Debug, Clone)]
pub struct FakeGuild {
    pub id: u64,
    pub name: String,
    /// "en-US", "ja", ...
    pub preferred_locale: String,
    pub owner_id: u64,
    pub channels: Vec<FakeChannel>,
    pub members: Vec<FakeMember>,
    /// (id, name)
    pub stickers: Vec<(u64, String)>,
}

/// A text channel (type 0).
#[derive(Debug, Clone)]
pub struct FakeChannel {
    pub id: u64,
    pub name: String,
    /// `false`: an overwrite for `@everyone` denies VIEW_CHANNEL, and one for the bot member
    /// allows [`BOT_PRIVATE_ALLOW`].
    pub everyone_can_view: bool,
}

/// A member; `manage_messages` / `manage_guild` give the guild's "Moderator" / "Manager" role.
#[derive(Debug, Clone)]
pub struct FakeMember {
    pub user_id: u64,
    pub name: String,
    pub manage_messages: bool,
    pub manage_guild: bool,
}

impl FakeChannel {
    pub fn new(id: u64, name: &str, everyone_can_view: bool) -> Self {
        Self {
            id,
            name: name.into(),
            everyone_can_view,
        }
    }
}

impl FakeMember {
    pub fn new(user_id: u64, name: &str, manage_messages: bool, manage_guild: bool) -> Self {
        Self {
            user_id,
            name: name.into(),
            manage_messages,
            manage_guild,
        }
    }
}

impl World {
    /// Bot 900 "Aria" (application 901); guild 100 "Test Guild" (en-US, owner 500) with channels
    /// 200 "general" (public), 201 "thoughts" (private), 202 "mods-public" (public); members
    /// 300 "alice", 301 "bob", 500 "owner" and 302 "mod" (the last two with manage_messages and
    /// manage_guild); stickers 700 "wave" and 701 "heart".
    pub fn simple() -> Self {
        World {
            bot_id: 900,
            bot_name: "Aria".into(),
            application_id: 901,
            guilds: vec![FakeGuild {
                id: 100,
                name: "Test Guild".into(),
                preferred_locale: "en-US".into(),
                owner_id: 500,
                channels: vec![
                    FakeChannel::new(200, "general", true),
                    FakeChannel::new(201, "thoughts", false),
                    FakeChannel::new(202, "mods-public", true),
                ],
                members: vec![
                    FakeMember::new(300, "alice", false, false),
                    FakeMember::new(301, "bob", false, false),
                    FakeMember::new(500, "owner", true, true),
                    FakeMember::new(302, "mod", true, true),
                ],
                stickers: vec![(700, "wave".into()), (701, "heart".into())],
            }],
        }
    }

    pub fn guild(&self, guild_id: u64) -> Option<&FakeGuild> {
        self.guilds.iter().find(|g| g.id == guild_id)
    }

    /// The guild holding this channel, and the channel.
    pub fn channel(&self, channel_id: u64) -> Option<(&FakeGuild, &FakeChannel)> {
        self.guilds.iter().find_map(|g| {
            g.channels
                .iter()
                .find(|c| c.id == channel_id)
                .map(|c| (g, c))
        })
    }

    pub fn member(&self, guild_id: u64, user_id: u64) -> Option<&FakeMember> {
        self.guild(guild_id)?
            .members
            .iter()
            .find(|m| m.user_id == user_id)
    }

    /// The user's name: the bot's, a member's (any guild), or `user<id>`.
    pub fn user_name(&self, user_id: u64) -> String {
        if user_id == self.bot_id {
            return self.bot_name.clone();
        }
        self.guilds
            .iter()
            .flat_map(|g| g.members.iter())
            .find(|m| m.user_id == user_id)
            .map(|m| m.name.clone())
            .unwrap_or_else(|| format!("user{user_id}"))
    }

    /// The role given to members with `manage_messages`.
    pub fn moderator_role(&self, guild_id: u64) -> u64 {
        guild_id * 1000 + 1
    }

    /// The role given to members with `manage_guild`.
    pub fn manager_role(&self, guild_id: u64) -> u64 {
        guild_id * 1000 + 2
    }

    /// The bot's managed integration role.
    pub fn bot_role(&self, guild_id: u64) -> u64 {
        guild_id * 1000 + 3
    }

    /// Role ids of a member (the bot included), `@everyone` excluded as Discord does.
    pub fn member_roles(&self, guild_id: u64, user_id: u64) -> Vec<u64> {
        if user_id == self.bot_id {
            return vec![self.bot_role(guild_id)];
        }
        let mut roles = Vec::new();
        if let Some(m) = self.member(guild_id, user_id) {
            if m.manage_messages {
                roles.push(self.moderator_role(guild_id));
            }
            if m.manage_guild {
                roles.push(self.manager_role(guild_id));
            }
        }
        roles
    }

    fn role_permissions(&self, guild_id: u64, role_id: u64) -> u64 {
        if role_id == guild_id {
            EVERYONE_PERMISSIONS
        } else if role_id == self.moderator_role(guild_id) {
            MANAGE_MESSAGES
        } else if role_id == self.manager_role(guild_id) {
            MANAGE_GUILD
        } else {
            0
        }
    }

    /// Guild-level permissions (no channel overwrites), the owner has them all.
    pub fn guild_permissions(&self, guild_id: u64, user_id: u64) -> u64 {
        let Some(guild) = self.guild(guild_id) else {
            return 0;
        };
        if guild.owner_id == user_id {
            return ALL_PERMISSIONS;
        }
        let mut perms = EVERYONE_PERMISSIONS;
        for role in self.member_roles(guild_id, user_id) {
            perms |= self.role_permissions(guild_id, role);
        }
        if perms & ADMINISTRATOR != 0 {
            return ALL_PERMISSIONS;
        }
        perms
    }

    /// Permissions in a channel, by Discord's algorithm (base, then @everyone, role and member
    /// overwrites). A DM channel (or unknown channel) gives [`DM_PERMISSIONS`].
    pub fn permissions_in(&self, user_id: u64, channel_id: u64) -> u64 {
        let Some((guild, channel)) = self.channel(channel_id) else {
            return DM_PERMISSIONS;
        };
        let base = self.guild_permissions(guild.id, user_id);
        if base == ALL_PERMISSIONS {
            return base;
        }
        let mut perms = base;
        let roles = self.member_roles(guild.id, user_id);
        let overwrites = self.overwrites(guild, channel);
        // (id, kind, allow, deny)
        if let Some((_, _, allow, deny)) = overwrites.iter().find(|o| o.0 == guild.id && o.1 == 0) {
            perms = (perms & !deny) | allow;
        }
        let (mut allow, mut deny) = (0, 0);
        for o in overwrites
            .iter()
            .filter(|o| o.1 == 0 && roles.contains(&o.0))
        {
            allow |= o.2;
            deny |= o.3;
        }
        perms = (perms & !deny) | allow;
        if let Some((_, _, allow, deny)) = overwrites.iter().find(|o| o.0 == user_id && o.1 == 1) {
            perms = (perms & !deny) | allow;
        }
        perms
    }

    /// Overwrites of a channel as (id, type 0 role / 1 member, allow, deny).
    fn overwrites(&self, guild: &FakeGuild, channel: &FakeChannel) -> Vec<(u64, u8, u64, u64)> {
        if channel.everyone_can_view {
            Vec::new()
        } else {
            vec![
                (guild.id, 0, 0, VIEW_CHANNEL),
                (self.bot_id, 1, BOT_PRIVATE_ALLOW, 0),
            ]
        }
    }

    // ------------------------------------------------------------------------------------------
    // Payload builders (each one is checked against serenity's types by the smoke tests)

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

    /// The GUILD_CREATE payload: the guild with its roles, channels, members (the bot's too)
    /// and stickers.
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
            "emojis": [],
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

    /// The READY payload: the bot user, every guild as unavailable, this session.
    pub fn ready_json(&self, session_id: &str, resume_url: &str) -> Value {
        let guilds: Vec<Value> = self
            .guilds
            .iter()
            .map(|g| json!({"id": g.id.to_string(), "unavailable": true}))
            .collect();
        json!({
            "v": 10,
            "user": self.current_user_json(),
            "guilds": guilds,
            "session_id": session_id,
            "session_type": "normal",
            "resume_gateway_url": resume_url,
            "shard": [0, 1],
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

/// `GET /gateway`.
pub fn gateway_json(ws_url: &str) -> Value {
    json!({"url": ws_url})
}

/// `GET /gateway/bot`.
pub fn gateway_bot_json(ws_url: &str) -> Value {
    json!({
        "url": ws_url,
        "shards": 1,
        "session_start_limit": {
            "total": 1000, "remaining": 999, "reset_after": 14_400_000, "max_concurrency": 1,
        },
    })
}

/// Op 10 HELLO.
pub fn hello_frame() -> Value {
    json!({
        "op": 10,
        "d": {"heartbeat_interval": HEARTBEAT_INTERVAL_MS, "_trace": ["[\"fake-discord\"]"]},
        "s": null,
        "t": null,
    })
}

/// Op 11 HEARTBEAT_ACK.
pub fn heartbeat_ack_frame() -> Value {
    json!({"op": 11, "d": null, "s": null, "t": null})
}

/// Op 9 INVALID_SESSION.
pub fn invalid_session_frame(resumable: bool) -> Value {
    json!({"op": 9, "d": resumable, "s": null, "t": null})
}

/// Op 7 RECONNECT.
pub fn reconnect_frame() -> Value {
    json!({"op": 7, "d": null, "s": null, "t": null})
}

/// Op 0 dispatch.
pub fn dispatch_frame(seq: u64, t: &str, d: Value) -> Value {
    json!({"op": 0, "s": seq, "t": t, "d": d})
}

/// The RESUMED dispatch's `d`.
pub fn resumed_json() -> Value {
    json!({"_trace": ["[\"fake-discord\"]"]})
}

fn reference_json(message_id: u64, channel_id: u64, guild_id: Option<u64>) -> Value {
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
fn now() -> String {
    serenity::model::Timestamp::now().to_string()
}

// ----------------------------------------------------------------------------------------------
// What tests send and what they read back

/// A message someone else sends (MESSAGE_CREATE).
#[derive(Debug, Clone)]
pub struct Incoming {
    pub channel_id: u64,
    pub guild_id: Option<u64>,
    pub author_id: u64,
    pub author_name: String,
    pub author_is_bot: bool,
    /// Messages from webhooks have no `member`, and their author is a bot (as on Discord).
    pub webhook_id: Option<u64>,
    pub content: String,
    /// (user id, name)
    pub mentions: Vec<(u64, String)>,
    /// The replied-to message id; its full object is taken from the channel's history.
    pub reply_to: Option<u64>,
}

impl Incoming {
    pub fn new(
        channel_id: u64,
        guild_id: Option<u64>,
        author_id: u64,
        author_name: &str,
        content: &str,
    ) -> Self {
        Self {
            channel_id,
            guild_id,
            author_id,
            author_name: author_name.into(),
            author_is_bot: false,
            webhook_id: None,
            content: content.into(),
            mentions: Vec::new(),
            reply_to: None,
        }
    }
}

/// A slash command invocation (INTERACTION_CREATE type 2).
#[derive(Debug, Clone)]
pub struct Slash {
    pub name: String,
    /// The `options` array of the interaction data, e.g.
    /// `[{"name":"state","type":3,"value":"on"}]` or `[]`.
    pub options: Value,
    pub guild_id: Option<u64>,
    pub channel_id: u64,
    pub user_id: u64,
    pub user_name: String,
    /// The member's permissions in the channel (sent as a decimal string).
    pub permissions: u64,
    pub locale: String,
}

impl Slash {
    /// With `@everyone`'s permissions and locale "en-US"; see
    /// [`World::permissions_in`] for a member's real ones.
    pub fn new(
        name: &str,
        options: Value,
        guild_id: Option<u64>,
        channel_id: u64,
        user_id: u64,
        user_name: &str,
    ) -> Self {
        Self {
            name: name.into(),
            options,
            guild_id,
            channel_id,
            user_id,
            user_name: user_name.into(),
            permissions: EVERYONE_PERMISSIONS,
            locale: "en-US".into(),
        }
    }
}

/// A REST request as the fake saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// Without the `/api/v10` prefix, with the query as sent (serenity writes `?&limit=..`).
    pub path: String,
    /// The JSON body (`payload_json` of a multipart body), `Value::Null` when none.
    pub body: Value,
    pub authorization: Option<String>,
    /// Files of a multipart body.
    pub files: Vec<Upload>,
}

/// A file sent in a multipart body.
#[derive(Debug, Clone)]
pub struct Upload {
    /// The form field, e.g. `files[0]`.
    pub field: String,
    pub filename: String,
    pub content_type: Option<String>,
    pub data: Bytes,
}

// ----------------------------------------------------------------------------------------------
// The server

enum Outgoing {
    Frame(Value),
    /// A frame's JSON text, sent as is (it may hold what no `Value` can, such as `\ud800`).
    Raw(String),
    Close(u16),
}

struct Connection {
    id: u64,
    tx: mpsc::UnboundedSender<Outgoing>,
}

#[derive(Default)]
struct Session {
    id: String,
    seq: u64,
    /// Every dispatch frame of this session, for replay on RESUME.
    frames: Vec<(u64, Value)>,
}

struct Scripted {
    status: u16,
    /// Sent as is, so a test can send JSON no `Value` can hold (`1e400`) or no JSON at all.
    body: String,
    headers: Vec<(&'static str, String)>,
}

struct InteractionState {
    id: u64,
    channel_id: u64,
    guild_id: Option<u64>,
    acknowledged: bool,
    original: Option<Value>,
    followups: Vec<Value>,
}

#[derive(Default)]
struct Inner {
    requests: Vec<Recorded>,
    unexpected: Vec<Recorded>,
    gateway_answered: bool,
    identifies: Vec<Value>,
    resumes: usize,
    connections: usize,
    live: Option<Connection>,
    session: Session,
    sessions: u64,
    /// Full message objects per channel, oldest first.
    history: HashMap<u64, Vec<Value>>,
    /// Request bodies of successful `POST /channels/{id}/messages`.
    posted: HashMap<u64, Vec<Value>>,
    scripted: HashMap<u64, VecDeque<Scripted>>,
    typing: HashMap<u64, usize>,
    /// user id -> DM channel id
    dm_channels: HashMap<u64, u64>,
    interactions: HashMap<String, InteractionState>,
    interaction_responses: Vec<(u64, Value)>,
    /// (guild id, or None for global commands; the command as echoed)
    commands: Vec<(Option<u64>, Value)>,
}

struct Shared {
    world: World,
    ws_url: String,
    next_id: AtomicU64,
    next_conn: AtomicU64,
    inner: Mutex<Inner>,
    /// Whether a live, identified (or resumed) session has had READY and GUILD_CREATEs.
    ready: watch::Sender<bool>,
}

impl Shared {
    fn snowflake(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::SeqCst)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn dm_channel(&self, inner: &mut Inner, user_id: u64) -> u64 {
        if let Some(id) = inner.dm_channels.get(&user_id) {
            return *id;
        }
        let id = self.snowflake();
        inner.dm_channels.insert(user_id, id);
        id
    }

    fn dm_user(inner: &Inner, channel_id: u64) -> Option<u64> {
        inner
            .dm_channels
            .iter()
            .find(|(_, c)| **c == channel_id)
            .map(|(u, _)| *u)
    }
}

/// Sends a dispatch to the live connection (if any) and keeps it for replay.
fn dispatch_locked(inner: &mut Inner, t: &str, d: Value) {
    inner.session.seq += 1;
    let seq = inner.session.seq;
    let frame = dispatch_frame(seq, t, d);
    if let Some(conn) = &inner.live {
        let _ = conn.tx.send(Outgoing::Frame(frame.clone()));
    }
    inner.session.frames.push((seq, frame));
}

pub struct FakeDiscord {
    /// `http://127.0.0.1:<port>`, for `HttpBuilder::proxy`.
    pub base_url: String,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for FakeDiscord {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FakeDiscord {
    pub async fn start(world: World) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (ready, _) = watch::channel(false);
        let shared = Arc::new(Shared {
            world,
            ws_url: format!("ws://{addr}/gateway"),
            next_id: AtomicU64::new(FIRST_SNOWFLAKE),
            next_conn: AtomicU64::new(1),
            inner: Mutex::new(Inner::default()),
            ready,
        });
        let app = Router::new()
            .route("/gateway", get(gateway))
            .fallback(rest)
            .with_state(shared.clone());
        let server = tokio::spawn(async move {
            axum::serve(listener, app)
                .await
                .expect("fake Discord server");
        });
        Self {
            base_url: format!("http://{addr}"),
            shared,
            server,
        }
    }

    pub fn world(&self) -> &World {
        &self.shared.world
    }

    /// `ws://127.0.0.1:<port>/gateway`
    pub fn ws_url(&self) -> &str {
        &self.shared.ws_url
    }

    /// Waits until a client identified (or resumed) and READY + GUILD_CREATEs were sent on a
    /// connection that is still open. Panics after 20 s.
    pub async fn wait_ready(&self) {
        let mut rx = self.shared.ready.subscribe();
        let waited = tokio::time::timeout(Duration::from_secs(20), rx.wait_for(|r| *r)).await;
        if !matches!(waited, Ok(Ok(_))) {
            let (answered, identifies) = {
                let inner = self.shared.lock();
                (inner.gateway_answered, inner.identifies.len())
            };
            let requests: Vec<String> = self
                .requests()
                .iter()
                .map(|r| format!("{} {}", r.method, r.path))
                .collect();
            panic!(
                "fake Discord: no client became ready within 20 s (gateway answered: \
                 {answered}, identifies: {identifies}, requests: {requests:?})"
            );
        }
    }

    /// `GET /gateway` was answered and a websocket client identified.
    pub fn gateway_used(&self) -> bool {
        let inner = self.shared.lock();
        inner.gateway_answered && !inner.identifies.is_empty()
    }

    /// The `d` of every IDENTIFY received.
    pub fn identifies(&self) -> Vec<Value> {
        self.shared.lock().identifies.clone()
    }

    /// How many RESUMEs succeeded.
    pub fn resumes(&self) -> usize {
        self.shared.lock().resumes
    }

    /// How many websocket connections were opened.
    pub fn connections(&self) -> usize {
        self.shared.lock().connections
    }

    /// Dispatches MESSAGE_CREATE (waiting for a ready client first); returns the message id. The
    /// message goes into the channel's history.
    pub async fn send_message(&self, m: Incoming) -> u64 {
        self.wait_ready().await;
        let id = self.shared.snowflake();
        let mut inner = self.shared.lock();
        let referenced = m.reply_to.and_then(|r| {
            inner
                .history
                .get(&m.channel_id)
                .and_then(|h| h.iter().find(|msg| msg["id"] == json!(r.to_string())))
                .cloned()
        });
        let message = self.shared.world.incoming_json(&m, id, referenced);
        inner
            .history
            .entry(m.channel_id)
            .or_default()
            .push(message.clone());
        dispatch_locked(&mut inner, "MESSAGE_CREATE", message);
        id
    }

    /// [`Self::send_message`], with every `marker` in the frame's JSON text replaced by `raw`
    /// as sent: JSON no `Value` can hold, such as a lone surrogate escape `\ud800`. The history
    /// (and a resumed session's replay) keeps the markers.
    pub async fn send_message_raw(&self, m: Incoming, marker: &str, raw: &str) -> u64 {
        self.wait_ready().await;
        let id = self.shared.snowflake();
        let mut inner = self.shared.lock();
        let message = self.shared.world.incoming_json(&m, id, None);
        inner
            .history
            .entry(m.channel_id)
            .or_default()
            .push(message.clone());
        inner.session.seq += 1;
        let seq = inner.session.seq;
        let frame = dispatch_frame(seq, "MESSAGE_CREATE", message);
        if let Some(conn) = &inner.live {
            let text = frame.to_string().replace(marker, raw);
            let _ = conn.tx.send(Outgoing::Raw(text));
        }
        inner.session.frames.push((seq, frame));
        id
    }

    /// Dispatches a DM from this user (MESSAGE_CREATE without guild_id); returns the DM channel
    /// id (stable per user) and the message id.
    pub async fn send_dm(&self, user_id: u64, content: &str) -> (u64, u64) {
        let channel_id = self.dm_channel(user_id);
        let name = self.shared.world.user_name(user_id);
        let id = self
            .send_message(Incoming::new(channel_id, None, user_id, &name, content))
            .await;
        (channel_id, id)
    }

    /// The DM channel id with this user (created on first use, stable afterwards).
    pub fn dm_channel(&self, user_id: u64) -> u64 {
        let mut inner = self.shared.lock();
        self.shared.dm_channel(&mut inner, user_id)
    }

    /// Dispatches INTERACTION_CREATE for a slash command; returns the interaction id. Its token
    /// is `itoken-<id>`. Panics when the command is registered and `c.options` do not fit its
    /// registration (see [`Self::try_slash`]).
    pub async fn slash(&self, c: Slash) -> u64 {
        match self.try_slash(c).await {
            Ok(id) => id,
            Err(why) => panic!("fake Discord: {why}"),
        }
    }

    /// [`Self::slash`], or why Discord would never send this: when the command was registered
    /// (`PUT .../commands`), the options must match the registered names, types, choices and
    /// required options. An unregistered command is sent as is.
    pub async fn try_slash(&self, c: Slash) -> Result<u64, String> {
        self.wait_ready().await;
        let id = self.shared.snowflake();
        let token = format!("itoken-{id}");
        let mut inner = self.shared.lock();
        let registered = inner
            .commands
            .iter()
            .rev()
            .find(|(g, cmd)| cmd["name"] == json!(c.name) && (g.is_none() || *g == c.guild_id))
            .map(|(_, cmd)| cmd.clone());
        let command_id = match &registered {
            Some(cmd) => {
                if cmd["type"].as_u64() != Some(1) {
                    return Err(format!("`{}` is not a slash command: {cmd}", c.name));
                }
                check_options(&format!("/{}", c.name), &c.options, &cmd["options"])?;
                cmd["id"].as_str().and_then(parse_id).unwrap_or(0)
            }
            None => self.shared.snowflake(),
        };
        let payload = self.shared.world.slash_json(&c, id, &token, command_id);
        inner.interactions.insert(
            token,
            InteractionState {
                id,
                channel_id: c.channel_id,
                guild_id: c.guild_id,
                acknowledged: false,
                original: None,
                followups: Vec::new(),
            },
        );
        dispatch_locked(&mut inner, "INTERACTION_CREATE", payload);
        Ok(id)
    }

    /// The commands registered so far: (guild id, or `None` for global ones; command).
    pub fn commands(&self) -> Vec<(Option<u64>, Value)> {
        self.shared.lock().commands.clone()
    }

    /// Sends any dispatch (waiting for a ready client first).
    pub async fn dispatch(&self, t: &str, d: Value) {
        self.wait_ready().await;
        dispatch_locked(&mut self.shared.lock(), t, d);
    }

    /// Asks the client to reconnect (op 7); serenity then resumes on a new connection.
    pub fn request_reconnect(&self) {
        let mut inner = self.shared.lock();
        if let Some(conn) = inner.live.take() {
            let _ = conn.tx.send(Outgoing::Frame(reconnect_frame()));
        }
        self.shared.ready.send_replace(false);
    }

    /// Closes the live connection with this close code.
    pub fn close_gateway(&self, code: u16) {
        let mut inner = self.shared.lock();
        if let Some(conn) = inner.live.take() {
            let _ = conn.tx.send(Outgoing::Close(code));
        }
        self.shared.ready.send_replace(false);
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().requests.clone()
    }

    /// Requests to routes the fake does not know (answered 404).
    pub fn unexpected(&self) -> Vec<Recorded> {
        self.shared.lock().unexpected.clone()
    }

    /// Bodies of successful `POST /channels/{id}/messages`, in order.
    pub fn messages_in(&self, channel_id: u64) -> Vec<Value> {
        self.shared
            .lock()
            .posted
            .get(&channel_id)
            .cloned()
            .unwrap_or_default()
    }

    /// Every message object in the channel (incoming and created), oldest first.
    pub fn history(&self, channel_id: u64) -> Vec<Value> {
        self.shared
            .lock()
            .history
            .get(&channel_id)
            .cloned()
            .unwrap_or_default()
    }

    /// (interaction id, callback body) of every accepted interaction callback.
    pub fn interaction_responses(&self) -> Vec<(u64, Value)> {
        self.shared.lock().interaction_responses.clone()
    }

    /// The original response (as a message object, after edits) and the follow-ups of an
    /// interaction.
    pub fn interaction_messages(&self, interaction_id: u64) -> (Option<Value>, Vec<Value>) {
        let inner = self.shared.lock();
        inner
            .interactions
            .values()
            .find(|i| i.id == interaction_id)
            .map(|i| (i.original.clone(), i.followups.clone()))
            .unwrap_or_default()
    }

    /// The next `times` `POST /channels/{id}/messages` answer 429.
    pub fn rate_limit_next(&self, channel_id: u64, times: usize, retry_after_secs: f64) {
        let mut inner = self.shared.lock();
        let queue = inner.scripted.entry(channel_id).or_default();
        for _ in 0..times {
            queue.push_back(Scripted {
                status: 429,
                body: json!({
                    "message": "You are being rate limited.",
                    "retry_after": retry_after_secs,
                    "global": false,
                    "code": 0,
                })
                .to_string(),
                headers: vec![
                    ("retry-after", format!("{}", retry_after_secs.ceil() as u64)),
                    ("x-ratelimit-limit", "5".into()),
                    ("x-ratelimit-remaining", "0".into()),
                    ("x-ratelimit-reset-after", format!("{retry_after_secs:.3}")),
                    ("x-ratelimit-bucket", "fake-bucket".into()),
                    ("x-ratelimit-scope", "user".into()),
                ],
            });
        }
    }

    /// The next `POST /channels/{id}/messages` answers this status and body, once.
    pub fn fail_next(&self, channel_id: u64, status: u16, body: Value) {
        self.shared
            .lock()
            .scripted
            .entry(channel_id)
            .or_default()
            .push_back(Scripted {
                status,
                body: body.to_string(),
                headers: Vec::new(),
            });
    }

    /// The next `POST /channels/{id}/messages` answers this status, raw body and headers, once.
    pub fn answer_next_raw(
        &self,
        channel_id: u64,
        status: u16,
        body: &str,
        headers: &[(&'static str, &str)],
    ) {
        self.shared
            .lock()
            .scripted
            .entry(channel_id)
            .or_default()
            .push_back(Scripted {
                status,
                body: body.to_owned(),
                headers: headers.iter().map(|(n, v)| (*n, (*v).to_owned())).collect(),
            });
    }

    /// How many `POST /channels/{id}/typing`.
    pub fn typing_count(&self, channel_id: u64) -> usize {
        self.shared
            .lock()
            .typing
            .get(&channel_id)
            .copied()
            .unwrap_or(0)
    }
}

const OPTION_TYPES: [&str; 12] = [
    "?",
    "SUB_COMMAND",
    "SUB_COMMAND_GROUP",
    "STRING",
    "INTEGER",
    "BOOLEAN",
    "USER",
    "CHANNEL",
    "ROLE",
    "MENTIONABLE",
    "NUMBER",
    "ATTACHMENT",
];

fn option_type_name(kind: Option<u64>) -> String {
    match kind {
        Some(k) if (k as usize) < OPTION_TYPES.len() => {
            format!("{k} ({})", OPTION_TYPES[k as usize])
        }
        other => format!("{other:?}"),
    }
}

/// Whether `sent` (an interaction's options) fits `registered` (a command's options).
fn check_options(path: &str, sent: &Value, registered: &Value) -> Result<(), String> {
    let registered: Vec<Value> = registered.as_array().cloned().unwrap_or_default();
    let sent: Vec<Value> = match sent {
        Value::Null => Vec::new(),
        Value::Array(a) => a.clone(),
        other => return Err(format!("{path}: options must be an array, got {other}")),
    };
    let names: Vec<&str> = registered
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    for option in &sent {
        let name = option["name"].as_str().unwrap_or("");
        let Some(reg) = registered.iter().find(|r| r["name"] == option["name"]) else {
            return Err(format!(
                "{path}: no option `{name}` is registered (registered: {names:?})"
            ));
        };
        let (kind, want) = (option["type"].as_u64(), reg["type"].as_u64());
        if kind != want {
            let choices = &reg["choices"];
            return Err(format!(
                "{path}: option `{name}` is registered as type {}{} but was sent as type {} \
                 with value {}",
                option_type_name(want),
                if choices.is_array() {
                    format!(" with choices {choices}")
                } else {
                    String::new()
                },
                option_type_name(kind),
                option["value"],
            ));
        }
        let value = &option["value"];
        let fits = match kind {
            Some(1 | 2) => {
                check_options(
                    &format!("{path} {name}"),
                    &option["options"],
                    &reg["options"],
                )?;
                true
            }
            Some(3) => value.is_string(),
            Some(4) => value.is_i64() || value.is_u64(),
            Some(5) => value.is_boolean(),
            Some(10) => value.is_number(),
            Some(6..=9 | 11) => value.as_str().and_then(parse_id).is_some(),
            _ => true,
        };
        if !fits {
            return Err(format!(
                "{path}: option `{name}` of type {} cannot have the value {value}",
                option_type_name(kind)
            ));
        }
        if let Some(choices) = reg["choices"].as_array().filter(|c| !c.is_empty()) {
            let same = |c: &Value| match (c["value"].as_f64(), value.as_f64()) {
                (Some(a), Some(b)) => a == b,
                _ => c["value"] == *value,
            };
            if !choices.iter().any(same) {
                return Err(format!(
                    "{path}: option `{name}` has value {value}, not one of its choices {}",
                    json!(choices)
                ));
            }
        }
    }
    let groups = registered
        .iter()
        .any(|r| matches!(r["type"].as_u64(), Some(1 | 2)));
    if groups && sent.len() != 1 {
        return Err(format!(
            "{path}: exactly one sub-command of {names:?} must be sent, got {}",
            json!(sent)
        ));
    }
    for reg in &registered {
        if reg["required"] == json!(true) && !sent.iter().any(|o| o["name"] == reg["name"]) {
            return Err(format!(
                "{path}: the required option `{}` is missing",
                reg["name"]
            ));
        }
    }
    Ok(())
}

// ----------------------------------------------------------------------------------------------
// Gateway

async fn gateway(ws: WebSocketUpgrade, State(shared): State<Arc<Shared>>) -> Response {
    ws.on_upgrade(move |socket| run_gateway(shared, socket))
}

async fn run_gateway(shared: Arc<Shared>, socket: WebSocket) {
    let conn_id = shared.next_conn.fetch_add(1, Ordering::SeqCst);
    shared.lock().connections += 1;
    let (mut sink, mut stream) = socket.split();
    let (tx, mut rx) = mpsc::unbounded_channel::<Outgoing>();
    let writer = tokio::spawn(async move {
        while let Some(out) = rx.recv().await {
            match out {
                Outgoing::Frame(frame) => {
                    if sink
                        .send(WsMessage::Text(frame.to_string().into()))
                        .await
                        .is_err()
                    {
                        break;
                    }
                }
                Outgoing::Raw(text) => {
                    if sink.send(WsMessage::Text(text.into())).await.is_err() {
                        break;
                    }
                }
                Outgoing::Close(code) => {
                    let _ = sink
                        .send(WsMessage::Close(Some(CloseFrame {
                            code,
                            reason: "".into(),
                        })))
                        .await;
                    break;
                }
            }
        }
    });
    let _ = tx.send(Outgoing::Frame(hello_frame()));
    while let Some(Ok(msg)) = stream.next().await {
        let text = match msg {
            WsMessage::Text(t) => t.to_string(),
            WsMessage::Binary(b) => String::from_utf8_lossy(&b).into_owned(),
            WsMessage::Close(_) => break,
            _ => continue,
        };
        let Ok(payload) = serde_json::from_str::<Value>(&text) else {
            let _ = tx.send(Outgoing::Close(4002)); // decode error
            break;
        };
        match payload["op"].as_u64() {
            Some(1) => {
                let _ = tx.send(Outgoing::Frame(heartbeat_ack_frame()));
            }
            Some(2) => identify(&shared, conn_id, &tx, &payload["d"]),
            Some(6) => resume(&shared, conn_id, &tx, &payload["d"]),
            // presence update, voice state, request guild members, request soundboard sounds
            Some(3 | 4 | 8 | 31) => {}
            _ => {
                let _ = tx.send(Outgoing::Close(4001)); // unknown opcode
                break;
            }
        }
    }
    {
        let mut inner = shared.lock();
        if inner.live.as_ref().is_some_and(|c| c.id == conn_id) {
            inner.live = None;
            shared.ready.send_replace(false);
        }
    }
    drop(tx);
    // let a queued close frame go out, then stop
    let _ = tokio::time::timeout(Duration::from_secs(1), writer).await;
}

fn identify(shared: &Arc<Shared>, conn_id: u64, tx: &mpsc::UnboundedSender<Outgoing>, d: &Value) {
    if d["token"].as_str().is_none_or(str::is_empty) {
        let _ = tx.send(Outgoing::Close(4004)); // authentication failed
        return;
    }
    let world = &shared.world;
    let mut inner = shared.lock();
    shared.ready.send_replace(false);
    inner.identifies.push(d.clone());
    inner.sessions += 1;
    inner.session = Session {
        id: format!("fake-session-{}", inner.sessions),
        seq: 0,
        frames: Vec::new(),
    };
    inner.live = Some(Connection {
        id: conn_id,
        tx: tx.clone(),
    });
    let ready = world.ready_json(&inner.session.id, &shared.ws_url);
    dispatch_locked(&mut inner, "READY", ready);
    for guild in &world.guilds {
        dispatch_locked(&mut inner, "GUILD_CREATE", world.guild_create_json(guild));
    }
    drop(inner);
    shared.ready.send_replace(true);
}

fn resume(shared: &Arc<Shared>, conn_id: u64, tx: &mpsc::UnboundedSender<Outgoing>, d: &Value) {
    let mut inner = shared.lock();
    let known = !inner.session.id.is_empty() && d["session_id"] == json!(inner.session.id);
    if !known {
        let _ = tx.send(Outgoing::Frame(invalid_session_frame(false)));
        return;
    }
    let after = d["seq"].as_u64().unwrap_or(0);
    for (seq, frame) in &inner.session.frames {
        if *seq > after {
            let _ = tx.send(Outgoing::Frame(frame.clone()));
        }
    }
    inner.live = Some(Connection {
        id: conn_id,
        tx: tx.clone(),
    });
    inner.resumes += 1;
    dispatch_locked(&mut inner, "RESUMED", resumed_json());
    drop(inner);
    shared.ready.send_replace(true);
}

// ----------------------------------------------------------------------------------------------
// REST

fn json_response(status: u16, body: &Value) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn ok(body: &Value) -> Response {
    json_response(200, body)
}

fn no_content() -> Response {
    StatusCode::NO_CONTENT.into_response()
}

fn error(status: u16, message: &str, code: u64) -> Response {
    json_response(status, &json!({"message": message, "code": code}))
}

fn not_found() -> Response {
    error(404, "404: Not Found", 0)
}

fn invalid_form_body(field: &str, code: &str, message: &str) -> Response {
    json_response(
        400,
        &json!({
            "message": "Invalid Form Body",
            "code": 50035,
            "errors": {field: {"_errors": [{"code": code, "message": message}]}},
        }),
    )
}

/// The JSON body and files of a request (JSON, or multipart with `payload_json`).
fn parse_body(headers: &HeaderMap, body: &[u8]) -> (Value, Vec<Upload>) {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if let Some(boundary) = content_type
        .strip_prefix("multipart/form-data")
        .and_then(|rest| rest.split("boundary=").nth(1))
    {
        return parse_multipart(body, boundary.trim_matches('"'));
    }
    if body.is_empty() {
        return (Value::Null, Vec::new());
    }
    let json = serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()));
    (json, Vec::new())
}

fn parse_multipart(body: &[u8], boundary: &str) -> (Value, Vec<Upload>) {
    let delimiter = format!("--{boundary}");
    let delimiter = delimiter.as_bytes();
    let mut json = Value::Null;
    let mut files = Vec::new();
    let mut starts = Vec::new();
    let mut i = 0;
    while i + delimiter.len() <= body.len() {
        if &body[i..i + delimiter.len()] == delimiter {
            starts.push(i);
            i += delimiter.len();
        } else {
            i += 1;
        }
    }
    for pair in starts.windows(2) {
        let part = &body[pair[0] + delimiter.len()..pair[1]];
        let part = part.strip_prefix(b"\r\n").unwrap_or(part);
        let part = part.strip_suffix(b"\r\n").unwrap_or(part);
        let Some(split) = part.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&part[..split]).into_owned();
        let data = &part[split + 4..];
        let disposition = head
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("content-disposition:"))
            .unwrap_or("");
        let param = |name: &str| {
            disposition.split(';').find_map(|kv| {
                let (k, v) = kv.trim().split_once('=')?;
                (k == name).then(|| v.trim_matches('"').to_owned())
            })
        };
        let field = param("name").unwrap_or_default();
        let filename = param("filename");
        let content_type = head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_owned())
        });
        if field == "payload_json" {
            json = serde_json::from_slice(data).unwrap_or(Value::Null);
        } else if let Some(filename) = filename {
            files.push(Upload {
                field,
                filename,
                content_type,
                data: Bytes::copy_from_slice(data),
            });
        }
    }
    (json, files)
}

fn query_params(query: Option<&str>) -> HashMap<String, String> {
    query
        .unwrap_or("")
        .split('&')
        .filter(|kv| !kv.is_empty())
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            Some((k.to_owned(), v.to_owned()))
        })
        .collect()
}

async fn rest(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (json, files) = parse_body(&headers, &body);
    let full_path = uri.path();
    let path = full_path.strip_prefix("/api/v10").unwrap_or(full_path);
    let recorded = Recorded {
        method: method.to_string(),
        path: match uri.query() {
            Some(q) => format!("{path}?{q}"),
            None => path.to_owned(),
        },
        body: json.clone(),
        authorization: authorization.clone(),
        files: files.clone(),
    };
    shared.lock().requests.push(recorded.clone());
    if !full_path.starts_with("/api/v10/") {
        shared.lock().unexpected.push(recorded);
        return not_found();
    }
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let query = query_params(uri.query());
    let needs_bot_auth = !matches!(segments.first(), Some(&"interactions" | &"webhooks"));
    if needs_bot_auth
        && !authorization
            .as_deref()
            .is_some_and(|a| a.starts_with("Bot "))
    {
        return error(401, "401: Unauthorized", 0);
    }
    match route(&shared, &method, &segments, &query, json, files) {
        Some(response) => response,
        None => {
            shared.lock().unexpected.push(recorded);
            not_found()
        }
    }
}

fn parse_id(s: &str) -> Option<u64> {
    s.parse().ok()
}

/// `None`: a route the fake does not know.
fn route(
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
            shared.lock().gateway_answered = true;
            ok(&gateway_bot_json(&shared.ws_url))
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
        ("GET", ["oauth2", "applications", "@me"]) => ok(&world.application_info_json()),
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
        ("POST", ["webhooks", app, token]) => {
            if parse_id(app)? != world.application_id {
                return Some(error(404, "Unknown Webhook", 10015));
            }
            followup(shared, token, body, &files)
        }
        ("POST", ["channels", id, "messages"]) => {
            create_message(shared, parse_id(id)?, body, &files)
        }
        ("GET", ["channels", id, "messages"]) => {
            let channel_id = parse_id(id)?;
            if !channel_exists(shared, channel_id) {
                return Some(error(404, "Unknown Channel", 10003));
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
            ok(&json!(selected))
        }
        ("GET", ["channels", id, "messages", message_id]) => {
            let channel_id = parse_id(id)?;
            let message_id = parse_id(message_id)?;
            let inner = shared.lock();
            let found = inner.history.get(&channel_id).and_then(|h| {
                h.iter()
                    .find(|m| m["id"] == json!(message_id.to_string()))
                    .cloned()
            });
            match found {
                Some(message) => ok(&message),
                None => error(404, "Unknown Message", 10008),
            }
        }
        ("POST", ["channels", id, "typing"]) => {
            let channel_id = parse_id(id)?;
            if !channel_exists(shared, channel_id) {
                return Some(error(404, "Unknown Channel", 10003));
            }
            *shared.lock().typing.entry(channel_id).or_default() += 1;
            no_content()
        }
        ("GET", ["channels", id]) => {
            let channel_id = parse_id(id)?;
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

const SETTABLE_MESSAGE_FLAGS: u64 = 1 << 2 | 1 << 12 | 1 << 13 | 1 << 15;
const EPHEMERAL: u64 = 1 << 6;
const LOADING: u64 = 1 << 7;

/// Checks a message body as Discord would, and builds the message.
#[allow(clippy::result_large_err)] // the error is the response to send
fn build_message(
    shared: &Arc<Shared>,
    channel_id: u64,
    guild_id: Option<u64>,
    body: &Value,
    files: &[Upload],
) -> Result<Value, Response> {
    let world = &shared.world;
    let content = body["content"].as_str().unwrap_or("");
    if content.chars().count() > 2000 {
        return Err(invalid_form_body(
            "content",
            "BASE_TYPE_MAX_LENGTH",
            "Must be 2000 or fewer in length.",
        ));
    }
    let mut sticker_items = Vec::new();
    for sticker in body["sticker_ids"].as_array().into_iter().flatten() {
        let id = match sticker {
            Value::String(s) => parse_id(s),
            Value::Number(n) => n.as_u64(),
            _ => None,
        };
        let found = id.and_then(|id| {
            guild_id
                .and_then(|g| world.guild(g))
                .and_then(|g| g.stickers.iter().find(|(sid, _)| *sid == id))
        });
        match found {
            Some((sid, name)) => sticker_items.push(json!({
                "id": sid.to_string(), "name": name, "format_type": 1,
            })),
            None => {
                return Err(invalid_form_body(
                    "sticker_ids",
                    "STICKER_NOT_FOUND",
                    "Unknown sticker",
                ));
            }
        }
    }
    let embeds: Vec<Value> = body["embeds"]
        .as_array()
        .into_iter()
        .flatten()
        .map(normalize_embed)
        .collect();
    let attachments: Vec<Value> = files
        .iter()
        .map(|f| {
            let id = shared.snowflake();
            let url = format!(
                "https://cdn.discordapp.com/attachments/{channel_id}/{id}/{}",
                f.filename
            );
            json!({
                "id": id.to_string(),
                "filename": f.filename,
                "size": f.data.len(),
                "url": url,
                "proxy_url": url.replace("cdn.discordapp.com", "media.discordapp.net"),
                "content_type": f.content_type,
            })
        })
        .collect();
    if content.trim().is_empty()
        && embeds.is_empty()
        && sticker_items.is_empty()
        && attachments.is_empty()
        && body["components"].as_array().is_none_or(Vec::is_empty)
        && body.get("poll").is_none_or(Value::is_null)
    {
        return Err(error(400, "Cannot send an empty message", 50006));
    }
    let id = shared.snowflake();
    let author = world.user(world.bot_id);
    let mut message = world.message_json(id, channel_id, guild_id, author, content);
    message["embeds"] = json!(embeds);
    message["sticker_items"] = json!(sticker_items);
    message["attachments"] = json!(attachments);
    message["tts"] = json!(body["tts"].as_bool().unwrap_or(false));
    // a channel message may only set SUPPRESS_EMBEDS, SUPPRESS_NOTIFICATIONS, IS_VOICE_MESSAGE
    // and IS_COMPONENTS_V2
    message["flags"] = json!(body["flags"].as_u64().unwrap_or(0) & SETTABLE_MESSAGE_FLAGS);
    if let Some(nonce) = body.get("nonce").filter(|n| !n.is_null()) {
        message["nonce"] = nonce.clone();
    }
    if let Some(components) = body.get("components").filter(|c| c.is_array()) {
        message["components"] = components.clone();
    }
    let mentions: Vec<Value> = mentioned_users(content)
        .into_iter()
        .map(|uid| {
            let mut user = world.user(uid);
            if let Some(g) = guild_id
                && (uid == world.bot_id || world.member(g, uid).is_some())
            {
                user["member"] = world.partial_member_json(g, uid);
            }
            user
        })
        .collect();
    message["mentions"] = json!(mentions);
    if let Some(reference) = body.get("message_reference").filter(|r| r.is_object()) {
        let ref_id = match &reference["message_id"] {
            Value::String(s) => parse_id(s),
            Value::Number(n) => n.as_u64(),
            _ => None,
        };
        if let Some(ref_id) = ref_id {
            let ref_channel = match &reference["channel_id"] {
                Value::String(s) => parse_id(s).unwrap_or(channel_id),
                Value::Number(n) => n.as_u64().unwrap_or(channel_id),
                _ => channel_id,
            };
            let referenced = shared.lock().history.get(&ref_channel).and_then(|h| {
                h.iter()
                    .find(|m| m["id"] == json!(ref_id.to_string()))
                    .cloned()
            });
            let fail = reference["fail_if_not_exists"].as_bool().unwrap_or(true);
            if referenced.is_none() && fail {
                return Err(invalid_form_body(
                    "message_reference",
                    "MESSAGE_REFERENCE_UNKNOWN_MESSAGE",
                    "Unknown message",
                ));
            }
            if referenced.is_some() {
                message["type"] = json!(19);
                message["message_reference"] = reference_json(ref_id, ref_channel, guild_id);
                message["referenced_message"] = referenced.unwrap_or(Value::Null);
            }
        }
    }
    Ok(message)
}

/// User ids mentioned as `<@id>` or `<@!id>`.
fn mentioned_users(content: &str) -> Vec<u64> {
    let mut out = Vec::new();
    let mut rest = content;
    while let Some(at) = rest.find("<@") {
        rest = &rest[at + 2..];
        let digits = rest.strip_prefix('!').unwrap_or(rest);
        let end = digits
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(digits.len());
        if digits[end..].starts_with('>')
            && let Some(id) = parse_id(&digits[..end])
            && !out.contains(&id)
        {
            out.push(id);
        }
    }
    out
}

/// An embed as Discord returns it: `type: rich`, media with `proxy_url`.
fn normalize_embed(embed: &Value) -> Value {
    let mut e = embed.clone();
    if !e.is_object() {
        return json!({"type": "rich"});
    }
    if e.get("type").is_none_or(Value::is_null) {
        e["type"] = json!("rich");
    }
    for media in ["image", "thumbnail"] {
        if let Some(url) = e[media]["url"].as_str().map(str::to_owned)
            && e[media].get("proxy_url").is_none()
        {
            e[media]["proxy_url"] = json!(url);
        }
    }
    if let Some(fields) = e.get_mut("fields").and_then(Value::as_array_mut) {
        for f in fields {
            if f.get("inline").is_none() {
                f["inline"] = json!(false);
            }
        }
    }
    e
}

fn create_message(
    shared: &Arc<Shared>,
    channel_id: u64,
    body: Value,
    files: &[Upload],
) -> Response {
    let guild_id = match shared.world.channel(channel_id) {
        Some((g, _)) => Some(g.id),
        None if Shared::dm_user(&shared.lock(), channel_id).is_some() => None,
        None => return error(404, "Unknown Channel", 10003),
    };
    let scripted = shared
        .lock()
        .scripted
        .get_mut(&channel_id)
        .and_then(VecDeque::pop_front);
    if let Some(s) = scripted {
        let status = StatusCode::from_u16(s.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response =
            (status, [(header::CONTENT_TYPE, "application/json")], s.body).into_response();
        for (name, value) in s.headers {
            if let Ok(value) = value.parse() {
                response.headers_mut().insert(name, value);
            }
        }
        return response;
    }
    let message = match build_message(shared, channel_id, guild_id, &body, files) {
        Ok(m) => m,
        Err(response) => return response,
    };
    let mut inner = shared.lock();
    inner.posted.entry(channel_id).or_default().push(body);
    inner
        .history
        .entry(channel_id)
        .or_default()
        .push(message.clone());
    ok(&message)
}

/// A message from an interaction webhook (original response or follow-up). `lenient`: a body
/// that would not make a channel message (a deferred response) still makes an empty one.
#[allow(clippy::result_large_err)] // the error is the response to send
fn interaction_message(
    shared: &Arc<Shared>,
    state: &InteractionState,
    data: &Value,
    files: &[Upload],
    lenient: bool,
) -> Result<Value, Response> {
    let world = &shared.world;
    let mut message = match build_message(shared, state.channel_id, state.guild_id, data, files) {
        Ok(m) => m,
        Err(_) if lenient => world.message_json(
            shared.snowflake(),
            state.channel_id,
            state.guild_id,
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

fn interaction_callback(
    shared: &Arc<Shared>,
    id: u64,
    token: &str,
    body: Value,
    files: &[Upload],
) -> Response {
    let mut inner = shared.lock();
    let Some(state) = inner.interactions.get_mut(token).filter(|s| s.id == id) else {
        return error(404, "Unknown interaction", 10062);
    };
    if state.acknowledged {
        return error(400, "Interaction has already been acknowledged.", 40060);
    }
    state.acknowledged = true;
    let kind = body["type"].as_u64().unwrap_or(0);
    let snapshot = InteractionState {
        id: state.id,
        channel_id: state.channel_id,
        guild_id: state.guild_id,
        acknowledged: true,
        original: None,
        followups: Vec::new(),
    };
    drop(inner);
    let original = match kind {
        // CHANNEL_MESSAGE_WITH_SOURCE, DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE
        4 | 5 => {
            let data = if body["data"].is_object() {
                body["data"].clone()
            } else {
                json!({})
            };
            match interaction_message(shared, &snapshot, &data, files, kind == 5) {
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
        && message["flags"].as_u64().unwrap_or(0) & EPHEMERAL == 0
    {
        inner
            .history
            .entry(snapshot.channel_id)
            .or_default()
            .push(message.clone());
    }
    if let Some(state) = inner.interactions.get_mut(token) {
        state.original = original;
    }
    inner.interaction_responses.push((id, body));
    no_content()
}

fn original_message(
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
    let Some(original) = state.original.clone() else {
        return Some(error(404, "Unknown Message", 10008));
    };
    let response = match method {
        "GET" => ok(&original),
        "DELETE" => {
            state.original = None;
            let channel_id = state.channel_id;
            if let Some(h) = inner.history.get_mut(&channel_id) {
                h.retain(|m| m["id"] != original["id"]);
            }
            no_content()
        }
        "PATCH" => {
            let mut edited = original.clone();
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
            // an edit of a deferred response ends its "thinking..." state
            edited["flags"] = json!(edited["flags"].as_u64().unwrap_or(0) & !LOADING);
            if !files.is_empty() {
                let extra: Vec<Value> = files
                    .iter()
                    .map(|f| {
                        let url =
                            format!("https://cdn.discordapp.com/attachments/x/{}", f.filename);
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
            state.original = Some(edited.clone());
            let channel_id = state.channel_id;
            if let Some(m) = inner
                .history
                .get_mut(&channel_id)
                .and_then(|h| h.iter_mut().find(|m| m["id"] == edited["id"]))
            {
                *m = edited.clone();
            }
            ok(&edited)
        }
        _ => return None,
    };
    Some(response)
}

fn followup(shared: &Arc<Shared>, token: &str, body: Value, files: &[Upload]) -> Response {
    let snapshot = {
        let inner = shared.lock();
        let Some(state) = inner.interactions.get(token) else {
            return error(404, "Unknown Webhook", 10015);
        };
        if !state.acknowledged {
            return error(404, "Unknown Webhook", 10015);
        }
        InteractionState {
            id: state.id,
            channel_id: state.channel_id,
            guild_id: state.guild_id,
            acknowledged: true,
            original: None,
            followups: Vec::new(),
        }
    };
    let message = match interaction_message(shared, &snapshot, &body, files, false) {
        Ok(m) => m,
        Err(response) => return response,
    };
    let mut inner = shared.lock();
    if message["flags"].as_u64().unwrap_or(0) & EPHEMERAL == 0 {
        inner
            .history
            .entry(snapshot.channel_id)
            .or_default()
            .push(message.clone());
    }
    if let Some(state) = inner.interactions.get_mut(token) {
        state.followups.push(message.clone());
    }
    ok(&message)
}
