//! The bot's own channel webhooks, through which it posts as a server's persona (its name and
//! avatar, SPEC A1), and by which it knows its own messages again: a webhook's message has the
//! webhook as its author, so the bot's replies in history and a reply to one of them (SPEC C1)
//! are told by the webhook id.
//!
//! One webhook per channel, named [`HOOK_NAME`], found among the channel's webhooks (one this
//! bot user made, in this or another process) or made once. What a channel has is remembered:
//! a refusal (no Manage Webhooks, the channel's 15 taken) for a while before it is asked again.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use secrecy::SecretString;
use serde_json::Value;

use super::client::{DiscordRest, GetError, Hook};
use crate::discord::ids::{BotId, snowflake};

/// The name of the webhooks the bot makes (each post carries the persona's name instead).
pub const HOOK_NAME: &str = "persona-bot";
/// How long a channel without a webhook of ours, or one that refused, is believed.
const BELIEVED_FOR: Duration = Duration::from_secs(600);
/// Channels remembered; past it the memory starts over (a few channels asked again).
const CHANNELS_MAX: usize = 4096;

/// What the bot knows of a channel's webhooks.
#[derive(Debug, Clone)]
enum Known {
    /// The hook it posts through, and every webhook of the bot's there (two processes may each
    /// have made one).
    Ours(Hook, Vec<u64>),
    /// None of ours there, as of then: the next post makes one.
    Absent(Instant),
    /// Discord refused to list or make one, as of then.
    Refused(Instant),
}

pub struct Webhooks {
    rest: std::sync::Arc<DiscordRest>,
    bot: BotId,
    known: Mutex<HashMap<u64, Known>>,
}

impl Webhooks {
    pub fn new(rest: std::sync::Arc<DiscordRest>, bot: BotId) -> Self {
        Self {
            rest,
            bot,
            known: Mutex::default(),
        }
    }

    fn known(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Known>> {
        self.known
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Keeps what was learned of a channel; a lookup that raced a webhook being made never
    /// takes the made one away (only [`Self::forget`] does).
    fn remember(&self, channel: u64, known: Known) {
        let mut map = self.known();
        if matches!(map.get(&channel), Some(Known::Ours(..))) && !matches!(known, Known::Ours(..)) {
            return;
        }
        keep(&mut map, channel, known);
    }

    /// What is believed of the channel now (`None`: nothing, or too old).
    fn believed(&self, channel: u64) -> Option<Known> {
        let known = self.known().get(&channel).cloned()?;
        match &known {
            Known::Absent(at) | Known::Refused(at) if at.elapsed() >= BELIEVED_FOR => None,
            _ => Some(known),
        }
    }

    /// What is believed of the channel, asked of Discord when nothing (fresh) is.
    async fn known_now(&self, channel: u64) -> Known {
        match self.believed(channel) {
            Some(known) => known,
            None => self.look_up(channel).await,
        }
    }

    /// Asks Discord for the channel's webhooks and keeps what it learns.
    async fn look_up(&self, channel: u64) -> Known {
        let known = match self.rest.channel_webhooks(channel).await {
            Ok(list) => match ours_in(&list, self.bot.get()) {
                Some((hook, all)) => Known::Ours(hook, all),
                None => Known::Absent(Instant::now()),
            },
            Err(GetError::Status(status)) => {
                tracing::info!(
                    channel,
                    status,
                    "channel webhooks not readable; posting as the bot user"
                );
                Known::Refused(Instant::now())
            }
            // Unknown; not asked again for a while (a webhook message comes with each post).
            Err(GetError::Failed(error)) => {
                tracing::warn!(channel, %error, "channel webhooks could not be read; posting as the bot user");
                Known::Refused(Instant::now())
            }
        };
        self.remember(channel, known);
        self.believed(channel)
            .unwrap_or_else(|| Known::Refused(Instant::now()))
    }

    /// The bot's webhook in the channel, found or made; `None` when Discord will not let it.
    pub async fn hook(&self, channel: u64) -> Option<Hook> {
        match self.known_now(channel).await {
            Known::Ours(hook, _) => Some(hook),
            Known::Refused(_) => None,
            Known::Absent(_) => self.make(channel).await,
        }
    }

    async fn make(&self, channel: u64) -> Option<Hook> {
        match self.rest.create_webhook(channel, HOOK_NAME).await {
            Ok(made) => {
                let hook = hook_of(&made);
                let known = match &hook {
                    Some(hook) => Known::Ours(hook.clone(), vec![hook.id]),
                    None => Known::Refused(Instant::now()),
                };
                self.remember(channel, known);
                tracing::info!(channel, "webhook made for the persona's posts");
                hook
            }
            Err(error) => {
                tracing::warn!(channel, %error, "no webhook could be made; posting as the bot user");
                self.remember(channel, Known::Refused(Instant::now()));
                None
            }
        }
    }

    /// Whether `webhook` is the bot's own webhook in the channel (asked of Discord once when
    /// the channel is not known yet).
    pub async fn is_ours(&self, channel: u64, webhook: u64) -> bool {
        let known = self.known_now(channel).await;
        matches!(known, Known::Ours(_, all) if all.contains(&webhook))
    }

    /// The webhook is gone (a moderator deleted it): the next post looks again.
    pub fn forget(&self, channel: u64) {
        self.known().remove(&channel);
    }

    /// The webhook refused a post it will refuse again (the name, say): the bot user posts
    /// here for a while, without asking the webhook first.
    pub fn refused(&self, channel: u64) {
        keep(&mut self.known(), channel, Known::Refused(Instant::now()));
    }
}

/// Keeps what is known of a channel, within [`CHANNELS_MAX`] channels.
fn keep(map: &mut HashMap<u64, Known>, channel: u64, known: Known) {
    if map.len() >= CHANNELS_MAX && !map.contains_key(&channel) {
        map.clear();
    }
    map.insert(channel, known);
}

/// The hook in a webhook object, when it has an id and a token.
fn hook_of(webhook: &Value) -> Option<Hook> {
    let id = snowflake(webhook.get("id")?)?;
    let token = webhook.get("token")?.as_str()?;
    Some(Hook {
        id,
        token: SecretString::from(token.to_owned()),
    })
}

/// The bot's own incoming webhooks among a channel's (made by the bot user): the first with a
/// token to post through, and every one's id.
fn ours_in(list: &Value, bot: Option<u64>) -> Option<(Hook, Vec<u64>)> {
    let bot = bot?;
    let ours: Vec<&Value> = list
        .as_array()?
        .iter()
        .filter(|w| w.get("type").and_then(Value::as_u64) == Some(1))
        .filter(|w| w.pointer("/user/id").and_then(snowflake) == Some(bot))
        .collect();
    let hook = ours.iter().find_map(|w| hook_of(w))?;
    let all = ours
        .iter()
        .filter_map(|w| w.get("id").and_then(snowflake))
        .collect();
    Some((hook, all))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // SPEC A1: only an incoming webhook the bot user made, with its token, is the bot's; a
    // channel's other webhooks (a feed, another bot's) are not.
    #[test]
    fn only_the_bots_own_webhook_is_taken() {
        let list = json!([
            { "id": "1", "type": 1, "token": "t1", "user": { "id": "55" } },
            { "id": "2", "type": 2, "user": { "id": "7" } },
            { "id": "3", "type": 1, "user": { "id": "7" } },
            { "id": "4", "type": 1, "token": "t4", "user": { "id": "7" } },
        ]);
        let (hook, all) = ours_in(&list, Some(7)).unwrap();
        assert_eq!(
            (hook.id, all),
            (4, vec![3, 4]),
            "posts through 4; 3's posts are its too"
        );
        assert!(ours_in(&list, Some(8)).is_none());
        assert!(ours_in(&json!({"message": "no"}), Some(7)).is_none());
        assert!(
            !format!("{hook:?}").contains("t4"),
            "the token is not printed"
        );
    }
}
