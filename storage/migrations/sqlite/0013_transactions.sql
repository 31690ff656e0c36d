-- Kafka transactions (storage/src/transactions/): the coordinator's state
-- per transactional id, what each ongoing transaction holds, and per
-- partition the open and aborted transactions that read_committed readers
-- need (the last stable offset and the aborted ranges). Every change of a
-- transaction's state is one database transaction.

CREATE TABLE kafka_transactions (
    transactional_id BLOB PRIMARY KEY,   -- bytes: a client may send NUL
    producer_id      INTEGER NOT NULL,
    epoch            INTEGER NOT NULL,
    state            TEXT NOT NULL,      -- Empty, Ongoing, CompleteCommit, CompleteAbort
    timeout_ms       INTEGER NOT NULL,
    started_at       INTEGER,            -- when the ongoing transaction began
    updated_at       INTEGER NOT NULL
);
-- A transactional batch finds its producer's transaction by producer id.
CREATE INDEX kafka_transactions_by_producer ON kafka_transactions (producer_id);

-- The partitions and groups of each ongoing transaction.
CREATE TABLE kafka_txn_partitions (
    transactional_id BLOB NOT NULL,
    partition_id     INTEGER NOT NULL,
    PRIMARY KEY (transactional_id, partition_id)
);
CREATE TABLE kafka_txn_groups (
    transactional_id BLOB NOT NULL,
    consumer_group   TEXT NOT NULL,
    PRIMARY KEY (transactional_id, consumer_group)
);

-- TxnOffsetCommit's offsets, moved to consumer_cursors when the
-- transaction commits and dropped when it aborts.
CREATE TABLE kafka_txn_offsets (
    transactional_id BLOB NOT NULL,
    consumer_group   TEXT NOT NULL,
    partition_id     INTEGER NOT NULL,
    committed_offset INTEGER NOT NULL,
    metadata         BLOB,
    leader_epoch     INTEGER,
    PRIMARY KEY (transactional_id, consumer_group, partition_id)
);

-- Per partition, each producer with an open transaction and the offset of
-- its first record: the last stable offset is the smallest, else the high
-- watermark.
CREATE TABLE kafka_open_txns (
    partition_id INTEGER NOT NULL,
    producer_id  INTEGER NOT NULL,
    first_offset INTEGER NOT NULL,
    PRIMARY KEY (partition_id, producer_id)
);

-- Per partition, each aborted transaction: its producer, first offset and
-- the offset of its abort marker (Kafka's aborted transaction index).
CREATE TABLE kafka_aborted_txns (
    partition_id INTEGER NOT NULL,
    last_offset  INTEGER NOT NULL,
    producer_id  INTEGER NOT NULL,
    first_offset INTEGER NOT NULL,
    PRIMARY KEY (partition_id, last_offset)
);
