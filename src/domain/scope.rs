//! Typed ids and the scope of a turn. Scope comes from the turn's context (the Discord event),
//! never from tool arguments (SPEC S3).

use serde::{Deserialize, Serialize};

macro_rules! snowflake {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
        pub struct $name(pub u64);

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

snowflake!(
    /// A Discord server (guild).
    ServerId
);
snowflake!(
    /// A Discord channel, thread or DM channel.
    ChannelId
);
snowflake!(
    /// A Discord user.
    UserId
);
snowflake!(
    /// A Discord message.
    MessageId
);

/// A persona, by its configured slug (`"aria"`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PersonaId(pub String);

impl std::fmt::Display for PersonaId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Who may read the channel a turn runs in. Only public server channels are mirrored to the
/// thought log (SPEC T11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    /// A direct message with the bot.
    Dm,
    /// A server channel that @everyone cannot view (private channel or private thread).
    Private,
    /// A server channel @everyone can view.
    Public,
}

/// Where and for whom a turn runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// `None` in a DM.
    pub server: Option<ServerId>,
    pub channel: ChannelId,
    /// The author of the turn's trigger (the requester).
    pub user: UserId,
    pub persona: PersonaId,
    pub visibility: Visibility,
}

impl Scope {
    /// Whether the turn runs in a DM.
    pub fn is_dm(&self) -> bool {
        self.server.is_none() || self.visibility == Visibility::Dm
    }

    /// The server whose thought log may mirror this turn: only public server channels.
    pub fn thought_log_server(&self) -> Option<ServerId> {
        match self.visibility {
            Visibility::Public => self.server,
            Visibility::Dm | Visibility::Private => None,
        }
    }

    /// The server usage stats are counted for: none in a DM (SPEC T10).
    pub fn stats_server(&self) -> Option<ServerId> {
        if self.is_dm() { None } else { self.server }
    }
}
