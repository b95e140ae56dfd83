//! Storage ports: server settings, personas, the per-channel message queue, image-plan worker
//! tasks and completed tool outcomes. `storage/` implements them on SQLite and PostgreSQL; the
//! core sees only these traits and plain data (SPEC D1, D4).

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ports::{PlanId, PortError};
use super::review::ReviewPolicy;
use super::scope::{ChannelId, MessageId, PersonaId, ServerId, UserId, Visibility};
use super::turn::TurnId;
use crate::locale::Locale;

/// A server's deliberate-tool-mode settings (SPEC T4).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliberateSettings {
    pub enabled: bool,
    /// Extra trigger phrases per tool name.
    #[serde(default)]
    pub custom_phrases: BTreeMap<String, Vec<String>>,
}

/// Who may trigger turns where (SPEC C2): block beats allow; empty allow lists allow everyone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessLists {
    #[serde(default)]
    pub allowed_channels: Vec<ChannelId>,
    #[serde(default)]
    pub blocked_channels: Vec<ChannelId>,
    /// Discord role ids.
    #[serde(default)]
    pub allowed_roles: Vec<u64>,
    #[serde(default)]
    pub blocked_roles: Vec<u64>,
    /// Channels where every message triggers a turn (SPEC C1).
    #[serde(default)]
    pub always_reply_channels: Vec<ChannelId>,
}

/// One server's settings; a server never configured has the defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerSettings {
    /// Response Drafting (SPEC C8).
    pub drafting: bool,
    /// The hidden moderators' channel (SPEC T11); `None` means no thought log.
    pub thought_log_channel: Option<ChannelId>,
    pub deliberate: DeliberateSettings,
    pub access: AccessLists,
    /// What Response Drafting's reviewer checks here (SPEC C8).
    pub review: ReviewPolicy,
    /// Random quiet turns (off by default).
    pub random: RandomTriggers,
}

/// One change a moderator makes to a server's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingsChange {
    Drafting(bool),
    ThoughtLog(Option<ChannelId>),
    /// Random quiet turns on or off; a chance or hourly bound given is clamped to its range.
    Random {
        enabled: bool,
        percent: Option<u8>,
        per_hour: Option<u32>,
    },
}

impl SettingsChange {
    pub fn apply(self, settings: &mut ServerSettings) {
        match self {
            Self::Drafting(on) => settings.drafting = on,
            Self::ThoughtLog(channel) => settings.thought_log_channel = channel,
            Self::Random {
                enabled,
                percent,
                per_hour,
            } => {
                let random = &mut settings.random;
                random.enabled = enabled;
                if let Some(percent) = percent {
                    random.percent = percent.clamp(1, 100);
                }
                if let Some(per_hour) = per_hour {
                    random.per_hour = per_hour.clamp(1, 60);
                }
            }
        }
    }
}

/// Random triggers: a small chance per message, in channels the server allows, to start a quiet
/// turn; bounded per server per hour.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RandomTriggers {
    #[serde(default)]
    pub enabled: bool,
    /// Chance per message, in percent.
    #[serde(default = "two")]
    pub percent: u8,
    /// Most random turns per server per hour.
    #[serde(default = "three")]
    pub per_hour: u32,
}

fn two() -> u8 {
    2
}

fn three() -> u32 {
    3
}

impl Default for RandomTriggers {
    fn default() -> Self {
        Self {
            enabled: false,
            percent: two(),
            per_hour: three(),
        }
    }
}

#[async_trait]
pub trait SettingsStore: Send + Sync {
    /// The server's settings, or the defaults when it has none stored.
    async fn settings(&self, server: ServerId) -> Result<ServerSettings, PortError>;
    async fn save_settings(
        &self,
        server: ServerId,
        settings: &ServerSettings,
    ) -> Result<(), PortError>;

    /// Applies one change to the stored settings and returns the result. A store shared by
    /// several processes does it atomically, on the stored row (not a cached copy), so two
    /// moderators changing two settings at once both win. This default (read, change, save)
    /// suits a store only one process uses.
    async fn update(
        &self,
        server: ServerId,
        change: SettingsChange,
    ) -> Result<ServerSettings, PortError> {
        let mut settings = self.settings(server).await?;
        change.apply(&mut settings);
        self.save_settings(server, &settings).await?;
        Ok(settings)
    }

    /// The settings a message is handled with: the defaults in a DM, and (with a warning) when
    /// the store cannot be read, so a database hiccup never silences the bot.
    async fn settings_or_default(&self, server: Option<ServerId>) -> ServerSettings {
        let Some(server) = server else {
            return ServerSettings::default();
        };
        self.settings(server).await.unwrap_or_else(|error| {
            tracing::warn!(%server, %error, "settings unavailable; using defaults");
            ServerSettings::default()
        })
    }
}

/// A persona the bot can speak as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Persona {
    pub id: PersonaId,
    pub display_name: String,
    pub system_prompt: String,
    /// Words that start a turn when a message contains them (SPEC C1).
    pub trigger_words: Vec<String>,
    pub avatar_url: Option<String>,
}

#[async_trait]
pub trait PersonaStore: Send + Sync {
    async fn persona(&self, id: &PersonaId) -> Result<Option<Persona>, PortError>;
    async fn personas(&self) -> Result<Vec<Persona>, PortError>;
    async fn save_persona(&self, persona: &Persona) -> Result<(), PortError>;
}

/// A triggering message waiting for its channel's turn (SPEC C3, D4): everything needed to
/// run its turn, even after a restart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewQueuedMessage {
    pub server: Option<ServerId>,
    pub channel: ChannelId,
    pub message: MessageId,
    pub author: UserId,
    pub author_name: String,
    pub content: String,
    /// A follow-up from the requester of the running turn (SPEC C7).
    pub follow_up: bool,
    pub enqueued_at_ms: i64,
    /// Who answers.
    pub persona: PersonaId,
    pub visibility: Visibility,
    /// The author's locale.
    pub locale: Locale,
    /// A turn the bot started itself (reminder, random trigger).
    pub quiet: bool,
}

/// A stored queue entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedMessage {
    pub id: i64,
    pub entry: NewQueuedMessage,
}

/// What storing a queued message did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    /// A new entry with this id.
    New(i64),
    /// The message was already queued under this id; it is handled once, from there.
    Existing(i64),
}

impl Pushed {
    pub fn id(self) -> i64 {
        match self {
            Pushed::New(id) | Pushed::Existing(id) => id,
        }
    }
}

#[async_trait]
pub trait QueueStore: Send + Sync {
    /// Stores a message before it is acknowledged. A message already stored (a redelivered
    /// gateway event, or one recovered at start) keeps its one entry.
    async fn push(&self, message: &NewQueuedMessage) -> Result<Pushed, PortError>;
    /// Removes an answered (or deliberately dropped) entry.
    async fn remove(&self, id: i64) -> Result<(), PortError>;
    /// Marks an entry as a follow-up (SPEC C7), so it keeps its place after a restart.
    async fn mark_follow_up(&self, id: i64) -> Result<(), PortError>;
    /// The channel's entries, oldest first.
    async fn pending(&self, channel: ChannelId) -> Result<Vec<QueuedMessage>, PortError>;
    /// Every channel with entries (start-up recovery).
    async fn channels_with_pending(&self) -> Result<Vec<ChannelId>, PortError>;
    /// Removes every entry of the channel; returns how many there were (`/kill`).
    async fn clear(&self, channel: ChannelId) -> Result<u64, PortError>;
    /// Claims the channel's oldest unclaimed entry for `owner` (one process of several).
    async fn claim_next(
        &self,
        channel: ChannelId,
        owner: &str,
    ) -> Result<Option<QueuedMessage>, PortError>;
}

/// A worker task as claimed: the plan it makes and how often it was tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedTask {
    pub id: i64,
    pub plan: PlanId,
    /// Attempts including this one.
    pub attempts: u32,
}

/// Image-plan worker tasks: claimed by exactly one worker across processes; a crashed worker's
/// claim expires after its lease.
#[async_trait]
pub trait TaskStore: Send + Sync {
    /// Claims the oldest due task, or one whose lease expired.
    async fn claim(
        &self,
        worker: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Option<ClaimedTask>, PortError>;
    /// Marks the task done with its result. False when `worker` no longer holds it.
    async fn complete(
        &self,
        id: i64,
        worker: &str,
        result: &Value,
        now_ms: i64,
    ) -> Result<bool, PortError>;
    /// Puts the task back for a later attempt. False when `worker` no longer holds it.
    async fn retry_at(
        &self,
        id: i64,
        worker: &str,
        error: &str,
        next_attempt_ms: i64,
    ) -> Result<bool, PortError>;
    /// Gives up on the task, keeping the failure payload. False when `worker` no longer
    /// holds it.
    async fn fail(
        &self,
        id: i64,
        worker: &str,
        result: &Value,
        now_ms: i64,
    ) -> Result<bool, PortError>;
}

/// A completed tool outcome, kept so a retried or resumed turn reuses it (SPEC R4).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredOutcome {
    pub identity: String,
    pub response: Value,
    pub invocation: u32,
}

#[async_trait]
pub trait OutcomeStore: Send + Sync {
    async fn record_outcome(
        &self,
        turn: TurnId,
        outcome: &StoredOutcome,
        at_ms: i64,
    ) -> Result<(), PortError>;
    async fn outcomes(&self, turn: TurnId) -> Result<Vec<StoredOutcome>, PortError>;
}

/// How a reminder repeats.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Repeat {
    #[default]
    Once,
    Daily,
    Weekly,
}

impl Repeat {
    pub fn as_str(self) -> &'static str {
        match self {
            Repeat::Once => "once",
            Repeat::Daily => "daily",
            Repeat::Weekly => "weekly",
        }
    }

    pub fn parse(s: &str) -> Self {
        match s {
            "daily" => Repeat::Daily,
            "weekly" => Repeat::Weekly,
            _ => Repeat::Once,
        }
    }
}

/// A reminder to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewReminder {
    pub server: Option<ServerId>,
    pub channel: ChannelId,
    /// Who set it (the requester of the turn that created it).
    pub creator: UserId,
    /// Whom it is for; `None` for the whole channel.
    pub target: Option<UserId>,
    pub persona: PersonaId,
    pub text: String,
    pub due_at_ms: i64,
    pub repeat: Repeat,
    /// IANA time zone the repetition follows (`Europe/Paris`).
    pub time_zone: String,
    pub visibility: Visibility,
    pub locale: Locale,
    pub created_at_ms: i64,
}

/// A stored reminder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reminder {
    pub id: i64,
    pub reminder: NewReminder,
    /// How often it has fired.
    pub fired: u32,
}

/// Reminders: created by a tool, listed and cancelled by their creator or target, fired once
/// per occurrence across processes.
#[async_trait]
pub trait ReminderStore: Send + Sync {
    async fn create(&self, reminder: &NewReminder) -> Result<i64, PortError>;
    /// Active reminders `user` created or is the target of, soonest first.
    async fn for_user(&self, user: UserId) -> Result<Vec<Reminder>, PortError>;
    /// Active reminders of `user` as creator (for the per-user limit).
    async fn count_created_by(&self, user: UserId) -> Result<u32, PortError>;
    /// Cancels it if `user` is its creator or target; returns whether it was cancelled.
    async fn cancel(&self, id: i64, user: UserId) -> Result<bool, PortError>;
    /// Active reminders due at `now_ms` or before.
    async fn due(&self, now_ms: i64, limit: u32) -> Result<Vec<Reminder>, PortError>;
    /// Takes one occurrence: moves `id` from `due_at_ms` to `next_due_ms` (or ends it when
    /// `None`). True for exactly one caller, however many processes try.
    async fn take_occurrence(
        &self,
        id: i64,
        due_at_ms: i64,
        next_due_ms: Option<i64>,
    ) -> Result<bool, PortError>;
}
