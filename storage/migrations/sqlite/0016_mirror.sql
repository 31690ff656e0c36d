-- `queen mirror`: the topics copied from a source Kafka cluster. While a
-- topic is mirrored and not fenced, local producers are refused (the append
-- reads this table under the partition lock), so no offset is taken twice.
-- The records' progress is each partition's next_offset, moved in the same
-- transaction as the records; this table holds what the status shows.
CREATE TABLE mirror_topics (
    topic      TEXT    PRIMARY KEY,
    source     TEXT    NOT NULL,           -- bootstrap servers of the source
    fenced     INTEGER NOT NULL DEFAULT 0, -- 1: local producers may write
    error      TEXT,                       -- the last error of this topic, if any
    updated_at INTEGER NOT NULL
);

-- Per mirrored partition, the source's high watermark as last seen.
CREATE TABLE mirror_partitions (
    topic                 TEXT    NOT NULL,
    kafka_index           INTEGER NOT NULL,
    source_high_watermark INTEGER NOT NULL,
    updated_at            INTEGER NOT NULL,
    PRIMARY KEY (topic, kafka_index)
);
