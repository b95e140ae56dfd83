-- Tool outcomes are keyed by (turn_id, identity_hash) instead of (turn_id, identity). An
-- identity is a tool name plus the model's full canonical arguments, unbounded text that does
-- not belong in an index key (PostgreSQL refuses rows past about 2.7 KB; both databases run the
-- same queries). identity_hash is the SHA-256 of the identity in 64 lowercase hex characters
-- (storage::outcomes::identity_hash); the identity stays, in a column no index covers, and is
-- what reading outcomes returns.
--
-- SQLite cannot compute SHA-256 in SQL, so the table is recreated empty: existing outcomes are
-- dropped. They only serve turns in flight (a turn resumed after a restart reuses them, SPEC R4),
-- so what is lost is reuse for a turn that was running at the moment of this upgrade: such a turn
-- may run a tool again. (The PostgreSQL migration keeps its rows.)
DROP TABLE tool_outcomes;
CREATE TABLE tool_outcomes (
    turn_id       TEXT    NOT NULL,
    identity_hash TEXT    NOT NULL CHECK (length(identity_hash) = 64),
    identity      TEXT    NOT NULL,
    response      TEXT    NOT NULL,
    invocation    INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    PRIMARY KEY (turn_id, identity_hash)
);
