-- The users a queued message names (JSON text: id and the name the model reads, Discord's
-- `mentions` of the message, at most 100), so its reply may notify them, also after a restart
-- (issue 27). Never indexed.
ALTER TABLE queued_messages ADD COLUMN mentions TEXT NOT NULL DEFAULT '[]';
