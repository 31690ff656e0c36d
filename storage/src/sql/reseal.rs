//! Finding and rewriting sealed payloads for a key rotation
//! ([`crate::Engine::reseal`]): segments and dead letters, walked in key
//! order a page at a time, each blob read by its header first.

use crate::backend::{on_db, Conn, Store};
use crate::error::Result;
use crate::sealing::HEADER_LEN;

/// A table that holds sealed payloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SealedTable {
    /// `segments`, keyed by (partition id, base offset).
    Segments,
    /// `dead_letters`, keyed by id. The first half of its key is always 0,
    /// and its statements still bind it (`CAST($1 AS BIGINT) = 0`):
    /// PostgreSQL must know the type of every parameter a statement has.
    DeadLetters,
}

/// A row's key in its table's walking order.
pub(crate) type RowKey = (i64, i64);

/// The first [`HEADER_LEN`] bytes of a stored blob, by its row's key.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct BlobHead {
    pub a: i64,
    pub b: i64,
    pub head: Vec<u8>,
}

impl BlobHead {
    /// The row's key.
    pub(crate) fn key(&self) -> RowKey {
        (self.a, self.b)
    }
}

/// Up to `limit` rows after `after`, in key order, with their blobs' heads.
pub(crate) async fn heads(
    store: &Store,
    table: SealedTable,
    after: RowKey,
    limit: i64,
) -> Result<Vec<BlobHead>> {
    let sql = match table {
        SealedTable::Segments => format!(
            "SELECT partition_id AS a, base_offset AS b, substr(records, 1, {HEADER_LEN}) AS head \
             FROM segments WHERE (partition_id, base_offset) > ($1, $2) \
             ORDER BY partition_id, base_offset LIMIT $3"
        ),
        SealedTable::DeadLetters => format!(
            "SELECT CAST(0 AS BIGINT) AS a, id AS b, substr(record, 1, {HEADER_LEN}) AS head \
             FROM dead_letters WHERE id > $2 AND CAST($1 AS BIGINT) = 0 ORDER BY id LIMIT $3"
        ),
    };
    Ok(
        on_db!(store.reader(), pool => sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(after.0)
        .bind(after.1)
        .bind(limit)
        .fetch_all(pool)
        .await?),
    )
}

/// The whole blob of the row at `key`, if it is still there.
pub(crate) async fn blob(
    store: &Store,
    table: SealedTable,
    key: RowKey,
) -> Result<Option<Vec<u8>>> {
    let sql = match table {
        SealedTable::Segments => {
            "SELECT records FROM segments WHERE partition_id = $1 AND base_offset = $2"
        }
        SealedTable::DeadLetters => {
            "SELECT record FROM dead_letters WHERE id = $2 AND CAST($1 AS BIGINT) = 0"
        }
    };
    Ok(on_db!(store.reader(), pool => sqlx::query_scalar(sql)
        .bind(key.0)
        .bind(key.1)
        .fetch_optional(pool)
        .await?))
}

/// Replaces the blob of the row at `key` with `blob`, unless the row's
/// blob no longer starts with `head` (another writer changed it meanwhile:
/// a sealed blob's head, with its fresh nonce, names one sealing of it).
/// Returns whether it was replaced.
pub(crate) async fn replace(
    conn: &mut Conn<'_>,
    table: SealedTable,
    key: RowKey,
    head: &[u8],
    blob: &[u8],
) -> Result<bool> {
    let sql = match table {
        SealedTable::Segments => format!(
            "UPDATE segments SET records = $1 WHERE partition_id = $2 AND base_offset = $3 \
             AND substr(records, 1, {HEADER_LEN}) = $4"
        ),
        SealedTable::DeadLetters => format!(
            "UPDATE dead_letters SET record = $1 WHERE id = $3 AND CAST($2 AS BIGINT) = 0 \
             AND substr(record, 1, {HEADER_LEN}) = $4"
        ),
    };
    let done = on_db!(conn, c => sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(blob)
        .bind(key.0)
        .bind(key.1)
        .bind(head)
        .execute(&mut **c)
        .await?
        .rows_affected());
    Ok(done == 1)
}
