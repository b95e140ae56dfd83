//! Discord as the bot meets it: REST limits, the gateway and its shards, catch-up after a gap,
//! and the CDN files of messages.

use serde::Deserialize;

use super::bound::{Bound, DAY_SECS, Read, Unit, WEEK_SECS};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscordConfig {
    /// Base URL all REST traffic (and the gateway lookup) goes to; empty means Discord itself.
    pub api_base_url: String,
    /// Messages the bot allows itself per channel in any 5 seconds while Discord's rate-limit
    /// headers say nothing (before a channel's first answer, or behind a proxy that drops them).
    pub channel_messages_per_5s: u32,
    /// Requests the bot allows itself in any second, over every REST request of the process
    /// (Discord's global limit is 50).
    pub global_requests_per_second: u32,
    /// Most times one message is re-sent after a 429 before it is reported lost.
    pub max_rate_limit_waits: u32,
    /// A bucket's rate-limit state unused this long (and with its window over) is forgotten.
    pub rate_bucket_idle_secs: u64,
    /// Longest time one REST request may take.
    pub request_timeout_secs: u64,
    /// Longest pause between tries to reach Discord at start.
    pub reconnect_max_secs: u64,
    /// A gateway with no shard connected this long ends the process.
    pub gateway_stuck_secs: u64,
    /// Which gateway shards this process runs: "auto" or a range (see [`ShardPlan`]).
    pub shards: String,
    /// Whether the bot asks for the privileged Message Content intent (SPEC D14).
    pub message_content: MessageContent,
}

/// Whether the bot asks Discord for the Message Content intent (SPEC D14).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageContent {
    /// Ask; when Discord refuses it (close 4014), connect again without it.
    Auto,
    /// Ask, and stop (exit 2) when Discord refuses it.
    Required,
    /// Never ask: mentions, replies, DMs and commands only.
    Off,
}

/// Which gateway shards a process runs (SPEC D6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardPlan {
    /// Every shard, as many as Discord recommends: the process is the only one.
    Auto,
    /// Shards `first..=last` of `total`, the others run by other processes.
    Range { first: u32, last: u32, total: u32 },
}

/// Most shards a setting may name (Discord's own largest bots run a few thousand).
const SHARDS_MAX: u32 = 16_384;

impl ShardPlan {
    /// Parses `auto`, `ID/TOTAL` or `FIRST-LAST/TOTAL` (ids from 0).
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text == "auto" {
            return Ok(Self::Auto);
        }
        let bad = || {
            "must be \"auto\", \"ID/TOTAL\" or \"FIRST-LAST/TOTAL\" (ids from 0, below TOTAL)"
                .to_owned()
        };
        let (ids, total) = text.split_once('/').ok_or_else(bad)?;
        let number = |s: &str| s.trim().parse::<u32>().map_err(|_| bad());
        let total = number(total)?;
        let (first, last) = match ids.split_once('-') {
            Some((first, last)) => (number(first)?, number(last)?),
            None => (number(ids)?, number(ids)?),
        };
        if total == 0 || total > SHARDS_MAX || first > last || last >= total {
            return Err(bad());
        }
        Ok(Self::Range { first, last, total })
    }

    /// The name this process's queue claims go under: the same after a restart.
    pub fn owner(&self) -> String {
        match self {
            Self::Auto => "shards:all".to_owned(),
            Self::Range { first, last, total } => format!("shards:{first}-{last}/{total}"),
        }
    }
}

impl DiscordConfig {
    /// The shards setting, parsed (checked at load; "auto" if it were not).
    pub fn shard_plan(&self) -> ShardPlan {
        ShardPlan::parse(&self.shards).unwrap_or(ShardPlan::Auto)
    }
}

/// Catch-up after a gap in the gateway session (SPEC D9).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatchUpConfig {
    /// How far back, in seconds, messages are caught up; 0: off.
    pub window_secs: u64,
    /// Most messages read in one channel.
    pub max_messages: u8,
    /// Most channels read in one catch-up.
    pub max_channels: u16,
}

/// The files of messages in a turn's context: which are read, how much, and from where.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttachmentsConfig {
    /// The only origins (scheme, host, port) a file is downloaded from: Discord's CDN.
    pub origins: Vec<String>,
    /// Most pictures in one request (the trigger's first, then the newest in history).
    pub max_images: u8,
    /// A picture larger than this is named, not downloaded.
    pub image_max_bytes: u64,
    /// Most text files read into one request.
    pub max_text_files: u8,
    /// Most bytes read of one text file; a longer one is cut, saying so.
    pub text_max_bytes: u64,
    /// Longest time one download may take.
    pub fetch_timeout_secs: u64,
}

/// The ranges of this file's numeric settings ([`super::bound`] checks and documents them).
pub(super) const BOUNDS: &[Bound] = &[
    Bound {
        key: "discord.channel_messages_per_5s",
        least: 1,
        most: 50,
        unit: Unit::Count,
        read: Read::One(|c| c.discord.channel_messages_per_5s.into()),
    },
    Bound {
        key: "discord.global_requests_per_second",
        least: 1,
        most: 10_000,
        unit: Unit::Count,
        read: Read::One(|c| c.discord.global_requests_per_second.into()),
    },
    Bound {
        key: "discord.max_rate_limit_waits",
        least: 0,
        most: 100,
        unit: Unit::Count,
        read: Read::One(|c| c.discord.max_rate_limit_waits.into()),
    },
    Bound {
        key: "discord.rate_bucket_idle_secs",
        least: 1,
        most: WEEK_SECS,
        unit: Unit::Secs,
        read: Read::One(|c| c.discord.rate_bucket_idle_secs),
    },
    Bound {
        key: "discord.request_timeout_secs",
        least: 1,
        most: 300,
        unit: Unit::Secs,
        read: Read::One(|c| c.discord.request_timeout_secs),
    },
    Bound {
        key: "discord.reconnect_max_secs",
        least: 1,
        most: 3600,
        unit: Unit::Secs,
        read: Read::One(|c| c.discord.reconnect_max_secs),
    },
    Bound {
        key: "discord.gateway_stuck_secs",
        least: 10,
        most: DAY_SECS,
        unit: Unit::Secs,
        read: Read::One(|c| c.discord.gateway_stuck_secs),
    },
    Bound {
        key: "catch_up.window_secs",
        least: 0,
        most: DAY_SECS,
        unit: Unit::Secs,
        read: Read::One(|c| c.catch_up.window_secs),
    },
    Bound {
        key: "catch_up.max_messages",
        least: 1,
        most: 100,
        unit: Unit::Count,
        read: Read::One(|c| c.catch_up.max_messages.into()),
    },
    Bound {
        key: "catch_up.max_channels",
        least: 1,
        most: 500,
        unit: Unit::Count,
        read: Read::One(|c| c.catch_up.max_channels.into()),
    },
    Bound {
        key: "attachments.max_images",
        least: 0,
        most: 10,
        unit: Unit::Count,
        read: Read::One(|c| c.attachments.max_images.into()),
    },
    Bound {
        key: "attachments.image_max_bytes",
        least: 0,
        most: 52_428_800,
        unit: Unit::Bytes,
        read: Read::One(|c| c.attachments.image_max_bytes),
    },
    Bound {
        key: "attachments.max_text_files",
        least: 0,
        most: 10,
        unit: Unit::Count,
        read: Read::One(|c| c.attachments.max_text_files.into()),
    },
    Bound {
        key: "attachments.text_max_bytes",
        least: 0,
        most: 1_048_576,
        unit: Unit::Bytes,
        read: Read::One(|c| c.attachments.text_max_bytes),
    },
    Bound {
        key: "attachments.fetch_timeout_secs",
        least: 1,
        most: 300,
        unit: Unit::Secs,
        read: Read::One(|c| c.attachments.fetch_timeout_secs),
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::config::tests::{no_env, temp_config};

    // SPEC D6: the shards setting: "auto", one shard or a range of one total; anything else is
    // refused by name, and each range has its own stable claim name.
    #[test]
    fn shard_settings_parse_and_bad_ones_are_refused() {
        assert_eq!(ShardPlan::parse("auto"), Ok(ShardPlan::Auto));
        assert_eq!(
            ShardPlan::parse("1/2"),
            Ok(ShardPlan::Range {
                first: 1,
                last: 1,
                total: 2
            })
        );
        let range = ShardPlan::parse(" 4-7/8 ").unwrap();
        assert_eq!(range.owner(), "shards:4-7/8");
        for bad in [
            "", "2/2", "3-1/4", "0/0", "1-/2", "x/2", "0/99999", "-1/2", "0-1",
        ] {
            assert!(ShardPlan::parse(bad).is_err(), "{bad:?}");
        }
        let dir = temp_config(Some("[discord]\nshards = \"2/2\"\n"));
        let err = Config::load_with_env(Some(dir.path()), no_env()).unwrap_err();
        assert!(err.to_string().contains("`discord.shards`"), "{err}");
    }
}
