//! [`FakeDiscord`]: starts the server, and is what a test drives (dispatches, scripted answers,
//! how strict it is) and reads back (requests, messages, pings, rate limits, interactions).
//! What a test does to the gateway sessions and reads of them is in `gateway_control`.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::gateway::gateway;
use super::rate_limits::{RateLimit, RateLimitCounts};
use super::rest::{parse_id, rest};
use super::session::{Session, dispatch_locked, dispatch_to, shard_for};
use super::state::{INTERACTION_DEADLINE, Inner, InteractionState, Scripted, Shared};
use super::validation::check_options;
use super::world::World;
use super::{FIRST_SNOWFLAKE, Incoming, Recorded, Slash};

pub struct FakeDiscord {
    /// `http://127.0.0.1:<port>`, for `HttpBuilder::proxy`.
    pub base_url: String,
    pub(super) shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for FakeDiscord {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FakeDiscord {
    pub async fn start(world: World) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (ready, _) = watch::channel(Vec::new());
        let inner = Inner {
            bot_id: world.bot_id,
            interaction_deadline: INTERACTION_DEADLINE,
            interaction_age: Duration::ZERO,
            shard_total: 1,
            recommended_shards: 1,
            sessions: vec![Session::default()],
            ..Inner::default()
        };
        let shared = Arc::new(Shared {
            world,
            ws_url: format!("ws://{addr}/gateway"),
            next_id: AtomicU64::new(FIRST_SNOWFLAKE),
            next_conn: AtomicU64::new(1),
            inner: Mutex::new(inner),
            ready,
        });
        let app = Router::new()
            .route("/gateway", get(gateway))
            .fallback(rest)
            .with_state(shared.clone());
        let server = tokio::spawn(async move {
            axum::serve(listener, app)
                .await
                .expect("fake Discord server");
        });
        Self {
            base_url: format!("http://{addr}"),
            shared,
            server,
        }
    }

    pub fn world(&self) -> &World {
        &self.shared.world
    }

    /// `ws://127.0.0.1:<port>/gateway`
    pub fn ws_url(&self) -> &str {
        &self.shared.ws_url
    }

    /// Dispatches MESSAGE_CREATE (waiting for a ready client first); returns the message id. The
    /// message goes into the channel's history.
    pub async fn send_message(&self, m: Incoming) -> u64 {
        self.wait_ready().await;
        let id = self.shared.snowflake();
        let mut inner = self.shared.lock();
        let referenced = m.reply_to.and_then(|r| {
            inner
                .history
                .get(&m.channel_id)
                .and_then(|h| h.iter().find(|msg| msg["id"] == json!(r.to_string())))
                .cloned()
        });
        let mut message = self.shared.world.incoming_json(&m, id, referenced);
        message["attachments"] =
            self.shared
                .attachments_json(&mut inner, m.channel_id, &m.attachments);
        inner
            .history
            .entry(m.channel_id)
            .or_default()
            .push(message.clone());
        dispatch_locked(&mut inner, "MESSAGE_CREATE", message);
        id
    }

    /// Its author edits a message: the stored copy takes `content` and an edit time, and the
    /// whole message goes out as MESSAGE_UPDATE, as Discord sends it.
    pub fn user_edits(&self, channel_id: u64, message_id: u64, content: &str) {
        let id = message_id.to_string();
        let mut inner = self.shared.lock();
        let Some(message) = inner
            .history
            .get_mut(&channel_id)
            .and_then(|h| h.iter_mut().find(|m| m["id"].as_str() == Some(id.as_str())))
        else {
            panic!("fake Discord: no message {message_id} in {channel_id}");
        };
        message["content"] = json!(content);
        message["edited_timestamp"] = json!(chrono::Utc::now().to_rfc3339());
        let edited = message.clone();
        dispatch_locked(&mut inner, "MESSAGE_UPDATE", edited);
    }

    /// Its author deletes a message: gone from the history, and MESSAGE_DELETE goes out.
    pub fn user_deletes(&self, channel_id: u64, message_id: u64) {
        let id = message_id.to_string();
        let mut inner = self.shared.lock();
        let guild_id = inner.history.get(&channel_id).and_then(|h| {
            h.iter()
                .find(|m| m["id"].as_str() == Some(id.as_str()))
                .map(|m| m["guild_id"].clone())
        });
        if let Some(h) = inner.history.get_mut(&channel_id) {
            h.retain(|m| m["id"].as_str() != Some(id.as_str()));
        }
        let mut deleted = json!({"id": id, "channel_id": channel_id.to_string()});
        if let Some(guild_id) = guild_id.filter(|g| !g.is_null()) {
            deleted["guild_id"] = guild_id;
        }
        dispatch_locked(&mut inner, "MESSAGE_DELETE", deleted);
    }

    /// A message sent while the bot is away, `age` ago: it goes into the channel's history
    /// and no gateway session hears of it, so only a bot that reads the history back (a
    /// catch-up) can see it. Its id and timestamp carry its time, as Discord's do. Returns its
    /// id.
    pub fn post_unseen(&self, m: Incoming, age: Duration) -> u64 {
        let at = std::time::SystemTime::now() - age;
        let id = super::state::snowflake_at(at, self.shared.snowflake());
        let mut inner = self.shared.lock();
        let mut message = self.shared.world.incoming_json(&m, id, None);
        message["attachments"] =
            self.shared
                .attachments_json(&mut inner, m.channel_id, &m.attachments);
        message["timestamp"] = json!(chrono::DateTime::<chrono::Utc>::from(at).to_rfc3339());
        let history = inner.history.entry(m.channel_id).or_default();
        history.push(message);
        history.sort_by_key(|m| m["id"].as_str().and_then(|id| id.parse::<u64>().ok()));
        id
    }

    /// [`Self::send_message`], with every `marker` in the frame's JSON text replaced by `raw`
    /// as sent: JSON no `Value` can hold, such as a lone surrogate escape `\ud800`. The history
    /// (and a resumed session's replay) keeps the markers.
    pub async fn send_message_raw(&self, m: Incoming, marker: &str, raw: &str) -> u64 {
        self.wait_ready().await;
        let id = self.shared.snowflake();
        let mut inner = self.shared.lock();
        let message = self.shared.world.incoming_json(&m, id, None);
        inner
            .history
            .entry(m.channel_id)
            .or_default()
            .push(message.clone());
        let shard = shard_for(&inner, "MESSAGE_CREATE", &message);
        dispatch_to(
            &mut inner,
            shard,
            "MESSAGE_CREATE",
            message,
            Some((marker, raw)),
        );
        id
    }

    /// Dispatches a DM from this user (MESSAGE_CREATE without guild_id); returns the DM channel
    /// id (stable per user) and the message id.
    pub async fn send_dm(&self, user_id: u64, content: &str) -> (u64, u64) {
        let channel_id = self.dm_channel(user_id);
        let name = self.shared.world.user_name(user_id);
        let id = self
            .send_message(Incoming::new(channel_id, None, user_id, &name, content))
            .await;
        (channel_id, id)
    }

    /// The DM channel id with this user (created on first use, stable afterwards).
    pub fn dm_channel(&self, user_id: u64) -> u64 {
        let mut inner = self.shared.lock();
        self.shared.dm_channel(&mut inner, user_id)
    }

    /// Dispatches INTERACTION_CREATE for a slash command; returns the interaction id. Its token
    /// is `itoken-<id>`. Panics when the command is registered and `c.options` do not fit its
    /// registration (see [`Self::try_slash`]).
    pub async fn slash(&self, c: Slash) -> u64 {
        match self.try_slash(c).await {
            Ok(id) => id,
            Err(why) => panic!("fake Discord: {why}"),
        }
    }

    /// [`Self::slash`], or why Discord would never send this: when the command was registered
    /// (`PUT .../commands`), the options must match the registered names, types, choices and
    /// required options. An unregistered command is sent as is.
    pub async fn try_slash(&self, c: Slash) -> Result<u64, String> {
        self.try_slash_as(c, false).await
    }

    /// A slash command a user runs through their own install of the app (SPEC A5): in a server
    /// the bot may not be in (`guild_id`), or a private channel (`None`). Discord offers it only
    /// when the command was registered for user install (`integration_types` has 1) and for
    /// that context (`contexts` has 0 in a server, 2 in a private channel); the interaction says
    /// the user authorized it (`authorizing_integration_owners` {"1": user}) and the bot gets
    /// no permissions there but the interaction's own.
    pub async fn try_user_slash(&self, c: Slash) -> Result<u64, String> {
        self.try_slash_as(c, true).await
    }

    async fn try_slash_as(&self, c: Slash, user_install: bool) -> Result<u64, String> {
        self.wait_ready().await;
        let mut id = self.shared.snowflake();
        let token = format!("itoken-{id}");
        let mut inner = self.shared.lock();
        if !inner.interaction_age.is_zero() {
            let made = std::time::SystemTime::now() - inner.interaction_age;
            id = super::state::snowflake_at(made, id);
        }
        let registered = inner
            .commands
            .iter()
            .rev()
            .find(|(g, cmd)| cmd["name"] == json!(c.name) && (g.is_none() || *g == c.guild_id))
            .map(|(_, cmd)| cmd.clone());
        let command_id = match &registered {
            Some(cmd) => {
                if cmd["type"].as_u64() != Some(1) {
                    return Err(format!("`{}` is not a slash command: {cmd}", c.name));
                }
                check_options(&format!("/{}", c.name), &c.options, &cmd["options"])?;
                cmd["id"].as_str().and_then(parse_id).unwrap_or(0)
            }
            None => self.shared.snowflake(),
        };
        let mut payload = self.shared.world.slash_json(&c, id, &token, command_id);
        if user_install {
            let context = if c.guild_id.is_some() { 0 } else { 2 };
            let offered = |key: &str, value: u64| {
                registered
                    .as_ref()
                    .and_then(|cmd| cmd[key].as_array().cloned())
                    .is_some_and(|v| v.contains(&json!(value)))
            };
            if !offered("integration_types", 1) || !offered("contexts", context) {
                return Err(format!(
                    "`/{}` is not registered for user install in context {context}",
                    c.name
                ));
            }
            payload["authorizing_integration_owners"] = json!({"1": c.user_id.to_string()});
            payload["context"] = json!(context);
            // Where the bot is not a member it may do nothing but answer the interaction.
            payload["app_permissions"] = json!(super::USER_INSTALL_PERMISSIONS.to_string());
        }
        let state = InteractionState::new(id, c.channel_id, c.guild_id, payload.clone());
        inner.interactions.insert(token, state);
        dispatch_locked(&mut inner, "INTERACTION_CREATE", payload);
        Ok(id)
    }

    /// The commands registered so far: (guild id, or `None` for global ones; command).
    pub fn commands(&self) -> Vec<(Option<u64>, Value)> {
        self.shared.lock().commands.clone()
    }

    /// Sends any dispatch (waiting for a ready client first).
    pub async fn dispatch(&self, t: &str, d: Value) {
        self.wait_ready().await;
        dispatch_locked(&mut self.shared.lock(), t, d);
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().requests.clone()
    }

    /// Requests to routes the fake does not know (answered 404).
    pub fn unexpected(&self) -> Vec<Recorded> {
        self.shared.lock().unexpected.clone()
    }

    /// Bodies of successful `POST /channels/{id}/messages`, in order.
    pub fn messages_in(&self, channel_id: u64) -> Vec<Value> {
        self.shared
            .lock()
            .posted
            .get(&channel_id)
            .cloned()
            .unwrap_or_default()
    }

    /// The channel's webhooks, oldest first, as Discord returns them (token included).
    pub fn webhooks(&self, channel_id: u64) -> Vec<Value> {
        super::webhooks::channel_webhooks(&self.shared.lock().webhooks, channel_id)
    }

    /// Bodies of successful executes of the channel's webhooks (`POST /webhooks/{id}/{token}`),
    /// in order, each with the executing webhook's id added as `"webhook_id"` (a string).
    /// The bot's reactions on a message, in the order added (a Unicode emoji, or `name:id`).
    pub fn reactions(&self, channel_id: u64, message_id: u64) -> Vec<String> {
        self.shared
            .lock()
            .reactions
            .get(&(channel_id, message_id))
            .cloned()
            .unwrap_or_default()
    }

    pub fn webhook_posts(&self, channel_id: u64) -> Vec<Value> {
        self.shared
            .lock()
            .webhook_posts
            .get(&channel_id)
            .cloned()
            .unwrap_or_default()
    }

    /// A member (`owner`) makes an incoming webhook named `name` in the channel, as a moderator
    /// does for a feed: it is among the channel's webhooks, not the bot's. Returns its id.
    pub fn add_webhook(&self, channel_id: u64, owner: u64, name: &str) -> u64 {
        let id = self.shared.snowflake();
        let webhook =
            super::webhooks::incoming_webhook(&self.shared.world, id, channel_id, name, owner);
        self.shared.lock().webhooks.insert(id, webhook);
        id
    }

    /// The next execute of a webhook of the channel that passes Discord's checks posts its
    /// message (stored, dispatched) but answers `status`, as when Discord fails after the write.
    pub fn fail_after_webhook_post_next(&self, channel_id: u64, status: u16) {
        self.shared
            .lock()
            .webhook_fail_after
            .entry(channel_id)
            .or_default()
            .push_back(status);
    }

    /// A moderator deletes the channel's webhooks: their executes get 404 Unknown Webhook from
    /// now on, and the channel has room for 15 again.
    pub fn delete_webhooks(&self, channel_id: u64) {
        let channel = json!(channel_id.to_string());
        self.shared
            .lock()
            .webhooks
            .retain(|_, w| w["channel_id"] != channel);
    }

    /// Every message object in the channel (incoming and created), oldest first.
    pub fn history(&self, channel_id: u64) -> Vec<Value> {
        self.shared
            .lock()
            .history
            .get(&channel_id)
            .cloned()
            .unwrap_or_default()
    }

    /// (interaction id, callback body) of every accepted interaction callback.
    pub fn interaction_responses(&self) -> Vec<(u64, Value)> {
        self.shared.lock().interaction_responses.clone()
    }

    /// The original response (as a message object, after edits) and the follow-ups of an
    /// interaction.
    pub fn interaction_messages(&self, interaction_id: u64) -> (Option<Value>, Vec<Value>) {
        let inner = self.shared.lock();
        inner
            .interactions
            .values()
            .find(|i| i.id == interaction_id)
            .map(|i| (i.original.clone(), i.followups.clone()))
            .unwrap_or_default()
    }

    fn script(&self, channel_id: u64, scripted: Scripted) {
        self.shared
            .lock()
            .scripted
            .entry(channel_id)
            .or_default()
            .push_back(scripted);
    }

    /// The next `times` `POST /channels/{id}/messages` that the real limits let through answer
    /// 429 for the route's bucket, waiting `retry_after_secs`, with Discord's body and headers
    /// (`X-RateLimit-Reset-After` is `retry_after_secs`). They take nothing from the window.
    pub fn rate_limit_next(&self, channel_id: u64, times: usize, retry_after_secs: f64) {
        for _ in 0..times {
            self.script(
                channel_id,
                Scripted::RateLimited {
                    retry_after: retry_after_secs,
                },
            );
        }
    }

    /// The next `POST /channels/{id}/messages` answers this status and body, once, and creates
    /// nothing (it still counts in the route's window, with its headers).
    pub fn fail_next(&self, channel_id: u64, status: u16, body: Value) {
        self.script(
            channel_id,
            Scripted::Answer {
                status,
                body: body.to_string(),
                headers: Vec::new(),
                as_is: false,
            },
        );
    }

    /// The next `POST /channels/{id}/messages` answers this status, raw body and headers, once,
    /// exactly as given (no rate-limit header is added), and creates nothing.
    pub fn answer_next_raw(
        &self,
        channel_id: u64,
        status: u16,
        body: &str,
        headers: &[(&'static str, &str)],
    ) {
        self.script(
            channel_id,
            Scripted::Answer {
                status,
                body: body.to_owned(),
                headers: headers.iter().map(|(n, v)| (*n, (*v).to_owned())).collect(),
                as_is: true,
            },
        );
    }

    /// The next `POST /channels/{id}/messages` that passes Discord's checks creates its message
    /// (stored, dispatched as MESSAGE_CREATE, its nonce remembered) but answers `status` (500:
    /// Discord's JSON; 502, 504: the edge's HTML page; 503: the load balancer's text), as when
    /// Discord fails after the write. A refused request (400, 403) uses it up all the same.
    pub fn fail_after_create_next(&self, channel_id: u64, status: u16) {
        self.script(channel_id, Scripted::FailAfterCreate { status });
    }

    /// Forgets every message nonce, as Discord does five minutes after a message: an
    /// `enforce_nonce` create with an old nonce then posts a new message.
    pub fn expire_nonces(&self) {
        self.shared.lock().nonces.clear();
    }

    /// Refuses the bot token `token` as Discord does a wrong or reset one: close 4004 on the
    /// gateway, and 401 on every REST request when `on_rest`.
    pub fn reject_token(&self, token: &str, on_rest: bool) {
        let mut inner = self.shared.lock();
        inner.rejected_token = Some(token.to_owned());
        inner.rejected_on_rest = on_rest;
    }

    /// Refuses every command registration (PUT) with 400 Invalid Form Body (`true`), or takes
    /// them again.
    /// The next `times` command writes (`PUT .../commands`) are answered 429 with Discord's
    /// body and headers, asking for a wait of half a second.
    pub fn rate_limit_commands_next(&self, times: usize) {
        self.shared.lock().commands_rate_limited = times;
    }

    pub fn refuse_commands(&self, refuse: bool) {
        self.shared.lock().refuse_commands = refuse;
    }

    /// Rate limits on (the default) or off. Off: no request is refused for them and no
    /// rate-limit header is sent (except on scripted 429s). Either way the windows start anew.
    pub fn set_rate_limits(&self, on: bool) {
        self.shared.lock().limits.set_enabled(on);
    }

    /// Changes a limit to `requests` per `window` (fixed windows, the windows start anew).
    pub fn set_rate_limit(&self, limit: RateLimit, requests: u32, window: Duration) {
        self.shared.lock().limits.set_limit(limit, requests, window);
    }

    /// How many 429s the fake sent, real and scripted.
    pub fn rate_limited(&self) -> usize {
        self.shared.lock().limits.counts.total()
    }

    /// How many 429s the fake sent, by cause.
    pub fn rate_limit_counts(&self) -> RateLimitCounts {
        self.shared.lock().limits.counts
    }

    /// Interactions from now on were made `age` before they reach the bot (a user's click
    /// that took long to arrive, or a test of the token's end): their ids carry that time, and
    /// their token stops working 15 minutes after it.
    pub fn set_interaction_age(&self, age: Duration) {
        self.shared.lock().interaction_age = age;
    }

    /// How long after its dispatch an interaction may still get its callback (3 s by default).
    pub fn set_interaction_deadline(&self, deadline: Duration) {
        self.shared.lock().interaction_deadline = deadline;
    }

    /// The bot's messages in the channel (created, interaction answers), oldest first: (message
    /// id, ids of the users it pinged, as in its `mentions`).
    pub fn pinged_in(&self, channel_id: u64) -> Vec<(u64, Vec<u64>)> {
        let bot = json!(self.shared.world.bot_id.to_string());
        let id_of = |v: &Value| v.as_str().and_then(parse_id).unwrap_or(0);
        self.history(channel_id)
            .iter()
            .filter(|m| m["author"]["id"] == bot)
            .map(|m| {
                let users = m["mentions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|u| id_of(&u["id"]))
                    .collect();
                (id_of(&m["id"]), users)
            })
            .collect()
    }

    /// How many `POST /channels/{id}/typing`.
    pub fn typing_count(&self, channel_id: u64) -> usize {
        self.shared
            .lock()
            .typing
            .get(&channel_id)
            .copied()
            .unwrap_or(0)
    }
}
