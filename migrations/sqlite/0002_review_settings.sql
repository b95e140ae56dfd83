-- Response Drafting: what the reviewer checks on this server, and its own prompt or model.
ALTER TABLE server_settings ADD COLUMN review TEXT NOT NULL DEFAULT '{}';
