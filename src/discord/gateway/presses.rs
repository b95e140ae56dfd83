//! A press of a reply's button (SPEC E2), as Discord sends it (an interaction of type 3). Who
//! may press what and when a button has expired is the domain's ([`may_press`]); here the
//! press is answered within Discord's 3 s: a refusal at once, only to the presser; anything
//! else acknowledged first (a deferred update), then carried out. Two processes that both got
//! the press (a rolling deploy) race for the acknowledgement: Discord takes one, and only that
//! one carries it out.

use std::sync::Arc;

use serenity::all::{
    ComponentInteraction, CreateInteractionResponse, CreateInteractionResponseFollowup,
    CreateInteractionResponseMessage, Http, Message,
};

use crate::discord::data::BotData;
use crate::domain::approvals::{ApprovalButton, Decision};
use crate::domain::buttons::{
    AGAIN_MAX, ButtonId, Buttons, Press, Presser, Refusal, Shown, Verdict, may_press,
};
use crate::domain::catch_up::snowflake_ms;
use crate::domain::ports::{Clock, SystemClock};
use crate::domain::scope::{ChannelId, MessageId, ServerId, UserId};
use crate::domain::thought_log::Notice;
use crate::engine::orchestrator::{Again, AgainReport, KillReport};
use crate::locale::{self, Locale};

/// One press of a button. A component that is not one of this bot's buttons is left alone.
pub async fn on_press(data: &Arc<BotData>, http: &Http, press: &ComponentInteraction) {
    if super::consent::on_consent(data, http, press).await {
        return;
    }
    let locale = Locale::from_discord(&press.locale);
    let presser = Presser {
        user: UserId(press.user.id.get()),
        moderator: press
            .member
            .as_ref()
            .and_then(|m| m.permissions)
            .is_some_and(|p| p.manage_messages()),
    };
    if let Some(button) = ApprovalButton::decode(&press.data.custom_id) {
        let refusal = decide(data, button, presser).await;
        match refusal {
            None => {
                acknowledge(http, press).await;
            }
            Some(key) => tell_now(http, press, locale::text(locale, key)).await,
        }
        return;
    }
    let Some(button) = ButtonId::decode(&press.data.custom_id) else {
        return;
    };
    let channel = ChannelId(press.channel_id.get());
    let message = MessageId(press.message.id.get());
    let posted_ms = snowflake_ms(message.0);
    if let Err(refusal) = may_press(&button, presser, posted_ms, SystemClock.now_ms()) {
        tell_now(http, press, refusal_text(refusal, button.press, locale)).await;
        if refusal == Refusal::Expired {
            take_off(data, channel, message, &button, locale).await;
        }
        return;
    }
    if !acknowledge(http, press).await {
        return;
    }
    let answer = match button.press {
        Press::Stop => stop(data, channel, message, &button, presser, locale).await,
        Press::Again => again(data, press, &button, locale).await,
        Press::Up | Press::Down => feedback(data, press, &button, presser.user, locale).await,
    };
    if let Some(text) = answer {
        tell_later(http, press, text).await;
    }
}

/// Approve or Deny on an approval card (SPEC E3): the first decision stands (a conditional
/// update in the store); the waiting turn reads it, runs or not, and closes the card. Returns the
/// locale key of a refusal, `None` when it was decided here.
async fn decide(data: &BotData, button: ApprovalButton, presser: Presser) -> Option<&'static str> {
    let stored = match data.approvals.get(button.id).await {
        Ok(Some(stored)) => stored,
        Ok(None) => return Some("approval-decided"),
        Err(error) => {
            tracing::warn!(%error, "an approval request could not be read");
            return Some("button-again-unavailable");
        }
    };
    let request = &stored.request;
    if !request
        .approvers
        .allow(request.requester, presser.user, presser.moderator)
    {
        return Some("approval-not-yours");
    }
    let now = SystemClock.now_ms();
    if stored.decision != Decision::Pending {
        return Some("approval-decided");
    }
    if now >= request.deadline_ms {
        return Some("approval-timed-out");
    }
    let decision = if button.approve {
        Decision::Approved { by: presser.user }
    } else {
        Decision::Denied { by: presser.user }
    };
    match data.approvals.decide(button.id, decision, now).await {
        Ok(true) => None,
        Ok(false) => Some("approval-decided"),
        Err(error) => {
            tracing::warn!(%error, "an approval decision could not be stored");
            Some("button-again-unavailable")
        }
    }
}

/// Acknowledges a press with a deferred update; `false` when Discord did not take it: another
/// process acknowledged it (and carries it out), or the deadline passed.
async fn acknowledge(http: &Http, press: &ComponentInteraction) -> bool {
    match press
        .create_response(http, CreateInteractionResponse::Acknowledge)
        .await
    {
        Ok(()) => true,
        Err(error) => {
            tracing::debug!(%error, "a press was not acknowledged here; left alone");
            false
        }
    }
}

/// What a refused press is told.
fn refusal_text(refusal: Refusal, press: Press, locale: Locale) -> String {
    match (refusal, press) {
        (Refusal::Expired, _) => locale::text(locale, "button-expired"),
        (Refusal::NoMoreAgain, _) => locale::text_with(
            locale,
            "button-no-more-again",
            &[("max", AGAIN_MAX.to_string())],
        ),
        (Refusal::NotYours, Press::Again) => locale::text(locale, "button-not-yours-again"),
        (Refusal::NotYours, _) => locale::text(locale, "button-not-yours-stop"),
    }
}

/// *Stop*: the reply's turn, while it runs. A turn that is no longer running (it ended, or a
/// restart ended it) leaves its *Stop* behind only when its end could not settle its buttons:
/// taken off here.
async fn stop(
    data: &BotData,
    channel: ChannelId,
    message: MessageId,
    button: &ButtonId,
    presser: Presser,
    locale: Locale,
) -> Option<String> {
    let report = data
        .orchestrator
        .stop_turn(channel, button.reply.turn, presser.user, presser.moderator)
        .await;
    match report {
        KillReport::Stopped { .. } => None,
        KillReport::Denied => Some(locale::text(locale, "button-not-yours-stop")),
        KillReport::NothingRunning => {
            take_off(data, channel, message, button, locale).await;
            Some(locale::text(locale, "button-stop-nothing"))
        }
    }
}

/// *Again*: the question read afresh and answered anew, replacing this answer once the new
/// one is up.
async fn again(
    data: &BotData,
    press: &ComponentInteraction,
    button: &ButtonId,
    locale: Locale,
) -> Option<String> {
    let trigger = button.reply.trigger?;
    let channel = ChannelId(press.channel_id.get());
    let server = press.guild_id.map(|g| ServerId(g.get()));
    let Some(question) = read_message(data, channel, trigger, server).await else {
        return Some(locale::text(locale, "button-again-gone"));
    };
    let Some(entry) = super::admission::queued_again(data, &question).await else {
        return Some(locale::text(locale, "button-again-unavailable"));
    };
    let again = Again {
        count: button.reply.again.saturating_add(1),
        replaces: button.reply.turn,
    };
    match data.orchestrator.again(entry, again).await {
        AgainReport::Started => None,
        AgainReport::Busy => Some(locale::text(locale, "button-again-busy")),
    }
}

/// The question *Again* answers, as Discord has it now (edited or not); `None` when it is gone
/// or cannot be read.
async fn read_message(
    data: &BotData,
    channel: ChannelId,
    message: MessageId,
    server: Option<ServerId>,
) -> Option<Message> {
    let route = crate::discord::rest::ratelimit::Route {
        template: "GET /channels/{}/messages/{}",
        major: channel.0,
        local_per_5s: None,
    };
    let path = format!("/channels/{}/messages/{}", channel.0, message.0);
    let value = match data.rest.get_answer(route, &path).await {
        Ok(value) => value,
        Err(error) => {
            tracing::info!(%channel, %message, %error, "the question to answer again cannot be read");
            return None;
        }
    };
    let mut question: Message = serde_json::from_value(value).ok()?;
    // REST messages leave their guild out.
    question.guild_id = server.map(|s| serenity::all::GuildId::new(s.0.max(1)));
    Some(question)
}

/// 👍 or 👎: stored (one per member and reply), and the moderators' thought log hears of it.
async fn feedback(
    data: &BotData,
    press: &ComponentInteraction,
    button: &ButtonId,
    user: UserId,
    locale: Locale,
) -> Option<String> {
    let verdict = if button.press == Press::Up {
        Verdict::Up
    } else {
        Verdict::Down
    };
    let server = press.guild_id.map(|g| ServerId(g.get()));
    let given = data
        .feedback
        .give(
            button.reply.turn,
            server,
            user,
            verdict,
            SystemClock.now_ms(),
        )
        .await;
    let tally = match given {
        Ok(tally) => tally,
        Err(error) => {
            tracing::warn!(%error, "feedback not stored");
            return Some(locale::text(locale, "feedback-unavailable"));
        }
    };
    if let Some(server) = server {
        let notice = Notice::Feedback {
            channel: ChannelId(press.channel_id.get()),
            by: user,
            verdict,
            tally,
        };
        data.thought_log.post(server, notice).await;
    }
    let key = match verdict {
        Verdict::Up => "feedback-noted-up",
        Verdict::Down => "feedback-noted-down",
    };
    Some(locale::text(locale, key))
}

/// Takes the buttons off a message (expired, or left by a turn that is over).
async fn take_off(
    data: &BotData,
    channel: ChannelId,
    message: MessageId,
    button: &ButtonId,
    locale: Locale,
) {
    let off = Buttons {
        shown: Shown::Nothing,
        reply: button.reply,
        locale,
    };
    if let Err(error) = data.sink.set_buttons(channel, message, &off).await {
        tracing::debug!(%channel, %message, %error, "could not take the buttons off");
    }
}

/// Answers the press at once with `text`, seen only by the presser.
async fn tell_now(http: &Http, press: &ComponentInteraction, text: String) {
    let message = CreateInteractionResponseMessage::new()
        .content(text)
        .ephemeral(true);
    if let Err(error) = press
        .create_response(http, CreateInteractionResponse::Message(message))
        .await
    {
        tracing::debug!(%error, "a refused press could not be answered");
    }
}

/// Tells the presser `text` after the press was acknowledged.
async fn tell_later(http: &Http, press: &ComponentInteraction, text: String) {
    let followup = CreateInteractionResponseFollowup::new()
        .content(text)
        .ephemeral(true);
    if let Err(error) = press.create_followup(http, followup).await {
        tracing::debug!(%error, "a press's outcome could not be told");
    }
}
