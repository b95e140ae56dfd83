-- Buttons on replies (SPEC E2): a server's switch (1 on, the default; /replies buttons), and
-- members' verdicts on replies, one per member and turn.
ALTER TABLE server_settings ADD COLUMN reply_buttons BIGINT NOT NULL DEFAULT 1;
CREATE TABLE turn_feedback (
    turn_id    TEXT    NOT NULL,
    server_id  BIGINT  NOT NULL,
    user_id    BIGINT  NOT NULL,
    verdict    TEXT    NOT NULL CHECK (verdict IN ('up', 'down')),
    given_at   BIGINT  NOT NULL,
    PRIMARY KEY (turn_id, user_id)
);
CREATE INDEX turn_feedback_server ON turn_feedback (server_id);
