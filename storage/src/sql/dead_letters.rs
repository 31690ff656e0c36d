//! The dead-letter queue: letters filed by acks, listed and looked up.

use crate::backend::{on_db, Conn, Store};
use crate::consume::{DeadLetterQuery, NewDeadLetter};
use crate::error::Result;
use crate::model::PartitionId;

/// The select list of a [`DeadLetterRow`], over `dead_letters d`,
/// `partitions p` and `queues q`.
const COLUMNS: &str = "q.name AS queue, p.name AS partition, d.partition_id, d.consumer_group, \
     d.message_offset, d.error_message, d.retry_count, d.message_created_at, d.failed_at, d.record";

/// A dead letter as stored, with its queue and partition names.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct DeadLetterRow {
    pub queue: String,
    pub partition: String,
    pub partition_id: PartitionId,
    pub consumer_group: String,
    pub message_offset: i64,
    /// UTF-8 bytes (any character, NUL included: see the migrations).
    pub error_message: Option<Vec<u8>>,
    pub retry_count: i64,
    pub message_created_at: i64,
    pub failed_at: i64,
    /// The stored message.
    pub record: Vec<u8>,
}

/// Files a dead letter (again: a later failure of the same message
/// updates its error, retry count and time).
pub(crate) async fn file(conn: &mut Conn<'_>, letter: &NewDeadLetter<'_>) -> Result<()> {
    on_db!(conn, c => {
        sqlx::query(
            "INSERT INTO dead_letters (queue_id, partition_id, consumer_group, message_offset, \
             transaction_id, error_message, retry_count, message_created_at, failed_at, record) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
             ON CONFLICT (partition_id, consumer_group, message_offset) DO UPDATE SET \
             error_message = excluded.error_message, retry_count = excluded.retry_count, \
             failed_at = excluded.failed_at",
        )
        .bind(letter.queue_id)
        .bind(letter.partition_id)
        .bind(letter.group)
        .bind(letter.offset)
        .bind(letter.transaction_id.as_bytes())
        .bind(letter.error.map(str::as_bytes))
        .bind(letter.retry_count)
        .bind(letter.created_at)
        .bind(letter.failed_at)
        .bind(&letter.record)
        .execute(&mut **c)
        .await?;
    });
    Ok(())
}

/// Dead letters per partition of a queue, or of every queue (and
/// optionally of one group): (partition id, count).
pub(crate) async fn counts(
    store: &Store,
    queue_id: Option<i64>,
    group: Option<&str>,
) -> Result<Vec<(PartitionId, i64)>> {
    // Without a queue the whole table is read once (the queue listing); a
    // queue's counts are an index probe.
    let group = group.unwrap_or("");
    Ok(match queue_id {
        Some(queue_id) => on_db!(store.reader(), pool => sqlx::query_as(
            "SELECT partition_id, COUNT(*) FROM dead_letters WHERE queue_id = $1 \
             AND ($2 = '' OR consumer_group = $2) GROUP BY partition_id",
        )
        .bind(queue_id)
        .bind(group)
        .fetch_all(pool)
        .await?),
        None => on_db!(store.reader(), pool => sqlx::query_as(
            "SELECT partition_id, COUNT(*) FROM dead_letters \
             WHERE $1 = '' OR consumer_group = $1 GROUP BY partition_id",
        )
        .bind(group)
        .fetch_all(pool)
        .await?),
    })
}

/// A page of a queue's dead letters, newest first, and how many match.
pub(crate) async fn page(
    store: &Store,
    query: &DeadLetterQuery,
) -> Result<(Vec<DeadLetterRow>, i64)> {
    let filter = "FROM dead_letters d JOIN partitions p ON p.id = d.partition_id \
                  JOIN queues q ON q.id = d.queue_id WHERE q.name = $1 \
                  AND ($2 = '' OR d.consumer_group = $2) AND ($3 = '' OR p.name = $3) \
                  AND d.failed_at >= $4 AND d.failed_at <= $5";
    let count = format!("SELECT COUNT(*) {filter}");
    let list = format!(
        "SELECT {COLUMNS} {filter} ORDER BY d.failed_at DESC, d.id DESC LIMIT $6 OFFSET $7"
    );
    let group = query.group.as_deref().unwrap_or("");
    let partition = query.partition.as_deref().unwrap_or("");
    let from = query.from_ms.unwrap_or(i64::MIN);
    let to = query.to_ms.unwrap_or(i64::MAX);
    Ok(on_db!(store.reader(), pool => {
        let total: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(count))
            .bind(&query.queue)
            .bind(group)
            .bind(partition)
            .bind(from)
            .bind(to)
            .fetch_one(pool)
            .await?;
        let rows = sqlx::query_as(sqlx::AssertSqlSafe(list))
            .bind(&query.queue)
            .bind(group)
            .bind(partition)
            .bind(from)
            .bind(to)
            .bind(query.limit)
            .bind(query.offset)
            .fetch_all(pool)
            .await?;
        (rows, total)
    }))
}

/// The dead letters of a transaction id in a partition.
pub(crate) async fn of_message(
    store: &Store,
    partition_id: PartitionId,
    transaction_id: &str,
) -> Result<Vec<DeadLetterRow>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM dead_letters d JOIN partitions p ON p.id = d.partition_id \
         JOIN queues q ON q.id = d.queue_id \
         WHERE d.partition_id = $1 AND d.transaction_id = $2 ORDER BY d.id"
    );
    Ok(
        on_db!(store.reader(), pool => sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(partition_id)
        .bind(transaction_id.as_bytes())
        .fetch_all(pool)
        .await?),
    )
}
