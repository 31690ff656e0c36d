-- Retention (see storage/src/retention/mod.rs).

-- How long the dedup sidecar keeps a queue's transaction ids, before the
-- 900-second floor: max(dedupWindowSeconds, completedRetentionSeconds),
-- copied out of options like dedup_window_seconds.
ALTER TABLE queues ADD COLUMN sidecar_seconds INTEGER NOT NULL DEFAULT 0;
UPDATE queues SET sidecar_seconds = MAX(dedup_window_seconds,
    COALESCE(json_extract(options, '$.completedRetentionSeconds'), 0));

-- Background duties that one broker at a time performs (retention): the
-- holder renews its lease while it works; another broker takes the duty
-- over once the lease has expired.
CREATE TABLE duties (
    name       TEXT    PRIMARY KEY,
    holder     TEXT    NOT NULL,
    expires_at INTEGER NOT NULL
);

-- Compaction (cleanup.policy=compact): every offset below compacted_to has
-- been through at least one cleaning; the records from it on are dirty.
ALTER TABLE partitions ADD COLUMN compacted_to INTEGER NOT NULL DEFAULT 0;
