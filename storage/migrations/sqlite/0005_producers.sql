-- Kafka idempotent producers: the ids handed out by InitProducerId, and per
-- (partition, producer) the epoch and the last five appended batches
-- (16 bytes each: first sequence, last sequence, base offset), written in
-- the same transaction as the append they describe.

CREATE TABLE producers (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    transactional_id TEXT UNIQUE,   -- NULL for idempotent-only producers
    epoch            INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
);

CREATE TABLE producer_state (
    partition_id INTEGER NOT NULL,
    producer_id  INTEGER NOT NULL,
    epoch        INTEGER NOT NULL,
    batches      BLOB NOT NULL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (partition_id, producer_id)
);
CREATE INDEX producer_state_by_time ON producer_state (updated_at);
