-- Kafka idempotent producers: the ids handed out by InitProducerId, and per
-- (partition, producer) the epoch and the last five appended batches
-- (16 bytes each: first sequence, last sequence, base offset), written in
-- the same transaction as the append they describe.

CREATE TABLE producers (
    id               BIGSERIAL PRIMARY KEY,
    transactional_id TEXT UNIQUE,   -- NULL for idempotent-only producers
    epoch            INTEGER NOT NULL,
    updated_at       BIGINT NOT NULL
);

CREATE TABLE producer_state (
    partition_id BIGINT NOT NULL,
    producer_id  BIGINT NOT NULL,
    epoch        INTEGER NOT NULL,
    batches      BYTEA NOT NULL,
    updated_at   BIGINT NOT NULL,
    PRIMARY KEY (partition_id, producer_id)
);
CREATE INDEX producer_state_by_time ON producer_state (updated_at);
