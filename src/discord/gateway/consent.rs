//! A press of Allow or Decline on a request for consent from "Remember this" (SPEC A5): only the
//! member the fact is about may answer; Allow stores it, Decline drops it, and the request's
//! message says how it ended, its buttons off.

use serenity::all::{
    ComponentInteraction, CreateInteractionResponse, CreateInteractionResponseMessage, Http,
};

use crate::discord::data::{BotData, CONSENT_PREFIX, ConsentAnswer};
use crate::domain::scope::UserId;
use crate::locale::{self, Locale};

/// A press of Allow or Decline on a request for consent; `false` when the press is not one.
pub async fn on_consent(data: &BotData, http: &Http, press: &ComponentInteraction) -> bool {
    let Some(rest) = press.data.custom_id.strip_prefix(CONSENT_PREFIX) else {
        return false;
    };
    let Some((allow, request)) = rest
        .split_once(':')
        .and_then(|(choice, id)| Some((choice == "yes", id.parse::<u64>().ok()?)))
    else {
        return false;
    };
    let locale = Locale::from_discord(&press.locale);
    let presser = UserId(press.user.id.get());
    let key = match data.consents.answer(request, presser) {
        ConsentAnswer::NotYours => {
            let message = CreateInteractionResponseMessage::new()
                .content(locale::text(locale, "menu-consent-not-yours"))
                .ephemeral(true);
            respond(http, press, CreateInteractionResponse::Message(message)).await;
            return true;
        }
        ConsentAnswer::Expired => "menu-consent-expired",
        ConsentAnswer::Yours(fact) if allow => match data.remember(fact).await {
            "menu-remembered" => "menu-consent-allowed",
            other => other,
        },
        ConsentAnswer::Yours(_) => "menu-consent-declined",
    };
    // The request's message says how it ended, its buttons off.
    let update = CreateInteractionResponseMessage::new()
        .content(locale::text(locale, key))
        .components(Vec::new());
    respond(
        http,
        press,
        CreateInteractionResponse::UpdateMessage(update),
    )
    .await;
    true
}

async fn respond(http: &Http, press: &ComponentInteraction, response: CreateInteractionResponse) {
    if let Err(error) = press.create_response(http, response).await {
        tracing::debug!(%error, "a consent press could not be answered");
    }
}
