//! Reminders: created by a tool, listed and cancelled by their people, due ones become turns.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::PortError;
use crate::domain::scope::{ChannelId, PersonaId, ServerId, UserId, Visibility};
use crate::locale::Locale;

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
    /// Cancels it if `user` is its creator or target, or it is set in `managed` (a server where
    /// the caller has Manage Server); returns whether it was cancelled.
    async fn cancel(
        &self,
        id: i64,
        user: UserId,
        managed: Option<ServerId>,
    ) -> Result<bool, PortError>;
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
