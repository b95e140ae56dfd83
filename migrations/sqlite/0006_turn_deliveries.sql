-- What each turn delivered, so a turn resumed after a crash posts nothing twice (SPEC D5):
-- kind 'piece' (the turn's item-th message, value its Discord message id), 'sticker' (value the
-- sticker id) or 'finished' (the turn ended; a resumed copy has nothing to do). Snowflakes are
-- text. Rows are small and bounded in size; those older than a week are pruned at start.
CREATE TABLE turn_deliveries (
    turn_id    TEXT    NOT NULL,
    kind       TEXT    NOT NULL CHECK (kind IN ('piece', 'sticker', 'finished')),
    item       INTEGER NOT NULL,
    value      TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (turn_id, kind, item)
);
