//! Retention's statements: reading a partition's oldest segments and what
//! the rules measure, moving the log start, deleting what lies below it,
//! and the lease of a duty one broker at a time performs.

use crate::backend::{on_db, Conn, Reader};
use crate::error::Result;
use crate::model::PartitionId;
use crate::retention::SegmentHead;

/// The partition's oldest segments from the one holding `log_start` on,
/// in offset order, at most `limit`.
pub(crate) async fn heads(
    db: Reader<'_>,
    partition_id: PartitionId,
    log_start: i64,
    limit: i64,
) -> Result<Vec<SegmentHead>> {
    Ok(on_db!(db, pool => sqlx::query_as(
        "SELECT base_offset, record_count, created_at, CAST(length(records) AS BIGINT) AS bytes \
         FROM segments WHERE partition_id = $1 AND base_offset >= COALESCE(\
           (SELECT MAX(base_offset) FROM segments WHERE partition_id = $1 AND base_offset <= $2), 0) \
         ORDER BY base_offset LIMIT $3",
    )
    .bind(partition_id)
    .bind(log_start)
    .bind(limit)
    .fetch_all(pool)
    .await?))
}

/// The stored size of the partition's segments that end after `log_start`.
pub(crate) async fn stored_bytes(
    db: Reader<'_>,
    partition_id: PartitionId,
    log_start: i64,
) -> Result<i64> {
    let bytes: Option<i64> = on_db!(db, pool => sqlx::query_scalar(
        "SELECT CAST(SUM(length(records)) AS BIGINT) FROM segments \
         WHERE partition_id = $1 AND base_offset + record_count > $2",
    )
    .bind(partition_id)
    .bind(log_start)
    .fetch_one(pool)
    .await?);
    Ok(bytes.unwrap_or(0))
}

/// The lowest committed offset of any group on the partition.
pub(crate) async fn min_committed(
    db: Reader<'_>,
    partition_id: PartitionId,
) -> Result<Option<i64>> {
    Ok(on_db!(db, pool => sqlx::query_scalar(
        "SELECT MIN(committed_offset) FROM consumer_cursors WHERE partition_id = $1",
    )
    .bind(partition_id)
    .fetch_one(pool)
    .await?))
}

/// Moves the partition's log start up to `offset` (never down, never past
/// the next offset).
pub(crate) async fn advance_log_start(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
    offset: i64,
) -> Result<()> {
    on_db!(conn, c => sqlx::query(
        "UPDATE partitions SET log_start = $2 \
         WHERE id = $1 AND log_start < $2 AND next_offset >= $2",
    )
    .bind(partition_id)
    .bind(offset)
    .execute(&mut **c)
    .await
    .map(|_| ())?);
    Ok(())
}

/// Partitions holding segments wholly below their log start, with it.
pub(crate) async fn partitions_to_sweep(
    db: Reader<'_>,
    limit: i64,
) -> Result<Vec<(PartitionId, i64)>> {
    Ok(on_db!(db, pool => sqlx::query_as(
        "SELECT p.id, p.log_start FROM partitions p WHERE EXISTS (\
           SELECT 1 FROM segments s WHERE s.partition_id = p.id \
             AND s.base_offset < p.log_start AND s.base_offset + s.record_count <= p.log_start) \
         LIMIT $1",
    )
    .bind(limit)
    .fetch_all(pool)
    .await?))
}

/// Deletes up to `limit` of the partition's segments that end at or below
/// `log_start`, oldest first; returns how many.
pub(crate) async fn delete_below(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
    log_start: i64,
    limit: i64,
) -> Result<u64> {
    Ok(on_db!(conn, c => sqlx::query(
        "DELETE FROM segments WHERE partition_id = $1 AND base_offset IN (\
           SELECT base_offset FROM segments WHERE partition_id = $1 \
             AND base_offset < $2 AND base_offset + record_count <= $2 \
           ORDER BY base_offset LIMIT $3)",
    )
    .bind(partition_id)
    .bind(log_start)
    .bind(limit)
    .execute(&mut **c)
    .await?
    .rows_affected()))
}

/// Takes or renews the lease of duty `name` for `holder` until
/// `expires_at`; false while another holder's lease runs.
pub(crate) async fn hold_duty(
    conn: &mut Conn<'_>,
    name: &str,
    holder: &str,
    now: i64,
    expires_at: i64,
) -> Result<bool> {
    let taken = on_db!(conn, c => sqlx::query(
        "INSERT INTO duties (name, holder, expires_at) VALUES ($1, $2, $3) \
         ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at \
         WHERE duties.holder = excluded.holder OR duties.expires_at < $4",
    )
    .bind(name)
    .bind(holder)
    .bind(expires_at)
    .bind(now)
    .execute(&mut **c)
    .await?
    .rows_affected());
    Ok(taken == 1)
}

/// Ends `holder`'s lease of duty `name` now, so another holder may take it
/// at once.
pub(crate) async fn release_duty(conn: &mut Conn<'_>, name: &str, holder: &str) -> Result<()> {
    on_db!(conn, c => sqlx::query("DELETE FROM duties WHERE name = $1 AND holder = $2")
        .bind(name)
        .bind(holder)
        .execute(&mut **c)
        .await
        .map(drop)?);
    Ok(())
}

/// The offset below which the partition has been cleaned (compaction).
pub(crate) async fn compacted_to(db: Reader<'_>, partition_id: PartitionId) -> Result<i64> {
    let to: Option<i64> = on_db!(db, pool => sqlx::query_scalar(
        "SELECT compacted_to FROM partitions WHERE id = $1",
    )
    .bind(partition_id)
    .fetch_optional(pool)
    .await?);
    Ok(to.unwrap_or(0))
}

/// Records that the partition is clean below `offset`.
pub(crate) async fn set_compacted_to(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
    offset: i64,
) -> Result<()> {
    on_db!(conn, c => sqlx::query("UPDATE partitions SET compacted_to = $2 WHERE id = $1")
        .bind(partition_id)
        .bind(offset)
        .execute(&mut **c)
        .await
        .map(|_| ())?);
    Ok(())
}

/// How many records the partition stores in the segments that start in
/// `from..to`.
pub(crate) async fn stored_records(
    db: Reader<'_>,
    partition_id: PartitionId,
    from: i64,
    to: i64,
) -> Result<i64> {
    let n: Option<i64> = on_db!(db, pool => sqlx::query_scalar(
        "SELECT CAST(SUM(record_count) AS BIGINT) FROM segments \
         WHERE partition_id = $1 AND base_offset >= $2 AND base_offset < $3",
    )
    .bind(partition_id)
    .bind(from)
    .bind(to)
    .fetch_one(pool)
    .await?);
    Ok(n.unwrap_or(0))
}

/// Deletes the one segment row at `base_offset`.
pub(crate) async fn delete_segment(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
    base_offset: i64,
) -> Result<()> {
    on_db!(conn, c => sqlx::query(
        "DELETE FROM segments WHERE partition_id = $1 AND base_offset = $2",
    )
    .bind(partition_id)
    .bind(base_offset)
    .execute(&mut **c)
    .await
    .map(|_| ())?);
    Ok(())
}
