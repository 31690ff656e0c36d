-- Whether the queue is mirrored from a source cluster and not fenced (see
-- 0018_mirror.sql): read with the queue row under the partition lock, so an
-- append refuses local writes to it without probing mirror_topics. Kept in
-- step with mirror_topics in the same transactions (storage/src/sql/mirror.rs,
-- and catalog.rs when a queue is created).
ALTER TABLE queues ADD COLUMN mirrored BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE queues SET mirrored = TRUE
 WHERE name IN (SELECT topic FROM mirror_topics WHERE fenced = FALSE);
