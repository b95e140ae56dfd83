//! Reminders coming due: each occurrence is taken exactly once across processes (a
//! compare-and-set on its due time) and becomes a quiet turn in its channel (its progress goes to
//! the thought log, SPEC T11). Repeats follow the reminder's time zone, daylight saving included;
//! occurrences missed while the bot was down fire once, not once per missed day.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::domain::ports::{Clock, Mention, NewQueuedMessage, Reminder, ReminderStore};
pub use crate::domain::schedule::{local_to_utc_ms, next_occurrence};
use crate::domain::scope::MessageId;
use crate::engine::orchestrator::Orchestrator;
use crate::locale;

/// A made-up message id for one occurrence: above every Discord snowflake, unique per reminder
/// and occurrence, so the queue keeps one entry per occurrence.
fn occurrence_id(reminder: &Reminder) -> MessageId {
    let id = u64::try_from(reminder.id).unwrap_or(0) & 0xff_ffff_ffff;
    MessageId((1 << 62) | (id << 20) | (u64::from(reminder.fired) & 0xf_ffff))
}

pub struct ReminderScheduler {
    store: Arc<dyn ReminderStore>,
    orchestrator: Orchestrator,
    clock: Arc<dyn Clock>,
    poll: Duration,
}

impl ReminderScheduler {
    pub fn new(
        store: Arc<dyn ReminderStore>,
        orchestrator: Orchestrator,
        clock: Arc<dyn Clock>,
        poll: Duration,
    ) -> Self {
        Self {
            store,
            orchestrator,
            clock,
            poll,
        }
    }

    /// Fires due reminders until `shutdown`.
    pub async fn run(self, shutdown: CancellationToken) {
        loop {
            self.fire_due().await;
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(self.poll) => {}
            }
        }
    }

    /// Fires every due occurrence this process wins; returns how many.
    pub async fn fire_due(&self) -> usize {
        let now = self.clock.now_ms();
        let due = match self.store.due(now, 50).await {
            Ok(due) => due,
            Err(error) => {
                tracing::warn!(%error, "cannot read due reminders");
                return 0;
            }
        };
        let mut fired = 0;
        for reminder in due {
            let next = next_occurrence(&reminder.reminder, now);
            match self
                .store
                .take_occurrence(reminder.id, reminder.reminder.due_at_ms, next)
                .await
            {
                Ok(true) => {
                    fired += 1;
                    self.orchestrator
                        .submit(quiet_message(&reminder, now))
                        .await;
                }
                Ok(false) => {} // another process took this occurrence
                Err(error) => {
                    tracing::warn!(reminder = reminder.id, %error, "cannot take a reminder")
                }
            }
        }
        fired
    }
}

/// The quiet turn's trigger: the persona is asked to deliver the reminder.
fn quiet_message(reminder: &Reminder, now_ms: i64) -> NewQueuedMessage {
    let r = &reminder.reminder;
    let whom = r.target.map_or_else(
        || locale::text(r.locale, "reminder-everyone"),
        |u| format!("<@{u}>"),
    );
    NewQueuedMessage {
        server: r.server,
        channel: r.channel,
        message: occurrence_id(reminder),
        author: r.creator,
        author_name: "reminder".to_owned(),
        content: locale::text_with(
            r.locale,
            "reminder-trigger",
            &[("whom", whom), ("text", r.text.clone())],
        ),
        follow_up: false,
        enqueued_at_ms: now_ms,
        persona: r.persona.clone(),
        visibility: r.visibility,
        locale: r.locale,
        quiet: true,
        attachments: Vec::new(),
        // The reminder's target may be notified; the trigger names them as `<@id>`, no name.
        mentions: r
            .target
            .map(|user| Mention {
                user,
                name: String::new(),
            })
            .into_iter()
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ports::{NewReminder, Repeat};
    use crate::domain::scope::{ChannelId, PersonaId, UserId, Visibility};
    use crate::locale::Locale;
    use chrono_tz::Tz;

    fn reminder(due: i64, repeat: Repeat, tz: &str) -> NewReminder {
        NewReminder {
            server: None,
            channel: ChannelId(1),
            creator: UserId(2),
            target: Some(UserId(2)),
            persona: PersonaId("aria".into()),
            text: "stretch".into(),
            due_at_ms: due,
            repeat,
            time_zone: tz.into(),
            visibility: Visibility::Dm,
            locale: Locale::En,
            created_at_ms: 0,
        }
    }

    fn paris(y: i32, m: u32, d: u32, h: u32) -> i64 {
        let local = chrono::NaiveDate::from_ymd_opt(y, m, d)
            .unwrap()
            .and_hms_opt(h, 0, 0)
            .unwrap();
        local_to_utc_ms(Tz::Europe__Paris, local).unwrap()
    }

    // Daily repeats keep the local time across a daylight-saving change.
    #[test]
    fn daily_repeats_keep_local_time_across_dst() {
        let due = paris(2026, 3, 28, 9);
        let r = reminder(due, Repeat::Daily, "Europe/Paris");
        let next = next_occurrence(&r, due).unwrap();
        assert_eq!(next, paris(2026, 3, 29, 9));
        assert_eq!(
            next - due,
            23 * 3_600_000,
            "the spring-forward day is 23 hours long"
        );
    }

    // SPEC C4: a reminder's quiet turn may notify its target (the trigger names them as `<@id>`),
    // and nobody else.
    #[test]
    fn a_reminder_turn_may_notify_its_target() {
        let mut r = reminder(0, Repeat::Once, "UTC");
        r.target = Some(UserId(5));
        let due = Reminder {
            id: 1,
            reminder: r,
            fired: 0,
        };
        let message = quiet_message(&due, 0);
        assert_eq!(message.mentions.len(), 1);
        assert_eq!(message.mentions[0].user, UserId(5));
        assert!(message.content.contains("<@5>"), "{}", message.content);
    }

    // Missed occurrences fire once: the next one is after now, not the next missed day.
    #[test]
    fn missed_occurrences_skip_to_the_future() {
        let due = paris(2026, 1, 1, 9);
        let r = reminder(due, Repeat::Weekly, "Europe/Paris");
        let now = paris(2026, 2, 3, 12);
        assert_eq!(next_occurrence(&r, now), Some(paris(2026, 2, 5, 9)));
        assert_eq!(
            next_occurrence(&reminder(due, Repeat::Once, "UTC"), now),
            None
        );
    }
}
