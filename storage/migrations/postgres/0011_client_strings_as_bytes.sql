-- Strings a client sends that are not names (Kafka's OffsetCommit metadata
-- and transactional ids, a native message's transaction id and the error
-- of its dead letter) may hold any character, NUL included; PostgreSQL's
-- TEXT refuses NUL, so they are kept as their UTF-8 bytes, as on SQLite
-- (its migration 0009).
ALTER TABLE consumer_cursors
    ALTER COLUMN metadata TYPE BYTEA USING convert_to(metadata, 'UTF8');
ALTER TABLE dead_letters
    ALTER COLUMN transaction_id TYPE BYTEA USING convert_to(transaction_id, 'UTF8'),
    ALTER COLUMN error_message TYPE BYTEA USING convert_to(error_message, 'UTF8');
ALTER TABLE producers
    ALTER COLUMN transactional_id TYPE BYTEA USING convert_to(transactional_id, 'UTF8');
