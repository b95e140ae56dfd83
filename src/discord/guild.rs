//! Facts about servers and channels from serenity's cache: who can view a channel, whether the
//! bot may post there, the server's language. Read in short, synchronous sections (cache
//! references are never held across an `.await`).

use std::sync::{Arc, OnceLock};

use serenity::all::{Cache, ChannelType, GuildChannel, GuildId, Permissions, RoleId, UserId};

use crate::domain::scope::{ChannelId, ServerId, Visibility};
use crate::locale::Locale;

/// The client's cache, set once the client exists (it is built after the ports).
#[derive(Clone, Default)]
pub struct CacheCell(Arc<OnceLock<Arc<Cache>>>);

impl CacheCell {
    pub fn set(&self, cache: Arc<Cache>) {
        let _ = self.0.set(cache);
    }

    fn get(&self) -> Option<&Arc<Cache>> {
        self.0.get()
    }

    /// Whether @everyone may view `channel` (a thread follows its parent; a private thread is
    /// never public). `None` when the cache does not know the channel.
    pub fn everyone_can_view(&self, server: ServerId, channel: ChannelId) -> Option<bool> {
        let cache = self.get()?;
        let guild = cache.guild(GuildId::new(server.0))?;
        let channel = find_channel(&guild.channels, &guild.threads, channel)?;
        if channel.kind == ChannelType::PrivateThread {
            return Some(false);
        }
        let channel = match channel.parent_id.filter(|_| is_thread(channel.kind)) {
            Some(parent) => guild.channels.get(&parent)?,
            None => channel,
        };
        let everyone = RoleId::new(guild.id.get());
        let mut permissions = guild
            .roles
            .get(&everyone)
            .map_or(Permissions::empty(), |r| r.permissions);
        if permissions.contains(Permissions::ADMINISTRATOR) {
            return Some(true);
        }
        for overwrite in &channel.permission_overwrites {
            if overwrite.kind == serenity::all::PermissionOverwriteType::Role(everyone) {
                permissions.remove(overwrite.deny);
                permissions.insert(overwrite.allow);
            }
        }
        Some(permissions.contains(Permissions::VIEW_CHANNEL))
    }

    /// Who may read the channel: public, private (a DM is decided by the caller).
    pub fn visibility(&self, server: ServerId, channel: ChannelId) -> Visibility {
        match self.everyone_can_view(server, channel) {
            Some(true) => Visibility::Public,
            // Unknown counts as private: nothing is mirrored by mistake.
            Some(false) | None => Visibility::Private,
        }
    }

    /// Whether the bot may post in the channel; `true` when the cache cannot tell (Discord
    /// will refuse then, and the refusal is logged).
    pub fn bot_can_send(&self, server: ServerId, channel: ChannelId, bot: u64) -> bool {
        self.bot_permissions(server, channel, bot)
            .is_none_or(|(permissions, send)| {
                permissions.contains(Permissions::VIEW_CHANNEL | send)
            })
    }

    /// Whether the bot may post through a webhook of its own in the channel: a text or
    /// announcement channel (not a thread) where it has Manage Webhooks. `false` when the cache
    /// cannot tell: the bot user is the safe voice.
    pub fn bot_can_webhook(&self, server: ServerId, channel: ChannelId, bot: u64) -> bool {
        let Some(cache) = self.get() else {
            return false;
        };
        let Some(guild) = cache.guild(GuildId::new(server.0)) else {
            return false;
        };
        let Some(found) = guild
            .channels
            .get(&serenity::all::ChannelId::new(channel.0))
        else {
            return false;
        };
        let kind_ok = matches!(found.kind, ChannelType::Text | ChannelType::News);
        let Some(member) = guild.members.get(&UserId::new(bot)) else {
            return false;
        };
        let permissions = guild.user_permissions_in(found, member);
        kind_ok && permissions.contains(Permissions::VIEW_CHANNEL | Permissions::MANAGE_WEBHOOKS)
    }

    /// Whether the bot may read the channel's history and answer there (a catch-up); `true`
    /// when the cache cannot tell.
    pub fn bot_can_catch_up(&self, server: ServerId, channel: ChannelId, bot: u64) -> bool {
        self.bot_permissions(server, channel, bot)
            .is_none_or(|(permissions, send)| {
                permissions
                    .contains(Permissions::VIEW_CHANNEL | Permissions::READ_MESSAGE_HISTORY | send)
            })
    }

    /// The bot's permissions in the channel and the one that lets it post there, when the
    /// cache knows them.
    fn bot_permissions(
        &self,
        server: ServerId,
        channel: ChannelId,
        bot: u64,
    ) -> Option<(Permissions, Permissions)> {
        let cache = self.get()?;
        let guild = cache.guild(GuildId::new(server.0))?;
        let channel = find_channel(&guild.channels, &guild.threads, channel)?;
        let member = guild.members.get(&UserId::new(bot))?;
        let send = if is_thread(channel.kind) {
            Permissions::SEND_MESSAGES_IN_THREADS
        } else {
            Permissions::SEND_MESSAGES
        };
        Some((guild.user_permissions_in(channel, member), send))
    }

    /// The bot user's own avatar, when it has one (a webhook post without a persona avatar
    /// shows it rather than Discord's default).
    pub fn bot_avatar(&self) -> Option<String> {
        self.get()?.current_user().avatar_url()
    }

    /// The server's language, or `None` when unknown.
    pub fn locale(&self, server: ServerId) -> Option<Locale> {
        let cache = self.get()?;
        let guild = cache.guild(GuildId::new(server.0))?;
        Some(Locale::from_discord(&guild.preferred_locale))
    }

    /// The server's available stickers, or `None` when the cache does not hold the server.
    pub fn stickers(&self, server: ServerId) -> Option<Vec<crate::domain::ports::Sticker>> {
        let cache = self.get()?;
        let guild = cache.guild(GuildId::new(server.0))?;
        let mut stickers: Vec<crate::domain::ports::Sticker> = guild
            .stickers
            .values()
            .filter(|s| s.available)
            .map(|s| crate::domain::ports::Sticker {
                id: s.id.get(),
                name: s.name.clone(),
            })
            .collect();
        // One order every turn (the map has none).
        stickers.sort_by(|a, b| a.name.cmp(&b.name).then(a.id.cmp(&b.id)));
        Some(stickers)
    }

    /// The server's own emoji that can be used now, or `None` when the cache does not hold
    /// the server (SPEC E1).
    pub fn emojis(&self, server: ServerId) -> Option<Vec<crate::domain::ports::CustomEmoji>> {
        let cache = self.get()?;
        let guild = cache.guild(GuildId::new(server.0))?;
        let mut emojis: Vec<crate::domain::ports::CustomEmoji> = guild
            .emojis
            .values()
            .filter(|e| e.available)
            .map(|e| crate::domain::ports::CustomEmoji {
                id: e.id.get(),
                name: e.name.clone(),
                animated: e.animated,
            })
            .collect();
        emojis.sort_by(|a, b| a.name.cmp(&b.name).then(a.id.cmp(&b.id)));
        Some(emojis)
    }

    /// The server's name, or `None` when unknown.
    pub fn name(&self, server: ServerId) -> Option<String> {
        let cache = self.get()?;
        let guild = cache.guild(GuildId::new(server.0))?;
        Some(guild.name.clone())
    }

    /// The parent of a thread (for allow and block lists).
    pub fn parent(&self, server: ServerId, channel: ChannelId) -> Option<ChannelId> {
        let cache = self.get()?;
        let guild = cache.guild(GuildId::new(server.0))?;
        let channel = find_channel(&guild.channels, &guild.threads, channel)?;
        channel
            .parent_id
            .filter(|_| is_thread(channel.kind))
            .map(|p| ChannelId(p.get()))
    }
}

fn is_thread(kind: ChannelType) -> bool {
    matches!(
        kind,
        ChannelType::PublicThread | ChannelType::PrivateThread | ChannelType::NewsThread
    )
}

fn find_channel<'a>(
    channels: &'a std::collections::HashMap<serenity::all::ChannelId, GuildChannel>,
    threads: &'a [GuildChannel],
    channel: ChannelId,
) -> Option<&'a GuildChannel> {
    let id = serenity::all::ChannelId::new(channel.0);
    channels
        .get(&id)
        .or_else(|| threads.iter().find(|t| t.id == id))
}
