-- A server's own persona (issue 15): a copy of a template that its moderators edit, as JSON
-- text (name, system prompt, trigger words, avatar); 'null' is the deployment's default.
-- Never indexed: it holds a prompt of up to 4000 characters.
ALTER TABLE server_settings ADD COLUMN persona TEXT NOT NULL DEFAULT 'null';
