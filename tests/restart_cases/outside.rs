//! An outside tool's effect runs once across kill -9 (SPEC E4, E3, D5), with the real binary
//! and a real MCP server (streamable HTTP, served by the test process, so it outlives the bot).

use super::support::db::TestDb;
use super::support::fake_discord::{MANAGE_GUILD, Slash};
use super::support::fake_openai::Reply;
use super::support::mcp_server::{log_lines, serve_http};
use super::{GENERAL, GUILD, Stage, approve_the_card, cards, resumed_on_the_same_card};

const MODERATOR: u64 = 302;

fn effects(log: &std::path::Path) -> usize {
    log_lines(log)
        .iter()
        .filter(|l| l.starts_with("effect add_note"))
        .count()
}

// SPEC E4, E3, D5: an outside tool with an effect waits for approval; killed (-9) while it
// waits, the resumed turn waits on the same card; approved, the call reaches the server; killed
// again after it ran, the next start reuses its outcome: the server saw the effect once.
pub async fn an_outside_effect_runs_once_across_kill_9_after_approval(db: TestDb) {
    let stage = Stage::new(db).await;
    let log = stage.dir.path().join("mcp.log");
    let url = serve_http(&log).await;
    let local = stage.dir.path().join("local.toml");
    let mut config = std::fs::read_to_string(&local).expect("local.toml");
    config.push_str(&format!(
        "[mcp]\nservers = [{{ name = \"tests\", url = \"{url}\" }}]\n"
    ));
    std::fs::write(&local, config).expect("local.toml");
    let note = || Reply::call("call_1", "tests__add_note", r#"{"text":"buy milk"}"#);

    stage.openai.push(note());
    let bot = stage.start_bot(1).await;
    let id = stage
        .discord
        .slash(Slash {
            name: "tools".into(),
            options: serde_json::json!([{ "name": "mcp", "type": 1, "options": [
                { "name": "action", "type": 4, "value": 1 },
                { "name": "server", "type": 3, "value": "tests" }] }]),
            guild_id: Some(GUILD),
            channel_id: GENERAL,
            user_id: MODERATOR,
            user_name: "moderator".into(),
            permissions: MANAGE_GUILD,
            locale: "en-US".into(),
        })
        .await;
    stage
        .until(&bot, "/tools mcp enable is answered", |s| {
            s.discord
                .interaction_responses()
                .iter()
                .any(|(i, _)| *i == id)
        })
        .await;
    stage.mention("note: buy milk").await;
    stage
        .until(&bot, "the approval card", |s| cards(s).len() == 1)
        .await;
    bot.kill();

    let bot = resumed_on_the_same_card(&stage, note()).await;
    assert_eq!(effects(&log), 0, "nothing runs unapproved");
    approve_the_card(&stage).await;
    stage
        .until(&bot, "the approved call ran", |s| {
            s.openai.requests().len() == 3
        })
        .await;
    assert_eq!(effects(&log), 1, "{:?}", log_lines(&log));
    bot.kill();

    stage.openai.push(note());
    stage.openai.push(Reply::text(&["Noted."]));
    let bot = stage.start_bot(3).await;
    stage.until_answered(&bot).await;
    assert_eq!(effects(&log), 1, "{}", bot.log());
    bot.terminate();
}
