-- At-rest encryption (storage/src/sealing.rs): whether a queue's payloads
-- are sealed, copied out of options like dedup_window_seconds, so appends
-- read it under the partition lock. Queues that asked for it before it was
-- built have their new payloads sealed from now on.
ALTER TABLE queues ADD COLUMN encryption_enabled INTEGER NOT NULL DEFAULT 0;
UPDATE queues SET encryption_enabled = 1
    WHERE COALESCE(json_extract(options, '$.encryptionEnabled'), 0) = 1;
