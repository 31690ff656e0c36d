-- At-rest encryption (storage/src/sealing.rs): whether a queue's payloads
-- are sealed, copied out of options like dedup_window_seconds, so appends
-- read it under the partition lock. Queues that asked for it before it was
-- built have their new payloads sealed from now on.
ALTER TABLE queues ADD COLUMN encryption_enabled BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE queues SET encryption_enabled = TRUE
    WHERE COALESCE((options::jsonb ->> 'encryptionEnabled')::boolean, FALSE);
