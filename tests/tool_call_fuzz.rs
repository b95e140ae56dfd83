//! Property test: arbitrary bytes as tool names and arguments, for every role. Nothing panics,
//! and nothing runs unless the role may call the tool and the arguments parse and validate.

// The shared fakes this binary uses (tests/support/). Public, so that what it leaves
// unused of them is not dead code.
pub mod support {
    pub mod harness;
}

use persona_bot::domain::history::EntryStatus;
use persona_bot::domain::role::Role;
use persona_bot::stage::{ToolCallOutcome, ToolCallRequest, Truncation, execute_tool_call};
use persona_bot::testkit::public_scope;
use proptest::prelude::*;
use support::harness::Harness;

fn name_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("probe".to_owned()),
        Just("plan_image".to_owned()),
        Just("submit_review".to_owned()),
        Just("remember_fact".to_owned()),
        Just("select_sticker_for_response".to_owned()),
        any::<String>(),
        proptest::collection::vec(any::<u8>(), 0..24)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]
}

fn arguments_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u16..300).prop_map(|n| format!(r#"{{"n":{n}}}"#)),
        Just(r#"{"n":1,"extra":true}"#.to_owned()),
        Just(r#"{"prompt":"a fox"}"#.to_owned()),
        Just(r#"{"decision":"pass"}"#.to_owned()),
        proptest::collection::vec(any::<u8>(), 0..64)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        any::<String>(),
        "\\{\"n\":[0-9]{0,4}".prop_map(|s| s),
    ]
}

fn role_strategy() -> impl Strategy<Value = Role> {
    prop_oneof![
        Just(Role::Persona),
        Just(Role::Reviewer),
        Just(Role::ImagePlanner)
    ]
}

/// Whether `probe` should run for this call: the role may call it and the arguments are a JSON
/// object with `n` in 0..=100 and nothing else but an optional string `note`.
fn probe_may_run(role: Role, name: &str, arguments: &str, truncated: bool) -> bool {
    if name != "probe" || role == Role::ImagePlanner || truncated {
        return false;
    }
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(map)) => {
            let n_ok = map
                .get("n")
                .and_then(|n| n.as_u64())
                .is_some_and(|n| n <= 100);
            let note_ok = map.get("note").is_none_or(|v| v.is_string() || v.is_null());
            let only_known = map.keys().all(|k| k == "n" || k == "note");
            n_ok && note_ok && only_known
        }
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    // SPEC S2, T3: arbitrary input never panics and never runs what it may not.
    #[test]
    fn arbitrary_calls_never_panic_and_run_only_when_authorized_and_valid(
        role in role_strategy(),
        name in name_strategy(),
        arguments in arguments_strategy(),
        truncated in any::<bool>(),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let h = Harness::new();
        let turn = h.turn(public_scope());
        let session = h.session(role, &turn);
        let mut call = ToolCallRequest::new("c", name.clone(), arguments.clone());
        if truncated {
            call.truncated = Some(Truncation::Length);
        }
        let outcome = runtime.block_on(execute_tool_call(&session, Some(&call), &mut Vec::new()));

        let expected_runs = usize::from(probe_may_run(role, &name, &arguments, truncated));
        prop_assert_eq!(h.probe.runs(), expected_runs);
        // No built-in side effect happens for a role that may not call the tool.
        let plans = h.fakes.plans.plans().len();
        prop_assert!(plans == 0 || (name == "plan_image" && role != Role::Reviewer && !truncated));
        let facts = h.fakes.memory.all_facts().len();
        prop_assert!(facts == 0 || (name == "remember_fact" && role == Role::Persona && !truncated));
        prop_assert!(h.fakes.sink.stickers().is_empty());

        match outcome {
            ToolCallOutcome::History { entry } => {
                if entry.status == EntryStatus::Succeeded {
                    prop_assert!(!truncated);
                    prop_assert!(h.registry.get(&name).is_some_and(|t| t.roles.contains(role)));
                }
            }
            ToolCallOutcome::Abort { .. } => prop_assert!(name.trim().is_empty()),
            ToolCallOutcome::Restart(_) => prop_assert!(false, "no restart tool was called"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Tool arguments, through the parse path every call takes (text, then the session's
// authorize-then-validate, then the tool).

/// A built-in tool name (and one unknown).
fn builtin_strategy() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("select_sticker_for_response"),
        Just("update_short_term_memory"),
        Just("remember_fact"),
        Just("recall_facts"),
        Just("plan_image"),
        Just("fetch_older_messages"),
        Just("create_reminder"),
        Just("submit_review"),
        Just("no_such_tool"),
    ]
}

/// Values of every shape, with the extremes a model may send.
fn value_strategy() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::json;
    let leaf = prop_oneof![
        Just(json!(null)),
        any::<bool>().prop_map(|b| json!(b)),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        Just(json!(u64::MAX)),
        Just(json!(-1)),
        Just(json!(0)),
        Just(json!(1e308)),
        any::<String>().prop_map(|s| json!(s)),
        Just(json!("2026-12-01 09:30")),
        Just(json!("+262143-12-31 23:59")),
        Just(json!("Europe/Paris")),
        Just(json!("America/Santiago")),
        Just(json!("portrait")),
        Just(json!("requester")),
        Just(json!("daily")),
        Just(json!("\u{200b}\u{fffd}\u{feff}")),
        (1usize..3000).prop_map(|n| json!("x".repeat(n))),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
            proptest::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Argument text: an object over the built-in tools' own field names, or anything at all.
fn argument_text_strategy() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("name"),
        Just("summary"),
        Just("fact"),
        Just("about"),
        Just("limit"),
        Just("prompt"),
        Just("caption"),
        Just("aspect"),
        Just("part"),
        Just("set"),
        Just("index"),
        Just("total"),
        Just("count"),
        Just("text"),
        Just("at"),
        Just("in_minutes"),
        Just("time_zone"),
        Just("repeat"),
        Just("for_channel"),
        Just("decision"),
        Just("findings"),
        Just("correction_allowed"),
        Just("extra"),
    ];
    prop_oneof![
        4 => proptest::collection::btree_map(key, value_strategy(), 0..6).prop_map(|m| {
            serde_json::Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
                .to_string()
        }),
        1 => any::<String>(),
        1 => value_strategy().prop_map(|v| v.to_string()),
        1 => Just("{\"prompt\":".repeat(200)),
    ]
}

/// Arguments a built-in tool would accept but for their values: far dates, daylight-saving gaps,
/// odd time zones, boundary counts, huge and invisible text.
fn near_valid_strategy() -> impl Strategy<Value = (&'static str, String)> {
    use serde_json::json;
    let text = prop_oneof![
        Just(String::new()),
        Just("a fox".to_owned()),
        Just("\u{200b}\u{200b}".to_owned()),
        any::<String>(),
        (1usize..5000).prop_map(|n| "é".repeat(n)),
    ];
    let at = prop_oneof![
        Just("2026-03-29 02:30".to_owned()),
        Just("2026-10-25 02:30".to_owned()),
        Just("+262143-12-31 23:59".to_owned()),
        Just("-262143-01-01 00:00".to_owned()),
        Just("0000-01-01 00:00".to_owned()),
        (1i32..10_000, 1u32..13, 1u32..29, 0u32..24, 0u32..60)
            .prop_map(|(y, mo, d, h, mi)| format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}")),
    ];
    let zone = prop_oneof![
        Just("UTC"),
        Just("Europe/Paris"),
        Just("America/Santiago"),
        Just("Asia/Gaza"),
        Just("Pacific/Kiritimati"),
        Just("Etc/GMT+12"),
        Just("Australia/Lord_Howe"),
    ];
    let reminder = (
        text.clone(),
        prop::option::of(at),
        prop::option::of(any::<u32>()),
        zone,
        prop_oneof![Just("once"), Just("daily"), Just("weekly")],
        any::<bool>(),
    )
        .prop_map(|(text, at, in_minutes, zone, repeat, for_channel)| {
            let mut args = json!({"text": text, "time_zone": zone, "repeat": repeat,
                "for_channel": for_channel});
            if let Some(at) = at {
                args["at"] = json!(at);
            }
            if let Some(m) = in_minutes {
                args["in_minutes"] = json!(m);
            }
            args
        });
    let plan = (
        text.clone(),
        prop::option::of(text.clone()),
        any::<u8>(),
        any::<u8>(),
    )
        .prop_map(|(prompt, caption, index, total)| {
            json!({"prompt": prompt, "caption": caption,
            "aspect": "portrait", "part": {"set": "s", "index": index, "total": total}})
        });
    let tool = |name: &'static str| move |v: serde_json::Value| (name, v.to_string());
    prop_oneof![
        3 => reminder.prop_map(tool("create_reminder")),
        1 => plan.prop_map(tool("plan_image")),
        1 => any::<u8>().prop_map(|n| json!({"count": n})).prop_map(tool("fetch_older_messages")),
        1 => any::<u8>().prop_map(|n| json!({"limit": n})).prop_map(tool("recall_facts")),
        1 => text.clone().prop_map(|t| json!({"fact": t, "about": "requester"}))
            .prop_map(tool("remember_fact")),
        1 => text.clone().prop_map(|t| json!({"summary": t}))
            .prop_map(tool("update_short_term_memory")),
        1 => text.prop_map(|t| json!({"name": t})).prop_map(tool("select_sticker_for_response")),
    ]
}

/// A tool name with argument text: near-valid for that tool, or anything for any tool.
fn call_strategy() -> impl Strategy<Value = (&'static str, String)> {
    prop_oneof![
        near_valid_strategy(),
        (builtin_strategy(), argument_text_strategy()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    // SPEC S4: any argument text for any built-in tool and role never panics, from parsing through
    // validation to the tool itself; text that is not a JSON object is never dispatched, and every
    // argument error names a JSON path.
    #[test]
    fn arbitrary_tool_arguments_never_panic_and_errors_carry_a_path(
        role in role_strategy(),
        (name, text) in call_strategy(),
    ) {
        use persona_bot::tools::session::{CallError, SessionError};
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let h = Harness::new();
        let turn = h.turn(public_scope());
        let session = h.session(role, &turn);
        let Ok(arguments) = ToolCallRequest::new("c", name, text.clone()).parse_arguments() else {
            let parsed = serde_json::from_str::<serde_json::Value>(&text);
            prop_assert!(!text.trim().is_empty() && !matches!(parsed, Ok(serde_json::Value::Object(_))));
            return Ok(());
        };
        let cancel = tokio_util::sync::CancellationToken::new();
        match runtime.block_on(session.execute(name, arguments, &cancel)) {
            Err(CallError::Refused(SessionError::InvalidArguments { error, .. })) => {
                prop_assert!(error.path.starts_with('$'), "{error:?}");
                prop_assert!(!error.message.is_empty(), "{error:?}");
            }
            Err(CallError::Refused(SessionError::UnknownTool { .. })) => {
                prop_assert_eq!(name, "no_such_tool");
            }
            Err(CallError::Refused(SessionError::Denied { .. })) => {
                prop_assert!(h.registry.get(name).is_some_and(|t| !t.roles.contains(role)));
            }
            Err(_) | Ok(_) => {}
        }
    }
}
