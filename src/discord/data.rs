//! What commands and event handlers share: [`BotData`], and the command context poise hands
//! them. Below the gateway and the commands, which both read it, so neither is reached back.

use std::sync::Arc;

use crate::domain::admission::RateLimit;
use crate::domain::ports::SettingsStore;
use crate::domain::scope::ChannelId;
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
    /// The app's task tracker and stop token: the tasks the adapter starts (catch-ups, a
    /// settings change's thought-log line) join it, so a stop waits for them.
    pub shutdown: Shutdown,
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
