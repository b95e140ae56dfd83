//! [`Unexpected`]: a stand-in for a port a test must not touch; every call panics.

use async_trait::async_trait;

use super::unexpected;
use crate::domain::ports::{
    ChannelHistory, ChatSink, CustomEmoji, Delivery, Durability, Emoji, ExpressionSend, Fact,
    FactAdded, HistoryMessage, MemoryStore, NewFact, NewImagePlan, OutcomeStore, Pings, PlanStore,
    PortError, Sticker, StickerCatalog, StoredOutcome, ThoughtLog, ToolEvent, ToolEvents,
    UsageRecord, UsageStats,
};
use crate::domain::scope::{ChannelId, MessageId, PersonaId, ServerId, UserId};
use crate::domain::thought_log::Notice;
use crate::domain::turn::TurnId;

/// Panics on every call: stands in for a port a test must not touch.
pub struct Unexpected;

#[async_trait]
impl ChatSink for Unexpected {
    async fn send_text(
        &self,
        _: ChannelId,
        _: String,
        _: Option<MessageId>,
        _: &Pings,
        _: Option<&str>,
    ) -> Result<MessageId, PortError> {
        unexpected("ChatSink::send_text")
    }
    async fn typing(&self, _: ChannelId) {
        unexpected("ChatSink::typing")
    }
    async fn send_sticker(&self, _: ChannelId, _: &Sticker, _: Option<&str>) -> ExpressionSend {
        unexpected("ChatSink::send_sticker")
    }
    async fn react(&self, _: ChannelId, _: MessageId, _: &Emoji) -> ExpressionSend {
        unexpected("ChatSink::react")
    }
    async fn unreact(&self, _: ChannelId, _: MessageId, _: &Emoji) -> Result<(), PortError> {
        unexpected("ChatSink::unreact")
    }
    async fn send_progress(&self, _: ChannelId, _: String) {
        unexpected("ChatSink::send_progress")
    }
    async fn direct_message(&self, _: UserId, _: String) -> Result<MessageId, PortError> {
        unexpected("ChatSink::direct_message")
    }
}

#[async_trait]
impl ThoughtLog for Unexpected {
    async fn post(&self, _: ServerId, _: Notice) {
        unexpected("ThoughtLog::post")
    }
}

#[async_trait]
impl UsageStats for Unexpected {
    async fn record(&self, _: UsageRecord) {
        unexpected("UsageStats::record")
    }
}

#[async_trait]
impl ToolEvents for Unexpected {
    async fn record(&self, _: ToolEvent) {
        unexpected("ToolEvents::record")
    }
}

#[async_trait]
impl MemoryStore for Unexpected {
    async fn set_summary(
        &self,
        _: ChannelId,
        _: &PersonaId,
        _: &str,
        _: i64,
    ) -> Result<(), PortError> {
        unexpected("MemoryStore::set_summary")
    }
    async fn summary(&self, _: ChannelId, _: &PersonaId) -> Result<Option<String>, PortError> {
        unexpected("MemoryStore::summary")
    }
    async fn add_fact(&self, _: NewFact, _: u32) -> Result<FactAdded, PortError> {
        unexpected("MemoryStore::add_fact")
    }
    async fn facts(
        &self,
        _: Option<ServerId>,
        _: &PersonaId,
        _: Option<UserId>,
        _: ChannelId,
        _: u32,
    ) -> Result<Vec<Fact>, PortError> {
        unexpected("MemoryStore::facts")
    }
    async fn forget_fact(
        &self,
        _: Option<ServerId>,
        _: &PersonaId,
        _: Option<UserId>,
        _: ChannelId,
        _: i64,
    ) -> Result<bool, PortError> {
        unexpected("MemoryStore::forget_fact")
    }
    async fn list_facts(
        &self,
        _: Option<ServerId>,
        _: Option<UserId>,
        _: bool,
        _: u32,
    ) -> Result<Vec<Fact>, PortError> {
        unexpected("MemoryStore::list_facts")
    }
    async fn delete_facts(
        &self,
        _: Option<ServerId>,
        _: Option<i64>,
        _: Option<UserId>,
    ) -> Result<u64, PortError> {
        unexpected("MemoryStore::delete_facts")
    }
    async fn forget_user(&self, _: UserId) -> Result<u64, PortError> {
        unexpected("MemoryStore::forget_user")
    }
    async fn forget_learned_from(
        &self,
        _: Option<ServerId>,
        _: MessageId,
        _: UserId,
        _: bool,
    ) -> Result<u64, PortError> {
        unexpected("MemoryStore::forget_learned_from")
    }
}

#[async_trait]
impl PlanStore for Unexpected {
    async fn record_plan(&self, _: NewImagePlan) -> Result<(), PortError> {
        unexpected("PlanStore::record_plan")
    }
    async fn plan(
        &self,
        _: &crate::domain::ports::PlanId,
    ) -> Result<Option<NewImagePlan>, PortError> {
        unexpected("PlanStore::plan")
    }
    async fn results_since(
        &self,
        _: ChannelId,
        _: i64,
        _: u32,
    ) -> Result<Vec<crate::domain::ports::PlanResult>, PortError> {
        unexpected("PlanStore::results_since")
    }
}

#[async_trait]
impl StickerCatalog for Unexpected {
    async fn stickers(&self, _: ServerId) -> Result<Vec<Sticker>, PortError> {
        unexpected("StickerCatalog::stickers")
    }
    async fn emojis(&self, _: ServerId) -> Result<Vec<CustomEmoji>, PortError> {
        unexpected("StickerCatalog::emojis")
    }
}

#[async_trait]
impl ChannelHistory for Unexpected {
    async fn older(
        &self,
        _: ChannelId,
        _: Option<MessageId>,
        _: u8,
        _: &str,
    ) -> Result<Vec<HistoryMessage>, PortError> {
        unexpected("ChannelHistory::older")
    }
}

#[async_trait]
impl OutcomeStore for Unexpected {
    async fn record_outcome(
        &self,
        _: TurnId,
        _: &StoredOutcome,
        _: i64,
        _: Durability,
    ) -> Result<(), PortError> {
        unexpected("OutcomeStore::record_outcome")
    }
    async fn record_delivery(&self, _: TurnId, _: Delivery, _: i64) -> Result<(), PortError> {
        unexpected("OutcomeStore::record_delivery")
    }
    async fn deliveries(&self, _: TurnId) -> Result<Vec<Delivery>, PortError> {
        unexpected("OutcomeStore::deliveries")
    }
    async fn outcomes(&self, _: TurnId) -> Result<Vec<StoredOutcome>, PortError> {
        unexpected("OutcomeStore::outcomes")
    }
}
