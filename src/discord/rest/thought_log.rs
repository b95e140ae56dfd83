//! The thought-log port on Discord (SPEC T11): notices become embeds in the server's hidden
//! moderators' channel, with notifications suppressed and no mentions. The bot never posts into
//! a thought-log channel that @everyone can view. Notices wait out the channel's rate limit; a
//! turn summary is dropped instead when the channel is busy, so notices never wait behind it.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};

use super::client::{DiscordRest, nonce};
use crate::discord::guild::CacheCell;
use crate::domain::ports::{SettingsStore, ThoughtLog};
use crate::domain::scope::{ChannelId, ServerId};
use crate::domain::thought_log::{Card, Notice, cut, render};
use crate::locale::Locale;

/// Discord's `SUPPRESS_NOTIFICATIONS` message flag.
const SUPPRESS_NOTIFICATIONS: u64 = 1 << 12;

pub struct DiscordThoughtLog {
    rest: Arc<DiscordRest>,
    settings: Arc<dyn SettingsStore>,
    cache: CacheCell,
    default_locale: Locale,
    /// Channels already reported as public, so the warning is logged once.
    warned: Mutex<HashSet<ChannelId>>,
}

impl DiscordThoughtLog {
    pub fn new(
        rest: Arc<DiscordRest>,
        settings: Arc<dyn SettingsStore>,
        cache: CacheCell,
        default_locale: Locale,
    ) -> Self {
        Self {
            rest,
            settings,
            cache,
            default_locale,
            warned: Mutex::new(HashSet::new()),
        }
    }
}

/// A card as a Discord embed, within Discord's field limits.
pub fn embed(card: &Card) -> Value {
    let fields: Vec<Value> = card
        .fields
        .iter()
        .take(25)
        .map(|(name, value)| {
            json!({ "name": cut(name, 250), "value": cut(value, 1000), "inline": false })
        })
        .collect();
    json!({ "title": cut(&card.title, 250), "color": card.colour, "fields": fields })
}

#[async_trait]
impl ThoughtLog for DiscordThoughtLog {
    async fn post(&self, server: ServerId, notice: Notice) {
        let channel = match self.settings.settings(server).await {
            Ok(settings) => settings.thought_log_channel,
            Err(error) => {
                tracing::warn!(%server, %error, "settings unavailable; thought-log notice dropped");
                return;
            }
        };
        let Some(channel) = channel else {
            return;
        };
        if self.cache.everyone_can_view(server, channel) != Some(false) {
            let first = self
                .warned
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(channel);
            if first {
                tracing::warn!(%server, %channel, "thought-log channel is visible to everyone (or unknown); not posting there");
            }
            return;
        }
        let locale = self.cache.locale(server).unwrap_or(self.default_locale);
        let body = json!({
            "embeds": [embed(&render(&notice, locale))],
            "flags": SUPPRESS_NOTIFICATIONS,
            "allowed_mentions": { "parse": [] },
            "nonce": nonce(),
            "enforce_nonce": true,
        });
        // A summary never keeps a notice waiting: it goes only when the channel's bucket is
        // free with a place to spare, and is dropped otherwise.
        let posted = match notice {
            Notice::TurnSummary { .. } => {
                let Some(posted) = self.rest.create_message_unless_busy(channel.0, &body).await
                else {
                    tracing::debug!(%server, %channel, "thought-log busy; turn summary dropped");
                    return;
                };
                posted
            }
            _ => self.rest.create_message(channel.0, &body).await,
        };
        if let Err(error) = posted {
            tracing::warn!(%server, %channel, %error, "thought-log notice not posted");
        }
    }
}
