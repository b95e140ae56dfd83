//! `recall_facts`: a read-only lookup of long-term facts about the server and the requester.
//! Available to the reviewer as well as the persona.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{ArgError, Tool, ToolContext, ToolError, ToolOutput};
use crate::domain::role::{Role, RoleSet};

fn default_limit() -> u8 {
    20
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// 1 to 50, newest first.
    #[serde(default = "default_limit")]
    pub limit: u8,
}

pub struct RecallFacts;

#[async_trait]
impl Tool for RecallFacts {
    type Args = Args;
    const NAME: &'static str = "recall_facts";
    const ROLES: RoleSet = RoleSet::of(&[Role::Persona, Role::Reviewer]);
    const DESCRIPTION: &'static str = "Look up more remembered facts about this server and \
        the person you answer.";
    const GATED: bool = false;
    const EXTERNAL_EFFECT: bool = false;

    fn validate(&self, args: &Args) -> Result<(), ArgError> {
        ArgError::check_range("$.limit", args.limit, 1, 50)
    }

    async fn execute(
        &self,
        ctx: &ToolContext<'_>,
        args: Args,
        _cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let scope = ctx.scope();
        let facts = ctx
            .ports()
            .memory
            .facts(
                scope.server,
                &scope.persona,
                Some(scope.user),
                scope.channel,
                args.limit.into(),
            )
            .await?;
        let facts: Vec<_> = facts
            .into_iter()
            .map(|f| {
                json!({
                    "id": f.id,
                    "fact": f.text,
                    "about": if f.about.is_some() { "requester" } else { "server" },
                })
            })
            .collect();
        Ok(ToolOutput::data(json!({ "facts": facts })))
    }
}
