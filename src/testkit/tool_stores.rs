//! What the built-in tools read and write, in memory: memories (summaries and facts), image
//! plans, a fixed sticker list and a fixed channel history.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;

use super::lock;
use crate::domain::ports::{
    AttachmentFetcher, ChannelHistory, CustomEmoji, Fact, FactAdded, Fetched, HistoryMessage,
    MemoryStore, NewFact, NewImagePlan, PlanStore, PortError, Sticker, StickerCatalog,
};
use crate::domain::scope::{ChannelId, MessageId, PersonaId, ServerId, UserId};

/// Memories in a map and a list. `fail_with` makes every call fail (a database outage).
#[derive(Default)]
pub struct InMemoryMemory {
    summaries: Mutex<HashMap<(ChannelId, PersonaId), String>>,
    facts: Mutex<Vec<(i64, NewFact)>>,
    failing: AtomicBool,
}

impl InMemoryMemory {
    pub fn fail_with_outage(&self) {
        self.failing.store(true, Ordering::Relaxed);
    }

    fn check(&self) -> Result<(), PortError> {
        if self.failing.load(Ordering::Relaxed) {
            Err(PortError::Unavailable {
                what: "memory store",
                detail: "connection refused (test outage)".into(),
            })
        } else {
            Ok(())
        }
    }

    pub fn summary_of(&self, channel: ChannelId, persona: &PersonaId) -> Option<String> {
        lock(&self.summaries)
            .get(&(channel, persona.clone()))
            .cloned()
    }

    pub fn all_facts(&self) -> Vec<NewFact> {
        lock(&self.facts).iter().map(|(_, f)| f.clone()).collect()
    }
}

#[async_trait]
impl MemoryStore for InMemoryMemory {
    async fn set_summary(
        &self,
        channel: ChannelId,
        persona: &PersonaId,
        summary: &str,
        _at_ms: i64,
    ) -> Result<(), PortError> {
        self.check()?;
        lock(&self.summaries).insert((channel, persona.clone()), summary.to_owned());
        Ok(())
    }

    async fn summary(
        &self,
        channel: ChannelId,
        persona: &PersonaId,
    ) -> Result<Option<String>, PortError> {
        self.check()?;
        Ok(self.summary_of(channel, persona))
    }

    async fn add_fact(&self, fact: NewFact, limit: u32) -> Result<FactAdded, PortError> {
        self.check()?;
        let mut facts = lock(&self.facts);
        let in_bucket = facts
            .iter()
            .filter(|(_, f)| {
                f.server == fact.server && f.persona == fact.persona && f.about == fact.about
            })
            .count();
        if in_bucket >= limit as usize {
            return Ok(FactAdded::LimitReached { limit });
        }
        let id = facts.iter().map(|(id, _)| *id).max().unwrap_or(0) + 1;
        facts.push((id, fact));
        Ok(FactAdded::Stored { id })
    }

    async fn facts(
        &self,
        server: Option<ServerId>,
        persona: &PersonaId,
        about: Option<UserId>,
        channel: ChannelId,
        limit: u32,
    ) -> Result<Vec<Fact>, PortError> {
        self.check()?;
        let facts = lock(&self.facts);
        Ok(facts
            .iter()
            .rev()
            .filter(|(_, f)| f.server == server && &f.persona == persona)
            .filter(|(_, f)| f.about.is_none() || f.about == about)
            .filter(|(_, f)| f.private_to.is_none_or(|c| c == channel))
            .take(limit as usize)
            .map(stored_fact)
            .collect())
    }

    async fn forget_fact(
        &self,
        server: Option<ServerId>,
        persona: &PersonaId,
        about: Option<UserId>,
        channel: ChannelId,
        id: i64,
    ) -> Result<bool, PortError> {
        self.check()?;
        let mut facts = lock(&self.facts);
        let before = facts.len();
        facts.retain(|(fact_id, f)| {
            let visible = f.server == server
                && &f.persona == persona
                && (f.about.is_none() || f.about == about)
                && f.private_to.is_none_or(|c| c == channel);
            !(*fact_id == id && visible)
        });
        Ok(facts.len() < before)
    }

    async fn list_facts(
        &self,
        server: Option<ServerId>,
        about: Option<UserId>,
        with_private: bool,
        limit: u32,
    ) -> Result<Vec<Fact>, PortError> {
        self.check()?;
        Ok(lock(&self.facts)
            .iter()
            .rev()
            .filter(|(_, f)| f.server == server && f.about == about)
            .filter(|(_, f)| with_private || f.private_to.is_none())
            .take(limit as usize)
            .map(stored_fact)
            .collect())
    }

    async fn delete_facts(
        &self,
        server: Option<ServerId>,
        id: Option<i64>,
        about: Option<UserId>,
    ) -> Result<u64, PortError> {
        self.check()?;
        let mut facts = lock(&self.facts);
        let before = facts.len();
        facts.retain(|(fact_id, f)| {
            let hit = f.server == server
                && id.is_none_or(|id| id == *fact_id)
                && about.is_none_or(|u| f.about == Some(u));
            !hit
        });
        Ok((before - facts.len()) as u64)
    }

    async fn forget_user(&self, user: UserId) -> Result<u64, PortError> {
        self.check()?;
        let mut facts = lock(&self.facts);
        let before = facts.len();
        facts.retain(|(_, f)| f.about != Some(user));
        Ok((before - facts.len()) as u64)
    }

    async fn forget_learned_from(
        &self,
        server: Option<ServerId>,
        message: MessageId,
        user: UserId,
        all: bool,
    ) -> Result<u64, PortError> {
        self.check()?;
        let mut facts = lock(&self.facts);
        let before = facts.len();
        facts.retain(|(_, f)| {
            let learned = f.server == server && f.source == Some(message);
            !(learned && (all || f.about == Some(user)))
        });
        Ok((before - facts.len()) as u64)
    }
}

/// A stored fact as the port returns it.
fn stored_fact((id, f): &(i64, NewFact)) -> Fact {
    Fact {
        id: *id,
        about: f.about,
        text: f.text.clone(),
        at_ms: f.at_ms,
    }
}

/// A fixed sticker list and emoji list for every server.
#[derive(Default)]
pub struct FixedStickers(pub Vec<Sticker>, pub Vec<CustomEmoji>);

#[async_trait]
impl StickerCatalog for FixedStickers {
    async fn stickers(&self, _server: ServerId) -> Result<Vec<Sticker>, PortError> {
        Ok(self.0.clone())
    }
    async fn emojis(&self, _server: ServerId) -> Result<Vec<CustomEmoji>, PortError> {
        Ok(self.1.clone())
    }
}

/// Records image plans.
#[derive(Default)]
pub struct InMemoryPlans {
    plans: Mutex<Vec<NewImagePlan>>,
}

impl InMemoryPlans {
    pub fn plans(&self) -> Vec<NewImagePlan> {
        lock(&self.plans).clone()
    }
}

#[async_trait]
impl PlanStore for InMemoryPlans {
    async fn record_plan(&self, plan: NewImagePlan) -> Result<(), PortError> {
        lock(&self.plans).push(plan);
        Ok(())
    }

    async fn plan(
        &self,
        id: &crate::domain::ports::PlanId,
    ) -> Result<Option<NewImagePlan>, PortError> {
        Ok(lock(&self.plans).iter().find(|p| &p.id == id).cloned())
    }

    /// Plans here have no tasks: nothing is ever finished.
    async fn results_since(
        &self,
        _: ChannelId,
        _: i64,
        _: u32,
    ) -> Result<Vec<crate::domain::ports::PlanResult>, PortError> {
        Ok(Vec::new())
    }
}

/// A channel's history, newest first; `older` pages through it like Discord does.
#[derive(Default)]
pub struct FixedHistory(pub Vec<HistoryMessage>);

#[async_trait]
impl ChannelHistory for FixedHistory {
    async fn older(
        &self,
        _channel: ChannelId,
        before: Option<MessageId>,
        limit: u8,
        _bot_name: &str,
    ) -> Result<Vec<HistoryMessage>, PortError> {
        Ok(self
            .0
            .iter()
            .filter(|m| before.is_none_or(|b| m.id < b))
            .take(limit.into())
            .cloned()
            .collect())
    }
}

/// Files by URL; any other URL is unavailable. Records every URL asked for.
#[derive(Default)]
pub struct FixedFiles {
    files: Mutex<HashMap<String, Vec<u8>>>,
    asked: Mutex<Vec<String>>,
}

impl FixedFiles {
    pub fn put(&self, url: &str, bytes: Vec<u8>) {
        lock(&self.files).insert(url.to_owned(), bytes);
    }

    /// Every URL asked for, in order.
    pub fn asked(&self) -> Vec<String> {
        lock(&self.asked).clone()
    }
}

#[async_trait]
impl AttachmentFetcher for FixedFiles {
    async fn fetch(&self, url: &str, max_bytes: u64) -> Result<Fetched, PortError> {
        lock(&self.asked).push(url.to_owned());
        let bytes = lock(&self.files)
            .get(url)
            .cloned()
            .ok_or(PortError::Unavailable {
                what: "attachment",
                detail: "no such file".into(),
            })?;
        let max = usize::try_from(max_bytes).unwrap_or(usize::MAX);
        Ok(Fetched {
            complete: bytes.len() <= max,
            bytes: bytes.into_iter().take(max).collect(),
        })
    }
}

/// Approval requests in memory (SPEC E3): opened once, decided once; with
/// [`InMemoryApprovals::approve_all`], every request opens approved by its requester.
#[derive(Default)]
pub struct InMemoryApprovals {
    approve_all: AtomicBool,
    pub stored: std::sync::Mutex<
        std::collections::HashMap<
            crate::domain::ports::ApprovalId,
            crate::domain::ports::StoredApproval,
        >,
    >,
}

impl InMemoryApprovals {
    /// Every request from now on opens approved (a test of what runs after approval).
    pub fn approve_all(&self) {
        self.approve_all.store(true, Ordering::Relaxed);
    }
}

#[async_trait::async_trait]
impl crate::domain::ports::ApprovalStore for InMemoryApprovals {
    async fn open(
        &self,
        request: &crate::domain::ports::ApprovalRequest,
        _at_ms: i64,
    ) -> Result<crate::domain::ports::StoredApproval, crate::domain::ports::PortError> {
        let decision = if self.approve_all.load(Ordering::Relaxed) {
            crate::domain::ports::Decision::Approved {
                by: request.requester,
            }
        } else {
            crate::domain::ports::Decision::Pending
        };
        let mut stored = self.stored.lock().unwrap_or_else(|e| e.into_inner());
        Ok(stored
            .entry(request.id)
            .or_insert_with(|| crate::domain::ports::StoredApproval {
                request: request.clone(),
                decision,
                card: None,
            })
            .clone())
    }

    async fn set_card(
        &self,
        id: crate::domain::ports::ApprovalId,
        card: crate::domain::scope::MessageId,
    ) -> Result<(), crate::domain::ports::PortError> {
        let mut stored = self.stored.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = stored.get_mut(&id) {
            s.card = Some(card);
        }
        Ok(())
    }

    async fn decide(
        &self,
        id: crate::domain::ports::ApprovalId,
        decision: crate::domain::ports::Decision,
        _at_ms: i64,
    ) -> Result<bool, crate::domain::ports::PortError> {
        let mut stored = self.stored.lock().unwrap_or_else(|e| e.into_inner());
        Ok(match stored.get_mut(&id) {
            Some(s) if s.decision == crate::domain::ports::Decision::Pending => {
                s.decision = decision;
                true
            }
            _ => false,
        })
    }

    async fn get(
        &self,
        id: crate::domain::ports::ApprovalId,
    ) -> Result<Option<crate::domain::ports::StoredApproval>, crate::domain::ports::PortError> {
        let stored = self.stored.lock().unwrap_or_else(|e| e.into_inner());
        Ok(stored.get(&id).cloned())
    }
}
