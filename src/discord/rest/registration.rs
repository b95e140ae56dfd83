//! Slash-command registration, in the background (SPEC D8). The bot answers messages whatever
//! happens here: registration never runs in poise's `setup`, where a refusal would leave the
//! framework without its data and every event waiting for ever. The registered commands are read
//! first and written only when they differ from the bot's; a refusal is logged once at ERROR with
//! Discord's message and the field it names, then tried again with a growing pause (a 429's
//! `retry_after` is waited out by the scheduled REST client).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::client::DiscordRest;
use super::ratelimit::Route;

/// The first pause after a refusal; doubled each time, up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_secs(30);
const RETRY_MAX: Duration = Duration::from_secs(600);

/// What one try did.
#[derive(Debug, PartialEq, Eq)]
enum Registered {
    Unchanged,
    Written,
}

/// Keeps the global commands as `commands` (Discord's JSON for each), until it succeeds or
/// `stop`.
pub async fn keep_registered(
    rest: Arc<DiscordRest>,
    application: u64,
    commands: Vec<Value>,
    stop: CancellationToken,
) {
    let mut pause = RETRY_FIRST;
    let mut refusals = 0_u32;
    loop {
        match register_once(&rest, application, &commands).await {
            Ok(Registered::Unchanged) => {
                tracing::info!(
                    commands = commands.len(),
                    "slash commands up to date; nothing written"
                );
                return;
            }
            Ok(Registered::Written) => {
                tracing::info!(
                    commands = commands.len(),
                    refusals,
                    "slash commands registered"
                );
                return;
            }
            Err(why) => {
                refusals += 1;
                if refusals == 1 {
                    tracing::error!(
                        %why,
                        retry_secs = pause.as_secs(),
                        "Discord refused the slash commands; messages are answered meanwhile, \
                         and registration is tried again"
                    );
                } else {
                    tracing::debug!(%why, refusals, "slash command registration refused again");
                }
            }
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(pause) => {}
        }
        pause = (pause * 2).min(RETRY_MAX);
    }
}

async fn register_once(
    rest: &DiscordRest,
    application: u64,
    commands: &[Value],
) -> Result<Registered, String> {
    let path = format!("/applications/{application}/commands");
    let route = |template| Route {
        template,
        major: application,
        local_per_5s: None,
    };
    let existing = rest
        .get(route("GET /applications/{}/commands"), &path)
        .await?;
    if same_commands(existing.as_array().map_or(&[][..], Vec::as_slice), commands) {
        return Ok(Registered::Unchanged);
    }
    rest.put_json(
        route("PUT /applications/{}/commands"),
        &path,
        &Value::Array(commands.to_vec()),
    )
    .await?;
    Ok(Registered::Written)
}

/// Whether the registered commands are the bot's: the same names, descriptions, options,
/// localizations and default permissions, whatever Discord added (ids, versions) or left out
/// (a `required` that is false, empty localizations).
fn same_commands(registered: &[Value], wanted: &[Value]) -> bool {
    let shapes = |commands: &[Value]| {
        let mut shapes: Vec<Value> = commands.iter().map(|c| shape(c, 0)).collect();
        shapes.sort_by_key(|s| s["name"].to_string());
        shapes
    };
    shapes(registered) == shapes(wanted)
}

/// The part of a command (or option) that matters, with Discord's defaults filled in. Bounded
/// in depth (options nest at most three levels on Discord).
fn shape(item: &Value, depth: usize) -> Value {
    let text = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or_default();
    let localized = |key: &str| match item.get(key) {
        Some(Value::Object(map)) if !map.is_empty() => Value::Object(map.clone()),
        _ => json!({}),
    };
    let options: Vec<Value> = if depth < 4 {
        item.get("options")
            .and_then(Value::as_array)
            .map(|options| options.iter().map(|o| shape(o, depth + 1)).collect())
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let choices: Vec<Value> = item
        .get("choices")
        .and_then(Value::as_array)
        .map(|choices| {
            choices
                .iter()
                .map(|c| json!({"name": c.get("name"), "value": c.get("value")}))
                .collect()
        })
        .unwrap_or_default();
    json!({
        "type": item.get("type").and_then(Value::as_u64).unwrap_or(1),
        "name": text("name"),
        "description": text("description"),
        "name_localizations": localized("name_localizations"),
        "description_localizations": localized("description_localizations"),
        "default_member_permissions": item.get("default_member_permissions").filter(|p| !p.is_null()),
        "required": item.get("required").and_then(Value::as_bool).unwrap_or(false),
        "choices": choices,
        "channel_types": item.get("channel_types").cloned().unwrap_or(json!([])),
        "options": options,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // SPEC D8: what Discord echoes (ids, versions, defaults left out) is the same commands.
    #[test]
    fn registered_commands_match_whatever_discord_added() {
        let wanted = vec![json!({
            "name": "kill", "description": "Stop the reply", "type": 1,
            "name_localizations": {"ja": "停止"},
            "options": [{"type": 7, "name": "channel", "description": "Where", "required": false}],
        })];
        let registered = vec![json!({
            "id": "1", "application_id": "2", "version": "3", "name": "kill",
            "description": "Stop the reply", "name_localizations": {"ja": "停止"},
            "description_localizations": null, "default_member_permissions": null,
            "options": [{"type": 7, "name": "channel", "description": "Where"}],
            "nsfw": false, "integration_types": [0],
        })];
        assert!(same_commands(&registered, &wanted));
        let mut changed = wanted.clone();
        changed[0]["description"] = json!("Stop it");
        assert!(!same_commands(&registered, &changed));
        assert!(!same_commands(&[], &wanted));
        assert!(!same_commands(&registered, &[]));
    }
}
