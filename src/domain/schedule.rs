//! Reminder times: a local time in a time zone as an instant, and a repeating reminder's next
//! occurrence (daylight saving included). Pure domain logic, used by the `create_reminder` tool
//! and the scheduler.

use chrono::{Days, TimeZone};
use chrono_tz::Tz;

use crate::domain::ports::{NewReminder, Repeat};

/// Milliseconds since the epoch for a local time in `tz` (the earlier one when ambiguous; an
/// hour later when it falls in a daylight-saving gap).
pub fn local_to_utc_ms(tz: Tz, local: chrono::NaiveDateTime) -> Option<i64> {
    let resolved = tz.from_local_datetime(&local).earliest().or_else(|| {
        // Checked: a model may name the last representable day.
        let later = local.checked_add_signed(chrono::Duration::hours(1))?;
        tz.from_local_datetime(&later).earliest()
    })?;
    Some(resolved.timestamp_millis())
}

/// The next due time after `after_ms`, or `None` for a one-off.
pub fn next_occurrence(reminder: &NewReminder, after_ms: i64) -> Option<i64> {
    let step = match reminder.repeat {
        Repeat::Once => return None,
        Repeat::Daily => Days::new(1),
        Repeat::Weekly => Days::new(7),
    };
    let tz: Tz = reminder.time_zone.parse().unwrap_or(Tz::UTC);
    let mut local = tz
        .timestamp_millis_opt(reminder.due_at_ms)
        .single()?
        .naive_local();
    // Bounded: a reminder missed for years still ends the loop.
    for _ in 0..10_000 {
        local = local.checked_add_days(step)?;
        let next = local_to_utc_ms(tz, local)?;
        if next > after_ms {
            return Some(next);
        }
    }
    None
}
