//! `/kill` (SPEC C6): stops the bot's reply in this channel, the requester's own or (with Manage
//! Messages) everyone's, and says what it stopped.

use serenity::all::Permissions;

use super::shared::{locale_of, permissions, reply};
use crate::discord::data::{Context, Error};
use crate::domain::scope::{ChannelId, UserId};
use crate::domain::turn::ToolEnding;
use crate::engine::orchestrator::{KillReach, KillReport};
use crate::locale::{self, Locale};

/// What `/kill` says, in the invoker's language: whose reply it stopped and how many waiting
/// messages it dropped, the requester's own or everyone's (SPEC C6).
pub fn kill_text(report: &KillReport, locale: Locale) -> String {
    let KillReport::Stopped {
        reach,
        turn_stopped,
        tool,
        dropped,
    } = report
    else {
        return match report {
            KillReport::Denied => locale::text(locale, "kill-denied"),
            _ => locale::text(locale, "kill-nothing"),
        };
    };
    let (stopped_key, dropped_key) = match reach {
        KillReach::Own => ("kill-stopped-own", "kill-dropped-own"),
        KillReach::Channel => ("kill-stopped", "kill-dropped-all"),
    };
    let mut lines = Vec::new();
    if *turn_stopped {
        lines.push(locale::text(locale, stopped_key));
    }
    if let Some(tool) = tool {
        let key = match tool.ending {
            ToolEnding::Done => "kill-tool-done",
            ToolEnding::Cancelled => "kill-tool-cancelled",
            ToolEnding::MayStillFinish => "kill-tool-may-still-finish",
        };
        lines.push(locale::text_with(
            locale,
            key,
            &[("tool", tool.name.clone())],
        ));
    }
    if *dropped > 0 || lines.is_empty() {
        lines.push(locale::text_with(
            locale,
            dropped_key,
            &[("count", dropped.to_string())],
        ));
    }
    lines.join("\n")
}

/// Stop the bot's reply in this channel.
#[poise::command(slash_command)]
pub async fn kill(ctx: Context<'_>) -> Result<(), Error> {
    let locale = locale_of(ctx);
    let can_manage = permissions(ctx).contains(Permissions::MANAGE_MESSAGES);
    let report = ctx
        .data()
        .orchestrator
        .kill(
            ChannelId(ctx.channel_id().get()),
            UserId(ctx.author().id.get()),
            can_manage,
        )
        .await;
    reply(ctx, kill_text(&report, locale)).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::turn::StoppedTool;

    // SPEC C6: the /kill reply says what was stopped, whose, and how many waiting messages went.
    #[test]
    fn kill_replies_say_what_was_stopped() {
        let report = KillReport::Stopped {
            reach: KillReach::Channel,
            turn_stopped: true,
            tool: Some(StoppedTool {
                name: "plan_image".into(),
                ending: ToolEnding::MayStillFinish,
            }),
            dropped: 2,
        };
        let text = kill_text(&report, Locale::En);
        assert!(text.contains("plan_image") && text.contains('2'), "{text}");
        assert!(text.contains("may still finish"), "{text}");
        assert!(text.contains("everyone"), "{text}");
        for locale in Locale::ALL {
            let own = KillReport::Stopped {
                reach: KillReach::Own,
                turn_stopped: true,
                tool: None,
                dropped: 3,
            };
            let own = kill_text(&own, locale);
            assert!(own.contains('3') && !own.contains("kill-"), "{own}");
            assert_ne!(own, kill_text(&report, locale));
        }
        assert!(kill_text(&KillReport::NothingRunning, Locale::Ja).contains("何も"));
        assert!(!kill_text(&KillReport::Denied, Locale::ZhTw).starts_with("kill-"));
    }
}
