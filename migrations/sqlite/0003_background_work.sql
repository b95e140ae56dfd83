-- Background work: where a plan's image goes (visibility decides thought-log mirroring), a
-- task's final result (posted, or the failure payload the model sees later), and reminders.
ALTER TABLE image_plans ADD COLUMN visibility TEXT NOT NULL DEFAULT 'private';
ALTER TABLE image_plans ADD COLUMN locale TEXT NOT NULL DEFAULT 'en';
ALTER TABLE worker_tasks ADD COLUMN result TEXT;

CREATE TABLE reminders (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    server_id   INTEGER NOT NULL,
    channel_id  INTEGER NOT NULL,
    creator_id  INTEGER NOT NULL,
    target_id   INTEGER NOT NULL,
    persona     TEXT    NOT NULL,
    text        TEXT    NOT NULL,
    due_at      INTEGER NOT NULL,
    repeat      TEXT    NOT NULL,
    time_zone   TEXT    NOT NULL,
    visibility  TEXT    NOT NULL,
    locale      TEXT    NOT NULL,
    status      TEXT    NOT NULL,
    fired       INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL
);
CREATE INDEX reminders_due ON reminders (status, due_at);
ALTER TABLE server_settings ADD COLUMN random TEXT NOT NULL DEFAULT '{}';
