//! A whole bot core for turn tests: the orchestrator over a harness's registry and ports, with
//! in-memory stores, and a model of the test's choosing (scripted, or the real provider against
//! the fake OpenAI server).

use std::sync::Arc;
use std::time::Duration;

use persona_bot::config::Config;
use persona_bot::domain::personas::Personas;
use persona_bot::domain::ports::{ChatModel, NewQueuedMessage};
use persona_bot::domain::scope::{ChannelId, MessageId, PersonaId, ServerId, UserId, Visibility};
use persona_bot::engine::attachments::AttachmentPolicy;
use persona_bot::engine::orchestrator::{Orchestrator, OrchestratorDeps, TurnFinished};
use persona_bot::engine::passes::TurnDeps;
use persona_bot::locale::Locale;
use persona_bot::stage::deliberate::KeywordPacks;
use persona_bot::testkit::{Fakes, InMemoryPersonas, InMemoryQueue, InMemorySettings};
use tokio::sync::broadcast;

use super::harness::{Behaviour, Harness};

pub const SERVER: ServerId = ServerId(10);
pub const CHANNEL: ChannelId = ChannelId(20);
pub const ALICE: UserId = UserId(30);
pub const BOB: UserId = UserId(31);

pub struct Bot<M: ChatModel + 'static> {
    pub h: Harness,
    pub model: Arc<M>,
    pub queue: Arc<InMemoryQueue>,
    pub orchestrator: Orchestrator,
    pub finished: broadcast::Receiver<TurnFinished>,
}

pub fn message(id: u64, author: UserId, content: &str) -> NewQueuedMessage {
    message_in(CHANNEL, id, author, content)
}

pub fn message_in(channel: ChannelId, id: u64, author: UserId, content: &str) -> NewQueuedMessage {
    NewQueuedMessage {
        server: Some(SERVER),
        channel,
        message: MessageId(id),
        author,
        author_name: if author == ALICE {
            "alice".into()
        } else {
            "bob".into()
        },
        content: content.into(),
        follow_up: false,
        enqueued_at_ms: 0,
        persona: PersonaId("aria".into()),
        visibility: Visibility::Public,
        locale: Locale::En,
        quiet: false,
        attachments: Vec::new(),
        mentions: Vec::new(),
    }
}

impl<M: ChatModel + 'static> Bot<M> {
    pub fn new(model: M) -> Self {
        Self::build(
            model,
            Behaviour::Succeed {
                data: None,
                message: None,
            },
            |_| {},
            Fakes::default(),
        )
    }

    pub fn build(model: M, probe: Behaviour, edit: impl FnOnce(&mut Config), fakes: Fakes) -> Self {
        let h = Harness::build_with_config(fakes, probe, |r| r, edit);
        let queue = Arc::new(InMemoryQueue::default());
        Self::with_queue(h, model, queue)
    }

    pub fn with_queue(h: Harness, model: M, queue: Arc<InMemoryQueue>) -> Self {
        Self::with_settings(h, model, queue, Arc::new(InMemorySettings::default()))
    }

    /// With a settings store the test controls (drafting, access lists).
    pub fn with_settings(
        h: Harness,
        model: M,
        queue: Arc<InMemoryQueue>,
        settings: Arc<InMemorySettings>,
    ) -> Self {
        let model = Arc::new(model);
        let orchestrator = Orchestrator::new(OrchestratorDeps {
            turn: TurnDeps {
                model: model.clone(),
                registry: h.registry.clone(),
                env: h.env.clone(),
                files: AttachmentPolicy::from_config(&h.config),
                strict_roles: h.config.provider.strict_roles,
            },
            queue: queue.clone(),
            settings: settings.clone(),
            personas: Arc::new(Personas::new(
                &h.config,
                Arc::new(InMemoryPersonas::default()),
                settings,
            )),
            packs: KeywordPacks::from_config(&h.config.deliberate),
            config: h.config.clone(),
        });
        let finished = orchestrator.subscribe();
        Self {
            h,
            model,
            queue,
            orchestrator,
            finished,
        }
    }

    pub async fn say(&self, m: NewQueuedMessage) {
        self.orchestrator.submit(m).await;
    }

    pub async fn next(&mut self) -> TurnFinished {
        tokio::time::timeout(Duration::from_secs(3600), self.finished.recv())
            .await
            .expect("a turn finished within an hour of (paused) time")
            .expect("finished channel open")
    }

    pub fn transcript(&self) -> String {
        self.h.fakes.sink.transcript(CHANNEL)
    }
}
