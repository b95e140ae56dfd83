//! The request scheduler: every REST request delivery makes waits here until the limits it
//! knows allow it, so the bot does not send a request Discord would answer 429.
//!
//! - **Buckets.** A request belongs to a route (`POST /channels/{id}/messages`) and its major
//!   parameter (the channel id). Discord's answers name the route's bucket
//!   (`X-RateLimit-Bucket`) and say what is left of its window (`X-RateLimit-Remaining`,
//!   `X-RateLimit-Reset-After`); routes answered with one bucket name share its state for the
//!   same major parameter. One request of a bucket is in flight at a time (so what the last
//!   answer said is what the next request sees, and a channel's messages keep their order), and
//!   one that finds the window spent waits for its reset. Before the first answer, and when no
//!   headers come (a proxy that strips them), a route may have a local budget: message creates
//!   allow themselves `discord.channel_messages_per_5s` in any 5 seconds.
//! - **Global.** At most `discord.global_requests_per_second` requests in any second, shared by
//!   every task of the process; a global 429 holds every request until its `retry_after` ends.
//!   Interaction callbacks are not sent here (serenity sends them, and Discord exempts them).
//!
//! With `discord.api_base_url` set to a shared rate-limit proxy, the proxy's answers drive the
//! same logic.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::OwnedMutexGuard;
use tokio::time::Instant;

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

/// The longest wait a bucket's `Reset-After` may ask for; a longer one is junk or a ban, and
/// waiting it would hold a conversation past any use.
const LONGEST_RESET: Duration = Duration::from_secs(60);
/// Bucket names are Discord's short hashes; a longer header is cut (it only names a state).
const BUCKET_NAME_MAX: usize = 64;
/// The span of the global budget.
const GLOBAL_SPAN: Duration = Duration::from_secs(1);

/// Metrics (see `crate::observe`): requests sent, by route; 429s, by route and scope (bucket or
/// global); and how long requests waited here before they were sent.
pub const REQUESTS: &str = "persona_bot_discord_requests_total";
pub const RATE_LIMITED: &str = "persona_bot_discord_rate_limited_total";
pub const WAITED: &str = "persona_bot_discord_scheduler_wait_seconds";

/// Requests sent in a sliding span: never more than `limit` in any `span`. Sliding, not fixed,
/// so it stays inside the server's fixed windows however theirs are aligned with ours.
#[derive(Debug)]
struct SlidingWindow {
    limit: usize,
    span: Duration,
    sent: VecDeque<Instant>,
}

impl SlidingWindow {
    fn new(limit: u32, span: Duration) -> Self {
        let limit = usize::try_from(limit.max(1)).unwrap_or(usize::MAX);
        Self {
            limit,
            span,
            sent: VecDeque::with_capacity(limit.min(1024)),
        }
    }

    /// Forgets sends older than the span.
    fn expire(&mut self, now: Instant) {
        while self
            .sent
            .front()
            .is_some_and(|at| now.duration_since(*at) >= self.span)
        {
            self.sent.pop_front();
        }
    }

    /// Sends the span has room for now.
    fn free(&mut self, now: Instant) -> usize {
        self.expire(now);
        self.limit.saturating_sub(self.sent.len())
    }

    /// Records a send at `now` and returns `None`, or returns how long to wait for room.
    fn take(&mut self, now: Instant) -> Option<Duration> {
        self.expire(now);
        if self.sent.len() < self.limit {
            self.sent.push_back(now);
            return None;
        }
        let oldest = self.sent.front().copied().unwrap_or(now);
        Some((oldest + self.span).saturating_duration_since(now))
    }
}

/// The global budget: requests in flight and requests answered in the last second together stay
/// within the limit. A request counts from its send until a second after its answer, and it
/// reached Discord before its answer did, so any second of Discord's clock sees at most `limit`
/// of them however late each one travelled.
#[derive(Debug)]
struct GlobalBudget {
    limit: usize,
    in_flight: usize,
    answered: VecDeque<Instant>,
}

impl GlobalBudget {
    fn new(limit: u32) -> Self {
        Self {
            limit: usize::try_from(limit.max(1)).unwrap_or(usize::MAX),
            in_flight: 0,
            answered: VecDeque::new(),
        }
    }

    /// Takes a place for one request, or says how long to wait for one (`None`: until a
    /// request in flight is answered).
    fn take(&mut self, now: Instant) -> Result<(), Option<Duration>> {
        while self
            .answered
            .front()
            .is_some_and(|at| now.duration_since(*at) >= GLOBAL_SPAN)
        {
            self.answered.pop_front();
        }
        if self.in_flight + self.answered.len() < self.limit {
            self.in_flight += 1;
            return Ok(());
        }
        Err(self
            .answered
            .front()
            .map(|oldest| (*oldest + GLOBAL_SPAN).saturating_duration_since(now)))
    }

    fn release(&mut self, now: Instant) {
        self.in_flight = self.in_flight.saturating_sub(1);
        self.answered.push_back(now);
    }
}

/// A place in the global budget, held from the send until the answer (or the failure).
pub struct GlobalSlot<'a> {
    scheduler: &'a Scheduler,
}

impl Drop for GlobalSlot<'_> {
    fn drop(&mut self) {
        self.scheduler
            .global
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .release(Instant::now());
        self.scheduler.released.notify_waiters();
    }
}

/// What is known of one bucket's window, from its last answer.
#[derive(Debug)]
pub struct BucketState {
    /// Requests left in the window and when it resets, from the headers (`None` before the
    /// first answer with headers, or once the window has reset).
    window: Option<(u32, Instant)>,
    /// The local budget used while the headers say nothing.
    fallback: Option<SlidingWindow>,
    last_used: Instant,
}

impl BucketState {
    fn new(fallback: Option<SlidingWindow>) -> Self {
        Self {
            window: None,
            fallback,
            last_used: Instant::now(),
        }
    }

    /// Takes one request from the window, or says how long to wait for the reset.
    fn take(&mut self, now: Instant) -> Option<Duration> {
        self.last_used = now;
        match self.window {
            Some((_, reset)) if reset <= now => self.window = None,
            Some((0, reset)) => return Some(reset.saturating_duration_since(now)),
            Some((left, reset)) => {
                self.window = Some((left - 1, reset));
                return None;
            }
            None => {}
        }
        self.fallback.as_mut().and_then(|budget| budget.take(now))
    }

    /// Whether the window has a place for one request now and another after it: what a
    /// request that may be dropped must leave to those that wait.
    fn spare(&mut self, now: Instant) -> bool {
        match self.window {
            Some((left, reset)) if reset > now => return left >= 2,
            _ => {}
        }
        self.fallback
            .as_mut()
            .is_none_or(|budget| budget.free(now) >= 2)
    }

    /// Learns the window from an answer's headers; an answer without them changes nothing.
    fn observe(&mut self, headers: &RateHeaders, now: Instant) {
        if let (Some(remaining), Some(reset_after)) = (headers.remaining, headers.reset_after) {
            self.window = Some((remaining, now + reset_after));
        }
    }

    /// A 429 for this bucket: nothing more until `wait` has passed.
    fn exhaust(&mut self, wait: Duration, now: Instant) {
        self.window = Some((0, now + wait));
    }

    /// Spent and idle long enough for forgetting it to lose nothing.
    fn forgettable(&self, now: Instant, idle: Duration) -> bool {
        let window_over = self.window.is_none_or(|(_, reset)| reset <= now);
        let budget_over = self.fallback.as_ref().is_none_or(|budget| {
            budget
                .sent
                .back()
                .is_none_or(|at| now.duration_since(*at) >= budget.span)
        });
        now.duration_since(self.last_used) >= idle && window_over && budget_over
    }
}

/// The rate-limit headers of one answer, read defensively: a header that is missing, not a
/// number, negative or absurd counts as missing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RateHeaders {
    pub bucket: Option<String>,
    pub remaining: Option<u32>,
    pub reset_after: Option<Duration>,
    /// `X-RateLimit-Global: true` (on a 429).
    pub global: bool,
    /// `Retry-After` in seconds (on a 429).
    pub retry_after: Option<f64>,
}

impl RateHeaders {
    pub fn read(headers: &reqwest::header::HeaderMap) -> Self {
        let text = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
        };
        let number = |name: &str| text(name).and_then(|v| v.parse::<f64>().ok());
        Self {
            bucket: text("x-ratelimit-bucket")
                .filter(|name| !name.is_empty())
                .map(|name| name.chars().take(BUCKET_NAME_MAX).collect()),
            remaining: text("x-ratelimit-remaining").and_then(|v| v.parse().ok()),
            reset_after: number("x-ratelimit-reset-after")
                .and_then(|secs| bounded_wait(secs, LONGEST_RESET)),
            global: text("x-ratelimit-global").is_some_and(|v| v.eq_ignore_ascii_case("true")),
            retry_after: number("retry-after").filter(|secs| !secs.is_nan()),
        }
    }
}

/// Which bucket a request goes to: its route and major parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Route {
    /// Method and path template, e.g. `POST /channels/{}/messages`.
    pub template: &'static str,
    /// The major parameter (channel or guild id).
    pub major: u64,
    /// Allows itself this many requests in any 5 seconds while the headers say nothing.
    pub local_per_5s: Option<u32>,
}

type Shared = Arc<tokio::sync::Mutex<BucketState>>;

#[derive(Debug)]
struct Table {
    /// Route template → the bucket name Discord gave it.
    names: HashMap<&'static str, String>,
    /// (bucket name, or the template before a name is known; major parameter) → state.
    states: HashMap<(String, u64), Shared>,
    swept_at: Instant,
}

/// The process's scheduler; one per REST client, shared by every task.
#[derive(Debug)]
pub struct Scheduler {
    table: Mutex<Table>,
    global: Mutex<GlobalBudget>,
    /// Woken when a global place is given back.
    released: tokio::sync::Notify,
    /// A global 429 holds every request until then.
    global_until: Mutex<Option<Instant>>,
    /// A bucket unused this long (and spent) is forgotten.
    idle: Duration,
}

/// The right to send one request of a bucket: while it is held no other request of the bucket
/// is sent. Each attempt calls [`Permit::ready`] first, then reports the answer.
pub struct Permit<'a> {
    scheduler: &'a Scheduler,
    route: Route,
    state: OwnedMutexGuard<BucketState>,
}

impl Scheduler {
    pub fn new(global_per_second: u32, idle: Duration) -> Self {
        Self {
            table: Mutex::new(Table {
                names: HashMap::new(),
                states: HashMap::new(),
                swept_at: Instant::now(),
            }),
            global: Mutex::new(GlobalBudget::new(global_per_second)),
            released: tokio::sync::Notify::new(),
            global_until: Mutex::new(None),
            idle,
        }
    }

    /// Waits for the route's bucket to be free (no other request of it in flight).
    pub async fn acquire(&self, route: Route) -> Permit<'_> {
        let shared = self.state_of(route);
        Permit {
            scheduler: self,
            route,
            state: shared.lock_owned().await,
        }
    }

    /// [`Self::acquire`] for a request that is dropped rather than kept waiting (a thought-log
    /// summary): `None` when a request of the bucket is in flight or waiting, or when sending
    /// it would leave the window no place for the next request (so failure notices never wait
    /// behind summaries).
    pub fn try_acquire_spare(&self, route: Route) -> Option<Permit<'_>> {
        let mut state = self.state_of(route).try_lock_owned().ok()?;
        state.spare(Instant::now()).then_some(Permit {
            scheduler: self,
            route,
            state,
        })
    }

    /// The shared state of the route's bucket, made on first use; reaps idle ones now and then.
    fn state_of(&self, route: Route) -> Shared {
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        if now.duration_since(table.swept_at) >= self.idle {
            table.swept_at = now;
            let idle = self.idle;
            // In use (held or awaited) means referenced outside the table, or locked.
            table.states.retain(|_, state| {
                Arc::strong_count(state) > 1
                    || state
                        .try_lock()
                        .map_or(true, |state| !state.forgettable(now, idle))
            });
        }
        let name = table
            .names
            .get(route.template)
            .cloned()
            .unwrap_or_else(|| route.template.to_owned());
        table
            .states
            .entry((name, route.major))
            .or_insert_with(|| {
                let fallback = route
                    .local_per_5s
                    .map(|n| SlidingWindow::new(n, Duration::from_secs(5)));
                Arc::new(tokio::sync::Mutex::new(BucketState::new(fallback)))
            })
            .clone()
    }

    /// Records the bucket name an answer gave its route; the state learnt so far moves with it.
    fn name_route(&self, route: Route, name: &str, state: &Shared) {
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        if table
            .names
            .get(route.template)
            .is_some_and(|known| known == name)
        {
            return;
        }
        table.names.insert(route.template, name.to_owned());
        // Every channel's state learnt under the template moves under the name.
        let unnamed: Vec<(String, u64)> = table
            .states
            .keys()
            .filter(|(key, _)| key == route.template)
            .cloned()
            .collect();
        for key in unnamed {
            if let Some(moved) = table.states.remove(&key) {
                table
                    .states
                    .entry((name.to_owned(), key.1))
                    .or_insert(moved);
            }
        }
        table
            .states
            .entry((name.to_owned(), route.major))
            .or_insert_with(|| state.clone());
    }

    /// Waits out a global hold, then takes a place in the global budget.
    async fn global_turn(&self) -> GlobalSlot<'_> {
        loop {
            let held = *self
                .global_until
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(until) = held.filter(|until| *until > Instant::now()) {
                tokio::time::sleep_until(until).await;
                continue;
            }
            // Registered before looking, so a release between the look and the wait wakes it.
            let released = self.released.notified();
            let taken = self
                .global
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(Instant::now());
            match taken {
                Ok(()) => return GlobalSlot { scheduler: self },
                Err(Some(wait)) => {
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        () = released => {}
                    }
                }
                Err(None) => released.await,
            }
        }
    }

    /// A global 429: every request waits `wait`.
    fn hold_all(&self, wait: Duration) {
        let until = Instant::now().checked_add(wait);
        let mut held = self
            .global_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *held = (*held).max(until);
    }

    #[cfg(test)]
    fn bucket_count(&self) -> usize {
        self.table
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .states
            .len()
    }
}

impl<'a> Permit<'a> {
    /// Waits until the bucket's window and the global budget allow one more request; the
    /// global place is held until the request's answer is in (drop the slot then).
    pub async fn ready(&mut self) -> GlobalSlot<'a> {
        let asked = Instant::now();
        loop {
            match self.state.take(Instant::now()) {
                None => break,
                Some(wait) => tokio::time::sleep(wait).await,
            }
        }
        let slot = self.scheduler.global_turn().await;
        // Route templates are this crate's constants: a bounded label.
        metrics::counter!(REQUESTS, "route" => self.route.template).increment(1);
        metrics::histogram!(WAITED, "route" => self.route.template)
            .record(asked.elapsed().as_secs_f64());
        slot
    }

    /// Learns from an answer's headers (any status).
    pub fn observe(&mut self, headers: &RateHeaders) {
        self.state.observe(headers, Instant::now());
        if let Some(name) = &headers.bucket {
            let shared = self.shared();
            self.scheduler.name_route(self.route, name, &shared);
        }
    }

    /// A 429 that asked for `wait`: a global one holds every request, another this bucket.
    pub fn rate_limited(&mut self, wait: Duration, global: bool) {
        if global {
            self.scheduler.hold_all(wait);
        } else {
            self.state.exhaust(wait, Instant::now());
        }
    }

    fn shared(&self) -> Shared {
        OwnedMutexGuard::mutex(&self.state).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A 429's wait comes from outside; no number may panic or wait past the bound.
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

    use proptest::prelude::*;

    const MESSAGES: &str = "POST /channels/{}/messages";

    fn route(major: u64) -> Route {
        Route {
            template: MESSAGES,
            major,
            local_per_5s: Some(5),
        }
    }

    fn headers(bucket: &str, remaining: u32, reset_after_secs: f64) -> RateHeaders {
        RateHeaders {
            bucket: Some(bucket.to_owned()),
            remaining: Some(remaining),
            reset_after: Some(Duration::from_secs_f64(reset_after_secs)),
            ..RateHeaders::default()
        }
    }

    /// Sends `n` requests on `route` one after another, each answered with what `answer` says.
    async fn send(scheduler: &Scheduler, route: Route, n: usize) -> Vec<Duration> {
        let start = Instant::now();
        let mut at = Vec::new();
        for _ in 0..n {
            let mut permit = scheduler.acquire(route).await;
            permit.ready().await;
            at.push(Instant::now() - start);
        }
        at
    }

    #[tokio::test(start_paused = true)]
    async fn a_spent_window_waits_for_its_reset() {
        let scheduler = Scheduler::new(50, Duration::from_secs(300));
        let start = Instant::now();
        {
            let mut permit = scheduler.acquire(route(1)).await;
            permit.ready().await;
            permit.observe(&headers("abc", 0, 2.5));
        }
        let mut permit = scheduler.acquire(route(1)).await;
        permit.ready().await;
        assert_eq!(Instant::now() - start, Duration::from_millis(2500));
        // Another channel's bucket is its own.
        drop(permit);
        let before = Instant::now();
        let mut other = scheduler.acquire(route(2)).await;
        other.ready().await;
        assert_eq!(Instant::now(), before);
    }

    // SPEC D7 (summaries by choice): a request that may be dropped is not sent while another of its
    // bucket is in flight or waiting, nor when it would take the window's last place (headers or,
    // without them, the local budget), so a failure notice never waits behind a turn summary.
    #[tokio::test(start_paused = true)]
    async fn a_droppable_request_leaves_the_bucket_to_those_that_wait() {
        let scheduler = Scheduler::new(50, Duration::from_secs(300));
        let held = scheduler.acquire(route(1)).await;
        assert!(scheduler.try_acquire_spare(route(1)).is_none(), "in flight");
        drop(held);
        {
            let mut spare = scheduler
                .try_acquire_spare(route(1))
                .expect("a free bucket");
            spare.ready().await;
            spare.observe(&headers("abc", 1, 5.0));
        }
        assert!(
            scheduler.try_acquire_spare(route(1)).is_none(),
            "the last place is kept"
        );
        let start = Instant::now();
        scheduler.acquire(route(1)).await.ready().await;
        assert_eq!(Instant::now(), start, "a waiting request takes it at once");
        send(&scheduler, route(2), 3).await;
        let mut fourth = scheduler
            .try_acquire_spare(route(2))
            .expect("two places left");
        fourth.ready().await;
        drop(fourth);
        assert!(
            scheduler.try_acquire_spare(route(2)).is_none(),
            "one place left"
        );
        assert_eq!(send(&scheduler, route(2), 1).await, [Duration::ZERO]);
    }

    #[tokio::test(start_paused = true)]
    async fn without_headers_a_message_route_keeps_its_local_budget() {
        let scheduler = Scheduler::new(50, Duration::from_secs(300));
        let at = send(&scheduler, route(1), 7).await;
        assert_eq!(at[4], Duration::ZERO);
        assert_eq!(
            at[5],
            Duration::from_secs(5),
            "the 6th waits for the 1st to leave the span"
        );
        assert_eq!(at[6], Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn the_global_budget_is_shared_by_every_bucket() {
        let scheduler = Scheduler::new(3, Duration::from_secs(300));
        let start = Instant::now();
        let mut at = Vec::new();
        for channel in 0..5 {
            let mut permit = scheduler.acquire(route(channel)).await;
            permit.ready().await;
            at.push(Instant::now() - start);
        }
        assert_eq!(
            at,
            [0, 0, 0, 1000, 1000].map(Duration::from_millis).to_vec()
        );
    }

    // A request holds its global place from its send until a second after its answer, so a
    // slow answer cannot let the next second's requests reach Discord inside this second.
    #[tokio::test(start_paused = true)]
    async fn a_global_place_is_held_until_a_second_after_the_answer() {
        let scheduler = Arc::new(Scheduler::new(1, Duration::from_secs(300)));
        let start = Instant::now();
        let mut first = scheduler.acquire(route(1)).await;
        let slot = first.ready().await;
        let second = {
            let scheduler = scheduler.clone();
            tokio::spawn(async move {
                let mut permit = scheduler.acquire(route(2)).await;
                permit.ready().await;
                Instant::now()
            })
        };
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(!second.is_finished(), "the first is still in flight");
        drop(slot);
        let sent = second.await.expect("second request");
        assert_eq!(sent - start, Duration::from_secs(3));
    }

    #[tokio::test(start_paused = true)]
    async fn a_global_429_holds_every_bucket() {
        let scheduler = Scheduler::new(50, Duration::from_secs(300));
        let start = Instant::now();
        {
            let mut permit = scheduler.acquire(route(1)).await;
            permit.ready().await;
            permit.rate_limited(Duration::from_millis(1500), true);
        }
        let mut other = scheduler.acquire(route(9)).await;
        other.ready().await;
        assert_eq!(Instant::now() - start, Duration::from_millis(1500));
    }

    #[tokio::test(start_paused = true)]
    async fn a_bucket_429_holds_only_its_bucket() {
        let scheduler = Scheduler::new(50, Duration::from_secs(300));
        let start = Instant::now();
        {
            let mut permit = scheduler.acquire(route(1)).await;
            permit.ready().await;
            permit.rate_limited(Duration::from_secs(2), false);
        }
        let mut other = scheduler.acquire(route(2)).await;
        other.ready().await;
        assert_eq!(Instant::now(), start);
        drop(other);
        let mut same = scheduler.acquire(route(1)).await;
        same.ready().await;
        assert_eq!(Instant::now() - start, Duration::from_secs(2));
    }

    // Two routes Discord names with one bucket share its window for the same channel.
    #[tokio::test(start_paused = true)]
    async fn routes_named_alike_share_a_window() {
        let scheduler = Scheduler::new(50, Duration::from_secs(300));
        let edit = Route {
            template: "PATCH /channels/{}/messages/{}",
            major: 1,
            local_per_5s: None,
        };
        for r in [route(1), edit] {
            let mut permit = scheduler.acquire(r).await;
            permit.ready().await;
            permit.observe(&headers("shared", 0, 3.0));
        }
        let start = Instant::now();
        let mut permit = scheduler.acquire(route(1)).await;
        permit.ready().await;
        assert_eq!(Instant::now() - start, Duration::from_secs(3));
    }

    // One request of a bucket is in flight at a time: the second waits for the first's answer.
    #[tokio::test(start_paused = true)]
    async fn one_request_of_a_bucket_is_in_flight() {
        let scheduler = Arc::new(Scheduler::new(50, Duration::from_secs(300)));
        let first = scheduler.acquire(route(1)).await;
        let waiting = {
            let scheduler = scheduler.clone();
            tokio::spawn(async move {
                let mut permit = scheduler.acquire(route(1)).await;
                permit.ready().await;
            })
        };
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!waiting.is_finished());
        drop(first);
        waiting.await.expect("second request");
    }

    #[tokio::test(start_paused = true)]
    async fn idle_spent_buckets_are_forgotten() {
        let scheduler = Scheduler::new(50, Duration::from_secs(60));
        send(&scheduler, route(1), 1).await;
        send(&scheduler, route(2), 1).await;
        tokio::time::advance(Duration::from_secs(30)).await;
        send(&scheduler, route(2), 1).await;
        assert_eq!(scheduler.bucket_count(), 2);
        tokio::time::advance(Duration::from_secs(31)).await;
        send(&scheduler, route(3), 1).await;
        assert_eq!(scheduler.bucket_count(), 2, "1 was idle for 61 s");
    }

    #[tokio::test(start_paused = true)]
    async fn a_bucket_whose_window_is_still_closed_is_kept() {
        let scheduler = Scheduler::new(50, Duration::from_secs(1));
        {
            let mut permit = scheduler.acquire(route(1)).await;
            permit.ready().await;
            permit.observe(&headers("abc", 0, 30.0));
        }
        tokio::time::advance(Duration::from_secs(2)).await;
        send(&scheduler, route(2), 1).await;
        assert_eq!(
            scheduler.bucket_count(),
            2,
            "forgetting 1 would let it send early"
        );
    }

    fn header_map(pairs: &[(&str, String)]) -> reqwest::header::HeaderMap {
        let mut map = reqwest::header::HeaderMap::new();
        for (name, value) in pairs {
            if let (Ok(name), Ok(value)) = (
                reqwest::header::HeaderName::from_bytes(name.as_bytes()),
                reqwest::header::HeaderValue::from_str(value),
            ) {
                map.insert(name, value);
            }
        }
        map
    }

    #[test]
    fn headers_are_read_as_discord_sends_them() {
        let read = RateHeaders::read(&header_map(&[
            ("X-RateLimit-Bucket", "abcd1234".into()),
            ("X-RateLimit-Remaining", "0".into()),
            ("X-RateLimit-Reset-After", "4.321".into()),
            ("X-RateLimit-Global", "true".into()),
            ("Retry-After", "5".into()),
        ]));
        assert_eq!(read.bucket.as_deref(), Some("abcd1234"));
        assert_eq!(read.remaining, Some(0));
        assert_eq!(read.reset_after, Some(Duration::from_millis(4321)));
        assert!(read.global);
        assert_eq!(read.retry_after, Some(5.0));
    }

    proptest! {
        // Headers come from outside: any text reads without a panic, and no reset is longer
        // than the bound.
        #[test]
        fn any_header_text_reads_within_bounds(
            remaining in ".{0,12}", reset in ".{0,12}", bucket in ".{0,200}", retry in ".{0,12}",
        ) {
            let read = RateHeaders::read(&header_map(&[
                ("x-ratelimit-remaining", remaining),
                ("x-ratelimit-reset-after", reset),
                ("x-ratelimit-bucket", bucket),
                ("retry-after", retry),
            ]));
            prop_assert!(read.reset_after.is_none_or(|r| r <= LONGEST_RESET));
            prop_assert!(read.bucket.is_none_or(|b| b.chars().count() <= BUCKET_NAME_MAX));
        }

        #[test]
        fn numeric_headers_never_panic(reset in any::<f64>(), remaining in any::<i64>()) {
            let read = RateHeaders::read(&header_map(&[
                ("x-ratelimit-remaining", remaining.to_string()),
                ("x-ratelimit-reset-after", reset.to_string()),
            ]));
            prop_assert!(read.reset_after.is_none_or(|r| r <= LONGEST_RESET));
        }
    }
}
