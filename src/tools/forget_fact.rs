//! `forget_fact`: deletes a remembered fact, by the number the prompt and `recall_facts` show.
//! Only a fact this turn could see: the server's (as this channel sees them) or one about the
//! requester, never one about someone else, whatever the number (SPEC S3).

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{ArgError, Tool, ToolContext, ToolError, ToolOutput};
use crate::domain::role::{Role, RoleSet};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    // The fact's number (#12 is 12).
    pub id: i64,
}

pub struct ForgetFact;

/// How many of the facts this turn can see are looked through for the one to forget.
const FACTS_LOOKED_AT: u32 = 500;

#[async_trait]
impl Tool for ForgetFact {
    type Args = Args;
    const NAME: &'static str = "forget_fact";
    const ROLES: RoleSet = RoleSet::of(&[Role::Persona]);
    const DESCRIPTION: &'static str =
        "Forget a remembered fact (by its #number) that is wrong or someone asks you to forget.";

    fn validate(&self, args: &Args) -> Result<(), ArgError> {
        ArgError::check_range("$.id", args.id, 1, i64::MAX)
    }

    /// A fact about the whole server is everyone's: someone approves forgetting it first (SPEC
    /// E3). A fact about the requester is theirs to forget.
    async fn approval(
        &self,
        ctx: &ToolContext<'_>,
        args: &Args,
    ) -> Result<Option<String>, ToolError> {
        let scope = ctx.scope();
        if scope.server.is_none() {
            return Ok(None);
        }
        let visible = ctx
            .ports()
            .memory
            .facts(
                scope.server,
                &scope.persona,
                Some(scope.user),
                scope.channel,
                FACTS_LOOKED_AT,
            )
            .await?;
        let Some(fact) = visible
            .into_iter()
            .find(|f| f.id == args.id && f.about.is_none())
        else {
            return Ok(None);
        };
        Ok(Some(crate::locale::text_with(
            ctx.turn.locale,
            "approval-what-forget-server-fact",
            &[("id", fact.id.to_string()), ("text", fact.text)],
        )))
    }

    async fn execute(
        &self,
        ctx: &ToolContext<'_>,
        args: Args,
        _cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let scope = ctx.scope();
        let forgotten = ctx
            .ports()
            .memory
            .forget_fact(
                scope.server,
                &scope.persona,
                Some(scope.user),
                scope.channel,
                args.id,
            )
            .await?;
        if !forgotten {
            return Err(ToolError::business(
                "no_such_fact",
                format!("There is no fact #{} you can forget here.", args.id),
            ));
        }
        Ok(ToolOutput::data(
            json!({ "forgotten": true, "id": args.id }),
        ))
    }
}
