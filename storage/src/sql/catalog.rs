//! The catalog: queues and their partitions.

use std::collections::HashMap;

use crate::backend::{on_db, Conn, Store};
use crate::error::{Result, StorageError};
use crate::log::LogBounds;
use crate::model::PartitionId;
use crate::model::{PartitionInfo, QueueInfo, QueueSummary, DEFAULT_PARTITION};
use crate::options::QueueOptions;

/// The select list of a [`PartitionRow`], including the creation time of the
/// oldest stored segment.
const PARTITION_COLUMNS: &str = "SELECT p.queue_id, p.id, p.name, p.kafka_index, p.created_at, \
     p.next_offset, p.log_start, p.last_created_at, (SELECT s.created_at FROM segments s \
     WHERE s.partition_id = p.id ORDER BY s.base_offset LIMIT 1) AS first_created_at \
     FROM partitions p";

/// A `partitions` row as [`PARTITION_COLUMNS`] selects it.
#[derive(Debug, sqlx::FromRow)]
struct PartitionRow {
    queue_id: i64,
    id: PartitionId,
    name: String,
    kafka_index: i32,
    created_at: i64,
    next_offset: i64,
    log_start: i64,
    last_created_at: i64,
    first_created_at: Option<i64>,
}

impl From<PartitionRow> for PartitionInfo {
    fn from(r: PartitionRow) -> Self {
        Self {
            id: r.id,
            name: r.name,
            kafka_index: r.kafka_index,
            created_at_ms: r.created_at,
            next_offset: r.next_offset,
            log_start: r.log_start,
            last_created_at_ms: r.last_created_at,
            first_created_at_ms: r.first_created_at,
        }
    }
}

/// The background work a queue may need, as a flag of its row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lifecycle {
    /// Retention: age, size, consumption by every group, eviction.
    Retained,
    /// Compaction (`cleanup.policy=compact`).
    Compacted,
}

impl Lifecycle {
    /// Whether it applies to a queue with `options`.
    fn applies(self, options: &QueueOptions) -> bool {
        match self {
            Self::Retained => crate::retention::RetentionPolicy::of(options).is_some(),
            Self::Compacted => crate::retention::compacted(options),
        }
    }

    /// The column that records it.
    fn column(self) -> &'static str {
        match self {
            Self::Retained => "retained",
            Self::Compacted => "compacted",
        }
    }
}

/// A `queues` row.
#[derive(Debug, sqlx::FromRow)]
struct QueueRow {
    id: i64,
    name: String,
    /// The options as JSON.
    options: String,
    created_at: i64,
    topic_id: String,
}

impl QueueRow {
    fn into_info(self, partitions: Vec<PartitionRow>) -> Result<QueueInfo> {
        Ok(QueueInfo {
            id: self.id,
            topic_id: uuid::Uuid::parse_str(&self.topic_id)
                .map_err(|e| StorageError::Corrupt(format!("topic id: {e}")))?,
            options: self.options()?,
            name: self.name,
            created_at_ms: self.created_at,
            partitions: partitions.into_iter().map(Into::into).collect(),
        })
    }

    fn options(&self) -> Result<QueueOptions> {
        serde_json::from_str(&self.options)
            .map_err(|e| StorageError::Corrupt(format!("queue options: {e}")))
    }
}

/// A `queues` row with its partitions counted and their stored messages
/// summed, as [`summaries`] selects it.
#[derive(Debug, sqlx::FromRow)]
struct SummaryRow {
    #[sqlx(flatten)]
    queue: QueueRow,
    partitions: i64,
    stored: i64,
}

/// How a queue row is inserted when the name is already taken.
enum OnConflict {
    /// Replace the options (`configure`).
    Replace,
    /// Keep the existing queue.
    Keep,
}

/// Inserts the queue row; returns its id, or `None` when it existed and
/// `on_conflict` kept it.
async fn insert_queue(
    conn: &mut Conn<'_>,
    name: &str,
    options: &QueueOptions,
    now_ms: i64,
    on_conflict: OnConflict,
) -> Result<Option<i64>> {
    let json = serde_json::to_string(options).map_err(|e| StorageError::Corrupt(e.to_string()))?;
    let conflict = match on_conflict {
        OnConflict::Replace => {
            "DO UPDATE SET options = excluded.options, \
             dedup_window_seconds = excluded.dedup_window_seconds, \
             sidecar_seconds = excluded.sidecar_seconds, \
             encryption_enabled = excluded.encryption_enabled, \
             retained = excluded.retained, compacted = excluded.compacted"
        }
        OnConflict::Keep => "DO NOTHING",
    };
    let sql = format!(
        "INSERT INTO queues (name, options, dedup_window_seconds, sidecar_seconds, created_at, \
         topic_id, encryption_enabled, retained, compacted) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
         ON CONFLICT (name) {conflict} RETURNING id"
    );
    let id: Option<i64> = on_db!(conn, c => sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .bind(name)
        .bind(&json)
        .bind(options.dedup_window_seconds)
        .bind(crate::retention::sidecar_seconds(options))
        .bind(now_ms)
        .bind(uuid::Uuid::new_v4().to_string())
        .bind(options.encryption_enabled)
        .bind(Lifecycle::Retained.applies(options))
        .bind(Lifecycle::Compacted.applies(options))
        .fetch_optional(&mut **c)
        .await?);
    if id.is_some() {
        // A topic mirrored before it was (re)created here is refused to
        // local producers from its first append.
        crate::sql::mirror::mark_queue(conn, name).await?;
    }
    Ok(id)
}

/// Creates the queue or replaces all its options, and makes sure its
/// `Default` partition exists. Returns the queue id.
pub(crate) async fn configure(
    store: &Store,
    name: &str,
    options: &QueueOptions,
    now_ms: i64,
) -> Result<i64> {
    let mut tx = store.begin_write().await?;
    let mut conn = tx.conn();
    let queue_id = insert_queue(&mut conn, name, options, now_ms, OnConflict::Replace)
        .await?
        .ok_or(StorageError::CommitFailed)?;
    partition_in(&mut conn, queue_id, DEFAULT_PARTITION, now_ms).await?;
    tx.commit().await?;
    Ok(queue_id)
}

/// The id and stored options of queue `name`, its row locked until the
/// transaction ends ([`Conn::row_lock`]); `None` when there is no such queue.
pub(crate) async fn options_for_update(
    conn: &mut Conn<'_>,
    name: &str,
) -> Result<Option<(i64, QueueOptions)>> {
    /// The row [`options_for_update`] reads.
    #[derive(sqlx::FromRow)]
    struct OptionsRow {
        id: i64,
        options: String,
    }
    let sql = format!(
        "SELECT id, options FROM queues WHERE name = $1 {}",
        conn.row_lock()
    );
    let row: Option<OptionsRow> = on_db!(conn, c => sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(name)
        .fetch_optional(&mut **c)
        .await?);
    row.map(|row| {
        serde_json::from_str(&row.options)
            .map(|options| (row.id, options))
            .map_err(|e| StorageError::Corrupt(format!("queue options: {e}")))
    })
    .transpose()
}

/// Stores the options of queue `queue_id`, the columns copied out of them
/// (dedup window, sidecar horizon, encryption) with them.
pub(crate) async fn set_options(
    conn: &mut Conn<'_>,
    queue_id: i64,
    options: &QueueOptions,
) -> Result<()> {
    let json = serde_json::to_string(options).map_err(|e| StorageError::Corrupt(e.to_string()))?;
    on_db!(conn, c => sqlx::query(
        "UPDATE queues SET options = $1, dedup_window_seconds = $2, sidecar_seconds = $3, \
         encryption_enabled = $4, retained = $5, compacted = $6 WHERE id = $7",
    )
    .bind(&json)
    .bind(options.dedup_window_seconds)
    .bind(crate::retention::sidecar_seconds(options))
    .bind(options.encryption_enabled)
    .bind(Lifecycle::Retained.applies(options))
    .bind(Lifecycle::Compacted.applies(options))
    .bind(queue_id)
    .execute(&mut **c)
    .await
    .map(drop)?);
    Ok(())
}

/// Creates a queue with the given partitions (Kafka indexes in order) in
/// one transaction; `false` if the queue already exists.
pub(crate) async fn create_queue(
    store: &Store,
    name: &str,
    options: &QueueOptions,
    partitions: &[String],
    now_ms: i64,
) -> Result<bool> {
    let mut tx = store.begin_write().await?;
    let mut conn = tx.conn();
    let Some(queue_id) = insert_queue(&mut conn, name, options, now_ms, OnConflict::Keep).await?
    else {
        return Ok(false);
    };
    for partition in partitions {
        partition_in(&mut conn, queue_id, partition, now_ms).await?;
    }
    tx.commit().await?;
    Ok(true)
}

/// The id of the partition, creating the queue (with `options_if_new`) and
/// the partition when missing.
pub(crate) async fn ensure_partition(
    store: &Store,
    queue: &str,
    partition: &str,
    options_if_new: &QueueOptions,
    now_ms: i64,
) -> Result<PartitionId> {
    let mut tx = store.begin_write().await?;
    let mut conn = tx.conn();
    insert_queue(&mut conn, queue, options_if_new, now_ms, OnConflict::Keep).await?;
    // The queue row lock serialises the choice of the next Kafka index.
    let sql = format!("SELECT id FROM queues WHERE name = $1 {}", conn.row_lock());
    let queue_id: i64 = on_db!(&mut conn, c => sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .bind(queue)
        .fetch_one(&mut **c)
        .await?);
    let id = partition_in(&mut conn, queue_id, partition, now_ms).await?;
    tx.commit().await?;
    Ok(id)
}

/// The id of the queue's partition `partition`, created at the next Kafka
/// index when missing.
async fn partition_in(
    conn: &mut Conn<'_>,
    queue_id: i64,
    partition: &str,
    now_ms: i64,
) -> Result<PartitionId> {
    Ok(on_db!(conn, c => {
        let existing: Option<PartitionId> =
            sqlx::query_scalar("SELECT id FROM partitions WHERE queue_id = $1 AND name = $2")
                .bind(queue_id)
                .bind(partition)
                .fetch_optional(&mut **c)
                .await?;
        match existing {
            Some(id) => id,
            None => sqlx::query_scalar(
                "INSERT INTO partitions (queue_id, name, kafka_index, created_at) \
                 SELECT $1, $2, COALESCE(MAX(kafka_index) + 1, 0), $3 \
                 FROM partitions WHERE queue_id = $1 RETURNING id",
            )
            .bind(queue_id)
            .bind(partition)
            .bind(now_ms)
            .fetch_one(&mut **c)
            .await?,
        }
    }))
}

/// The queue with its partitions, if it exists.
pub(crate) async fn queue(store: &Store, name: &str) -> Result<Option<QueueInfo>> {
    on_db!(store.reader(), pool => {
        let row: Option<QueueRow> = sqlx::query_as(
            "SELECT id, name, options, created_at, topic_id FROM queues WHERE name = $1",
        )
        .bind(name)
        .fetch_optional(pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let partitions: Vec<PartitionRow> =
            sqlx::query_as(sqlx::AssertSqlSafe(format!("{PARTITION_COLUMNS} WHERE queue_id = $1 ORDER BY kafka_index")))
                .bind(row.id)
                .fetch_all(pool)
                .await?;
        row.into_info(partitions).map(Some)
    })
}

/// The name of the queue whose Kafka topic id is `topic_id`.
pub(crate) async fn name_of_topic(store: &Store, topic_id: uuid::Uuid) -> Result<Option<String>> {
    Ok(on_db!(store.reader(), pool => sqlx::query_scalar(
        "SELECT name FROM queues WHERE topic_id = $1",
    )
    .bind(topic_id.to_string())
    .fetch_optional(pool)
    .await?))
}

/// Every queue with its partitions, by name.
pub(crate) async fn queues(store: &Store) -> Result<Vec<QueueInfo>> {
    queues_where(store, "TRUE").await
}

/// The queues with their partitions, by name, that `lifecycle` may apply
/// to (a superset: the caller decides from their options).
pub(crate) async fn queues_for(store: &Store, lifecycle: Lifecycle) -> Result<Vec<QueueInfo>> {
    queues_where(store, lifecycle.column()).await
}

/// The queues for which the SQL condition `condition` holds, with their
/// partitions, by name.
async fn queues_where(store: &Store, condition: &str) -> Result<Vec<QueueInfo>> {
    let queues = format!(
        "SELECT id, name, options, created_at, topic_id FROM queues WHERE {condition} \
         ORDER BY name"
    );
    let partitions = format!(
        "{PARTITION_COLUMNS} WHERE p.queue_id IN (SELECT id FROM queues WHERE {condition}) \
         ORDER BY p.queue_id, p.kafka_index"
    );
    let (rows, partitions): (Vec<QueueRow>, Vec<PartitionRow>) = on_db!(store.reader(), pool => (
        sqlx::query_as(sqlx::AssertSqlSafe(queues)).fetch_all(pool).await?,
        sqlx::query_as(sqlx::AssertSqlSafe(partitions)).fetch_all(pool).await?,
    ));
    let mut by_queue: HashMap<i64, Vec<PartitionRow>> = HashMap::new();
    for p in partitions {
        by_queue.entry(p.queue_id).or_default().push(p);
    }
    rows.into_iter()
        .map(|row| {
            let parts = by_queue.remove(&row.id).unwrap_or_default();
            row.into_info(parts)
        })
        .collect()
}

/// Every queue, by name, with its partitions counted and the messages
/// they store summed, as if no group had consumed any: one row per queue,
/// however many partitions (the listing read every partition's row, and
/// decoding them was most of its time).
pub(crate) async fn summaries(store: &Store) -> Result<Vec<QueueSummary>> {
    // CAST: PostgreSQL sums BIGINTs into NUMERIC.
    let rows: Vec<SummaryRow> = on_db!(store.reader(), pool => sqlx::query_as(
        "SELECT q.id, q.name, q.options, q.created_at, q.topic_id, \
         COALESCE(t.partitions, 0) AS partitions, COALESCE(t.stored, 0) AS stored \
         FROM queues q LEFT JOIN (SELECT queue_id, COUNT(*) AS partitions, \
         CAST(SUM(CASE WHEN next_offset > log_start THEN next_offset - log_start ELSE 0 END) \
         AS BIGINT) AS stored FROM partitions GROUP BY queue_id) t ON t.queue_id = q.id \
         ORDER BY q.name",
    )
    .fetch_all(pool)
    .await?);
    rows.into_iter()
        .map(|r| {
            Ok(QueueSummary {
                options: r.queue.options()?,
                id: r.queue.id,
                name: r.queue.name,
                created_at_ms: r.queue.created_at,
                partitions: usize::try_from(r.partitions).unwrap_or(0),
                total: r.stored,
                pending: r.stored,
                processing: 0,
            })
        })
        .collect()
}

/// The last stable offset of the partition `p`: the first offset of its
/// oldest open Kafka transaction, else its high watermark. A primary-key
/// probe of `kafka_open_txns`, which is empty for partitions that never
/// saw a transaction.
pub(crate) const LAST_STABLE: &str = "COALESCE((SELECT MIN(o.first_offset) FROM kafka_open_txns o \
     WHERE o.partition_id = p.id), p.next_offset)";

/// The partition's log start and next offset, if it exists (on a reader's
/// connection, or inside a write that moves them).
pub(crate) async fn bounds(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
) -> Result<Option<LogBounds>> {
    // The stable offset comes in the same statement: every Fetch reads
    // the bounds, and most partitions never see a transaction.
    Ok(
        on_db!(conn, c => sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT log_start, next_offset, {LAST_STABLE} AS last_stable \
         FROM partitions p WHERE id = $1"
    )))
    .bind(partition_id)
    .fetch_optional(&mut **c)
    .await?),
    )
}

/// Deletes the queue with its partitions, messages, positions, leases,
/// dead letters and producer state. Returns whether it existed.
pub(crate) async fn delete_queue(store: &Store, name: &str) -> Result<bool> {
    let mut tx = store.begin_write().await?;
    let mut conn = tx.conn();
    let sql = format!("SELECT id FROM queues WHERE name = $1 {}", conn.row_lock());
    let deleted = on_db!(&mut conn, c => {
        let queue_id: Option<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .bind(name)
            .fetch_optional(&mut **c)
            .await?;
        if let Some(queue_id) = queue_id {
            for table in [
                "txn_hashes",
                "segments",
                "consumer_cursors",
                "consumer_leases",
                "dead_letters",
                "producer_state",
                // Kafka transactions forget the partitions: an ongoing one
                // ends without them, and never publishes offsets to them.
                "kafka_open_txns",
                "kafka_aborted_txns",
                "kafka_txn_partitions",
                "kafka_txn_offsets",
            ] {
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "DELETE FROM {table} WHERE partition_id IN \
                     (SELECT id FROM partitions WHERE queue_id = $1)"
                )))
                .bind(queue_id)
                .execute(&mut **c)
                .await?;
            }
            for statement in [
                // Their pages are many: the dedup upkeep deletes them in steps.
                "UPDATE dedup_runs SET state = 2 WHERE partition_id IN \
                 (SELECT id FROM partitions WHERE queue_id = $1)",
                "DELETE FROM consumer_subscriptions WHERE queue_id = $1",
                "DELETE FROM partitions WHERE queue_id = $1",
                "DELETE FROM queues WHERE id = $1",
            ] {
                sqlx::query(statement)
                    .bind(queue_id)
                    .execute(&mut **c)
                    .await?;
            }
        }
        queue_id.is_some()
    });
    if deleted {
        tx.commit().await?;
    }
    Ok(deleted)
}
