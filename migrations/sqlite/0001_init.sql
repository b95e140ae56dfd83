-- persona-bot schema, SQLite flavour. Ids are Discord snowflakes (0 = none: a DM has no
-- server, a server-wide fact is about no user). Times are unix milliseconds. JSON is text.

CREATE TABLE server_settings (
    server_id           INTEGER PRIMARY KEY,
    drafting            INTEGER NOT NULL DEFAULT 0,
    thought_log_channel INTEGER,
    deliberate          TEXT    NOT NULL DEFAULT '{}',
    access              TEXT    NOT NULL DEFAULT '{}',
    updated_at          INTEGER NOT NULL
);

CREATE TABLE personas (
    id            TEXT PRIMARY KEY,
    display_name  TEXT    NOT NULL,
    system_prompt TEXT    NOT NULL,
    trigger_words TEXT    NOT NULL DEFAULT '[]',
    avatar_url    TEXT,
    updated_at    INTEGER NOT NULL
);

CREATE TABLE channel_summaries (
    channel_id INTEGER NOT NULL,
    persona    TEXT    NOT NULL,
    summary    TEXT    NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (channel_id, persona)
);

CREATE TABLE memory_facts (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    server_id  INTEGER NOT NULL,
    persona    TEXT    NOT NULL,
    about_user INTEGER NOT NULL,
    fact       TEXT    NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX memory_facts_bucket ON memory_facts (server_id, persona, about_user);

CREATE TABLE tool_events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    turn_id     TEXT    NOT NULL,
    server_id   INTEGER NOT NULL,
    channel_id  INTEGER NOT NULL,
    user_id     INTEGER NOT NULL,
    role        TEXT    NOT NULL,
    tool        TEXT    NOT NULL,
    arguments   TEXT    NOT NULL,
    outcome     TEXT    NOT NULL,
    code        TEXT,
    duration_ms INTEGER NOT NULL,
    at_ms       INTEGER NOT NULL
);
CREATE INDEX tool_events_turn ON tool_events (turn_id);
CREATE INDEX tool_events_server_time ON tool_events (server_id, at_ms);

CREATE TABLE usage_counters (
    server_id  INTEGER NOT NULL,
    user_id    INTEGER NOT NULL,
    persona    TEXT    NOT NULL,
    metric     TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    count      INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (server_id, user_id, persona, metric, key)
);

CREATE TABLE queued_messages (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    server_id   INTEGER NOT NULL,
    channel_id  INTEGER NOT NULL,
    message_id  INTEGER NOT NULL,
    author_id   INTEGER NOT NULL,
    author_name TEXT    NOT NULL,
    content     TEXT    NOT NULL,
    follow_up   INTEGER NOT NULL,
    enqueued_at INTEGER NOT NULL,
    persona     TEXT    NOT NULL,
    visibility  TEXT    NOT NULL,
    locale      TEXT    NOT NULL,
    quiet       INTEGER NOT NULL,
    claimed_by  TEXT,
    UNIQUE (channel_id, message_id)
);
CREATE INDEX queued_messages_channel ON queued_messages (channel_id, id);

CREATE TABLE image_plans (
    id         TEXT PRIMARY KEY,
    turn_id    TEXT    NOT NULL,
    server_id  INTEGER NOT NULL,
    channel_id INTEGER NOT NULL,
    user_id    INTEGER NOT NULL,
    persona    TEXT    NOT NULL,
    prompt     TEXT    NOT NULL,
    caption    TEXT,
    aspect     TEXT    NOT NULL,
    part_set   TEXT,
    part_index INTEGER,
    part_total INTEGER,
    created_at INTEGER NOT NULL
);

CREATE TABLE worker_tasks (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    plan_id         TEXT    NOT NULL UNIQUE REFERENCES image_plans (id),
    status          TEXT    NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    claimed_by      TEXT,
    claimed_at      INTEGER,
    next_attempt_at INTEGER NOT NULL,
    last_error      TEXT,
    updated_at      INTEGER NOT NULL
);
CREATE INDEX worker_tasks_due ON worker_tasks (status, next_attempt_at);

CREATE TABLE tool_outcomes (
    turn_id    TEXT    NOT NULL,
    identity   TEXT    NOT NULL,
    response   TEXT    NOT NULL,
    invocation INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (turn_id, identity)
);
