//! Approvals (SPEC E3): a tool call that needs someone's yes waits for Approve or Deny on a card
//! that says, in the bot's own words from the validated arguments, what will happen. Who may
//! decide is the server's policy; silence until the deadline is a denial. A request's id comes
//! from its turn and call, so a turn resumed after a restart finds its request (and its card,
//! and a decision made while no process waited) instead of asking again.

use uuid::Uuid;

use crate::domain::scope::{ChannelId, MessageId, ServerId, UserId};
use crate::domain::turn::TurnId;

/// What a custom id of an approval card's buttons starts with (and its format's version).
const PREFIX: &str = "pa1";

/// One request for approval: the same id for the same call of the same turn, in every run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ApprovalId(pub Uuid);

impl ApprovalId {
    /// The request of the call `identity` (name and canonical arguments) in `turn`.
    pub fn of(turn: TurnId, identity: &str) -> Self {
        use sha2::Digest as _;
        let digest = sha2::Sha256::new()
            .chain_update(b"approval")
            .chain_update(turn.0.as_bytes())
            .chain_update(identity.as_bytes())
            .finalize();
        let mut bytes = [0u8; 16];
        for (to, from) in bytes.iter_mut().zip(digest.iter()) {
            *to = *from;
        }
        Self(uuid::Builder::from_custom_bytes(bytes).into_uuid())
    }
}

impl std::fmt::Display for ApprovalId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0.simple())
    }
}

/// Who may decide a server's approvals (SPEC E3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Approvers {
    /// The member the turn answers, or a moderator (the default).
    #[default]
    Requester,
    /// Moderators only (members who can manage messages).
    Moderators,
}

impl Approvers {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Requester => "requester",
            Self::Moderators => "moderators",
        }
    }

    pub fn from_name(name: &str) -> Self {
        match name {
            "moderators" => Self::Moderators,
            _ => Self::Requester,
        }
    }

    /// Whether `presser` (a moderator or not) may decide a request `requester` caused.
    pub fn allow(self, requester: UserId, presser: UserId, moderator: bool) -> bool {
        moderator || (self == Self::Requester && presser == requester)
    }
}

/// What became of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Pending,
    Approved {
        by: UserId,
    },
    Denied {
        by: UserId,
    },
    /// Nobody decided before the deadline: a denial.
    TimedOut,
}

impl Decision {
    pub fn state(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved { .. } => "approved",
            Self::Denied { .. } => "denied",
            Self::TimedOut => "timed_out",
        }
    }

    /// From a stored state and decider.
    pub fn from_stored(state: &str, by: Option<UserId>) -> Self {
        match (state, by) {
            ("approved", Some(by)) => Self::Approved { by },
            ("denied", Some(by)) => Self::Denied { by },
            ("timed_out", _) => Self::TimedOut,
            _ => Self::Pending,
        }
    }
}

/// A request as stored: what the card says, where it is, who may decide, until when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRequest {
    pub id: ApprovalId,
    pub turn: TurnId,
    pub tool: String,
    /// What will happen, in the bot's words (never the model's).
    pub what: String,
    pub server: Option<ServerId>,
    pub channel: ChannelId,
    pub requester: UserId,
    pub approvers: Approvers,
    /// No decision by then is a denial.
    pub deadline_ms: i64,
}

/// A stored request and what became of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredApproval {
    pub request: ApprovalRequest,
    pub decision: Decision,
    /// The card, once posted.
    pub card: Option<MessageId>,
}

/// A press on a card: approve or deny, which request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApprovalButton {
    pub approve: bool,
    pub id: ApprovalId,
}

impl ApprovalButton {
    /// `pa1:<y|n>:<id>` (38 characters).
    pub fn encode(&self) -> String {
        let code = if self.approve { 'y' } else { 'n' };
        format!("{PREFIX}:{code}:{}", self.id)
    }

    /// A card button's custom id, or `None` for anything else.
    pub fn decode(id: &str) -> Option<Self> {
        let mut parts = id.split(':');
        if parts.next()? != PREFIX {
            return None;
        }
        let approve = match parts.next()? {
            "y" => true,
            "n" => false,
            _ => return None,
        };
        let uuid = Uuid::try_parse(parts.next()?).ok()?;
        if parts.next().is_some() {
            return None;
        }
        Some(Self {
            approve,
            id: ApprovalId(uuid),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // SPEC E3: a request's id is the same for the same call of the same turn (a resumed turn
    // finds it), and differs for another call or turn.
    #[test]
    fn a_request_is_found_again_by_its_turn_and_call() {
        let turn = TurnId::new();
        let id = ApprovalId::of(turn, "create_reminder{\"text\":\"a\"}");
        assert_eq!(id, ApprovalId::of(turn, "create_reminder{\"text\":\"a\"}"));
        assert_ne!(id, ApprovalId::of(turn, "create_reminder{\"text\":\"b\"}"));
        assert_ne!(
            id,
            ApprovalId::of(TurnId::new(), "create_reminder{\"text\":\"a\"}")
        );
        let button = ApprovalButton { approve: true, id };
        assert_eq!(ApprovalButton::decode(&button.encode()), Some(button));
        for foreign in [
            "pa1:x:00",
            "pb1:y:0",
            "pa1:y",
            &format!("{}:1", button.encode()),
        ] {
            assert_eq!(ApprovalButton::decode(foreign), None, "{foreign}");
        }
    }

    // SPEC E3: under the default policy the requester or a moderator decides; under
    // "moderators" only a moderator.
    #[test]
    fn who_may_decide() {
        let (requester, other) = (UserId(1), UserId(2));
        assert!(Approvers::Requester.allow(requester, requester, false));
        assert!(Approvers::Requester.allow(requester, other, true));
        assert!(!Approvers::Requester.allow(requester, other, false));
        assert!(!Approvers::Moderators.allow(requester, requester, false));
        assert!(Approvers::Moderators.allow(requester, other, true));
    }
}
