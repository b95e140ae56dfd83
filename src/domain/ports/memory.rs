//! Short-term channel summaries and long-term facts.

use async_trait::async_trait;
use serde::Serialize;

use super::PortError;
use crate::domain::scope::{ChannelId, MessageId, PersonaId, ServerId, UserId};

/// A long-term fact the persona remembers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fact {
    pub id: i64,
    /// `None`: about the server; `Some`: about that user.
    pub about: Option<UserId>,
    pub text: String,
    pub at_ms: i64,
}

/// A fact to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewFact {
    /// `None` in a DM.
    pub server: Option<ServerId>,
    pub persona: PersonaId,
    pub about: Option<UserId>,
    pub text: String,
    pub at_ms: i64,
    /// The private channel it was learned in: it is shown there only. `None` when learned
    /// where everyone could read it.
    pub private_to: Option<ChannelId>,
    /// The message it was learned from ("Remember this", or the trigger of the turn that
    /// remembered it), so "Forget this" on that message finds it (SPEC A5).
    pub source: Option<MessageId>,
}

/// The result of storing a fact under a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FactAdded {
    Stored {
        id: i64,
    },
    /// The bucket (server-wide, or about this user) is full; nothing was stored.
    LimitReached {
        limit: u32,
    },
}

/// Short-term channel summaries and long-term facts.
#[async_trait]
pub trait MemoryStore: Send + Sync {
    /// Replaces the channel's working summary for the persona.
    async fn set_summary(
        &self,
        channel: ChannelId,
        persona: &PersonaId,
        summary: &str,
        at_ms: i64,
    ) -> Result<(), PortError>;
    async fn summary(
        &self,
        channel: ChannelId,
        persona: &PersonaId,
    ) -> Result<Option<String>, PortError>;
    /// Stores a fact unless its bucket already holds `limit` facts; the check and the insert
    /// are one step.
    async fn add_fact(&self, fact: NewFact, limit: u32) -> Result<FactAdded, PortError>;
    /// Facts about the server plus, when `about` is set, facts about that user, as `channel`
    /// may see them (a fact learned in another private channel stays there); newest first.
    async fn facts(
        &self,
        server: Option<ServerId>,
        persona: &PersonaId,
        about: Option<UserId>,
        channel: ChannelId,
        limit: u32,
    ) -> Result<Vec<Fact>, PortError>;
    /// Deletes fact `id` when [`Self::facts`] with the same arguments could return it (the
    /// server's, or about `about`, not private to another channel). Whether it was deleted.
    async fn forget_fact(
        &self,
        server: Option<ServerId>,
        persona: &PersonaId,
        about: Option<UserId>,
        channel: ChannelId,
        id: i64,
    ) -> Result<bool, PortError>;
    /// For `/memory`: a server's facts (every persona, every channel), newest first: those
    /// about `about`, or the server-wide ones when `None`. Facts learned in a private channel
    /// only `with_private` (a member's own; not for a moderator, who may not see that channel).
    async fn list_facts(
        &self,
        server: Option<ServerId>,
        about: Option<UserId>,
        with_private: bool,
        limit: u32,
    ) -> Result<Vec<Fact>, PortError>;
    /// For `/memory forget`: deletes fact `id` of `server` (`None`: a DM's), or every fact of
    /// the server about `about` when `id` is `None`; a fact about someone else than `about` is
    /// deleted only when `about` is `None` (a moderator). How many were deleted.
    async fn delete_facts(
        &self,
        server: Option<ServerId>,
        id: Option<i64>,
        about: Option<UserId>,
    ) -> Result<u64, PortError>;
    /// For `/forget-me`: deletes every fact about `user`, in every server and DM. How many.
    async fn forget_user(&self, user: UserId) -> Result<u64, PortError>;
    /// For "Forget this" (SPEC A5): deletes the facts of `server` (`None`: the user's own)
    /// learned from `message`: those about `user` only, or all of them when `all` (the
    /// message's author, or a moderator). How many.
    async fn forget_learned_from(
        &self,
        server: Option<ServerId>,
        message: MessageId,
        user: UserId,
        all: bool,
    ) -> Result<u64, PortError>;
}
