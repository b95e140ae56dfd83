//! Whether a slash command's options fit the command's registration, as Discord checks before
//! it ever sends the interaction.

use serde_json::{Value, json};

use super::rest::parse_id;

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
