//! The fake Discord's gateway is sharded as Discord's, driven with a raw websocket client: each
//! IDENTIFY's `shard` is a session of its own, a guild's READY entry, GUILD_CREATE and dispatches
//! go to the sessions of shard `(guild_id >> 22) % count` only, DMs to shard 0, RESUME is per
//! session, a second IDENTIFY for a live shard is a session beside the first (both get the
//! shard's dispatches: `fake_discord_sessions.rs` tells more), and an invalid shard is closed
//! with 4010. Then the real serenity client: two clients running a shard each, as two bot
//! processes would, and one autosharded client.
// The shared fakes this binary uses (tests/support/). Public, so that what it leaves
// unused of them is not dead code.
pub mod support {
    pub mod fake_discord;
    pub mod gateway_client;
}

use std::time::Duration;

use serde_json::{Value, json};
use serenity::all::{
    Client, ClientBuilder, Context, EventHandler, GatewayIntents, Guild, HttpBuilder, Message,
    RawEventHandler,
};
use serenity::model::event::Event;
use support::fake_discord::{self as fd, FakeDiscord, Incoming, SHARD_1_GUILD, World};
use support::gateway_client::{PATIENCE, Shard, guild_ids, id};

const GUILD_0: u64 = 100;
const GENERAL_0: u64 = 200;
const GENERAL_1: u64 = 210;
const ALICE: u64 = 300;
fn says(channel: u64, guild: u64, content: &str) -> Incoming {
    Incoming::new(channel, Some(guild), ALICE, "alice", content)
}

/// Shards 0 and 1 of 2 on `World::sharded()`, both ready.
async fn two_shards() -> (FakeDiscord, Shard, Shard) {
    let fake = FakeDiscord::start(World::sharded()).await;
    let mut zero = Shard::identify(&fake, Some([0, 2])).await;
    zero.ready().await;
    let mut one = Shard::identify(&fake, Some([1, 2])).await;
    one.ready().await;
    fake.wait_shards_ready(2).await;
    (fake, zero, one)
}

#[test]
fn the_sharded_world_puts_one_guild_on_each_of_two_shards() {
    let world = World::sharded();
    assert_eq!(fd::shard_of(GUILD_0, 2), 0);
    assert_eq!(fd::shard_of(SHARD_1_GUILD, 2), 1);
    let ids = |id: u64| -> Vec<u64> { world.shard_guilds(id, 2).map(|g| g.id).collect() };
    assert_eq!(ids(0), [GUILD_0]);
    assert_eq!(ids(1), [SHARD_1_GUILD]);
    for (guild, general) in [(GUILD_0, GENERAL_0), (SHARD_1_GUILD, GENERAL_1)] {
        let (g, channel) = world.channel(general).expect("a general channel");
        assert_eq!((g.id, channel.name.as_str()), (guild, "general"));
        let bot = world.permissions_in(world.bot_id, general);
        let needed = fd::VIEW_CHANNEL | fd::SEND_MESSAGES | fd::READ_MESSAGE_HISTORY;
        assert_eq!(
            bot & needed,
            needed,
            "the bot reads and sends in guild {guild}"
        );
        assert!(world.member(guild, ALICE).is_some());
    }
}

#[tokio::test]
async fn gateway_bot_recommends_the_shard_count_the_test_sets() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fake = FakeDiscord::start(World::sharded()).await;
    let get = || async {
        let answer: Value = reqwest::Client::new()
            .get(format!("{}/api/v10/gateway/bot", fake.base_url))
            .header("authorization", "Bot test-token")
            .send()
            .await
            .expect("the fake answers")
            .json()
            .await
            .expect("JSON");
        answer["shards"].clone()
    };
    assert_eq!(get().await, 1);
    fake.set_recommended_shards(2);
    assert_eq!(get().await, 2);
}

#[tokio::test]
async fn each_shard_gets_ready_and_guild_creates_of_its_own_guilds() {
    let fake = FakeDiscord::start(World::sharded()).await;
    let mut zero = Shard::identify(&fake, Some([0, 2])).await;
    let (ready_0, created_0) = zero.ready().await;
    let mut one = Shard::identify(&fake, Some([1, 2])).await;
    let (ready_1, created_1) = one.ready().await;
    fake.wait_shards_ready(2).await;

    assert_eq!(ready_0["shard"], json!([0, 2]));
    assert_eq!(ready_1["shard"], json!([1, 2]));
    assert_eq!(
        (guild_ids(&ready_0), created_0),
        (vec![GUILD_0], vec![GUILD_0])
    );
    assert_eq!(
        (guild_ids(&ready_1), created_1),
        (vec![SHARD_1_GUILD], vec![SHARD_1_GUILD])
    );
    assert_ne!(ready_0["session_id"], ready_1["session_id"]);
    // each session counts its own sequence: READY is 1, the one GUILD_CREATE 2
    assert_eq!((zero.seq, one.seq), (2, 2));
    assert_eq!(fake.live_shards(), [(0, 2), (1, 2)]);
    let shards: Vec<Value> = fake
        .identifies()
        .iter()
        .map(|d| d["shard"].clone())
        .collect();
    assert_eq!(shards, [json!([0, 2]), json!([1, 2])]);
}

#[tokio::test]
async fn a_guild_message_goes_to_its_shard_only_and_a_dm_to_shard_0() {
    let (fake, mut zero, mut one) = two_shards().await;
    let a = fake
        .send_message(says(GENERAL_0, GUILD_0, "on shard 0"))
        .await;
    let b = fake
        .send_message(says(GENERAL_1, SHARD_1_GUILD, "on shard 1"))
        .await;
    let (dm_channel, c) = fake.send_dm(ALICE, "a DM").await;
    let d = fake
        .send_message(says(GENERAL_1, SHARD_1_GUILD, "shard 1 again"))
        .await;

    // in order on each shard: nothing of the other shard's guild comes in between
    let first = zero.expect("MESSAGE_CREATE").await;
    assert_eq!((id(&first["id"]), id(&first["guild_id"])), (a, GUILD_0));
    let dm = zero.expect("MESSAGE_CREATE").await;
    assert_eq!((id(&dm["id"]), id(&dm["channel_id"])), (c, dm_channel));
    assert!(dm.get("guild_id").is_none_or(Value::is_null), "a DM: {dm}");
    let second = one.expect("MESSAGE_CREATE").await;
    assert_eq!(
        (id(&second["id"]), second["content"].clone()),
        (b, json!("on shard 1"))
    );
    let third = one.expect("MESSAGE_CREATE").await;
    assert_eq!(id(&third["id"]), d, "shard 1 never sees the DM");

    let ids = |shard: u64| -> Vec<u64> {
        fake.shard_dispatches(shard, "MESSAGE_CREATE")
            .iter()
            .map(|m| id(&m["id"]))
            .collect()
    };
    assert_eq!(ids(0), [a, c]);
    assert_eq!(ids(1), [b, d]);
    assert_eq!(fake.dispatches("MESSAGE_CREATE").len(), 4);
}

#[tokio::test]
async fn guild_scoped_dispatches_follow_the_guild() {
    let (fake, mut zero, mut one) = two_shards().await;
    let update = |guild: u64, channel: u64, content: &str| {
        json!({
            "id": "42", "channel_id": channel.to_string(), "guild_id": guild.to_string(),
            "content": content,
        })
    };
    fake.dispatch("MESSAGE_UPDATE", update(SHARD_1_GUILD, GENERAL_1, "one"))
        .await;
    fake.dispatch("MESSAGE_UPDATE", update(GUILD_0, GENERAL_0, "zero"))
        .await;
    assert_eq!(one.expect("MESSAGE_UPDATE").await["content"], "one");
    assert_eq!(zero.expect("MESSAGE_UPDATE").await["content"], "zero");
    // a guild event names its guild by `id`
    let world = fake.world().clone();
    let guild = world.guild(SHARD_1_GUILD).expect("the second guild");
    fake.dispatch("GUILD_UPDATE", world.guild_create_json(guild))
        .await;
    fake.dispatch(
        "TYPING_START",
        json!({"channel_id": "1", "user_id": "300", "timestamp": 1}),
    )
    .await;
    assert_eq!(id(&one.expect("GUILD_UPDATE").await["id"]), SHARD_1_GUILD);
    assert_eq!(zero.expect("TYPING_START").await["user_id"], "300");
    assert!(fake.shard_dispatches(0, "GUILD_UPDATE").is_empty());
    assert!(fake.shard_dispatches(1, "TYPING_START").is_empty());
}

#[tokio::test]
async fn an_identify_without_shard_is_shard_0_of_1_with_every_guild() {
    let fake = FakeDiscord::start(World::sharded()).await;
    let mut only = Shard::identify(&fake, None).await;
    let (ready, created) = only.ready().await;
    assert_eq!(ready["shard"], json!([0, 1]));
    assert_eq!(guild_ids(&ready), [GUILD_0, SHARD_1_GUILD]);
    assert_eq!(created, [GUILD_0, SHARD_1_GUILD]);
    fake.wait_ready().await;
    assert_eq!(fake.live_shards(), [(0, 1)]);
    let b = fake
        .send_message(says(GENERAL_1, SHARD_1_GUILD, "hi"))
        .await;
    assert_eq!(id(&only.expect("MESSAGE_CREATE").await["id"]), b);
}

#[tokio::test]
async fn an_invalid_shard_is_closed_with_4010() {
    let fake = FakeDiscord::start(World::sharded()).await;
    for shard in [[2, 2], [5, 2], [0, 0]] {
        let mut conn = Shard::identify(&fake, Some(shard)).await;
        assert_eq!(conn.close_code().await, Some(4010), "shard {shard:?}");
    }
    let mut zero = Shard::identify(&fake, Some([0, 2])).await;
    zero.ready().await;
    // a count other than the live shards' count
    let mut other_count = Shard::identify(&fake, Some([1, 3])).await;
    assert_eq!(
        other_count.close_code().await,
        Some(fd::INVALID_SHARD_CLOSE_CODE)
    );
    assert_eq!(fake.live_shards(), [(0, 2)]);
    let a = fake
        .send_message(says(GENERAL_0, GUILD_0, "still here"))
        .await;
    assert_eq!(id(&zero.expect("MESSAGE_CREATE").await["id"]), a);
}

// As on Discord during a rolling deploy: the old session is not closed, both are live, and each
// gets the shard's dispatches with its own seq numbers; the other shard is untouched.
#[tokio::test]
async fn a_second_identify_for_a_live_shard_is_a_session_beside_it() {
    let (fake, mut zero, mut one) = two_shards().await;
    let first = fake.shard_dispatches(1, "READY")[0]["session_id"].clone();
    let mut again = Shard::identify(&fake, Some([1, 2])).await;
    let (ready, created) = again.ready().await;
    assert_eq!(created, [SHARD_1_GUILD]);
    assert_ne!(ready["session_id"], first);
    fake.wait_sessions_ready(3).await;
    assert_eq!(fake.live_sessions(), [(0, 2), (1, 2), (1, 2)]);
    assert_eq!(fake.live_shards(), [(0, 2), (1, 2)]);
    let b = fake
        .send_message(says(GENERAL_1, SHARD_1_GUILD, "to both"))
        .await;
    let a = fake.send_message(says(GENERAL_0, GUILD_0, "to zero")).await;
    let (old, new) = (
        one.expect("MESSAGE_CREATE").await,
        again.expect("MESSAGE_CREATE").await,
    );
    assert_eq!((id(&old["id"]), id(&new["id"])), (b, b));
    // READY 1, GUILD_CREATE 2, the message 3: on each session
    assert_eq!((one.seq, again.seq), (3, 3));
    assert_eq!(id(&zero.expect("MESSAGE_CREATE").await["id"]), a);
    // the newest session of the shard is the one `shard_dispatches` reads
    assert_eq!(
        fake.shard_dispatches(1, "READY")[0]["session_id"],
        ready["session_id"]
    );
}

#[tokio::test]
async fn resume_is_per_shard_and_replays_only_that_shards_dispatches() {
    let (fake, mut zero, one) = two_shards().await;
    let session_1 = fake.shard_dispatches(1, "READY")[0]["session_id"].clone();
    let seq_1 = one.seq;
    drop(one);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while fake.live_shards() != [(0, 2)] {
        assert!(
            tokio::time::Instant::now() < deadline,
            "shard 1 never went away"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let missed = fake
        .send_message(says(GENERAL_1, SHARD_1_GUILD, "missed"))
        .await;
    let a = fake.send_message(says(GENERAL_0, GUILD_0, "live")).await;
    assert_eq!(id(&zero.expect("MESSAGE_CREATE").await["id"]), a);

    let mut back = Shard::resume(&fake, &session_1, seq_1).await;
    assert_eq!(id(&back.expect("MESSAGE_CREATE").await["id"]), missed);
    back.expect("RESUMED").await;
    fake.wait_shards_ready(2).await;
    assert_eq!(fake.resumes(), 1);
}

// ----------------------------------------------------------------------------------------------
// The real serenity client, one shard per client as two bot processes would run them

#[derive(Debug, PartialEq)]
enum Seen {
    /// (shard, guild)
    Guild(u32, u64),
    /// (shard, message, guild)
    Message(u32, u64, Option<u64>),
    /// An event serenity could not parse.
    Unknown(String),
}

struct Handler(tokio::sync::mpsc::UnboundedSender<Seen>);

#[serenity::async_trait]
impl EventHandler for Handler {
    async fn guild_create(&self, ctx: Context, guild: Guild, _: Option<bool>) {
        let _ = self.0.send(Seen::Guild(ctx.shard_id.0, guild.id.get()));
    }

    async fn message(&self, ctx: Context, message: Message) {
        let guild = message.guild_id.map(|g| g.get());
        let _ = self
            .0
            .send(Seen::Message(ctx.shard_id.0, message.id.get(), guild));
    }
}

#[serenity::async_trait]
impl RawEventHandler for Handler {
    async fn raw_event(&self, _: Context, event: Event) {
        if let Event::Unknown(unknown) = event {
            let _ = self.0.send(Seen::Unknown(unknown.kind));
        }
    }
}

/// A serenity client on the fake; `start` runs it (e.g. one shard of a range).
struct Bot {
    rx: tokio::sync::mpsc::UnboundedReceiver<Seen>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Bot {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Bot {
    async fn start<F>(fake: &FakeDiscord, start: impl FnOnce(Client) -> F) -> Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = HttpBuilder::new("Bot test-token")
            .proxy(&fake.base_url)
            .ratelimiter_disabled(true)
            .build();
        let intents = GatewayIntents::GUILDS
            | GatewayIntents::GUILD_MESSAGES
            | GatewayIntents::DIRECT_MESSAGES
            | GatewayIntents::MESSAGE_CONTENT;
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let client = ClientBuilder::new_with_http(http, intents)
            .event_handler(Handler(tx.clone()))
            .raw_event_handler(Handler(tx))
            .await
            .expect("client");
        let task = tokio::spawn(start(client));
        Self { rx, task }
    }

    /// The next thing the client saw; panics after 20 s.
    async fn next(&mut self) -> Seen {
        let seen = tokio::time::timeout(PATIENCE, self.rx.recv())
            .await
            .expect("the client sees something within 20 s")
            .expect("the client runs");
        assert!(
            !matches!(seen, Seen::Unknown(_)),
            "serenity could not parse {seen:?}"
        );
        seen
    }
}

async fn run_shard(mut client: Client, id: u32, total: u32) {
    if let Err(e) = client.start_shard(id, total).await {
        eprintln!("shard {id} stopped: {e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_serenity_clients_each_run_a_shard_and_see_only_its_guild() {
    let fake = FakeDiscord::start(World::sharded()).await;
    let mut zero = Bot::start(&fake, |c| run_shard(c, 0, 2)).await;
    let mut one = Bot::start(&fake, |c| run_shard(c, 1, 2)).await;
    fake.wait_shards_ready(2).await;
    assert_eq!(zero.next().await, Seen::Guild(0, GUILD_0));
    assert_eq!(one.next().await, Seen::Guild(1, SHARD_1_GUILD));

    let b = fake
        .send_message(says(GENERAL_1, SHARD_1_GUILD, "one"))
        .await;
    let a = fake.send_message(says(GENERAL_0, GUILD_0, "zero")).await;
    let (_, c) = fake.send_dm(ALICE, "a DM").await;
    let d = fake
        .send_message(says(GENERAL_1, SHARD_1_GUILD, "one again"))
        .await;
    // serenity runs its handlers concurrently: the order on one client is loose
    let (mut on_zero, mut on_one) = (Vec::new(), Vec::new());
    for _ in 0..2 {
        on_zero.push(zero.next().await);
        on_one.push(one.next().await);
    }
    for seen in [
        Seen::Message(0, a, Some(GUILD_0)),
        Seen::Message(0, c, None),
    ] {
        assert!(on_zero.contains(&seen), "{seen:?} not in {on_zero:?}");
    }
    for seen in [
        Seen::Message(1, b, Some(SHARD_1_GUILD)),
        Seen::Message(1, d, Some(SHARD_1_GUILD)),
    ] {
        assert!(on_one.contains(&seen), "{seen:?} not in {on_one:?}");
    }
    // and nothing else: what shard 0 sees next is what is sent to it next
    let e = fake.send_message(says(GENERAL_0, GUILD_0, "last")).await;
    assert_eq!(zero.next().await, Seen::Message(0, e, Some(GUILD_0)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_autosharded_client_takes_the_recommended_count() {
    let fake = FakeDiscord::start(World::sharded()).await;
    fake.set_recommended_shards(2);
    let _bot = Bot::start(&fake, |mut c| async move {
        if let Err(e) = c.start_autosharded().await {
            eprintln!("client stopped: {e}");
        }
    })
    .await;
    // serenity boots one shard every 5 s
    fake.wait_shards_ready(2).await;
    assert_eq!(fake.live_shards(), [(0, 2), (1, 2)]);
}
