//! `check-config --connect`: after the settings, ask each service the bot needs whether it
//! answers and takes the bot's credentials (SPEC D10). One line each; nothing is written
//! anywhere (the database is opened, not migrated).

use std::time::Duration;

use secrecy::ExposeSecret as _;
use serde_json::Value;

use crate::config::{Config, Secrets};
use crate::discord::rest::client::{DiscordRest, GetError};
use crate::discord::rest::ratelimit::Route;
use crate::http_body::json_bounded;
use crate::storage::Database;

/// How one service answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Ok(String),
    /// A credential or setting the operator must change (exit 2).
    Refused(String),
    /// Not reachable now (exit 1).
    Unreachable(String),
}

/// What `--connect` found: the database, the provider, Discord, then each MCP server, in that
/// order.
#[derive(Debug, Clone)]
pub struct Connections(pub Vec<(String, Answer)>);

impl Connections {
    /// 0 when every service answered, 2 when one refused, else 1.
    pub fn exit_status(&self) -> u8 {
        let answers = || self.0.iter().map(|(_, a)| a);
        if answers().any(|a| matches!(a, Answer::Refused(_))) {
            2
        } else if answers().any(|a| matches!(a, Answer::Unreachable(_))) {
            1
        } else {
            0
        }
    }

    /// One line a service: `database: ok, Sqlite`.
    pub fn lines(&self) -> Vec<String> {
        self.0
            .iter()
            .map(|(service, answer)| match answer {
                Answer::Ok(what) => format!("{service}: ok, {what}"),
                Answer::Refused(why) => format!("{service}: refused: {why}"),
                Answer::Unreachable(why) => format!("{service}: not reachable: {why}"),
            })
            .collect()
    }
}

/// Largest `/models` answer read (a router lists thousands of models).
const MODELS_MAX: usize = 8 << 20;

/// Asks the database, the provider and Discord, each within its own timeout.
pub async fn check_connections(config: &Config, secrets: &Secrets) -> Connections {
    let (database, provider, discord) = tokio::join!(
        database(config, secrets),
        provider(config, secrets),
        discord(config, secrets),
    );
    let mut found = vec![
        ("database".to_owned(), database),
        ("provider".to_owned(), provider),
        ("discord".to_owned(), discord),
    ];
    found.extend(mcp_servers(config).await);
    Connections(found)
}

/// Each MCP server started or reached, with its tools listed (SPEC E4); one that cannot be is
/// not reachable (exit 1): the bot would start without its tools, and keep trying.
async fn mcp_servers(config: &Config) -> Vec<(String, Answer)> {
    crate::mcp::McpHub::probe(config)
        .await
        .into_iter()
        .map(|(name, result)| {
            let answer = match result {
                Ok(tools) if tools.is_empty() => Answer::Ok("no tools".to_owned()),
                Ok(tools) => Answer::Ok(format!("tools: {}", tools.join(", "))),
                Err(why) => Answer::Unreachable(why),
            };
            (format!("mcp {name}"), answer)
        })
        .collect()
}

async fn database(config: &Config, secrets: &Secrets) -> Answer {
    let url = secrets.database_url_or(&config.database);
    match Database::connect(&url, 1, config.database.connect_timeout()).await {
        Ok(db) => {
            let backend = db.backend();
            db.close().await;
            Answer::Ok(format!("{backend:?}"))
        }
        Err(crate::storage::StoreError::UnsupportedUrl) => {
            Answer::Refused(crate::storage::StoreError::UnsupportedUrl.to_string())
        }
        Err(error) => Answer::Unreachable(error.to_string()),
    }
}

/// `GET {base_url}/models` with the first key: the key is taken, and the first configured
/// model is listed (a server that lists none, or names it differently, is only noted).
async fn provider(config: &Config, secrets: &Secrets) -> Answer {
    let Some(key) = secrets.provider_keys.first() else {
        return Answer::Refused(format!("{} is not set", crate::config::PROVIDER_KEYS_ENV));
    };
    let client = match reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(15))
        .build()
    {
        Ok(client) => client,
        Err(error) => return Answer::Unreachable(error.to_string()),
    };
    let url = config.provider.base_url.trim_end_matches('/');
    // Shown in every line below without the credentials the URL may carry (SPEC D13).
    let base = crate::redact::shown_url(url);
    let sent = client
        .get(format!("{url}/models"))
        .bearer_auth(key.expose_secret())
        .send()
        .await;
    let response = match sent {
        Ok(response) => response,
        Err(error) => return Answer::Unreachable(format!("{base}: {}", error.without_url())),
    };
    let status = response.status();
    if matches!(status.as_u16(), 401 | 403) {
        return Answer::Refused(format!(
            "{base} answered {status} to key 1 of {}",
            crate::config::PROVIDER_KEYS_ENV
        ));
    }
    if !status.is_success() {
        // Some servers serve chat completions without a model list: the key was not refused.
        return Answer::Ok(format!("{base} answers (no model list: {status})"));
    }
    let listed: Vec<String> = json_bounded::<Value>(response, MODELS_MAX)
        .await
        .ok()
        .and_then(|v| v.get("data").and_then(Value::as_array).cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_owned))
        .collect();
    let first = config.provider.models.first().map_or("", String::as_str);
    if listed.iter().any(|m| m == first) {
        Answer::Ok(format!("{base} answers and lists model {first}"))
    } else {
        let shown: Vec<&str> = listed.iter().take(5).map(String::as_str).collect();
        Answer::Ok(format!(
            "{base} answers, but does not list model {first} (it lists {} models: {}{})",
            listed.len(),
            shown.join(", "),
            if listed.len() > shown.len() {
                ", ..."
            } else {
                ""
            }
        ))
    }
}

/// `GET /users/@me` with the token: who the bot is.
/// The application's flags that grant the Message Content intent: `GATEWAY_MESSAGE_CONTENT`
/// (a verified bot) and `GATEWAY_MESSAGE_CONTENT_LIMITED` (one in fewer than 100 servers).
const MESSAGE_CONTENT_FLAGS: u64 = (1 << 18) | (1 << 19);

/// What the application's flags say of the Message Content intent (SPEC D14): nothing when it
/// is granted or the flags cannot be read, else what the bot will do without it.
async fn message_content(rest: &DiscordRest) -> &'static str {
    let route = Route {
        template: "GET /oauth2/applications/@me",
        major: 0,
        local_per_5s: None,
    };
    match rest.get_answer(route, "/oauth2/applications/@me").await {
        Ok(app)
            if app.get("flags").and_then(Value::as_u64).unwrap_or(0) & MESSAGE_CONTENT_FLAGS
                == 0 =>
        {
            "; the Message Content intent is not granted: the bot will connect without it \
             (mentions, replies, DMs and commands only; trigger words, always-reply channels, \
             follow-ups without a mention and random turns off)"
        }
        _ => "",
    }
}

async fn discord(config: &Config, secrets: &Secrets) -> Answer {
    let Some(token) = &secrets.discord_token else {
        return Answer::Refused(format!("{} is not set", crate::config::DISCORD_TOKEN_ENV));
    };
    let rest = match DiscordRest::new(&config.discord, token) {
        Ok(rest) => rest,
        Err(error) => return Answer::Unreachable(error.to_string()),
    };
    let route = Route {
        template: "GET /users/@me",
        major: 0,
        local_per_5s: None,
    };
    match rest.get_answer(route, "/users/@me").await {
        Ok(me) => {
            let name = me.get("username").and_then(Value::as_str).unwrap_or("?");
            let id = me.get("id").and_then(Value::as_str).unwrap_or("?");
            let content = message_content(&rest).await;
            Answer::Ok(format!(
                "{} accepts the token of {name} ({id}){content}",
                rest.base()
            ))
        }
        Err(GetError::Status(401)) => Answer::Refused(crate::discord::TokenRejected.to_string()),
        Err(error) => Answer::Unreachable(format!("{}: {error}", rest.base())),
    }
}
