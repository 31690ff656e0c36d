//! Reading partitions back: messages from an offset, offsets by time, the
//! segment holding an offset, the dedup sidecar.

/// The segments of partition `$1` holding offsets at or after `$2`: from the
/// one containing `$2` on. Written as a range on the primary key, so a read
/// near the end of a long partition does not scan it from the start.
pub(crate) const SEGMENTS_FROM: &str = "partition_id = $1 AND base_offset >= COALESCE(\
    (SELECT MAX(base_offset) FROM segments WHERE partition_id = $1 AND base_offset <= $2), 0)";

/// The select list of a [`crate::append::SegmentRow`].
pub(crate) const SEGMENT_COLUMNS: &str = "base_offset, record_count, created_at, format, records";

/// Expands to the read methods of a store type that has a `reader()` pool.
macro_rules! log_statements {
    ($store:ty) => {
        impl $store {
            /// Messages of the partition from offset `from` on: up to
            /// `max_messages`, and no more segments once `max_bytes` of them
            /// were read (the first one always is).
            pub(crate) async fn read(
                &self,
                partition_id: i64,
                from: i64,
                max_messages: usize,
                max_bytes: usize,
            ) -> $crate::error::Result<Vec<$crate::model::StoredMessage>> {
                use futures_util::TryStreamExt;
                let mut out = Vec::new();
                let mut next = from;
                let mut bytes = 0;
                // Segments are asked for a page at a time (2, 4, 8, then 16):
                // PostgreSQL sends every row a query selects, whether or not
                // the reader stops early, so an open-ended range would ship
                // the whole rest of a long partition for every fetch of a
                // consumer far behind.
                let mut page: i64 = 2;
                let mut after: Option<i64> = None;
                while out.len() < max_messages && (bytes < max_bytes || out.is_empty()) {
                    let range = match after {
                        None => $crate::sql::log::SEGMENTS_FROM,
                        Some(_) => "partition_id = $1 AND base_offset > $2",
                    };
                    let query = format!(
                        "SELECT {} FROM segments WHERE {range} ORDER BY base_offset LIMIT $3",
                        $crate::sql::SEGMENT_COLUMNS,
                    );
                    let mut rows = sqlx::query_as::<_, $crate::append::SegmentRow>(&query)
                        .bind(partition_id)
                        .bind(after.unwrap_or(from))
                        .bind(page)
                        .fetch(self.reader());
                    let mut taken = 0;
                    while out.len() < max_messages && (bytes < max_bytes || out.is_empty()) {
                        let Some(segment) = rows.try_next().await? else {
                            break;
                        };
                        taken += 1;
                        after = Some(segment.base_offset);
                        bytes += segment.records.len();
                        $crate::sql::log::take_from(segment, &mut next, max_messages, &mut out)?;
                    }
                    if taken < page {
                        break; // the partition's end, or the budget
                    }
                    page = (page * 2).min(16);
                }
                Ok(out)
            }

            /// The partition's next offset and log start, if it exists.
            pub(crate) async fn partition_state(
                &self,
                partition_id: i64,
            ) -> $crate::error::Result<Option<(i64, i64)>> {
                Ok(
                    sqlx::query_as("SELECT next_offset, log_start FROM partitions WHERE id = $1")
                        .bind(partition_id)
                        .fetch_optional(self.reader())
                        .await?,
                )
            }

            /// The first message whose timestamp is at or after `timestamp`:
            /// its offset and timestamp.
            pub(crate) async fn offset_for_timestamp(
                &self,
                partition_id: i64,
                timestamp: i64,
            ) -> $crate::error::Result<Option<(i64, i64)>> {
                let row: Option<$crate::append::SegmentRow> = sqlx::query_as(&format!(
                    "SELECT {} FROM segments WHERE partition_id = $1 AND max_timestamp >= $2 \
                     ORDER BY base_offset LIMIT 1",
                    $crate::sql::SEGMENT_COLUMNS
                ))
                .bind(partition_id)
                .bind(timestamp)
                .fetch_optional(self.reader())
                .await?;
                $crate::sql::log::first_at_or_after(row, timestamp)
            }

            /// The message with the largest timestamp: its offset and timestamp.
            pub(crate) async fn max_timestamp_offset(
                &self,
                partition_id: i64,
            ) -> $crate::error::Result<Option<(i64, i64)>> {
                let row: Option<$crate::append::SegmentRow> = sqlx::query_as(&format!(
                    "SELECT {} FROM segments WHERE partition_id = $1 \
                     ORDER BY max_timestamp DESC, base_offset LIMIT 1",
                    $crate::sql::SEGMENT_COLUMNS
                ))
                .bind(partition_id)
                .fetch_optional(self.reader())
                .await?;
                $crate::sql::log::latest_timestamp(row)
            }

            /// The partition's sidecar rows matching `condition` (`$2` bound to `bound`).
            async fn hash_rows_in(
                conn: &mut <<$store as $crate::sql::Backend>::Db as sqlx::Database>::Connection,
                partition_id: i64,
                condition: &str,
                bound: i64,
            ) -> $crate::error::Result<Vec<$crate::dedup::HashRow>> {
                let rows: Vec<(i64, i64, Vec<u8>)> = sqlx::query_as(&format!(
                    "SELECT base_offset, created_at, hashes FROM txn_hashes \
                     WHERE partition_id = $1 AND {condition} ORDER BY base_offset"
                ))
                .bind(partition_id)
                .bind(bound)
                .fetch_all(&mut *conn)
                .await?;
                rows.into_iter()
                    .map(|(base_offset, created_at, blob)| {
                        let hashes = $crate::dedup::unpack_hashes(&blob).ok_or_else(|| {
                            $crate::StorageError::Corrupt("txn_hashes row".into())
                        })?;
                        Ok($crate::dedup::HashRow {
                            base_offset,
                            created_at,
                            hashes,
                        })
                    })
                    .collect()
            }

            /// The segment of the partition that holds `offset`, if still stored.
            async fn segment_at_in(
                conn: &mut <<$store as $crate::sql::Backend>::Db as sqlx::Database>::Connection,
                partition_id: i64,
                offset: i64,
            ) -> $crate::error::Result<Option<$crate::append::SegmentRow>> {
                let row: Option<$crate::append::SegmentRow> = sqlx::query_as(
                    "SELECT base_offset, record_count, created_at, format, records FROM segments \
                     WHERE partition_id = $1 AND base_offset <= $2 \
                     ORDER BY base_offset DESC LIMIT 1",
                )
                .bind(partition_id)
                .bind(offset)
                .fetch_optional(&mut *conn)
                .await?;
                Ok(row.filter(|s| offset < s.base_offset + s.count))
            }
        }
    };
}

pub(crate) use log_statements;

use crate::append::SegmentRow;
use crate::error::Result;
use crate::model::StoredMessage;

fn messages(segment: SegmentRow) -> Result<Vec<StoredMessage>> {
    let mut out = Vec::new();
    let mut next = segment.base_offset;
    take_from(segment, &mut next, usize::MAX, &mut out)?;
    Ok(out)
}

/// In a segment whose largest timestamp is at least `timestamp`: the first
/// message stamped at or after it.
pub(crate) fn first_at_or_after(
    row: Option<SegmentRow>,
    timestamp: i64,
) -> Result<Option<(i64, i64)>> {
    let Some(row) = row else { return Ok(None) };
    Ok(messages(row)?
        .into_iter()
        .map(|m| (m.offset, m.timestamp_ms()))
        .find(|&(_, ts)| ts >= timestamp))
}

/// In a segment: the message with the largest timestamp (the first of equals).
pub(crate) fn latest_timestamp(row: Option<SegmentRow>) -> Result<Option<(i64, i64)>> {
    let Some(row) = row else { return Ok(None) };
    Ok(messages(row)?
        .into_iter()
        .map(|m| (m.offset, m.timestamp_ms()))
        .fold(None, |best: Option<(i64, i64)>, m| match best {
            Some(b) if b.1 >= m.1 => Some(b),
            _ => Some(m),
        }))
}

/// Appends the messages of `segment` at or after `*next` to `out`, up to
/// `max` in all, and moves `*next` past them.
pub(crate) fn take_from(
    segment: SegmentRow,
    next: &mut i64,
    max: usize,
    out: &mut Vec<StoredMessage>,
) -> Result<()> {
    let base = segment.base_offset;
    let created_at_ms = segment.created_at;
    for (i, record) in segment.decode()?.into_iter().enumerate() {
        let offset = base + i as i64;
        if offset < *next || out.len() >= max {
            continue;
        }
        out.push(StoredMessage {
            offset,
            created_at_ms,
            record,
        });
        *next = offset + 1;
    }
    Ok(())
}
