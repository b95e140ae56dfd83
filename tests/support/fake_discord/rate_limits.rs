//! Discord's rate limits, on by default: fixed windows per bucket and major parameter (message
//! creates and message edits: 5 per channel per 5 s each; channel webhook executes: 5 per
//! webhook per 2 s; the bot's reactions, added or removed: 1 per channel per 0.25 s), and a global budget of 50 requests per second over every request except
//! interaction callbacks. Every answer of a bucketed route
//! carries the bucket's headers; an over-limit request gets Discord's 429, creates nothing and
//! takes nothing from the bucket's window.
//!
//! A window is fixed: the first request opens it for the bucket's length, and when it ends the
//! count starts again at zero (a client that paces itself with a sliding token bucket can still
//! run into it). Everything here runs under the server's one lock.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tokio::time::Instant;

use super::rest::parse_id;

/// The limits a test may change with [`super::FakeDiscord::set_rate_limit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateLimit {
    /// `POST /channels/{id}/messages`, per channel.
    MessageCreate,
    /// `PATCH /channels/{id}/messages/{message}`, per channel.
    MessageEdit,
    /// `POST /webhooks/{id}/{token}` of a channel webhook, per webhook.
    WebhookExecute,
    /// `PUT`/`DELETE /channels/{id}/messages/{m}/reactions/{emoji}/@me`, per channel.
    Reaction,
    /// Every request but interaction callbacks.
    Global,
}

/// How many 429s the fake sent, by cause.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateLimitCounts {
    /// A bucket's window was full.
    pub bucket: usize,
    /// The global budget was spent.
    pub global: usize,
    /// Scripted by the test (`rate_limit_next`, or a raw 429 of `answer_next_raw`).
    pub scripted: usize,
}

impl RateLimitCounts {
    pub fn total(&self) -> usize {
        self.bucket + self.global + self.scripted
    }
}

/// A route with a bucket of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Route {
    MessageCreate,
    MessageEdit,
    WebhookExecute,
    Reaction,
}

impl Route {
    /// The bucket's opaque hash, as in `X-RateLimit-Bucket`: one per route, the same for every
    /// channel or webhook (the major parameter that splits its state).
    fn hash(self) -> &'static str {
        match self {
            Self::MessageCreate => "80c17d2f203122d936070c88c8d10f33",
            Self::MessageEdit => "a3c96a1e2b0f7d9c5e84f1b2d6037e45",
            Self::WebhookExecute => "5e3a0f9d27c4b81e6a9d0c3f4b7e2a18",
            Self::Reaction => "c1e7b34f9a0d2685e3b1f47a9c0d5e26",
        }
    }

    /// The bucketed route of a request and its major parameter (the channel id, or the webhook
    /// id of an execute). `webhooks` are the channel webhooks' ids: `POST /webhooks/{app}/{token}`
    /// is also an interaction follow-up, which has no such bucket here.
    fn of(method: &str, segments: &[&str], webhooks: &HashSet<u64>) -> Option<(Self, u64)> {
        match (method, segments) {
            ("POST", ["channels", id, "messages"]) => Some((Self::MessageCreate, parse_id(id)?)),
            ("PATCH", ["channels", id, "messages", _]) => Some((Self::MessageEdit, parse_id(id)?)),
            ("PUT" | "DELETE", ["channels", id, "messages", _, "reactions", _, "@me"]) => {
                Some((Self::Reaction, parse_id(id)?))
            }
            ("POST", ["webhooks", id, _]) => {
                let id = parse_id(id).filter(|id| webhooks.contains(id))?;
                Some((Self::WebhookExecute, id))
            }
            _ => None,
        }
    }
}

/// Interaction callbacks are not bound to the global limit, as on Discord.
fn exempt_from_global(method: &str, segments: &[&str]) -> bool {
    matches!(
        (method, segments),
        ("POST", ["interactions", _, _, "callback"])
    )
}

#[derive(Debug, Clone, Copy)]
struct Limit {
    requests: u32,
    per: Duration,
}

#[derive(Debug, Clone, Copy)]
struct Window {
    opened: Instant,
    count: u32,
}

impl Window {
    /// The window still open at `now`, or a fresh one.
    fn current(window: Option<Window>, per: Duration, now: Instant) -> Window {
        match window {
            Some(w) if now < w.opened + per => w,
            _ => Window {
                opened: now,
                count: 0,
            },
        }
    }
}

/// What an admitted request took, for its answer's headers and to give back when the route
/// answered 429 itself (a scripted one).
pub(super) struct Admission {
    route: Option<(Route, u64)>,
    /// The bucket's window as this request left it; `None` when limits are off.
    taken: Option<Window>,
}

pub(super) struct RateLimiter {
    enabled: bool,
    create: Limit,
    edit: Limit,
    webhook: Limit,
    reaction: Limit,
    global: Limit,
    buckets: HashMap<(Route, u64), Window>,
    /// Every channel webhook made (deleted ones too): their executes have a bucket.
    pub(super) webhooks: HashSet<u64>,
    global_window: Option<Window>,
    pub(super) counts: RateLimitCounts,
}

impl Default for RateLimiter {
    /// On, with Discord's windows.
    fn default() -> Self {
        let five_per_5s = Limit {
            requests: 5,
            per: Duration::from_secs(5),
        };
        Self {
            enabled: true,
            create: five_per_5s,
            edit: five_per_5s,
            webhook: Limit {
                requests: 5,
                per: Duration::from_secs(2),
            },
            reaction: Limit {
                requests: 1,
                per: Duration::from_millis(250),
            },
            global: Limit {
                requests: 50,
                per: Duration::from_secs(1),
            },
            buckets: HashMap::new(),
            webhooks: HashSet::new(),
            global_window: None,
            counts: RateLimitCounts::default(),
        }
    }
}

impl RateLimiter {
    pub(super) fn set_enabled(&mut self, on: bool) {
        self.enabled = on;
        self.buckets.clear();
        self.global_window = None;
    }

    pub(super) fn set_limit(&mut self, which: RateLimit, requests: u32, per: Duration) {
        let limit = Limit { requests, per };
        match which {
            RateLimit::MessageCreate => self.create = limit,
            RateLimit::MessageEdit => self.edit = limit,
            RateLimit::WebhookExecute => self.webhook = limit,
            RateLimit::Reaction => self.reaction = limit,
            RateLimit::Global => self.global = limit,
        }
        self.buckets.clear();
        self.global_window = None;
    }

    fn limit_of(&self, route: Route) -> Limit {
        match route {
            Route::MessageCreate => self.create,
            Route::MessageEdit => self.edit,
            Route::WebhookExecute => self.webhook,
            Route::Reaction => self.reaction,
        }
    }

    /// Lets a request through (counting it in the global budget and its bucket's window), or
    /// answers Discord's 429.
    #[allow(clippy::result_large_err)] // the error is the response to send
    pub(super) fn admit(&mut self, method: &str, segments: &[&str]) -> Result<Admission, Response> {
        let route = Route::of(method, segments, &self.webhooks);
        if !self.enabled {
            return Ok(Admission { route, taken: None });
        }
        let now = Instant::now();
        if !exempt_from_global(method, segments) {
            let mut global = Window::current(self.global_window, self.global.per, now);
            if global.count >= self.global.requests {
                self.counts.global += 1;
                let retry_after = (global.opened + self.global.per).duration_since(now);
                let mut response = too_many_requests(retry_after, true);
                if let Some((route, channel)) = route {
                    let limit = self.limit_of(route);
                    let window = Window::current(
                        self.buckets.get(&(route, channel)).copied(),
                        limit.per,
                        now,
                    );
                    add_bucket_headers(&mut response, route, limit, window, now);
                }
                return Err(response);
            }
            global.count += 1;
            self.global_window = Some(global);
        }
        let Some((route, channel)) = route else {
            return Ok(Admission { route, taken: None });
        };
        let limit = self.limit_of(route);
        let mut window =
            Window::current(self.buckets.get(&(route, channel)).copied(), limit.per, now);
        if window.count >= limit.requests {
            self.counts.bucket += 1;
            let retry_after = (window.opened + limit.per).duration_since(now);
            let mut response = too_many_requests(retry_after, false);
            add_bucket_headers(&mut response, route, limit, window, now);
            return Err(response);
        }
        window.count += 1;
        self.buckets.insert((route, channel), window);
        Ok(Admission {
            route: Some((route, channel)),
            taken: Some(window),
        })
    }

    /// The route's answer to an admitted request, with its bucket's headers. A scripted 429
    /// gives its place in the window back; an answer scripted as is is left untouched.
    pub(super) fn answered(&mut self, admission: Admission, mut response: Response) -> Response {
        let now = Instant::now();
        if let Some(ScriptedRateLimit(retry_after)) = response.extensions().get().copied() {
            self.counts.scripted += 1;
            self.give_back(&admission);
            let mut response = too_many_requests_secs(retry_after, false);
            if let Some((route, _)) = admission.route {
                let limit = self.limit_of(route);
                let spent = Window {
                    opened: now,
                    count: limit.requests,
                };
                let reset_after = Duration::try_from_secs_f64(retry_after).unwrap_or_default();
                add_headers(
                    &mut response,
                    route,
                    limit,
                    spent,
                    reset_after,
                    Some(retry_after),
                );
            }
            return response;
        }
        if response.status() == StatusCode::TOO_MANY_REQUESTS {
            self.counts.scripted += 1;
            self.give_back(&admission);
        }
        if response.extensions().get::<AsScripted>().is_some() {
            return response;
        }
        if let (Some((route, _)), Some(window)) = (admission.route, admission.taken) {
            add_bucket_headers(&mut response, route, self.limit_of(route), window, now);
        }
        response
    }

    /// A 429 takes nothing from the bucket's window: undo this request's count, if its window
    /// is still the current one.
    fn give_back(&mut self, admission: &Admission) {
        let (Some((route, channel)), Some(taken)) = (admission.route, admission.taken) else {
            return;
        };
        if let Some(window) = self.buckets.get_mut(&(route, channel))
            && window.opened == taken.opened
        {
            window.count = window.count.saturating_sub(1);
        }
    }
}

/// Marks a route's answer as scripted by the test: sent exactly as it is, no headers added.
#[derive(Debug, Clone, Copy)]
pub(super) struct AsScripted;

/// Marks a route's answer as a scripted bucket 429 waiting this many seconds; the limiter
/// writes it out with Discord's body and headers.
#[derive(Debug, Clone, Copy)]
pub(super) struct ScriptedRateLimit(pub(super) f64);

/// Seconds rounded up to the millisecond, so a client that waits them out lands after the
/// window's end.
fn secs_up(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0).ceil() / 1000.0
}

fn too_many_requests(retry_after: Duration, global: bool) -> Response {
    too_many_requests_secs(secs_up(retry_after), global)
}

/// Discord's 429: its body, `Retry-After` in whole seconds rounded up, and the scope.
pub(super) fn too_many_requests_secs(retry_after: f64, global: bool) -> Response {
    let body = json!({
        "message": "You are being rate limited.",
        "retry_after": retry_after,
        "global": global,
    });
    let mut response = (
        StatusCode::TOO_MANY_REQUESTS,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response();
    let whole = if retry_after.is_finite() && retry_after > 0.0 {
        retry_after.ceil() as u64
    } else {
        0
    };
    set(&mut response, "retry-after", whole.to_string());
    if global {
        set(&mut response, "x-ratelimit-global", "true".into());
        set(&mut response, "x-ratelimit-scope", "global".into());
    } else {
        set(&mut response, "x-ratelimit-scope", "user".into());
    }
    response
}

fn add_bucket_headers(
    response: &mut Response,
    route: Route,
    limit: Limit,
    window: Window,
    now: Instant,
) {
    let reset_after = (window.opened + limit.per).duration_since(now);
    add_headers(response, route, limit, window, reset_after, None);
}

/// `X-RateLimit-Limit`, `-Remaining`, `-Reset` (unix seconds), `-Reset-After` (seconds) and
/// `-Bucket`. `reset_after_secs` is written as given when the test scripted it.
fn add_headers(
    response: &mut Response,
    route: Route,
    limit: Limit,
    window: Window,
    reset_after: Duration,
    reset_after_secs: Option<f64>,
) {
    let reset = SystemTime::now()
        .checked_add(reset_after)
        .unwrap_or_else(SystemTime::now)
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let reset_after = reset_after_secs.unwrap_or_else(|| secs_up(reset_after));
    set(response, "x-ratelimit-limit", limit.requests.to_string());
    set(
        response,
        "x-ratelimit-remaining",
        limit.requests.saturating_sub(window.count).to_string(),
    );
    set(
        response,
        "x-ratelimit-reset",
        format!("{:.3}", secs_up(reset)),
    );
    set(
        response,
        "x-ratelimit-reset-after",
        format!("{reset_after:.3}"),
    );
    set(response, "x-ratelimit-bucket", route.hash().to_owned());
}

fn set(response: &mut Response, name: &'static str, value: String) {
    if let Ok(value) = HeaderValue::from_str(&value) {
        response
            .headers_mut()
            .insert(HeaderName::from_static(name), value);
    }
}
