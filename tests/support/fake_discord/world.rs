//! The world the fake serves: the bot, its guilds, their channels, members, stickers and emoji.

pub use super::session::shard_of;

/// The guild of [`World::sharded`] on shard 1 of 2 (`(id >> 22) % 2 == 1`); guild 100 is on
/// shard 0.
pub const SHARD_1_GUILD: u64 = (1 << 22) + 100;

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
    /// The guild's own emoji: (id, name)
    pub emojis: Vec<(u64, String)>,
}

/// A text channel (type 0).
#[derive(Debug, Clone)]
pub struct FakeChannel {
    pub id: u64,
    pub name: String,
    /// `false`: an overwrite for `@everyone` denies VIEW_CHANNEL, and one for the bot member
    /// allows [`BOT_PRIVATE_ALLOW`].
    pub everyone_can_view: bool,
    /// Permissions the bot's member overwrite allows here (beyond the private channel's), e.g.
    /// MENTION_EVERYONE.
    pub bot_allow: u64,
    /// Permissions the bot's member overwrite denies here, e.g. SEND_MESSAGES for a channel the
    /// bot may only read.
    pub bot_deny: u64,
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
            bot_allow: 0,
            bot_deny: 0,
        }
    }

    /// The bot's member overwrite also allows `permissions` here.
    pub fn allow_bot(mut self, permissions: u64) -> Self {
        self.bot_allow |= permissions;
        self
    }

    /// The bot's member overwrite denies `permissions` here.
    pub fn deny_bot(mut self, permissions: u64) -> Self {
        self.bot_deny |= permissions;
        self
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
    /// manage_guild); stickers 700 "wave" and 701 "heart"; emoji 750 "partyblob".
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
                emojis: vec![(750, "partyblob".into())],
            }],
        }
    }

    /// [`Self::simple`] with a second guild [`SHARD_1_GUILD`] "Second Guild" beside guild 100, so
    /// that with 2 shards each shard has one: guild 100 is on shard 0, the second on shard 1. The
    /// second mirrors the first: channels 210 "general" (public), 211 "thoughts" (private), 212
    /// "mods-public" (public), the same members, owner and locale; stickers 710 "wave" and 711
    /// "heart"; emoji 760 "partyblob".
    pub fn sharded() -> Self {
        let mut world = Self::simple();
        let first = world.guilds[0].clone();
        world.guilds.push(FakeGuild {
            id: SHARD_1_GUILD,
            name: "Second Guild".into(),
            channels: vec![
                FakeChannel::new(210, "general", true),
                FakeChannel::new(211, "thoughts", false),
                FakeChannel::new(212, "mods-public", true),
            ],
            stickers: vec![(710, "wave".into()), (711, "heart".into())],
            emojis: vec![(760, "partyblob".into())],
            ..first
        });
        world
    }

    /// The guilds of shard `id` among `total`, in order.
    pub fn shard_guilds(&self, id: u64, total: u64) -> impl Iterator<Item = &FakeGuild> {
        self.guilds
            .iter()
            .filter(move |g| shard_of(g.id, total) == id)
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
}
