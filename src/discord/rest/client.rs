//! The bot's REST client: every call to Discord's REST API (messages, webhook posts, files,
//! typing, DMs, reads, command registration) goes through it, on its own HTTP client, because
//! delivery must see every 429 itself: serenity with its rate limiter off
//! (required behind a proxy) turns a 429 into a decode error and loses `retry_after`.
//!
//! Every request waits in the [`Scheduler`] until the limits it knows allow it (the bucket's
//! window from Discord's headers, the process's global budget), a 429 is still waited out for
//! exactly its `retry_after` (a global one holds every request), and a message send retries a
//! 5xx or a lost connection with the same `nonce` and `enforce_nonce`, so Discord never posts it
//! twice. Chat text is never dropped for a rate limit; only a thought-log turn summary is,
//! rather than make a failure notice wait ([`DiscordRest::create_message_unless_busy`]).

use std::time::Duration;

use super::ratelimit::{Permit, RATE_LIMITED, RateHeaders, Route, Scheduler, bounded_wait};
use crate::config::DiscordConfig;
use crate::http_body::{ERROR_TEXT_MAX, json_bounded};
use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;

/// Retries of one message after a 5xx or a lost connection.
const SERVER_RETRIES: u32 = 3;
/// Longest single wait a 429 may ask for before the send is given up. Discord's real waits are
/// seconds (a route's window, or about one for a global limit); a longer one is a ban, a broken
/// proxy or junk (`1e20`, `inf`), and a chat reply held past a minute has lost its conversation.
const LONGEST_RATE_LIMIT_WAIT: Duration = Duration::from_secs(60);
/// Largest REST answer read: a page of 100 messages with embeds and referenced messages stays
/// far below it.
const ANSWER_MAX: usize = 8 << 20;
/// The wait a 429 gets when neither its body nor its headers give a usable number.
const DEFAULT_RATE_LIMIT_WAIT: Duration = Duration::from_secs(1);

/// A channel webhook: its id, and its token, a credential (in no log).
#[derive(Clone)]
pub struct Hook {
    pub id: u64,
    pub token: SecretString,
}

impl std::fmt::Debug for Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hook")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// An interaction's answer: the application, the interaction, and its token, a credential that
/// lives 15 minutes (in no log).
#[derive(Clone)]
pub struct InteractionToken {
    pub application: u64,
    pub interaction: u64,
    pub token: SecretString,
}

impl std::fmt::Debug for InteractionToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InteractionToken")
            .field("interaction", &self.interaction)
            .finish_non_exhaustive()
    }
}

/// Why a send did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendError {
    /// Discord definitely refused (4xx other than 429): nothing was posted.
    Refused {
        status: u16,
        code: i64,
        message: String,
    },
    /// No answer we can trust: it may or may not have been posted.
    Unconfirmed(String),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Refused {
                status,
                code,
                message,
            } => write!(f, "Discord refused ({status}, code {code}): {message}"),
            Self::Unconfirmed(why) => write!(f, "delivery unconfirmed: {why}"),
        }
    }
}

const MESSAGES: &str = "POST /channels/{}/messages";
const TYPING: &str = "POST /channels/{}/typing";
/// Adding and removing the bot's reactions: one bucket per channel.
const REACTIONS: &str = "PUT|DELETE /channels/{}/messages/{}/reactions/{}/@me";

pub struct DiscordRest {
    http: reqwest::Client,
    /// `{base}/api/v10`
    api: String,
    authorization: SecretString,
    /// Message creates allowed per channel in any 5 s while Discord's headers say nothing.
    per_5s: u32,
    max_rate_limit_waits: u32,
    scheduler: Scheduler,
}

impl DiscordRest {
    /// `config.api_base_url` is empty for Discord itself, or a proxy such as the tests' fake
    /// Discord.
    pub fn new(config: &DiscordConfig, token: &SecretString) -> Result<Self, reqwest::Error> {
        let base = if config.api_base_url.is_empty() {
            "https://discord.com"
        } else {
            config.api_base_url.trim_end_matches('/')
        };
        let token = token.expose_secret().trim();
        let authorization = if token.starts_with("Bot ") {
            token.to_owned()
        } else {
            format!("Bot {token}")
        };
        Ok(Self {
            http: reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(config.request_timeout_secs.min(10)))
                .timeout(Duration::from_secs(config.request_timeout_secs))
                .user_agent("DiscordBot (https://github.com/persona-bot, 0.1)")
                .build()?,
            api: format!("{base}/api/v10"),
            authorization: SecretString::from(authorization),
            per_5s: config.channel_messages_per_5s,
            max_rate_limit_waits: config.max_rate_limit_waits,
            scheduler: Scheduler::new(
                config.global_requests_per_second,
                Duration::from_secs(config.rate_bucket_idle_secs),
            ),
        })
    }

    /// Where requests go (`{base}/api/v10`), as logs and printed lines show it: without
    /// credentials a proxy's URL may carry (SPEC D13).
    pub fn base(&self) -> String {
        crate::redact::shown_url(&self.api)
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.api))
            .header(
                reqwest::header::AUTHORIZATION,
                self.authorization.expose_secret(),
            )
    }

    fn messages(&self, channel: u64) -> Route {
        Route {
            template: MESSAGES,
            major: channel,
            local_per_5s: Some(self.per_5s),
        }
    }

    /// Posts a message (`POST /channels/{id}/messages`). `body` should carry a `nonce` with
    /// `enforce_nonce: true`, which makes the retries here safe.
    pub async fn create_message(&self, channel: u64, body: &Value) -> Result<Value, SendError> {
        let path = format!("/channels/{channel}/messages");
        self.post_message(channel, || {
            self.request(reqwest::Method::POST, &path).json(body)
        })
        .await
    }

    /// [`Self::create_message`] for a message that is dropped rather than kept waiting (a
    /// thought-log summary): `None`, with nothing sent, when the channel's bucket is busy or
    /// would be left no place for the next message; sent once, and a 429 not waited out.
    pub async fn create_message_unless_busy(
        &self,
        channel: u64,
        body: &Value,
    ) -> Option<Result<Value, SendError>> {
        let route = self.messages(channel);
        let permit = self.scheduler.try_acquire_spare(route)?;
        let path = format!("/channels/{channel}/messages");
        let make = || self.request(reqwest::Method::POST, &path).json(body);
        Some(
            match self
                .exchange_held(permit, route, make, Retry::Droppable)
                .await
            {
                Ok(response) => message_answer(response).await,
                Err(error) => Err(error),
            },
        )
    }

    /// Posts a message with one file attached (multipart), as [`Self::create_message`].
    pub async fn create_message_with_file(
        &self,
        channel: u64,
        body: &Value,
        file: &[u8],
        filename: &str,
        mime: &str,
    ) -> Result<Value, SendError> {
        let path = format!("/channels/{channel}/messages");
        let mut payload = body.clone();
        if let Some(map) = payload.as_object_mut() {
            map.insert(
                "attachments".to_owned(),
                serde_json::json!([{ "id": 0, "filename": filename }]),
            );
        }
        let payload = payload.to_string();
        self.post_message(channel, || {
            let part = reqwest::multipart::Part::bytes(file.to_vec())
                .file_name(filename.to_owned())
                .mime_str(mime)
                .unwrap_or_else(|_| reqwest::multipart::Part::bytes(file.to_vec()));
            let form = reqwest::multipart::Form::new()
                .text("payload_json", payload.clone())
                .part("files[0]", part);
            self.request(reqwest::Method::POST, &path).multipart(form)
        })
        .await
    }

    /// One message post: scheduled, 429s waited out, server failures retried (the nonce makes
    /// that safe); `make` builds the request afresh for each attempt (a multipart body cannot be
    /// replayed).
    async fn post_message(
        &self,
        channel: u64,
        make: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<Value, SendError> {
        let response = self
            .exchange(self.messages(channel), make, Retry::ServerFailures)
            .await?;
        message_answer(response).await
    }

    /// Posts through a channel webhook (`POST /webhooks/{id}/{token}?wait=true`), under the
    /// body's `username` and `avatar_url`. A webhook takes no nonce, so a 5xx or a lost answer is
    /// not retried (it may have posted); a 429 still is. The token is a credential: no log and
    /// no error holds it.
    pub async fn execute_webhook(&self, hook: &Hook, body: &Value) -> Result<Value, SendError> {
        let url = format!(
            "{}/webhooks/{}/{}?wait=true",
            self.api,
            hook.id,
            hook.token.expose_secret()
        );
        let route = Route {
            template: "POST /webhooks/{}/{}",
            major: hook.id,
            local_per_5s: None,
        };
        let make = || self.http.post(&url).json(body);
        let response = self.exchange(route, make, Retry::Never).await?;
        // A 5xx may have posted: it is no refusal to post again after.
        let status = response.status();
        if status.is_server_error() {
            return Err(SendError::Unconfirmed(format!("Discord answered {status}")));
        }
        message_answer(response).await
    }

    /// The channel's webhooks (`GET /channels/{id}/webhooks`, Manage Webhooks).
    pub async fn channel_webhooks(&self, channel: u64) -> Result<Value, GetError> {
        let route = Route {
            template: "GET /channels/{}/webhooks",
            major: channel,
            local_per_5s: None,
        };
        self.get_answer(route, &format!("/channels/{channel}/webhooks"))
            .await
    }

    /// Makes a webhook named `name` in the channel (`POST /channels/{id}/webhooks`).
    pub async fn create_webhook(&self, channel: u64, name: &str) -> Result<Value, String> {
        let route = Route {
            template: "POST /channels/{}/webhooks",
            major: channel,
            local_per_5s: None,
        };
        let path = format!("/channels/{channel}/webhooks");
        let body = serde_json::json!({ "name": name });
        self.send_json(reqwest::Method::POST, route, &path, &body)
            .await
    }

    /// Sends one request under the scheduler and returns the first answer that is not a 429:
    /// each attempt waits for room in its bucket and the global budget, a 429 is waited out
    /// (through the scheduler, so the bucket or, for a global one, every request waits), and
    /// with [`Retry::ServerFailures`] a 5xx or a lost connection is tried again.
    async fn exchange(
        &self,
        route: Route,
        make: impl Fn() -> reqwest::RequestBuilder,
        retry: Retry,
    ) -> Result<reqwest::Response, SendError> {
        let permit = self.scheduler.acquire(route).await;
        self.exchange_held(permit, route, make, retry).await
    }

    /// [`Self::exchange`] with the bucket already held.
    async fn exchange_held(
        &self,
        mut permit: Permit<'_>,
        route: Route,
        make: impl Fn() -> reqwest::RequestBuilder,
        retry: Retry,
    ) -> Result<reqwest::Response, SendError> {
        let mut server_failures = 0;
        let mut rate_limited = 0;
        loop {
            let slot = permit.ready().await;
            let sent = make().send().await;
            // Answered (or failed): the request no longer travels.
            drop(slot);
            let response = match sent {
                Ok(response) => response,
                Err(error) => {
                    let error = describe(error);
                    if retry != Retry::ServerFailures || server_failures >= SERVER_RETRIES {
                        return Err(SendError::Unconfirmed(error));
                    }
                    server_failures += 1;
                    tracing::warn!(route = route.template, %error, "Discord request failed; retrying");
                    tokio::time::sleep(Duration::from_millis(250 * u64::from(server_failures)))
                        .await;
                    continue;
                }
            };
            let headers = RateHeaders::read(response.headers());
            permit.observe(&headers);
            let status = response.status();
            if status.as_u16() == 429 {
                rate_limited += 1;
                let (wait, global) = self
                    .rate_limit_wait(route, response, &headers, rate_limited, server_failures)
                    .await?;
                tracing::info!(
                    route = route.template,
                    global,
                    wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                    "rate limited; waiting retry_after"
                );
                permit.rate_limited(wait, global);
                if retry == Retry::Droppable {
                    return Err(SendError::Refused {
                        status: 429,
                        code: 0,
                        message: "rate limited; dropped rather than waited for".to_owned(),
                    });
                }
                continue;
            }
            if status.is_server_error() && retry == Retry::ServerFailures {
                if server_failures >= SERVER_RETRIES {
                    return Err(SendError::Unconfirmed(format!("Discord answered {status}")));
                }
                server_failures += 1;
                tokio::time::sleep(Duration::from_millis(250 * u64::from(server_failures))).await;
                continue;
            }
            return Ok(response);
        }
    }

    /// How long to wait out a 429 (its `rate_limited`-th in a row) and whether it is global:
    /// the body's `retry_after`, else the headers, bounded by [`LONGEST_RATE_LIMIT_WAIT`]. Past
    /// the allowed waits, or asked to wait too long, the request is given up.
    async fn rate_limit_wait(
        &self,
        route: Route,
        response: reqwest::Response,
        headers: &RateHeaders,
        rate_limited: u32,
        server_failures: u32,
    ) -> Result<(Duration, bool), SendError> {
        let body: Value = json_bounded(response, ERROR_TEXT_MAX)
            .await
            .unwrap_or(Value::Null);
        let global = headers.global || body.get("global").and_then(Value::as_bool) == Some(true);
        let scope = if global { "global" } else { "bucket" };
        metrics::counter!(RATE_LIMITED, "route" => route.template, "scope" => scope).increment(1);
        let asked = body
            .get("retry_after")
            .and_then(Value::as_f64)
            .or(headers.reset_after.map(|wait| wait.as_secs_f64()))
            .or(headers.retry_after);
        let wait = match asked {
            Some(secs) => bounded_wait(secs, LONGEST_RATE_LIMIT_WAIT),
            None => Some(DEFAULT_RATE_LIMIT_WAIT),
        };
        let message = match wait {
            Some(_) if rate_limited > self.max_rate_limit_waits => {
                format!("still rate limited after {rate_limited} waits")
            }
            Some(wait) => return Ok((wait, global)),
            None => format!(
                "rate limited for longer than {}s",
                LONGEST_RATE_LIMIT_WAIT.as_secs()
            ),
        };
        // Only an earlier server failure can have posted it; a 429 posts nothing.
        Err(if server_failures == 0 {
            SendError::Refused {
                status: 429,
                code: 0,
                message,
            }
        } else {
            SendError::Unconfirmed(message)
        })
    }

    /// Adds (`PUT`) or removes (`DELETE`) the bot's own reaction `emoji` (a Unicode emoji, or
    /// `name:id` for a server's own) on a message. Reactions have their own bucket per channel;
    /// 429s are waited out and server failures retried, since a reaction is idempotent.
    pub async fn reaction(
        &self,
        method: reqwest::Method,
        channel: u64,
        message: u64,
        emoji: &str,
    ) -> Result<(), SendError> {
        let emoji =
            percent_encoding::utf8_percent_encode(emoji, percent_encoding::NON_ALPHANUMERIC);
        let path = format!("/channels/{channel}/messages/{message}/reactions/{emoji}/@me");
        let route = Route {
            template: REACTIONS,
            major: channel,
            local_per_5s: None,
        };
        let make = || self.request(method.clone(), &path);
        let response = self.exchange(route, make, Retry::ServerFailures).await?;
        if response.status().is_success() {
            return Ok(());
        }
        message_answer(response).await.map(|_| ())
    }

    /// Edits a message the bot posted (`PATCH /channels/{id}/messages/{id}`: its buttons). An
    /// edit is idempotent: 429s are waited out and server failures retried.
    pub async fn edit_message(
        &self,
        channel: u64,
        message: u64,
        body: &Value,
    ) -> Result<(), SendError> {
        let path = format!("/channels/{channel}/messages/{message}");
        let route = Route {
            template: "PATCH /channels/{}/messages/{}",
            major: channel,
            local_per_5s: None,
        };
        let make = || self.request(reqwest::Method::PATCH, &path).json(body);
        let response = self.exchange(route, make, Retry::ServerFailures).await?;
        message_answer(response).await.map(|_| ())
    }

    /// Deletes a message the bot posted (`DELETE /channels/{id}/messages/{id}`); one already
    /// gone (404) counts as deleted. Idempotent, so retried as an edit is.
    pub async fn delete_message(&self, channel: u64, message: u64) -> Result<(), SendError> {
        let path = format!("/channels/{channel}/messages/{message}");
        let route = Route {
            template: "DELETE /channels/{}/messages/{}",
            major: channel,
            local_per_5s: None,
        };
        let make = || self.request(reqwest::Method::DELETE, &path);
        let response = self.exchange(route, make, Retry::ServerFailures).await?;
        let status = response.status();
        if status.is_success() || status == reqwest::StatusCode::NOT_FOUND {
            return Ok(());
        }
        message_answer(response).await.map(|_| ())
    }

    /// Edits (`PATCH`, with `body`) or deletes (`DELETE`) a message the channel webhook `hook`
    /// posted (`/webhooks/{id}/{token}/messages/{id}`): a persona's reply, whose buttons change.
    /// Idempotent, so retried as an edit is; a deleted message already gone (404) counts as
    /// deleted. The token is a credential: no log and no error holds it.
    pub async fn webhook_message(
        &self,
        method: reqwest::Method,
        hook: &Hook,
        message: u64,
        body: Option<&Value>,
    ) -> Result<(), SendError> {
        let url = format!(
            "{}/webhooks/{}/{}/messages/{message}",
            self.api,
            hook.id,
            hook.token.expose_secret()
        );
        let route = Route {
            template: "PATCH|DELETE /webhooks/{}/{}/messages/{}",
            major: hook.id,
            local_per_5s: None,
        };
        let make = || with_body(self.http.request(method.clone(), &url), body);
        let response = self.exchange(route, make, Retry::ServerFailures).await?;
        let status = response.status();
        let gone = method == reqwest::Method::DELETE && status == reqwest::StatusCode::NOT_FOUND;
        if status.is_success() || gone {
            return Ok(());
        }
        message_answer(response).await.map(|_| ())
    }

    /// Writes an interaction's answer on `/webhooks/{app}/{token}`: `POST` a follow-up
    /// (`message` is `None`), `PATCH` or `DELETE` a message of it (`@original`, or a follow-up's
    /// id). One bucket per interaction. An edit or a delete is idempotent and retried as one
    /// is; a follow-up takes no nonce, so a 5xx or a lost answer is not retried (it may be
    /// shown). A deleted message already gone counts as deleted. The token is a credential: no
    /// log and no error holds it.
    pub async fn interaction_message(
        &self,
        method: reqwest::Method,
        answer: &InteractionToken,
        message: Option<&str>,
        body: Option<&Value>,
    ) -> Result<Value, SendError> {
        let base = format!(
            "{}/webhooks/{}/{}",
            self.api,
            answer.application,
            answer.token.expose_secret()
        );
        let url = match message {
            Some(message) => format!("{base}/messages/{message}"),
            None => format!("{base}?wait=true"),
        };
        let route = Route {
            template: "/webhooks/{}/{interaction token}",
            major: answer.interaction,
            local_per_5s: None,
        };
        let make = || with_body(self.http.request(method.clone(), &url), body);
        let retry = if message.is_some() {
            Retry::ServerFailures
        } else {
            Retry::Never
        };
        let response = self.exchange(route, make, retry).await?;
        let status = response.status();
        if retry == Retry::Never && status.is_server_error() {
            return Err(SendError::Unconfirmed(format!("Discord answered {status}")));
        }
        let deleted = method == reqwest::Method::DELETE
            && (status.is_success() || status == reqwest::StatusCode::NOT_FOUND);
        if deleted {
            return Ok(Value::Null);
        }
        message_answer(response).await
    }

    /// Shows the typing indicator. Best effort: a failure is only logged.
    pub async fn trigger_typing(&self, channel: u64) {
        let path = format!("/channels/{channel}/typing");
        let route = Route {
            template: TYPING,
            major: channel,
            local_per_5s: None,
        };
        let make = || self.request(reqwest::Method::POST, &path);
        match self.exchange(route, make, Retry::Never).await {
            Ok(r) if r.status().is_success() => {}
            Ok(r) => tracing::debug!(channel, status = %r.status(), "typing refused"),
            Err(error) => tracing::debug!(channel, %error, "typing failed"),
        }
    }

    /// `PUT`s a JSON body on `route` (command registration): scheduled, 429s waited out, never
    /// retried on a failure. A refusal says Discord's status, code, message and the first field
    /// its `errors` name.
    pub async fn put_json(&self, route: Route, path: &str, body: &Value) -> Result<Value, String> {
        self.send_json(reqwest::Method::PUT, route, path, body)
            .await
    }

    /// Opens (or finds) the direct-message channel with `user`; its id.
    pub async fn open_dm(&self, user: u64) -> Result<u64, String> {
        let route = Route {
            template: "POST /users/@me/channels",
            major: 0,
            local_per_5s: None,
        };
        let body = serde_json::json!({ "recipient_id": user.to_string() });
        let channel = self
            .send_json(reqwest::Method::POST, route, "/users/@me/channels", &body)
            .await?;
        channel
            .get("id")
            .and_then(Value::as_str)
            .and_then(|id| id.parse().ok())
            .ok_or_else(|| "Discord's DM channel has no id".to_owned())
    }

    /// Sends a JSON body with `method` on `route`, as [`Self::put_json`] describes.
    async fn send_json(
        &self,
        method: reqwest::Method,
        route: Route,
        path: &str,
        body: &Value,
    ) -> Result<Value, String> {
        let make = || self.request(method.clone(), path).json(body);
        let response = self
            .exchange(route, make, Retry::Never)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        if status.is_success() {
            return json_bounded(response, ANSWER_MAX)
                .await
                .map_err(|e| format!("{path}: {e}"));
        }
        let error: Value = json_bounded(response, ERROR_TEXT_MAX)
            .await
            .unwrap_or(Value::Null);
        let mut why = format!(
            "{status} ({}): {}",
            error.get("code").and_then(Value::as_i64).unwrap_or(0),
            error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
        );
        if let Some((field, problem)) = error.get("errors").and_then(|e| first_error(e, 0)) {
            why.push_str(&format!("; {field}: {problem}"));
        }
        Err(why)
    }

    /// `GET` a JSON value (history, stickers) on `route`.
    pub async fn get(&self, route: Route, path: &str) -> Result<Value, String> {
        self.get_answer(route, path)
            .await
            .map_err(|e| e.to_string())
    }

    /// `GET` a JSON value, telling a refusal's status apart.
    pub async fn get_answer(&self, route: Route, path: &str) -> Result<Value, GetError> {
        let make = || self.request(reqwest::Method::GET, path);
        let response = self
            .exchange(route, make, Retry::Never)
            .await
            .map_err(|e| GetError::Failed(e.to_string()))?;
        let status = response.status();
        if !status.is_success() {
            return Err(GetError::Status(status.as_u16()));
        }
        json_bounded(response, ANSWER_MAX)
            .await
            .map_err(|e| GetError::Failed(format!("{path}: {e}")))
    }
}

/// `request` with `body` as its JSON, when there is one.
fn with_body(request: reqwest::RequestBuilder, body: Option<&Value>) -> reqwest::RequestBuilder {
    match body {
        Some(body) => request.json(body),
        None => request,
    }
}

/// A message post's answer: the message, or Discord's refusal (a 4xx other than 429).
async fn message_answer(response: reqwest::Response) -> Result<Value, SendError> {
    let status = response.status();
    if status.is_success() {
        return json_bounded(response, ANSWER_MAX)
            .await
            .map_err(|e| SendError::Unconfirmed(e.to_string()));
    }
    let error: Value = json_bounded(response, ERROR_TEXT_MAX)
        .await
        .unwrap_or(Value::Null);
    Err(SendError::Refused {
        status: status.as_u16(),
        code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
        message: error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
    })
}

/// A failed request in words an operator can act on: the error and its causes ("error sending
/// request: client error (Connect): tcp connect error: Connection refused (os error 111)"),
/// without the URL, at most 300 characters.
fn describe(error: reqwest::Error) -> String {
    let error = error.without_url();
    let timed_out = error.is_timeout();
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(&error);
    let mut depth = 0;
    while let Some(inner) = cause {
        let part = inner.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        cause = inner.source();
        depth += 1;
        if depth >= 8 {
            break;
        }
    }
    if timed_out && !text.contains("timed out") {
        text.push_str(" (timed out: discord.request_timeout_secs)");
    }
    text.chars().take(300).collect()
}

/// Why a `GET` brought no value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GetError {
    #[error("Discord answered {0}")]
    Status(u16),
    #[error("{0}")]
    Failed(String),
}

/// The first field Discord's `errors` object names, with its message: `{"0": {"name":
/// {"_errors": [{"message": ...}]}}}` is `0.name`. Bounded in depth (the body is Discord's).
fn first_error(errors: &Value, depth: usize) -> Option<(String, String)> {
    let map = errors.as_object()?;
    if let Some(message) = map
        .get("_errors")
        .and_then(|e| e.get(0))
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
    {
        return Some((String::new(), message.chars().take(200).collect()));
    }
    if depth >= 8 {
        return None;
    }
    map.iter().find_map(|(key, inner)| {
        let (field, message) = first_error(inner, depth + 1)?;
        let key: String = key.chars().take(40).collect();
        Some((
            if field.is_empty() {
                key
            } else {
                format!("{key}.{field}")
            },
            message,
        ))
    })
}

/// Whether a request may be sent again after a 5xx or a lost connection: only a message create
/// with a nonce, which Discord posts once however often it arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Retry {
    ServerFailures,
    Never,
    /// Never, and a 429 is given up on rather than waited out (a droppable message).
    Droppable,
}

/// A fresh nonce for `enforce_nonce` (Discord accepts up to 25 characters).
pub fn nonce() -> String {
    uuid::Uuid::now_v7()
        .simple()
        .to_string()
        .chars()
        .take(25)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_fit_discord() {
        assert_eq!(nonce().len(), 25);
        assert_ne!(nonce(), nonce());
    }
}
