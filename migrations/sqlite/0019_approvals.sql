-- Approval requests (SPEC E3): one per call of a turn (the id comes from both), decided once;
-- a turn resumed after a restart finds its request, its card and a decision made meanwhile.
-- A server's policy on who decides: 'requester' (the default: or a moderator) or 'moderators'.
ALTER TABLE server_settings ADD COLUMN approvers TEXT NOT NULL DEFAULT 'requester';
CREATE TABLE approvals (
    id          TEXT    PRIMARY KEY,
    turn_id     TEXT    NOT NULL,
    tool        TEXT    NOT NULL,
    what        TEXT    NOT NULL,
    server_id   INTEGER NOT NULL,
    channel_id  INTEGER NOT NULL,
    requester   INTEGER NOT NULL,
    approvers   TEXT    NOT NULL,
    deadline_at INTEGER NOT NULL,
    card_id     INTEGER,
    state       TEXT    NOT NULL CHECK (state IN ('pending', 'approved', 'denied', 'timed_out')),
    decided_by  INTEGER,
    created_at  INTEGER NOT NULL,
    decided_at  INTEGER
);
