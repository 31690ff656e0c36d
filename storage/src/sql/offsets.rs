//! Committed offsets as Kafka groups see them: the `consumer_cursors` rows
//! that native consumer groups move too.

use crate::backend::{on_db, Conn, Store};
use crate::consume::QUEUE_MODE_GROUP;
use crate::error::Result;
use crate::model::PartitionId;
use crate::offsets::{CommittedOffset, TopicOffset};

/// A committed offset with the topic and Kafka partition it belongs to.
#[derive(sqlx::FromRow)]
struct OffsetRow {
    topic: String,
    kafka_index: i32,
    committed_offset: i64,
    /// UTF-8 bytes: PostgreSQL's TEXT cannot hold the NUL a client may send.
    metadata: Option<Vec<u8>>,
    leader_epoch: Option<i32>,
}

/// Stores committed offsets of `group`, (partition id, position) pairs,
/// inside `conn`.
pub(crate) async fn commit(
    conn: &mut Conn<'_>,
    group: &str,
    commits: &[(PartitionId, CommittedOffset)],
    now_ms: i64,
) -> Result<()> {
    for (partition_id, c) in commits {
        on_db!(conn, conn => { sqlx::query(
            "INSERT INTO consumer_cursors (partition_id, consumer_group, committed_offset, metadata, \
             leader_epoch, retry_count, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, 0, $6, $6) \
             ON CONFLICT (partition_id, consumer_group) DO UPDATE SET \
             committed_offset = excluded.committed_offset, metadata = excluded.metadata, \
             leader_epoch = excluded.leader_epoch, retry_count = 0, updated_at = excluded.updated_at",
        )
        .bind(partition_id)
        .bind(group)
        .bind(c.offset)
        .bind(c.metadata.as_deref().map(str::as_bytes))
        .bind(c.leader_epoch)
        .bind(now_ms)
        .execute(&mut **conn)
        .await?; });
    }
    Ok(())
}

/// The topic and Kafka index of a partition, inside `conn`; `None` when
/// it no longer exists.
pub(crate) async fn topic_partition(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
) -> Result<Option<(String, i32)>> {
    Ok(on_db!(conn, c => sqlx::query_as(
        "SELECT q.name, p.kafka_index FROM partitions p JOIN queues q ON q.id = p.queue_id \
         WHERE p.id = $1",
    )
    .bind(partition_id)
    .fetch_optional(&mut **c)
    .await?))
}

/// Every committed offset of `group`, by topic and Kafka partition.
pub(crate) async fn of_group(store: &Store, group: &str) -> Result<Vec<TopicOffset>> {
    let rows: Vec<OffsetRow> = on_db!(store.reader(), pool => sqlx::query_as(
        "SELECT q.name AS topic, p.kafka_index, c.committed_offset, c.metadata, c.leader_epoch \
         FROM consumer_cursors c JOIN partitions p ON p.id = c.partition_id \
         JOIN queues q ON q.id = p.queue_id WHERE c.consumer_group = $1 \
         ORDER BY q.name, p.kafka_index",
    )
    .bind(group)
    .fetch_all(pool)
    .await?);
    Ok(rows
        .into_iter()
        .map(|r| TopicOffset {
            topic: r.topic,
            partition: r.kafka_index,
            committed: CommittedOffset {
                offset: r.committed_offset,
                metadata: super::text(r.metadata),
                leader_epoch: r.leader_epoch,
            },
        })
        .collect())
}

/// Every group with a stored position, but the queue-mode one.
pub(crate) async fn group_names(store: &Store) -> Result<Vec<String>> {
    Ok(on_db!(store.reader(), pool => sqlx::query_scalar(
        "SELECT DISTINCT consumer_group FROM consumer_cursors \
         WHERE consumer_group <> $1 ORDER BY consumer_group",
    )
    .bind(QUEUE_MODE_GROUP)
    .fetch_all(pool)
    .await?))
}

/// Deletes the positions of `group` on the given partitions; returns how
/// many there were.
pub(crate) async fn delete(
    store: &Store,
    group: &str,
    partition_ids: &[PartitionId],
) -> Result<u64> {
    let mut tx = store.begin_write().await?;
    let mut deleted = 0;
    for partition_id in partition_ids {
        deleted += on_db!(tx.conn(), conn => sqlx::query(
            "DELETE FROM consumer_cursors WHERE partition_id = $1 AND consumer_group = $2",
        )
        .bind(partition_id)
        .bind(group)
        .execute(conn)
        .await?
        .rows_affected());
    }
    tx.commit().await?;
    Ok(deleted)
}
