//! A real MCP server for the tests, built with `rmcp`: the same tools over stdio (this test
//! binary, started again by the bot as its child process) and over streamable HTTP (served in
//! the test process). What it is asked and does goes, a line each, to a log file the test reads,
//! so a call made in a child process is seen as well as one made here.
//!
//! Its tools: `lookup` (read-only), `add_note` (an effect), `wipe` (destructive), `slow` (waits a
//! minute unless cancelled), `big` (10 MB of text), `fail` (an error naming a secret), `grow`
//! (adds `extra` to its list and says so), `crash` (the process exits: stdio only).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// The secret `fail` names: it must not reach the thought log or the model.
pub const SECRET: &str = "sk-live-abcdefghijklmnopqrstuvwxyz123456";
/// The argument that marks this test binary, started again, as the stdio server.
pub const CHILD_ARG: &str = "mcp-child-log=";

#[derive(Clone)]
pub struct TestServer {
    log: PathBuf,
    grown: Arc<AtomicBool>,
}

fn schema(value: Value) -> Arc<JsonObject> {
    Arc::new(value.as_object().cloned().unwrap_or_default())
}

fn text(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

impl TestServer {
    pub fn new(log: &Path) -> Self {
        let server = Self {
            log: log.to_path_buf(),
            grown: Arc::new(AtomicBool::new(false)),
        };
        server.note("started");
        server
    }

    fn note(&self, line: &str) {
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
        {
            let _ = writeln!(file, "{line}");
        }
    }

    fn tools(&self) -> Vec<Tool> {
        let query = schema(json!({
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to look up"}},
            "required": ["query"],
            "additionalProperties": false
        }));
        let none = schema(json!({"type": "object", "properties": {}}));
        let read_only = ToolAnnotations::new().read_only(true);
        let mut tools = vec![
            Tool::new("lookup", "Looks something up.", query).with_annotations(read_only.clone()),
            Tool::new(
                "add_note",
                "Adds a note to the team's notebook.",
                schema(json!({
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "required": ["text"]
                })),
            ),
            Tool::new("wipe", "Deletes every note.", none.clone())
                .with_annotations(ToolAnnotations::new().destructive(true)),
            Tool::new("slow", "Takes a minute.", none.clone()).with_annotations(read_only.clone()),
            Tool::new("big", "Returns a lot.", none.clone()).with_annotations(read_only.clone()),
            Tool::new("fail", "Always fails.", none.clone()).with_annotations(read_only.clone()),
            Tool::new("grow", "Adds a tool.", none.clone()).with_annotations(read_only.clone()),
            Tool::new("crash", "Exits.", none.clone()).with_annotations(read_only.clone()),
        ];
        if self.grown.load(Ordering::SeqCst) {
            tools.push(Tool::new("extra", "A tool added later.", none).with_annotations(read_only));
        }
        tools
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult {
            tools: self.tools(),
            ..Default::default()
        })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        self.note(&format!("call {} {args}", request.name));
        let result = match &*request.name {
            "lookup" => text(format!("found: {}", args["query"].as_str().unwrap_or(""))),
            "add_note" => {
                self.note(&format!("effect add_note {}", args["text"]));
                text("noted")
            }
            "wipe" => {
                self.note("effect wipe");
                text("wiped")
            }
            "slow" => tokio::select! {
                () = context.ct.cancelled() => {
                    self.note("cancelled slow");
                    return Err(ErrorData::internal_error("cancelled", None));
                }
                () = tokio::time::sleep(Duration::from_secs(60)) => text("slept"),
            },
            "big" => text("x".repeat(10 << 20)),
            "fail" => CallToolResult::error(vec![ContentBlock::text(format!(
                "upstream refused the key {SECRET}"
            ))]),
            "grow" => {
                self.grown.store(true, Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                text("grown")
            }
            "crash" => {
                self.note("crash");
                std::process::exit(3)
            }
            "extra" => text("extra ran"),
            _ => return Err(ErrorData::invalid_params("no such tool", None)),
        };
        Ok(result.into())
    }
}

/// When this test binary was started as the stdio server (its arguments carry [`CHILD_ARG`]),
/// serves on standard input and output until the bot closes them, and returns `true`.
pub async fn serve_stdio_if_child() -> bool {
    let Some(log) = std::env::args().find_map(|a| a.strip_prefix(CHILD_ARG).map(PathBuf::from))
    else {
        return false;
    };
    let server = TestServer::new(&log);
    if let Ok(running) = server.serve(rmcp::transport::stdio()).await {
        let _ = running.waiting().await;
    }
    true
}

/// The command and arguments that start this test binary as the stdio server, logging to
/// `log`: its own test `filter` (an ignored test that calls [`serve_stdio_if_child`]).
pub fn stdio_command(filter: &str, log: &Path) -> (String, Vec<String>) {
    let exe = std::env::current_exe().expect("the test binary");
    (
        exe.display().to_string(),
        vec![
            filter.to_owned(),
            "--exact".to_owned(),
            "--ignored".to_owned(),
            "--nocapture".to_owned(),
            format!("{CHILD_ARG}{}", log.display()),
        ],
    )
}

/// Serves the same tools over streamable HTTP on 127.0.0.1; its URL.
pub async fn serve_http(log: &Path) -> String {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let server = TestServer::new(log);
    let service: StreamableHttpService<TestServer, LocalSessionManager> =
        StreamableHttpService::new(
            move || Ok(server.clone()),
            Default::default(),
            StreamableHttpServerConfig::default(),
        );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    format!("http://127.0.0.1:{port}/mcp")
}

/// The log's lines so far.
pub fn log_lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}
