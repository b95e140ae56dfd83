//! The REST calls the bot's delivery makes (messages, typing, history, stickers), on its own
//! HTTP client, because delivery must see every 429 itself: serenity with its rate limiter off
//! (required behind a proxy) turns a 429 into a decode error and loses `retry_after`.
//!
//! Every message send waits for the channel's budget (a token bucket of N per 5 s), waits out a
//! 429 for exactly its `retry_after` (a global one holds every channel), and retries a 5xx or a
//! lost connection with the same `nonce` and `enforce_nonce`, so Discord never posts it twice.
//! Text is never dropped for a rate limit.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;
use tokio::time::Instant;

use crate::config::DiscordConfig;
use crate::http_body::{ERROR_TEXT_MAX, json_bounded};

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

/// A wait in seconds from outside (a 429's `retry_after`, a rate-limit header), as a `Duration`
/// no longer than `longest`: NaN and negatives are no wait, and `1e20` or infinity is `None`
/// (too long to wait for). Never panics, unlike `Duration::from_secs_f64`.
pub fn bounded_wait(secs: f64, longest: Duration) -> Option<Duration> {
    if secs.is_nan() || secs <= 0.0 {
        return Some(Duration::ZERO);
    }
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|wait| *wait <= longest)
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

/// A token bucket per channel.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Every channel's bucket, reaped of idle ones now and then so a bot that has spoken in many
/// channels (DMs above all) does not keep one per channel forever.
#[derive(Debug)]
struct Buckets {
    by_channel: HashMap<u64, Bucket>,
    /// The last reaping; the next comes an idle time later.
    swept_at: Instant,
}

impl Buckets {
    /// Drops the buckets unused for `idle` whose budget has refilled (so forgetting them loses
    /// nothing: a new bucket starts full). Runs at most once per `idle`.
    fn reap(&mut self, now: Instant, idle: Duration, per_5s: f64) {
        if now.duration_since(self.swept_at) < idle {
            return;
        }
        self.swept_at = now;
        self.by_channel.retain(|_, bucket| {
            let unused = now.duration_since(bucket.at);
            let refilled = bucket.tokens + unused.as_secs_f64() * per_5s / 5.0;
            unused < idle || refilled < per_5s
        });
    }
}

pub struct DiscordRest {
    http: reqwest::Client,
    /// `{base}/api/v10`
    api: String,
    authorization: SecretString,
    per_5s: f64,
    max_rate_limit_waits: u32,
    /// How long a channel's bucket is kept unused before it is reaped.
    bucket_idle: Duration,
    /// Locked only to take a token or reap, never across an await.
    buckets: Mutex<Buckets>,
    /// A global 429 holds every send until then.
    global_until: Mutex<Option<Instant>>,
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
                .connect_timeout(Duration::from_secs(10))
                .timeout(Duration::from_secs(30))
                .user_agent("DiscordBot (https://github.com/persona-bot, 0.1)")
                .build()?,
            api: format!("{base}/api/v10"),
            authorization: SecretString::from(authorization),
            per_5s: f64::from(config.channel_messages_per_5s),
            max_rate_limit_waits: config.max_rate_limit_waits,
            bucket_idle: Duration::from_secs(config.rate_bucket_idle_secs),
            buckets: Mutex::new(Buckets {
                by_channel: HashMap::new(),
                swept_at: Instant::now(),
            }),
            global_until: Mutex::new(None),
        })
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.api))
            .header(
                reqwest::header::AUTHORIZATION,
                self.authorization.expose_secret(),
            )
    }

    /// Waits for the channel's send budget.
    async fn take_budget(&self, channel: u64) {
        loop {
            let wait = {
                let mut buckets = self
                    .buckets
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let now = Instant::now();
                buckets.reap(now, self.bucket_idle, self.per_5s);
                let bucket = buckets.by_channel.entry(channel).or_insert(Bucket {
                    tokens: self.per_5s,
                    at: now,
                });
                let refill = now.duration_since(bucket.at).as_secs_f64() * self.per_5s / 5.0;
                bucket.tokens = (bucket.tokens + refill).min(self.per_5s);
                bucket.at = now;
                if bucket.tokens >= 1.0 {
                    bucket.tokens -= 1.0;
                    return;
                }
                // At most 5 s / per_5s (a validated positive count); bounded all the same.
                bounded_wait(
                    (1.0 - bucket.tokens) * 5.0 / self.per_5s,
                    Duration::from_secs(5),
                )
                .unwrap_or(Duration::from_secs(5))
            };
            tokio::time::sleep(wait).await;
        }
    }

    async fn wait_global(&self) {
        let until = *self
            .global_until
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(until) = until {
            tokio::time::sleep_until(until).await;
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

    /// One message post with the budget, 429 waits and server retries; `make` builds the
    /// request afresh for each attempt (a multipart body cannot be replayed).
    async fn post_message(
        &self,
        channel: u64,
        make: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<Value, SendError> {
        let mut server_failures = 0;
        let mut rate_limited = 0;
        loop {
            self.take_budget(channel).await;
            self.wait_global().await;
            let sent = make().send().await;
            let response = match sent {
                Ok(response) => response,
                Err(error) => {
                    server_failures += 1;
                    if server_failures > SERVER_RETRIES {
                        return Err(SendError::Unconfirmed(error.without_url().to_string()));
                    }
                    tracing::warn!(channel, error = %error.without_url(), "message send failed; retrying");
                    tokio::time::sleep(Duration::from_millis(250 * u64::from(server_failures)))
                        .await;
                    continue;
                }
            };
            let status = response.status();
            if status.is_success() {
                return json_bounded(response, ANSWER_MAX)
                    .await
                    .map_err(|e| SendError::Unconfirmed(e.to_string()));
            }
            if status.as_u16() == 429 {
                rate_limited += 1;
                let wait = self
                    .rate_limit_wait(response, rate_limited, server_failures)
                    .await?;
                tracing::info!(
                    channel,
                    wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                    "rate limited; waiting retry_after"
                );
                tokio::time::sleep(wait).await;
                continue;
            }
            if status.is_server_error() {
                server_failures += 1;
                if server_failures > SERVER_RETRIES {
                    return Err(SendError::Unconfirmed(format!("Discord answered {status}")));
                }
                tokio::time::sleep(Duration::from_millis(250 * u64::from(server_failures))).await;
                continue;
            }
            let error: Value = json_bounded(response, ERROR_TEXT_MAX)
                .await
                .unwrap_or(Value::Null);
            return Err(SendError::Refused {
                status: status.as_u16(),
                code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            });
        }
    }

    /// How long to wait out a 429 (its `rate_limited`-th in a row): the body's `retry_after`,
    /// else the headers, bounded by [`LONGEST_RATE_LIMIT_WAIT`]. A global limit holds every
    /// channel. Past the allowed waits, or asked to wait too long, the send is given up.
    async fn rate_limit_wait(
        &self,
        response: reqwest::Response,
        rate_limited: u32,
        server_failures: u32,
    ) -> Result<Duration, SendError> {
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|secs| !secs.is_nan())
        };
        let from_headers = header("x-ratelimit-reset-after").or_else(|| header("retry-after"));
        let global_header = response
            .headers()
            .get("x-ratelimit-global")
            .is_some_and(|v| v.as_bytes() == b"true");
        let body: Value = json_bounded(response, ERROR_TEXT_MAX)
            .await
            .unwrap_or(Value::Null);
        let asked = body
            .get("retry_after")
            .and_then(Value::as_f64)
            .or(from_headers);
        let wait = match asked {
            Some(secs) => bounded_wait(secs, LONGEST_RATE_LIMIT_WAIT),
            None => Some(DEFAULT_RATE_LIMIT_WAIT),
        };
        let message = match wait {
            Some(_) if rate_limited > self.max_rate_limit_waits => {
                format!("still rate limited after {rate_limited} waits")
            }
            Some(wait) => {
                if global_header || body.get("global").and_then(Value::as_bool) == Some(true) {
                    *self
                        .global_until
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) =
                        Instant::now().checked_add(wait);
                }
                return Ok(wait);
            }
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

    /// Shows the typing indicator. Best effort: a failure is only logged.
    pub async fn trigger_typing(&self, channel: u64) {
        let path = format!("/channels/{channel}/typing");
        match self.request(reqwest::Method::POST, &path).send().await {
            Ok(r) if r.status().is_success() => {}
            Ok(r) => tracing::debug!(channel, status = %r.status(), "typing refused"),
            Err(e) => tracing::debug!(channel, error = %e.without_url(), "typing failed"),
        }
    }

    /// `GET` a JSON value (history, stickers).
    pub async fn get(&self, path: &str) -> Result<Value, String> {
        let response = self
            .request(reqwest::Method::GET, path)
            .send()
            .await
            .map_err(|e| e.without_url().to_string())?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("Discord answered {status} for {path}"));
        }
        json_bounded(response, ANSWER_MAX)
            .await
            .map_err(|e| format!("{path}: {e}"))
    }
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

    // Issue 10: a 429's wait comes from outside; no number may panic or wait past the bound.
    #[test]
    fn outside_waits_are_bounded_and_never_panic() {
        let longest = Duration::from_secs(60);
        assert_eq!(bounded_wait(0.3, longest), Some(Duration::from_millis(300)));
        assert_eq!(bounded_wait(60.0, longest), Some(longest));
        for junk in [f64::NAN, -1.0, -0.0, f64::NEG_INFINITY, -1e300] {
            assert_eq!(bounded_wait(junk, longest), Some(Duration::ZERO), "{junk}");
        }
        for too_long in [60.001, 1e20, 1e300, f64::INFINITY, f64::MAX] {
            assert_eq!(bounded_wait(too_long, longest), None, "{too_long}");
        }
    }

    fn rest(idle_secs: u64) -> DiscordRest {
        let mut config = crate::config::Config::shipped_defaults().discord;
        config.api_base_url = "http://127.0.0.1:9".into();
        config.rate_bucket_idle_secs = idle_secs;
        crate::http_body::install_crypto_provider();
        DiscordRest::new(&config, &SecretString::from("t")).expect("client")
    }

    fn channels(rest: &DiscordRest) -> Vec<u64> {
        let buckets = rest.buckets.lock().expect("lock");
        let mut channels: Vec<u64> = buckets.by_channel.keys().copied().collect();
        channels.sort_unstable();
        channels
    }

    // Issue 10: a channel's bucket is forgotten once it has been idle (and full again) for the
    // configured time, so the map holds the channels spoken in lately, not every channel ever.
    #[tokio::test(start_paused = true)]
    async fn idle_rate_buckets_are_reaped() {
        let rest = rest(60);
        rest.take_budget(1).await;
        rest.take_budget(2).await;
        tokio::time::advance(Duration::from_secs(30)).await;
        rest.take_budget(2).await;
        assert_eq!(channels(&rest), vec![1, 2], "nothing idle for 60 s yet");
        tokio::time::advance(Duration::from_secs(31)).await;
        rest.take_budget(3).await;
        assert_eq!(channels(&rest), vec![2, 3], "1 was idle for 61 s");
    }

    // A drained bucket is kept until it has refilled, even past the idle time: forgetting it
    // early would let the channel burst past its budget.
    #[tokio::test(start_paused = true)]
    async fn a_drained_bucket_is_kept_until_it_refills() {
        let rest = rest(1);
        for _ in 0..5 {
            rest.take_budget(1).await;
        }
        tokio::time::advance(Duration::from_secs(2)).await;
        rest.take_budget(2).await;
        assert_eq!(channels(&rest), vec![1, 2], "1 has 2 of 5 tokens back");
        tokio::time::advance(Duration::from_secs(4)).await;
        rest.take_budget(2).await;
        assert_eq!(channels(&rest), vec![2]);
    }

    #[test]
    fn nonces_fit_discord() {
        assert_eq!(nonce().len(), 25);
        assert_ne!(nonce(), nonce());
    }
}
