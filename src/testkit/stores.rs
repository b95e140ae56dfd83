//! The orchestrator's and the scheduler's stores, in memory: completed tool outcomes, the
//! per-channel message queue, server settings, personas and reminders.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::Ordering;

use async_trait::async_trait;

use super::lock;
use crate::domain::ports::{Delivery, Durability, OutcomeStore, PortError, StoredOutcome};
use crate::domain::scope::{ChannelId, MessageId, PersonaId, ServerId, UserId};
use crate::domain::turn::TurnId;

/// Completed tool outcomes and deliveries, by turn.
#[derive(Default)]
pub struct InMemoryOutcomes {
    outcomes: Mutex<HashMap<TurnId, Vec<StoredOutcome>>>,
    deliveries: Mutex<HashMap<TurnId, Vec<Delivery>>>,
    /// How each outcome was asked to be written, in order (tests check what is durable).
    durability: Mutex<Vec<(String, Durability)>>,
}

impl InMemoryOutcomes {
    /// Each recorded outcome's identity with the durability it was written with.
    pub fn durability(&self) -> Vec<(String, Durability)> {
        lock(&self.durability).clone()
    }
}

#[async_trait]
impl OutcomeStore for InMemoryOutcomes {
    async fn record_outcome(
        &self,
        turn: TurnId,
        outcome: &StoredOutcome,
        _at_ms: i64,
        durability: Durability,
    ) -> Result<(), PortError> {
        lock(&self.durability).push((outcome.identity.clone(), durability));
        let mut all = lock(&self.outcomes);
        let turn_outcomes = all.entry(turn).or_default();
        turn_outcomes.retain(|o| o.identity != outcome.identity);
        turn_outcomes.push(outcome.clone());
        Ok(())
    }

    async fn outcomes(&self, turn: TurnId) -> Result<Vec<StoredOutcome>, PortError> {
        Ok(lock(&self.outcomes).get(&turn).cloned().unwrap_or_default())
    }

    async fn record_delivery(
        &self,
        turn: TurnId,
        delivery: Delivery,
        _at_ms: i64,
    ) -> Result<(), PortError> {
        let mut all = lock(&self.deliveries);
        let records = all.entry(turn).or_default();
        if !records.contains(&delivery) {
            records.push(delivery);
        }
        Ok(())
    }

    async fn deliveries(&self, turn: TurnId) -> Result<Vec<Delivery>, PortError> {
        Ok(lock(&self.deliveries)
            .get(&turn)
            .cloned()
            .unwrap_or_default())
    }
}

/// A queue store in memory.
#[derive(Default)]
pub struct InMemoryQueue {
    entries: Mutex<QueueEntries>,
    next_id: std::sync::atomic::AtomicI64,
    /// Removals fail while set (a database outage).
    removals_fail: std::sync::atomic::AtomicBool,
}

#[derive(Default)]
struct QueueEntries {
    by_id: std::collections::BTreeMap<i64, crate::domain::ports::QueuedMessage>,
    /// (channel, message) to id: a redelivered message keeps one entry.
    by_message: HashMap<(ChannelId, MessageId), i64>,
}

impl InMemoryQueue {
    /// Makes removals fail (`true`) or work again.
    pub fn set_removals_fail(&self, fail: bool) {
        self.removals_fail.store(fail, Ordering::SeqCst);
    }

    pub fn entries(&self) -> Vec<crate::domain::ports::QueuedMessage> {
        lock(&self.entries).by_id.values().cloned().collect()
    }
}

#[async_trait]
impl crate::domain::ports::QueueStore for InMemoryQueue {
    async fn push(
        &self,
        message: &crate::domain::ports::NewQueuedMessage,
    ) -> Result<crate::domain::ports::Pushed, PortError> {
        use crate::domain::ports::Pushed;
        let mut entries = lock(&self.entries);
        let key = (message.channel, message.message);
        if let Some(id) = entries.by_message.get(&key) {
            return Ok(Pushed::Existing(*id));
        }
        let id = self.next_id.fetch_add(1, Ordering::SeqCst) + 1;
        entries.by_message.insert(key, id);
        entries.by_id.insert(
            id,
            crate::domain::ports::QueuedMessage {
                id,
                entry: message.clone(),
            },
        );
        Ok(Pushed::New(id))
    }

    async fn remove(&self, id: i64) -> Result<(), PortError> {
        if self.removals_fail.load(Ordering::SeqCst) {
            return Err(PortError::Unavailable {
                what: "database",
                detail: "unreachable (test)".into(),
            });
        }
        let mut entries = lock(&self.entries);
        if let Some(removed) = entries.by_id.remove(&id) {
            entries
                .by_message
                .remove(&(removed.entry.channel, removed.entry.message));
        }
        Ok(())
    }

    async fn mark_follow_up(&self, id: i64) -> Result<(), PortError> {
        if let Some(entry) = lock(&self.entries).by_id.get_mut(&id) {
            entry.entry.follow_up = true;
        }
        Ok(())
    }

    async fn update_content(&self, id: i64, content: &str) -> Result<(), PortError> {
        if let Some(entry) = lock(&self.entries).by_id.get_mut(&id) {
            content.clone_into(&mut entry.entry.content);
        }
        Ok(())
    }

    async fn pending(
        &self,
        channel: ChannelId,
    ) -> Result<Vec<crate::domain::ports::QueuedMessage>, PortError> {
        Ok(lock(&self.entries)
            .by_id
            .values()
            .filter(|e| e.entry.channel == channel)
            .cloned()
            .collect())
    }

    async fn channels_with_pending(&self) -> Result<Vec<ChannelId>, PortError> {
        let mut channels: Vec<ChannelId> = lock(&self.entries)
            .by_id
            .values()
            .map(|e| e.entry.channel)
            .collect();
        channels.sort_unstable();
        channels.dedup();
        Ok(channels)
    }

    async fn clear(&self, channel: ChannelId) -> Result<u64, PortError> {
        let mut entries = lock(&self.entries);
        let before = entries.by_id.len();
        entries.by_id.retain(|_, e| e.entry.channel != channel);
        entries.by_message.retain(|(c, _), _| *c != channel);
        Ok((before - entries.by_id.len()) as u64)
    }

    // One process holds everything: nothing to take over, nothing to renew.
    async fn channels_to_take_over(&self) -> Result<Vec<ChannelId>, PortError> {
        Ok(Vec::new())
    }

    async fn renew_claims(&self) -> Result<u64, PortError> {
        Ok(lock(&self.entries).by_id.len() as u64)
    }

    async fn release_claims(&self) -> Result<u64, PortError> {
        Ok(lock(&self.entries).by_id.len() as u64)
    }
}

/// Server settings in memory (defaults for servers never set).
#[derive(Default)]
pub struct InMemorySettings {
    settings: Mutex<HashMap<ServerId, crate::domain::ports::ServerSettings>>,
    /// Reads fail while set (a database outage).
    unavailable: std::sync::atomic::AtomicBool,
}

impl InMemorySettings {
    /// Makes reads fail (`true`) or answer again.
    pub fn set_unavailable(&self, unavailable: bool) {
        self.unavailable.store(unavailable, Ordering::SeqCst);
    }
}

#[async_trait]
impl crate::domain::ports::SettingsStore for InMemorySettings {
    async fn settings(
        &self,
        server: ServerId,
    ) -> Result<crate::domain::ports::ServerSettings, PortError> {
        if self.unavailable.load(Ordering::SeqCst) {
            return Err(PortError::Unavailable {
                what: "database",
                detail: "unreachable (test)".into(),
            });
        }
        Ok(lock(&self.settings)
            .get(&server)
            .cloned()
            .unwrap_or_default())
    }

    async fn save_settings(
        &self,
        server: ServerId,
        settings: &crate::domain::ports::ServerSettings,
    ) -> Result<(), PortError> {
        lock(&self.settings).insert(server, settings.clone());
        Ok(())
    }
}

/// Personas in memory.
#[derive(Default)]
pub struct InMemoryPersonas {
    personas: Mutex<Vec<crate::domain::ports::Persona>>,
}

#[async_trait]
impl crate::domain::ports::PersonaStore for InMemoryPersonas {
    async fn persona(
        &self,
        id: &PersonaId,
    ) -> Result<Option<crate::domain::ports::Persona>, PortError> {
        Ok(lock(&self.personas).iter().find(|p| &p.id == id).cloned())
    }

    async fn personas(&self) -> Result<Vec<crate::domain::ports::Persona>, PortError> {
        Ok(lock(&self.personas).clone())
    }

    async fn save_persona(&self, persona: &crate::domain::ports::Persona) -> Result<(), PortError> {
        let mut personas = lock(&self.personas);
        personas.retain(|p| p.id != persona.id);
        personas.push(persona.clone());
        Ok(())
    }
}

/// Reminders in memory, with the same ownership and take-once rules as the store.
#[derive(Default)]
pub struct InMemoryReminders {
    reminders: Mutex<Vec<(crate::domain::ports::Reminder, bool)>>,
}

impl InMemoryReminders {
    /// Every reminder with whether it is still active.
    pub fn all(&self) -> Vec<(crate::domain::ports::Reminder, bool)> {
        lock(&self.reminders).clone()
    }
}

#[async_trait]
impl crate::domain::ports::ReminderStore for InMemoryReminders {
    async fn create(&self, reminder: &crate::domain::ports::NewReminder) -> Result<i64, PortError> {
        let mut all = lock(&self.reminders);
        let id = i64::try_from(all.len()).unwrap_or(i64::MAX) + 1;
        all.push((
            crate::domain::ports::Reminder {
                id,
                reminder: reminder.clone(),
                fired: 0,
            },
            true,
        ));
        Ok(id)
    }

    async fn for_user(
        &self,
        user: UserId,
    ) -> Result<Vec<crate::domain::ports::Reminder>, PortError> {
        Ok(lock(&self.reminders)
            .iter()
            .filter(|(r, active)| {
                *active && (r.reminder.creator == user || r.reminder.target == Some(user))
            })
            .map(|(r, _)| r.clone())
            .collect())
    }

    async fn count_created_by(&self, user: UserId) -> Result<u32, PortError> {
        let n = lock(&self.reminders)
            .iter()
            .filter(|(r, active)| *active && r.reminder.creator == user)
            .count();
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    async fn cancel(
        &self,
        id: i64,
        user: UserId,
        managed: Option<ServerId>,
    ) -> Result<bool, PortError> {
        let mut all = lock(&self.reminders);
        let Some((r, active)) = all.iter_mut().find(|(r, _)| r.id == id) else {
            return Ok(false);
        };
        let owner = r.reminder.creator == user
            || r.reminder.target == Some(user)
            || (managed.is_some() && r.reminder.server == managed);
        if *active && owner {
            *active = false;
            return Ok(true);
        }
        Ok(false)
    }

    async fn due(
        &self,
        now_ms: i64,
        limit: u32,
    ) -> Result<Vec<crate::domain::ports::Reminder>, PortError> {
        Ok(lock(&self.reminders)
            .iter()
            .filter(|(r, active)| *active && r.reminder.due_at_ms <= now_ms)
            .take(limit as usize)
            .map(|(r, _)| r.clone())
            .collect())
    }

    async fn take_occurrence(
        &self,
        id: i64,
        due_at_ms: i64,
        next: Option<i64>,
    ) -> Result<bool, PortError> {
        let mut all = lock(&self.reminders);
        let Some((r, active)) = all.iter_mut().find(|(r, _)| r.id == id) else {
            return Ok(false);
        };
        if !*active || r.reminder.due_at_ms != due_at_ms {
            return Ok(false);
        }
        r.fired += 1;
        match next {
            Some(next) => r.reminder.due_at_ms = next,
            None => *active = false,
        }
        Ok(true)
    }
}
