-- The strings PostgreSQL keeps as bytes (its migration 0011) are bound as
-- bytes on SQLite too, and SQLite never finds a BLOB equal to a TEXT: the
-- values stored before are turned into BLOBs so lookups still find them.
UPDATE consumer_cursors SET metadata = CAST(metadata AS BLOB) WHERE metadata IS NOT NULL;
UPDATE dead_letters SET transaction_id = CAST(transaction_id AS BLOB),
    error_message = CAST(error_message AS BLOB);
UPDATE producers SET transactional_id = CAST(transactional_id AS BLOB)
    WHERE transactional_id IS NOT NULL;
