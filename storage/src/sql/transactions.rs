//! The Kafka transaction coordinator's tables, and the per-partition open
//! and aborted transactions (see `migrations/*/0013_transactions.sql`).
//!
//! Transactional ids are bound as bytes: a client may send NUL, which
//! PostgreSQL's TEXT cannot hold.

use crate::backend::{on_db, Conn, Store};
use crate::error::Result;
use crate::model::PartitionId;
use crate::offsets::CommittedOffset;
use crate::transactions::{AbortedRange, TxnRow};

/// A `kafka_transactions` row as read.
#[derive(sqlx::FromRow)]
struct Row {
    producer_id: i64,
    epoch: i32,
    state: String,
    timeout_ms: i64,
    started_at: Option<i64>,
}

impl Row {
    fn into_txn(self) -> Result<TxnRow> {
        Ok(TxnRow {
            producer_id: self.producer_id,
            epoch: self.epoch as i16,
            state: self.state.parse()?,
            timeout_ms: self.timeout_ms,
            started_at: self.started_at,
        })
    }
}

/// Reads a transactional id's row for a change, taking its row lock (an
/// UPDATE locks on PostgreSQL; SQLite's writer is alone anyway).
pub(crate) async fn lock(conn: &mut Conn<'_>, tid: &str, now_ms: i64) -> Result<Option<TxnRow>> {
    let row: Option<Row> = on_db!(conn, c => sqlx::query_as(
        "UPDATE kafka_transactions SET updated_at = $2 WHERE transactional_id = $1 \
         RETURNING producer_id, epoch, state, timeout_ms, started_at",
    )
    .bind(tid.as_bytes())
    .bind(now_ms)
    .fetch_optional(&mut **c)
    .await?);
    row.map(Row::into_txn).transpose()
}

/// Reads a transactional id's row.
pub(crate) async fn get(store: &Store, tid: &str) -> Result<Option<TxnRow>> {
    let row: Option<Row> = on_db!(store.reader(), pool => sqlx::query_as(
        "SELECT producer_id, epoch, state, timeout_ms, started_at FROM kafka_transactions \
         WHERE transactional_id = $1",
    )
    .bind(tid.as_bytes())
    .fetch_optional(pool)
    .await?);
    row.map(Row::into_txn).transpose()
}

/// Writes a transactional id's row.
pub(crate) async fn put(conn: &mut Conn<'_>, tid: &str, row: &TxnRow, now_ms: i64) -> Result<()> {
    on_db!(conn, c => { sqlx::query(
        "INSERT INTO kafka_transactions (transactional_id, producer_id, epoch, state, timeout_ms, \
         started_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7) \
         ON CONFLICT (transactional_id) DO UPDATE SET producer_id = excluded.producer_id, \
         epoch = excluded.epoch, state = excluded.state, timeout_ms = excluded.timeout_ms, \
         started_at = excluded.started_at, updated_at = excluded.updated_at",
    )
    .bind(tid.as_bytes())
    .bind(row.producer_id)
    .bind(i32::from(row.epoch))
    .bind(row.state.as_str())
    .bind(row.timeout_ms)
    .bind(row.started_at)
    .bind(now_ms)
    .execute(&mut **c)
    .await?; });
    Ok(())
}

/// Adds partitions to a transaction (those already in it stay).
pub(crate) async fn add_partitions(
    conn: &mut Conn<'_>,
    tid: &str,
    partitions: &[PartitionId],
) -> Result<()> {
    for p in partitions {
        on_db!(conn, c => { sqlx::query(
            "INSERT INTO kafka_txn_partitions (transactional_id, partition_id) VALUES ($1, $2) \
             ON CONFLICT DO NOTHING",
        )
        .bind(tid.as_bytes())
        .bind(p)
        .execute(&mut **c)
        .await?; });
    }
    Ok(())
}

/// Which of `partitions` are in the transaction.
pub(crate) async fn holds_partitions(
    conn: &mut Conn<'_>,
    tid: &str,
    partitions: &[PartitionId],
) -> Result<Vec<bool>> {
    let held: Vec<PartitionId> = on_db!(conn, c => sqlx::query_scalar(
        "SELECT partition_id FROM kafka_txn_partitions WHERE transactional_id = $1",
    )
    .bind(tid.as_bytes())
    .fetch_all(&mut **c)
    .await?);
    Ok(partitions.iter().map(|p| held.contains(p)).collect())
}

/// Adds a consumer group to a transaction.
pub(crate) async fn add_group(conn: &mut Conn<'_>, tid: &str, group: &str) -> Result<()> {
    on_db!(conn, c => { sqlx::query(
        "INSERT INTO kafka_txn_groups (transactional_id, consumer_group) VALUES ($1, $2) \
         ON CONFLICT DO NOTHING",
    )
    .bind(tid.as_bytes())
    .bind(group)
    .execute(&mut **c)
    .await?; });
    Ok(())
}

/// Stores offsets committed inside a transaction, pending its end.
pub(crate) async fn stage_offsets(
    conn: &mut Conn<'_>,
    tid: &str,
    group: &str,
    commits: &[(PartitionId, CommittedOffset)],
) -> Result<()> {
    for (partition_id, o) in commits {
        on_db!(conn, c => { sqlx::query(
            "INSERT INTO kafka_txn_offsets (transactional_id, consumer_group, partition_id, \
             committed_offset, metadata, leader_epoch) VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (transactional_id, consumer_group, partition_id) DO UPDATE SET \
             committed_offset = excluded.committed_offset, metadata = excluded.metadata, \
             leader_epoch = excluded.leader_epoch",
        )
        .bind(tid.as_bytes())
        .bind(group)
        .bind(partition_id)
        .bind(o.offset)
        .bind(o.metadata.as_deref().map(str::as_bytes))
        .bind(o.leader_epoch)
        .execute(&mut **c)
        .await?; });
    }
    Ok(())
}

/// A staged offset of a transaction with its group, topic and Kafka index.
#[derive(sqlx::FromRow)]
pub(crate) struct StagedOffset {
    pub consumer_group: String,
    pub topic: String,
    pub kafka_index: i32,
    pub committed_offset: i64,
    pub metadata: Option<Vec<u8>>,
    pub leader_epoch: Option<i32>,
}

/// The offsets a transaction staged, with their groups and partitions.
pub(crate) async fn staged_offsets(conn: &mut Conn<'_>, tid: &str) -> Result<Vec<StagedOffset>> {
    Ok(on_db!(conn, c => sqlx::query_as(
        "SELECT o.consumer_group, q.name AS topic, p.kafka_index, o.committed_offset, o.metadata, \
         o.leader_epoch FROM kafka_txn_offsets o JOIN partitions p ON p.id = o.partition_id \
         JOIN queues q ON q.id = p.queue_id WHERE o.transactional_id = $1 \
         ORDER BY o.consumer_group, q.name, p.kafka_index",
    )
    .bind(tid.as_bytes())
    .fetch_all(&mut **c)
    .await?))
}

/// The partitions of a transaction with their queues' names.
pub(crate) async fn partitions(
    conn: &mut Conn<'_>,
    tid: &str,
) -> Result<Vec<(PartitionId, String)>> {
    Ok(on_db!(conn, c => sqlx::query_as(
        "SELECT t.partition_id, q.name FROM kafka_txn_partitions t \
         JOIN partitions p ON p.id = t.partition_id JOIN queues q ON q.id = p.queue_id \
         WHERE t.transactional_id = $1 ORDER BY t.partition_id",
    )
    .bind(tid.as_bytes())
    .fetch_all(&mut **c)
    .await?))
}

/// Moves a committing transaction's offsets to the groups' positions.
pub(crate) async fn publish_offsets(conn: &mut Conn<'_>, tid: &str, now_ms: i64) -> Result<()> {
    on_db!(conn, c => { sqlx::query(
        "INSERT INTO consumer_cursors (partition_id, consumer_group, committed_offset, metadata, \
         leader_epoch, retry_count, created_at, updated_at) \
         SELECT partition_id, consumer_group, committed_offset, metadata, leader_epoch, 0, $2, $2 \
         FROM kafka_txn_offsets WHERE transactional_id = $1 \
         ON CONFLICT (partition_id, consumer_group) DO UPDATE SET \
         committed_offset = excluded.committed_offset, metadata = excluded.metadata, \
         leader_epoch = excluded.leader_epoch, retry_count = 0, updated_at = excluded.updated_at",
    )
    .bind(tid.as_bytes())
    .bind(now_ms)
    .execute(&mut **c)
    .await?; });
    Ok(())
}

/// Forgets what an ended transaction held: partitions, groups, offsets.
pub(crate) async fn clear(conn: &mut Conn<'_>, tid: &str) -> Result<()> {
    for table in [
        "kafka_txn_partitions",
        "kafka_txn_groups",
        "kafka_txn_offsets",
    ] {
        let sql = format!("DELETE FROM {table} WHERE transactional_id = $1");
        on_db!(conn, c => { sqlx::query(sqlx::AssertSqlSafe(sql)).bind(tid.as_bytes()).execute(&mut **c).await?; });
    }
    Ok(())
}

/// The (topic, Kafka partition) pairs where an ongoing transaction holds
/// offsets of `group` (OffsetFetch's `require_stable`).
pub(crate) async fn pending_offsets(store: &Store, group: &str) -> Result<Vec<(String, i32)>> {
    Ok(on_db!(store.reader(), pool => sqlx::query_as(
        "SELECT DISTINCT q.name, p.kafka_index FROM kafka_txn_offsets o \
         JOIN partitions p ON p.id = o.partition_id JOIN queues q ON q.id = p.queue_id \
         WHERE o.consumer_group = $1",
    )
    .bind(group)
    .fetch_all(pool)
    .await?))
}

/// Where a transactional batch of `producer_id` at `epoch` may go: its
/// transaction's current epoch, state, and whether `partition_id` was added.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct Admission {
    pub epoch: i32,
    pub state: String,
    pub added: bool,
}

/// See [`Admission`]; `None` when no transactional id has this producer.
pub(crate) async fn admission(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
    producer_id: i64,
) -> Result<Option<Admission>> {
    Ok(on_db!(conn, c => sqlx::query_as(
        "SELECT t.epoch, t.state, EXISTS (SELECT 1 FROM kafka_txn_partitions p \
         WHERE p.transactional_id = t.transactional_id AND p.partition_id = $2) AS added \
         FROM kafka_transactions t WHERE t.producer_id = $1",
    )
    .bind(producer_id)
    .bind(partition_id)
    .fetch_optional(&mut **c)
    .await?))
}

/// Notes the first offset of each (partition, producer) transaction just
/// appended to; a transaction already open keeps its first offset.
pub(crate) async fn open(conn: &mut Conn<'_>, opened: &[(PartitionId, i64, i64)]) -> Result<()> {
    for (partition_id, producer_id, first_offset) in opened {
        on_db!(conn, c => { sqlx::query(
            "INSERT INTO kafka_open_txns (partition_id, producer_id, first_offset) \
             VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
        )
        .bind(partition_id)
        .bind(producer_id)
        .bind(first_offset)
        .execute(&mut **c)
        .await?; });
    }
    Ok(())
}

/// Closes a producer's open transaction on a partition whose marker went
/// to `marker_offset`; an abort is remembered for read_committed readers.
pub(crate) async fn close(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
    producer_id: i64,
    marker_offset: i64,
    aborted: bool,
) -> Result<()> {
    let first: Option<i64> = on_db!(conn, c => sqlx::query_scalar(
        "DELETE FROM kafka_open_txns WHERE partition_id = $1 AND producer_id = $2 \
         RETURNING first_offset",
    )
    .bind(partition_id)
    .bind(producer_id)
    .fetch_optional(&mut **c)
    .await?);
    if let (Some(first), true) = (first, aborted) {
        on_db!(conn, c => { sqlx::query(
            "INSERT INTO kafka_aborted_txns (partition_id, last_offset, producer_id, first_offset) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(partition_id)
        .bind(marker_offset)
        .bind(producer_id)
        .bind(first)
        .execute(&mut **c)
        .await?; });
    }
    Ok(())
}

/// The aborted transactions of a partition that overlap `from..to`,
/// oldest first (on a reader's connection, or inside a pop or an ack).
pub(crate) async fn aborted(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
    from: i64,
    to: i64,
) -> Result<Vec<AbortedRange>> {
    Ok(on_db!(conn, c => sqlx::query_as(
        "SELECT producer_id, first_offset, last_offset FROM kafka_aborted_txns \
         WHERE partition_id = $1 AND last_offset >= $2 AND first_offset < $3 \
         ORDER BY first_offset",
    )
    .bind(partition_id)
    .bind(from)
    .bind(to)
    .fetch_all(&mut **c)
    .await?))
}

/// Forgets the aborted transaction whose abort marker was at `last_offset`.
pub(crate) async fn forget_aborted(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
    last_offset: i64,
) -> Result<()> {
    on_db!(conn, c => { sqlx::query(
        "DELETE FROM kafka_aborted_txns WHERE partition_id = $1 AND last_offset = $2",
    )
    .bind(partition_id)
    .bind(last_offset)
    .execute(&mut **c)
    .await?; });
    Ok(())
}

/// Forgets the aborted transactions whose abort marker lies below
/// `log_start`: retention deleted their records.
pub(crate) async fn forget_aborted_below(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
    log_start: i64,
) -> Result<()> {
    on_db!(conn, c => { sqlx::query(
        "DELETE FROM kafka_aborted_txns WHERE partition_id = $1 AND last_offset < $2",
    )
    .bind(partition_id)
    .bind(log_start)
    .execute(&mut **c)
    .await?; });
    Ok(())
}

/// A `kafka_transactions` row with its id.
#[derive(sqlx::FromRow)]
struct NamedRow {
    transactional_id: Vec<u8>,
    #[sqlx(flatten)]
    row: Row,
}

/// Every transactional id with its state, by id.
pub(crate) async fn list(store: &Store) -> Result<Vec<(String, TxnRow)>> {
    let rows: Vec<NamedRow> = on_db!(store.reader(), pool => sqlx::query_as(
        "SELECT transactional_id, producer_id, epoch, state, timeout_ms, started_at \
         FROM kafka_transactions ORDER BY transactional_id",
    )
    .fetch_all(pool)
    .await?);
    rows.into_iter()
        .map(|r| {
            // Ids arrive as client strings; a NUL survives, other bytes
            // were UTF-8 when they came.
            let id = String::from_utf8_lossy(&r.transactional_id).into_owned();
            Ok((id, r.row.into_txn()?))
        })
        .collect()
}

/// The (topic, Kafka partition) pairs of a transaction, in topic order.
pub(crate) async fn topic_partitions(store: &Store, tid: &str) -> Result<Vec<(String, i32)>> {
    Ok(on_db!(store.reader(), pool => sqlx::query_as(
        "SELECT q.name, p.kafka_index FROM kafka_txn_partitions t \
         JOIN partitions p ON p.id = t.partition_id JOIN queues q ON q.id = p.queue_id \
         WHERE t.transactional_id = $1 ORDER BY q.name, p.kafka_index",
    )
    .bind(tid.as_bytes())
    .fetch_all(pool)
    .await?))
}

/// Up to `limit` transactional ids whose ongoing transaction started more
/// than its timeout before `now_ms`, oldest first.
pub(crate) async fn expired(store: &Store, now_ms: i64, limit: i64) -> Result<Vec<String>> {
    let ids: Vec<Vec<u8>> = on_db!(store.reader(), pool => sqlx::query_scalar(
        "SELECT transactional_id FROM kafka_transactions \
         WHERE state = 'Ongoing' AND started_at + timeout_ms < $1 ORDER BY started_at LIMIT $2",
    )
    .bind(now_ms)
    .bind(limit)
    .fetch_all(pool)
    .await?);
    // Ids were stored from Rust strings: always UTF-8.
    Ok(ids
        .into_iter()
        .filter_map(|id| String::from_utf8(id).ok())
        .collect())
}
