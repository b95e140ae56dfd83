//! What commands and event handlers share: [`BotData`], and the command context poise hands
//! them. Below the gateway and the commands, which both read it, so neither is reached back.

use std::sync::Arc;

use crate::domain::admission::RateLimit;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::domain::ports::{
    ATTACHMENTS_PER_MESSAGE, Attachment, FactAdded, NewFact, SettingsStore,
};
use crate::domain::scope::{ChannelId, UserId};
use crate::engine::orchestrator::Orchestrator;
use crate::locale::Locale;
use crate::shutdown::Shutdown;

use super::{guild, ids, recent, rest};

pub type Error = anyhow::Error;
pub type Context<'a> = poise::Context<'a, Arc<BotData>, Error>;

/// What commands and event handlers share.
pub struct BotData {
    pub orchestrator: Orchestrator,
    /// Whether the gateway delivers other people's message text (the Message Content intent,
    /// SPEC D14): without it only mentions, replies to the bot and DMs start turns.
    pub message_content: std::sync::atomic::AtomicBool,
    /// The MCP servers and their tools (SPEC E4): `/status` and `/tools mcp` read them; `None`
    /// when none is configured.
    pub outside: Option<Arc<dyn crate::tools::outside::OutsideCatalog>>,
    pub settings: Arc<dyn SettingsStore>,
    /// Which persona speaks where: a server's own, else the deployment's default (SPEC A1).
    pub personas: Arc<crate::domain::personas::Personas>,
    /// Each user's rate limit (SPEC C2).
    pub rate: RateLimit,
    pub random: crate::domain::admission::RandomBudget,
    pub reminders: Arc<dyn crate::domain::ports::ReminderStore>,
    /// The first model the persona asks (`/status`).
    pub model_name: String,
    /// How replies are cut where a server has not chosen (`turn.reply_style`, SPEC C4).
    pub reply_style: crate::config::ReplyStyle,
    /// The models a server may choose for its reviewer (`/drafting model`): the configured ones.
    pub review_models: Vec<String>,
    /// What the persona remembers (`/memory`, `/forget-me`).
    pub memory: Arc<dyn crate::domain::ports::MemoryStore>,
    pub cache: guild::CacheCell,
    pub bot: ids::BotId,
    /// Recent messages as the gateway delivers them (history without a REST call).
    pub recent: Arc<recent::RecentMessages>,
    pub default_locale: Locale,
    /// Where the bot tells someone it cannot answer now (the database is down).
    pub sink: Arc<dyn crate::domain::ports::ChatSink>,
    pub outage_notices: OutageNotices,
    /// Reads history for a catch-up and members' roles.
    pub rest: Arc<rest::client::DiscordRest>,
    /// The bot's channel webhooks: a message from one of them is the persona's own.
    pub webhooks: Arc<rest::webhooks::Webhooks>,
    /// Moderators hear what a catch-up found.
    pub thought_log: Arc<dyn crate::domain::ports::ThoughtLog>,
    /// The last message seen in each channel: where a catch-up starts (SPEC D9).
    pub seen: Arc<crate::domain::catch_up::SeenMarks>,
    pub catch_up: crate::domain::catch_up::Limits,
    /// What turns delivered: a message answered, or deliberately left unanswered, is closed
    /// there (SPEC D12).
    pub outcomes: Arc<dyn crate::domain::ports::OutcomeStore>,
    /// Members' 👍 and 👎 on replies (SPEC E2).
    pub feedback: Arc<dyn crate::domain::ports::FeedbackStore>,
    /// Approval requests, decided by presses on their cards (SPEC E3).
    pub approvals: Arc<dyn crate::domain::ports::ApprovalStore>,
    /// Facts from "Remember this" waiting for their subject's consent (SPEC A5).
    pub consents: Consents,
    /// The longest fact kept (`memory.fact_max_chars`).
    pub fact_max_chars: usize,
    /// Facts kept about one person (`memory.facts_per_user`).
    pub facts_per_user: u32,
    /// The app's task tracker and stop token: the tasks the adapter starts (catch-ups, a
    /// settings change's thought-log line) join it, so a stop waits for them.
    pub shutdown: Shutdown,
}

/// How a consent button's custom id starts: `consent:yes:<request>` or `consent:no:<request>`.
pub const CONSENT_PREFIX: &str = "consent:";
/// How long a request for consent waits (an interaction's message may be edited for 15
/// minutes).
const CONSENT_WAIT: Duration = Duration::from_secs(15 * 60);
/// Requests kept at once; past it the oldest go.
const CONSENTS_MAX: usize = 1000;

/// The requests for consent that wait, in memory: a restart forgets them, and a press then
/// says the request expired (the asker asks again).
#[derive(Debug, Default)]
pub struct Consents {
    waiting: Mutex<HashMap<u64, (Instant, NewFact)>>,
}

impl Consents {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, (Instant, NewFact)>> {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Keeps `fact`, about its message's author, until they answer request `request`.
    pub fn ask(&self, request: u64, fact: NewFact) {
        let mut waiting = self.lock();
        waiting.retain(|_, (at, _)| at.elapsed() < CONSENT_WAIT);
        if waiting.len() >= CONSENTS_MAX
            && let Some(oldest) = waiting
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(k, _)| *k)
        {
            waiting.remove(&oldest);
        }
        waiting.insert(request, (Instant::now(), fact));
    }

    /// Request `request` answered by `user`: its fact, taken, when they are the one asked.
    pub fn answer(&self, request: u64, user: UserId) -> ConsentAnswer {
        let mut waiting = self.lock();
        match waiting.get(&request) {
            Some((at, _)) if at.elapsed() >= CONSENT_WAIT => {
                waiting.remove(&request);
                ConsentAnswer::Expired
            }
            None => ConsentAnswer::Expired,
            Some((_, fact)) if fact.about != Some(user) => ConsentAnswer::NotYours,
            Some(_) => waiting
                .remove(&request)
                .map_or(ConsentAnswer::Expired, |(_, fact)| {
                    ConsentAnswer::Yours(fact)
                }),
        }
    }
}

/// What a press on a request for consent finds.
pub enum ConsentAnswer {
    /// The presser is the one asked: the fact, no longer waiting.
    Yours(NewFact),
    /// Someone else pressed.
    NotYours,
    /// No such request waits (answered, expired, or forgotten by a restart).
    Expired,
}

/// A message's files as the core describes them (at most Discord's ten).
pub fn attachments_of(message: &serenity::all::Message) -> Vec<Attachment> {
    message
        .attachments
        .iter()
        .take(ATTACHMENTS_PER_MESSAGE)
        .map(|a| Attachment {
            filename: a.filename.clone(),
            url: a.url.clone(),
            size: u64::from(a.size),
            content_type: a.content_type.clone(),
        })
        .collect()
}

impl BotData {
    /// Stores `fact` ("Remember this", SPEC A5) under the per-user limit; the locale key of
    /// what happened.
    pub async fn remember(&self, fact: NewFact) -> &'static str {
        match self.memory.add_fact(fact, self.facts_per_user).await {
            Ok(FactAdded::Stored { .. }) => "menu-remembered",
            Ok(FactAdded::LimitReached { .. }) => "menu-remember-full",
            Err(error) => {
                tracing::warn!(%error, "a fact from \"Remember this\" was not stored");
                "command-failed"
            }
        }
    }
}

/// Channels told lately that the bot cannot read its settings: one notice a minute per channel.
#[derive(Debug, Default)]
pub struct OutageNotices {
    told: std::sync::Mutex<std::collections::HashMap<ChannelId, std::time::Instant>>,
}

/// How often one channel is told.
const OUTAGE_NOTICE_EVERY: std::time::Duration = std::time::Duration::from_secs(60);
/// Channels remembered; past it the memory starts over (a few channels told twice).
const OUTAGE_NOTICE_CHANNELS: usize = 1024;

impl OutageNotices {
    /// Whether `channel` is due a notice now (and, if so, counts it as told).
    pub fn due(&self, channel: ChannelId) -> bool {
        let mut told = self
            .told
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = std::time::Instant::now();
        if told
            .get(&channel)
            .is_some_and(|at| now.duration_since(*at) < OUTAGE_NOTICE_EVERY)
        {
            return false;
        }
        if told.len() >= OUTAGE_NOTICE_CHANNELS {
            told.clear();
        }
        told.insert(channel, now);
        true
    }
}
