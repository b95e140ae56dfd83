//! Property test: arbitrary bytes as tool names and arguments, for every role. Nothing panics,
//! and nothing runs unless the role may call the tool and the arguments parse and validate.

mod support;

use persona_bot::chat::history::EntryStatus;
use persona_bot::chat::role::Role;
use persona_bot::testkit::public_scope;
use persona_bot::tool_loop::{ToolCallOutcome, ToolCallRequest, Truncation, execute_tool_call};
use proptest::prelude::*;
use support::Harness;

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
            ToolCallOutcome::Restart => prop_assert!(false, "no restart tool was called"),
        }
    }
}
