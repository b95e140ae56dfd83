//! Smoke tests of the fake Discord: every payload builder deserializes with serenity 0.12's own
//! model types (serenity drops a gateway event that misses a field), and the real serenity
//! client and poise framework connect to the fake, receive its events and answer through it.
// The shared fakes this binary uses (tests/support/). Public, so that what it leaves
// unused of them is not dead code.
pub mod support {
    pub mod fake_discord;
}

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use serenity::all::{
    Channel, ChannelId, ChannelType, Client, ClientBuilder, CommandDataOptionValue, Context,
    CreateAttachment, CreateCommand, CreateCommandOption, CreateEmbed, CreateInteractionResponse,
    CreateInteractionResponseFollowup, CreateInteractionResponseMessage, CreateMessage,
    EditInteractionResponse, EventHandler, GatewayIntents, GetMessages, Guild, GuildId, Http,
    HttpBuilder, Interaction, Member, Message, MessageId, PartialGuild, Permissions, Ready,
    ResumedEvent, Role, Sticker, StickerId, UserId,
};
use serenity::model::event::{Event, GatewayEvent};
use support::fake_discord::{self as fd, FakeDiscord, Incoming, Slash, World};
use tokio::sync::mpsc;

const LIMIT: Duration = Duration::from_secs(20);

fn parse<T: serde::de::DeserializeOwned>(v: Value) -> T {
    let text = v.to_string();
    let de = &mut serde_json::Deserializer::from_str(&text);
    match serde_path_to_error::deserialize(de) {
        Ok(t) => t,
        Err(e) => panic!(
            "{} does not deserialize: {} at {}\n{v:#}",
            std::any::type_name::<T>(),
            e.inner(),
            e.path()
        ),
    }
}

/// A gateway frame as serenity's shard parses it.
fn dispatch(t: &str, d: Value) -> Event {
    match parse::<GatewayEvent>(fd::dispatch_frame(7, t, d)) {
        GatewayEvent::Dispatch(7, event) => event,
        other => panic!("not a dispatch: {other:?}"),
    }
}

fn world() -> World {
    World::simple()
}

// ----------------------------------------------------------------------------------------------
// Payloads against serenity's types

#[test]
fn gateway_frames_parse() {
    assert!(matches!(
        parse::<GatewayEvent>(fd::hello_frame()),
        GatewayEvent::Hello(41_250)
    ));
    assert!(matches!(
        parse::<GatewayEvent>(fd::heartbeat_ack_frame()),
        GatewayEvent::HeartbeatAck
    ));
    assert!(matches!(
        parse::<GatewayEvent>(fd::invalid_session_frame(false)),
        GatewayEvent::InvalidateSession(false)
    ));
    assert!(matches!(
        parse::<GatewayEvent>(fd::reconnect_frame()),
        GatewayEvent::Reconnect
    ));
    assert!(matches!(
        dispatch("RESUMED", fd::resumed_json()),
        Event::Resumed(_)
    ));
    let gateway: serenity::model::gateway::Gateway = parse(fd::gateway_json("ws://x/gateway"));
    assert_eq!(gateway.url, "ws://x/gateway");
    let bot: serenity::model::gateway::BotGateway =
        parse(fd::gateway_bot_json("ws://x/gateway", 1));
    assert_eq!(bot.shards, 1);
    assert_eq!(bot.session_start_limit.max_concurrency, 1);
}

#[test]
fn users_and_members_parse() {
    let w = world();
    let user: serenity::model::user::User = parse(w.user(300));
    assert_eq!(
        (user.id.get(), user.name.as_str(), user.bot),
        (300, "alice", false)
    );
    assert_eq!(user.discriminator, None);
    let me: serenity::model::user::CurrentUser = parse(w.current_user_json());
    assert_eq!((me.id.get(), me.name.as_str(), me.bot), (900, "Aria", true));

    let member: Member = parse(w.member_json(100, 302));
    assert_eq!(member.user.name, "mod");
    assert_eq!(
        member.roles.iter().map(|r| r.get()).collect::<Vec<_>>(),
        vec![w.moderator_role(100), w.manager_role(100)]
    );
    let bot: Member = parse(w.member_json(100, 900));
    assert_eq!(
        bot.roles.iter().map(|r| r.get()).collect::<Vec<_>>(),
        vec![w.bot_role(100)]
    );
    let partial: serenity::model::guild::PartialMember = parse(w.partial_member_json(100, 300));
    assert!(partial.user.is_none());
    assert!(partial.roles.is_empty());
}

#[test]
fn roles_channels_stickers_parse() {
    let w = world();
    let roles: Vec<Role> = parse(json!(w.roles_json(100)));
    assert_eq!(roles.len(), 4);
    let everyone = roles.iter().find(|r| r.id.get() == 100).unwrap();
    assert!(everyone.permissions.view_channel() && everyone.permissions.send_messages());
    assert!(!everyone.permissions.manage_messages());
    let moderator = roles
        .iter()
        .find(|r| r.id.get() == w.moderator_role(100))
        .unwrap();
    assert_eq!(moderator.permissions, Permissions::MANAGE_MESSAGES);
    let bot_role = roles
        .iter()
        .find(|r| r.id.get() == w.bot_role(100))
        .unwrap();
    assert!(bot_role.managed);
    assert_eq!(bot_role.tags.bot_id.map(|b| b.get()), Some(900));

    let guild = w.guild(100).unwrap();
    for channel in &guild.channels {
        let parsed: serenity::model::channel::GuildChannel = parse(w.channel_json(guild, channel));
        assert_eq!(parsed.name, channel.name);
        assert_eq!(parsed.kind, ChannelType::Text);
        assert_eq!(parsed.guild_id.get(), 100);
        assert_eq!(
            parsed.permission_overwrites.len(),
            if channel.everyone_can_view { 0 } else { 2 }
        );
        let as_enum: Channel = parse(w.channel_json(guild, channel));
        assert!(matches!(as_enum, Channel::Guild(_)));
    }
    let dm: Channel = parse(w.dm_channel_json(5000, 300));
    match dm {
        Channel::Private(p) => assert_eq!(p.recipient.id.get(), 300),
        other => panic!("not private: {other:?}"),
    }

    let sticker: Sticker = parse(w.sticker_json(100, 700, "wave"));
    assert_eq!((sticker.id.get(), sticker.name.as_str()), (700, "wave"));
    assert_eq!(sticker.guild_id.map(|g| g.get()), Some(100));
    assert!(sticker.available);
}

#[test]
fn permissions_follow_discord() {
    let w = world();
    let can_view = |user, channel| w.permissions_in(user, channel) & fd::VIEW_CHANNEL != 0;
    assert!(can_view(300, 200));
    assert!(
        !can_view(300, 201),
        "alice must not see the private channel"
    );
    assert!(!can_view(302, 201), "manage_messages does not grant view");
    assert!(can_view(900, 201), "the bot sees the private channel");
    assert!(w.permissions_in(900, 201) & fd::SEND_MESSAGES != 0);
    assert!(can_view(500, 201), "the owner sees everything");
    assert_eq!(w.permissions_in(500, 200), fd::ALL_PERMISSIONS);
    assert!(w.permissions_in(302, 200) & fd::MANAGE_MESSAGES != 0);
    assert!(w.permissions_in(302, 200) & fd::MANAGE_GUILD != 0);
    assert!(w.permissions_in(300, 200) & fd::MANAGE_MESSAGES == 0);

    // serenity computes the same from the GUILD_CREATE payload
    let guild: Guild = match dispatch("GUILD_CREATE", w.guild_create_json(w.guild(100).unwrap())) {
        Event::GuildCreate(e) => e.guild,
        other => panic!("{other:?}"),
    };
    for (user, channel) in [
        (300, 200),
        (300, 201),
        (302, 201),
        (900, 201),
        (500, 201),
        (302, 202),
    ] {
        let member = &guild.members[&UserId::new(user)];
        let channel = &guild.channels[&ChannelId::new(channel)];
        let serenity_perms = guild.user_permissions_in(channel, member);
        assert_eq!(
            serenity_perms.bits(),
            w.permissions_in(user, channel.id.get()) & Permissions::all().bits(),
            "user {user} in {}",
            channel.name
        );
    }
}

#[test]
fn guild_create_and_ready_parse() {
    let w = world();
    let g = w.guild(100).unwrap();
    let guild: Guild = match dispatch("GUILD_CREATE", w.guild_create_json(g)) {
        Event::GuildCreate(e) => e.guild,
        other => panic!("{other:?}"),
    };
    // serenity skips channels that fail to parse, so count them
    assert_eq!(guild.channels.len(), 3);
    assert_eq!(guild.members.len(), 5, "four members and the bot");
    assert_eq!(guild.roles.len(), 4);
    assert_eq!(guild.stickers.len(), 2);
    assert_eq!(guild.preferred_locale, "en-US");
    assert_eq!(guild.owner_id.get(), 500);
    assert_eq!(guild.member_count, 5);
    assert!(guild.channels.values().all(|c| c.guild_id.get() == 100));
    // the plain Guild type too
    let plain: Guild = parse(w.guild_create_json(g));
    assert_eq!(plain.name, "Test Guild");

    let partial: PartialGuild = parse(w.guild_json(g));
    assert_eq!(partial.roles.len(), 4);
    assert_eq!(partial.stickers.len(), 2);

    let ready = match dispatch("READY", w.ready_json("s1", "ws://x/gateway")) {
        Event::Ready(r) => r.ready,
        other => panic!("{other:?}"),
    };
    assert_eq!(ready.user.id.get(), 900);
    assert_eq!(ready.application.id.get(), 901);
    assert_eq!(ready.guilds.len(), 1);
    assert!(ready.guilds[0].unavailable);
    assert_eq!(ready.session_id, "s1");
    let _: Ready = parse(w.ready_json("s1", "ws://x/gateway"));

    let app: serenity::model::application::CurrentApplicationInfo =
        parse(w.application_info_json());
    assert_eq!(app.id.get(), 901);
    assert_eq!(app.owner.map(|o| o.id.get()), Some(500));
}

#[test]
fn messages_parse() {
    let w = world();
    let base: Message = parse(w.message_json(1, 200, Some(100), w.user(300), "hi"));
    assert_eq!(base.content, "hi");

    let mut incoming = Incoming::new(200, Some(100), 300, "alice", "hello <@900>");
    incoming.mentions = vec![(900, "Aria".into())];
    let first = w.incoming_json(&incoming, 10, None);
    let message = match dispatch("MESSAGE_CREATE", first.clone()) {
        Event::MessageCreate(e) => e.message,
        other => panic!("{other:?}"),
    };
    assert_eq!(message.id.get(), 10);
    assert_eq!(message.content, "hello <@900>");
    assert_eq!(message.author.id.get(), 300);
    assert_eq!(message.guild_id.map(|g| g.get()), Some(100));
    assert!(message.member.is_some());
    assert_eq!(message.mentions.len(), 1);
    assert!(message.mentions[0].member.is_some());

    let mut reply = Incoming::new(200, Some(100), 301, "bob", "a reply");
    reply.reply_to = Some(10);
    let message: Message = parse(w.incoming_json(&reply, 11, Some(first)));
    assert_eq!(
        message.kind,
        serenity::model::channel::MessageType::InlineReply
    );
    assert_eq!(
        message.referenced_message.as_ref().map(|m| m.id.get()),
        Some(10)
    );
    assert_eq!(
        message
            .message_reference
            .as_ref()
            .and_then(|r| r.message_id)
            .map(|m| m.get()),
        Some(10)
    );

    let dm = Incoming::new(5000, None, 300, "alice", "psst");
    let message = match dispatch("MESSAGE_CREATE", w.incoming_json(&dm, 12, None)) {
        Event::MessageCreate(e) => e.message,
        other => panic!("{other:?}"),
    };
    assert_eq!(message.guild_id, None);
    assert!(message.member.is_none());

    let mut hook = Incoming::new(200, Some(100), 777, "hook", "from a webhook");
    hook.webhook_id = Some(777);
    let message: Message = parse(w.incoming_json(&hook, 13, None));
    assert_eq!(message.webhook_id.map(|h| h.get()), Some(777));
    assert!(message.author.bot);

    let mut bot = Incoming::new(200, Some(100), 950, "otherbot", "beep");
    bot.author_is_bot = true;
    let message: Message = parse(w.incoming_json(&bot, 14, None));
    assert!(message.author.bot);

    // the bot's own message as MESSAGE_CREATE and MESSAGE_UPDATE carry it
    let own = w.as_dispatched(
        w.message_json(15, 200, Some(100), w.user(900), "mine"),
        Some(100),
    );
    let message = match dispatch("MESSAGE_CREATE", own.clone()) {
        Event::MessageCreate(e) => e.message,
        other => panic!("{other:?}"),
    };
    assert_eq!(message.author.id.get(), 900);
    assert!(message.member.is_some());
    match dispatch("MESSAGE_UPDATE", own) {
        Event::MessageUpdate(e) => assert_eq!(e.content.as_deref(), Some("mine")),
        other => panic!("{other:?}"),
    }
    let own_dm = w.as_dispatched(w.message_json(16, 5000, None, w.user(900), "dm"), None);
    assert!(matches!(
        dispatch("MESSAGE_CREATE", own_dm),
        Event::MessageCreate(_)
    ));
}

#[test]
fn slash_interactions_parse() {
    let w = world();
    let mut slash = Slash::new(
        "persona",
        json!([{"name": "state", "type": 3, "value": "on"}, {"name": "who", "type": 6, "value": "301"}]),
        Some(100),
        201,
        302,
        "mod",
    );
    slash.permissions = w.permissions_in(302, 201);
    slash.locale = "ja".into();
    let command = match dispatch("INTERACTION_CREATE", w.slash_json(&slash, 20, "tok", 30)) {
        Event::InteractionCreate(e) => match e.interaction {
            Interaction::Command(c) => c,
            other => panic!("not a command: {other:?}"),
        },
        other => panic!("{other:?}"),
    };
    assert_eq!(command.id.get(), 20);
    assert_eq!(command.token, "tok");
    assert_eq!(command.data.name, "persona");
    assert_eq!(command.data.id.get(), 30);
    assert_eq!(command.data.options.len(), 2);
    assert_eq!(command.data.options[0].name, "state");
    assert_eq!(
        command.data.options[0].value,
        CommandDataOptionValue::String("on".into())
    );
    assert_eq!(
        command.data.options[1].value,
        CommandDataOptionValue::User(UserId::new(301))
    );
    assert_eq!(command.data.resolved.users[&UserId::new(301)].name, "bob");
    assert_eq!(command.guild_id.map(|g| g.get()), Some(100));
    assert_eq!(command.channel_id.get(), 201);
    assert_eq!(command.user.id.get(), 302, "user is filled from the member");
    let member = command.member.as_ref().expect("member");
    assert_eq!(member.guild_id.get(), 100);
    let perms = member.permissions.expect("member permissions");
    assert!(perms.manage_messages() && perms.manage_guild());
    assert!(!perms.view_channel(), "mod cannot view the private channel");
    let app = command.app_permissions.expect("app permissions");
    assert!(app.view_channel() && app.send_messages());
    assert_eq!(command.locale, "ja");
    assert_eq!(command.guild_locale.as_deref(), Some("en-US"));
    assert_eq!(command.version, 1);
    assert!(command.channel.is_some());

    let dm = Slash::new("ping", json!([]), None, 5000, 300, "alice");
    let interaction: Interaction = parse(w.slash_json(&dm, 21, "tok2", 31));
    let Interaction::Command(command) = interaction else {
        panic!("not a command");
    };
    assert_eq!(command.guild_id, None);
    assert!(command.member.is_none());
    assert_eq!(command.user.id.get(), 300);
    assert!(command.data.options.is_empty());
}

#[test]
fn commands_echo_parses() {
    let w = world();
    let create = CreateCommand::new("persona")
        .description("Switch the persona")
        .default_member_permissions(Permissions::MANAGE_GUILD)
        .add_option(
            CreateCommandOption::new(serenity::all::CommandOptionType::String, "state", "on/off")
                .required(true),
        );
    let body = serde_json::to_value(&create).unwrap();
    let command: serenity::model::application::Command = parse(w.command_json(&body, 42, None));
    assert_eq!(command.id.get(), 42);
    assert_eq!(command.name, "persona");
    assert_eq!(command.application_id.get(), 901);
    assert_eq!(command.options.len(), 1);
    assert_eq!(
        command.default_member_permissions,
        Some(Permissions::MANAGE_GUILD)
    );
    let guild: serenity::model::application::Command = parse(w.command_json(&body, 43, Some(100)));
    assert_eq!(guild.guild_id.map(|g| g.get()), Some(100));
    let context_menu = serde_json::to_value(
        CreateCommand::new("Summarise").kind(serenity::all::CommandType::Message),
    )
    .unwrap();
    let _: serenity::model::application::Command = parse(w.command_json(&context_menu, 44, None));
}

/// Why the checks above match the exact `Event` variant: an event serenity cannot parse does not
/// fail, it becomes `Event::Unknown` (an untagged catch-all) and is dropped without a log line.
#[test]
fn serenity_turns_an_incomplete_event_into_unknown() {
    let broken = json!({"id": "1", "channel_id": "200", "content": "no author"});
    match parse::<GatewayEvent>(fd::dispatch_frame(1, "MESSAGE_CREATE", broken)) {
        GatewayEvent::Dispatch(1, Event::Unknown(u)) => assert_eq!(u.kind, "MESSAGE_CREATE"),
        other => panic!("{other:?}"),
    }
}

// ----------------------------------------------------------------------------------------------
// The real serenity client against the fake

#[derive(Debug)]
enum Seen {
    Ready(Box<Ready>),
    CacheReady(Vec<GuildId>),
    GuildCreate(Box<Guild>),
    Message(Box<Message>),
    Interaction(Box<Interaction>),
    Resumed,
}

struct Handler {
    tx: mpsc::UnboundedSender<(Context, Seen)>,
}

#[serenity::async_trait]
impl EventHandler for Handler {
    async fn ready(&self, ctx: Context, ready: Ready) {
        let _ = self.tx.send((ctx, Seen::Ready(Box::new(ready))));
    }

    async fn cache_ready(&self, ctx: Context, guilds: Vec<GuildId>) {
        let _ = self.tx.send((ctx, Seen::CacheReady(guilds)));
    }

    async fn guild_create(&self, ctx: Context, guild: Guild, _is_new: Option<bool>) {
        let _ = self.tx.send((ctx, Seen::GuildCreate(Box::new(guild))));
    }

    async fn message(&self, ctx: Context, message: Message) {
        let _ = self.tx.send((ctx, Seen::Message(Box::new(message))));
    }

    async fn interaction_create(&self, ctx: Context, interaction: Interaction) {
        let _ = self
            .tx
            .send((ctx, Seen::Interaction(Box::new(interaction))));
    }

    async fn resume(&self, ctx: Context, _: ResumedEvent) {
        let _ = self.tx.send((ctx, Seen::Resumed));
    }
}

/// serenity's WARN and ERROR log lines (it only logs, for example, an event it could not parse).
static SERENITY_WARNINGS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

struct WarningLayer;

struct Text<'a>(&'a mut String);

impl tracing::field::Visit for Text<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        use std::fmt::Write;
        let _ = write!(self.0, "{}={:?} ", field.name(), value);
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for WarningLayer {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let meta = event.metadata();
        if *meta.level() <= tracing::Level::WARN && meta.target().starts_with("serenity") {
            let mut text = format!("{} {}: ", meta.level(), meta.target());
            event.record(&mut Text(&mut text));
            SERENITY_WARNINGS.lock().unwrap().push(text);
        }
    }
}

fn capture_serenity_warnings() {
    use tracing_subscriber::layer::SubscriberExt;
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = tracing::subscriber::set_global_default(
            tracing_subscriber::registry().with(WarningLayer),
        );
    });
}

/// Fails on any serenity warning so far (all tests share the list; none should warn).
fn assert_serenity_did_not_warn() {
    let warnings = SERENITY_WARNINGS.lock().unwrap().clone();
    assert!(warnings.is_empty(), "serenity warned: {warnings:#?}");
}

/// Records the kind of every event serenity could not parse (`Event::Unknown`).
struct UnknownEvents(Arc<std::sync::Mutex<Vec<String>>>);

#[serenity::async_trait]
impl serenity::all::RawEventHandler for UnknownEvents {
    async fn raw_event(&self, _ctx: Context, event: Event) {
        if let Event::Unknown(u) = event {
            self.0
                .lock()
                .unwrap()
                .push(format!("{}: {}", u.kind, u.value));
        }
    }
}

fn install_crypto() {
    capture_serenity_warnings();
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn http_for(fake: &FakeDiscord) -> Http {
    install_crypto();
    HttpBuilder::new("Bot test-token")
        .proxy(&fake.base_url)
        .ratelimiter_disabled(true)
        .build()
}

fn intents() -> GatewayIntents {
    GatewayIntents::GUILDS
        | GatewayIntents::GUILD_MESSAGES
        | GatewayIntents::DIRECT_MESSAGES
        | GatewayIntents::MESSAGE_CONTENT
}

struct Running {
    rx: mpsc::UnboundedReceiver<(Context, Seen)>,
    /// Events serenity could not parse.
    unknown: Arc<std::sync::Mutex<Vec<String>>>,
    /// Events received but not picked yet (handlers run concurrently, so order is loose).
    backlog: Vec<(Context, Seen)>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Running {
    /// The first event (received or in the backlog) that `pick` accepts; panics after 20 s.
    async fn next<T>(
        &mut self,
        what: &str,
        mut pick: impl FnMut(&Context, &Seen) -> Option<T>,
    ) -> T {
        if let Some(at) = self.backlog.iter().position(|(c, s)| pick(c, s).is_some()) {
            let (ctx, seen) = self.backlog.remove(at);
            return pick(&ctx, &seen).unwrap();
        }
        let deadline = tokio::time::Instant::now() + LIMIT;
        loop {
            let got = tokio::time::timeout_at(deadline, self.rx.recv()).await;
            match got {
                Ok(Some((ctx, seen))) => {
                    if let Some(t) = pick(&ctx, &seen) {
                        return t;
                    }
                    self.backlog.push((ctx, seen));
                }
                Ok(None) => panic!("the client stopped while waiting for {what}"),
                Err(_) => panic!(
                    "timed out waiting for {what}; backlog: {:?}",
                    self.backlog.iter().map(|(_, s)| s).collect::<Vec<_>>()
                ),
            }
        }
    }
}

async fn start_client(fake: &FakeDiscord) -> Running {
    let (tx, rx) = mpsc::unbounded_channel();
    let unknown = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut client: Client = ClientBuilder::new_with_http(http_for(fake), intents())
        .event_handler(Handler { tx })
        .raw_event_handler(UnknownEvents(unknown.clone()))
        .await
        .expect("client");
    let task = tokio::spawn(async move {
        if let Err(e) = client.start().await {
            eprintln!("client stopped: {e}");
        }
    });
    Running {
        rx,
        unknown,
        backlog: Vec::new(),
        task,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serenity_client_end_to_end() {
    tokio::time::timeout(Duration::from_secs(90), end_to_end())
        .await
        .expect("the end-to-end test took too long");
}

async fn end_to_end() {
    let fake = FakeDiscord::start(World::simple()).await;
    let mut client = start_client(&fake).await;

    let (ctx, ready) = client
        .next("ready", |ctx, s| match s {
            Seen::Ready(r) => Some((ctx.clone(), r.clone())),
            _ => None,
        })
        .await;
    assert_eq!(ready.user.id.get(), 900);
    assert_eq!(ready.user.name, "Aria");
    let guild = client
        .next("guild_create", |_, s| match s {
            Seen::GuildCreate(g) => Some(g.clone()),
            _ => None,
        })
        .await;
    assert_eq!(guild.id.get(), 100);
    assert_eq!(guild.channels.len(), 3);
    assert_eq!(guild.members.len(), 5);
    assert_eq!(guild.stickers.len(), 2);
    let guilds = client
        .next("cache_ready", |_, s| match s {
            Seen::CacheReady(g) => Some(g.clone()),
            _ => None,
        })
        .await;
    assert_eq!(guilds, vec![GuildId::new(100)]);
    fake.wait_ready().await;
    assert!(fake.gateway_used());
    assert_eq!(ctx.cache.current_user().id.get(), 900);
    {
        let cached = ctx.cache.guild(GuildId::new(100)).expect("guild in cache");
        assert_eq!(cached.channels.len(), 3);
        assert_eq!(cached.name, "Test Guild");
    }
    let identify = &fake.identifies()[0];
    assert_eq!(identify["token"], "Bot test-token");
    assert_eq!(identify["intents"], json!(intents().bits()));

    // a guild message
    let mut incoming = Incoming::new(200, Some(100), 300, "alice", "hello <@900>");
    incoming.mentions = vec![(900, "Aria".into())];
    let id = fake.send_message(incoming).await;
    let message = client
        .next("message", |_, s| match s {
            Seen::Message(m) => Some(m.clone()),
            _ => None,
        })
        .await;
    assert_eq!(message.id.get(), id);
    assert_eq!(message.content, "hello <@900>");
    assert_eq!(message.author.id.get(), 300);
    assert_eq!(message.author.name, "alice");
    assert_eq!(message.guild_id, Some(GuildId::new(100)));
    assert_eq!(message.channel_id.get(), 200);
    assert!(message.mentions_user_id(UserId::new(900)));

    // a reply to it
    let mut reply = Incoming::new(200, Some(100), 301, "bob", "me too");
    reply.reply_to = Some(id);
    fake.send_message(reply).await;
    let message = client
        .next("reply", |_, s| match s {
            Seen::Message(m) => Some(m.clone()),
            _ => None,
        })
        .await;
    assert_eq!(
        message
            .referenced_message
            .as_ref()
            .map(|m| m.content.as_str()),
        Some("hello <@900>")
    );

    // a DM
    let (dm_channel, dm_id) = fake.send_dm(301, "psst").await;
    let message = client
        .next("dm", |_, s| match s {
            Seen::Message(m) => Some(m.clone()),
            _ => None,
        })
        .await;
    assert_eq!(message.id.get(), dm_id);
    assert_eq!(message.channel_id.get(), dm_channel);
    assert_eq!(message.guild_id, None);
    assert_eq!(message.author.name, "bob");
    assert_eq!(
        fake.send_dm(301, "again").await.0,
        dm_channel,
        "DM channels are stable"
    );

    // REST through the context (serenity checks permissions from its cache first)
    let sent = ChannelId::new(201)
        .say(&ctx, "a private thought")
        .await
        .expect("send to the private channel");
    assert_eq!(sent.author.id.get(), 900);
    assert_eq!(fake.messages_in(201).len(), 1);
    assert_eq!(fake.messages_in(201)[0]["content"], "a private thought");

    let original = ChannelId::new(200)
        .message(&ctx, MessageId::new(id))
        .await
        .expect("get one message");
    let replied = original.reply(&ctx, "pong").await.expect("reply");
    assert_eq!(
        replied.kind,
        serenity::model::channel::MessageType::InlineReply
    );
    assert_eq!(
        replied.referenced_message.as_ref().map(|m| m.id.get()),
        Some(id)
    );

    let rich = ChannelId::new(200)
        .send_message(
            &ctx,
            CreateMessage::new()
                .content("with extras")
                .embed(
                    CreateEmbed::new()
                        .title("t")
                        .description("d")
                        .field("f", "v", true),
                )
                .sticker_id(StickerId::new(701))
                .add_file(CreateAttachment::bytes(
                    b"not really a png".to_vec(),
                    "a.png",
                )),
        )
        .await
        .expect("rich message");
    assert_eq!(rich.embeds.len(), 1);
    assert_eq!(rich.embeds[0].title.as_deref(), Some("t"));
    assert_eq!(rich.sticker_items.len(), 1);
    assert_eq!(rich.sticker_items[0].name, "heart");
    assert_eq!(rich.attachments.len(), 1);
    assert_eq!(rich.attachments[0].filename, "a.png");
    let posted = fake
        .requests()
        .into_iter()
        .rfind(|r| r.path == "/channels/200/messages")
        .unwrap();
    assert_eq!(posted.files.len(), 1);
    assert_eq!(posted.body["content"], "with extras");

    let history = ChannelId::new(200)
        .messages(&ctx, GetMessages::new().limit(3))
        .await
        .expect("history");
    assert_eq!(history.len(), 3);
    assert_eq!(history[0].id, rich.id, "newest first");
    let older = ChannelId::new(200)
        .messages(&ctx, GetMessages::new().before(replied.id).limit(10))
        .await
        .expect("older history");
    assert_eq!(
        older.iter().map(|m| m.id.get()).collect::<Vec<_>>(),
        fake.history(200)
            .iter()
            .rev()
            .map(|m| m["id"].as_str().unwrap().parse::<u64>().unwrap())
            .filter(|m| *m < replied.id.get())
            .collect::<Vec<_>>()
    );

    ChannelId::new(200)
        .broadcast_typing(&ctx.http)
        .await
        .expect("typing");
    ChannelId::new(200)
        .broadcast_typing(&ctx.http)
        .await
        .expect("typing");
    assert_eq!(fake.typing_count(200), 2);

    match ChannelId::new(201)
        .to_channel(&ctx.http)
        .await
        .expect("channel")
    {
        Channel::Guild(c) => assert_eq!(c.name, "thoughts"),
        other => panic!("{other:?}"),
    }
    match ChannelId::new(dm_channel)
        .to_channel(&ctx.http)
        .await
        .expect("dm channel")
    {
        Channel::Private(c) => assert_eq!(c.recipient.id.get(), 301),
        other => panic!("{other:?}"),
    }
    let dm = UserId::new(300)
        .create_dm_channel(&ctx.http)
        .await
        .expect("create DM");
    assert_eq!(dm.id.get(), fake.dm_channel(300));
    let member = GuildId::new(100)
        .member(&ctx.http, UserId::new(302))
        .await
        .expect("member");
    assert_eq!(member.user.name, "mod");
    assert_eq!(
        GuildId::new(100)
            .roles(&ctx.http)
            .await
            .expect("roles")
            .len(),
        4
    );
    assert_eq!(
        GuildId::new(100)
            .channels(&ctx.http)
            .await
            .expect("channels")
            .len(),
        3
    );
    let stickers = GuildId::new(100)
        .stickers(&ctx.http)
        .await
        .expect("stickers");
    assert_eq!(stickers.len(), 2);
    let partial = GuildId::new(100)
        .to_partial_guild(&ctx.http)
        .await
        .expect("guild");
    assert_eq!(partial.name, "Test Guild");
    assert_eq!(ctx.http.get_current_user().await.expect("me").id.get(), 900);
    let app = ctx
        .http
        .get_current_application_info()
        .await
        .expect("app info");
    assert_eq!(app.owner.map(|o| o.id.get()), Some(500));
    let user = UserId::new(301).to_user(&ctx.http).await.expect("user");
    assert_eq!(user.name, "bob");

    // a slash command
    let interaction_id = fake
        .slash(Slash {
            permissions: fake.world().permissions_in(302, 202),
            ..Slash::new(
                "persona",
                json!([{"name": "state", "type": 3, "value": "on"}]),
                Some(100),
                202,
                302,
                "mod",
            )
        })
        .await;
    let (ctx, command) = client
        .next("interaction", |ctx, s| match s {
            Seen::Interaction(i) => match &**i {
                Interaction::Command(c) => Some((ctx.clone(), c.clone())),
                other => panic!("not a command: {other:?}"),
            },
            _ => None,
        })
        .await;
    assert_eq!(command.id.get(), interaction_id);
    assert_eq!(command.data.name, "persona");
    assert_eq!(command.data.options[0].name, "state");
    assert_eq!(
        command.data.options[0].value,
        CommandDataOptionValue::String("on".into())
    );
    assert!(
        command
            .member
            .as_ref()
            .unwrap()
            .permissions
            .unwrap()
            .manage_guild()
    );
    command
        .create_response(
            &ctx.http,
            CreateInteractionResponse::Message(
                CreateInteractionResponseMessage::new()
                    .content("hi")
                    .ephemeral(true),
            ),
        )
        .await
        .expect("respond");
    let responses = fake.interaction_responses();
    assert_eq!(responses.len(), 1);
    assert_eq!(responses[0].0, interaction_id);
    assert_eq!(responses[0].1["type"], 4);
    assert_eq!(responses[0].1["data"]["content"], "hi");
    assert_eq!(responses[0].1["data"]["flags"], 64);
    // a second response is refused, as on Discord
    let again = command
        .create_response(
            &ctx.http,
            CreateInteractionResponse::Message(
                CreateInteractionResponseMessage::new().content("x"),
            ),
        )
        .await;
    assert!(again.is_err());
    let shown = command.get_response(&ctx.http).await.expect("original");
    assert_eq!(shown.content, "hi");
    let edited = command
        .edit_response(
            &ctx.http,
            EditInteractionResponse::new().content("hi again"),
        )
        .await
        .expect("edit");
    assert_eq!(edited.content, "hi again");
    let followup = command
        .create_followup(
            &ctx.http,
            CreateInteractionResponseFollowup::new()
                .content("more")
                .ephemeral(true),
        )
        .await
        .expect("follow-up");
    assert_eq!(followup.content, "more");
    let (original, followups) = fake.interaction_messages(interaction_id);
    assert_eq!(original.unwrap()["content"], "hi again");
    assert_eq!(followups.len(), 1);

    // reconnect and resume
    fake.request_reconnect();
    client
        .next("resumed", |_, s| matches!(s, Seen::Resumed).then_some(()))
        .await;
    assert_eq!(fake.resumes(), 1);
    fake.send_message(Incoming::new(200, Some(100), 300, "alice", "after resume"))
        .await;
    let message = client
        .next("message after resume", |_, s| match s {
            Seen::Message(m) if m.content == "after resume" => Some(m.clone()),
            _ => None,
        })
        .await;
    assert_eq!(message.content, "after resume");

    assert!(fake.gateway_used());
    assert_serenity_did_not_warn();
    let unknown = client.unknown.lock().unwrap().clone();
    assert!(unknown.is_empty(), "serenity could not parse: {unknown:#?}");
    assert!(
        fake.unexpected().is_empty(),
        "unexpected requests: {:?}",
        fake.unexpected()
    );
    assert!(fake.requests().iter().all(|r| {
        r.path.starts_with("/interactions/")
            || r.path.starts_with("/webhooks/")
            || r.authorization.as_deref() == Some("Bot test-token")
    }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_failures_reach_serenity() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let fake = FakeDiscord::start(World::simple()).await;
        let http = Arc::new(http_for(&fake));
        let status_and_code = |e: serenity::Error| match e {
            serenity::Error::Http(serenity::http::HttpError::UnsuccessfulRequest(r)) => {
                (r.status_code.as_u16(), r.error.code, r.error.message)
            }
            other => panic!("unexpected error {other:?}"),
        };

        fake.rate_limit_next(200, 2, 1.5);
        for _ in 0..2 {
            let e = ChannelId::new(200).say(&http, "x").await.unwrap_err();
            // Discord's 429 body has no `code`, so serenity (its rate limiter off) cannot decode
            // it and loses `retry_after`: why the bot reads its 429s itself
            let (status, code, message) = status_and_code(e);
            assert_eq!((status, code), (429, -1), "{message}");
            assert!(message.contains("missing field `code`"), "{message}");
        }
        let rate_limited = fake
            .requests()
            .into_iter()
            .filter(|r| r.path == "/channels/200/messages")
            .count();
        assert_eq!(rate_limited, 2);
        ChannelId::new(200)
            .say(&http, "x")
            .await
            .expect("the third one goes through");
        assert_eq!(fake.messages_in(200).len(), 1);

        fake.fail_next(
            200,
            500,
            json!({"message": "500: Internal Server Error", "code": 0}),
        );
        let e = ChannelId::new(200).say(&http, "y").await.unwrap_err();
        assert_eq!(status_and_code(e).0, 500);
        fake.fail_next(
            200,
            400,
            json!({"message": "Invalid Form Body", "code": 50035}),
        );
        let e = ChannelId::new(200).say(&http, "y").await.unwrap_err();
        assert_eq!(status_and_code(e), (400, 50035, "Invalid Form Body".into()));

        // Discord's own checks, in a channel of their own: a sixth message create in 200 within
        // 5 s would meet the channel's rate limit
        let e = ChannelId::new(201)
            .send_message(&http, CreateMessage::new().sticker_id(StickerId::new(999)))
            .await
            .unwrap_err();
        assert_eq!(status_and_code(e).1, 50035);
        let long = "x".repeat(2001);
        let e = http
            .send_message(ChannelId::new(201), Vec::new(), &json!({"content": long}))
            .await
            .unwrap_err();
        match e {
            serenity::Error::Http(serenity::http::HttpError::UnsuccessfulRequest(r)) => {
                assert_eq!(r.error.code, 50035);
                assert_eq!(r.error.errors.len(), 1);
                assert_eq!(r.error.errors[0].path, "content");
            }
            other => panic!("{other:?}"),
        }
        let e = http
            .send_message(ChannelId::new(201), Vec::new(), &json!({"content": ""}))
            .await
            .unwrap_err();
        assert_eq!(status_and_code(e).1, 50006);
        assert_eq!(
            fake.messages_in(200).len(),
            1,
            "failures are not recorded as sent"
        );
        assert!(fake.messages_in(201).is_empty());

        // the 429's headers
        fake.rate_limit_next(202, 1, 0.25);
        let client = reqwest_like_post(&fake.base_url, "/api/v10/channels/202/messages").await;
        assert_eq!(client.0, 429);
        assert_eq!(
            client.1.get("x-ratelimit-scope").map(String::as_str),
            Some("user")
        );
        assert_eq!(client.1.get("retry-after").map(String::as_str), Some("1"));
        assert_eq!(
            client.1.get("x-ratelimit-reset-after").map(String::as_str),
            Some("0.250")
        );
        assert_eq!(client.2["retry_after"], 0.25);
        assert_eq!(client.2["global"], false);

        // unknown routes are recorded
        let e = http
            .get_guild_webhooks(GuildId::new(100))
            .await
            .unwrap_err();
        assert_eq!(status_and_code(e).0, 404);
        let unexpected = fake.unexpected();
        assert_eq!(unexpected.len(), 1);
        assert_eq!(unexpected[0].method, "GET");
        assert_eq!(unexpected[0].path, "/guilds/100/webhooks");
    })
    .await
    .expect("took too long");
}

/// A bare HTTP/1.1 POST (so the test can read raw headers): status, lower-case headers, body.
async fn reqwest_like_post(
    base_url: &str,
    path: &str,
) -> (u16, std::collections::HashMap<String, String>, Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base_url.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let body = r#"{"content":"x"}"#;
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bot test-token\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (
        status,
        headers,
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

// ----------------------------------------------------------------------------------------------
// poise

type PoiseError = Box<dyn std::error::Error + Send + Sync>;

/// Replies "pong", ephemerally.
#[poise::command(slash_command)]
async fn ping(ctx: poise::Context<'_, (), PoiseError>) -> Result<(), PoiseError> {
    ctx.send(
        poise::CreateReply::default()
            .content("pong")
            .ephemeral(true),
    )
    .await?;
    Ok(())
}

#[derive(Debug, poise::ChoiceParameter)]
enum Mode {
    On,
    Off,
}

/// Replies with the chosen mode (poise sends a choice parameter as an INTEGER, its index).
#[poise::command(slash_command)]
async fn mode(ctx: poise::Context<'_, (), PoiseError>, state: Mode) -> Result<(), PoiseError> {
    ctx.send(
        poise::CreateReply::default()
            .content(format!("{state:?}"))
            .ephemeral(true),
    )
    .await?;
    Ok(())
}

async fn response_to(fake: &FakeDiscord, id: u64) -> Value {
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        if let Some((_, body)) = fake
            .interaction_responses()
            .into_iter()
            .find(|(i, _)| *i == id)
        {
            return body;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no response to interaction {id}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poise_slash_command() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let fake = FakeDiscord::start(World::simple()).await;
        let (registered_tx, mut registered_rx) = mpsc::unbounded_channel();
        let framework = poise::Framework::builder()
            .options(poise::FrameworkOptions {
                commands: vec![ping(), mode()],
                ..Default::default()
            })
            .initialize_owners(false)
            .setup(move |ctx, _ready, framework| {
                Box::pin(async move {
                    let result =
                        poise::builtins::register_globally(ctx, &framework.options().commands)
                            .await;
                    let _ = registered_tx.send(result.as_ref().map_err(|e| e.to_string()).cloned());
                    result?;
                    Ok(())
                })
            })
            .build();
        let mut client = ClientBuilder::new_with_http(http_for(&fake), intents())
            .framework(framework)
            .await
            .expect("client");
        let task = tokio::spawn(async move {
            let _ = client.start().await;
        });
        fake.wait_ready().await;
        let registered = tokio::time::timeout(LIMIT, registered_rx.recv())
            .await
            .expect("setup ran")
            .expect("setup result");
        registered.expect("register_globally parsed the fake's answer");
        let put = fake
            .requests()
            .into_iter()
            .find(|r| r.method == "PUT")
            .expect("commands registered");
        assert_eq!(put.path, "/applications/901/commands");
        assert_eq!(put.body[0]["name"], "ping");

        let id = fake
            .slash(Slash::new("ping", json!([]), Some(100), 200, 300, "alice"))
            .await;
        let response = response_to(&fake, id).await;
        assert_eq!(response["type"], 4);
        assert_eq!(response["data"]["content"], "pong");
        assert_eq!(response["data"]["flags"], 64);

        // in a DM too
        let dm = fake.dm_channel(301);
        let id = fake
            .slash(Slash::new("ping", json!([]), None, dm, 301, "bob"))
            .await;
        assert_eq!(response_to(&fake, id).await["data"]["content"], "pong");

        // options are checked against the registration, as Discord would
        let registered = fake.commands();
        let mode_command = &registered
            .iter()
            .find(|(_, c)| c["name"] == "mode")
            .unwrap()
            .1;
        assert_eq!(
            mode_command["options"][0]["type"], 4,
            "a choice is an INTEGER"
        );
        let off_choice = &mode_command["options"][0]["choices"][1];
        assert_eq!(
            (&off_choice["name"], &off_choice["value"]),
            (&json!("Off"), &json!(1))
        );
        let as_string = json!([{"name": "state", "type": 3, "value": "On"}]);
        let why = fake
            .try_slash(Slash::new("mode", as_string, Some(100), 200, 300, "alice"))
            .await
            .unwrap_err();
        assert!(why.contains("registered as type 4 (INTEGER)"), "{why}");
        let unknown = json!([{"name": "nope", "type": 3, "value": "x"}]);
        assert!(
            fake.try_slash(Slash::new("ping", unknown, Some(100), 200, 300, "alice"))
                .await
                .is_err()
        );
        let missing = fake
            .try_slash(Slash::new("mode", json!([]), Some(100), 200, 300, "alice"))
            .await;
        assert!(missing.unwrap_err().contains("required"));
        let out_of_range = json!([{"name": "state", "type": 4, "value": 7}]);
        assert!(
            fake.try_slash(Slash::new(
                "mode",
                out_of_range,
                Some(100),
                200,
                300,
                "alice"
            ))
            .await
            .is_err()
        );
        let off = json!([{"name": "state", "type": 4, "value": 1}]);
        let id = fake
            .slash(Slash::new("mode", off, Some(100), 200, 300, "alice"))
            .await;
        assert_eq!(response_to(&fake, id).await["data"]["content"], "Off");

        assert!(fake.unexpected().is_empty(), "{:?}", fake.unexpected());
        assert_serenity_did_not_warn();
        task.abort();
    })
    .await
    .expect("took too long");
}
