-- A turn's reaction is recorded like its sticker (kind 'reaction', value the emoji's key), so a
-- resumed turn knows it used its one expression (SPEC E1, D5).
ALTER TABLE turn_deliveries DROP CONSTRAINT IF EXISTS turn_deliveries_kind_check;
ALTER TABLE turn_deliveries ADD CONSTRAINT turn_deliveries_kind_check
    CHECK (kind IN ('piece', 'sticker', 'reaction', 'finished', 'intent'));
