//! `fetch_older_messages`: brings older channel history into the turn's context and restarts the
//! pass with it (a `context_restart_*` tool, SPEC T6). Which channel, and where the history
//! continues, come from the turn; the model only says how much.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{ArgError, ContextRestart, Tool, ToolContext, ToolError, ToolOutput};
use crate::config::ToolsConfig;
use crate::domain::role::{Role, RoleSet};

fn default_count() -> u8 {
    20
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    // How many older messages to read.
    #[serde(default = "default_count")]
    pub count: u8,
}

pub struct FetchOlderMessages {
    max: u8,
}

impl FetchOlderMessages {
    pub fn new(config: &ToolsConfig) -> Self {
        Self {
            max: config.older_messages_max,
        }
    }
}

#[async_trait]
impl Tool for FetchOlderMessages {
    type Args = Args;
    const NAME: &'static str = "fetch_older_messages";
    const ROLES: RoleSet = RoleSet::of(&[Role::Persona]);
    const DESCRIPTION: &'static str = "Read older messages of this channel, when the \
        conversation refers to something earlier than you can see.";
    const GATED: bool = false;
    const EXTERNAL_EFFECT: bool = false;
    const PROGRESS_KEY: Option<&'static str> = Some("progress-fetch-older-messages");

    fn validate(&self, args: &Args) -> Result<(), ArgError> {
        ArgError::check_range("$.count", args.count, 1, self.max)
    }

    async fn execute(
        &self,
        ctx: &ToolContext<'_>,
        args: Args,
        _cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let before = ctx.turn.context_oldest();
        let messages = ctx
            .ports()
            .history
            .older(
                ctx.scope().channel,
                before,
                args.count,
                &ctx.turn.persona_name,
            )
            .await?;
        if messages.is_empty() {
            return Ok(ToolOutput::data(json!({ "messages": 0 }))
                .with_message("There are no older messages in this channel."));
        }
        Ok(ToolOutput {
            data: Some(json!({ "messages": messages.len() })),
            restart: Some(ContextRestart::OlderMessages(messages)),
            ..ToolOutput::default()
        })
    }
}
