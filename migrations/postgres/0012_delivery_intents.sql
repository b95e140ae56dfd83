-- A message piece is recorded as intended (kind 'intent', item its index, value a digest of its
-- text) before it is sent, so a turn resumed after a crash between a post and its record looks for
-- that post in the channel before posting again: a webhook takes no nonce, and Discord forgets
-- a nonce after minutes (SPEC D5, D11).
ALTER TABLE turn_deliveries DROP CONSTRAINT IF EXISTS turn_deliveries_kind_check;
ALTER TABLE turn_deliveries ADD CONSTRAINT turn_deliveries_kind_check
    CHECK (kind IN ('piece', 'sticker', 'finished', 'intent'));
