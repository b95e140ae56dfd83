-- Status reactions on the message a turn answers (SPEC E1), chosen by a moderator with
-- /replies reactions: 1 on, 0 off (the default).
ALTER TABLE server_settings ADD COLUMN status_reactions BIGINT NOT NULL DEFAULT 0;
