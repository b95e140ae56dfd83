//! The default persona's first request in a public server channel, as the bot builds it (the
//! real context loader and the persona role's tool session, over the in-process fakes), and
//! its size in OpenAI's tokens (o200k_base, as gpt-4o counts them): for the prompt-token
//! budget test and bench (SPEC C12).

use std::sync::Arc;

use persona_bot::config::Config;
use persona_bot::domain::ports::{ChatMessage, ModelRequest, Persona};
use persona_bot::domain::scope::{MessageId, PersonaId, UserId};
use persona_bot::domain::turn::Turn;
use persona_bot::engine::attachments::AttachmentPolicy;
use persona_bot::engine::context::{ContextSettings, Trigger, load};
use persona_bot::engine::passes::{TurnDeps, persona_session};
use persona_bot::locale::Locale;
use persona_bot::testkit::{Fakes, public_scope};
use persona_bot::tools::{Registry, ToolEnv};

/// The default persona's request for "hello" with nothing in memory or history.
pub async fn default_request() -> ModelRequest {
    let config = Arc::new(Config::shipped_defaults());
    let shipped = config
        .personas
        .iter()
        .find(|p| p.id == config.turn.default_persona)
        .expect("the default persona is shipped");
    let persona = Persona {
        id: PersonaId(shipped.id.clone()),
        display_name: shipped.display_name.clone(),
        system_prompt: shipped.system_prompt.clone(),
        trigger_words: shipped.trigger_words.clone(),
        avatar_url: None,
    };
    let fakes = Fakes::default();
    let env = Arc::new(ToolEnv::new(fakes.ports(), config.clone()));
    // A turn answering a message, as a real one does (the reaction tool is offered).
    let turn = Arc::new(Turn::new(public_scope(), Locale::En).trigger(Some(MessageId(1))));
    let trigger = Trigger {
        message: MessageId(1),
        author: UserId(30),
        author_name: "alice".into(),
        content: "hello".into(),
        attachments: Vec::new(),
        mentions: Vec::new(),
        reply: false,
    };
    let settings = ContextSettings {
        history_messages: config.turn.history_messages,
        zone: chrono_tz::UTC,
        files: AttachmentPolicy::from_config(&config),
        strict_roles: true,
    };
    let context = load(&turn, &persona, &env.ports, &trigger, &settings).await;
    let deps = TurnDeps {
        model: Arc::new(persona_bot::testkit::ScriptedModel::new(Vec::new())),
        registry: Arc::new(Registry::builtin(&config)),
        env,
        files: settings.files.clone(),
        strict_roles: true,
    };
    let tools = persona_session(&deps, &turn, &context, &[]).specifications();
    context.request(&[], None, &[], tools)
}

/// Tokens of the system prompt and of the tool schemas (as sent: their JSON text).
pub fn token_counts(request: &ModelRequest) -> (usize, usize) {
    let bpe = tiktoken_rs::o200k_base().expect("o200k_base");
    let system = match request.messages.first() {
        Some(ChatMessage::System { content }) => content.clone(),
        _ => String::new(),
    };
    let tools = serde_json::Value::Array(request.tools.clone()).to_string();
    (
        bpe.encode_with_special_tokens(&system).len(),
        bpe.encode_with_special_tokens(&tools).len(),
    )
}
