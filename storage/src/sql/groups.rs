//! Consumer groups as a whole: their positions with lag, their
//! subscriptions, and the admin operations (delete, seek, restart).

use crate::backend::{on_db, Store};
use crate::consume::{GroupPosition, Subscription};
use crate::error::Result;
use crate::model::PartitionId;

/// A position row as [`positions`] selects it.
#[derive(sqlx::FromRow)]
struct PositionRow {
    consumer_group: String,
    queue: String,
    partition: String,
    partition_id: PartitionId,
    committed_offset: i64,
    next_offset: i64,
    log_start: i64,
    retry_count: i64,
    updated_at: i64,
    lease_expires_at: Option<i64>,
    span_end: Option<i64>,
    /// When the segment holding the position was stored.
    cursor_created_at: Option<i64>,
}

impl PositionRow {
    fn into_position(self, now: i64) -> GroupPosition {
        let live = self.lease_expires_at.filter(|e| *e > now);
        let position = self.committed_offset.max(self.log_start);
        GroupPosition {
            group: self.consumer_group,
            queue: self.queue,
            partition: self.partition,
            partition_id: self.partition_id,
            committed_offset: self.committed_offset,
            next_offset: self.next_offset,
            log_start: self.log_start,
            retry_count: self.retry_count,
            updated_at_ms: self.updated_at,
            lease_expires_at_ms: live,
            leased_to: match live {
                Some(_) => self
                    .span_end
                    .unwrap_or(position)
                    .clamp(position, self.next_offset),
                None => position,
            },
            oldest_pending_at_ms: (position < self.next_offset)
                .then_some(self.cursor_created_at)
                .flatten(),
        }
    }
}

/// A subscription row.
#[derive(sqlx::FromRow)]
struct SubscriptionRow {
    consumer_group: String,
    queue: String,
    mode: String,
    start_at: Option<i64>,
    created_at: i64,
}

/// Every stored position, optionally of one group and one queue.
pub(crate) async fn positions(
    store: &Store,
    group: Option<&str>,
    queue: Option<&str>,
    now: i64,
) -> Result<Vec<GroupPosition>> {
    // Only the filters asked for, so that each is an index probe: a filter
    // that can be switched off (`$1 = '' OR …`) reads every position.
    let mut filters = Vec::new();
    let mut values = Vec::new();
    for (column, value) in [("c.consumer_group", group), ("q.name", queue)] {
        if let Some(value) = value {
            values.push(value);
            filters.push(format!("{column} = ${}", values.len()));
        }
    }
    let filter = match filters.is_empty() {
        true => String::new(),
        false => format!("WHERE {}", filters.join(" AND ")),
    };
    let sql = format!(
        "SELECT c.consumer_group, q.name AS queue, p.name AS partition, p.id AS partition_id, \
         c.committed_offset, p.next_offset, p.log_start, c.retry_count, c.updated_at, \
         l.expires_at AS lease_expires_at, l.span_end, \
         (SELECT s.created_at FROM segments s WHERE s.partition_id = p.id \
          AND s.base_offset <= CASE WHEN c.committed_offset < p.log_start THEN p.log_start \
          ELSE c.committed_offset END ORDER BY s.base_offset DESC LIMIT 1) AS cursor_created_at \
         FROM consumer_cursors c JOIN partitions p ON p.id = c.partition_id \
         JOIN queues q ON q.id = p.queue_id \
         LEFT JOIN consumer_leases l ON l.partition_id = c.partition_id \
         AND l.consumer_group = c.consumer_group \
         {filter} ORDER BY c.consumer_group, q.name, p.kafka_index"
    );
    let rows: Vec<PositionRow> = on_db!(store.reader(), pool => {
        let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql));
        for value in &values {
            query = query.bind(*value);
        }
        query.fetch_all(pool).await?
    });
    Ok(rows.into_iter().map(|r| r.into_position(now)).collect())
}

/// Every stored subscription, optionally of one group.
pub(crate) async fn subscriptions(store: &Store, group: Option<&str>) -> Result<Vec<Subscription>> {
    let rows: Vec<SubscriptionRow> = on_db!(store.reader(), pool => sqlx::query_as(
        "SELECT s.consumer_group, q.name AS queue, s.mode, s.start_at, s.created_at \
         FROM consumer_subscriptions s JOIN queues q ON q.id = s.queue_id \
         WHERE ($1 = '' OR s.consumer_group = $1) ORDER BY s.consumer_group, q.name",
    )
    .bind(group.unwrap_or(""))
    .fetch_all(pool)
    .await?);
    Ok(rows
        .into_iter()
        .map(|r| Subscription {
            group: r.consumer_group,
            queue: r.queue,
            mode: r.mode,
            start_at_ms: r.start_at,
            created_at_ms: r.created_at,
        })
        .collect())
}

/// Deletes a group's positions and leases (on one queue, or everywhere),
/// and with `metadata` its subscriptions. Returns the number of positions
/// deleted.
pub(crate) async fn delete(
    store: &Store,
    group: &str,
    queue: Option<&str>,
    metadata: bool,
) -> Result<u64> {
    let scope = "AND ($2 = '' OR partition_id IN (SELECT p.id FROM partitions p \
                 JOIN queues q ON q.id = p.queue_id WHERE q.name = $2))";
    let queue = queue.unwrap_or("");
    let mut tx = store.begin_write().await?;
    let deleted = on_db!(tx.conn(), c => {
        sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM consumer_leases WHERE consumer_group = $1 {scope}")))
            .bind(group)
            .bind(queue)
            .execute(&mut *c)
            .await?;
        let deleted = sqlx::query(sqlx::AssertSqlSafe(format!(
            "DELETE FROM consumer_cursors WHERE consumer_group = $1 {scope}"
        )))
        .bind(group)
        .bind(queue)
        .execute(&mut *c)
        .await?
        .rows_affected();
        if metadata {
            sqlx::query(
                "DELETE FROM consumer_subscriptions WHERE consumer_group = $1 \
                 AND ($2 = '' OR queue_id IN (SELECT id FROM queues WHERE name = $2))",
            )
            .bind(group)
            .bind(queue)
            .execute(&mut *c)
            .await?;
        }
        deleted
    });
    tx.commit().await?;
    Ok(deleted)
}

/// Moves the group's position on every partition of the queue to the end
/// (`at` = `None`) or to the first message created at or after `at`, and
/// ends its leases there. `None` when the queue does not exist; otherwise
/// the partitions updated.
pub(crate) async fn seek(
    store: &Store,
    group: &str,
    queue: &str,
    at: Option<i64>,
    now: i64,
) -> Result<Option<u64>> {
    let target = if at.is_some() {
        "COALESCE((SELECT s.base_offset FROM segments s WHERE s.partition_id = p.id \
         AND s.created_at >= $4 ORDER BY s.created_at, s.base_offset LIMIT 1), p.next_offset)"
    } else {
        "p.next_offset"
    };
    let mut tx = store.begin_write().await?;
    let updated = on_db!(tx.conn(), c => {
        let queue_id: Option<i64> = sqlx::query_scalar("SELECT id FROM queues WHERE name = $1")
            .bind(queue)
            .fetch_optional(&mut *c)
            .await?;
        let Some(queue_id) = queue_id else { return Ok(None) };
        // Leases before positions: the order pops and acks lock them in.
        sqlx::query(
            "UPDATE consumer_leases SET expires_at = 0 WHERE consumer_group = $2 \
             AND partition_id IN (SELECT id FROM partitions WHERE queue_id = $1)",
        )
        .bind(queue_id)
        .bind(group)
        .execute(&mut *c)
        .await?;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO consumer_cursors \
             (partition_id, consumer_group, committed_offset, retry_count, created_at, updated_at) \
             SELECT p.id, $2, {target}, 0, $3, $3 FROM partitions p WHERE p.queue_id = $1 \
             ON CONFLICT (partition_id, consumer_group) DO UPDATE SET \
             committed_offset = excluded.committed_offset, retry_count = 0, metadata = NULL, \
             leader_epoch = NULL, updated_at = excluded.updated_at"
        )))
        .bind(queue_id)
        .bind(group)
        .bind(now)
        .bind(at.unwrap_or(0))
        .execute(&mut *c)
        .await?
        .rows_affected()
    });
    tx.commit().await?;
    Ok(Some(updated))
}

/// Rewrites the start time of the group's subscriptions; returns how many.
pub(crate) async fn set_subscription_start(store: &Store, group: &str, at: i64) -> Result<u64> {
    let mut tx = store.begin_write().await?;
    let n = on_db!(tx.conn(), c => sqlx::query(
        "UPDATE consumer_subscriptions SET start_at = $2, mode = 'from' WHERE consumer_group = $1",
    )
    .bind(group)
    .bind(at)
    .execute(c)
    .await?
    .rows_affected());
    tx.commit().await?;
    Ok(n)
}
