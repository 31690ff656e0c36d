-- Kafka transactions, upkeep (storage/src/transactions/): the broker's
-- expiry sweep looks for ongoing transactions by start time, and rows of
-- partitions deleted before queue deletion cleared them are dropped.

CREATE INDEX kafka_transactions_ongoing ON kafka_transactions (started_at)
    WHERE state = 'Ongoing';

DELETE FROM kafka_open_txns WHERE partition_id NOT IN (SELECT id FROM partitions);
DELETE FROM kafka_aborted_txns WHERE partition_id NOT IN (SELECT id FROM partitions);
DELETE FROM kafka_txn_partitions WHERE partition_id NOT IN (SELECT id FROM partitions);
DELETE FROM kafka_txn_offsets WHERE partition_id NOT IN (SELECT id FROM partitions);
