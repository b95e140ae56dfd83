-- A message piece is recorded as intended (kind 'intent', item its index, value a digest of its
-- text) before it is sent, so a turn resumed after a crash between a post and its record looks for
-- that post in the channel before posting again: a webhook takes no nonce, and Discord forgets
-- a nonce after minutes (SPEC D5, D11). SQLite cannot change a CHECK in place: the table is
-- rebuilt with its rows.
CREATE TABLE turn_deliveries_next (
    turn_id    TEXT    NOT NULL,
    kind       TEXT    NOT NULL CHECK (kind IN ('piece', 'sticker', 'finished', 'intent')),
    item       INTEGER NOT NULL,
    value      TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (turn_id, kind, item)
);
INSERT INTO turn_deliveries_next (turn_id, kind, item, value, created_at)
    SELECT turn_id, kind, item, value, created_at FROM turn_deliveries;
DROP TABLE turn_deliveries;
ALTER TABLE turn_deliveries_next RENAME TO turn_deliveries;
