//! `remember_fact`: stores a long-term fact, server-wide or about the requester, under a limit per
//! bucket. Whom a fact is about comes from the turn, never from an id in the arguments (SPEC S3).

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{ArgError, Tool, ToolContext, ToolError, ToolOutput};
use crate::config::MemoryConfig;
use crate::domain::ports::{FactAdded, NewFact};
use crate::domain::role::{Role, RoleSet};
use crate::domain::scope::Visibility;

/// Whom a fact is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Subject {
    /// The whole server (in a DM: the person you are talking to).
    #[default]
    Server,
    /// The person who wrote the message you are answering.
    Requester,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    // The fact, in one or two sentences.
    pub fact: String,
    /// `requester`: the person you answer; else the server (in a DM, the person).
    #[serde(default)]
    pub about: Subject,
}

pub struct RememberFact {
    max_chars: usize,
    per_server: u32,
    per_user: u32,
}

impl RememberFact {
    pub fn new(config: &MemoryConfig) -> Self {
        Self {
            max_chars: config.fact_max_chars,
            per_server: config.facts_per_server,
            per_user: config.facts_per_user,
        }
    }
}

#[async_trait]
impl Tool for RememberFact {
    type Args = Args;
    const NAME: &'static str = "remember_fact";
    const ROLES: RoleSet = RoleSet::of(&[Role::Persona]);
    const DESCRIPTION: &'static str = "Remember a lasting fact about this server or the person \
        you answer.";

    fn validate(&self, args: &Args) -> Result<(), ArgError> {
        ArgError::check_len("$.fact", &args.fact, 1, self.max_chars)
    }

    async fn execute(
        &self,
        ctx: &ToolContext<'_>,
        args: Args,
        _cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let scope = ctx.scope();
        // In a DM there is no server to remember things about: the fact is about the person.
        let about_requester = args.about == Subject::Requester || scope.server.is_none();
        let (about, limit) = if about_requester {
            (Some(scope.user), self.per_user)
        } else {
            (None, self.per_server)
        };
        let fact = NewFact {
            server: scope.server,
            persona: scope.persona.clone(),
            about,
            text: args.fact.trim().to_owned(),
            at_ms: ctx.now_ms(),
            // What is said where not everyone can read it stays there.
            private_to: (scope.visibility != Visibility::Public).then_some(scope.channel),
            // Learned from the turn's trigger message: "Forget this" on it finds it.
            source: ctx.turn.trigger,
        };
        match ctx.ports().memory.add_fact(fact, limit).await? {
            FactAdded::Stored { id } => Ok(ToolOutput::data(json!({
                "saved": true,
                "id": id,
                "about": if about_requester { "requester" } else { "server" },
            }))),
            FactAdded::LimitReached { limit } => Err(ToolError::business(
                "memory_full",
                format!("Memory is full ({limit} facts); nothing was saved."),
            )),
        }
    }
}
