//! Discord's permission bits, what the fake world grants, and Discord's algorithm for a member's
//! permissions in a channel.

use super::world::{FakeChannel, FakeGuild, World};

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
pub const MENTION_EVERYONE: u64 = 1 << 17;
pub const USE_EXTERNAL_EMOJIS: u64 = 1 << 18;
pub const CONNECT: u64 = 1 << 20;
pub const SPEAK: u64 = 1 << 21;
pub const CHANGE_NICKNAME: u64 = 1 << 26;
pub const MANAGE_WEBHOOKS: u64 = 1 << 29;
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

/// What an app a user installed may do where its bot is not a member, as `app_permissions`:
/// embed and attach in its own answers, nothing in the channel.
pub const USER_INSTALL_PERMISSIONS: u64 = EMBED_LINKS | ATTACH_FILES;

/// What a user may do in a DM, as Discord reports it in `app_permissions` there.
pub const DM_PERMISSIONS: u64 = ADD_REACTIONS
    | VIEW_CHANNEL
    | SEND_MESSAGES
    | EMBED_LINKS
    | ATTACH_FILES
    | READ_MESSAGE_HISTORY
    | USE_EXTERNAL_EMOJIS
    | USE_EXTERNAL_STICKERS;

impl World {
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

    /// Overwrites of a channel as (id, type 0 role / 1 member, allow, deny): a private channel
    /// hides it from `@everyone` and lets the bot in; the channel's own allow and deny for the
    /// bot go into the bot's member overwrite.
    pub(super) fn overwrites(
        &self,
        guild: &FakeGuild,
        channel: &FakeChannel,
    ) -> Vec<(u64, u8, u64, u64)> {
        let mut overwrites = Vec::new();
        let mut bot_allow = channel.bot_allow;
        if !channel.everyone_can_view {
            overwrites.push((guild.id, 0, 0, VIEW_CHANNEL));
            bot_allow |= BOT_PRIVATE_ALLOW;
        }
        let bot_allow = bot_allow & !channel.bot_deny;
        if bot_allow != 0 || channel.bot_deny != 0 {
            overwrites.push((self.bot_id, 1, bot_allow, channel.bot_deny));
        }
        overwrites
    }
}
