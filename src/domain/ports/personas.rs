//! Personas the bot can speak as.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::PortError;
use crate::domain::scope::PersonaId;

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
