-- The sealed part of the dedup index (see storage/src/dedup/mod.rs): per
-- partition, immutable runs of (hash, offset) pairs sorted by hash, stored
-- in pages, each with a Bloom filter (in chunks) and the first hash of every
-- page.

-- Transaction ids below dedup_sealed_to are in runs; those from it on are
-- only in txn_hashes. dedup_epoch changes whenever the live runs change, so
-- a broker knows when the runs it holds in memory are stale.
ALTER TABLE partitions ADD COLUMN dedup_sealed_to BIGINT NOT NULL DEFAULT 0;
ALTER TABLE partitions ADD COLUMN dedup_epoch BIGINT NOT NULL DEFAULT 0;

CREATE TABLE dedup_runs (
    id           BIGSERIAL PRIMARY KEY,
    partition_id BIGINT NOT NULL,
    level        BIGINT NOT NULL,   -- 0 for a sealed tail, n+1 for a merge of level-n runs
    state        BIGINT NOT NULL,   -- 0 being merged into, 1 live, 2 dead (pages being deleted)
    entries      BIGINT NOT NULL,
    created_max  BIGINT NOT NULL,   -- the newest creation time of its ids (ms)
    started_at   BIGINT NOT NULL,   -- when it was sealed or its merge began (ms)
    fences       BYTEA              -- the first hash of each page, once live
);
CREATE INDEX dedup_runs_by_partition ON dedup_runs (partition_id, state, level);
-- One merge into each level of a partition at a time, whichever broker runs it.
CREATE UNIQUE INDEX dedup_runs_one_merge ON dedup_runs (partition_id, level) WHERE state = 0;

CREATE TABLE dedup_pages (
    run_id  BIGINT NOT NULL,
    page_no BIGINT NOT NULL,
    entries BYTEA NOT NULL,         -- (hash, offset) pairs, 16 bytes each, little-endian
    PRIMARY KEY (run_id, page_no)
);

-- A run's Bloom filter in chunks of 256 KiB, so that neither writing nor
-- reading a large one needs it twice in memory.
CREATE TABLE dedup_filters (
    run_id   BIGINT NOT NULL,
    chunk_no BIGINT NOT NULL,
    bytes    BYTEA NOT NULL,
    PRIMARY KEY (run_id, chunk_no)
);

-- The sidecar is purged by age across partitions, in bounded steps.
CREATE INDEX txn_hashes_by_age ON txn_hashes (created_at);
