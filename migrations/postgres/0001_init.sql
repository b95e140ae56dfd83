-- persona-bot schema, PostgreSQL flavour (same tables as the SQLite one). Ids are Discord snowflakes (0 = none: a DM has no
-- server, a server-wide fact is about no user). Times are unix milliseconds. JSON is text.

CREATE TABLE server_settings (
    server_id           BIGINT PRIMARY KEY,
    drafting            BIGINT NOT NULL DEFAULT 0,
    thought_log_channel BIGINT,
    deliberate          TEXT    NOT NULL DEFAULT '{}',
    access              TEXT    NOT NULL DEFAULT '{}',
    updated_at          BIGINT NOT NULL
);

CREATE TABLE personas (
    id            TEXT PRIMARY KEY,
    display_name  TEXT    NOT NULL,
    system_prompt TEXT    NOT NULL,
    trigger_words TEXT    NOT NULL DEFAULT '[]',
    avatar_url    TEXT,
    updated_at    BIGINT NOT NULL
);

CREATE TABLE channel_summaries (
    channel_id BIGINT NOT NULL,
    persona    TEXT    NOT NULL,
    summary    TEXT    NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (channel_id, persona)
);

CREATE TABLE memory_facts (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    server_id  BIGINT NOT NULL,
    persona    TEXT    NOT NULL,
    about_user BIGINT NOT NULL,
    fact       TEXT    NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX memory_facts_bucket ON memory_facts (server_id, persona, about_user);

CREATE TABLE tool_events (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    turn_id     TEXT    NOT NULL,
    server_id   BIGINT NOT NULL,
    channel_id  BIGINT NOT NULL,
    user_id     BIGINT NOT NULL,
    role        TEXT    NOT NULL,
    tool        TEXT    NOT NULL,
    arguments   TEXT    NOT NULL,
    outcome     TEXT    NOT NULL,
    code        TEXT,
    duration_ms BIGINT NOT NULL,
    at_ms       BIGINT NOT NULL
);
CREATE INDEX tool_events_turn ON tool_events (turn_id);
CREATE INDEX tool_events_server_time ON tool_events (server_id, at_ms);

CREATE TABLE usage_counters (
    server_id  BIGINT NOT NULL,
    user_id    BIGINT NOT NULL,
    persona    TEXT    NOT NULL,
    metric     TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    count      BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (server_id, user_id, persona, metric, key)
);

CREATE TABLE queued_messages (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    server_id   BIGINT NOT NULL,
    channel_id  BIGINT NOT NULL,
    message_id  BIGINT NOT NULL,
    author_id   BIGINT NOT NULL,
    author_name TEXT    NOT NULL,
    content     TEXT    NOT NULL,
    follow_up   BIGINT NOT NULL,
    enqueued_at BIGINT NOT NULL,
    persona     TEXT    NOT NULL,
    visibility  TEXT    NOT NULL,
    locale      TEXT    NOT NULL,
    quiet       BIGINT NOT NULL,
    claimed_by  TEXT,
    UNIQUE (channel_id, message_id)
);
CREATE INDEX queued_messages_channel ON queued_messages (channel_id, id);

CREATE TABLE image_plans (
    id         TEXT PRIMARY KEY,
    turn_id    TEXT    NOT NULL,
    server_id  BIGINT NOT NULL,
    channel_id BIGINT NOT NULL,
    user_id    BIGINT NOT NULL,
    persona    TEXT    NOT NULL,
    prompt     TEXT    NOT NULL,
    caption    TEXT,
    aspect     TEXT    NOT NULL,
    part_set   TEXT,
    part_index BIGINT,
    part_total BIGINT,
    created_at BIGINT NOT NULL
);

CREATE TABLE worker_tasks (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    plan_id         TEXT    NOT NULL UNIQUE REFERENCES image_plans (id),
    status          TEXT    NOT NULL,
    attempts        BIGINT NOT NULL DEFAULT 0,
    claimed_by      TEXT,
    claimed_at      BIGINT,
    next_attempt_at BIGINT NOT NULL,
    last_error      TEXT,
    updated_at      BIGINT NOT NULL
);
CREATE INDEX worker_tasks_due ON worker_tasks (status, next_attempt_at);

CREATE TABLE tool_outcomes (
    turn_id    TEXT    NOT NULL,
    identity   TEXT    NOT NULL,
    response   TEXT    NOT NULL,
    invocation BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (turn_id, identity)
);
