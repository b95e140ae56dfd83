-- A turn's reaction is recorded like its sticker (kind 'reaction', value the emoji's key), so a
-- resumed turn knows it used its one expression (SPEC E1, D5). SQLite cannot change a CHECK in
-- place: the table is rebuilt with its rows.
CREATE TABLE turn_deliveries_next (
    turn_id    TEXT    NOT NULL,
    kind       TEXT    NOT NULL
        CHECK (kind IN ('piece', 'sticker', 'reaction', 'finished', 'intent')),
    item       INTEGER NOT NULL,
    value      TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (turn_id, kind, item)
);
INSERT INTO turn_deliveries_next (turn_id, kind, item, value, created_at)
    SELECT turn_id, kind, item, value, created_at FROM turn_deliveries;
DROP TABLE turn_deliveries;
ALTER TABLE turn_deliveries_next RENAME TO turn_deliveries;
