//! Which persona speaks where (SPEC A1), decided in one place: a server's own persona, else the
//! deployment's default; a queued turn's persona by its id, from the store, else the configured
//! one of that id, else the default. Commands, admission, `/status` and the turn all ask here.

use std::sync::Arc;

use crate::config::Config;
use crate::domain::ports::{Persona, PersonaStore, PortError, ServerSettings, SettingsStore};
use crate::domain::scope::{PersonaId, ServerId};

/// The personas of a deployment and the stores that hold servers' choices.
pub struct Personas {
    /// The configured personas, as the configuration has them.
    configured: Vec<Persona>,
    /// The one that answers where a server has none of its own.
    default: Persona,
    store: Arc<dyn PersonaStore>,
    settings: Arc<dyn SettingsStore>,
}

impl Personas {
    /// The configuration's personas; its `turn.default_persona` is the default (the first one
    /// when the configuration names none it has, which its validation refuses).
    pub fn new(
        config: &Config,
        store: Arc<dyn PersonaStore>,
        settings: Arc<dyn SettingsStore>,
    ) -> Self {
        let configured: Vec<Persona> = config.personas.iter().map(Persona::from).collect();
        let default = configured
            .iter()
            .find(|p| p.id.0 == config.turn.default_persona)
            .or(configured.first())
            .cloned()
            .unwrap_or_else(|| unnamed(PersonaId(config.turn.default_persona.clone())));
        Self {
            configured,
            default,
            store,
            settings,
        }
    }

    /// Saves the configured personas in the store, where `/persona` lists them as templates
    /// and queued turns find them by id.
    pub async fn save_configured(&self) -> Result<(), PortError> {
        for persona in &self.configured {
            self.store.save_persona(persona).await?;
        }
        Ok(())
    }

    /// The deployment's default persona.
    pub fn default_persona(&self) -> &Persona {
        &self.default
    }

    /// The persona a server speaks as: its own copy, else the default.
    pub fn of_server<'a>(&'a self, settings: &'a ServerSettings) -> &'a Persona {
        settings.persona.as_ref().unwrap_or(&self.default)
    }

    /// The name of the persona answering in `server` (also when its settings cannot be read:
    /// a name is no access rule).
    pub async fn name_in(&self, server: Option<ServerId>) -> String {
        let settings = match server {
            Some(server) => self.settings.settings(server).await.ok(),
            None => None,
        };
        match settings {
            Some(settings) => self.of_server(&settings).display_name.clone(),
            None => self.default.display_name.clone(),
        }
    }

    /// The persona a turn speaks as: the server's own as it is now (an edit made since the
    /// message came reaches it too), else the queued one by id.
    pub async fn for_turn(&self, settings: &ServerSettings, queued: &PersonaId) -> Persona {
        match &settings.persona {
            Some(own) => own.clone(),
            None => self.by_id(queued).await,
        }
    }

    /// The persona by id from the store, else the configured one of that id, else the default
    /// under that id (the turn's scope and records name it).
    pub async fn by_id(&self, id: &PersonaId) -> Persona {
        match self.store.persona(id).await {
            Ok(Some(persona)) => return persona,
            Ok(None) => tracing::warn!(persona = %id, "unknown persona; using the configured one"),
            Err(error) => tracing::warn!(persona = %id, %error, "personas unavailable"),
        }
        let configured = self.configured.iter().find(|p| &p.id == id);
        Persona {
            id: id.clone(),
            ..configured.unwrap_or(&self.default).clone()
        }
    }

    /// Every persona the store holds (the configured ones and those servers saved).
    pub async fn stored(&self) -> Result<Vec<Persona>, PortError> {
        self.store.personas().await
    }
}

/// A persona with only a name: when the configuration has none at all.
fn unnamed(id: PersonaId) -> Persona {
    Persona {
        display_name: id.0.clone(),
        id,
        system_prompt: String::new(),
        trigger_words: Vec::new(),
        avatar_url: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{InMemoryPersonas, InMemorySettings};

    fn personas() -> Personas {
        Personas::new(
            &Config::shipped_defaults(),
            Arc::new(InMemoryPersonas::default()),
            Arc::new(InMemorySettings::default()),
        )
    }

    // SPEC A1: a server with its own persona speaks as it; any other speaks as the default.
    #[tokio::test]
    async fn a_server_speaks_as_its_own_persona_else_the_default() {
        let personas = personas();
        let default = personas.default_persona().clone();
        let own = Persona {
            display_name: "Own".into(),
            ..default.clone()
        };
        let settings = ServerSettings {
            persona: Some(own.clone()),
            ..ServerSettings::default()
        };
        assert_eq!(personas.of_server(&settings), &own);
        assert_eq!(personas.of_server(&ServerSettings::default()), &default);
        assert_eq!(personas.for_turn(&settings, &default.id).await, own);
        personas
            .settings
            .save_settings(ServerId(7), &settings)
            .await
            .unwrap();
        assert_eq!(personas.name_in(Some(ServerId(7))).await, "Own");
        assert_eq!(personas.name_in(None).await, default.display_name);
    }

    // A queued turn whose persona the store lost still speaks, under the id it was queued with.
    #[tokio::test]
    async fn an_unknown_id_speaks_as_the_default_under_that_id() {
        let personas = personas();
        let gone = PersonaId("gone".into());
        let persona = personas.by_id(&gone).await;
        assert_eq!(persona.id, gone);
        assert_eq!(
            persona.system_prompt,
            personas.default_persona().system_prompt
        );
        personas.save_configured().await.unwrap();
        let default_id = personas.default_persona().id.clone();
        assert_eq!(
            &personas.by_id(&default_id).await,
            personas.default_persona()
        );
    }
}
