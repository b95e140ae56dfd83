//! Starting a channel's next turn: the server's settings read (a message waits while they cannot
//! be), a reminder's turn kept to the channel's rules (SPEC C2), the persona it speaks as and the
//! voice it posts under (A1), the tools it is offered (T4), and the turn future, whose panic ends
//! it as an error turn with the localized notice instead of silencing the channel.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::status_reactions::{self, TurnEnded};
use super::worker::{RunningTurn, TurnFuture, Worker, released};
use super::{OrchestratorDeps, Pending, Route, panic_text};
use crate::domain::ports::{NoHistory, Pings, ServerSettings, Voice};
use crate::domain::role::Role;
use crate::domain::scope::{MessageId, Scope, ServerId};
use crate::domain::turn::{Turn, TurnId, TurnStatus};
use crate::engine::context::Trigger;
use crate::engine::passes::{TurnDeps, TurnEnd, TurnReport, run_turn};
use crate::locale;
use crate::stage::deliberate;
use crate::tools::ToolEnv;

/// How long a channel waits before it tries a server's settings again after a failed read.
const SETTINGS_RETRY: Duration = Duration::from_secs(5);

impl Worker {
    /// A turn the bot starts itself (a due reminder) passes the channel rules a message passes
    /// (SPEC C2): in a channel they close it is skipped (its entry forgotten), and the
    /// moderators told. Returns whether it was skipped.
    async fn closed_to_quiet(&mut self, pending: &Pending, settings: &ServerSettings) -> bool {
        let m = &pending.message;
        let Some(server) = m.server.filter(|_| m.quiet) else {
            return false;
        };
        if crate::domain::admission::channel_rules(m.channel, None, settings).is_ok() {
            return false;
        }
        tracing::info!(channel = %self.channel, "a reminder's turn is skipped: the channel's rules close it to the bot");
        let notice = crate::domain::thought_log::Notice::QuietTurnSkipped { channel: m.channel };
        self.deps
            .turn
            .env
            .ports
            .thought_log
            .post(server, notice)
            .await;
        // Its creator hears of it where the bot can still reach them.
        let text = crate::locale::text_with(
            m.locale,
            "reminder-not-delivered",
            &[("channel", format!("<#{}>", m.channel))],
        );
        let sink = &self.deps.turn.env.ports.sink;
        if let Err(error) = sink.direct_message(m.author, text).await {
            tracing::info!(channel = %self.channel, %error, "the reminder's creator could not be told in a DM (their DMs may be closed); the thought log says it");
        }
        self.forget(pending).await;
        true
    }

    pub(super) async fn start(&mut self, pending: Pending) {
        let m = &pending.message;
        let settings = match m.server {
            None => ServerSettings::default(),
            Some(server) => match self.deps.settings.settings(server).await {
                Ok(settings) => settings,
                Err(error) => {
                    // Never with guessed settings (a server's review would be skipped): the
                    // message waits, first in line, until the store answers.
                    tracing::debug!(%server, %error, "settings unavailable; the turn waits");
                    self.queue.wait_first(pending);
                    self.settings_retry = Some(Instant::now() + SETTINGS_RETRY);
                    return;
                }
            },
        };
        if self.closed_to_quiet(&pending, &settings).await {
            return;
        }
        if let Some(route) = pending
            .route
            .as_ref()
            .filter(|r| r.deadline.is_some_and(|at| Instant::now() >= at))
        {
            // It waited past the time its answer could be written: nothing can be said.
            tracing::info!(channel = %self.channel, "an /ask waited past its interaction's time; not answered");
            route.sink.reply_over(self.channel, true).await;
            return;
        }
        let persona = self.deps.personas.for_turn(&settings, &m.persona).await;
        let admission = deliberate::admit(
            &self.deps.turn.registry,
            Role::Persona,
            &self.deps.packs,
            &settings.deliberate,
            &m.content,
        );
        let turn = self.turn_for(&pending, &settings, &persona, admission);
        let in_channel = pending.route.is_none();
        let status_reactions =
            (settings.status_reactions && m.server.is_some() && !m.quiet && in_channel)
                .then(|| self.follow_status(&turn, m.message));
        let trigger = trigger_of(&pending);
        let deps = match &pending.route {
            Some(route) => routed(&self.deps, route),
            None => self.deps.clone(),
        };
        let for_future = turn.clone();
        let future: TurnFuture = Box::pin(async move {
            let run = run_turn(
                &deps.turn,
                &deps.config.turn,
                for_future.clone(),
                &persona,
                &trigger,
            );
            match AssertUnwindSafe(run).catch_unwind().await {
                Ok(report) => report,
                Err(panic) => crashed(&deps, &for_future, panic_text(panic.as_ref())).await,
            }
        });
        let typing_delay = Duration::from_millis(self.deps.config.turn.typing_delay_ms);
        self.running = Some(RunningTurn {
            turn,
            started: Instant::now(),
            pending,
            future,
            follow_ups: 0,
            next_typing: Instant::now() + typing_delay,
            typing_started: false,
            status_reactions,
        });
    }

    /// The turn that answers `pending` under the server's `settings`, as `persona`.
    fn turn_for(
        &self,
        pending: &Pending,
        settings: &ServerSettings,
        persona: &crate::domain::ports::Persona,
        admission: crate::domain::turn::ToolAdmission,
    ) -> Arc<Turn> {
        let m = &pending.message;
        let scope = Scope {
            server: m.server,
            channel: m.channel,
            user: m.author,
            persona: persona.id.clone(),
            visibility: m.visibility,
        };
        let again = pending.again.map_or(0, |a| a.count);
        // An `/ask`'s trigger is an interaction, no message to react to or carry buttons.
        let message = (!m.quiet && pending.route.is_none()).then_some(m.message);
        let by_moderators = settings.approvers == crate::domain::approvals::Approvers::Moderators;
        Arc::new(
            Turn::new(scope, m.locale)
                .with_id(TurnId::for_answer(
                    m.channel,
                    m.message,
                    pending.edit,
                    again,
                ))
                .quiet(m.quiet)
                .drafting(settings.drafting)
                .review_policy(settings.review.clone())
                .reply_style(settings.reply_style)
                .voice(own_voice(m.server, settings))
                .persona_name(&persona.display_name)
                // A quiet turn's trigger is not a Discord message: nothing to react to.
                .trigger(message)
                .buttons(!settings.hide_buttons && message.is_some())
                .again(again)
                .approvals_by_moderators(by_moderators)
                .outside_servers(settings.mcp_servers.clone())
                .admission(admission)
                // Not a child of the channel's token: a stopping process lets the turn finish
                // first, and stops it itself (see `wind_down`).
                .in_channel(self.activity.clone(), CancellationToken::new()),
        )
    }

    /// Starts the turn's status reactions on `message` (SPEC E1); the returned sender tells
    /// them how the turn ended.
    fn follow_status(&self, turn: &Arc<Turn>, message: MessageId) -> TurnEnded {
        let (ended, watch) = tokio::sync::watch::channel(None);
        self.tasks.spawn(status_reactions::follow(
            self.deps.turn.env.ports.sink.clone(),
            self.channel,
            message,
            turn.clone(),
            watch,
        ));
        ended
    }
}

/// What a queued message is to its turn.
fn trigger_of(pending: &Pending) -> Trigger {
    let m = &pending.message;
    Trigger {
        message: m.message,
        author: m.author,
        author_name: m.author_name.clone(),
        content: m.content.clone(),
        attachments: m.attachments.clone(),
        mentions: m.mentions.clone(),
        // A quiet turn's trigger is not a Discord message, nor is an `/ask`'s: there is
        // nothing to reply to.
        reply: pending.waited && !m.quiet && pending.route.is_none(),
    }
}

/// The dependencies of a turn answered through `route` (SPEC A5): its sink, and no channel
/// history where the bot is not a member.
fn routed(deps: &Arc<OrchestratorDeps>, route: &Route) -> Arc<OrchestratorDeps> {
    let env = &deps.turn.env;
    let mut ports = env.ports.clone();
    ports.sink = route.sink.clone();
    if route.no_history {
        ports.history = Arc::new(NoHistory);
    }
    let env = ToolEnv {
        ports,
        config: env.config.clone(),
        reviewer: env.reviewer.clone(),
        outside: env.outside.clone(),
    };
    Arc::new(OrchestratorDeps {
        turn: TurnDeps {
            env: Arc::new(env),
            ..deps.turn.clone()
        },
        ..(**deps).clone()
    })
}

/// Whom a server's turn posts as: its own persona, when it has one (a server that never chose
/// one keeps the bot user, its replies and pings).
fn own_voice(server: Option<ServerId>, settings: &ServerSettings) -> Option<Voice> {
    let persona = settings.persona.as_ref()?;
    Some(Voice {
        server: server?,
        name: persona.display_name.clone(),
        avatar_url: persona.avatar_url.clone(),
    })
}

/// A turn that panicked: logged once, the localized error notice in its channel, an error turn.
async fn crashed(deps: &OrchestratorDeps, turn: &Turn, panic: String) -> TurnReport {
    tracing::error!(
        channel = %turn.scope.channel, turn = %turn.id, %panic,
        "turn panicked; it ends with the error notice and the channel goes on"
    );
    let notice = locale::text(turn.locale, "turn-crashed");
    let sink = &deps.turn.env.ports.sink;
    if let Err(error) = sink
        .send_text(turn.scope.channel, notice, None, &Pings::none(), None)
        .await
    {
        tracing::warn!(channel = %turn.scope.channel, %error, "could not post the error notice");
    }
    TurnReport {
        end: TurnEnd::Crashed,
        ..released(TurnStatus::Error)
    }
}
