//! Outside tools (SPEC E4): tools an MCP server offers, registered beside the bot's own and put
//! through the same gates. The adapter that speaks MCP (`crate::mcp`) lists them and carries
//! their calls; this module turns each listed tool into a [`RegisteredTool`]:
//!
//! - its name is `server__tool`, its description cut to a bound, its schema trimmed of what
//!   only costs tokens, and too large a schema refused;
//! - its arguments are checked against its own input schema before any call (SPEC S1, S4: the
//!   first error, at its JSON path), so arguments that fail never reach the server;
//! - a tool that says it only reads runs as a lookup; any other waits for approval unless its
//!   server's operator said `approval = "never"`, and a destructive one always waits for a
//!   moderator's (SPEC E3);
//! - a tool that is not read-only has an external effect: its outcome goes through the effect
//!   ledger, so it runs once across retries, fallback and restarts (SPEC D5);
//! - a result is redacted, cut to `mcp.result_max_bytes`, and mapped to the failure payloads
//!   when the server says it is an error.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::registry::{Ask, ErasedTool};
use super::{ArgError, RegisteredTool, ToolContext, ToolError, ToolOutput};
use crate::config::{ApprovalPolicy, McpConfig, McpServerConfig};
use crate::domain::role::{Role, RoleSet};
use crate::redact::{cut, redact_parsed, redact_text};

/// A tool as its server lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct OutsideToolInfo {
    pub server: String,
    /// The server's own name for it.
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    /// `readOnlyHint: true`.
    pub read_only: bool,
    /// `destructiveHint: true` (and not read-only).
    pub destructive: bool,
}

/// One part of a result.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    Text(String),
    /// An image: its type and size. The model is told it exists, not shown it.
    Image {
        mime: String,
        bytes: usize,
    },
    /// Anything else (audio, a resource), named.
    Other(String),
}

/// What a call came back with.
#[derive(Debug, Clone, PartialEq)]
pub struct OutsideResult {
    pub content: Vec<Content>,
    pub structured: Option<Value>,
    /// The server says the call failed (`isError`).
    pub is_error: bool,
}

/// Why a call came back with no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutsideError {
    /// The server is not connected now (starting, restarting, or given up on for a while).
    #[error("the server is not connected: {0}")]
    Unavailable(String),
    /// `/kill` or the watchdog stopped it; the server was told (`notifications/cancelled`).
    #[error("the call was cancelled")]
    Cancelled,
    /// The server answered with a JSON-RPC error.
    #[error("the server refused the call ({code}): {message}")]
    Protocol { code: i64, message: String },
    /// The connection failed during the call.
    #[error("the connection failed: {0}")]
    Transport(String),
}

/// Carries one call to a server (the MCP adapter).
#[async_trait]
pub trait OutsideCaller: Send + Sync {
    async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
        cancel: &CancellationToken,
    ) -> Result<OutsideResult, OutsideError>;
}

/// How one server is doing, for `/status` and `check-config --connect`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerHealth {
    pub name: String,
    pub connected: bool,
    pub tools: usize,
    /// The last thing that went wrong, without secrets.
    pub last_error: Option<String>,
}

/// The outside tools there are now (the adapter keeps them current as servers come and go and
/// change their lists).
pub trait OutsideCatalog: Send + Sync {
    fn tools(&self) -> Arc<[Arc<RegisteredTool>]>;
    fn health(&self) -> Vec<ServerHealth>;
}

/// Most distinct outside tool names one process takes: names live as long as the process (a
/// tool's name is `&'static str`, as built-in tools' are), so a server that renames its tools
/// on every change cannot grow it without end.
const NAMES_MAX: usize = 4096;
/// Largest input schema offered to the model, serialized: each costs prompt tokens every pass.
const SCHEMA_MAX_BYTES: usize = 8192;

static NAMES: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);

/// The one `&'static str` for `name`, or `None` past [`NAMES_MAX`].
fn intern(name: &str) -> Option<&'static str> {
    let mut names = NAMES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let names = names.get_or_insert_with(HashSet::new);
    if let Some(known) = names.get(name) {
        return Some(known);
    }
    if names.len() >= NAMES_MAX {
        return None;
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(leaked);
    Some(leaked)
}

/// The name the model calls: `server__tool`, within a function name's 64 characters of
/// letters, digits, `_` and `-`.
pub fn full_name(server: &str, tool: &str) -> Result<String, String> {
    let name = format!("{server}__{tool}");
    let fits = name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if fits {
        Ok(name)
    } else {
        Err(format!(
            "`{}` is not a name a model can call (64 letters, digits, _ or -)",
            cut(&name, 80)
        ))
    }
}

/// The schema as the model sees it: no `$schema`, no top-level `title`; an object schema
/// within [`SCHEMA_MAX_BYTES`].
fn offered_schema(schema: &Value) -> Result<Value, String> {
    let mut schema = schema.clone();
    let Some(map) = schema.as_object_mut() else {
        return Err("its input schema is not an object".to_owned());
    };
    if map.get("type").is_some_and(|t| t != "object") {
        return Err("its input schema does not describe an object".to_owned());
    }
    map.remove("$schema");
    map.remove("title");
    map.entry("type").or_insert_with(|| json!("object"));
    map.entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    let size = schema.to_string().len();
    if size > SCHEMA_MAX_BYTES {
        return Err(format!(
            "its input schema is {size} bytes (at most {SCHEMA_MAX_BYTES})"
        ));
    }
    Ok(schema)
}

/// An outside tool registered: `Err` says why it cannot be offered.
pub fn register(
    info: &OutsideToolInfo,
    server: &McpServerConfig,
    mcp: &McpConfig,
    timeouts: &HashMap<String, u64>,
    caller: Arc<dyn OutsideCaller>,
) -> Result<RegisteredTool, String> {
    let full = full_name(&info.server, &info.name)?;
    let schema = offered_schema(&info.input_schema)?;
    // Without its default features the validator resolves no remote `$ref`: a schema that needs
    // one is refused here, and the bot fetches nothing a server names.
    let validator = jsonschema::validator_for(&info.input_schema).map_err(|e| {
        format!(
            "its input schema does not compile: {}",
            cut(&e.to_string(), 200)
        )
    })?;
    let Some(name) = intern(&full) else {
        return Err("too many outside tool names since start; restart the bot".to_owned());
    };
    let max_chars = usize::try_from(mcp.description_max_chars).unwrap_or(usize::MAX);
    let description: String = info
        .description
        .chars()
        .filter(|c| !c.is_control() || *c == '\n')
        .collect();
    let description = cut(description.trim(), max_chars);
    let policy = if info.read_only {
        Needs::Nothing
    } else if info.destructive {
        Needs::Moderator
    } else if server.approval == ApprovalPolicy::Never {
        Needs::Nothing
    } else {
        Needs::Approval
    };
    Ok(RegisteredTool {
        name,
        roles: roles_of(&server.roles),
        // A lookup is never gated in deliberate mode; a tool with an effect is (SPEC T4).
        gated: !info.read_only,
        progress_key: None,
        public_output: false,
        external_effect: !info.read_only,
        // `tools.timeouts_secs` under its full name, else its server's, else `mcp`'s.
        timeout: Duration::from_secs(
            timeouts
                .get(name)
                .copied()
                .unwrap_or_else(|| server.timeout_secs(mcp)),
        ),
        spec: json!({
            "type": "function",
            "function": {
                "name": name,
                "description": description,
                "parameters": schema,
            }
        }),
        server: Some(info.server.clone()),
        tool: Box::new(OutsideTool {
            server: info.server.clone(),
            tool: info.name.clone(),
            full: name,
            validator,
            needs: policy,
            result_max_bytes: usize::try_from(mcp.result_max_bytes).unwrap_or(usize::MAX),
            argument_max_chars: 300,
            caller,
        }),
    })
}

/// The roles an entry names (checked at load: each is one).
fn roles_of(names: &[String]) -> RoleSet {
    let roles: Vec<Role> = Role::ALL
        .into_iter()
        .filter(|role| names.iter().any(|n| n == role.as_str()))
        .collect();
    RoleSet::of(&roles)
}

/// Whom a call waits for before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Needs {
    Nothing,
    Approval,
    Moderator,
}

struct OutsideTool {
    server: String,
    tool: String,
    full: &'static str,
    validator: jsonschema::Validator,
    needs: Needs,
    result_max_bytes: usize,
    argument_max_chars: usize,
    caller: Arc<dyn OutsideCaller>,
}

/// A JSON pointer (`/a/0/b`) as the path the model reads (`$.a[0].b`).
fn json_path(location: &jsonschema::paths::Location) -> String {
    let mut path = String::from("$");
    for segment in location {
        match segment {
            jsonschema::paths::LocationSegment::Property(p) => {
                path.push('.');
                path.push_str(&p);
            }
            jsonschema::paths::LocationSegment::Index(i) => {
                path.push_str(&format!("[{i}]"));
            }
        }
    }
    path
}

#[async_trait]
impl ErasedTool for OutsideTool {
    fn prepare(&self, arguments: Value) -> Result<Value, ArgError> {
        // A model that sends nothing for a tool without parameters means `{}`.
        let arguments = if arguments.is_null() {
            json!({})
        } else {
            arguments
        };
        if !arguments.is_object() {
            return Err(ArgError::at("$", "must be an object"));
        }
        if let Some(error) = self.validator.iter_errors(&arguments).next() {
            // `masked` words the error without quoting the value, which may be anything.
            let message = cut(&error.masked().to_string(), 300);
            return Err(ArgError {
                path: json_path(error.instance_path()),
                message,
            });
        }
        Ok(arguments)
    }

    async fn approval(
        &self,
        ctx: &ToolContext<'_>,
        arguments: &Value,
    ) -> Result<Option<Ask>, ToolError> {
        let moderators_only = match self.needs {
            Needs::Nothing => return Ok(None),
            Needs::Approval => false,
            Needs::Moderator => true,
        };
        let shown = redact_parsed(arguments, self.argument_max_chars);
        let what = crate::locale::text_with(
            ctx.turn.locale,
            "approval-outside",
            &[("tool", self.full.to_owned()), ("arguments", shown)],
        );
        Ok(Some(Ask {
            what,
            moderators_only,
        }))
    }

    async fn run(
        &self,
        _ctx: &ToolContext<'_>,
        arguments: Value,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        match self
            .caller
            .call(&self.server, &self.tool, arguments, cancel)
            .await
        {
            Ok(result) if result.is_error => Err(ToolError::Failed {
                code: Some("tool_error".into()),
                message: cut(&redact_text(&text_of(&result)), 500),
            }),
            Ok(result) => Ok(output_of(&result, self.result_max_bytes)),
            Err(error) => Err(failure_of(&error)),
        }
    }
}

/// A failed call as the model hears it: the server's own error, a cancelled call, or a server
/// that could not be reached.
fn failure_of(error: &OutsideError) -> ToolError {
    let code = match error {
        OutsideError::Unavailable(_) | OutsideError::Transport(_) => "server_unavailable",
        OutsideError::Cancelled => "cancelled",
        OutsideError::Protocol { .. } => "protocol_error",
    };
    ToolError::Failed {
        code: Some(code.into()),
        message: cut(&redact_text(&error.to_string()), 500),
    }
}

/// The result's parts as text, in order.
fn text_of(result: &OutsideResult) -> String {
    let parts: Vec<String> = result
        .content
        .iter()
        .map(|part| match part {
            Content::Text(text) => text.clone(),
            Content::Image { mime, bytes } => format!("[an image, {mime}, {bytes} bytes]"),
            Content::Other(kind) => format!("[{kind}]"),
        })
        .collect();
    parts.join("\n")
}

/// A successful result for the model: its text (and structured content, when the server gave
/// some), redacted, within `max_bytes` together; `truncated` says when something was cut.
fn output_of(result: &OutsideResult, max_bytes: usize) -> ToolOutput {
    let text = redact_text(&text_of(result));
    let structured = result
        .structured
        .as_ref()
        .map(|s| redact_text(&s.to_string()));
    let whole = text.len() + structured.as_ref().map_or(0, String::len);
    let mut data = Map::new();
    if whole <= max_bytes {
        data.insert("content".into(), Value::String(text));
        if let Some(structured) = structured.and_then(|s| serde_json::from_str(&s).ok()) {
            data.insert("structured".into(), structured);
        }
    } else {
        // Structured content is dropped before text is cut: the text is what the server says
        // to a reader.
        data.insert("content".into(), Value::String(cut_bytes(&text, max_bytes)));
        data.insert("truncated".into(), Value::Bool(true));
        data.insert("original_bytes".into(), json!(whole));
    }
    ToolOutput::data(Value::Object(data))
}

/// The longest prefix of `text` within `max` bytes, on a character boundary.
fn cut_bytes(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.get(..end).unwrap_or_default().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(schema: Value) -> OutsideToolInfo {
        OutsideToolInfo {
            server: "calendar".into(),
            name: "add_event".into(),
            description: "Adds an event.\u{7}".into(),
            input_schema: schema,
            read_only: false,
            destructive: false,
        }
    }

    struct Unreachable;

    #[async_trait]
    impl OutsideCaller for Unreachable {
        async fn call(
            &self,
            _: &str,
            _: &str,
            _: Value,
            _: &CancellationToken,
        ) -> Result<OutsideResult, OutsideError> {
            Err(OutsideError::Unavailable("test".into()))
        }
    }

    fn server() -> McpServerConfig {
        let config = crate::config::Config::shipped_defaults();
        let mut server: McpServerConfig =
            serde_json::from_value(json!({"name": "calendar", "command": "x"})).expect("server");
        server.timeout_secs = Some(config.mcp.call_timeout_secs);
        server
    }

    // SPEC E4, S4: arguments are checked against the tool's own schema, and the first error is
    // named at its JSON path without quoting the value.
    #[test]
    fn arguments_are_checked_against_the_schema_at_their_path() {
        let config = crate::config::Config::shipped_defaults();
        let schema = json!({
            "type": "object",
            "properties": {"title": {"type": "string"}, "days": {"type": "array", "items": {"type": "integer"}}},
            "required": ["title"],
            "additionalProperties": false
        });
        let timeouts = HashMap::from([("calendar__add_event".to_owned(), 7)]);
        let tool = register(
            &info(schema),
            &server(),
            &config.mcp,
            &timeouts,
            Arc::new(Unreachable),
        )
        .expect("registered");
        assert_eq!(tool.timeout, Duration::from_secs(7));
        assert_eq!(tool.name, "calendar__add_event");
        assert_eq!(tool.spec["function"]["description"], "Adds an event.");
        let err = tool
            .prepare(json!({"title": "x", "days": [1, "sk-secretsecretsecret1234"]}))
            .unwrap_err();
        assert_eq!(err.path, "$.days[1]");
        assert!(!err.message.contains("sk-secret"), "{}", err.message);
        assert_eq!(tool.prepare(json!({})).unwrap_err().path, "$");
        assert!(tool.prepare(json!({"title": "x", "extra": 1})).is_err());
        assert!(tool.prepare(json!({"title": "x"})).is_ok());
    }

    #[test]
    fn names_and_schemas_that_cannot_be_offered_are_refused() {
        assert!(full_name("calendar", "add event").is_err());
        assert!(full_name("calendar", &"x".repeat(60)).is_err());
        assert!(offered_schema(&json!({"type": "string"})).is_err());
        let huge = json!({"type": "object", "description": "x".repeat(SCHEMA_MAX_BYTES)});
        assert!(offered_schema(&huge).is_err());
    }

    // SPEC E4: a result past the bound is cut, on a character boundary, and says so.
    #[test]
    fn a_large_result_is_cut_and_marked() {
        let result = OutsideResult {
            content: vec![Content::Text("é".repeat(10_000))],
            structured: Some(json!({"n": 1})),
            is_error: false,
        };
        let output = output_of(&result, 1001);
        let data = output.data.expect("data");
        assert_eq!(data["truncated"], true);
        assert_eq!(data["content"].as_str().map(str::len), Some(1000));
        let small = output_of(&result, 1_000_000).data.expect("data");
        assert_eq!(small["structured"], json!({"n": 1}));
        assert!(small.get("truncated").is_none());
    }
}
