-- Which queues retention and compaction look at (retention/mod.rs), copied
-- out of options like dedup_window_seconds, so their frequent steps read
-- those queues' partitions only, not the whole catalog. Every queue stored
-- before is looked at until its options are next written (each step still
-- decides from the options themselves).
ALTER TABLE queues ADD COLUMN retained BOOLEAN NOT NULL DEFAULT TRUE;
ALTER TABLE queues ADD COLUMN compacted BOOLEAN NOT NULL DEFAULT TRUE;
