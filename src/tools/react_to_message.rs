//! `react_to_message`: the persona reacts to the message it answers with one emoji, a Unicode
//! one or one of the server's own (SPEC E1). The stage adds the reaction at once, under the
//! turn's single expression allowance it shares with stickers (SPEC T9); this tool only
//! resolves the emoji.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{ArgError, Tool, ToolContext, ToolError, ToolOutput};
use crate::domain::ports::{CustomEmoji, Emoji, Expression};
use crate::domain::role::{Role, RoleSet};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    // One emoji: the character itself, its shortcode (`thumbsup`), or one of the server's own
    // by name (listed in the description). Plain comments keep the schema lean.
    pub emoji: String,
}

/// Most custom emoji names listed back to the model when a name is unknown.
const LISTED_NAMES: usize = 25;
/// Longest emoji argument: a Unicode sequence (a family with skin tones runs to ~35 bytes) or a
/// name (Discord allows 32 characters).
const EMOJI_MAX_CHARS: usize = 40;

pub struct ReactToMessage;

#[async_trait]
impl Tool for ReactToMessage {
    type Args = Args;
    const NAME: &'static str = "react_to_message";
    const ROLES: RoleSet = RoleSet::of(&[Role::Persona]);
    const DESCRIPTION: &'static str = "React to the message you are answering with one emoji \
        (Unicode, or one of this server's own by name). A reaction and a sticker are both \
        expressions: one per reply.";
    const PUBLIC_OUTPUT: bool = true;

    fn validate(&self, args: &Args) -> Result<(), ArgError> {
        ArgError::check_len("$.emoji", &args.emoji, 1, EMOJI_MAX_CHARS)
    }

    async fn execute(
        &self,
        ctx: &ToolContext<'_>,
        args: Args,
        _cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let Some(message) = ctx.turn.trigger else {
            return Err(ToolError::business(
                "nothing_to_react_to",
                "This reply answers no message, so there is nothing to react to.",
            ));
        };
        let custom = match ctx.scope().server {
            Some(server) => ctx.ports().stickers.emojis(server).await?,
            None => Vec::new(),
        };
        let emoji = resolve(&args.emoji, &custom)?;
        Ok(ToolOutput {
            data: Some(json!({ "reaction": emoji.shown() })),
            expression: Some(Expression::Reaction { message, emoji }),
            ..ToolOutput::default()
        })
    }
}

/// The emoji `wanted` names: a Unicode emoji itself, a server's own by name (`:name:` too), or
/// a Unicode shortcode; else an error listing the server's own.
fn resolve(wanted: &str, custom: &[CustomEmoji]) -> Result<Emoji, ToolError> {
    let wanted = wanted.trim();
    if let Some(unicode) = emojis::get(wanted) {
        return Ok(Emoji::Unicode(unicode.as_str().to_owned()));
    }
    let name = wanted.trim_matches(':');
    if let Some(own) = custom
        .iter()
        .find(|e| e.name == name)
        .or_else(|| custom.iter().find(|e| e.name.eq_ignore_ascii_case(name)))
    {
        return Ok(Emoji::Custom(own.clone()));
    }
    if let Some(unicode) = emojis::get_by_shortcode(&name.to_ascii_lowercase()) {
        return Ok(Emoji::Unicode(unicode.as_str().to_owned()));
    }
    let names: Vec<String> = custom
        .iter()
        .take(LISTED_NAMES)
        .map(|e| format!(":{}:", e.name))
        .collect();
    let message = if names.is_empty() {
        format!("`{wanted}` is not an emoji. Use one Unicode emoji, such as 👍.")
    } else {
        format!(
            "`{wanted}` is not an emoji. Use one Unicode emoji, such as 👍, or one of this \
             server's: {}.",
            names.join(", ")
        )
    };
    Err(ToolError::business("unknown_emoji", message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own() -> Vec<CustomEmoji> {
        vec![CustomEmoji {
            id: 900,
            name: "partyblob".into(),
            animated: true,
        }]
    }

    // SPEC E1: a Unicode emoji, its shortcode, or the server's own by name; nothing else.
    #[test]
    fn emoji_are_resolved_from_unicode_shortcodes_and_the_servers_own() {
        assert_eq!(resolve("👍", &own()).unwrap(), Emoji::Unicode("👍".into()));
        assert_eq!(
            resolve(":thumbsup:", &own()).unwrap(),
            Emoji::Unicode("👍".into())
        );
        assert_eq!(
            resolve(":PartyBlob:", &own()).unwrap(),
            Emoji::Custom(own()[0].clone())
        );
        let Err(ToolError::Business { code, message }) = resolve("not an emoji", &own()) else {
            panic!("a word is no emoji");
        };
        assert_eq!(code, "unknown_emoji");
        assert!(message.contains(":partyblob:"), "{message}");
        assert!(resolve("👍👍", &[]).is_err(), "one emoji, not two");
    }
}
