-- Queues, their partitions, the segments that hold messages, and the dedup index.
-- Times are milliseconds since the Unix epoch.

CREATE TABLE queues (
    id                   BIGSERIAL PRIMARY KEY,
    name                 TEXT   NOT NULL UNIQUE,
    options              TEXT   NOT NULL,   -- QueueOptions as JSON
    dedup_window_seconds BIGINT NOT NULL,   -- copied out of options: read under the append lock
    created_at           BIGINT NOT NULL
);

CREATE TABLE partitions (
    id              BIGSERIAL PRIMARY KEY,  -- never reused: caches key on it
    queue_id        BIGINT  NOT NULL,
    name            TEXT    NOT NULL,
    kafka_index     INTEGER NOT NULL,
    next_offset     BIGINT  NOT NULL DEFAULT 0,
    log_start       BIGINT  NOT NULL DEFAULT 0,
    last_created_at BIGINT  NOT NULL DEFAULT 0,
    created_at      BIGINT  NOT NULL,
    UNIQUE (queue_id, name),
    UNIQUE (queue_id, kafka_index)
);

-- One row per appended batch; records packed as described in record.rs.
CREATE TABLE segments (
    partition_id BIGINT   NOT NULL,
    base_offset  BIGINT   NOT NULL,
    record_count BIGINT   NOT NULL,
    created_at   BIGINT   NOT NULL,
    format       SMALLINT NOT NULL,
    records      BYTEA    NOT NULL,
    PRIMARY KEY (partition_id, base_offset)
);

-- Transaction-id hashes of queues with a dedup window, one row per message.
CREATE TABLE dedup_index (
    partition_id BIGINT NOT NULL,
    txn_hash     BIGINT NOT NULL,
    "offset"     BIGINT NOT NULL,
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (partition_id, txn_hash, "offset")
);
