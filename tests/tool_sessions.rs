//! Role-scoped tool sessions and the built-in tools, through `ToolSession` and the stage. One test
//! (or more) per SPEC S item.

// The shared fakes this binary uses (tests/support/). Public, so that what it leaves
// unused of them is not dead code.
pub mod support {
    pub mod harness;
}

use persona_bot::domain::history::EntryStatus;
use persona_bot::domain::ports::EventOutcome;
use persona_bot::domain::role::Role;
use persona_bot::domain::thought_log::{FailureKind, Notice};
use persona_bot::domain::turn::TurnStatus;
use persona_bot::stage::{ToolCallOutcome, execute_tool_call};
use persona_bot::testkit::{dm_scope, public_scope};
use persona_bot::tools::session::CallError;
use persona_bot::tools::{SessionError, ToolError};
use serde_json::{Value, json};
use support::harness::{Behaviour, Harness, code, entry};
use tokio_util::sync::CancellationToken;

fn names(specs: &[Value]) -> Vec<&str> {
    specs
        .iter()
        .map(|s| s["function"]["name"].as_str().unwrap())
        .collect()
}

// ---------------------------------------------------------------- S1

// SPEC S1
#[tokio::test]
async fn each_role_session_lists_only_its_tools_and_its_submit_tool() {
    let h = Harness::new();
    let turn = h.turn(public_scope());
    let reviewer = h.session(Role::Reviewer, &turn).specifications();
    assert_eq!(
        names(&reviewer),
        vec!["recall_facts", "submit_review", "probe"]
    );
    let planner = h.session(Role::ImagePlanner, &turn).specifications();
    assert_eq!(names(&planner), vec!["plan_image"]);
    let persona = h.session(Role::Persona, &turn).specifications();
    assert!(names(&persona).contains(&"select_sticker_for_response"));
    assert!(!names(&persona).contains(&"submit_review"));
    // Every specification is an OpenAI function with a schema from the argument type.
    for spec in persona.iter().chain(&reviewer).chain(&planner) {
        assert_eq!(spec["type"], "function");
        assert_eq!(
            spec["function"]["parameters"]["additionalProperties"],
            false
        );
    }
}

// A turn the bot started itself (a due reminder, a random one) is not offered create_reminder, and
// calling it by name is refused before its arguments are read (hiding is not authorizing), so a
// reminder cannot re-arm itself.
#[tokio::test]
async fn a_quiet_turn_may_not_set_a_reminder() {
    let h = Harness::new();
    let asked = h.turn(public_scope());
    let persona = h.session(Role::Persona, &asked);
    assert!(names(&persona.specifications()).contains(&"create_reminder"));
    let quiet = std::sync::Arc::new(
        persona_bot::domain::turn::Turn::new(public_scope(), persona_bot::locale::Locale::En)
            .quiet(true),
    );
    let session = h.session(Role::Persona, &quiet);
    assert!(!names(&session.specifications()).contains(&"create_reminder"));
    assert!(!session.offered_names().contains(&"create_reminder"));
    let refused = session.prepare("create_reminder", json!({"not": "even valid"}));
    assert!(
        matches!(refused, Err(SessionError::Denied { .. })),
        "{refused:?}"
    );
}

// SPEC S1: the reviewer's verdict is typed and validated server-side.
#[tokio::test]
async fn reviewer_verdict_is_typed_and_validated() {
    let h = Harness::new();
    let turn = h.turn(public_scope());
    let session = h.session(Role::Reviewer, &turn);
    let cancel = CancellationToken::new();
    let verdict = json!({"decision": "reject", "findings": ["names a real person"], "correction_allowed": true});
    let output = session
        .execute("submit_review", verdict.clone(), &cancel)
        .await
        .unwrap();
    assert!(output.end_turn);
    assert_eq!(output.data, Some(verdict));
    let empty_reject = json!({"decision": "reject"});
    let err = session
        .execute("submit_review", empty_reject, &cancel)
        .await
        .unwrap_err();
    let CallError::Refused(SessionError::InvalidArguments { error, .. }) = err else {
        panic!("expected invalid arguments, got {err:?}");
    };
    assert_eq!(error.path, "$.findings");
    let bad_decision = json!({"decision": "maybe"});
    assert!(
        session
            .execute("submit_review", bad_decision, &cancel)
            .await
            .is_err()
    );
}

// ---------------------------------------------------------------- S2

// SPEC S2: a guessed name of a tool never shown is refused before its arguments are read.
#[tokio::test]
async fn reviewer_calling_plan_image_is_denied_before_arguments_are_read() {
    let h = Harness::new();
    let turn = h.turn(public_scope());
    let session = h.session(Role::Reviewer, &turn);
    // These arguments are invalid for plan_image; a denial (not "invalid arguments") proves the
    // role was checked first.
    let err = session
        .execute(
            "plan_image",
            json!({"block_id": "b1", "kind": "image"}),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        err,
        CallError::Refused(SessionError::Denied {
            name: "plan_image".into(),
            role: Role::Reviewer
        })
    );
    assert!(h.fakes.plans.plans().is_empty(), "nothing ran");
    let events = h.fakes.events.events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].outcome, EventOutcome::Denied);
    assert_eq!(events[0].outcome.as_str(), "tool_denied");
    assert_eq!(events[0].role, Role::Reviewer);
    assert_eq!(events[0].tool, "plan_image");
}

// SPEC S2: the same through the stage: the model gets `tool_denied`, nothing runs.
#[tokio::test]
async fn hidden_tool_guessed_through_the_stage_is_denied() {
    let h = Harness::new();
    let turn = h.turn(public_scope());
    let entry = entry(
        h.call(
            Role::ImagePlanner,
            &turn,
            "remember_fact",
            r#"{"fact":"x"}"#,
        )
        .await,
    );
    assert_eq!(code(&entry), "tool_denied");
    assert!(h.fakes.memory.all_facts().is_empty());
    assert_eq!(h.fakes.events.events()[0].outcome, EventOutcome::Denied);
    let notices = h.fakes.thought_log.notices();
    assert!(matches!(
        &notices[..],
        [(
            _,
            Notice::ToolFailed {
                kind: FailureKind::Denied,
                ..
            }
        )]
    ));
}

// SPEC S2: an allowed role with valid arguments runs.
#[tokio::test]
async fn allowed_role_with_valid_arguments_runs() {
    let h = Harness::new();
    let turn = h.turn(public_scope());
    let output = h
        .session(Role::Reviewer, &turn)
        .execute("probe", json!({"n": 3}), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(output.data, None);
    assert_eq!(h.probe.runs(), 1);
    assert_eq!(h.fakes.events.events()[0].outcome, EventOutcome::Succeeded);
}

// ---------------------------------------------------------------- S3

// SPEC S3: an extra field cannot widen scope; scope comes from the turn.
#[tokio::test]
async fn arguments_cannot_widen_scope() {
    let h = Harness::new();
    let turn = h.turn(public_scope());
    let widened = r#"{"fact":"likes tea","about":"requester","user_id":999,"server_id":1}"#;
    let refused = entry(h.call(Role::Persona, &turn, "remember_fact", widened).await);
    assert_eq!(code(&refused), "invalid_arguments");
    let reason = refused.response["reason"].as_str().unwrap();
    assert!(reason.contains("unknown field `server_id`"), "{reason}");
    assert!(h.fakes.memory.all_facts().is_empty());

    let ok = entry(
        h.call(
            Role::Persona,
            &turn,
            "remember_fact",
            r#"{"fact":"likes tea","about":"requester"}"#,
        )
        .await,
    );
    assert_eq!(ok.status, EntryStatus::Succeeded);
    let facts = h.fakes.memory.all_facts();
    assert_eq!(facts.len(), 1);
    assert_eq!(facts[0].server, turn.scope.server);
    assert_eq!(facts[0].about, Some(turn.scope.user));
    assert_eq!(facts[0].persona, turn.scope.persona);
}

// SPEC S3: in a DM a "server-wide" fact is about the person; the limit applies per bucket.
#[tokio::test]
async fn remember_fact_respects_scope_and_limit() {
    let h = Harness::build_with_config(
        Default::default(),
        Behaviour::succeed(),
        |r| r,
        |c| c.memory.facts_per_user = 1,
    );
    let turn = h.turn(dm_scope());
    let first = entry(
        h.call(Role::Persona, &turn, "remember_fact", r#"{"fact":"a"}"#)
            .await,
    );
    assert_eq!(first.response["result"]["about"], "requester");
    let full = entry(
        h.call(Role::Persona, &turn, "remember_fact", r#"{"fact":"b"}"#)
            .await,
    );
    assert_eq!(code(&full), "memory_full");
    assert_eq!(h.fakes.memory.all_facts().len(), 1);
    let recalled = entry(h.call(Role::Persona, &turn, "recall_facts", "{}").await);
    assert_eq!(
        recalled.response["result"]["facts"],
        json!([{"id": 1, "fact": "a", "about": "requester"}])
    );
}

// ---------------------------------------------------------------- S4

// SPEC S4: no call, unknown tool, bad arguments, denied, execution failure and business error
// are told apart by the model (codes) and the thought log (kinds).
#[tokio::test]
async fn every_error_class_is_distinguishable() {
    let h = Harness::with_probe(Behaviour::Fail(ToolError::Failed {
        code: None,
        message: "exploded".into(),
    }));
    let turn = h.turn(public_scope());
    let session = h.session(Role::Persona, &turn);
    let no_call = execute_tool_call(&session, None, &mut Vec::new()).await;
    assert_eq!(
        no_call,
        ToolCallOutcome::Abort {
            status: TurnStatus::Error
        }
    );

    let cases = [
        (
            "summon_dragon",
            r#"{}"#,
            "unknown_tool",
            FailureKind::UnknownTool,
        ),
        (
            "plan_image",
            r#"{"prompt":"x","part":{"set":"s","index":"one","total":2}}"#,
            "invalid_arguments",
            FailureKind::InvalidArguments,
        ),
        (
            "submit_review",
            r#"{"decision":"pass"}"#,
            "tool_denied",
            FailureKind::Denied,
        ),
        ("probe", r#"{"n":1}"#, "tool_error", FailureKind::Execution),
        (
            "select_sticker_for_response",
            r#"{"name":"nope"}"#,
            "unknown_sticker",
            FailureKind::Business,
        ),
    ];
    for (name, args, want_code, want_kind) in cases {
        let entry = entry(h.call(Role::Persona, &turn, name, args).await);
        assert_eq!(code(&entry), want_code, "{name}");
        let notices = h.fakes.thought_log.notices();
        let Some((_, Notice::ToolFailed { kind, .. })) = notices.last() else {
            panic!("no notice for {name}");
        };
        assert_eq!(*kind, want_kind, "{name}");
    }
    // The bad-arguments case names the JSON path of the first error.
    let bad = entry(h.call(Role::Persona, &turn, "plan_image", cases[1].1).await);
    assert!(
        bad.response["reason"]
            .as_str()
            .unwrap()
            .contains("$.part.index"),
        "{}",
        bad.response
    );
    // The unknown tool lists what is available.
    let unknown = entry(h.call(Role::Persona, &turn, "summon_dragon", "{}").await);
    assert!(
        unknown.response["reason"]
            .as_str()
            .unwrap()
            .contains("plan_image")
    );
}

// ---------------------------------------------------------------- S5

// SPEC S5: a plan is recorded, not executed.
#[tokio::test]
async fn plan_image_records_a_plan_and_reports_not_executed() {
    let h = Harness::new();
    let turn = h.turn(public_scope());
    let entry = entry(
        h.call(
            Role::Persona,
            &turn,
            "plan_image",
            r#"{"prompt":" a red fox ","aspect":"portrait"}"#,
        )
        .await,
    );
    let result = &entry.response["result"];
    assert_eq!(result["executed"], false);
    assert_eq!(result["status"], "planned");
    let plans = h.fakes.plans.plans();
    assert_eq!(plans.len(), 1);
    assert_eq!(result["plan_id"], plans[0].id.0.as_str());
    assert_eq!(plans[0].prompt, "a red fox");
    assert_eq!(plans[0].aspect, "portrait");
    assert_eq!(plans[0].turn, turn.id);
    assert_eq!(Some(plans[0].channel), Some(turn.scope.channel));
    assert!(
        entry.response["message"]
            .as_str()
            .unwrap()
            .contains("not made yet")
    );
}

// SPEC S5: identical plans are deduplicated; distinct plans are capped per turn.
#[tokio::test]
async fn plans_are_deduplicated_and_capped_per_turn() {
    let h = Harness::build_with_config(
        Default::default(),
        Behaviour::succeed(),
        |r| r,
        |c| c.image.max_plans_per_turn = 2,
    );
    let turn = h.turn(public_scope());
    let a = entry(
        h.call(
            Role::Persona,
            &turn,
            "plan_image",
            r#"{"prompt":"fox","aspect":"square"}"#,
        )
        .await,
    );
    let a_again = entry(
        h.call(
            Role::Persona,
            &turn,
            "plan_image",
            r#"{"aspect":"square","prompt":"fox"}"#,
        )
        .await,
    );
    assert_eq!(
        a.response["result"]["plan_id"],
        a_again.response["result"]["plan_id"]
    );
    assert_eq!(a_again.response["result"]["deduplicated"], true);
    entry(
        h.call(Role::Persona, &turn, "plan_image", r#"{"prompt":"owl"}"#)
            .await,
    );
    let over = entry(
        h.call(Role::Persona, &turn, "plan_image", r#"{"prompt":"cat"}"#)
            .await,
    );
    assert_eq!(code(&over), "plan_limit_reached");
    assert_eq!(h.fakes.plans.plans().len(), 2);
}

// SPEC S5: a promised set planned incompletely fails loudly before delivery.
#[tokio::test]
async fn incomplete_promised_set_fails_the_completeness_check() {
    let h = Harness::new();
    let turn = h.turn(public_scope());
    let part =
        |i| format!(r#"{{"prompt":"fox {i}","part":{{"set":"foxes","index":{i},"total":3}}}}"#);
    entry(h.call(Role::Persona, &turn, "plan_image", &part(1)).await);
    entry(h.call(Role::Persona, &turn, "plan_image", &part(3)).await);
    let err = turn.plans(|p| p.verify_complete()).unwrap_err();
    assert_eq!(err.to_string(), "image plans incomplete: missing foxes 2/3");
    entry(h.call(Role::Persona, &turn, "plan_image", &part(2)).await);
    assert!(turn.plans(|p| p.verify_complete()).is_ok());
    let conflict = entry(
        h.call(
            Role::Persona,
            &turn,
            "plan_image",
            r#"{"prompt":"x","part":{"set":"foxes","index":1,"total":2}}"#,
        )
        .await,
    );
    assert_eq!(code(&conflict), "plan_part_conflict");
}

// ---------------------------------------------------------------- S6

// SPEC S6: every tool event is stored with role, tool, redacted arguments, outcome, duration;
// plans are stored apart from events.
#[tokio::test]
async fn every_tool_event_is_stored_and_plans_are_kept_apart() {
    let h = Harness::new();
    h.fakes.clock.set(1_700_000_000_000);
    let turn = h.turn(public_scope());
    entry(
        h.call(
            Role::Persona,
            &turn,
            "plan_image",
            r#"{"prompt":"fox","caption":"my key is sk-abcdefghijklmnopqrstuvwx"}"#,
        )
        .await,
    );
    entry(
        h.call(Role::Reviewer, &turn, "plan_image", r#"{"prompt":"fox"}"#)
            .await,
    );
    entry(h.call(Role::Persona, &turn, "probe", r#"{"n":"x"}"#).await);
    let events = h.fakes.events.events();
    let summary: Vec<_> = events
        .iter()
        .map(|e| (e.role, e.tool.as_str(), e.outcome))
        .collect();
    assert_eq!(
        summary,
        vec![
            (Role::Persona, "plan_image", EventOutcome::Succeeded),
            (Role::Reviewer, "plan_image", EventOutcome::Denied),
            (Role::Persona, "probe", EventOutcome::InvalidArguments),
        ]
    );
    for e in &events {
        assert_eq!(e.turn, turn.id);
        assert_eq!(e.at_ms, 1_700_000_000_000);
        assert_eq!(e.server, turn.scope.server);
    }
    assert!(events[0].arguments.contains("fox"));
    // SPEC S6: the stored arguments are redacted: the key in the caption is masked.
    assert!(
        !events[0].arguments.contains("sk-abcdef"),
        "{}",
        events[0].arguments
    );
    assert!(
        events[0].arguments.contains("my key is [redacted]"),
        "{}",
        events[0].arguments
    );
    assert_eq!(events[2].code.as_deref(), Some("invalid_arguments"));
    assert_eq!(
        h.fakes.plans.plans().len(),
        1,
        "one plan; the denied call made none"
    );
}

// SPEC S6: denied arguments are redacted in the event too.
#[tokio::test]
async fn denied_call_arguments_are_redacted_in_the_event() {
    let h = Harness::new();
    let turn = h.turn(public_scope());
    let args = json!({"api_key": "sk-abcdefghijklmnopqrstuvwx", "prompt": "x"});
    let result = h
        .session(Role::Reviewer, &turn)
        .execute("plan_image", args, &CancellationToken::new())
        .await;
    assert_eq!(
        result,
        Err(CallError::Refused(SessionError::Denied {
            name: "plan_image".into(),
            role: Role::Reviewer
        }))
    );
    let events = h.fakes.events.events();
    assert_eq!(events.len(), 1);
    let event = &events[0];
    assert_eq!(event.outcome, EventOutcome::Denied);
    assert!(!event.arguments.contains("sk-abc"), "{}", event.arguments);
    let shown: Value = serde_json::from_str(&event.arguments).expect("redacted JSON");
    assert_eq!(
        shown,
        json!({"api_key": "[redacted]", "prompt": "x"}),
        "the secret is masked, the other key kept"
    );
}

// SPEC S6: an event's duration covers the tool's run. (The stage times calls on the wall clock,
// so this sleeps for real: paused tokio time would not move it.)
#[tokio::test]
async fn tool_event_duration_covers_the_run() {
    let h = Harness::with_probe(Behaviour::Sleep {
        duration: std::time::Duration::from_millis(60),
        honour_cancel: false,
    });
    let turn = h.turn(public_scope());
    let done = entry(h.call(Role::Persona, &turn, "probe", r#"{"n":1}"#).await);
    assert_eq!(done.status, EntryStatus::Succeeded);
    let events = h.fakes.events.events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].outcome, EventOutcome::Succeeded);
    assert!(
        events[0].duration_ms >= 55,
        "the 60 ms run is in the duration: {} ms",
        events[0].duration_ms
    );
}

// ---------------------------------------------------------------- S7

/// Argument names that would let a model choose a path, a host, a command or a key.
const FORBIDDEN_ARGUMENTS: &[&str] = &[
    "path",
    "file",
    "filename",
    "dir",
    "url",
    "host",
    "endpoint",
    "command",
    "cmd",
    "shell",
    "exec",
    "api_key",
    "key",
    "token",
    "secret",
    "password",
    "server_id",
    "channel_id",
    "user_id",
];

fn property_names(schema: &Value, out: &mut Vec<String>) {
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, sub) in props {
            out.push(name.clone());
            property_names(sub, out);
        }
    }
    for key in ["items", "anyOf", "oneOf", "allOf"] {
        match schema.get(key) {
            Some(Value::Array(list)) => list.iter().for_each(|s| property_names(s, out)),
            Some(sub @ Value::Object(_)) => property_names(sub, out),
            _ => {}
        }
    }
}

// SPEC S7: no tool takes a path, a host, a command, a key or a scope id as an argument.
#[test]
fn no_tool_argument_names_a_path_host_command_key_or_scope() {
    let h = Harness::new();
    for tool in h.registry.iter() {
        let mut names = Vec::new();
        property_names(&tool.spec["function"]["parameters"], &mut names);
        for name in names {
            assert!(
                !FORBIDDEN_ARGUMENTS.contains(&name.as_str()),
                "{} has argument `{name}`",
                tool.name
            );
        }
    }
}

// SPEC S7: the tools' code never reaches a shell, the file system or a URL of the model's.
#[test]
fn tool_code_spawns_no_process_and_opens_no_path_or_url() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tools");
    let forbidden = [
        "std::process",
        "Command::new",
        "std::fs",
        "File::",
        "PathBuf",
        "reqwest",
        "Url::",
    ];
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        for word in forbidden {
            assert!(!text.contains(word), "{} uses {word}", path.display());
        }
    }
}

// SPEC S3, S7: a model cannot pass a key or a path as an extra argument.
#[tokio::test]
async fn extra_key_or_path_arguments_are_refused() {
    let h = Harness::new();
    let turn = h.turn(public_scope());
    for extra in [
        r#""api_key":"sk-x""#,
        r#""path":"/etc/passwd""#,
        r#""url":"http://evil""#,
    ] {
        let args = format!(r#"{{"prompt":"fox",{extra}}}"#);
        let entry = entry(h.call(Role::Persona, &turn, "plan_image", &args).await);
        assert_eq!(code(&entry), "invalid_arguments", "{extra}");
    }
    assert!(h.fakes.plans.plans().is_empty());
}
