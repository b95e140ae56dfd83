//! Personas: who the bot speaks as. Loaded from configuration and kept in the database so every
//! process of a deployment sees the same set.

use async_trait::async_trait;

use super::{Database, port_error, storable};
use crate::domain::ports::{Clock, Persona, PersonaStore, PortError, SystemClock};
use crate::domain::scope::PersonaId;

pub struct PersonaRepo {
    db: Database,
}

impl PersonaRepo {
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

type PersonaRow = (String, String, String, String, Option<String>);

fn from_row(
    (id, display_name, system_prompt, words, avatar_url): PersonaRow,
) -> Result<Persona, PortError> {
    let trigger_words = serde_json::from_str(&words).map_err(|e| PortError::Unavailable {
        what: "database",
        detail: format!("stored trigger words are not JSON: {e}"),
    })?;
    Ok(Persona {
        id: PersonaId(id),
        display_name,
        system_prompt,
        trigger_words,
        avatar_url,
    })
}

#[async_trait]
impl PersonaStore for PersonaRepo {
    async fn persona(&self, id: &PersonaId) -> Result<Option<Persona>, PortError> {
        let row: Option<PersonaRow> = sqlx::query_as(
            "SELECT id, display_name, system_prompt, trigger_words, avatar_url FROM personas \
             WHERE id = $1",
        )
        .bind(storable(&id.0))
        .fetch_optional(self.db.pool())
        .await
        .map_err(port_error)?;
        row.map(from_row).transpose()
    }

    async fn personas(&self) -> Result<Vec<Persona>, PortError> {
        let rows: Vec<PersonaRow> = sqlx::query_as(
            "SELECT id, display_name, system_prompt, trigger_words, avatar_url FROM personas \
             ORDER BY id",
        )
        .fetch_all(self.db.pool())
        .await
        .map_err(port_error)?;
        rows.into_iter().map(from_row).collect()
    }

    async fn save_persona(&self, persona: &Persona) -> Result<(), PortError> {
        let words = serde_json::to_string(&persona.trigger_words).unwrap_or_else(|_| "[]".into());
        sqlx::query(
            "INSERT INTO personas (id, display_name, system_prompt, trigger_words, avatar_url, \
             updated_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO UPDATE SET \
             display_name = excluded.display_name, system_prompt = excluded.system_prompt, \
             trigger_words = excluded.trigger_words, avatar_url = excluded.avatar_url, \
             updated_at = excluded.updated_at",
        )
        .bind(storable(&persona.id.0))
        .bind(storable(&persona.display_name))
        .bind(storable(&persona.system_prompt))
        .bind(storable(&words))
        .bind(persona.avatar_url.as_deref().map(storable))
        .bind(SystemClock.now_ms())
        .execute(self.db.pool())
        .await
        .map_err(port_error)?;
        Ok(())
    }
}
