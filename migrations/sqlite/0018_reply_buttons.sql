-- Buttons on replies (SPEC E2): a server's switch (1 on, the default; /replies buttons), and
-- members' verdicts on replies, one per member and turn.
ALTER TABLE server_settings ADD COLUMN reply_buttons INTEGER NOT NULL DEFAULT 1;
CREATE TABLE turn_feedback (
    turn_id    TEXT    NOT NULL,
    server_id  INTEGER NOT NULL,
    user_id    INTEGER NOT NULL,
    verdict    TEXT    NOT NULL CHECK (verdict IN ('up', 'down')),
    given_at   INTEGER NOT NULL,
    PRIMARY KEY (turn_id, user_id)
);
CREATE INDEX turn_feedback_server ON turn_feedback (server_id);
