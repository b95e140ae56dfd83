//! SPEC A5 (user install, the part built so far): the commands that make sense where the bot is
//! not a member are registered for user install, and answered there through the interaction
//! alone, through serenity and poise against the fake Discord, with the default configuration.

pub mod support {
    pub mod e2e;
    pub mod fake_discord;
    pub mod fake_images;
    pub mod fake_openai;
    pub mod harness;
}

use serde_json::json;
use support::e2e::*;
use support::fake_discord::Slash;
use support::harness::Behaviour;

/// A server the bot is not in, and one of its channels; a private channel between users.
const ELSEWHERE: u64 = 555;
const ELSEWHERE_CHANNEL: u64 = 556;
const GROUP_DM: u64 = 557;

// SPEC A5: `/help` and `/forget-me` are registered for user install in servers, DMs and private
// channels; a user runs them in a server the bot is not in and in a private channel, and they
// are answered with nothing posted in the channel; `/status`, a server's own, is not offered
// there, and a manager of that server is not shown the moderators' commands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_and_forget_me_work_where_the_bot_is_not_a_member() {
    let e = E2e::start(Behaviour::succeed(), vec![]).await;
    for name in ["help", "forget-me"] {
        let (_, command) = e
            .discord
            .commands()
            .into_iter()
            .find(|(_, c)| c["name"] == name)
            .expect("registered");
        assert_eq!(command["integration_types"], json!([0, 1]), "{command}");
        assert_eq!(command["contexts"], json!([0, 1, 2]), "{command}");
    }
    e.store_fact(None, Some(ALICE), "likes tea").await;
    let slash = |name: &str, guild: Option<u64>, channel: u64| {
        Slash::new(name, json!([]), guild, channel, ALICE, "alice")
    };

    // A member who manages that server is not shown commands the bot has nowhere there.
    let mut help = slash("help", Some(ELSEWHERE), ELSEWHERE_CHANNEL);
    help.permissions = MANAGE_GUILD;
    let id = e.discord.try_user_slash(help).await.expect("offered");
    let help = content_of(&e.answer_to(id).await);
    assert!(help.contains("I am Aria"), "{help}");
    assert!(!help.contains("Manage Server"), "{help}");
    let at_home = e.slash(MODERATOR, "help", MANAGE_GUILD, json!([])).await;
    assert!(content_of(&at_home).contains("Manage Server"), "{at_home}");

    let id = e
        .discord
        .try_user_slash(slash("forget-me", None, GROUP_DM))
        .await
        .expect("offered");
    let forgot = content_of(&e.answer_to(id).await);
    assert!(forgot.contains('1'), "{forgot}");

    let refused = e
        .discord
        .try_user_slash(slash("status", Some(ELSEWHERE), ELSEWHERE_CHANNEL))
        .await;
    assert!(refused.is_err(), "/status is not for user install");
    assert!(e.posted(ELSEWHERE_CHANNEL).is_empty());
    assert!(e.posted(GROUP_DM).is_empty());
    e.stop().await;
}
