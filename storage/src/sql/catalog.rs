//! The catalog statements (queues and partitions), the same on both backends.

/// Expands to the catalog methods of a store type that has a
/// `begin_write()` transaction and a `reader()` pool. `$lock` is the row-lock clause of the
/// backend (`FOR UPDATE`, or nothing on SQLite, whose single writer already
/// serialises).
macro_rules! catalog_statements {
    ($store:ty, $lock:literal) => {
        impl $store {
            /// Creates the queue or replaces all its options, and makes sure
            /// its `Default` partition exists. Returns the queue id.
            pub(crate) async fn configure(
                &self,
                name: &str,
                options: &$crate::options::QueueOptions,
                now_ms: i64,
            ) -> $crate::error::Result<i64> {
                let json = serde_json::to_string(options)
                    .map_err(|e| $crate::StorageError::Corrupt(e.to_string()))?;
                let mut tx = self.begin_write().await?;
                let (queue_id,): (i64,) = sqlx::query_as(
                    "INSERT INTO queues (name, options, dedup_window_seconds, created_at, topic_id) \
                     VALUES ($1, $2, $3, $4, $5) \
                     ON CONFLICT (name) DO UPDATE SET options = excluded.options, \
                     dedup_window_seconds = excluded.dedup_window_seconds RETURNING id",
                )
                .bind(name)
                .bind(&json)
                .bind(options.dedup_window_seconds)
                .bind(now_ms)
                .bind(uuid::Uuid::new_v4().to_string())
                .fetch_one(&mut *tx)
                .await?;
                Self::partition_in(&mut tx, queue_id, $crate::model::DEFAULT_PARTITION, now_ms).await?;
                tx.commit().await?;
                Ok(queue_id)
            }

            /// Creates a queue with the given partitions (Kafka indexes in
            /// order) in one transaction; `false` if the queue already exists.
            pub(crate) async fn create_queue(
                &self,
                name: &str,
                options: &$crate::options::QueueOptions,
                partitions: &[String],
                now_ms: i64,
            ) -> $crate::error::Result<bool> {
                let json = serde_json::to_string(options)
                    .map_err(|e| $crate::StorageError::Corrupt(e.to_string()))?;
                let mut tx = self.begin_write().await?;
                let created: Option<(i64,)> = sqlx::query_as(
                    "INSERT INTO queues (name, options, dedup_window_seconds, created_at, topic_id) \
                     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO NOTHING RETURNING id",
                )
                .bind(name)
                .bind(&json)
                .bind(options.dedup_window_seconds)
                .bind(now_ms)
                .bind(uuid::Uuid::new_v4().to_string())
                .fetch_optional(&mut *tx)
                .await?;
                let Some((queue_id,)) = created else { return Ok(false) };
                for partition in partitions {
                    Self::partition_in(&mut tx, queue_id, partition, now_ms).await?;
                }
                tx.commit().await?;
                Ok(true)
            }

            /// The id of the partition, creating the queue (with
            /// `options_if_new`) and the partition when missing.
            pub(crate) async fn ensure_partition(
                &self,
                queue: &str,
                partition: &str,
                options_if_new: &$crate::options::QueueOptions,
                now_ms: i64,
            ) -> $crate::error::Result<i64> {
                let json = serde_json::to_string(options_if_new)
                    .map_err(|e| $crate::StorageError::Corrupt(e.to_string()))?;
                let mut tx = self.begin_write().await?;
                sqlx::query(
                    "INSERT INTO queues (name, options, dedup_window_seconds, created_at, topic_id) \
                     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO NOTHING",
                )
                .bind(queue)
                .bind(&json)
                .bind(options_if_new.dedup_window_seconds)
                .bind(now_ms)
                .bind(uuid::Uuid::new_v4().to_string())
                .execute(&mut *tx)
                .await?;
                // The queue row lock serialises the choice of the next Kafka index.
                let (queue_id,): (i64,) =
                    sqlx::query_as(concat!("SELECT id FROM queues WHERE name = $1 ", $lock))
                        .bind(queue)
                        .fetch_one(&mut *tx)
                        .await?;
                let id = Self::partition_in(&mut tx, queue_id, partition, now_ms).await?;
                tx.commit().await?;
                Ok(id)
            }

            async fn partition_in(
                tx: &mut sqlx::Transaction<'_, <$store as $crate::sql::Backend>::Db>,
                queue_id: i64,
                partition: &str,
                now_ms: i64,
            ) -> $crate::error::Result<i64> {
                let existing: Option<(i64,)> =
                    sqlx::query_as("SELECT id FROM partitions WHERE queue_id = $1 AND name = $2")
                        .bind(queue_id)
                        .bind(partition)
                        .fetch_optional(&mut **tx)
                        .await?;
                if let Some((id,)) = existing {
                    return Ok(id);
                }
                let (id,): (i64,) = sqlx::query_as(
                    "INSERT INTO partitions (queue_id, name, kafka_index, created_at) \
                     SELECT $1, $2, COALESCE(MAX(kafka_index) + 1, 0), $3 \
                     FROM partitions WHERE queue_id = $1 RETURNING id",
                )
                .bind(queue_id)
                .bind(partition)
                .bind(now_ms)
                .fetch_one(&mut **tx)
                .await?;
                Ok(id)
            }

            /// The queue with its partitions, if it exists.
            pub(crate) async fn queue(
                &self,
                name: &str,
            ) -> $crate::error::Result<Option<$crate::model::QueueInfo>> {
                let row: Option<QueueRow> = sqlx::query_as(
                    "SELECT id, name, options, created_at, topic_id FROM queues WHERE name = $1",
                )
                .bind(name)
                .fetch_optional(self.reader())
                .await?;
                let Some(row) = row else { return Ok(None) };
                let partitions: Vec<PartitionRow> = sqlx::query_as(concat!(
                    $crate::sql::partition_columns!(),
                    " WHERE queue_id = $1 ORDER BY kafka_index"
                ))
                .bind(row.0)
                .fetch_all(self.reader())
                .await?;
                Ok(Some($crate::sql::queue_info(row, partitions)?))
            }

            /// Every queue with its partitions, by name.
            pub(crate) async fn queues(&self) -> $crate::error::Result<Vec<$crate::model::QueueInfo>> {
                let rows: Vec<QueueRow> = sqlx::query_as(
                    "SELECT id, name, options, created_at, topic_id FROM queues ORDER BY name",
                )
                .fetch_all(self.reader())
                .await?;
                let partitions: Vec<PartitionRow> = sqlx::query_as(concat!(
                    $crate::sql::partition_columns!(),
                    " ORDER BY queue_id, kafka_index"
                ))
                .fetch_all(self.reader())
                .await?;
                $crate::sql::queue_infos(rows, partitions)
            }

            /// Deletes the queue with its partitions, messages and index.
            /// Returns whether it existed.
            pub(crate) async fn delete_queue(&self, name: &str) -> $crate::error::Result<bool> {
                let mut tx = self.begin_write().await?;
                let row: Option<(i64,)> =
                    sqlx::query_as(concat!("SELECT id FROM queues WHERE name = $1 ", $lock))
                        .bind(name)
                        .fetch_optional(&mut *tx)
                        .await?;
                let Some((queue_id,)) = row else { return Ok(false) };
                for table in [
                    "txn_hashes",
                    "segments",
                    "consumer_cursors",
                    "consumer_leases",
                    "dead_letters",
                    "producer_state",
                ] {
                    sqlx::query(&format!(
                        "DELETE FROM {table} WHERE partition_id IN \
                         (SELECT id FROM partitions WHERE queue_id = $1)"
                    ))
                    .bind(queue_id)
                    .execute(&mut *tx)
                    .await?;
                }
                sqlx::query("DELETE FROM consumer_subscriptions WHERE queue_id = $1")
                    .bind(queue_id)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query("DELETE FROM partitions WHERE queue_id = $1")
                    .bind(queue_id)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query("DELETE FROM queues WHERE id = $1")
                    .bind(queue_id)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(true)
            }



            /// Checks that the database answers.
            pub(crate) async fn ping(&self) -> $crate::error::Result<()> {
                sqlx::query("SELECT 1").execute(self.reader()).await?;
                Ok(())
            }

        }
    };
}

pub(crate) use catalog_statements;

/// The select list of a [`PartitionRow`], including the creation time of the
/// oldest stored segment.
macro_rules! partition_columns {
    () => {
        "SELECT p.queue_id, p.id, p.name, p.kafka_index, p.created_at, p.next_offset, \
         p.log_start, p.last_created_at, (SELECT s.created_at FROM segments s \
         WHERE s.partition_id = p.id ORDER BY s.base_offset LIMIT 1) AS first_created_at \
         FROM partitions p"
    };
}

pub(crate) use partition_columns;

use crate::error::{Result, StorageError};
use crate::model::{PartitionInfo, QueueInfo};

/// A `partitions` row as the shared statements select it.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct PartitionRow {
    queue_id: i64,
    id: i64,
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

/// A `queues` row: id, name, options (JSON), creation time, topic id.
pub(crate) type QueueRow = (i64, String, String, i64, String);

pub(crate) fn queue_info(
    (id, name, options, created_at_ms, topic_id): QueueRow,
    partitions: Vec<PartitionRow>,
) -> Result<QueueInfo> {
    Ok(QueueInfo {
        id,
        topic_id: uuid::Uuid::parse_str(&topic_id)
            .map_err(|e| StorageError::Corrupt(format!("topic id: {e}")))?,
        name,
        options: serde_json::from_str(&options)
            .map_err(|e| StorageError::Corrupt(format!("queue options: {e}")))?,
        created_at_ms,
        partitions: partitions.into_iter().map(Into::into).collect(),
    })
}

pub(crate) fn queue_infos(
    rows: Vec<QueueRow>,
    partitions: Vec<PartitionRow>,
) -> Result<Vec<QueueInfo>> {
    let mut by_queue: std::collections::HashMap<i64, Vec<PartitionRow>> = Default::default();
    for p in partitions {
        by_queue.entry(p.queue_id).or_default().push(p);
    }
    rows.into_iter()
        .map(|row| {
            let parts = by_queue.remove(&row.0).unwrap_or_default();
            queue_info(row, parts)
        })
        .collect()
}
