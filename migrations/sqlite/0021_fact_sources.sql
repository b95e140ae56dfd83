-- The message a fact was learned from ("Remember this", or the message whose turn remembered
-- it), so "Forget this" on that message finds it (SPEC A5). 0: not known (every fact stored
-- before this).
ALTER TABLE memory_facts ADD COLUMN source_message INTEGER NOT NULL DEFAULT 0;
