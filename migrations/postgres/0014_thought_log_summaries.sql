-- Which finished turns post a summary card to the thought log (issue 27): 'off', 'problems'
-- (turns that did not end cleanly, the default) or 'all'.
ALTER TABLE server_settings ADD COLUMN summaries TEXT NOT NULL DEFAULT 'problems';
