-- A queue entry is held by the process that took it (claimed_by, already there) until
-- claimed_at plus the lease: a live process renews it, and once it lapses another process running
-- the entry's shard may take the entry over (SPEC D6). Rows from before are unclaimed.
ALTER TABLE queued_messages ADD COLUMN claimed_at BIGINT NOT NULL DEFAULT 0;
