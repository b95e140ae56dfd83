//! In-process fakes of the core's ports, for unit tests and benchmarks, never used by the
//! running bot: only the `testkit` feature (which tests and benches turn on) builds them.
//! Fakes record what they were asked; a call nobody scripted fails loudly: a sticker send
//! without a scripted answer panics, and [`Unexpected`] panics on any call.
//!
//! Here: the test scopes and the [`Fakes`] bundle. Beside: `unexpected` (panics on every call),
//! `recording` (the ports a turn reports through, and the clock), `tool_stores` (what the tools
//! read and write), `stores` (the orchestrator's and the scheduler's stores) and `scripted` (the
//! model and the reviewer). Every fake is re-exported here, so paths stay `testkit::Name`.

mod recording;
mod scripted;
mod stores;
mod tool_stores;
mod unexpected;

use std::sync::{Arc, Mutex, MutexGuard};

pub use recording::{
    Discard, ManualClock, RecordingEvents, RecordingSink, RecordingStats, RecordingThoughtLog,
    SentText,
};
pub use scripted::{ScriptedModel, ScriptedPass, ScriptedReviewer, Step};
pub use stores::{
    InMemoryOutcomes, InMemoryPersonas, InMemoryQueue, InMemoryReminders, InMemorySettings,
};
pub use tool_stores::{
    FixedFiles, FixedHistory, FixedStickers, InMemoryApprovals, InMemoryMemory, InMemoryPlans,
};
pub use unexpected::Unexpected;

use crate::domain::ports::{HistoryMessage, Ports, Sticker};
use crate::domain::scope::{ChannelId, PersonaId, Scope, ServerId, UserId, Visibility};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn unexpected(call: &str) -> ! {
    panic!("unexpected call to {call}")
}

/// A public server channel scope: server 10, channel 20, user 30, persona "aria".
pub fn public_scope() -> Scope {
    Scope {
        server: Some(ServerId(10)),
        channel: ChannelId(20),
        user: UserId(30),
        persona: PersonaId("aria".into()),
        visibility: Visibility::Public,
    }
}

/// The same server, in a channel @everyone cannot view.
pub fn private_scope() -> Scope {
    Scope {
        visibility: Visibility::Private,
        ..public_scope()
    }
}

/// A DM with user 30.
pub fn dm_scope() -> Scope {
    Scope {
        server: None,
        channel: ChannelId(21),
        visibility: Visibility::Dm,
        ..public_scope()
    }
}

/// One of each recording fake, with handles kept for assertions.
#[derive(Default, Clone)]
pub struct Fakes {
    pub sink: Arc<RecordingSink>,
    pub thought_log: Arc<RecordingThoughtLog>,
    pub stats: Arc<RecordingStats>,
    pub events: Arc<RecordingEvents>,
    pub clock: Arc<ManualClock>,
    pub memory: Arc<InMemoryMemory>,
    pub stickers: Arc<FixedStickers>,
    pub plans: Arc<InMemoryPlans>,
    pub history: Arc<FixedHistory>,
    pub outcomes: Arc<InMemoryOutcomes>,
    pub reminders: Arc<InMemoryReminders>,
    pub files: Arc<FixedFiles>,
    pub approvals: Arc<tool_stores::InMemoryApprovals>,
}

impl Fakes {
    /// Ports that drop what they are told (see [`Discard`]), with in-memory stores.
    pub fn discarding(&self) -> Ports {
        Ports {
            sink: Arc::new(Discard),
            thought_log: Arc::new(Discard),
            stats: Arc::new(Discard),
            events: Arc::new(Discard),
            ..self.ports()
        }
    }

    pub fn with_stickers(mut self, stickers: Vec<Sticker>) -> Self {
        self.stickers = Arc::new(FixedStickers(stickers, self.stickers.1.clone()));
        self
    }

    /// The server's own emoji (SPEC E1).
    pub fn with_emojis(mut self, emojis: Vec<crate::domain::ports::CustomEmoji>) -> Self {
        self.stickers = Arc::new(FixedStickers(self.stickers.0.clone(), emojis));
        self
    }

    pub fn with_history(mut self, history: Vec<HistoryMessage>) -> Self {
        self.history = Arc::new(FixedHistory(history));
        self
    }

    /// The chat-facing fakes, to combine with real storage.
    pub fn chat_ports(&self) -> crate::domain::ports::ChatPorts {
        crate::domain::ports::ChatPorts {
            sink: self.sink.clone(),
            thought_log: self.thought_log.clone(),
            stickers: self.stickers.clone(),
            history: self.history.clone(),
            clock: self.clock.clone(),
            attachments: self.files.clone(),
        }
    }

    pub fn ports(&self) -> Ports {
        Ports {
            sink: self.sink.clone(),
            thought_log: self.thought_log.clone(),
            stats: self.stats.clone(),
            events: self.events.clone(),
            clock: self.clock.clone(),
            memory: self.memory.clone(),
            stickers: self.stickers.clone(),
            plans: self.plans.clone(),
            history: self.history.clone(),
            outcomes: self.outcomes.clone(),
            reminders: self.reminders.clone(),
            attachments: self.files.clone(),
            approvals: self.approvals.clone(),
        }
    }
}
