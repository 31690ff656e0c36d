-- Consumption: consumer-group positions, partition leases, subscriptions and
-- dead letters. Times are milliseconds since the Unix epoch.

-- The committed position of a consumer group on a partition, one row per
-- (partition, group). This is THE store of positions: native HTTP consumers
-- and Kafka consumer groups (OffsetCommit / OffsetFetch) read and write the
-- same rows, so a group can move between the two protocols and resume where
-- the other stopped.
--
-- Mapping:
--   committed_offset  Kafka's committed offset: the NEXT offset the group
--                     consumes. The native "cursor" (the highest offset the
--                     group has completed) is committed_offset - 1; a native
--                     ack `completed` of offset N stores N + 1.
--   metadata          Kafka's OffsetCommit metadata string (NULL when the
--                     position was set natively).
--   leader_epoch      Kafka's committed leader epoch (NULL when unknown or
--                     set natively).
--   retry_count       `failed` acks charged against the message at
--                     committed_offset (native retry budget, `retryLimit`);
--                     reset whenever the position moves forward.
CREATE TABLE consumer_cursors (
    partition_id     BIGINT  NOT NULL,
    consumer_group   TEXT    NOT NULL,
    committed_offset BIGINT  NOT NULL,
    metadata         TEXT,
    leader_epoch     INTEGER,
    retry_count      BIGINT  NOT NULL DEFAULT 0,
    created_at       BIGINT  NOT NULL,
    updated_at       BIGINT  NOT NULL,
    PRIMARY KEY (partition_id, consumer_group)
);
CREATE INDEX consumer_cursors_by_group ON consumer_cursors (consumer_group);

-- The native lease of a partition for a group, and what was delivered under
-- it. At most one row per (partition, group), so at most one live lease: a
-- pop claims the row with a conditional upsert that only succeeds when the
-- row is free (expires_at <= now), and the row lock serialises every pop and
-- ack of that (partition, group) across brokers. An expired lease needs no
-- clean-up: it is simply claimable.
--   lease_id      the last lease granted (kept after release, so a repeated
--                 ack of a released lease is recognised as a repeat)
--   expires_at    live while > now; 0 once released
--   span_start    committed_offset when the lease was granted
--   span_end      one past the last offset delivered under the lease
--   delivered_to  one past the highest offset ever delivered to the group
--   attempts      how many times the message at the cursor was delivered
--   claimed_at    when the lease was last granted (round-robin order)
CREATE TABLE consumer_leases (
    partition_id   BIGINT NOT NULL,
    consumer_group TEXT   NOT NULL,
    lease_id       TEXT,
    expires_at     BIGINT NOT NULL DEFAULT 0,
    span_start     BIGINT NOT NULL DEFAULT 0,
    span_end       BIGINT NOT NULL DEFAULT 0,
    delivered_to   BIGINT NOT NULL DEFAULT 0,
    attempts       BIGINT NOT NULL DEFAULT 0,
    claimed_at     BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (partition_id, consumer_group)
);
CREATE INDEX consumer_leases_by_lease ON consumer_leases (lease_id);

-- Where a named group starts on a queue, fixed when it first meets the queue.
--   mode      'all', 'new' or 'from'
--   start_at  messages created at or after it are delivered (NULL: all)
CREATE TABLE consumer_subscriptions (
    queue_id       BIGINT NOT NULL,
    consumer_group TEXT   NOT NULL,
    mode           TEXT   NOT NULL,
    start_at       BIGINT,
    created_at     BIGINT NOT NULL,
    PRIMARY KEY (queue_id, consumer_group)
);

-- Dead letters, per consumer group. `record` is the message as it was
-- stored (the layout of record.rs), so the payload survives retention.
CREATE TABLE dead_letters (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    queue_id           BIGINT NOT NULL,
    partition_id       BIGINT NOT NULL,
    consumer_group     TEXT   NOT NULL,
    message_offset     BIGINT NOT NULL,
    transaction_id     TEXT   NOT NULL,
    error_message      TEXT,
    retry_count        BIGINT NOT NULL,
    message_created_at BIGINT NOT NULL,
    failed_at          BIGINT NOT NULL,
    record             BLOB   NOT NULL,
    UNIQUE (partition_id, consumer_group, message_offset)
);
CREATE INDEX dead_letters_by_queue ON dead_letters (queue_id, failed_at);
CREATE INDEX dead_letters_by_txn ON dead_letters (partition_id, transaction_id);

-- Seeks and subscriptions by time: the first segment created at or after T.
CREATE INDEX segments_by_time ON segments (partition_id, created_at, base_offset);
