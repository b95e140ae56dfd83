//! An interaction's answer as the persona's destination (`/ask` and the message menus, SPEC A5).
//! The reply's first message is the deferred response, edited in place as it is written; each
//! later one a follow-up, shown as it is written too. The interaction's token lives 15 minutes
//! from the interaction's creation: past it, a public answer where the bot may post continues
//! in the channel as the bot's messages, and any other is stopped before it and says it was cut.
//! Nothing is posted in the channel otherwise, so an answer where the bot is not a member, or a
//! private one, stays in the interaction.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::Mutex;
use tokio::time::Instant;

use super::client::{DiscordRest, InteractionToken, SendError};
use super::delivery::port_error;
use crate::discord::ids::snowflake;
use crate::domain::ports::{
    ApprovalCard, ChatSink, Emoji, ExpressionSend, Pings, PortError, Sticker, Voice,
};
use crate::domain::scope::{ChannelId, MessageId, UserId};
use crate::locale::{self, Locale};

/// How long an interaction's token lets its answer be written (Discord's 15 minutes).
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(15 * 60);
/// An answer that cannot continue in the channel is stopped this long before its token ends,
/// so the note that it was cut still reaches it.
pub const CUT_BEFORE: Duration = Duration::from_secs(10);
/// A draft is shown at most this often: Discord's interaction webhooks take about five
/// requests in 2 s, and the final messages need their share.
const DRAFT_EVERY: Duration = Duration::from_millis(1200);
/// Discord's longest message, in characters.
const MESSAGE_MAX: usize = 2000;
/// Discord's flag for a message only its interaction's user sees.
const EPHEMERAL: u64 = 1 << 6;
/// What marks a draft as still being written.
const WRITING: &str = " …";

/// Where an interaction's answer goes.
pub struct InteractionAnswer {
    pub rest: Arc<DiscordRest>,
    pub token: InteractionToken,
    /// Only the asker sees it.
    pub ephemeral: bool,
    /// The asker's language, for what this sink says itself.
    pub locale: Locale,
    /// When the token stops working.
    pub expires: Instant,
    /// Where the answer continues once the token stopped working: the channel, as the bot
    /// (a public answer where the bot may post); `None`: nowhere, it is cut before.
    pub channel: Option<Arc<dyn ChatSink>>,
    /// The bot's own sink, for what an answer does outside it (a direct message; an approval
    /// card where the bot is in the channel and the answer is public).
    pub bot: Arc<dyn ChatSink>,
}

impl InteractionAnswer {
    /// When an answer that cannot continue in the channel is stopped (`None`: it can).
    pub fn deadline(&self) -> Option<Instant> {
        self.channel
            .is_none()
            .then(|| self.expires.checked_sub(CUT_BEFORE).unwrap_or(self.expires))
    }
}

/// When the token of the interaction `id` stops working: 15 minutes after the time its
/// snowflake holds.
pub fn expires_of(interaction: u64) -> Instant {
    const DISCORD_EPOCH_MS: u64 = 1_420_070_400_000;
    let created_ms = (interaction >> 22) + DISCORD_EPOCH_MS;
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let lifetime_ms = u64::try_from(TOKEN_LIFETIME.as_millis()).unwrap_or(u64::MAX);
    let left = (created_ms + lifetime_ms).saturating_sub(now_ms);
    Instant::now() + Duration::from_millis(left.min(lifetime_ms))
}

/// An interaction's answer as a [`ChatSink`].
pub struct InteractionSink {
    answer: InteractionAnswer,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The original response holds a final message (not only a draft).
    original_final: bool,
    /// A follow-up showing a draft, to become the next final message.
    draft_followup: Option<u64>,
    /// Whether a draft is shown (in the original, or in `draft_followup`).
    drafting: bool,
    last_draft: Option<Instant>,
    /// The answer ended: a later `reply_over` does nothing.
    over: bool,
    /// The token stopped working: the rest goes to the channel, or nowhere.
    expired: bool,
}

/// Where one message of the answer is written.
enum Target {
    Original,
    Followup(u64),
    New,
}

impl InteractionSink {
    pub fn new(answer: InteractionAnswer) -> Self {
        Self {
            answer,
            state: Mutex::new(State::default()),
        }
    }

    fn expired(&self, state: &State) -> bool {
        state.expired || Instant::now() >= self.answer.expires
    }

    /// Writes `body` to `target`; the message's id. A refusal saying the token no longer
    /// works marks the answer expired.
    async fn write(
        &self,
        state: &mut State,
        target: &Target,
        mut body: Value,
    ) -> Result<u64, SendError> {
        let (method, message) = match target {
            Target::Original => (reqwest::Method::PATCH, Some("@original".to_owned())),
            Target::Followup(id) => (reqwest::Method::PATCH, Some(id.to_string())),
            Target::New => {
                if let (true, Some(fields)) = (self.answer.ephemeral, body.as_object_mut()) {
                    fields.insert("flags".to_owned(), json!(EPHEMERAL));
                }
                (reqwest::Method::POST, None)
            }
        };
        let written = self
            .answer
            .rest
            .interaction_message(method, &self.answer.token, message.as_deref(), Some(&body))
            .await;
        match written {
            Ok(message) => Ok(message.get("id").and_then(snowflake).unwrap_or_default()),
            Err(error) => {
                if token_gone(&error) {
                    state.expired = true;
                }
                Err(error)
            }
        }
    }

    /// Where the next final message goes: the original until it holds one, then the draft's
    /// follow-up, else a new one.
    fn next_target(state: &State) -> Target {
        if !state.original_final {
            Target::Original
        } else if let Some(id) = state.draft_followup {
            Target::Followup(id)
        } else {
            Target::New
        }
    }

    /// Whether a stopped answer was stopped by the end of its time (not by a person).
    fn cut(&self, stopped: bool) -> bool {
        stopped
            && self
                .answer
                .deadline()
                .is_some_and(|deadline| Instant::now() >= deadline)
    }

    /// What the sink says itself when an answer ends with nothing final shown: cut by the end
    /// of its time, stopped, or nothing said.
    fn closing_text(&self, stopped: bool) -> String {
        let key = if self.cut(stopped) {
            "ask-cut"
        } else if stopped {
            "ask-stopped"
        } else {
            "ask-no-answer"
        };
        locale::text(self.answer.locale, key)
    }
}

/// Discord's answer when an interaction's token no longer works: 401 Invalid Webhook Token
/// (50027), or 404 Unknown Webhook (10015).
fn token_gone(error: &SendError) -> bool {
    matches!(
        error,
        SendError::Refused { status: 401, .. }
            | SendError::Refused {
                code: 50027 | 10015,
                ..
            }
    )
}

/// A message of the answer: its text, notifying only `pings` (never `@everyone`, roles).
fn body_of(text: &str, pings: &Pings) -> Value {
    let users: Vec<String> = pings.users.iter().map(|user| user.0.to_string()).collect();
    json!({
        "content": text.chars().take(MESSAGE_MAX).collect::<String>(),
        "allowed_mentions": { "parse": [], "users": users },
    })
}

#[async_trait]
impl ChatSink for InteractionSink {
    async fn send_as(
        &self,
        voice: Option<&Voice>,
        channel: ChannelId,
        text: String,
        _reply_to: Option<MessageId>,
        pings: &Pings,
        key: Option<&str>,
    ) -> Result<MessageId, PortError> {
        let mut state = self.state.lock().await;
        if !self.expired(&state) {
            let target = Self::next_target(&state);
            match self.write(&mut state, &target, body_of(&text, pings)).await {
                Ok(id) => {
                    match target {
                        Target::Original => state.original_final = true,
                        Target::Followup(_) => state.draft_followup = None,
                        Target::New => {}
                    }
                    state.drafting = false;
                    return Ok(MessageId(id));
                }
                Err(error) if !state.expired => return Err(port_error(error)),
                Err(_) => {}
            }
        }
        // The token stopped working: the channel takes the rest, where it may.
        match &self.answer.channel {
            Some(sink) => sink.send_as(voice, channel, text, None, pings, key).await,
            None => Err(PortError::Unavailable {
                what: "discord",
                detail: "the interaction's answer can no longer be written".into(),
            }),
        }
    }

    async fn send_text(
        &self,
        channel: ChannelId,
        text: String,
        reply_to: Option<MessageId>,
        pings: &Pings,
        key: Option<&str>,
    ) -> Result<MessageId, PortError> {
        self.send_as(None, channel, text, reply_to, pings, key)
            .await
    }

    async fn draft(&self, _channel: ChannelId, text: &str) {
        // A draft never waits for a final message being written: it is skipped.
        let Ok(mut state) = self.state.try_lock() else {
            return;
        };
        let due = state
            .last_draft
            .is_none_or(|at| at.elapsed() >= DRAFT_EVERY);
        if state.over || self.expired(&state) || !due {
            return;
        }
        state.last_draft = Some(Instant::now());
        let room = MESSAGE_MAX - WRITING.chars().count();
        let shown: String = text.chars().take(room).collect();
        let body = body_of(&format!("{shown}{WRITING}"), &Pings::none());
        let target = Self::next_target(&state);
        match self.write(&mut state, &target, body).await {
            Ok(id) => {
                if matches!(target, Target::New) {
                    state.draft_followup = Some(id);
                }
                state.drafting = true;
            }
            Err(error) => tracing::debug!(%error, "an /ask draft was not shown"),
        }
    }

    fn shows_drafts(&self) -> bool {
        true
    }

    async fn reply_over(&self, _channel: ChannelId, stopped: bool) {
        let mut state = self.state.lock().await;
        if std::mem::replace(&mut state.over, true) || self.expired(&state) {
            return;
        }
        let closing = self.closing_text(stopped);
        let written = if !state.original_final {
            // Nothing final was said: the original says why, in place of its draft.
            let body = body_of(&closing, &Pings::none());
            self.write(&mut state, &Target::Original, body).await
        } else if let Some(id) = state.draft_followup.take() {
            // The rest of a stopped answer is not shown half-written.
            let method = reqwest::Method::DELETE;
            let token = &self.answer.token;
            let message = id.to_string();
            self.answer
                .rest
                .interaction_message(method, token, Some(&message), None)
                .await
                .map(|_| id)
        } else if self.cut(stopped) {
            // Cut by the end of its time: said below what was shown.
            let body = body_of(&closing, &Pings::none());
            self.write(&mut state, &Target::New, body).await
        } else {
            Ok(0)
        };
        if let Err(error) = written {
            tracing::warn!(%error, "could not settle an /ask's answer");
        }
    }

    async fn post_approval(
        &self,
        channel: ChannelId,
        card: &ApprovalCard,
    ) -> Result<MessageId, PortError> {
        // A card is a channel message: only where the answer could continue there.
        if self.answer.channel.is_none() {
            return Err(PortError::Unavailable {
                what: "chat",
                detail: "no approval card outside the channel's messages".into(),
            });
        }
        self.answer.bot.post_approval(channel, card).await
    }

    async fn close_approval(
        &self,
        channel: ChannelId,
        message: MessageId,
        card: &ApprovalCard,
        outcome: String,
    ) -> Result<(), PortError> {
        self.answer
            .bot
            .close_approval(channel, message, card, outcome)
            .await
    }

    /// A deferred answer shows Discord's own "thinking" until its first edit.
    async fn typing(&self, _channel: ChannelId) {}

    async fn send_sticker(
        &self,
        _channel: ChannelId,
        _sticker: &Sticker,
        _key: Option<&str>,
    ) -> ExpressionSend {
        ExpressionSend::Refused {
            reason: "no stickers in an interaction's answer".into(),
        }
    }

    async fn react(
        &self,
        _channel: ChannelId,
        _message: MessageId,
        _emoji: &Emoji,
    ) -> ExpressionSend {
        ExpressionSend::Refused {
            reason: "an /ask has no message to react to".into(),
        }
    }

    async fn unreact(
        &self,
        _channel: ChannelId,
        _message: MessageId,
        _emoji: &Emoji,
    ) -> Result<(), PortError> {
        Ok(())
    }

    /// Progress lines would take the answer's first message: the draft shows progress instead.
    async fn send_progress(&self, _channel: ChannelId, _text: String) {}

    async fn direct_message(&self, user: UserId, text: String) -> Result<MessageId, PortError> {
        self.answer.bot.direct_message(user, text).await
    }
}
