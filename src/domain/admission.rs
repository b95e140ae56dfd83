//! Which messages start a turn (SPEC C1) and which are refused before any model call (SPEC C2).
//! Pure decisions over plain facts the adapter gathers from Discord; the per-user rate limit
//! is the only state.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::domain::ports::ServerSettings;
use crate::domain::scope::{ChannelId, UserId};

/// What the adapter knows about one incoming message.
#[derive(Debug, Clone, Default)]
pub struct MessageFacts<'a> {
    pub content: &'a str,
    pub channel: ChannelId,
    /// The thread's parent channel, for lists that name the parent.
    pub parent_channel: Option<ChannelId>,
    pub is_dm: bool,
    pub author: UserId,
    /// Written by a bot (this one included) or a webhook: never a trigger (no loops).
    pub from_bot_or_webhook: bool,
    pub mentions_bot: bool,
    /// A reply to one of the bot's (or its persona webhooks') messages.
    pub replies_to_bot: bool,
    /// The author's Discord role ids (none in a DM).
    pub author_roles: &'a [u64],
    /// The bot may post in the channel.
    pub bot_can_send: bool,
    /// The gateway does not deliver other people's message text (no Message Content intent,
    /// SPEC D14): only a message addressed to the bot starts a turn.
    pub content_hidden: bool,
}

/// Whether a person spoke to the bot itself: a DM, a mention of it, or a reply to it (outside
/// the thought-log channel). The messages a catch-up answers (SPEC D9); trigger words and
/// always-reply channels start turns only as messages come.
pub fn addressed(facts: &MessageFacts<'_>, settings: &ServerSettings) -> bool {
    !facts.from_bot_or_webhook
        && settings.thought_log_channel != Some(facts.channel)
        && (facts.is_dm || facts.mentions_bot || facts.replies_to_bot)
}

/// Whether the message triggers a turn (SPEC C1).
pub fn triggers(
    facts: &MessageFacts<'_>,
    settings: &ServerSettings,
    trigger_words: &[String],
) -> bool {
    if facts.from_bot_or_webhook || settings.thought_log_channel == Some(facts.channel) {
        return false;
    }
    if addressed(facts, settings) {
        return true;
    }
    // Without the text, an always-reply channel or a trigger word would answer an empty line.
    if facts.content_hidden {
        return false;
    }
    let always = &settings.access.always_reply_channels;
    if always.contains(&facts.channel) || facts.parent_channel.is_some_and(|p| always.contains(&p))
    {
        return true;
    }
    contains_word(facts.content, trigger_words)
}

/// Whether `text` contains one of `words` as a whole word (case-insensitive). For scripts
/// without spaces (CJK), a plain substring counts.
fn contains_word(text: &str, words: &[String]) -> bool {
    let text = text.to_lowercase();
    words.iter().any(|word| {
        let word = word.trim().to_lowercase();
        if word.is_empty() {
            return false;
        }
        if !word.is_ascii() {
            return text.contains(&word);
        }
        text.match_indices(&word).any(|(at, _)| {
            let before = text[..at].chars().next_back();
            let after = text[at + word.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        })
    })
}

/// Why a triggering message gets no turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    ChannelBlocked,
    ChannelNotAllowed,
    RoleBlocked,
    RoleNotAllowed,
    /// Past the user's rate limit; `tell` for the first refusal of the window.
    Flooding {
        tell: bool,
    },
    CannotSend,
}

/// The per-user rate limit (SPEC C2): at most `per_minute` messages a user may start turns with
/// in a window of 60 s (from their first). Within it every message is queued, however quick;
/// past it a message is refused, and the user is told the first time in the window only.
#[derive(Debug)]
pub struct RateLimit {
    per_minute: u32,
    windows: Mutex<HashMap<UserId, Window>>,
}

#[derive(Debug, Clone, Copy)]
struct Window {
    opened: Instant,
    count: u32,
    told: bool,
}

/// The window of the limit.
const RATE_WINDOW: Duration = Duration::from_secs(60);
/// Users remembered at once; past it windows already over are forgotten.
const RATE_USERS: usize = 10_000;

impl RateLimit {
    /// `per_minute` 0: no limit.
    pub fn new(per_minute: u32) -> Self {
        Self {
            per_minute,
            windows: Mutex::new(HashMap::new()),
        }
    }

    /// No limit (follow-ups, a catch-up, tests).
    pub fn unlimited() -> Self {
        Self::new(0)
    }

    /// Counts a message of `user` now: `Ok` within the limit, else whether this refusal is the
    /// first of the window (the one the user is told of).
    fn take(&self, user: UserId) -> Result<(), bool> {
        self.take_at(user, Instant::now())
    }

    fn take_at(&self, user: UserId, now: Instant) -> Result<(), bool> {
        if self.per_minute == 0 {
            return Ok(());
        }
        let mut windows = self
            .windows
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if windows.len() >= RATE_USERS && !windows.contains_key(&user) {
            windows.retain(|_, w| now.saturating_duration_since(w.opened) < RATE_WINDOW);
            if windows.len() >= RATE_USERS {
                // Every remembered user is inside a window: the oldest goes.
                let oldest = windows
                    .iter()
                    .min_by_key(|(_, w)| w.opened)
                    .map(|(u, _)| *u);
                if let Some(oldest) = oldest {
                    windows.remove(&oldest);
                }
            }
        }
        let window = windows.entry(user).or_insert(Window {
            opened: now,
            count: 0,
            told: false,
        });
        if now.saturating_duration_since(window.opened) >= RATE_WINDOW {
            *window = Window {
                opened: now,
                count: 0,
                told: false,
            };
        }
        if window.count < self.per_minute {
            window.count += 1;
            return Ok(());
        }
        let first = !window.told;
        window.told = true;
        Err(first)
    }
}

/// The server's channel rules (SPEC C2): a blocked channel (or thread of one) refuses, and a
/// non-empty allow list refuses every channel not on it. Block beats allow.
pub fn channel_rules(
    channel: ChannelId,
    parent: Option<ChannelId>,
    settings: &ServerSettings,
) -> Result<(), Refusal> {
    let access = &settings.access;
    let in_list =
        |list: &[ChannelId]| list.contains(&channel) || parent.is_some_and(|p| list.contains(&p));
    if in_list(&access.blocked_channels) {
        return Err(Refusal::ChannelBlocked);
    }
    if !access.allowed_channels.is_empty() && !in_list(&access.allowed_channels) {
        return Err(Refusal::ChannelNotAllowed);
    }
    Ok(())
}

/// Admits a triggering message (SPEC C2): channel and role lists (block beats allow; an empty
/// allow list allows all), deliverability, then the user's rate limit. A message refused by the
/// lists or deliverability gets no model call and no reply; one past the rate limit gets a
/// notice the first time in its window (the adapter posts it).
pub fn admit(
    facts: &MessageFacts<'_>,
    settings: &ServerSettings,
    rate: &RateLimit,
) -> Result<(), Refusal> {
    let access = &settings.access;
    if !facts.is_dm {
        channel_rules(facts.channel, facts.parent_channel, settings)?;
        if facts
            .author_roles
            .iter()
            .any(|r| access.blocked_roles.contains(r))
        {
            return Err(Refusal::RoleBlocked);
        }
        if !access.allowed_roles.is_empty()
            && !facts
                .author_roles
                .iter()
                .any(|r| access.allowed_roles.contains(r))
        {
            return Err(Refusal::RoleNotAllowed);
        }
    }
    if !facts.bot_can_send {
        return Err(Refusal::CannotSend);
    }
    if let Err(tell) = rate.take(facts.author) {
        return Err(Refusal::Flooding { tell });
    }
    Ok(())
}

/// Random quiet turns' hourly budget per server (in this process).
#[derive(Debug, Default)]
pub struct RandomBudget {
    /// Server to (hour number, turns started in it).
    used: Mutex<HashMap<crate::domain::scope::ServerId, (u64, u32)>>,
}

impl RandomBudget {
    /// Whether a message starts a random quiet turn: the server allows it, the roll (a number
    /// in 0..100) is under its chance, and its hour's budget is not spent.
    pub fn roll(
        &self,
        server: crate::domain::scope::ServerId,
        random: &crate::domain::ports::RandomTriggers,
        roll: u8,
        now_ms: i64,
    ) -> bool {
        if !random.enabled || roll >= random.percent {
            return false;
        }
        let hour = u64::try_from(now_ms / 3_600_000).unwrap_or(0);
        let mut used = self
            .used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let entry = used.entry(server).or_insert((hour, 0));
        if entry.0 != hour {
            *entry = (hour, 0);
        }
        if entry.1 >= random.per_hour {
            return false;
        }
        entry.1 += 1;
        true
    }

    /// Gives back a turn [`roll`](Self::roll) granted in the hour of `now_ms` that did not start
    /// (the message was not admitted).
    pub fn refund(&self, server: crate::domain::scope::ServerId, now_ms: i64) {
        let hour = u64::try_from(now_ms / 3_600_000).unwrap_or(0);
        let mut used = self
            .used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(entry) = used.get_mut(&server).filter(|e| e.0 == hour) {
            entry.1 = entry.1.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ports::AccessLists;

    fn facts(content: &str) -> MessageFacts<'_> {
        MessageFacts {
            content,
            channel: ChannelId(1),
            author: UserId(2),
            bot_can_send: true,
            ..MessageFacts::default()
        }
    }

    fn words() -> Vec<String> {
        vec!["aria".into(), "アリア".into()]
    }

    // SPEC C1: mention, reply to the bot, trigger word, DM and always-reply channels trigger.
    #[test]
    fn each_trigger_starts_a_turn() {
        let settings = ServerSettings::default();
        assert!(!triggers(&facts("hello all"), &settings, &words()));
        assert!(triggers(
            &MessageFacts {
                mentions_bot: true,
                ..facts("hey")
            },
            &settings,
            &words()
        ));
        assert!(triggers(
            &MessageFacts {
                replies_to_bot: true,
                ..facts("and?")
            },
            &settings,
            &words()
        ));
        assert!(triggers(
            &MessageFacts {
                is_dm: true,
                ..facts("psst")
            },
            &settings,
            &words()
        ));
        assert!(triggers(
            &facts("Hey Aria, how are you?"),
            &settings,
            &words()
        ));
        assert!(triggers(&facts("アリア、元気？"), &settings, &words()));
        assert!(
            !triggers(&facts("malaria is bad"), &settings, &words()),
            "whole words only"
        );
        let always = ServerSettings {
            access: AccessLists {
                always_reply_channels: vec![ChannelId(1)],
                ..Default::default()
            },
            ..Default::default()
        };
        assert!(triggers(&facts("anything"), &always, &words()));
    }

    // SPEC C1: bots, webhooks and the thought-log channel never trigger.
    #[test]
    fn bots_webhooks_and_the_thought_log_never_trigger() {
        let settings = ServerSettings {
            thought_log_channel: Some(ChannelId(1)),
            ..Default::default()
        };
        assert!(!triggers(
            &MessageFacts {
                mentions_bot: true,
                ..facts("aria")
            },
            &settings,
            &words()
        ));
        let plain = ServerSettings::default();
        let bot = MessageFacts {
            from_bot_or_webhook: true,
            mentions_bot: true,
            is_dm: true,
            ..facts("aria")
        };
        assert!(!triggers(&bot, &plain, &words()));
    }

    // SPEC C2: block beats allow, for channels and roles.
    #[test]
    fn block_beats_allow() {
        let cooldowns = RateLimit::unlimited();
        let settings = ServerSettings {
            access: AccessLists {
                allowed_channels: vec![ChannelId(1)],
                blocked_channels: vec![ChannelId(1)],
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(
            admit(&facts("x"), &settings, &cooldowns),
            Err(Refusal::ChannelBlocked)
        );
        let roles = ServerSettings {
            access: AccessLists {
                allowed_roles: vec![7],
                blocked_roles: vec![8],
                ..Default::default()
            },
            ..Default::default()
        };
        let both = [7, 8];
        assert_eq!(
            admit(
                &MessageFacts {
                    author_roles: &both,
                    ..facts("x")
                },
                &roles,
                &cooldowns
            ),
            Err(Refusal::RoleBlocked)
        );
        let none: [u64; 0] = [];
        assert_eq!(
            admit(
                &MessageFacts {
                    author_roles: &none,
                    ..facts("x")
                },
                &roles,
                &cooldowns
            ),
            Err(Refusal::RoleNotAllowed)
        );
        let allowed = [7];
        assert_eq!(
            admit(
                &MessageFacts {
                    author_roles: &allowed,
                    ..facts("x")
                },
                &roles,
                &cooldowns
            ),
            Ok(())
        );
        let elsewhere = MessageFacts {
            channel: ChannelId(9),
            ..facts("x")
        };
        let only_one = ServerSettings {
            access: AccessLists {
                allowed_channels: vec![ChannelId(1)],
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(
            admit(&elsewhere, &only_one, &cooldowns),
            Err(Refusal::ChannelNotAllowed)
        );
    }

    // SPEC C2: a channel the bot cannot post in is refused; DMs ignore server lists.
    #[test]
    fn undeliverable_is_refused_and_dms_skip_server_lists() {
        let cooldowns = RateLimit::unlimited();
        let settings = ServerSettings {
            access: AccessLists {
                allowed_channels: vec![ChannelId(5)],
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(
            admit(
                &MessageFacts {
                    is_dm: true,
                    ..facts("x")
                },
                &settings,
                &cooldowns
            ),
            Ok(())
        );
        let mute = MessageFacts {
            bot_can_send: false,
            ..facts("x")
        };
        assert_eq!(
            admit(&mute, &ServerSettings::default(), &cooldowns),
            Err(Refusal::CannotSend)
        );
    }

    // Random triggers: off by default, a chance per message, a budget per server per hour.
    #[test]
    fn random_triggers_are_off_by_default_and_bounded_per_hour() {
        use crate::domain::ports::RandomTriggers;
        use crate::domain::scope::ServerId;
        let budget = RandomBudget::default();
        let off = RandomTriggers::default();
        assert!(!budget.roll(ServerId(1), &off, 0, 0), "off by default");
        let on = RandomTriggers {
            enabled: true,
            percent: 10,
            per_hour: 2,
        };
        assert!(
            !budget.roll(ServerId(1), &on, 10, 0),
            "the roll must be under the chance"
        );
        assert!(budget.roll(ServerId(1), &on, 9, 0));
        assert!(budget.roll(ServerId(1), &on, 0, 1_000));
        assert!(!budget.roll(ServerId(1), &on, 0, 2_000), "two per hour");
        assert!(budget.roll(ServerId(2), &on, 0, 2_000), "per server");
        assert!(budget.roll(ServerId(1), &on, 0, 3_600_000), "a new hour");
        budget.refund(ServerId(1), 3_600_001);
        assert!(
            budget.roll(ServerId(1), &on, 0, 3_600_002),
            "a refunded turn is available again"
        );
        assert!(budget.roll(ServerId(1), &on, 0, 3_600_003));
        assert!(!budget.roll(ServerId(1), &on, 0, 3_600_004), "still two");
    }

    // SPEC C2: the per-user rate limit queues every message inside it, however quick, refuses
    // a flood past it and tells the user once per window.
    #[tokio::test(start_paused = true)]
    async fn per_user_rate_limit_tells_once_per_window() {
        let rate = RateLimit::new(2);
        let settings = ServerSettings::default();
        assert_eq!(admit(&facts("a"), &settings, &rate), Ok(()));
        assert_eq!(
            admit(&facts("b"), &settings, &rate),
            Ok(()),
            "a quick second"
        );
        assert_eq!(
            admit(&facts("c"), &settings, &rate),
            Err(Refusal::Flooding { tell: true })
        );
        assert_eq!(
            admit(&facts("d"), &settings, &rate),
            Err(Refusal::Flooding { tell: false }),
            "told once"
        );
        let other = MessageFacts {
            author: UserId(3),
            ..facts("e")
        };
        assert_eq!(admit(&other, &settings, &rate), Ok(()), "per user");
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(admit(&facts("f"), &settings, &rate), Ok(()), "a new window");
        assert_eq!(admit(&facts("g"), &settings, &rate), Ok(()));
        assert_eq!(
            admit(&facts("h"), &settings, &rate),
            Err(Refusal::Flooding { tell: true }),
            "told again in the new window"
        );
    }
}
