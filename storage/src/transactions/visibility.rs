//! What the native door may see of a partition written by Kafka
//! transactional producers: committed data only, as a `read_committed`
//! Kafka consumer sees it.
//!
//! Readers stop at the last stable offset themselves (it comes with the
//! partition row they read anyway); below it every transaction has ended,
//! so what is left to hide is the commit and abort markers and the records
//! of aborted transactions. The aborted ranges are read only when a
//! transactional record is among the records at hand, so a queue that never
//! saw a transaction pays no query for them.

use crate::backend::Conn;
use crate::error::Result;
use crate::model::PartitionId;
use crate::record::Record;
use crate::sql;

/// Drops from `items` (records below the partition's last stable offset,
/// in ascending offset order; `at` gives each one's offset and record) the
/// transaction markers and the records of aborted transactions.
pub(crate) async fn retain_committed<T>(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
    items: &mut Vec<T>,
    at: impl Fn(&T) -> (i64, &Record),
) -> Result<()> {
    items.retain(|item| at(item).1.txn().is_none_or(|t| t.marker.is_none()));
    let mut transactional = items
        .iter()
        .map(&at)
        .filter(|(_, record)| record.txn().is_some())
        .map(|(offset, _)| offset);
    let Some(first) = transactional.next() else {
        return Ok(());
    };
    let last = transactional.last().unwrap_or(first);
    let aborted = sql::transactions::aborted(conn, partition_id, first, last + 1).await?;
    if aborted.is_empty() {
        return Ok(());
    }
    items.retain(|item| {
        let (offset, record) = at(item);
        record
            .txn()
            .is_none_or(|t| !aborted.iter().any(|a| a.holds(t.producer_id, offset)))
    });
    Ok(())
}
