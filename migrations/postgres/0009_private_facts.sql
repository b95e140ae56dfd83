-- A fact learned in a private channel (one @everyone cannot view) is kept to that channel: it
-- reaches prompts there only, never the server's other channels (issue 14). 0: learned where
-- everyone could read it (every fact stored before this), so it is server-wide as it was.
ALTER TABLE memory_facts ADD COLUMN private_to BIGINT NOT NULL DEFAULT 0;
