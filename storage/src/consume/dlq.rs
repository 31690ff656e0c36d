//! Dead letters: messages a group gave up on, kept per group with the
//! original transaction id, the error, the retry count and the message as
//! it was stored (so its payload outlives retention).
//!
//! They are filed by the ack transaction (`failed` past `retryLimit`, or
//! `dlq`), in the same transaction that moves the cursor past them.

use bytes::Bytes;

use crate::error::Result;
use crate::model::PartitionId;
use crate::record::Record;
use crate::sealing::Sealer;
use crate::sql::dead_letters::DeadLetterRow;
use crate::Engine;

/// Which dead letters to list.
#[derive(Debug, Clone, Default)]
pub struct DeadLetterQuery {
    /// The queue.
    pub queue: String,
    /// Only this consumer group.
    pub group: Option<String>,
    /// Only this partition (by name).
    pub partition: Option<String>,
    /// Filed at or after this time (ms).
    pub from_ms: Option<i64>,
    /// Filed at or before this time (ms).
    pub to_ms: Option<i64>,
    /// Page size.
    pub limit: i64,
    /// Rows to skip.
    pub offset: i64,
}

/// A dead letter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    /// The queue.
    pub queue: String,
    /// The partition name.
    pub partition: String,
    /// The partition id.
    pub partition_id: PartitionId,
    /// The group that gave up on it.
    pub group: String,
    /// Its offset in the partition.
    pub offset: i64,
    /// The consumer's error text.
    pub error_message: Option<String>,
    /// `failed` acks charged before it was filed.
    pub retry_count: i64,
    /// When the message was stored (ms).
    pub created_at_ms: i64,
    /// When it was filed (ms).
    pub failed_at_ms: i64,
    /// The message as it was stored.
    pub record: Record,
}

/// A page of dead letters and how many match in all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetterPage {
    /// The page, newest first.
    pub letters: Vec<DeadLetter>,
    /// Every matching dead letter.
    pub total: i64,
}

/// A stored dead letter, its message opened (if sealed) and decoded.
pub(crate) fn dead_letter(row: DeadLetterRow, sealer: &Sealer) -> Result<DeadLetter> {
    let mut bytes = Bytes::from(sealer.open(row.record)?);
    Ok(DeadLetter {
        queue: row.queue,
        partition: row.partition,
        partition_id: row.partition_id,
        group: row.consumer_group,
        offset: row.message_offset,
        error_message: crate::sql::text(row.error_message),
        retry_count: row.retry_count,
        created_at_ms: row.message_created_at,
        failed_at_ms: row.failed_at,
        record: Record::decode(&mut bytes)?,
    })
}

impl Engine {
    /// A page of a queue's dead letters, newest first.
    pub async fn dead_letters(&self, query: &DeadLetterQuery) -> Result<DeadLetterPage> {
        let (rows, total) = crate::sql::dead_letters::page(&self.inner.store, query).await?;
        Ok(DeadLetterPage {
            letters: rows
                .into_iter()
                .map(|row| dead_letter(row, &self.inner.sealer))
                .collect::<Result<_>>()?,
            total,
        })
    }
}
