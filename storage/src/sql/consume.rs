//! Consumption: the statements of pops and acks (leases, cursors) and what
//! a pop asks before it claims. Each (partition, group) has a lease row and
//! a cursor row; on PostgreSQL the lease row is the (partition, group) lock
//! across brokers ([`claim`] skips the rows others have locked), on SQLite
//! the single writer serialises every write.

use super::catalog::LAST_STABLE;
use crate::backend::{on_db, Conn, Db, Store};
use crate::consume::pop::CandidateFilter;
use crate::consume::{CursorRow, LeaseExtension, LeaseRow, PartitionState, SubscriptionMode};
use crate::error::{Result, StorageError};
use crate::model::PartitionId;
use crate::options::QueueOptions;

/// What the lease upserts return, as [`LeaseRow`] decodes it.
const LEASE_COLUMNS: &str = "lease_id, expires_at, span_start, span_end, delivered_to, attempts";

/// The queue options as stored (JSON).
fn options(json: &str) -> Result<QueueOptions> {
    serde_json::from_str(json).map_err(|e| StorageError::Corrupt(format!("queue options: {e}")))
}

/// A partition, its queue and a group's cursor, as [`partition`] selects them.
#[derive(sqlx::FromRow)]
struct PartitionCursorRow {
    queue_id: i64,
    queue: String,
    partition: String,
    next_offset: i64,
    log_start: i64,
    last_stable: i64,
    options: String,
    committed_offset: Option<i64>,
    retry_count: Option<i64>,
}

/// A lease row claimed by [`claim_first`], with its place among the
/// candidates.
#[derive(sqlx::FromRow)]
struct ClaimedRow {
    place: i64,
    #[sqlx(flatten)]
    lease: LeaseRow,
}

/// Claims, in the order given, the first `wanted` of the `candidates`
/// whose lease row for the group is free at `now` (released or expired),
/// locking each until commit. Answers them with their leases, and how many
/// candidates were looked at (all of them unless `wanted` were claimed).
///
/// A candidate is passed over when another lease is live on it, or, on
/// PostgreSQL, when another transaction (a pop or an ack here or on another
/// broker) has its row locked: a pop skips such a partition instead of
/// waiting on it. PostgreSQL claims them all in one statement, a round trip
/// instead of one per candidate (its pop created the missing rows before,
/// [`crate::backend::Store::create_lease_rows`]). SQLite's single writer
/// never finds a row locked; it claims one at a time (creating a missing
/// row), answering after the first, since a statement costs it no round
/// trip and the caller asks again only when it needs another.
pub(crate) async fn claim_first(
    conn: &mut Conn<'_>,
    candidates: &[PartitionId],
    wanted: usize,
    group: &str,
    lease_id: &str,
    expires_at: i64,
    now: i64,
) -> Result<(Vec<(PartitionId, LeaseRow)>, usize)> {
    match conn {
        Db::Sqlite(c) => {
            let sql = format!(
                "INSERT INTO consumer_leases (partition_id, consumer_group, lease_id, expires_at, claimed_at) \
                 VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (partition_id, consumer_group) DO UPDATE SET \
                 lease_id = excluded.lease_id, expires_at = excluded.expires_at, claimed_at = excluded.claimed_at \
                 WHERE consumer_leases.expires_at <= $5 RETURNING {LEASE_COLUMNS}"
            );
            for (looked, &partition_id) in candidates.iter().enumerate() {
                let lease: Option<LeaseRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql.as_str()))
                    .bind(partition_id)
                    .bind(group)
                    .bind(lease_id)
                    .bind(expires_at)
                    .bind(now)
                    .fetch_optional(&mut **c)
                    .await?;
                if let Some(lease) = lease {
                    return Ok((vec![(partition_id, lease)], looked + 1));
                }
            }
            Ok((Vec::new(), candidates.len()))
        }
        Db::Postgres(c) => {
            // Rows failing the expiry test once locked (a concurrent claim
            // committed meanwhile) are dropped below the LIMIT, which then
            // takes the next candidate.
            let sql = format!(
                "WITH wanted AS (SELECT w.id, w.place FROM UNNEST($1::bigint[]) \
                 WITH ORDINALITY AS w(id, place)), \
                 free AS (SELECT l.partition_id, w.place FROM consumer_leases l \
                 JOIN wanted w ON w.id = l.partition_id \
                 WHERE l.consumer_group = $2 AND l.expires_at <= $5 \
                 ORDER BY w.place LIMIT $6 FOR UPDATE OF l SKIP LOCKED) \
                 UPDATE consumer_leases l SET lease_id = $3, expires_at = $4, claimed_at = $5 \
                 FROM free WHERE l.partition_id = free.partition_id AND l.consumer_group = $2 \
                 RETURNING free.place, {LEASE_COLUMNS}"
            );
            let ids: Vec<i64> = candidates.iter().map(|id| id.get()).collect();
            let mut rows: Vec<ClaimedRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(&ids)
                .bind(group)
                .bind(lease_id)
                .bind(expires_at)
                .bind(now)
                .bind(i64::try_from(wanted).unwrap_or(i64::MAX))
                .fetch_all(&mut **c)
                .await?;
            rows.sort_by_key(|row| row.place);
            let looked = match rows.last() {
                Some(last) if rows.len() >= wanted => {
                    usize::try_from(last.place).unwrap_or(candidates.len())
                }
                _ => candidates.len(),
            };
            let mut claimed = Vec::with_capacity(rows.len());
            for row in rows {
                // Places count from 1.
                let index = usize::try_from(row.place - 1).unwrap_or(usize::MAX);
                if let Some(&partition_id) = candidates.get(index) {
                    claimed.push((partition_id, row.lease));
                }
            }
            Ok((claimed, looked))
        }
    }
}

/// Locks the lease row of (partition, group), creating a free one if
/// missing. `None` when the partition does not exist.
pub(crate) async fn lock_lease(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
    group: &str,
) -> Result<Option<LeaseRow>> {
    let sql = format!(
        "INSERT INTO consumer_leases (partition_id, consumer_group) \
         SELECT id, $2 FROM partitions WHERE id = $1 \
         ON CONFLICT (partition_id, consumer_group) DO UPDATE SET expires_at = consumer_leases.expires_at \
         RETURNING {LEASE_COLUMNS}"
    );
    Ok(on_db!(conn, c => sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(partition_id)
        .bind(group)
        .fetch_optional(&mut **c)
        .await?))
}

/// Writes the lease row back.
const SAVE_LEASE: &str = "UPDATE consumer_leases SET lease_id = $3, expires_at = $4, \
     span_start = $5, span_end = $6, delivered_to = $7, attempts = $8 \
     WHERE partition_id = $1 AND consumer_group = $2";

/// Stores the group's position natively (Kafka metadata cleared), its
/// offset, retry count and time in parameters `$n`, `$n+1` and `$n+2`.
fn save_cursor_sql(n: usize) -> String {
    format!(
        "INSERT INTO consumer_cursors \
         (partition_id, consumer_group, committed_offset, retry_count, created_at, updated_at) \
         VALUES ($1, $2, ${n}, ${r}, ${t}, ${t}) \
         ON CONFLICT (partition_id, consumer_group) DO UPDATE SET \
         committed_offset = excluded.committed_offset, retry_count = excluded.retry_count, \
         metadata = NULL, leader_epoch = NULL, updated_at = excluded.updated_at",
        r = n + 1,
        t = n + 2
    )
}

/// Writes back what a pop or an ack changed of (partition, group): the
/// lease row, the cursor (stored natively at `now`), or both; on
/// PostgreSQL both in one statement, to spare a round trip.
pub(crate) async fn save(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
    group: &str,
    lease: Option<&LeaseRow>,
    cursor: Option<CursorRow>,
    now: i64,
) -> Result<()> {
    let at = (partition_id, group, now);
    match (&conn, lease, cursor) {
        (_, None, None) => Ok(()),
        (_, Some(_), None) => write(conn, SAVE_LEASE, at, lease, None).await,
        (_, None, Some(_)) => write(conn, &save_cursor_sql(3), at, None, cursor).await,
        (Db::Postgres(_), Some(_), Some(_)) => {
            let sql = format!("WITH lease AS ({SAVE_LEASE}) {}", save_cursor_sql(9));
            write(conn, &sql, at, lease, cursor).await
        }
        (Db::Sqlite(_), Some(_), Some(_)) => {
            // SQLite has no writing CTE.
            write(conn, SAVE_LEASE, at, lease, None).await?;
            write(conn, &save_cursor_sql(3), at, None, cursor).await
        }
    }
}

/// Runs one of [`save`]'s statements: its parameters are (partition,
/// group), then the lease's and the cursor's given.
async fn write(
    conn: &mut Conn<'_>,
    sql: &str,
    (partition_id, group, now): (PartitionId, &str, i64),
    lease: Option<&LeaseRow>,
    cursor: Option<CursorRow>,
) -> Result<()> {
    on_db!(conn, c => {
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(partition_id).bind(group);
        if let Some(l) = lease {
            query = query
                .bind(l.lease_id.as_deref())
                .bind(l.expires_at)
                .bind(l.span_start)
                .bind(l.span_end)
                .bind(l.delivered_to)
                .bind(l.attempts);
        }
        if let Some(cursor) = cursor {
            query = query
                .bind(cursor.committed_offset)
                .bind(cursor.retry_count)
                .bind(now);
        }
        query.execute(&mut **c).await?;
    });
    Ok(())
}

/// The partition, its queue, and the group's cursor on it.
pub(crate) async fn partition(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
    group: &str,
) -> Result<Option<(PartitionState, Option<CursorRow>)>> {
    let row: Option<PartitionCursorRow> = on_db!(conn, c => sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT q.id AS queue_id, q.name AS queue, p.name AS partition, p.next_offset, \
         p.log_start, {LAST_STABLE} AS last_stable, q.options, c.committed_offset, c.retry_count \
         FROM partitions p JOIN queues q ON q.id = p.queue_id \
         LEFT JOIN consumer_cursors c ON c.partition_id = p.id AND c.consumer_group = $2 \
         WHERE p.id = $1"
    )))
    .bind(partition_id)
    .bind(group)
    .fetch_optional(&mut **c)
    .await?);
    row.map(|r| {
        let state = PartitionState {
            queue_id: r.queue_id,
            queue: r.queue,
            partition: r.partition,
            next_offset: r.next_offset,
            log_start: r.log_start,
            last_stable: r.last_stable,
            options: options(&r.options)?,
        };
        let cursor = r.committed_offset.map(|committed_offset| CursorRow {
            committed_offset,
            retry_count: r.retry_count.unwrap_or(0),
        });
        Ok((state, cursor))
    })
    .transpose()
}

/// The first offset of the partition created at or after `at`.
pub(crate) async fn first_offset_at(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
    at: i64,
) -> Result<Option<i64>> {
    Ok(on_db!(conn, c => sqlx::query_scalar(
        "SELECT base_offset FROM segments WHERE partition_id = $1 AND created_at >= $2 \
         ORDER BY created_at, base_offset LIMIT 1",
    )
    .bind(partition_id)
    .bind(at)
    .fetch_optional(&mut **c)
    .await?))
}

/// The start time of the group's subscription on the queue: `None` when
/// not subscribed, `Some(None)` when it starts at the oldest message.
pub(crate) async fn subscription_start(
    conn: &mut Conn<'_>,
    queue_id: i64,
    group: &str,
) -> Result<Option<Option<i64>>> {
    Ok(on_db!(conn, c => sqlx::query_scalar(
        "SELECT start_at FROM consumer_subscriptions WHERE queue_id = $1 AND consumer_group = $2",
    )
    .bind(queue_id)
    .bind(group)
    .fetch_optional(&mut **c)
    .await?))
}

/// The id and options of a queue, without its partitions.
pub(crate) async fn queue_ref(store: &Store, name: &str) -> Result<Option<(i64, QueueOptions)>> {
    let row: Option<(i64, String)> = on_db!(store.reader(), pool => sqlx::query_as(
        "SELECT id, options FROM queues WHERE name = $1",
    )
    .bind(name)
    .fetch_optional(pool)
    .await?);
    row.map(|(id, json)| Ok((id, options(&json)?))).transpose()
}

/// Registers a named group's subscription on a queue unless it exists; a
/// `new` or `from` registration seeds the group's cursor on every existing
/// partition, so "new" means new relative to this moment. Returns whether
/// it registered.
pub(crate) async fn register(
    store: &Store,
    queue_id: i64,
    group: &str,
    mode: SubscriptionMode,
    now: i64,
) -> Result<bool> {
    let start_at = match mode {
        SubscriptionMode::All => None,
        SubscriptionMode::New => Some(now),
        SubscriptionMode::From(at) => Some(at),
    };
    let start = match mode {
        SubscriptionMode::All => None,
        SubscriptionMode::New => Some("p.next_offset"),
        SubscriptionMode::From(_) => Some(
            "COALESCE((SELECT s.base_offset FROM segments s WHERE s.partition_id = p.id \
             AND s.created_at >= $4 ORDER BY s.created_at, s.base_offset LIMIT 1), p.next_offset)",
        ),
    };
    let mut tx = store.begin_write().await?;
    let registered = on_db!(tx.conn(), c => {
        let inserted: Option<i64> = sqlx::query_scalar(
            "INSERT INTO consumer_subscriptions (queue_id, consumer_group, mode, start_at, created_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING queue_id",
        )
        .bind(queue_id)
        .bind(group)
        .bind(mode.name())
        .bind(start_at)
        .bind(now)
        .fetch_optional(&mut *c)
        .await?;
        if let (Some(_), Some(start)) = (inserted, start) {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "INSERT INTO consumer_cursors \
                 (partition_id, consumer_group, committed_offset, retry_count, created_at, updated_at) \
                 SELECT p.id, $2, {start}, 0, $3, $3 FROM partitions p WHERE p.queue_id = $1 \
                 ON CONFLICT DO NOTHING"
            )))
            .bind(queue_id)
            .bind(group)
            .bind(now)
            .bind(start_at.unwrap_or(0))
            .execute(&mut *c)
            .await?;
        }
        inserted.is_some()
    });
    if registered {
        tx.commit().await?;
    }
    Ok(registered)
}

/// Partitions of the queue the group could claim now: messages after its
/// cursor, no live lease, and (when the queue asks) quiet for the window
/// buffer and old enough for the delay. Least recently claimed first; each
/// with whether its lease row exists.
pub(crate) async fn candidates(
    store: &Store,
    filter: &CandidateFilter<'_>,
) -> Result<Vec<(PartitionId, bool)>> {
    // Messages up to the last stable offset: a group waits at an open
    // Kafka transaction as a read_committed consumer does.
    let mut sql = format!(
        "SELECT p.id, l.partition_id IS NOT NULL FROM partitions p \
         LEFT JOIN consumer_cursors c ON c.partition_id = p.id AND c.consumer_group = $2 \
         LEFT JOIN consumer_leases l ON l.partition_id = p.id AND l.consumer_group = $2 \
         WHERE p.queue_id = $1 AND p.next_offset > p.log_start \
         AND {LAST_STABLE} > COALESCE(c.committed_offset, 0) \
         AND (l.expires_at IS NULL OR l.expires_at <= $3)"
    );
    if filter.partition.is_some() {
        sql.push_str(" AND p.name = $5");
    }
    if filter.quiet_since.is_some() {
        sql.push_str(" AND p.last_created_at <= $6");
    }
    if filter.visible_before.is_some() {
        // Creation times grow with offsets, so the partition is visible
        // when the segment at its cursor is old enough.
        sql.push_str(
            " AND (SELECT s.created_at FROM segments s WHERE s.partition_id = p.id \
             AND s.base_offset <= CASE WHEN c.committed_offset IS NULL \
             OR c.committed_offset < p.log_start THEN p.log_start ELSE c.committed_offset END \
             ORDER BY s.base_offset DESC LIMIT 1) <= $7",
        );
    }
    sql.push_str(" ORDER BY COALESCE(l.claimed_at, 0), p.id LIMIT $4");
    Ok(
        on_db!(store.reader(), pool => sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(filter.queue_id)
        .bind(filter.group)
        .bind(filter.now)
        .bind(filter.limit)
        .bind(filter.partition.unwrap_or(""))
        .bind(filter.quiet_since.unwrap_or(0))
        .bind(filter.visible_before.unwrap_or(0))
        .fetch_all(pool)
        .await?),
    )
}

/// The earliest time a live lease of the group on a partition with pending
/// messages expires: when a waiting pop should look again.
pub(crate) async fn next_expiry(
    store: &Store,
    queue_id: i64,
    group: &str,
    now: i64,
) -> Result<Option<i64>> {
    Ok(on_db!(store.reader(), pool => sqlx::query_scalar(
        "SELECT MIN(l.expires_at) FROM consumer_leases l \
         JOIN partitions p ON p.id = l.partition_id \
         LEFT JOIN consumer_cursors c ON c.partition_id = l.partition_id AND c.consumer_group = $2 \
         WHERE p.queue_id = $1 AND l.consumer_group = $2 AND l.expires_at > $3 \
         AND p.next_offset > COALESCE(c.committed_offset, 0)",
    )
    .bind(queue_id)
    .bind(group)
    .bind(now)
    .fetch_one(pool)
    .await?))
}

/// Extends the live leases named `lease_id` to at least `until`.
pub(crate) async fn extend_lease(
    store: &Store,
    lease_id: &str,
    until: i64,
    now: i64,
) -> Result<LeaseExtension> {
    let mut tx = store.begin_write().await?;
    let expiries: Vec<i64> = on_db!(tx.conn(), c => sqlx::query_scalar(
        "UPDATE consumer_leases SET expires_at = \
         CASE WHEN expires_at < $2 THEN $2 ELSE expires_at END \
         WHERE lease_id = $1 AND expires_at > $3 RETURNING expires_at",
    )
    .bind(lease_id)
    .bind(until)
    .bind(now)
    .fetch_all(c)
    .await?);
    tx.commit().await?;
    Ok(LeaseExtension {
        renewed: expiries.len(),
        expires_at_ms: expiries.into_iter().min(),
    })
}

/// A partition's queue and name, with its bounds.
#[derive(sqlx::FromRow)]
pub(crate) struct PartitionRef {
    pub queue: String,
    pub partition: String,
    pub log_start: i64,
    pub next_offset: i64,
    pub last_stable: i64,
}

/// The queue and partition names of a partition id, with its bounds.
pub(crate) async fn partition_ref(
    store: &Store,
    partition_id: PartitionId,
) -> Result<Option<PartitionRef>> {
    Ok(
        on_db!(store.reader(), pool => sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT q.name AS queue, p.name AS partition, p.log_start, p.next_offset, \
         {LAST_STABLE} AS last_stable FROM partitions p \
         JOIN queues q ON q.id = p.queue_id WHERE p.id = $1"
    )))
    .bind(partition_id)
    .fetch_optional(pool)
    .await?),
    )
}
