-- The last message the bot saw in each channel, so that after a restart, or a gateway session
-- that could not resume, it reads only what came after it (SPEC D9). server_id is 0 for a DM.
-- Written in batches every few seconds; marks of messages older than a day are pruned at start.
CREATE TABLE seen_channels (
    channel_id INTEGER PRIMARY KEY,
    server_id  INTEGER NOT NULL,
    message_id INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX seen_channels_message ON seen_channels (message_id);
