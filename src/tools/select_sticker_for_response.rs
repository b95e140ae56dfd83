//! `select_sticker_for_response`: picks one of the server's stickers by name. The stage delivers
//! it at once, at most one per turn (SPEC T9); this tool only resolves the name.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{ArgError, Tool, ToolContext, ToolError, ToolOutput};
use crate::domain::ports::Expression;
use crate::domain::role::{Role, RoleSet};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    // The sticker's name as listed in the description (case does not matter). Plain comments
    // here and below keep the schema lean: the tool's description says what the model needs.
    pub name: String,
}

/// Most sticker names listed back to the model when a name is unknown.
const LISTED_NAMES: usize = 25;

pub struct SelectStickerForResponse;

#[async_trait]
impl Tool for SelectStickerForResponse {
    type Args = Args;
    const NAME: &'static str = "select_sticker_for_response";
    const ROLES: RoleSet = RoleSet::of(&[Role::Persona]);
    const DESCRIPTION: &'static str = "Send one of this server's stickers with your reply (one \
        per reply).";
    const PUBLIC_OUTPUT: bool = true;

    fn validate(&self, args: &Args) -> Result<(), ArgError> {
        ArgError::check_len("$.name", &args.name, 1, 64)
    }

    async fn execute(
        &self,
        ctx: &ToolContext<'_>,
        args: Args,
        _cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let Some(server) = ctx.scope().server else {
            return Err(ToolError::business(
                "stickers_unavailable",
                "Stickers can only be sent in a server channel.",
            ));
        };
        let wanted = args.name.trim();
        let stickers = ctx.ports().stickers.stickers(server).await?;
        let Some(sticker) = stickers
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(wanted) || s.name == wanted)
        else {
            let names: Vec<&str> = stickers
                .iter()
                .take(LISTED_NAMES)
                .map(|s| s.name.as_str())
                .collect();
            let message = if names.is_empty() {
                "This server has no stickers.".to_owned()
            } else {
                format!(
                    "No sticker named `{wanted}`. Available stickers: {}.",
                    names.join(", ")
                )
            };
            return Err(ToolError::business("unknown_sticker", message));
        };
        Ok(ToolOutput {
            data: Some(json!({ "sticker": sticker.name })),
            expression: Some(Expression::Sticker(sticker.clone())),
            ..ToolOutput::default()
        })
    }
}
