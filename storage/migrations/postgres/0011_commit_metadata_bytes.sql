-- Kafka's OffsetCommit metadata is any string, NUL included; PostgreSQL's
-- TEXT refuses NUL, so the metadata is kept as its UTF-8 bytes (SQLite's
-- TEXT keeps NUL, and reads its old text values as bytes too).
ALTER TABLE consumer_cursors
    ALTER COLUMN metadata TYPE BYTEA USING convert_to(metadata, 'UTF8');
