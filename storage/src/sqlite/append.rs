//! The append statements on SQLite: multi-row inserts and `IN` lists.

use sqlx::{QueryBuilder, Sqlite, SqliteConnection};

use crate::append::{NewSegment, PartitionHead};
use crate::dedup::run::{KeyedPage, Page};
use crate::dedup::{pack_i64s, HashRow};
use crate::error::{Result, StorageError};
use crate::model::PartitionId;

/// Bind parameters per statement, well under SQLite's limit of 32766.
const MAX_PARAMS: usize = 30_000;

/// See [`crate::backend::Conn::lock_partitions`].
pub(crate) async fn lock_partitions(
    conn: &mut SqliteConnection,
    ids: &[PartitionId],
) -> Result<Vec<PartitionHead>> {
    // The write transaction (BEGIN IMMEDIATE) already holds SQLite's one write lock.
    let mut heads = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(MAX_PARAMS) {
        let mut q = QueryBuilder::<Sqlite>::new(
            "SELECT p.id, p.next_offset, p.last_created_at, q.dedup_window_seconds, \
                    p.dedup_sealed_to, p.dedup_epoch, q.encryption_enabled, q.mirrored \
                 FROM partitions p JOIN queues q ON q.id = p.queue_id WHERE p.id IN (",
        );
        let mut list = q.separated(", ");
        for id in chunk {
            list.push_bind(id);
        }
        q.push(") ORDER BY p.id");
        heads.extend(q.build_query_as().fetch_all(&mut *conn).await?);
    }
    Ok(heads)
}

/// See [`crate::backend::Conn::write_appends`].
pub(crate) async fn write(
    conn: &mut SqliteConnection,
    segments: Vec<NewSegment>,
    hashes: &[(PartitionId, HashRow)],
    heads: &[PartitionHead],
) -> Result<()> {
    // Taken by value: a bound blob is moved into the statement, where a
    // borrowed one would be copied (sqlx 0.9 owns every argument).
    let mut segments = segments.into_iter().peekable();
    while segments.peek().is_some() {
        let chunk = segments.by_ref().take(MAX_PARAMS / 7);
        let mut q = QueryBuilder::<Sqlite>::new(
                "INSERT INTO segments (partition_id, base_offset, record_count, created_at, max_timestamp, format, records) ",
            );
        q.push_values(chunk, |mut row, s| {
            row.push_bind(s.partition_id)
                .push_bind(s.base_offset)
                .push_bind(s.count)
                .push_bind(s.created_at)
                .push_bind(s.max_timestamp)
                .push_bind(crate::record::FORMAT_V1)
                .push_bind(s.records);
        });
        q.build().execute(&mut *conn).await?;
    }
    for chunk in hashes.chunks(MAX_PARAMS / 4) {
        let mut q = QueryBuilder::<Sqlite>::new(
            "INSERT INTO txn_hashes (partition_id, base_offset, created_at, hashes) ",
        );
        q.push_values(chunk, |mut row, (partition_id, h)| {
            row.push_bind(*partition_id)
                .push_bind(h.base_offset)
                .push_bind(h.created_at)
                .push_bind(pack_i64s(&h.hashes));
        });
        q.build().execute(&mut *conn).await?;
    }
    for head in heads {
        sqlx::query("UPDATE partitions SET next_offset = $1, last_created_at = $2 WHERE id = $3")
            .bind(head.next_offset)
            .bind(head.last_created_at)
            .bind(head.id)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// See [`crate::backend::Conn::write_pages`].
pub(crate) async fn write_pages(
    conn: &mut SqliteConnection,
    run_id: i64,
    pages: &[Page],
) -> Result<()> {
    for chunk in pages.chunks(MAX_PARAMS / 3) {
        let mut q =
            QueryBuilder::<Sqlite>::new("INSERT INTO dedup_pages (run_id, page_no, entries) ");
        q.push_values(chunk, |mut row, (page_no, bytes)| {
            row.push_bind(run_id)
                .push_bind(*page_no)
                .push_bind(bytes.as_slice());
        });
        q.build().execute(&mut *conn).await?;
    }
    Ok(())
}

/// See [`crate::backend::Conn::read_pages`]. One statement whatever the
/// number of pages, whose text (and so its prepared statement) stays the
/// same: the keys go in as one JSON array of `[run, page]` pairs. A
/// statement per page cost a round trip to sqlx's connection thread each,
/// dozens per append once a window held a few large runs.
pub(crate) async fn read_pages(
    conn: &mut SqliteConnection,
    keys: &[(i64, i64)],
) -> Result<Vec<KeyedPage>> {
    // Pairs serialise as JSON arrays: `[[run, page], …]`.
    let list = serde_json::to_string(keys).map_err(|e| StorageError::Corrupt(e.to_string()))?;
    // CROSS JOIN keeps the keys as the outer loop: one primary-key lookup each.
    let rows: Vec<(i64, i64, Vec<u8>)> = sqlx::query_as(
        "SELECT d.run_id, d.page_no, d.entries FROM json_each($1) AS k \
         CROSS JOIN dedup_pages AS d ON d.run_id = k.value ->> 0 AND d.page_no = k.value ->> 1",
    )
    .bind(list)
    .fetch_all(conn)
    .await?;
    crate::sql::dedup::keyed_pages(rows, keys.len())
}
