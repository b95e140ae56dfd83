//! `update_short_term_memory`: replaces the channel's working summary for the persona. One
//! successful update per turn: the stage then hides the tool and refuses further calls (SPEC T12).

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{ArgError, Tool, ToolContext, ToolError, ToolOutput};
use crate::config::MemoryConfig;
use crate::domain::role::{Role, RoleSet};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    // The new working summary of this conversation; it replaces the previous one.
    pub summary: String,
}

pub struct UpdateShortTermMemory {
    max_chars: usize,
}

impl UpdateShortTermMemory {
    pub fn new(config: &MemoryConfig) -> Self {
        Self {
            max_chars: config.summary_max_chars,
        }
    }
}

#[async_trait]
impl Tool for UpdateShortTermMemory {
    type Args = Args;
    const NAME: &'static str = "update_short_term_memory";
    const ROLES: RoleSet = RoleSet::of(&[Role::Persona]);
    const DESCRIPTION: &'static str = "Replace your summary of this channel's conversation \
        (what is going on, open questions). Once per reply.";
    const GATED: bool = false;

    fn validate(&self, args: &Args) -> Result<(), ArgError> {
        ArgError::check_len("$.summary", &args.summary, 1, self.max_chars)
    }

    async fn execute(
        &self,
        ctx: &ToolContext<'_>,
        args: Args,
        _cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let scope = ctx.scope();
        let summary = args.summary.trim();
        ctx.ports()
            .memory
            .set_summary(scope.channel, &scope.persona, summary, ctx.now_ms())
            .await?;
        Ok(ToolOutput::data(
            json!({ "saved": true, "chars": summary.chars().count() }),
        ))
    }
}
