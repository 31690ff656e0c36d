//! A partition as a log, the way the Kafka facade uses it: append records
//! and get their offsets, read from an offset, find offsets by time, and
//! wait for appends.

use std::sync::Arc;

use tokio::sync::Notify;

use crate::append::{AppendJob, JobOutcome};
use crate::committer::Answer;
use crate::error::{Result, StorageError};
use crate::model::PartitionId;
use crate::producers::ProducerBatch;
use crate::record::{Record, StoredRecords};
use crate::sql;
use crate::Engine;

/// An append queued by [`Engine::start_append`].
#[derive(Debug)]
pub struct PendingAppend {
    engine: Engine,
    queue: String,
    partition_id: PartitionId,
    answer: Answer,
}

impl PendingAppend {
    /// Waits for the commit and wakes the long polls on the queue (pops
    /// and fetches, here and on other brokers); returns the offset of the
    /// first record.
    pub async fn offset(self) -> Result<i64> {
        match self
            .answer
            .await
            .map_err(|_| StorageError::ShuttingDown)??
        {
            JobOutcome::Done(appended) => {
                self.engine.announce(&self.queue);
                appended
                    .first()
                    .map(|a| a.offset)
                    .ok_or(StorageError::CommitFailed)
            }
            JobOutcome::Refused(e) => Err(e),
            JobOutcome::PartitionGone(_) => {
                // Its queue was deleted: what is cached of it is stale.
                self.engine.inner.partitions.forget_queue(&self.queue);
                Err(StorageError::PartitionNotFound(self.partition_id))
            }
        }
    }
}

/// A message's offset with its timestamp (ms): what a lookup by time finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampedOffset {
    /// The message's offset.
    pub offset: i64,
    /// Its timestamp: a Kafka record's own, else its creation time.
    pub timestamp_ms: i64,
}

/// The bounds of a partition's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct LogBounds {
    /// The first offset still stored.
    pub log_start: i64,
    /// The offset the next record gets (the high watermark).
    pub next_offset: i64,
    /// The first offset of the oldest open Kafka transaction, else the
    /// high watermark: what `read_committed` readers may read up to.
    pub last_stable: i64,
}

impl Engine {
    /// Appends records to partition `partition_id` of `queue` as one batch;
    /// returns the offset of the first. Records carry minted transaction ids, so nothing is a
    /// duplicate. Committed before it returns.
    pub async fn append_records(
        &self,
        queue: &str,
        partition_id: PartitionId,
        records: Vec<Record>,
    ) -> Result<i64> {
        self.start_append(queue, partition_id, records, None)
            .await?
            .offset()
            .await
    }

    /// Queues an append and returns at once; appends queued in order to one
    /// partition are stored in that order. A Kafka idempotent producer's
    /// batch carries its `producer` identity: a retry of one of its last five
    /// batches answers the original offsets and writes nothing, and a
    /// sequence gap or stale epoch fails with [`StorageError::Producer`]. [`PendingAppend::offset`] waits
    /// for the commit. This lets a connection pipeline its produce requests
    /// without reordering them.
    pub async fn start_append(
        &self,
        queue: &str,
        partition_id: PartitionId,
        records: Vec<Record>,
        producer: Option<ProducerBatch>,
    ) -> Result<PendingAppend> {
        if records.is_empty() {
            return Err(StorageError::InvalidInput(
                "an append needs at least one record".into(),
            ));
        }
        let answer = self
            .inner
            .committer
            .submit(AppendJob {
                partition_id,
                records,
                producer,
                screened: None,
            })
            .await?;
        Ok(PendingAppend {
            engine: self.clone(),
            queue: queue.to_owned(),
            partition_id,
            answer,
        })
    }

    /// Records of a partition from `from` on, in offset order and as
    /// stored (one [`StoredRecords`] per segment they come from, read in
    /// place rather than decoded): up to `max_messages`, and no more than
    /// `max_bytes` of stored bytes (at least one record when there is one).
    pub async fn read_partition(
        &self,
        partition_id: PartitionId,
        from: i64,
        max_messages: usize,
        max_bytes: usize,
    ) -> Result<Vec<StoredRecords>> {
        sql::segments::read(
            &self.inner.store,
            &self.inner.sealer,
            &self.inner.tails,
            partition_id,
            from,
            max_messages,
            max_bytes,
        )
        .await
    }

    /// The partition's log start and next offset.
    pub async fn log_bounds(&self, partition_id: PartitionId) -> Result<LogBounds> {
        let mut reader = self.inner.store.read_conn().await?;
        sql::catalog::bounds(&mut reader.conn(), partition_id)
            .await?
            .ok_or(StorageError::PartitionNotFound(partition_id))
    }

    /// The first message stamped at or after `timestamp` (ms).
    pub async fn offset_for_timestamp(
        &self,
        partition_id: PartitionId,
        timestamp: i64,
    ) -> Result<Option<TimestampedOffset>> {
        sql::segments::offset_for_timestamp(
            &self.inner.store,
            &self.inner.sealer,
            partition_id,
            timestamp,
        )
        .await
    }

    /// The message with the largest timestamp (the first of equals).
    pub async fn max_timestamp_offset(
        &self,
        partition_id: PartitionId,
    ) -> Result<Option<TimestampedOffset>> {
        sql::segments::max_timestamp_offset(&self.inner.store, &self.inner.sealer, partition_id)
            .await
    }

    /// Notified whenever new messages may be readable in any queue: appends
    /// on this broker and, on PostgreSQL, announcements from the others.
    /// Long polls arm it (`notified().enable()`) before they look, then wait.
    pub fn appended_anywhere(&self) -> Arc<Notify> {
        self.inner.consume.wake.any()
    }

    /// Notified whenever new messages may be readable in `queue` (appended
    /// here or, on PostgreSQL, announced by another broker), as
    /// [`Self::appended_anywhere`] for that queue alone: a long poll on one
    /// queue is not woken by every append to the others.
    pub fn appended_in(&self, queue: &str) -> Arc<Notify> {
        self.inner.consume.wake.subscribe(queue)
    }
}
