//! `create_reminder`: a reminder for the person asking (or the channel), once or repeating, in
//! their time zone. It fires later as a quiet turn (`crate::engine::reminders`). Who set it and where
//! come from the turn; only its creator or its target may cancel it (`/reminders`).

use async_trait::async_trait;
use chrono_tz::Tz;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{ArgError, Tool, ToolContext, ToolError, ToolOutput};
use crate::config::RemindersConfig;
use crate::domain::ports::{NewReminder, Repeat};
use crate::domain::role::{Role, RoleSet};
use crate::domain::schedule::local_to_utc_ms;

fn utc() -> String {
    "UTC".to_owned()
}

const LOCAL_FORMAT: &str = "%Y-%m-%d %H:%M";

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    // What to remind about.
    pub text: String,
    /// Local "YYYY-MM-DD HH:MM", or give `in_minutes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    // In how many minutes from now (instead of `at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_minutes: Option<u32>,
    /// IANA, like "Asia/Tokyo".
    #[serde(default = "utc")]
    pub time_zone: String,
    // Once, daily or weekly.
    #[serde(default)]
    pub repeat: Repeat,
    /// Remind the channel, not the person.
    #[serde(default)]
    pub for_channel: bool,
}

pub struct CreateReminder {
    max_per_user: u32,
}

impl CreateReminder {
    pub fn new(config: &RemindersConfig) -> Self {
        Self {
            max_per_user: config.max_per_user,
        }
    }
}

#[async_trait]
impl Tool for CreateReminder {
    type Args = Args;
    const NAME: &'static str = "create_reminder";
    const ROLES: RoleSet = RoleSet::of(&[Role::Persona]);
    const DESCRIPTION: &'static str = "Remind the person you answer (or the channel) at a local \
        time or in some minutes, once or repeating. You deliver it when due.";

    fn validate(&self, args: &Args) -> Result<(), ArgError> {
        ArgError::check_len("$.text", &args.text, 1, 300)?;
        match (&args.at, args.in_minutes) {
            (Some(at), None) => {
                chrono::NaiveDateTime::parse_from_str(at.trim(), LOCAL_FORMAT)
                    .map_err(|_| ArgError::at("$.at", "must look like 2026-12-01 09:30"))?;
            }
            (None, Some(minutes)) => ArgError::check_range("$.in_minutes", minutes, 1, 525_600)?,
            _ => {
                return Err(ArgError::at(
                    "$",
                    "give exactly one of `at` and `in_minutes`",
                ));
            }
        }
        args.time_zone.parse::<Tz>().map_err(|_| {
            ArgError::at(
                "$.time_zone",
                "must be an IANA time zone such as Europe/Paris",
            )
        })?;
        Ok(())
    }

    /// A reminder for the whole channel speaks to everyone there: someone approves it first
    /// (SPEC E3).
    async fn approval(
        &self,
        ctx: &ToolContext<'_>,
        args: &Args,
    ) -> Result<Option<String>, ToolError> {
        if !args.for_channel {
            return Ok(None);
        }
        let locale = ctx.turn.locale;
        let mut when = match (&args.at, args.in_minutes) {
            (_, Some(minutes)) => crate::locale::text_with(
                locale,
                "approval-when-in",
                &[("minutes", minutes.to_string())],
            ),
            (Some(at), None) => crate::locale::text_with(
                locale,
                "approval-when-at",
                &[
                    ("at", at.trim().to_owned()),
                    ("zone", args.time_zone.clone()),
                ],
            ),
            (None, None) => String::new(),
        };
        if args.repeat != Repeat::Once {
            when.push_str(&crate::locale::text_with(
                locale,
                "approval-when-repeat",
                &[("repeat", args.repeat.as_str().to_owned())],
            ));
        }
        let text = args.text.trim().to_owned();
        Ok(Some(crate::locale::text_with(
            locale,
            "approval-what-channel-reminder",
            &[("when", when), ("text", text)],
        )))
    }

    async fn execute(
        &self,
        ctx: &ToolContext<'_>,
        args: Args,
        _cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let now = ctx.now_ms();
        let tz: Tz = args.time_zone.parse().unwrap_or(Tz::UTC);
        let due = match (&args.at, args.in_minutes) {
            (_, Some(minutes)) => now + i64::from(minutes) * 60_000,
            (Some(at), None) => chrono::NaiveDateTime::parse_from_str(at.trim(), LOCAL_FORMAT)
                .ok()
                .and_then(|local| local_to_utc_ms(tz, local))
                .ok_or_else(|| {
                    ToolError::business("invalid_time", "That local time does not exist.")
                })?,
            (None, None) => unreachable!("validated: one of at and in_minutes"),
        };
        if due <= now {
            return Err(ToolError::business(
                "reminder_in_the_past",
                "That time has already passed; pick a time in the future.",
            ));
        }
        let scope = ctx.scope();
        let reminders = &ctx.ports().reminders;
        if reminders.count_created_by(scope.user).await? >= self.max_per_user {
            return Err(ToolError::business(
                "reminder_limit",
                format!(
                    "This person already has {} reminders; cancel one first.",
                    self.max_per_user
                ),
            ));
        }
        let id = reminders
            .create(&NewReminder {
                server: scope.server,
                channel: scope.channel,
                creator: scope.user,
                target: (!args.for_channel).then_some(scope.user),
                persona: scope.persona.clone(),
                text: args.text.trim().to_owned(),
                due_at_ms: due,
                repeat: args.repeat,
                time_zone: tz.name().to_owned(),
                visibility: scope.visibility,
                locale: ctx.turn.locale,
                created_at_ms: now,
            })
            .await?;
        let local = chrono::TimeZone::timestamp_millis_opt(&tz, due)
            .single()
            .map(|t| t.format(LOCAL_FORMAT).to_string())
            .unwrap_or_default();
        Ok(ToolOutput::data(json!({
            "reminder_id": id,
            "due_local": local,
            "time_zone": tz.name(),
            "repeat": args.repeat.as_str(),
        }))
        .with_message("Saved. You will deliver it when it is due; /reminders lists and cancels."))
    }
}
