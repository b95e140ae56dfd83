//! Modals: a callback of type 9 shows one (only as the first answer to a command, never to a
//! modal's own submit), checked against Discord's limits; the user's submit is a new
//! interaction of type 5 (MODAL_SUBMIT) with the values typed, checked against the fields'
//! bounds as Discord's client enforces them.

// A refusal is the response to send, as elsewhere in the fake.
#![allow(clippy::result_large_err)]

use axum::response::Response;
use serde_json::{Value, json};

use super::rest::invalid_form_body_at;
use super::server::FakeDiscord;
use super::session::dispatch_locked;
use super::state::InteractionState;

/// Discord's limits on a modal (title, custom id, rows) and its text inputs.
const TITLE_MAX: usize = 45;
const CUSTOM_ID_MAX: usize = 100;
const ROWS_MAX: usize = 5;
const LABEL_MAX: usize = 45;
const TEXT_MAX: u64 = 4000;
const PLACEHOLDER_MAX: usize = 100;

fn refuse(path: &[&str], code: &str, message: &str) -> Result<(), Response> {
    Err(invalid_form_body_at(path, code, message))
}

fn length(v: &Value) -> usize {
    v.as_str().map_or(0, |s| s.chars().count())
}

/// Whether Discord accepts `data` (a callback's `data`) as a modal.
pub(super) fn check_modal(data: &Value) -> Result<(), Response> {
    let title = length(&data["title"]);
    if title == 0 || title > TITLE_MAX {
        return refuse(
            &["data", "title"],
            "BASE_TYPE_BAD_LENGTH",
            "Must be 1-45 long",
        );
    }
    let id = length(&data["custom_id"]);
    if id == 0 || id > CUSTOM_ID_MAX {
        return refuse(
            &["data", "custom_id"],
            "BASE_TYPE_BAD_LENGTH",
            "Must be 1-100 long",
        );
    }
    let rows = data["components"].as_array().cloned().unwrap_or_default();
    if rows.is_empty() || rows.len() > ROWS_MAX {
        return refuse(
            &["data", "components"],
            "BASE_TYPE_BAD_LENGTH",
            "Must be 1-5 long",
        );
    }
    for (n, row) in rows.iter().enumerate() {
        let n = n.to_string();
        let inputs = row["components"].as_array().cloned().unwrap_or_default();
        if row["type"] != json!(1) || inputs.len() != 1 {
            return refuse(
                &["data", "components", &n],
                "COMPONENT_LAYOUT_WIDTH_EXCEEDED",
                "A modal row holds exactly one text input",
            );
        }
        check_input(&inputs[0], &n)?;
    }
    Ok(())
}

fn check_input(input: &Value, row: &str) -> Result<(), Response> {
    let at = |field: &'static str| ["data", "components", row, "components", "0", field];
    if input["type"] != json!(4) {
        return refuse(
            &at("type"),
            "COMPONENT_TYPE_INVALID",
            "Only text inputs in a modal",
        );
    }
    let id = length(&input["custom_id"]);
    if id == 0 || id > CUSTOM_ID_MAX {
        return refuse(
            &at("custom_id"),
            "BASE_TYPE_BAD_LENGTH",
            "Must be 1-100 long",
        );
    }
    let label = length(&input["label"]);
    if label == 0 || label > LABEL_MAX {
        return refuse(&at("label"), "BASE_TYPE_BAD_LENGTH", "Must be 1-45 long");
    }
    if !matches!(input["style"].as_u64(), Some(1 | 2)) {
        return refuse(
            &at("style"),
            "BASE_TYPE_CHOICES",
            "Value must be one of (1, 2)",
        );
    }
    let min = input["min_length"].as_u64().unwrap_or(0);
    let max = input["max_length"].as_u64().unwrap_or(TEXT_MAX);
    if min > TEXT_MAX || max == 0 || max > TEXT_MAX || min > max {
        return refuse(&at("max_length"), "NUMBER_TYPE_MAX", "Must be 4000 or less");
    }
    if length(&input["value"]) as u64 > max {
        return refuse(
            &at("value"),
            "BASE_TYPE_MAX_LENGTH",
            "Longer than max_length",
        );
    }
    if length(&input["placeholder"]) > PLACEHOLDER_MAX {
        return refuse(
            &at("placeholder"),
            "BASE_TYPE_MAX_LENGTH",
            "Must be 100 or fewer",
        );
    }
    Ok(())
}

/// The modal's text inputs: (custom id, required, min, max).
fn inputs(modal: &Value) -> Vec<(String, bool, u64, u64)> {
    modal["components"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|row| row["components"].get(0))
        .map(|input| {
            (
                input["custom_id"].as_str().unwrap_or_default().to_owned(),
                input["required"].as_bool().unwrap_or(true),
                input["min_length"].as_u64().unwrap_or(0),
                input["max_length"].as_u64().unwrap_or(TEXT_MAX),
            )
        })
        .collect()
}

impl FakeDiscord {
    /// The user submits the modal shown in answer to `interaction_id` with `values` (custom id,
    /// text; a field left out is submitted empty): dispatches the MODAL_SUBMIT interaction and
    /// returns its id (token `itoken-<id>`). Fails as Discord's client would not send it: no
    /// modal shown, an unknown field, a required field empty, a value out of its bounds.
    pub fn submit_modal(
        &self,
        interaction_id: u64,
        values: &[(&str, &str)],
    ) -> Result<u64, String> {
        self.submit_modal_as(interaction_id, None, values)
    }

    /// [`Self::submit_modal`] by a member whose permissions are now `permissions` (`None`: as
    /// when the command ran): Discord sends them as they are at the submit.
    pub fn submit_modal_as(
        &self,
        interaction_id: u64,
        permissions: Option<u64>,
        values: &[(&str, &str)],
    ) -> Result<u64, String> {
        let id = self.shared.snowflake();
        let token = format!("itoken-{id}");
        let mut inner = self.shared.lock();
        let Some(shown) = inner.interactions.values().find(|s| s.id == interaction_id) else {
            return Err(format!("no interaction {interaction_id}"));
        };
        let Some(modal) = shown.modal.clone() else {
            return Err(format!("interaction {interaction_id} showed no modal"));
        };
        let fields = inputs(&modal);
        if let Some((unknown, _)) = values
            .iter()
            .find(|(k, _)| fields.iter().all(|f| f.0 != *k))
        {
            return Err(format!("the modal has no field `{unknown}`"));
        }
        let mut rows = Vec::new();
        for (custom_id, required, min, max) in &fields {
            let value = values
                .iter()
                .find(|(k, _)| k == custom_id)
                .map_or("", |(_, v)| *v);
            let len = value.chars().count() as u64;
            if (*required && len == 0) || (len > 0 && len < *min) || len > *max {
                return Err(format!(
                    "`{custom_id}`: {len} characters, {min} to {max} allowed"
                ));
            }
            rows.push(json!({
                "type": 1,
                "id": rows.len() * 2 + 1,
                "components": [{
                    "type": 4, "id": rows.len() * 2 + 2, "custom_id": custom_id, "value": value,
                }],
            }));
        }
        let mut payload = shown.payload.clone();
        payload["id"] = json!(id.to_string());
        payload["token"] = json!(token);
        payload["type"] = json!(5);
        payload["data"] = json!({ "custom_id": modal["custom_id"], "components": rows });
        if let Some(permissions) = permissions {
            payload["member"]["permissions"] = json!(permissions.to_string());
        }
        let state = InteractionState::new(id, shown.channel_id, shown.guild_id, payload.clone());
        inner.interactions.insert(token, state);
        dispatch_locked(&mut inner, "INTERACTION_CREATE", payload);
        Ok(id)
    }
}
