//! Outside tools over the Model Context Protocol (SPEC E4): the servers the operator names, and
//! the bounds every call of theirs runs under. A server is a command started with arguments
//! (stdio) or a streamable-HTTP URL; whatever it needs that is secret comes from the bot's
//! environment by name, never from a file.

use serde::Deserialize;

use super::bound::{Bound, Read, Unit, WEEK_SECS};
use super::{ConfigError, cut};

/// Longest server name: `name__tool` must fit the 64 characters a function name may have.
pub const SERVER_NAME_MAX: usize = 24;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// Longest one call may take, for a server that names no `timeout_secs` of its own.
    pub call_timeout_secs: u64,
    /// Most bytes of one result the model is given; the rest is cut, and the model is told.
    pub result_max_bytes: u64,
    /// Longest tool description shown to the model, in characters.
    pub description_max_chars: u64,
    /// Most tools taken from one server; the rest are left out, with a warning.
    pub max_tools_per_server: u64,
    /// Longest wait before a server that died or could not be reached is tried again (the
    /// wait starts at one second and doubles).
    pub restart_max_backoff_secs: u64,
    /// Longest wait for a server to start (or answer) and list its tools.
    pub connect_timeout_secs: u64,
    pub servers: Vec<McpServerConfig>,
}

/// Whether a call of a server's tools waits for someone's approval (SPEC E3, E4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalPolicy {
    /// Every tool that does not say it only reads asks first.
    #[default]
    Ask,
    /// Tools run without asking, except a destructive one, which always asks a moderator.
    Never,
}

/// One header of a streamable-HTTP server, its value read from the bot's environment.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeaderFromEnv {
    /// The header's name, like `Authorization`.
    pub name: String,
    /// The environment variable whose value is sent.
    pub from_env: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The server's name: its tools are offered as `name__tool`; `/tools mcp` names it.
    pub name: String,
    /// A program to start, speaking MCP on its standard input and output.
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Names of the bot's environment variables the program gets. It gets no others, but for
    /// `PATH`, `HOME`, `LANG` and `TMPDIR`: the bot's token and keys stay with the bot.
    #[serde(default)]
    pub env: Vec<String>,
    /// Or the URL of a streamable-HTTP server.
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub headers: Vec<HeaderFromEnv>,
    /// The roles that may call its tools (the persona's alone unless named): `persona`,
    /// `reviewer`, `image_planner`.
    #[serde(default = "persona_only")]
    pub roles: Vec<String>,
    #[serde(default)]
    pub approval: ApprovalPolicy,
    /// Its calls' own timeout; `None`: `mcp.call_timeout_secs`.
    #[serde(default)]
    pub timeout_secs: Option<u64>,
}

fn persona_only() -> Vec<String> {
    vec!["persona".to_owned()]
}

/// The roles a server's tools may be given (the names `domain::role::Role` reads).
pub const ROLE_NAMES: [&str; 3] = ["persona", "reviewer", "image_planner"];

impl McpServerConfig {
    /// Its calls' timeout in seconds.
    pub fn timeout_secs(&self, mcp: &McpConfig) -> u64 {
        self.timeout_secs.unwrap_or(mcp.call_timeout_secs)
    }
}

/// A server name as tool names can carry it: lower-case letters, digits and `-`, and no `__`.
fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() || name.len() > SERVER_NAME_MAX {
        return Some("must have 1 to 24 characters");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Some("may hold only lower-case letters, digits and -");
    }
    None
}

/// An environment variable's name: letters, digits and `_`, not starting with a digit.
fn is_variable_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl McpConfig {
    /// Each server has a unique, well-formed name and exactly one of a command and a URL; its
    /// variables are names, its roles not empty.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let problem = |key: String, problem: String| ConfigError::Key { key, problem };
        for (n, server) in self.servers.iter().enumerate() {
            let key = |field: &str| format!("mcp.servers[{n}].{field}");
            if let Some(p) = name_problem(&server.name) {
                return Err(problem(key("name"), p.to_owned()));
            }
            if self.servers.iter().take(n).any(|s| s.name == server.name) {
                return Err(problem(
                    key("name"),
                    format!("{} is named twice", server.name),
                ));
            }
            match (&server.command, &server.url) {
                (Some(command), None) if !command.trim().is_empty() => {}
                (None, Some(url)) => {
                    if let Some(p) = super::http_url_problem(url) {
                        return Err(problem(key("url"), p.to_owned()));
                    }
                }
                _ => {
                    return Err(problem(
                        key("command"),
                        "give exactly one of command (stdio) and url (streamable HTTP)".into(),
                    ));
                }
            }
            let names = server
                .env
                .iter()
                .chain(server.headers.iter().map(|h| &h.from_env));
            if let Some(bad) = names.into_iter().find(|v| !is_variable_name(v)) {
                return Err(problem(
                    key("env"),
                    format!("{} is not an environment variable's name", cut(bad)),
                ));
            }
            if server.url.is_none() && !server.headers.is_empty() {
                return Err(problem(
                    key("headers"),
                    "only a url server sends headers".into(),
                ));
            }
            if server
                .timeout_secs
                .is_some_and(|t| !(1..=3600).contains(&t))
            {
                return Err(problem(
                    key("timeout_secs"),
                    "must be from 1 to 3600 s".into(),
                ));
            }
            if server.roles.is_empty() {
                return Err(problem(key("roles"), "must name at least one role".into()));
            }
            if let Some(bad) = server
                .roles
                .iter()
                .find(|r| !ROLE_NAMES.contains(&r.as_str()))
            {
                return Err(problem(
                    key("roles"),
                    format!(
                        "{} is not a role (persona, reviewer or image_planner)",
                        cut(bad)
                    ),
                ));
            }
        }
        Ok(())
    }
}

pub(super) const BOUNDS: &[Bound] = &[
    Bound {
        key: "mcp.call_timeout_secs",
        least: 1,
        most: 3600,
        unit: Unit::Secs,
        read: Read::One(|c| c.mcp.call_timeout_secs),
    },
    Bound {
        key: "mcp.result_max_bytes",
        least: 256,
        most: 1_048_576,
        unit: Unit::Bytes,
        read: Read::One(|c| c.mcp.result_max_bytes),
    },
    Bound {
        key: "mcp.description_max_chars",
        least: 16,
        most: 2000,
        unit: Unit::Chars,
        read: Read::One(|c| c.mcp.description_max_chars),
    },
    Bound {
        key: "mcp.max_tools_per_server",
        least: 1,
        most: 128,
        unit: Unit::Count,
        read: Read::One(|c| c.mcp.max_tools_per_server),
    },
    Bound {
        key: "mcp.restart_max_backoff_secs",
        least: 1,
        most: WEEK_SECS,
        unit: Unit::Secs,
        read: Read::One(|c| c.mcp.restart_max_backoff_secs),
    },
    Bound {
        key: "mcp.connect_timeout_secs",
        least: 1,
        most: 600,
        unit: Unit::Secs,
        read: Read::One(|c| c.mcp.connect_timeout_secs),
    },
];
