-- Run pages and filter chunks are random bits: PostgreSQL's attempt to
-- compress each value before moving it out of line only costs CPU (it was
-- the busiest statement while dedup runs merged). Stored out of line,
-- uncompressed.
ALTER TABLE dedup_pages ALTER COLUMN entries SET STORAGE EXTERNAL;
ALTER TABLE dedup_filters ALTER COLUMN bytes SET STORAGE EXTERNAL;
