//! The MCP client (SPEC E4), with the official Rust SDK (`rmcp`): one task per configured
//! server starts it (stdio) or reaches it (streamable HTTP), lists its tools, lists them again
//! when the server says they changed, and starts or reaches it again, with a doubling wait,
//! when it dies. The tools are registered through `crate::tools::outside`, which puts them
//! through the same gates as the bot's own; this module only carries calls.
//!
//! - A program gets no environment but `PATH`, `HOME`, `LANG`, `TMPDIR` and the variables its
//!   entry names: the bot's token and keys never reach it.
//! - A header's value is read from the environment when the server is reached; its name and
//!   variable are all an error says.
//! - A call stopped by `/kill` or its timeout is abandoned, and the SDK tells the server
//!   (`notifications/cancelled`).
//! - Every frame the SDK reads is bounded (16 MiB a line or event); what reaches the model is
//!   bounded again by `mcp.result_max_bytes`.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{CallToolRequestParams, ContentBlock, Tool};
use rmcp::service::{NotificationContext, Peer, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, McpConfig, McpServerConfig};
use crate::redact::{cut, redact_text};
use crate::tools::RegisteredTool;
use crate::tools::outside::{
    Content, OutsideCaller, OutsideCatalog, OutsideError, OutsideResult, OutsideToolInfo,
    ServerHealth, register,
};

/// Calls of outside tools, by `server` and `outcome` (`ok`, `tool_error`, `protocol_error`,
/// `unavailable`, `cancelled`).
pub const MCP_CALLS: &str = "persona_bot_mcp_calls_total";

/// The variables every program gets, when the bot has them: enough to find and run `npx`,
/// `uvx` or a binary, and nothing secret.
const PASSED: [&str; 4] = ["PATH", "HOME", "LANG", "TMPDIR"];
/// How often a connected server is checked for having gone away.
const ALIVE_EVERY: Duration = Duration::from_millis(250);

type Service = RunningService<RoleClient, Watcher>;

/// Hears `notifications/tools/list_changed`.
struct Watcher {
    changed: Arc<Notify>,
}

impl ClientHandler for Watcher {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.changed.notify_one();
        std::future::ready(())
    }
}

/// One configured server and where it stands.
struct Slot {
    server: McpServerConfig,
    state: Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    peer: Option<Peer<RoleClient>>,
    tools: Vec<Arc<RegisteredTool>>,
    last_error: Option<String>,
}

impl Slot {
    fn state(&self) -> std::sync::MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn failed(&self, error: String) {
        tracing::warn!(server = %self.server.name, %error, "MCP server unavailable");
        let mut state = self.state();
        state.peer = None;
        state.tools.clear();
        state.last_error = Some(error);
    }
}

/// One server's first attempt, counted when dropped (done, failed, or stopped).
struct FirstAttempt<'a>(&'a tokio::sync::watch::Sender<usize>);

impl Drop for FirstAttempt<'_> {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n += 1);
    }
}

/// Every configured server: the catalog of their tools and the carrier of their calls.
pub struct McpHub {
    slots: Vec<Arc<Slot>>,
    mcp: McpConfig,
    /// `tools.timeouts_secs`: a tool's own timeout, by its full name.
    timeouts: HashMap<String, u64>,
    /// How many servers have had their first attempt (connected, or failed).
    attempted: tokio::sync::watch::Sender<usize>,
}

impl McpHub {
    pub fn new(config: &Config) -> Arc<Self> {
        let mcp = &config.mcp;
        Arc::new(Self {
            slots: mcp
                .servers
                .iter()
                .map(|server| {
                    Arc::new(Slot {
                        server: server.clone(),
                        state: Mutex::new(SlotState::default()),
                    })
                })
                .collect(),
            mcp: mcp.clone(),
            timeouts: config.tools.timeouts_secs.clone().into_iter().collect(),
            attempted: tokio::sync::watch::Sender::new(0),
        })
    }

    /// Waits until every server has had its first attempt (each is bounded by
    /// `mcp.connect_timeout_secs`, and they run at once).
    pub async fn first_attempts(&self) {
        let mut attempted = self.attempted.subscribe();
        let all = self.slots.len();
        let _ = attempted.wait_for(|n| *n >= all).await;
    }

    /// Starts one task a server, each keeping it connected until `stop` fires.
    pub fn start(self: &Arc<Self>, shutdown: &crate::shutdown::Shutdown) {
        for slot in &self.slots {
            let hub = self.clone();
            let slot = slot.clone();
            let stop = shutdown.token().clone();
            shutdown.spawn(async move { hub.keep(slot, stop).await });
        }
    }

    fn slot(&self, server: &str) -> Option<&Arc<Slot>> {
        self.slots.iter().find(|s| s.server.name == server)
    }

    /// Keeps `slot` connected: connect, list, watch; after a failure wait 1 s, 2 s, 4 s... up
    /// to `mcp.restart_max_backoff_secs`.
    async fn keep(self: Arc<Self>, slot: Arc<Slot>, stop: CancellationToken) {
        let most = Duration::from_secs(self.mcp.restart_max_backoff_secs);
        let mut wait = Duration::from_secs(1);
        // Counts this server's first attempt however it ends, a stop included, so start-up
        // never waits on a server that was given no chance.
        let mut first = Some(FirstAttempt(&self.attempted));
        while !stop.is_cancelled() {
            let changed = Arc::new(Notify::new());
            let connected = tokio::select! {
                () = stop.cancelled() => return,
                connected = connect(&slot.server, &self.mcp, changed.clone()) => connected,
            };
            match connected {
                Ok(service) => {
                    wait = Duration::from_secs(1);
                    let listed = self.listed(&slot, &service).await;
                    first.take();
                    if listed {
                        self.serve(&slot, service, &changed, &stop).await;
                    }
                }
                Err(error) => {
                    slot.failed(error);
                    first.take();
                }
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(wait) => {}
            }
            wait = (wait * 2).min(most);
        }
    }

    /// A connected server: its tools listed now and whenever it says they changed, until it
    /// goes away or the bot stops.
    async fn serve(
        self: &Arc<Self>,
        slot: &Arc<Slot>,
        mut service: Service,
        changed: &Notify,
        stop: &CancellationToken,
    ) {
        loop {
            loop {
                tokio::select! {
                    () = stop.cancelled() => {
                        let _ = service.close().await;
                        let mut state = slot.state();
                        state.peer = None;
                        state.tools.clear();
                        return;
                    }
                    () = changed.notified() => break,
                    () = tokio::time::sleep(ALIVE_EVERY) => {
                        if service.peer().is_transport_closed() || service.is_closed() {
                            slot.failed("the connection closed".to_owned());
                            return;
                        }
                    }
                }
            }
            if !self.listed(slot, &service).await {
                let _ = service.close().await;
                return;
            }
        }
    }

    /// Lists the tools of a connected server; `false` (and the server marked failed) when it
    /// could not.
    async fn listed(self: &Arc<Self>, slot: &Slot, service: &Service) -> bool {
        match self.list(slot, service.peer()).await {
            Ok(count) => {
                tracing::info!(server = %slot.server.name, tools = count, "MCP server tools listed");
                true
            }
            Err(error) => {
                slot.failed(error);
                false
            }
        }
    }

    /// Lists the server's tools and registers them; returns how many are offered.
    async fn list(self: &Arc<Self>, slot: &Slot, peer: &Peer<RoleClient>) -> Result<usize, String> {
        let timeout = Duration::from_secs(self.mcp.connect_timeout_secs);
        let listed = tokio::time::timeout(timeout, peer.list_all_tools())
            .await
            .map_err(|_| format!("tools/list took over {} s", timeout.as_secs()))?
            .map_err(|e| format!("tools/list failed: {}", shown_error(&e.to_string())))?;
        let (tools, problems) = self.registered(&slot.server, &listed);
        let count = tools.len();
        let mut state = slot.state();
        state.peer = Some(peer.clone());
        state.tools = tools;
        state.last_error = problems;
        Ok(count)
    }

    /// The listed tools registered, at most `mcp.max_tools_per_server`; what was left out, and
    /// why, as one line.
    fn registered(
        self: &Arc<Self>,
        server: &McpServerConfig,
        listed: &[Tool],
    ) -> (Vec<Arc<RegisteredTool>>, Option<String>) {
        let most = usize::try_from(self.mcp.max_tools_per_server).unwrap_or(usize::MAX);
        let caller: Arc<dyn OutsideCaller> = self.clone();
        let mut problems = Vec::new();
        let mut tools = Vec::new();
        for tool in listed {
            if tools.len() == most {
                problems.push(format!(
                    "{} more tools left out (at most {most})",
                    listed.len() - most
                ));
                break;
            }
            match register(
                &info_of(&server.name, tool),
                server,
                &self.mcp,
                &self.timeouts,
                caller.clone(),
            ) {
                Ok(registered) => tools.push(Arc::new(registered)),
                Err(why) => problems.push(format!("{}: {why}", cut(&tool.name, 64))),
            }
        }
        for problem in &problems {
            tracing::warn!(server = %server.name, %problem, "an MCP tool is not offered");
        }
        let problems = (!problems.is_empty()).then(|| cut(&problems.join("; "), 300));
        (tools, problems)
    }

    /// Connects to every server once, lists its tools, and disconnects: `check-config
    /// --connect`. Each server's tool names, or why it could not be reached.
    pub async fn probe(config: &Config) -> Vec<(String, Result<Vec<String>, String>)> {
        let mcp = &config.mcp;
        let hub = Self::new(config);
        let mut found = Vec::new();
        for slot in &hub.slots {
            let result = match connect(&slot.server, mcp, Arc::new(Notify::new())).await {
                Ok(mut service) => {
                    let listed = hub.list(slot, service.peer()).await;
                    let _ = service.close().await;
                    listed.map(|_| {
                        slot.state()
                            .tools
                            .iter()
                            .map(|t| t.name.to_owned())
                            .collect()
                    })
                }
                Err(error) => Err(error),
            };
            found.push((slot.server.name.clone(), result));
        }
        found
    }
}

/// A listed tool as the tools layer takes it. `destructiveHint` counts only when a server says
/// it (the protocol's default for an unannotated tool is destructive, which would make every
/// such tool a moderator's decision and `approval = "never"` mean nothing).
fn info_of(server: &str, tool: &Tool) -> OutsideToolInfo {
    let annotations = tool.annotations.as_ref();
    let read_only = annotations.and_then(|a| a.read_only_hint) == Some(true);
    OutsideToolInfo {
        server: server.to_owned(),
        name: tool.name.to_string(),
        description: tool.description.as_deref().unwrap_or_default().to_owned(),
        input_schema: Value::Object((*tool.input_schema).clone()),
        read_only,
        destructive: !read_only && annotations.and_then(|a| a.destructive_hint) == Some(true),
    }
}

/// An error's text without secrets or URL credentials, on one line, bounded.
fn shown_error(text: &str) -> String {
    let line = text.replace(['\n', '\r'], " ");
    cut(&redact_text(&line), 300)
}

/// Starts or reaches `server` and completes the handshake, within `mcp.connect_timeout_secs`.
async fn connect(
    server: &McpServerConfig,
    mcp: &McpConfig,
    changed: Arc<Notify>,
) -> Result<Service, String> {
    let handler = Watcher { changed };
    let timeout = Duration::from_secs(mcp.connect_timeout_secs);
    let started = if let Some(command) = &server.command {
        let transport = child(server, command)?;
        tokio::time::timeout(timeout, handler.serve(transport))
            .await
            .map_err(|_| format!("no handshake within {} s", timeout.as_secs()))?
            .map_err(|e| e.to_string())
    } else {
        let transport = http(server)?;
        tokio::time::timeout(timeout, handler.serve(transport))
            .await
            .map_err(|_| format!("no handshake within {} s", timeout.as_secs()))?
            .map_err(|e| e.to_string())
    };
    started.map_err(|e| format!("handshake failed: {}", shown_error(&e)))
}

/// The program started with its arguments and the environment it may have.
fn child(server: &McpServerConfig, command: &str) -> Result<TokioChildProcess, String> {
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(&server.args).env_clear().kill_on_drop(true);
    for name in PASSED
        .iter()
        .copied()
        .chain(server.env.iter().map(String::as_str))
    {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("could not start {}: {e}", cut(command, 100)))?;
    Ok(transport)
}

/// The streamable-HTTP transport with the entry's headers, read from the environment now.
fn http(
    server: &McpServerConfig,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, String> {
    crate::http_body::install_crypto_provider();
    let url = server.url.as_deref().unwrap_or_default();
    let mut headers = HashMap::new();
    for header in &server.headers {
        let value = std::env::var(&header.from_env).map_err(|_| {
            format!(
                "header {}: the environment variable {} is not set",
                cut(&header.name, 40),
                header.from_env
            )
        })?;
        let name = http::HeaderName::try_from(header.name.as_str())
            .map_err(|_| format!("{} is not a header name", cut(&header.name, 40)))?;
        let mut value = http::HeaderValue::try_from(value).map_err(|_| {
            format!(
                "the value of {} cannot be sent in a header",
                header.from_env
            )
        })?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| format!("HTTP client: {e}"))?;
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
    Ok(StreamableHttpClientTransport::with_client(client, config))
}

impl OutsideCatalog for McpHub {
    fn tools(&self) -> Arc<[Arc<RegisteredTool>]> {
        self.slots
            .iter()
            .flat_map(|slot| slot.state().tools.clone())
            .collect()
    }

    fn health(&self) -> Vec<ServerHealth> {
        self.slots
            .iter()
            .map(|slot| {
                let state = slot.state();
                ServerHealth {
                    name: slot.server.name.clone(),
                    connected: state.peer.is_some(),
                    tools: state.tools.len(),
                    last_error: state.last_error.clone(),
                }
            })
            .collect()
    }
}

#[async_trait]
impl OutsideCaller for McpHub {
    async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
        cancel: &CancellationToken,
    ) -> Result<OutsideResult, OutsideError> {
        let peer = self.slot(server).map_or_else(
            || Err("not configured".to_owned()),
            |slot| {
                let state = slot.state();
                state.peer.clone().ok_or_else(|| {
                    (state.last_error.clone()).unwrap_or_else(|| "not connected".to_owned())
                })
            },
        );
        let result = match peer {
            Err(why) => Err(OutsideError::Unavailable(why)),
            Ok(peer) => call(&peer, tool, arguments, cancel).await,
        };
        let outcome = match &result {
            Ok(r) if r.is_error => "tool_error",
            Ok(_) => "ok",
            Err(OutsideError::Cancelled) => "cancelled",
            Err(OutsideError::Protocol { .. }) => "protocol_error",
            Err(OutsideError::Unavailable(_) | OutsideError::Transport(_)) => "unavailable",
        };
        metrics::counter!(MCP_CALLS, "server" => server.to_owned(), "outcome" => outcome)
            .increment(1);
        result
    }
}

/// One `tools/call`, abandoned when `cancel` fires: dropping the SDK's request sends the
/// server `notifications/cancelled`.
async fn call(
    peer: &Peer<RoleClient>,
    tool: &str,
    arguments: Value,
    cancel: &CancellationToken,
) -> Result<OutsideResult, OutsideError> {
    let arguments = match arguments {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    let response = tokio::select! {
        biased;
        () = cancel.cancelled() => return Err(OutsideError::Cancelled),
        response = peer.call_tool(params) => response,
    };
    match response {
        Ok(result) => Ok(OutsideResult {
            content: result.content.iter().map(content_of).collect(),
            structured: result.structured_content,
            is_error: result.is_error == Some(true),
        }),
        Err(rmcp::ServiceError::McpError(error)) => Err(OutsideError::Protocol {
            code: i64::from(error.code.0),
            message: shown_error(&error.message),
        }),
        Err(error) => Err(OutsideError::Transport(shown_error(&error.to_string()))),
    }
}

/// One part of a result. An image is named with its type and decoded size, never fetched or
/// decoded; a link a tool returns is text, never fetched.
fn content_of(block: &ContentBlock) -> Content {
    match block {
        ContentBlock::Text(text) => Content::Text(text.text.clone()),
        ContentBlock::Image(image) => Content::Image {
            mime: cut(&image.mime_type, 40),
            bytes: image.data.len() / 4 * 3,
        },
        ContentBlock::Audio(_) => Content::Other("audio".to_owned()),
        ContentBlock::Resource(resource) => match &resource.resource {
            rmcp::model::ResourceContents::TextResourceContents { text, .. } => {
                Content::Text(text.clone())
            }
            _ => Content::Other("a binary resource".to_owned()),
        },
        ContentBlock::ResourceLink(link) => {
            Content::Text(format!("[a link: {}]", cut(&link.uri, 200)))
        }
        _ => Content::Other("content of a kind this bot does not read".to_owned()),
    }
}
