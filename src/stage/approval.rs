//! The approval gate (SPEC E3): a call whose tool says it needs approval waits, before it runs,
//! for Approve or Deny on a card in the channel. The card's words are the tool's own, written
//! from the validated arguments. Only this turn waits (the wait is a guarded phase, as a tool
//! run is); `/kill` ends the wait at once; no decision by the deadline is a denial. The request
//! is stored under an id made from the turn and the call, so a turn resumed after a restart
//! finds its card and any decision made meanwhile instead of asking again; once approved, the
//! call runs under the effect ledger like any other, so it runs once.

use std::time::Duration;

use crate::domain::approvals::{ApprovalId, ApprovalRequest, Approvers, Decision};
use crate::domain::ports::{ApprovalCard, PortError};
use crate::domain::thought_log::Notice;
use crate::domain::turn::{Turn, TurnStatus};
use crate::locale::{self, Locale};
use crate::tools::{PreparedCall, RegisteredTool, ToolContext, ToolSession};

/// How often a waiting call reads its request back (a press may be handled by another process).
const POLL: Duration = Duration::from_millis(400);

/// What the gate decided.
pub(super) enum Gate {
    /// No approval needed, or approved: run.
    Run,
    /// Not approved: why, in words for the model.
    Denied(String),
    /// `/kill` (or the shutdown) ended the wait.
    Abort(TurnStatus),
}

/// Asks for approval when the call needs it, and waits for the decision.
pub(super) async fn ask(
    session: &ToolSession,
    prepared: &PreparedCall,
    tool: &RegisteredTool,
) -> Gate {
    let turn = session.turn();
    let env = session.env();
    let ctx = ToolContext {
        turn,
        env,
        role: session.role(),
    };
    let ask = match tool.approval(&ctx, &prepared.arguments).await {
        Ok(Some(ask)) => ask,
        Ok(None) => return Gate::Run,
        // The tool's own run meets the same failure and reports it.
        Err(_) => return Gate::Run,
    };
    let ports = &env.ports;
    let timeout = env.config.turn.approval_timeout_secs;
    let now = ports.clock.now_ms();
    let request = ApprovalRequest {
        id: ApprovalId::of(turn.id, &prepared.identity),
        turn: turn.id,
        tool: prepared.name.to_owned(),
        what: ask.what,
        server: turn.scope.server,
        channel: turn.scope.channel,
        requester: turn.scope.user,
        approvers: if turn.approvals_by_moderators || ask.moderators_only {
            Approvers::Moderators
        } else {
            Approvers::Requester
        },
        deadline_ms: now.saturating_add(i64::try_from(timeout).unwrap_or(i64::MAX) * 1000),
    };
    let stored = match ports.approvals.open(&request, now).await {
        Ok(stored) => stored,
        Err(error) => {
            tracing::warn!(turn = %turn.id, %error, "an approval request could not be stored; the call does not run");
            return Gate::Denied("The approval request could not be stored.".to_owned());
        }
    };
    // An earlier run's request keeps its own deadline and card.
    let earlier = stored.request.deadline_ms != request.deadline_ms;
    let request = stored.request;
    let card = ApprovalCard {
        id: request.id,
        text: card_text(&request, turn.locale, timeout),
        locale: turn.locale,
    };
    let decision = match stored.decision {
        Decision::Pending => {
            let asked = Asked {
                card: stored.card,
                earlier,
            };
            await_decision(turn, ports, &request, &card, asked).await
        }
        decided => decided,
    };
    match decision {
        Decision::Approved { .. } => Gate::Run,
        Decision::Pending => Gate::Abort(TurnStatus::StoppedByUser),
        Decision::Denied { by } => Gate::Denied(format!("Denied by <@{by}>.")),
        Decision::TimedOut => Gate::Denied(format!("Nobody approved it within {timeout} s.")),
    }
}

/// Where a pending request stands: its card when noted, and whether an earlier run opened it.
struct Asked {
    card: Option<crate::domain::scope::MessageId>,
    earlier: bool,
}

/// A pending request: its card found or posted, the decision waited for, the card closed with
/// the outcome (left open for a stopping process's resumed turn), and the thought log told.
async fn await_decision(
    turn: &Turn,
    ports: &crate::domain::ports::Ports,
    request: &ApprovalRequest,
    card: &ApprovalCard,
    asked: Asked,
) -> Decision {
    let message = match asked.card {
        Some(message) => Some(message),
        None if asked.earlier => match posted_before(turn, ports, request).await {
            Some(message) => Some(message),
            None => post_card(turn, ports, request, card).await,
        },
        None => post_card(turn, ports, request, card).await,
    };
    let decision = wait(turn, ports, request, message.is_some()).await;
    // A stopping process leaves the card open: the resumed turn waits on it again.
    let resumes = decision == Decision::Pending && turn.stop.is_shutdown();
    if let Some(message) = message.filter(|_| !resumes) {
        let outcome = outcome_text(decision, turn.locale);
        if let Err(error) = ports
            .sink
            .close_approval(request.channel, message, card, outcome)
            .await
        {
            tracing::warn!(turn = %turn.id, %error, "an approval card could not be closed");
        }
    }
    announce(turn, ports, request, decision).await;
    decision
}

/// The card's text: what will happen, who may decide, and until when.
fn card_text(request: &ApprovalRequest, locale: Locale, timeout_secs: u64) -> String {
    let who = match request.approvers {
        Approvers::Requester => locale::text_with(
            locale,
            "approval-who-requester",
            &[("requester", request.requester.0.to_string())],
        ),
        Approvers::Moderators => locale::text(locale, "approval-who-moderators"),
    };
    locale::text_with(
        locale,
        "approval-card",
        &[
            ("tool", request.tool.clone()),
            ("what", request.what.clone()),
            ("who", who),
            ("minutes", timeout_secs.div_ceil(60).to_string()),
        ],
    )
}

/// What a closed card says happened.
fn outcome_text(decision: Decision, locale: Locale) -> String {
    match decision {
        Decision::Approved { by } => {
            locale::text_with(locale, "approval-approved", &[("by", by.0.to_string())])
        }
        Decision::Denied { by } => {
            locale::text_with(locale, "approval-denied", &[("by", by.0.to_string())])
        }
        Decision::TimedOut => locale::text(locale, "approval-timed-out"),
        Decision::Pending => locale::text(locale, "approval-withdrawn"),
    }
}

/// Posts the card and notes where; `None` when it could not be posted (nobody can approve).
async fn post_card(
    turn: &Turn,
    ports: &crate::domain::ports::Ports,
    request: &ApprovalRequest,
    card: &ApprovalCard,
) -> Option<crate::domain::scope::MessageId> {
    let message = match ports.sink.post_approval(request.channel, card).await {
        Ok(message) => message,
        Err(error) => {
            tracing::warn!(turn = %turn.id, %error, "an approval card could not be posted; the call does not run");
            return None;
        }
    };
    if let Err(error) = ports.approvals.set_card(request.id, message).await {
        tracing::warn!(turn = %turn.id, %error, "where an approval card is could not be stored");
    }
    Some(message)
}

/// The card an earlier run posted but did not get to note (it stopped between the post and its
/// record, SPEC D11): the bot's recent message in the channel that says what this request will
/// do. Not found (or the channel unreadable): `None`, and the card is posted.
async fn posted_before(
    turn: &Turn,
    ports: &crate::domain::ports::Ports,
    request: &ApprovalRequest,
) -> Option<crate::domain::scope::MessageId> {
    let page = ports
        .history
        .older(request.channel, None, 50, &turn.persona_name)
        .await
        .ok()?;
    let heading = locale::text_with(
        turn.locale,
        "approval-card",
        &[("tool", request.tool.clone())],
    );
    let heading = heading.lines().next().unwrap_or_default().to_owned();
    let found = page.into_iter().find(|m| {
        m.from_bot && m.content.starts_with(&heading) && m.content.contains(&request.what)
    })?;
    if let Err(error) = ports.approvals.set_card(request.id, found.id).await {
        tracing::warn!(turn = %turn.id, %error, "where an approval card is could not be stored");
    }
    tracing::info!(turn = %turn.id, message = %found.id, "an approval card posted before the restart was found; not posted again");
    Some(found.id)
}

/// Waits for a decision: a press (read back from the store), the deadline (a denial, unless a
/// press won), or `/kill` (`Pending`: withdrawn). Without a card nobody can decide: a denial.
async fn wait(
    turn: &Turn,
    ports: &crate::domain::ports::Ports,
    request: &ApprovalRequest,
    asked: bool,
) -> Decision {
    let _guarded = turn.progress.guard();
    loop {
        match ports.approvals.get(request.id).await {
            Ok(Some(stored)) if stored.decision != Decision::Pending => return stored.decision,
            Ok(_) => {}
            Err(error) => read_failed(turn, &error),
        }
        let now = ports.clock.now_ms();
        if !asked || now >= request.deadline_ms {
            return match ports
                .approvals
                .decide(request.id, Decision::TimedOut, now)
                .await
            {
                Ok(true) | Err(_) => Decision::TimedOut,
                // A press came first: it stands.
                Ok(false) => match ports.approvals.get(request.id).await {
                    Ok(Some(stored)) => stored.decision,
                    _ => Decision::TimedOut,
                },
            };
        }
        let left = Duration::from_millis(u64::try_from(request.deadline_ms - now).unwrap_or(0));
        tokio::select! {
            biased;
            () = turn.stop.kill_token().cancelled() => return Decision::Pending,
            () = tokio::time::sleep(POLL.min(left)) => {}
        }
    }
}

fn read_failed(turn: &Turn, error: &PortError) {
    tracing::debug!(turn = %turn.id, %error, "an approval request could not be read; trying again");
}

/// The thought log hears what was asked and what became of it.
async fn announce(
    turn: &Turn,
    ports: &crate::domain::ports::Ports,
    request: &ApprovalRequest,
    decision: Decision,
) {
    let Some(server) = turn.scope.thought_log_server() else {
        return;
    };
    let notice = Notice::Approval {
        tool: request.tool.clone(),
        what: request.what.clone(),
        outcome: decision.state().to_owned(),
        by: match decision {
            Decision::Approved { by } | Decision::Denied { by } => Some(by),
            _ => None,
        },
    };
    ports.thought_log.post(server, notice).await;
}
