//! The append statements on PostgreSQL: array parameters and `UNNEST`, so a
//! group commit costs a handful of round trips whatever its size.

use sqlx::postgres::PgArguments;
use sqlx::{Arguments, PgConnection};

use crate::append::{NewSegment, PartitionHead};
use crate::dedup::run::{KeyedPage, Page};
use crate::dedup::{pack_i64s, HashRow};
use crate::error::Result;
use crate::model::PartitionId;

/// See [`crate::backend::Conn::lock_partitions`].
pub(crate) async fn lock_partitions(
    conn: &mut PgConnection,
    ids: &[PartitionId],
) -> Result<Vec<PartitionHead>> {
    Ok(sqlx::query_as(
        "SELECT p.id, p.next_offset, p.last_created_at, q.dedup_window_seconds, \
                    p.dedup_sealed_to, p.dedup_epoch, q.encryption_enabled, q.mirrored \
             FROM partitions p JOIN queues q ON q.id = p.queue_id \
             WHERE p.id = ANY($1) ORDER BY p.id FOR UPDATE OF p",
    )
    .bind(ids)
    .fetch_all(conn)
    .await?)
}

/// See [`crate::backend::Conn::write_appends`].
pub(crate) async fn write(
    conn: &mut PgConnection,
    segments: Vec<NewSegment>,
    hashes: &[(PartitionId, HashRow)],
    heads: &[PartitionHead],
) -> Result<()> {
    let column = |f: fn(&NewSegment) -> i64| segments.iter().map(f).collect::<Vec<i64>>();
    let records: Vec<&[u8]> = segments.iter().map(|s| s.records.as_slice()).collect();
    // The segments are most of the statement's bytes: its argument buffer
    // is sized for them at once rather than doubled, and copied, as it fills.
    let mut args = PgArguments::default();
    // Per segment: five bigint elements (a length and 8 bytes each) and
    // the length of its bytea element.
    let per_segment = 5 * (4 + 8) + 4;
    args.reserve(
        7,
        records.iter().map(|r| r.len() + per_segment).sum::<usize>() + 256,
    );
    args.add(column(|s| s.partition_id.get()))
        .and_then(|()| args.add(column(|s| s.base_offset)))
        .and_then(|()| args.add(column(|s| s.count)))
        .and_then(|()| args.add(column(|s| s.created_at)))
        .and_then(|()| args.add(column(|s| s.max_timestamp)))
        .and_then(|()| args.add(crate::record::FORMAT_V1))
        .and_then(|()| args.add(records))
        .map_err(sqlx::Error::Encode)?;
    sqlx::query_with(
        "INSERT INTO segments (partition_id, base_offset, record_count, created_at, max_timestamp, format, records) \
         SELECT p, b, c, t, m, $6, r \
         FROM UNNEST($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $7::bytea[]) \
         AS s(p, b, c, t, m, r)",
        args,
    )
    .execute(&mut *conn)
    .await?;
    if !hashes.is_empty() {
        let column =
            |f: fn(&(PartitionId, HashRow)) -> i64| hashes.iter().map(f).collect::<Vec<i64>>();
        let packed: Vec<Vec<u8>> = hashes.iter().map(|(_, h)| pack_i64s(&h.hashes)).collect();
        sqlx::query(
            "INSERT INTO txn_hashes (partition_id, base_offset, created_at, hashes) \
                 SELECT * FROM UNNEST($1::bigint[], $2::bigint[], $3::bigint[], $4::bytea[])",
        )
        .bind(column(|(p, _)| p.get()))
        .bind(column(|(_, h)| h.base_offset))
        .bind(column(|(_, h)| h.created_at))
        .bind(packed)
        .execute(&mut *conn)
        .await?;
    }
    let column = |f: fn(&PartitionHead) -> i64| heads.iter().map(f).collect::<Vec<i64>>();
    sqlx::query(
        "UPDATE partitions SET next_offset = h.n, last_created_at = h.t \
             FROM UNNEST($1::bigint[], $2::bigint[], $3::bigint[]) AS h(id, n, t) \
             WHERE partitions.id = h.id",
    )
    .bind(column(|h| h.id.get()))
    .bind(column(|h| h.next_offset))
    .bind(column(|h| h.last_created_at))
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// See [`crate::backend::Conn::write_pages`].
pub(crate) async fn write_pages(
    conn: &mut PgConnection,
    run_id: i64,
    pages: &[Page],
) -> Result<()> {
    let numbers: Vec<i64> = pages.iter().map(|(n, _)| *n).collect();
    let entries: Vec<&[u8]> = pages.iter().map(|(_, b)| b.as_slice()).collect();
    sqlx::query(
        "INSERT INTO dedup_pages (run_id, page_no, entries) \
         SELECT $1, n, e FROM UNNEST($2::bigint[], $3::bytea[]) AS p(n, e)",
    )
    .bind(run_id)
    .bind(numbers)
    .bind(entries)
    .execute(conn)
    .await?;
    Ok(())
}

/// See [`crate::backend::Conn::read_pages`].
pub(crate) async fn read_pages(
    conn: &mut PgConnection,
    keys: &[(i64, i64)],
) -> Result<Vec<KeyedPage>> {
    let runs: Vec<i64> = keys.iter().map(|k| k.0).collect();
    let pages: Vec<i64> = keys.iter().map(|k| k.1).collect();
    let rows: Vec<(i64, i64, Vec<u8>)> = sqlx::query_as(
        "SELECT d.run_id, d.page_no, d.entries FROM dedup_pages d \
         JOIN UNNEST($1::bigint[], $2::bigint[]) AS k(r, p) ON d.run_id = k.r AND d.page_no = k.p",
    )
    .bind(runs)
    .bind(pages)
    .fetch_all(conn)
    .await?;
    crate::sql::dedup::keyed_pages(rows, keys.len())
}
