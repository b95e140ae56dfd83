//! Whether a slash command's options fit the command's registration, as Discord checks before
//! it ever sends the interaction; and whether a message's components are ones Discord takes.

use axum::response::Response;
use serde_json::{Value, json};

use super::rest::{invalid_form_body_at, parse_id};

/// A message's classic components as Discord checks them: at most 5 action rows (type 1), each
/// with 1 to 5 buttons (type 2); a button has a style 1 to 6, a label (at most 80 characters)
/// or an emoji, and, unless it is a link (style 5) or a premium button (style 6), a
/// `custom_id` of 1 to 100 characters, unique in the message. Refusals are Discord's 50035.
#[allow(clippy::result_large_err)] // the error is the response to send
pub(super) fn check_components(body: &Value) -> Result<(), Response> {
    let Some(rows) = body.get("components").and_then(Value::as_array) else {
        return Ok(());
    };
    let refuse = |path: &[&str], code: &str, message: &str| {
        let mut full = vec!["components"];
        full.extend_from_slice(path);
        Err(invalid_form_body_at(&full, code, message))
    };
    if rows.len() > 5 {
        return refuse(&[], "BASE_TYPE_MAX_LENGTH", "Must be 5 or fewer in length.");
    }
    let mut ids: Vec<String> = Vec::new();
    for (r, row) in rows.iter().enumerate() {
        let r = r.to_string();
        if row["type"].as_u64() != Some(1) {
            return refuse(
                &[&r, "type"],
                "UNION_TYPE_CHOICES",
                "Value of field \"type\" must be one of (1,).",
            );
        }
        let buttons: &[Value] = row["components"].as_array().map_or(&[], Vec::as_slice);
        if buttons.is_empty() || buttons.len() > 5 {
            return refuse(
                &[&r, "components"],
                "BASE_TYPE_BAD_LENGTH",
                "Must be between 1 and 5 in length.",
            );
        }
        for (b, button) in buttons.iter().enumerate() {
            let b = b.to_string();
            let at = |field: &'static str| [r.as_str(), "components", b.as_str(), field];
            let style = button["style"].as_u64().unwrap_or(0);
            if button["type"].as_u64() != Some(2) || !(1..=6).contains(&style) {
                return refuse(
                    &at("style"),
                    "BUTTON_COMPONENT_INVALID_STYLE",
                    "Invalid style.",
                );
            }
            let label = button["label"].as_str().unwrap_or("");
            if label.chars().count() > 80 {
                return refuse(
                    &at("label"),
                    "BASE_TYPE_MAX_LENGTH",
                    "Must be 80 or fewer in length.",
                );
            }
            if label.is_empty() && button["emoji"].is_null() {
                return refuse(
                    &at("label"),
                    "BUTTON_COMPONENT_LABEL_OR_EMOJI_REQUIRED",
                    "A label or an emoji is required.",
                );
            }
            if style >= 5 {
                continue;
            }
            let id = button["custom_id"].as_str().unwrap_or("");
            if id.is_empty() || id.chars().count() > 100 {
                return refuse(
                    &at("custom_id"),
                    "BASE_TYPE_BAD_LENGTH",
                    "Must be between 1 and 100 in length.",
                );
            }
            if ids.iter().any(|seen| seen == id) {
                return refuse(
                    &at("custom_id"),
                    "COMPONENT_CUSTOM_ID_DUPLICATED",
                    "Component custom id cannot be duplicated",
                );
            }
            ids.push(id.to_owned());
        }
    }
    Ok(())
}

const OPTION_TYPES: [&str; 12] = [
    "?",
    "SUB_COMMAND",
    "SUB_COMMAND_GROUP",
    "STRING",
    "INTEGER",
    "BOOLEAN",
    "USER",
    "CHANNEL",
    "ROLE",
    "MENTIONABLE",
    "NUMBER",
    "ATTACHMENT",
];

fn option_type_name(kind: Option<u64>) -> String {
    match kind {
        Some(k) if (k as usize) < OPTION_TYPES.len() => {
            format!("{k} ({})", OPTION_TYPES[k as usize])
        }
        other => format!("{other:?}"),
    }
}

/// Whether `sent` (an interaction's options) fits `registered` (a command's options).
pub(super) fn check_options(path: &str, sent: &Value, registered: &Value) -> Result<(), String> {
    let registered: Vec<Value> = registered.as_array().cloned().unwrap_or_default();
    let sent: Vec<Value> = match sent {
        Value::Null => Vec::new(),
        Value::Array(a) => a.clone(),
        other => return Err(format!("{path}: options must be an array, got {other}")),
    };
    let names: Vec<&str> = registered
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    for option in &sent {
        let name = option["name"].as_str().unwrap_or("");
        let Some(reg) = registered.iter().find(|r| r["name"] == option["name"]) else {
            return Err(format!(
                "{path}: no option `{name}` is registered (registered: {names:?})"
            ));
        };
        let (kind, want) = (option["type"].as_u64(), reg["type"].as_u64());
        if kind != want {
            let choices = &reg["choices"];
            return Err(format!(
                "{path}: option `{name}` is registered as type {}{} but was sent as type {} \
                 with value {}",
                option_type_name(want),
                if choices.is_array() {
                    format!(" with choices {choices}")
                } else {
                    String::new()
                },
                option_type_name(kind),
                option["value"],
            ));
        }
        let value = &option["value"];
        let fits = match kind {
            Some(1 | 2) => {
                check_options(
                    &format!("{path} {name}"),
                    &option["options"],
                    &reg["options"],
                )?;
                true
            }
            Some(3) => value.is_string(),
            Some(4) => value.is_i64() || value.is_u64(),
            Some(5) => value.is_boolean(),
            Some(10) => value.is_number(),
            Some(6..=9 | 11) => value.as_str().and_then(parse_id).is_some(),
            _ => true,
        };
        if !fits {
            return Err(format!(
                "{path}: option `{name}` of type {} cannot have the value {value}",
                option_type_name(kind)
            ));
        }
        if let Some(choices) = reg["choices"].as_array().filter(|c| !c.is_empty()) {
            let same = |c: &Value| match (c["value"].as_f64(), value.as_f64()) {
                (Some(a), Some(b)) => a == b,
                _ => c["value"] == *value,
            };
            if !choices.iter().any(same) {
                return Err(format!(
                    "{path}: option `{name}` has value {value}, not one of its choices {}",
                    json!(choices)
                ));
            }
        }
    }
    let groups = registered
        .iter()
        .any(|r| matches!(r["type"].as_u64(), Some(1 | 2)));
    if groups && sent.len() != 1 {
        return Err(format!(
            "{path}: exactly one sub-command of {names:?} must be sent, got {}",
            json!(sent)
        ));
    }
    for reg in &registered {
        if reg["required"] == json!(true) && !sent.iter().any(|o| o["name"] == reg["name"]) {
            return Err(format!(
                "{path}: the required option `{}` is missing",
                reg["name"]
            ));
        }
    }
    Ok(())
}
