//! Which messages start a turn (SPEC C1) and which are refused before any model call (SPEC C2).
//! Pure decisions over plain facts the adapter gathers from Discord; the per-user cooldown is
//! the only state.

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
    CoolingDown,
    CannotSend,
}

/// Per-user cooldown between turns.
#[derive(Debug)]
pub struct Cooldowns {
    every: Duration,
    last: Mutex<HashMap<UserId, Instant>>,
}

impl Cooldowns {
    pub fn new(every: Duration) -> Self {
        Self {
            every,
            last: Mutex::new(HashMap::new()),
        }
    }

    /// Takes the user's turn slot now, unless they had one within the cooldown.
    fn take(&self, user: UserId) -> bool {
        if self.every.is_zero() {
            return true;
        }
        let now = Instant::now();
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if last
            .get(&user)
            .is_some_and(|at| now.duration_since(*at) < self.every)
        {
            return false;
        }
        // Keep the map small: forget users whose cooldown is long over.
        if last.len() > 10_000 {
            last.retain(|_, at| now.duration_since(*at) < self.every);
        }
        last.insert(user, now);
        true
    }
}

/// Admits a triggering message (SPEC C2): channel and role lists (block beats allow; an empty
/// allow list allows all), deliverability, then the cooldown. A refused message gets no model
/// call and no reply.
pub fn admit(
    facts: &MessageFacts<'_>,
    settings: &ServerSettings,
    cooldowns: &Cooldowns,
) -> Result<(), Refusal> {
    let access = &settings.access;
    if !facts.is_dm {
        let in_list = |list: &[ChannelId]| {
            list.contains(&facts.channel) || facts.parent_channel.is_some_and(|p| list.contains(&p))
        };
        if in_list(&access.blocked_channels) {
            return Err(Refusal::ChannelBlocked);
        }
        if !access.allowed_channels.is_empty() && !in_list(&access.allowed_channels) {
            return Err(Refusal::ChannelNotAllowed);
        }
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
    if !cooldowns.take(facts.author) {
        return Err(Refusal::CoolingDown);
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
        let cooldowns = Cooldowns::new(Duration::ZERO);
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
        let cooldowns = Cooldowns::new(Duration::ZERO);
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

    // SPEC C2: the per-user cooldown.
    #[tokio::test(start_paused = true)]
    async fn per_user_cooldown() {
        let cooldowns = Cooldowns::new(Duration::from_secs(2));
        let settings = ServerSettings::default();
        assert_eq!(admit(&facts("a"), &settings, &cooldowns), Ok(()));
        assert_eq!(
            admit(&facts("b"), &settings, &cooldowns),
            Err(Refusal::CoolingDown)
        );
        let other = MessageFacts {
            author: UserId(3),
            ..facts("c")
        };
        assert_eq!(admit(&other, &settings, &cooldowns), Ok(()), "per user");
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(admit(&facts("d"), &settings, &cooldowns), Ok(()));
    }
}
