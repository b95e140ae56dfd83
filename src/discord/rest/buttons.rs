//! A reply's buttons as Discord components (SPEC E2): one action row, *Stop* (red) while it
//! streams, *Again* (grey), 👍 and 👎 once it is done; each button's custom id says whose reply
//! it is ([`ButtonId`]). Labels are in the requester's language.

use serde_json::{Value, json};

use crate::domain::buttons::{ButtonId, Buttons, Press};
use crate::locale;

/// Discord's button styles used here.
const SECONDARY: u8 = 2;
const SUCCESS: u8 = 3;
const DANGER: u8 = 4;

/// The `components` of a message carrying `buttons` (an empty list takes them off).
pub fn components(buttons: &Buttons) -> Value {
    let row: Vec<Value> = Press::of(buttons.shown, &buttons.reply)
        .into_iter()
        .map(|press| {
            let custom_id = ButtonId {
                press,
                reply: buttons.reply,
            }
            .encode();
            let label = |key: &str| locale::text(buttons.locale, key);
            match press {
                Press::Stop => json!({
                    "type": 2, "custom_id": custom_id, "style": DANGER,
                    "label": label("button-stop"),
                }),
                Press::Again => json!({
                    "type": 2, "custom_id": custom_id, "style": SECONDARY,
                    "label": label("button-again"),
                }),
                Press::Up | Press::Down => json!({
                    "type": 2, "custom_id": custom_id, "style": SECONDARY,
                    "emoji": { "name": if press == Press::Up { "👍" } else { "👎" } },
                }),
            }
        })
        .collect();
    if row.is_empty() {
        return json!([]);
    }
    json!([{ "type": 1, "components": row }])
}

/// The `components` of an approval card (SPEC E3): Approve (green) and Deny (red).
pub fn approval_components(card: &crate::domain::ports::ApprovalCard) -> Value {
    use crate::domain::approvals::ApprovalButton;
    let button = |approve: bool, style: u8, key: &str| {
        json!({
            "type": 2,
            "style": style,
            "label": locale::text(card.locale, key),
            "custom_id": ApprovalButton { approve, id: card.id }.encode(),
        })
    };
    json!([{ "type": 1, "components": [
        button(true, SUCCESS, "approval-approve"),
        button(false, DANGER, "approval-deny"),
    ] }])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::buttons::{ReplyRef, Shown};
    use crate::domain::scope::{MessageId, UserId};
    use crate::domain::turn::TurnId;

    fn buttons(shown: Shown) -> Buttons {
        Buttons {
            shown,
            reply: ReplyRef {
                turn: TurnId::new(),
                requester: UserId(7),
                trigger: Some(MessageId(9)),
                again: 1,
            },
            locale: crate::locale::Locale::Ja,
        }
    }

    // SPEC E2: a streaming reply shows Stop, a done one Again and feedback, in the requester's
    // language, with ids that decode back to the reply.
    #[test]
    fn buttons_render_as_one_row_in_the_requesters_language() {
        let stop = components(&buttons(Shown::Stop));
        assert_eq!(stop[0]["components"].as_array().map(Vec::len), Some(1));
        assert_eq!(
            stop[0]["components"][0]["label"],
            json!(locale::text(crate::locale::Locale::Ja, "button-stop"))
        );
        let done = buttons(Shown::Done);
        let rendered = components(&done);
        let row = rendered[0]["components"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(row.len(), 3);
        let ids: Vec<ButtonId> = row
            .iter()
            .filter_map(|b| b["custom_id"].as_str().and_then(ButtonId::decode))
            .collect();
        assert_eq!(ids.len(), 3);
        assert!(ids.iter().all(|id| id.reply == done.reply));
        assert_eq!(row[1]["emoji"]["name"], json!("👍"));
        assert_eq!(components(&buttons(Shown::Nothing)), json!([]));
    }
}
