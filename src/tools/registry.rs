//! The registry: one entry per tool with its argument parser, its JSON schema (generated from the
//! same type), its description, its roles and its watchdog timeout (SPEC S1).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::marker::PhantomData;
use std::time::Duration;

use async_trait::async_trait;
use schemars::generate::SchemaSettings;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{ArgError, Tool, ToolContext, ToolError, ToolOutput};
use crate::config::Config;
use crate::domain::role::{Role, RoleSet};

/// A call that waits for approval first (SPEC E3): what it will do, and whether only moderators
/// may allow it (an outside tool that says it is destructive, SPEC E4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    pub what: String,
    pub moderators_only: bool,
}

/// A tool with its type erased, so tools of different argument types (and outside tools, whose
/// arguments are checked against a schema instead) share one map.
#[async_trait]
pub(super) trait ErasedTool: Send + Sync {
    /// Parses and validates arguments, returning them in canonical form (defaults filled in).
    fn prepare(&self, arguments: Value) -> Result<Value, ArgError>;
    async fn approval(
        &self,
        ctx: &ToolContext<'_>,
        arguments: &Value,
    ) -> Result<Option<Ask>, ToolError>;
    async fn run(
        &self,
        ctx: &ToolContext<'_>,
        arguments: Value,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError>;
}

struct Erased<T: Tool>(T, PhantomData<fn() -> T::Args>);

#[async_trait]
impl<T: Tool> ErasedTool for Erased<T> {
    fn prepare(&self, arguments: Value) -> Result<Value, ArgError> {
        let args: T::Args = parse_with_path(arguments)?;
        self.0.validate(&args)?;
        serde_json::to_value(&args).map_err(|e| ArgError::at("$", e.to_string()))
    }

    async fn approval(
        &self,
        ctx: &ToolContext<'_>,
        arguments: &Value,
    ) -> Result<Option<Ask>, ToolError> {
        let args: T::Args = again(arguments.clone())?;
        let what = self.0.approval(ctx, &args).await?;
        Ok(what.map(|what| Ask {
            what,
            moderators_only: false,
        }))
    }

    async fn run(
        &self,
        ctx: &ToolContext<'_>,
        arguments: Value,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        // Prepared arguments are this type's own serialization, so they parse again; a failure
        // here would be a bug in the tool's serde attributes.
        let args: T::Args = again(arguments)?;
        self.0.execute(ctx, args, cancel).await
    }
}

/// Prepared arguments parsed again (they are the type's own serialization).
fn again<A: serde::de::DeserializeOwned>(arguments: Value) -> Result<A, ToolError> {
    serde_json::from_value(arguments).map_err(|e| ToolError::Failed {
        code: Some("internal_error".into()),
        message: format!("prepared arguments did not parse again: {e}"),
    })
}

/// Deserializes `value`, reporting the JSON path of the first error (`$.part.index`).
pub(super) fn parse_with_path<A: serde::de::DeserializeOwned>(value: Value) -> Result<A, ArgError> {
    serde_path_to_error::deserialize(value).map_err(|err| {
        let mut path = String::from("$");
        let segments = err.path().to_string();
        if segments != "." {
            if !segments.starts_with('[') {
                path.push('.');
            }
            path.push_str(&segments);
        }
        let message = err.inner().to_string();
        // serde reports a missing field at its parent; name the field itself.
        if let Some(field) = message
            .strip_prefix("missing field `")
            .and_then(|rest| rest.strip_suffix('`'))
        {
            let _ = write!(path, ".{field}");
        }
        ArgError { path, message }
    })
}

/// One registered tool.
pub struct RegisteredTool {
    pub name: &'static str,
    pub roles: RoleSet,
    pub gated: bool,
    pub progress_key: Option<&'static str>,
    pub public_output: bool,
    /// See [`Tool::EXTERNAL_EFFECT`].
    pub external_effect: bool,
    pub timeout: Duration,
    /// The OpenAI function specification shown to the model.
    pub spec: Value,
    /// The MCP server an outside tool comes from (SPEC E4); `None` for the bot's own.
    pub server: Option<String>,
    pub(super) tool: Box<dyn ErasedTool>,
}

impl RegisteredTool {
    pub(crate) fn prepare(&self, arguments: Value) -> Result<Value, ArgError> {
        self.tool.prepare(arguments)
    }

    /// What the call will do, when it needs approval first (SPEC E3).
    pub(crate) async fn approval(
        &self,
        ctx: &ToolContext<'_>,
        arguments: &Value,
    ) -> Result<Option<Ask>, ToolError> {
        self.tool.approval(ctx, arguments).await
    }

    pub(crate) async fn run(
        &self,
        ctx: &ToolContext<'_>,
        arguments: Value,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        self.tool.run(ctx, arguments, cancel).await
    }
}

/// The registry of every tool the bot has.
pub struct Registry {
    tools: HashMap<&'static str, RegisteredTool>,
    /// Registration order, so specifications list in a stable order.
    order: Vec<&'static str>,
    default_timeout: Duration,
    timeouts: HashMap<String, Duration>,
}

/// The OpenAI function specification for a tool type.
pub fn specification<T: Tool>() -> Value {
    let mut schema = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator()
        .into_root_schema_for::<T::Args>()
        .to_value();
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("title");
    }
    lean(&mut schema);
    json!({
        "type": "function",
        "function": {
            "name": T::NAME,
            "description": T::DESCRIPTION,
            "parameters": schema,
        }
    })
}

/// A schema without what costs tokens and tells the model nothing (SPEC C12): integer formats
/// and the bounds of their Rust types (`uint8`, 0 to 255), `null` beside the type of a field
/// that may simply be left out, and one-of-constants spelled out as an `enum`. The bounds that
/// matter are in the descriptions, and every argument is validated anyway.
fn lean(schema: &mut Value) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    map.remove("format");
    if map.get("minimum") == Some(&json!(0)) {
        map.remove("minimum");
    }
    if let Some(max) = map.get("maximum").and_then(Value::as_u64)
        && [u64::from(u8::MAX), u64::from(u16::MAX), u64::from(u32::MAX)].contains(&max)
    {
        map.remove("maximum");
    }
    if let Some(Value::Array(types)) = map.get("type") {
        let kept: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
        if let [only] = kept.as_slice() {
            let only = (*only).clone();
            map.insert("type".to_owned(), only);
        }
    }
    let constants: Option<Vec<Value>> = map
        .get("oneOf")
        .and_then(Value::as_array)
        .and_then(|options| options.iter().map(|o| o.get("const").cloned()).collect());
    if let Some(constants) = constants {
        map.remove("oneOf");
        map.insert("type".to_owned(), json!("string"));
        map.insert("enum".to_owned(), Value::Array(constants));
    }
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        properties.values_mut().for_each(lean);
    }
}

impl Registry {
    /// An empty registry using the configured timeouts.
    pub fn new(config: &Config) -> Self {
        Self {
            tools: HashMap::new(),
            order: Vec::new(),
            default_timeout: Duration::from_secs(config.tools.default_timeout_secs),
            timeouts: config
                .tools
                .timeouts_secs
                .iter()
                .map(|(name, secs)| (name.clone(), Duration::from_secs(*secs)))
                .collect(),
        }
    }

    /// Every built-in tool, configured from `config`.
    pub fn builtin(config: &Config) -> Self {
        use super::*;
        Self::new(config)
            .with(select_sticker_for_response::SelectStickerForResponse)
            .with(react_to_message::ReactToMessage)
            .with(update_short_term_memory::UpdateShortTermMemory::new(
                &config.memory,
            ))
            .with(remember_fact::RememberFact::new(&config.memory))
            .with(recall_facts::RecallFacts)
            .with(forget_fact::ForgetFact)
            .with(plan_image::PlanImage::new(&config.image))
            .with(fetch_older_messages::FetchOlderMessages::new(&config.tools))
            .with(create_reminder::CreateReminder::new(&config.reminders))
            .with(submit_review::SubmitReview)
    }

    /// Adds a tool. Its timeout: the config's entry for it, else its own, else the default.
    ///
    /// # Panics
    /// On a duplicate name: two tools with one name is a programming error caught at start-up.
    pub fn with<T: Tool>(mut self, tool: T) -> Self {
        assert!(
            !self.tools.contains_key(T::NAME),
            "tool {} registered twice",
            T::NAME
        );
        let timeout = self
            .timeouts
            .get(T::NAME)
            .copied()
            .or_else(|| tool.timeout())
            .unwrap_or(self.default_timeout);
        self.tools.insert(
            T::NAME,
            RegisteredTool {
                name: T::NAME,
                roles: T::ROLES,
                gated: T::GATED,
                progress_key: T::PROGRESS_KEY,
                public_output: T::PUBLIC_OUTPUT,
                external_effect: T::EXTERNAL_EFFECT,
                timeout,
                spec: specification::<T>(),
                server: None,
                tool: Box::new(Erased(tool, PhantomData)),
            },
        );
        self.order.push(T::NAME);
        self
    }

    pub fn get(&self, name: &str) -> Option<&RegisteredTool> {
        self.tools.get(name)
    }

    /// The tools `role` may call, in registration order.
    pub fn for_role(&self, role: Role) -> impl Iterator<Item = &RegisteredTool> {
        self.order
            .iter()
            .filter_map(|name| self.tools.get(name))
            .filter(move |t| t.roles.contains(role))
    }

    /// Every tool, in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &RegisteredTool> {
        self.order.iter().filter_map(|name| self.tools.get(name))
    }
}

/// Canonical JSON: object keys sorted at every level, no white space. Two requests with the same
/// meaning get the same text, whatever order the model wrote the keys in.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry() -> Registry {
        Registry::builtin(&Config::shipped_defaults())
    }

    // SPEC S1: each role lists only its tools, plus its typed submit tool.
    #[test]
    fn each_role_sees_only_its_tools() {
        let registry = registry();
        let names = |role| registry.for_role(role).map(|t| t.name).collect::<Vec<_>>();
        assert_eq!(
            names(Role::Persona),
            vec![
                "select_sticker_for_response",
                "react_to_message",
                "update_short_term_memory",
                "remember_fact",
                "recall_facts",
                "forget_fact",
                "plan_image",
                "fetch_older_messages",
                "create_reminder",
            ]
        );
        assert_eq!(names(Role::Reviewer), vec!["recall_facts", "submit_review"]);
        assert_eq!(names(Role::ImagePlanner), vec!["plan_image"]);
    }

    // SPEC S1, S3: the schema is generated from the argument type and rejects unknown fields.
    #[test]
    fn specifications_come_from_the_argument_types() {
        let registry = registry();
        for tool in registry.iter() {
            let function = &tool.spec["function"];
            assert_eq!(function["name"], tool.name);
            assert!(
                function["description"]
                    .as_str()
                    .is_some_and(|d| d.len() > 10)
            );
            let parameters = &function["parameters"];
            assert_eq!(parameters["type"], "object", "{}", tool.name);
            assert_eq!(
                parameters["additionalProperties"], false,
                "{} must deny unknown fields",
                tool.name
            );
            assert!(parameters.get("$schema").is_none());
            assert!(
                !parameters.to_string().contains("$ref"),
                "{} schema must be inline",
                tool.name
            );
        }
        let plan = &registry.get("plan_image").expect("plan_image").spec;
        assert!(plan["function"]["parameters"]["properties"]["prompt"].is_object());
    }

    // SPEC C12 (lean prompts): schemas carry no integer formats or type bounds, no `null` beside a
    // type, no one-of-constants: an enum says it in fewer tokens.
    #[test]
    fn schemas_carry_nothing_the_model_does_not_need() {
        let registry = registry();
        for tool in registry.iter() {
            let text = tool.spec.to_string();
            for waste in [
                "\"format\"",
                "\"null\"",
                "\"oneOf\"",
                "\"maximum\":255",
                "\"minimum\":0",
            ] {
                assert!(!text.contains(waste), "{}: {waste} in {text}", tool.name);
            }
        }
        let about = &registry.get("remember_fact").expect("remember_fact").spec["function"]["parameters"]
            ["properties"]["about"];
        assert_eq!(about["enum"], json!(["server", "requester"]));
        assert_eq!(about["type"], "string");
    }

    // SPEC T5: timeouts come from config, else the default.
    #[test]
    fn timeouts_come_from_config() {
        let registry = registry();
        let timeout = |name| registry.get(name).expect("tool").timeout;
        assert_eq!(timeout("remember_fact"), Duration::from_secs(30));
        assert_eq!(timeout("plan_image"), Duration::from_secs(300));
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_level() {
        let a: Value =
            serde_json::from_str(r#"{"b":1,"a":{"y":[1,{"d":2,"c":3}],"x":"\""}}"#).expect("json");
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"x":"\"","y":[1,{"c":3,"d":2}]},"b":1}"#
        );
    }

    #[test]
    fn argument_errors_name_the_json_path() {
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Outer {
            inner: Inner,
        }
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Inner {
            list: Vec<u8>,
            name: String,
        }
        let err = parse_with_path::<Outer>(json!({"inner": {"list": [1, "x"], "name": "n"}}))
            .unwrap_err();
        assert_eq!(err.path, "$.inner.list[1]");
        let err = parse_with_path::<Outer>(json!({"inner": {"list": []}})).unwrap_err();
        assert_eq!(err.path, "$.inner.name");
        let err = parse_with_path::<Outer>(json!({"inner": {"list": [], "name": "n", "scope": 1}}))
            .unwrap_err();
        assert_eq!(err.path, "$.inner.scope");
        assert!(
            err.message.contains("unknown field `scope`"),
            "{}",
            err.message
        );
    }
}
