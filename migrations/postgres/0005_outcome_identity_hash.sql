-- Tool outcomes are keyed by (turn_id, identity_hash) instead of (turn_id, identity). An
-- identity is a tool name plus the model's full canonical arguments, unbounded text: a few KB of
-- arguments pass PostgreSQL's btree row limit (about 2.7 KB, SQLSTATE 54000) and the row could
-- never be written. identity_hash is the SHA-256 of the identity in 64 lowercase hex characters
-- (storage::outcomes::identity_hash computes the same); the identity stays, in a column no index
-- covers, and is what reading outcomes returns.
--
-- Existing rows are kept: their hash is computed here, the same way.
ALTER TABLE tool_outcomes DROP CONSTRAINT tool_outcomes_pkey;
ALTER TABLE tool_outcomes ADD COLUMN identity_hash TEXT;
UPDATE tool_outcomes SET identity_hash = encode(sha256(convert_to(identity, 'UTF8')), 'hex');
ALTER TABLE tool_outcomes ALTER COLUMN identity_hash SET NOT NULL;
ALTER TABLE tool_outcomes ADD CONSTRAINT tool_outcomes_identity_hash_size
    CHECK (char_length(identity_hash) = 64);
ALTER TABLE tool_outcomes ADD PRIMARY KEY (turn_id, identity_hash);
