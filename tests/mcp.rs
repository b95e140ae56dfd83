//! SPEC E4 end to end: outside tools from real MCP servers built with `rmcp` (tests/support/
//! mcp_server.rs), over stdio (this test binary started again by the bot) and streamable HTTP,
//! through the real start-up, serenity and poise against the fake Discord, the fake model and a
//! real SQLite file, with the default configuration but for the servers.

pub mod support {
    pub mod e2e;
    pub mod fake_discord;
    pub mod fake_images;
    pub mod fake_openai;
    pub mod harness;
    pub mod mcp_server;
}

use std::path::{Path, PathBuf};

use persona_bot::config::McpServerConfig;
use serde_json::{Value, json};
use support::e2e::*;
use support::fake_discord::{ButtonPress, button_ids};
use support::fake_openai::Reply;
use support::harness::Behaviour;
use support::mcp_server::{SECRET, log_lines, serve_http, serve_stdio_if_child, stdio_command};

/// Not a test: the stdio server, when the bot starts this binary as one (see
/// `support::mcp_server::stdio_command`, which runs it with `--ignored`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the stdio MCP server the tests start, not a test"]
async fn stdio_server_child() {
    serve_stdio_if_child().await;
}

fn server(name: &str, entry: Value) -> McpServerConfig {
    let mut entry = entry;
    entry["name"] = json!(name);
    serde_json::from_value(entry).expect("an [[mcp.servers]] entry")
}

/// A fresh log file for a server.
fn log_file(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("mcp.log")
}

/// The bot with one HTTP server named `tests`, and `replies` from the model.
async fn with_http(replies: Vec<Reply>) -> (E2e, tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = log_file(&dir);
    let url = serve_http(&log).await;
    let e = E2e::start_with(Behaviour::succeed(), replies, |c| {
        c.mcp.servers = vec![server("tests", json!({ "url": url }))];
    })
    .await;
    (e, dir, log)
}

/// The bot with one stdio server named `tests`.
async fn with_stdio(
    replies: Vec<Reply>,
    configure: impl FnOnce(&mut persona_bot::config::Config),
) -> (E2e, tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = log_file(&dir);
    let (command, args) = stdio_command("stdio_server_child", &log);
    let e = E2e::start_with(Behaviour::succeed(), replies, |c| {
        c.mcp.servers = vec![server("tests", json!({ "command": command, "args": args }))];
        configure(c);
    })
    .await;
    (e, dir, log)
}

/// `/tools mcp <action> [server]` as a moderator; the answer's text.
async fn mcp(e: &E2e, action: u64, server: Option<&str>) -> String {
    let mut options = vec![json!({ "name": "action", "type": 4, "value": action })];
    if let Some(server) = server {
        options.push(json!({ "name": "server", "type": 3, "value": server }));
    }
    let answer = e
        .slash(
            MODERATOR,
            "tools",
            MANAGE_GUILD,
            json!([{ "name": "mcp", "type": 1, "options": options }]),
        )
        .await;
    content_of(&answer)
}

const LIST: u64 = 0;
const ENABLE: u64 = 1;

/// Waits until the server's tools are listed (the bot connects in the background).
async fn until_listed(e: &E2e) {
    for _ in 0..100 {
        if mcp(e, LIST, None).await.contains("connected: yes") {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the MCP server was never connected");
}

/// The names of the tools the model was offered in request `n`.
fn offered(e: &E2e, n: usize) -> Vec<String> {
    e.openai.requests()[n].body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// What the model was told a call came to: the first tool message of request `n`.
async fn tool_result(e: &E2e, n: usize) -> String {
    e.until("the model hears the outcome", |e| {
        e.openai.requests().len() > n
    })
    .await;
    e.openai.requests()[n].body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == json!("tool")).cloned())
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_default()
}

fn count(log: &Path, prefix: &str) -> usize {
    log_lines(log)
        .iter()
        .filter(|l| l.starts_with(prefix))
        .count()
}

async fn until_logged(e: &E2e, log: &Path, prefix: &str) {
    let log = log.to_path_buf();
    let prefix = prefix.to_owned();
    e.until(&format!("the server logs {prefix}"), move |_| {
        count(&log, &prefix) > 0
    })
    .await;
}

/// The approval card in #general, once it is there.
async fn card(e: &E2e) -> Value {
    let is_card = |m: &Value| {
        m["content"]
            .as_str()
            .is_some_and(|c| c.contains("Approval needed"))
    };
    e.until("the approval card", |e| {
        e.discord.history(GENERAL).iter().any(is_card)
    })
    .await;
    e.discord
        .history(GENERAL)
        .into_iter()
        .find(is_card)
        .expect("card")
}

/// `user` presses Approve on the card; the bot's callback.
async fn approve(e: &E2e, card: &Value, user: u64) -> Value {
    let custom_id = button_ids(card)
        .into_iter()
        .find(|id| id.split(':').nth(1) == Some("y"))
        .expect("button");
    let id = card["id"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("id");
    let p = ButtonPress::new(&e.discord, id, &custom_id, user);
    let id = e.discord.press(p).await.expect("a press Discord sends");
    e.answer_to(id).await
}

// SPEC E4: a server's tools are offered only where a moderator turned it on (off by default),
// as `server__tool` with the server's own schema; a read-only tool runs without approval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outside_tools_are_offered_only_where_turned_on() {
    let (e, _dir, log) = with_http(vec![
        Reply::text(&["Hi."]),
        Reply::call("call_1", "tests__lookup", r#"{"query":"moon"}"#),
        Reply::text(&["The moon."]),
    ])
    .await;
    until_listed(&e).await;
    e.mention(ALICE, "alice", "hello").await;
    e.until("the first answer", |e| {
        e.texts(GENERAL).iter().any(|t| t == "Hi.")
    })
    .await;
    assert!(
        !offered(&e, 0).iter().any(|n| n.starts_with("tests__")),
        "{:?}",
        offered(&e, 0)
    );
    let enabled = mcp(&e, ENABLE, Some("tests")).await;
    assert!(enabled.contains("offered here now"), "{enabled}");
    assert!(mcp(&e, LIST, None).await.contains("on here: yes"));
    e.mention(ALICE, "alice", "what is up there?").await;
    let result = tool_result(&e, 2).await;
    let names = offered(&e, 1);
    for name in ["tests__lookup", "tests__add_note", "tests__wipe"] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }
    let lookup = e.openai.requests()[1].body["tools"]
        .as_array()
        .and_then(|t| {
            t.iter()
                .find(|t| t["function"]["name"] == "tests__lookup")
                .cloned()
        })
        .expect("lookup");
    assert_eq!(
        lookup["function"]["parameters"]["required"],
        json!(["query"])
    );
    assert!(result.contains("found: moon"), "{result}");
    assert_eq!(count(&log, "call lookup"), 1);
    assert!(
        !e.discord
            .history(GENERAL)
            .iter()
            .any(|m| m.to_string().contains("Approval needed")),
        "a lookup needs no approval"
    );
    e.stop().await;
}

// SPEC E4, S4: arguments that fail the tool's schema are refused at their JSON path and never
// reach the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_that_fail_the_schema_never_reach_the_server() {
    let (e, _dir, log) = with_http(vec![
        Reply::call("call_1", "tests__lookup", r#"{"query":5}"#),
        Reply::text(&["Sorry."]),
    ])
    .await;
    until_listed(&e).await;
    mcp(&e, ENABLE, Some("tests")).await;
    e.mention(ALICE, "alice", "look up five").await;
    let result = tool_result(&e, 1).await;
    assert!(result.contains("invalid_arguments"), "{result}");
    assert!(result.contains("$.query"), "{result}");
    assert_eq!(count(&log, "call"), 0, "{:?}", log_lines(&log));
    e.stop().await;
}

// SPEC E4, E3: a tool with an effect waits for approval; approved, it runs once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_effect_waits_for_approval_and_runs_once() {
    let (e, _dir, log) = with_http(vec![
        Reply::call("call_1", "tests__add_note", r#"{"text":"buy milk"}"#),
        Reply::text(&["Noted."]),
    ])
    .await;
    until_listed(&e).await;
    mcp(&e, ENABLE, Some("tests")).await;
    e.mention(ALICE, "alice", "note: buy milk").await;
    let card = card(&e).await;
    let text = card["content"].as_str().unwrap_or_default();
    assert!(text.contains("tests__add_note"), "{text}");
    assert!(text.contains("buy milk"), "{text}");
    assert_eq!(count(&log, "call"), 0, "nothing runs before approval");
    approve(&e, &card, ALICE).await;
    let result = tool_result(&e, 1).await;
    assert!(result.contains("noted"), "{result}");
    assert_eq!(count(&log, "effect add_note"), 1);
    e.stop().await;
}

// SPEC E4: a destructive tool is a moderator's decision, whatever the server's policy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destructive_tool_needs_a_moderator() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = log_file(&dir);
    let url = serve_http(&log).await;
    let e = E2e::start_with(
        Behaviour::succeed(),
        vec![
            Reply::call("call_1", "tests__wipe", "{}"),
            Reply::text(&["Wiped."]),
        ],
        |c| {
            c.mcp.servers = vec![server("tests", json!({ "url": url, "approval": "never" }))];
        },
    )
    .await;
    until_listed(&e).await;
    mcp(&e, ENABLE, Some("tests")).await;
    e.mention(ALICE, "alice", "wipe the notes").await;
    let card = card(&e).await;
    let refused = approve(&e, &card, ALICE).await;
    assert!(content_of(&refused).contains("may not decide"), "{refused}");
    assert_eq!(count(&log, "effect wipe"), 0);
    approve(&e, &card, MODERATOR).await;
    let result = tool_result(&e, 1).await;
    assert!(result.contains("wiped"), "{result}");
    assert_eq!(count(&log, "effect wipe"), 1);
    e.stop().await;
}

// SPEC E4: `/kill` during a slow call stops the turn and tells the server
// (`notifications/cancelled`), over stdio.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_during_a_slow_call_tells_the_server() {
    let (e, _dir, log) = with_stdio(
        vec![
            Reply::call("call_1", "tests__slow", "{}"),
            Reply::text(&["unused"]),
        ],
        |_| {},
    )
    .await;
    until_listed(&e).await;
    mcp(&e, ENABLE, Some("tests")).await;
    e.mention(ALICE, "alice", "take your time").await;
    until_logged(&e, &log, "call slow").await;
    let killed = e.slash(ALICE, "kill", 0, json!([])).await;
    assert!(!content_of(&killed).is_empty(), "{killed}");
    until_logged(&e, &log, "cancelled slow").await;
    e.stop().await;
}

// SPEC E4, T5: a call past its timeout (`tools.timeouts_secs` under its full name) is stopped
// by the watchdog, the server is told, and the model hears it timed out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_its_timeout_is_cancelled_at_the_server() {
    let (e, _dir, log) = with_stdio(
        vec![
            Reply::call("call_1", "tests__slow", "{}"),
            Reply::text(&["Too slow."]),
        ],
        |c| {
            c.tools.timeouts_secs.insert("tests__slow".to_owned(), 1);
        },
    )
    .await;
    until_listed(&e).await;
    mcp(&e, ENABLE, Some("tests")).await;
    e.mention(ALICE, "alice", "take your time").await;
    let result = tool_result(&e, 1).await;
    assert!(result.contains("timeout"), "{result}");
    until_logged(&e, &log, "cancelled slow").await;
    e.stop().await;
}

// SPEC E4: a server that dies is started again, and its tools work again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_comes_back() {
    let (e, _dir, log) = with_stdio(
        vec![
            Reply::call("call_1", "tests__crash", "{}"),
            Reply::text(&["Oops."]),
            Reply::call("call_2", "tests__lookup", r#"{"query":"sun"}"#),
            Reply::text(&["The sun."]),
        ],
        |_| {},
    )
    .await;
    until_listed(&e).await;
    mcp(&e, ENABLE, Some("tests")).await;
    e.mention(ALICE, "alice", "crash").await;
    let first = tool_result(&e, 1).await;
    assert!(first.contains("server_unavailable"), "{first}");
    let log_for = log.clone();
    e.until("the server started again", move |_| {
        count(&log_for, "started") >= 2
    })
    .await;
    until_listed(&e).await;
    e.until("the first turn ended", |e| {
        e.texts(GENERAL).iter().any(|t| t == "Oops.")
    })
    .await;
    e.mention(ALICE, "alice", "and now?").await;
    let second = tool_result(&e, 3).await;
    assert!(second.contains("found: sun"), "{second}");
    e.stop().await;
}

// SPEC E4, D13: a secret in a tool's result is redacted in the thought log and for the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_in_a_result_is_redacted() {
    let (e, _dir, _log) = with_http(vec![
        Reply::call("call_1", "tests__fail", "{}"),
        Reply::text(&["It failed."]),
    ])
    .await;
    until_listed(&e).await;
    e.set_thought_log().await;
    mcp(&e, ENABLE, Some("tests")).await;
    e.mention(ALICE, "alice", "try it").await;
    let result = tool_result(&e, 1).await;
    assert!(result.contains("tool_error"), "{result}");
    assert!(result.contains("upstream refused"), "{result}");
    assert!(!result.contains(SECRET), "{result}");
    e.until("the thought log's notice", |e| {
        e.posted(THOUGHTS)
            .iter()
            .any(|m| m.to_string().contains("tests__fail"))
    })
    .await;
    let log = serde_json::to_string(&e.posted(THOUGHTS)).expect("json");
    assert!(log.contains("upstream refused"), "{log}");
    assert!(!log.contains(SECRET), "{log}");
    e.stop().await;
}

// SPEC E4: a 10 MB result reaches the model cut to `mcp.result_max_bytes`, marked as cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_result_is_cut_to_the_bound() {
    let (e, _dir, _log) = with_http(vec![
        Reply::call("call_1", "tests__big", "{}"),
        Reply::text(&["Lots."]),
    ])
    .await;
    until_listed(&e).await;
    mcp(&e, ENABLE, Some("tests")).await;
    e.mention(ALICE, "alice", "everything").await;
    let result = tool_result(&e, 1).await;
    let bound = persona_bot::config::Config::shipped_defaults()
        .mcp
        .result_max_bytes;
    assert!(
        result.contains("\"truncated\":true"),
        "{}",
        &result[..200.min(result.len())]
    );
    assert!(result.len() as u64 <= bound + 512, "{} bytes", result.len());
    assert!(result.len() as u64 >= bound / 2, "{} bytes", result.len());
    e.stop().await;
}

// SPEC E4: a server that changes its tool list (`notifications/tools/list_changed`) has its
// new tools offered from the next turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_tool_list_is_taken() {
    let (e, _dir, _log) = with_stdio(
        vec![
            Reply::call("call_1", "tests__grow", "{}"),
            Reply::text(&["Grown."]),
            Reply::call("call_2", "tests__extra", "{}"),
            Reply::text(&["Extra."]),
        ],
        |_| {},
    )
    .await;
    until_listed(&e).await;
    mcp(&e, ENABLE, Some("tests")).await;
    e.mention(ALICE, "alice", "grow").await;
    e.until("the first turn ended", |e| {
        e.texts(GENERAL).iter().any(|t| t == "Grown.")
    })
    .await;
    assert!(!offered(&e, 0).iter().any(|n| n == "tests__extra"));
    for _ in 0..100 {
        if mcp(&e, LIST, None).await.contains("tools: 9") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    e.mention(ALICE, "alice", "and the new one").await;
    let result = tool_result(&e, 3).await;
    assert!(
        offered(&e, 2).iter().any(|n| n == "tests__extra"),
        "{:?}",
        offered(&e, 2)
    );
    assert!(result.contains("extra ran"), "{result}");
    e.stop().await;
}

// SPEC E4, S2: an outside tool is in the roles its entry names (the persona's alone by default):
// the reviewer neither sees nor may call it, and a server this server did not turn on offers
// nothing. Through the real MCP client, against the HTTP server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outside_tool_is_refused_to_a_role_without_it() {
    use persona_bot::domain::role::Role;
    use persona_bot::tools::{SessionError, ToolEnv};
    use std::sync::Arc;
    let dir = tempfile::tempdir().expect("tempdir");
    let log = log_file(&dir);
    let url = serve_http(&log).await;
    let mut h = support::harness::Harness::new();
    let mut config = (*h.config).clone();
    config.mcp.servers = vec![server("tests", json!({ "url": url }))];
    let hub = persona_bot::mcp::McpHub::new(&config);
    let shutdown = persona_bot::shutdown::Shutdown::new();
    hub.start(&shutdown);
    hub.first_attempts().await;
    h.env = Arc::new(ToolEnv {
        ports: h.env.ports.clone(),
        config: h.config.clone(),
        reviewer: None,
        outside: Some(hub),
    });
    let scope = persona_bot::testkit::public_scope();
    let locale = persona_bot::locale::Locale::En;
    let on = Arc::new(
        persona_bot::domain::turn::Turn::new(scope.clone(), locale)
            .outside_servers(vec!["tests".to_owned()]),
    );
    let lookup = json!({"query": "x"});
    let persona = h.session(Role::Persona, &on);
    assert!(persona.prepare("tests__lookup", lookup.clone()).is_ok());
    let reviewer = h.session(Role::Reviewer, &on);
    assert!(
        !reviewer
            .offered_names()
            .iter()
            .any(|n| n.starts_with("tests__"))
    );
    assert!(matches!(
        reviewer.prepare("tests__lookup", lookup.clone()),
        Err(SessionError::Denied { .. })
    ));
    let off = h.turn(scope);
    assert!(matches!(
        h.session(Role::Persona, &off)
            .prepare("tests__lookup", lookup),
        Err(SessionError::UnknownTool { .. })
    ));
    assert_eq!(count(&log, "call"), 0);
    shutdown.stop(std::time::Duration::from_secs(5)).await;
}
