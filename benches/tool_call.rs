//! `execute_tool_call` for a no-op tool through every gate, beside a direct call of the same
//! tool. The difference is what the stage adds per call.
//!
//! Run: `cargo bench --bench tool_call`.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use criterion::{Criterion, criterion_group, criterion_main};
use persona_bot::config::Config;
use persona_bot::domain::role::{Role, RoleSet};
use persona_bot::domain::turn::{ToolAdmission, Turn};
use persona_bot::locale::Locale;
use persona_bot::stage::{ToolCallRequest, execute_tool_call};
use persona_bot::testkit::{Fakes, public_scope};
use persona_bot::tools::{
    Registry, Tool, ToolContext, ToolEnv, ToolError, ToolOutput, ToolSession,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoopArgs {
    /// A number.
    n: u8,
    /// A label.
    label: String,
}

struct Noop;

#[async_trait]
impl Tool for Noop {
    type Args = NoopArgs;
    const NAME: &'static str = "noop";
    const ROLES: RoleSet = RoleSet::of(&[Role::Persona]);
    const DESCRIPTION: &'static str = "Does nothing.";

    async fn execute(
        &self,
        _ctx: &ToolContext<'_>,
        args: NoopArgs,
        _cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::data(serde_json::json!({ "n": args.n })))
    }
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let config = Arc::new(Config::shipped_defaults());
    let registry = Arc::new(Registry::builtin(&config).with(Noop));
    let env = Arc::new(ToolEnv::new(Fakes::default().discarding(), config.clone()));
    // Deliberate mode on, with the tool admitted, so the allowlist gate does its lookup too.
    let admission = ToolAdmission::Deliberate {
        admitted: HashMap::from([("noop".to_owned(), None)]),
    };
    let turn = Arc::new(Turn::new(public_scope(), Locale::En).admission(admission));
    let session = ToolSession::new(Role::Persona, registry, turn.clone(), env.clone());
    let call = ToolCallRequest::new("call_1", "noop", r#"{"n":7,"label":"hello"}"#);

    let mut group = c.benchmark_group("tool_call");
    group.bench_function("execute_tool_call (all gates)", |b| {
        b.to_async(&runtime).iter(|| async {
            let mut streamed = vec!["Let me see.".to_owned()];
            execute_tool_call(&session, Some(&call), &mut streamed).await
        });
    });
    group.bench_function("direct call (parse + execute)", |b| {
        let cancel = CancellationToken::new();
        b.to_async(&runtime).iter(|| async {
            let args: NoopArgs = serde_json::from_str(&call.arguments).expect("args");
            let ctx = ToolContext {
                turn: &turn,
                env: &env,
                role: Role::Persona,
            };
            Noop.execute(&ctx, args, &cancel).await
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
