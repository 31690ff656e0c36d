-- Queues, their partitions, the segments that hold messages, and the dedup index.
-- Times are milliseconds since the Unix epoch.

CREATE TABLE queues (
    id                   INTEGER PRIMARY KEY AUTOINCREMENT,
    name                 TEXT    NOT NULL UNIQUE,
    options              TEXT    NOT NULL,   -- QueueOptions as JSON
    dedup_window_seconds INTEGER NOT NULL,   -- copied out of options: read under the append lock
    topic_id             TEXT    NOT NULL,   -- the Kafka topic id (a UUID)
    created_at           INTEGER NOT NULL
);

CREATE TABLE partitions (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: caches key on it
    queue_id        INTEGER NOT NULL,
    name            TEXT    NOT NULL,
    kafka_index     INTEGER NOT NULL,
    next_offset     INTEGER NOT NULL DEFAULT 0,
    log_start       INTEGER NOT NULL DEFAULT 0,
    last_created_at INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL,
    UNIQUE (queue_id, name),
    UNIQUE (queue_id, kafka_index)
);

-- One row per appended batch; records packed as described in record.rs.
CREATE TABLE segments (
    id           INTEGER PRIMARY KEY,
    partition_id INTEGER NOT NULL,
    base_offset  INTEGER NOT NULL,
    record_count INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    max_timestamp INTEGER NOT NULL,  -- largest record timestamp, for ListOffsets by time
    format       INTEGER NOT NULL,
    records      BLOB    NOT NULL,
    UNIQUE (partition_id, base_offset)
);

-- The dedup sidecar: per segment of a queue with a dedup window, the 64-bit
-- hashes of its transaction ids in offset order (8 bytes each, little-endian).
CREATE TABLE txn_hashes (
    partition_id INTEGER NOT NULL,
    base_offset  INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    hashes       BLOB   NOT NULL,
    PRIMARY KEY (partition_id, base_offset)
);
CREATE INDEX txn_hashes_by_time ON txn_hashes (partition_id, created_at);
