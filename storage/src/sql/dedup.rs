//! The dedup sidecar (`txn_hashes`): per appended segment, the hashes of its
//! transaction ids. Appends write it (`append`); these statements read it.

use crate::backend::{on_db, Conn, Store};
use crate::dedup::{unpack_hashes, HashRow};
use crate::error::{Result, StorageError};
use crate::model::PartitionId;

/// A `txn_hashes` row as stored.
#[derive(sqlx::FromRow)]
struct Row {
    base_offset: i64,
    created_at: i64,
    hashes: Vec<u8>,
}

impl Row {
    fn unpack(self) -> Result<HashRow> {
        Ok(HashRow {
            base_offset: self.base_offset,
            created_at: self.created_at,
            hashes: unpack_hashes(&self.hashes)
                .ok_or_else(|| StorageError::Corrupt("txn_hashes row".into()))?,
        })
    }
}

/// Which of a partition's sidecar rows to read.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Rows {
    /// Those created at or after this time (ms): the window.
    CreatedSince(i64),
    /// Those of segments from this offset on: what a cached index lacks.
    From(i64),
}

/// The partition's sidecar rows, in offset order.
pub(crate) async fn rows(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
    which: Rows,
) -> Result<Vec<HashRow>> {
    let (condition, bound) = match which {
        Rows::CreatedSince(ms) => ("created_at >= $2", ms),
        Rows::From(offset) => ("base_offset >= $2", offset),
    };
    let sql = format!(
        "SELECT base_offset, created_at, hashes FROM txn_hashes \
         WHERE partition_id = $1 AND {condition} ORDER BY base_offset"
    );
    let rows: Vec<Row> = on_db!(conn, c => sqlx::query_as(&sql)
        .bind(partition_id)
        .bind(bound)
        .fetch_all(&mut **c)
        .await?);
    rows.into_iter().map(Row::unpack).collect()
}

/// The offsets of the partition whose transaction id hashes to `hash`:
/// candidates, to be confirmed against the stored ids.
pub(crate) async fn candidates(
    store: &Store,
    partition_id: PartitionId,
    hash: i64,
) -> Result<Vec<i64>> {
    let rows: Vec<Row> = on_db!(store.reader(), pool => sqlx::query_as(
        "SELECT base_offset, created_at, hashes FROM txn_hashes \
         WHERE partition_id = $1 ORDER BY base_offset",
    )
    .bind(partition_id)
    .fetch_all(pool)
    .await?);
    let mut out = Vec::new();
    for row in rows {
        let row = row.unpack()?;
        out.extend(
            row.hashes
                .iter()
                .enumerate()
                .filter(|(_, h)| **h == hash)
                .map(|(i, _)| row.base_offset + i as i64),
        );
    }
    Ok(out)
}
