//! The append statements on PostgreSQL: array parameters and `UNNEST`, so a
//! group commit costs a handful of round trips whatever its size.

use sqlx::PgConnection;

use super::PgStore;
use crate::append::{
    append, AppendJob, AppendTx, IndexHit, IndexRow, JobOutcome, NewSegment, PartitionHead,
    SegmentRow,
};
use crate::error::Result;

struct Tx<'c>(&'c mut PgConnection);

impl AppendTx for Tx<'_> {
    async fn lock_partitions(&mut self, ids: &[i64]) -> Result<Vec<PartitionHead>> {
        let rows: Vec<(i64, i64, i64, i64)> = sqlx::query_as(
            "SELECT p.id, p.next_offset, p.last_created_at, q.dedup_window_seconds \
             FROM partitions p JOIN queues q ON q.id = p.queue_id \
             WHERE p.id = ANY($1) ORDER BY p.id FOR UPDATE OF p",
        )
        .bind(ids)
        .fetch_all(&mut *self.0)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(id, next_offset, last_created_at, window)| PartitionHead {
                id,
                next_offset,
                last_created_at,
                dedup_window_seconds: window,
            })
            .collect())
    }

    async fn probe(
        &mut self,
        partition_id: i64,
        hashes: &[i64],
        since_ms: i64,
    ) -> Result<Vec<IndexHit>> {
        let rows: Vec<(i64, i64)> = sqlx::query_as(
            "SELECT txn_hash, \"offset\" FROM dedup_index \
             WHERE partition_id = $1 AND txn_hash = ANY($2) AND created_at >= $3",
        )
        .bind(partition_id)
        .bind(hashes)
        .bind(since_ms)
        .fetch_all(&mut *self.0)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(txn_hash, offset)| IndexHit { txn_hash, offset })
            .collect())
    }

    async fn segment_at(&mut self, partition_id: i64, offset: i64) -> Result<Option<SegmentRow>> {
        PgStore::segment_at_in(self.0, partition_id, offset).await
    }

    async fn write(
        &mut self,
        segments: &[NewSegment],
        index: &[IndexRow],
        heads: &[PartitionHead],
    ) -> Result<()> {
        let column = |f: fn(&NewSegment) -> i64| segments.iter().map(f).collect::<Vec<i64>>();
        let records: Vec<&[u8]> = segments.iter().map(|s| s.records.as_slice()).collect();
        sqlx::query(
            "INSERT INTO segments (partition_id, base_offset, record_count, created_at, format, records) \
             SELECT p, b, c, t, $5, r FROM UNNEST($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $6::bytea[]) \
             AS s(p, b, c, t, r)",
        )
        .bind(column(|s| s.partition_id))
        .bind(column(|s| s.base_offset))
        .bind(column(|s| s.count))
        .bind(column(|s| s.created_at))
        .bind(crate::record::FORMAT_V1)
        .bind(records)
        .execute(&mut *self.0)
        .await?;
        if !index.is_empty() {
            let column = |f: fn(&IndexRow) -> i64| index.iter().map(f).collect::<Vec<i64>>();
            sqlx::query(
                "INSERT INTO dedup_index (partition_id, txn_hash, \"offset\", created_at) \
                 SELECT * FROM UNNEST($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[])",
            )
            .bind(column(|r| r.partition_id))
            .bind(column(|r| r.txn_hash))
            .bind(column(|r| r.offset))
            .bind(column(|r| r.created_at))
            .execute(&mut *self.0)
            .await?;
        }
        let column = |f: fn(&PartitionHead) -> i64| heads.iter().map(f).collect::<Vec<i64>>();
        sqlx::query(
            "UPDATE partitions SET next_offset = h.n, last_created_at = h.t \
             FROM UNNEST($1::bigint[], $2::bigint[], $3::bigint[]) AS h(id, n, t) \
             WHERE partitions.id = h.id",
        )
        .bind(column(|h| h.id))
        .bind(column(|h| h.next_offset))
        .bind(column(|h| h.last_created_at))
        .execute(&mut *self.0)
        .await?;
        Ok(())
    }
}

impl PgStore {
    /// Runs a group commit in one transaction.
    pub(crate) async fn append(&self, jobs: &[AppendJob], now_ms: i64) -> Result<Vec<JobOutcome>> {
        let mut tx = self.pool.begin().await?;
        let outcomes = append(&mut Tx(&mut tx), jobs, now_ms).await?;
        tx.commit().await?;
        Ok(outcomes)
    }
}
