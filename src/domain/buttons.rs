//! Buttons on a reply (SPEC E2): *Stop* while it streams, then *Again* and 👍/👎 on its last
//! message. What a button belongs to travels in its custom id, which Discord hands back on a
//! press and only ever for a message the bot posted: no lookup is needed to know whose reply it
//! is, and a restart forgets nothing. Who may press what, and when a button has expired, is
//! decided here; the adapter only reads a press and carries the answer out.

use uuid::Uuid;

use crate::domain::scope::{MessageId, UserId};
use crate::domain::turn::TurnId;

/// A reply's buttons are taken off this long after its message was posted; an older one
/// pressed is answered that it expired (SPEC E2).
pub const EXPIRE_AFTER_MS: i64 = 15 * 60 * 1000;

/// How many new answers one question may get with *Again* (SPEC E2).
pub const AGAIN_MAX: u8 = 3;

/// What a custom id of this bot's buttons starts with (and its format's version).
const PREFIX: &str = "pb1";

/// Which buttons a message of a reply carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// None (taken off, or expired).
    Nothing,
    /// *Stop*: the reply is still streaming.
    Stop,
    /// *Again* (when the reply answers a message), 👍 and 👎: the reply is done.
    Done,
}

/// The reply a button belongs to: its turn, who asked, the message it answers, and how many
/// times *Again* made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyRef {
    pub turn: TurnId,
    pub requester: UserId,
    /// The message the reply answers (`None`: no Discord message, so no *Again*).
    pub trigger: Option<MessageId>,
    /// 0 for the first answer; each *Again* adds one.
    pub again: u8,
}

impl ReplyRef {
    /// What the reply of `turn` is to its buttons.
    pub fn of(turn: &crate::domain::turn::Turn) -> Self {
        Self {
            turn: turn.id,
            requester: turn.scope.user,
            trigger: turn.trigger,
            again: turn.again,
        }
    }
}

/// The buttons one message carries, whose reply they belong to, and the language of their
/// labels (the requester's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Buttons {
    pub shown: Shown,
    pub reply: ReplyRef,
    pub locale: crate::locale::Locale,
}

/// What a press asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Press {
    Stop,
    Again,
    Up,
    Down,
}

impl Press {
    const ALL: [Self; 4] = [Self::Stop, Self::Again, Self::Up, Self::Down];

    fn code(self) -> char {
        match self {
            Self::Stop => 's',
            Self::Again => 'a',
            Self::Up => 'u',
            Self::Down => 'd',
        }
    }

    /// The buttons of `shown`, in their order on the message.
    pub fn of(shown: Shown, reply: &ReplyRef) -> Vec<Self> {
        match shown {
            Shown::Nothing => Vec::new(),
            Shown::Stop => vec![Self::Stop],
            Shown::Done if reply.trigger.is_some() => vec![Self::Again, Self::Up, Self::Down],
            Shown::Done => vec![Self::Up, Self::Down],
        }
    }
}

/// One button: what it asks for, on whose reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ButtonId {
    pub press: Press,
    pub reply: ReplyRef,
}

impl ButtonId {
    /// Its custom id: `pb1:<press>:<turn>:<requester>:<trigger or 0>:<again>`, at most 86
    /// characters (Discord takes 100).
    pub fn encode(&self) -> String {
        let r = &self.reply;
        format!(
            "{PREFIX}:{}:{}:{}:{}:{}",
            self.press.code(),
            r.turn.0.simple(),
            r.requester.0,
            r.trigger.map_or(0, |m| m.0),
            r.again
        )
    }

    /// A custom id of this bot's buttons, or `None` for anything else (another format, another
    /// version, a field out of range).
    pub fn decode(id: &str) -> Option<Self> {
        if id.len() > 100 {
            return None;
        }
        let mut parts = id.split(':');
        if parts.next()? != PREFIX {
            return None;
        }
        let code = parts.next()?;
        let press = Press::ALL
            .into_iter()
            .find(|p| code.len() == 1 && code.starts_with(p.code()))?;
        let turn = Uuid::try_parse(parts.next()?).ok()?;
        let requester: u64 = parts.next()?.parse().ok()?;
        let trigger: u64 = parts.next()?.parse().ok()?;
        let again: u8 = parts.next()?.parse().ok()?;
        if parts.next().is_some() || again > AGAIN_MAX {
            return None;
        }
        Some(Self {
            press,
            reply: ReplyRef {
                turn: TurnId(turn),
                requester: UserId(requester),
                trigger: (trigger != 0).then_some(MessageId(trigger)),
                again,
            },
        })
    }
}

/// Why a press is not carried out; the presser is told, and only they see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The buttons are older than [`EXPIRE_AFTER_MS`].
    Expired,
    /// *Stop* by someone who neither asked nor may manage messages; *Again* by anyone but the
    /// requester.
    NotYours,
    /// *Again* after [`AGAIN_MAX`] new answers.
    NoMoreAgain,
}

/// Who pressed, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Presser {
    pub user: UserId,
    /// They may manage messages here (a moderator, as `/kill` reads it).
    pub moderator: bool,
}

/// Whether `presser` may have `button` carried out on a message posted at `posted_ms`, at
/// `now_ms`: *Stop* is the requester's or a moderator's (as `/kill`), *Again* the requester's
/// alone and at most [`AGAIN_MAX`] times, feedback anyone's; every button expires.
pub fn may_press(
    button: &ButtonId,
    presser: Presser,
    posted_ms: i64,
    now_ms: i64,
) -> Result<(), Refusal> {
    if now_ms.saturating_sub(posted_ms) > EXPIRE_AFTER_MS {
        return Err(Refusal::Expired);
    }
    let own = presser.user == button.reply.requester;
    match button.press {
        Press::Stop if !own && !presser.moderator => Err(Refusal::NotYours),
        Press::Again if !own || button.reply.trigger.is_none() => Err(Refusal::NotYours),
        Press::Again if button.reply.again >= AGAIN_MAX => Err(Refusal::NoMoreAgain),
        _ => Ok(()),
    }
}

/// A member's verdict on a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Up,
    Down,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Up => "up",
            Self::Down => "down",
        }
    }
}

/// Verdicts counted (one per member and turn: a later press replaces an earlier one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub up: u64,
    pub down: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(again: u8) -> ReplyRef {
        ReplyRef {
            turn: TurnId(Uuid::now_v7()),
            requester: UserId(1_234_567_890_123_456_789),
            trigger: Some(MessageId(u64::MAX)),
            again,
        }
    }

    // SPEC E2: a button's custom id carries its reply whole, within Discord's 100 characters,
    // and only this bot's own ids decode.
    #[test]
    fn a_custom_id_round_trips_within_the_limit() {
        for press in Press::ALL {
            let button = ButtonId {
                press,
                reply: reply(AGAIN_MAX),
            };
            let id = button.encode();
            assert!(id.len() <= 100, "{id}: {}", id.len());
            assert_eq!(ButtonId::decode(&id), Some(button));
        }
        let id = ButtonId {
            press: Press::Again,
            reply: reply(1),
        }
        .encode();
        for foreign in [
            "",
            "pb1",
            "pb2:s:x",
            &id.replace(":a:", ":x:"),
            &id.replace(":a:", ":aa:"),
            &format!("{id}:1"),
            &id[..id.len() - 2],
            "pb1:s:00000000000000000000000000000000:1:0:4",
        ] {
            assert_eq!(ButtonId::decode(foreign), None, "{foreign}");
        }
    }

    // SPEC E2: Stop is the requester's or a moderator's, Again the requester's only and three
    // times at most, feedback anyone's, and every button expires after 15 minutes.
    #[test]
    fn who_may_press_what() {
        let requester = Presser {
            user: UserId(1_234_567_890_123_456_789),
            moderator: false,
        };
        let stranger = Presser {
            user: UserId(5),
            moderator: false,
        };
        let moderator = Presser {
            user: UserId(6),
            moderator: true,
        };
        let button = |press, again| ButtonId {
            press,
            reply: reply(again),
        };
        let now = 10 * EXPIRE_AFTER_MS;
        let press = |b: ButtonId, p: Presser| may_press(&b, p, now - 1000, now);
        assert_eq!(press(button(Press::Stop, 0), requester), Ok(()));
        assert_eq!(press(button(Press::Stop, 0), moderator), Ok(()));
        assert_eq!(
            press(button(Press::Stop, 0), stranger),
            Err(Refusal::NotYours)
        );
        assert_eq!(press(button(Press::Again, 2), requester), Ok(()));
        assert_eq!(
            press(button(Press::Again, 0), moderator),
            Err(Refusal::NotYours)
        );
        assert_eq!(
            press(button(Press::Again, AGAIN_MAX), requester),
            Err(Refusal::NoMoreAgain)
        );
        assert_eq!(press(button(Press::Up, 0), stranger), Ok(()));
        assert_eq!(press(button(Press::Down, 0), stranger), Ok(()));
        let old = now - EXPIRE_AFTER_MS - 1;
        assert_eq!(
            may_press(&button(Press::Up, 0), stranger, old, now),
            Err(Refusal::Expired)
        );
        assert_eq!(
            may_press(&button(Press::Up, 0), stranger, old + 1, now),
            Ok(())
        );
    }

    // SPEC E2: a reply without a Discord message to answer again shows no Again.
    #[test]
    fn a_done_reply_shows_again_only_when_it_answers_a_message() {
        let mut r = reply(0);
        assert_eq!(
            Press::of(Shown::Done, &r),
            vec![Press::Again, Press::Up, Press::Down]
        );
        r.trigger = None;
        assert_eq!(Press::of(Shown::Done, &r), vec![Press::Up, Press::Down]);
        assert_eq!(Press::of(Shown::Stop, &r), vec![Press::Stop]);
        assert!(Press::of(Shown::Nothing, &r).is_empty());
    }
}
