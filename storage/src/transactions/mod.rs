//! Kafka transactions (KIP-98): the transaction coordinator, with its state
//! in the database so any broker sharing it can serve a transactional id,
//! and what readers need to see committed records only.
//!
//! Per transactional id the database holds its producer id and epoch, its
//! state and timeout, and the partitions, groups and offsets of its ongoing
//! transaction. Every change of state is one database transaction: ending a
//! transaction writes a commit or abort marker (a control record taking an
//! offset) to each of its partitions, closes the partitions' open
//! transactions (an abort is remembered as an aborted range), publishes or
//! drops its offsets, and records the new state, all or nothing.
//!
//! Per partition, `kafka_open_txns` holds the first offset of each open
//! transaction (the smallest is the last stable offset) and
//! `kafka_aborted_txns` the aborted ranges read_committed readers skip. A
//! reader that does not ask for read_committed never reads either table.

mod rules;
mod visibility;

use crate::append::{append, AppendJob, Indexes, JobOutcome};
use crate::backend::Conn;
use crate::error::{Result, StorageError};
use crate::model::PartitionId;
use crate::offsets::CommittedOffset;
use crate::offsets_log::{partition_for, Logged, OffsetCommitEntry, OFFSETS_TOPIC};
use crate::producers::ProducerIdentity;
use crate::record::{Content, KafkaRecord, Marker, Record, TxnMark};
use crate::sql;
use crate::Engine;

pub(crate) use rules::admit;
pub use rules::TxnError;
pub(crate) use visibility::retain_committed;

/// A transactional id's state, as Kafka's coordinator names it. The
/// preparing states of Kafka never outlive one database transaction here,
/// so they are never stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnState {
    /// No transaction: after InitProducerId.
    Empty,
    /// Partitions or offsets were added; not ended yet.
    Ongoing,
    /// The last transaction committed.
    CompleteCommit,
    /// The last transaction aborted.
    CompleteAbort,
}

impl TxnState {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Empty => "Empty",
            Self::Ongoing => "Ongoing",
            Self::CompleteCommit => "CompleteCommit",
            Self::CompleteAbort => "CompleteAbort",
        }
    }
}

impl std::str::FromStr for TxnState {
    type Err = StorageError;

    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "Empty" => Self::Empty,
            "Ongoing" => Self::Ongoing,
            "CompleteCommit" => Self::CompleteCommit,
            "CompleteAbort" => Self::CompleteAbort,
            _ => return Err(StorageError::Corrupt(format!("transaction state {s:?}"))),
        })
    }
}

/// A transactional id as the coordinator keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnRow {
    /// Its producer id.
    pub producer_id: i64,
    /// Its current epoch: every older one is fenced.
    pub epoch: i16,
    /// Its state.
    pub state: TxnState,
    /// The transaction timeout the producer asked for.
    pub timeout_ms: i64,
    /// When the ongoing transaction began, ms since the epoch.
    pub started_at: Option<i64>,
}

/// An aborted transaction of one partition as stored: its producer's
/// records from `first_offset` up to its abort marker at `last_offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub(crate) struct AbortedRange {
    pub producer_id: i64,
    pub first_offset: i64,
    pub last_offset: i64,
}

impl AbortedRange {
    /// Whether the record of `producer_id` at `offset` is one it aborted.
    pub(crate) fn holds(&self, producer_id: i64, offset: i64) -> bool {
        self.producer_id == producer_id && (self.first_offset..self.last_offset).contains(&offset)
    }
}

/// An aborted transaction as Fetch lists it for read_committed readers:
/// its producer's records from `first_offset` up to its abort marker are
/// to be dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    /// The producer id.
    pub producer_id: i64,
    /// The first offset of the transaction on the partition.
    pub first_offset: i64,
}

impl Engine {
    /// InitProducerId for a transactional id: bumps the epoch (fencing the
    /// previous holder), aborts the transaction the id left ongoing, and
    /// records the new timeout, in one database transaction. `current`
    /// (KIP-360) must name the id's current producer and epoch when given.
    pub async fn init_transactional_producer(
        &self,
        tid: &str,
        timeout_ms: i32,
        current: Option<ProducerIdentity>,
    ) -> Result<ProducerIdentity> {
        let now = self.inner.clock.now_ms();
        let mut tx = self.inner.store.begin_write().await?;
        let row = sql::transactions::lock(&mut tx.conn(), tid, now).await?;
        if let (Some(row), Some(current)) = (&row, current) {
            if (row.producer_id, row.epoch) != (current.id, current.epoch) {
                return Err(TxnError::ProducerFenced.into());
            }
        }
        let mut ended = Ended::default();
        if let Some(row) = row.as_ref().filter(|r| r.state == TxnState::Ongoing) {
            ended = self.finish(&mut tx.conn(), tid, row, false, now).await?;
        }
        let identity = sql::producers::init_id_in(&mut tx.conn(), Some(tid), None, now).await?;
        let fresh = TxnRow {
            producer_id: identity.id,
            epoch: identity.epoch,
            state: TxnState::Empty,
            timeout_ms: i64::from(timeout_ms),
            started_at: None,
        };
        sql::transactions::put(&mut tx.conn(), tid, &fresh, now).await?;
        tx.commit().await?;
        self.after_end(ended);
        Ok(identity)
    }

    /// AddPartitionsToTxn: the producer will write to `partitions` in its
    /// transaction, which starts if it had not. With `verify_only` (the
    /// brokers' form of v4+) nothing changes: the answer says which of
    /// the partitions are in the ongoing transaction.
    pub async fn add_partitions_to_txn(
        &self,
        tid: &str,
        producer: ProducerIdentity,
        partitions: &[PartitionId],
        verify_only: bool,
    ) -> Result<Vec<bool>> {
        let now = self.inner.clock.now_ms();
        let mut tx = self.inner.store.begin_write().await?;
        let row = sql::transactions::lock(&mut tx.conn(), tid, now).await?;
        let row = rules::check(row, producer)?;
        if verify_only {
            if row.state != TxnState::Ongoing {
                return Ok(vec![false; partitions.len()]);
            }
            return sql::transactions::holds_partitions(&mut tx.conn(), tid, partitions).await;
        }
        sql::transactions::add_partitions(&mut tx.conn(), tid, partitions).await?;
        self.begin(&mut tx.conn(), tid, row, now).await?;
        tx.commit().await?;
        Ok(vec![true; partitions.len()])
    }

    /// AddOffsetsToTxn: the transaction will commit offsets of `group`.
    pub async fn add_offsets_to_txn(
        &self,
        tid: &str,
        producer: ProducerIdentity,
        group: &str,
    ) -> Result<()> {
        crate::validate_name("group name", group)?;
        let now = self.inner.clock.now_ms();
        let mut tx = self.inner.store.begin_write().await?;
        let row = sql::transactions::lock(&mut tx.conn(), tid, now).await?;
        let row = rules::check(row, producer)?;
        sql::transactions::add_group(&mut tx.conn(), tid, group).await?;
        self.begin(&mut tx.conn(), tid, row, now).await?;
        tx.commit().await
    }

    /// TxnOffsetCommit: offsets of `group` that become its committed
    /// positions when the transaction commits, and are dropped if it aborts.
    pub async fn txn_offset_commit(
        &self,
        tid: &str,
        producer: ProducerIdentity,
        group: &str,
        commits: &[(PartitionId, CommittedOffset)],
    ) -> Result<()> {
        crate::validate_name("group name", group)?;
        let now = self.inner.clock.now_ms();
        let mut tx = self.inner.store.begin_write().await?;
        let row = sql::transactions::lock(&mut tx.conn(), tid, now).await?;
        let row = rules::check(row, producer)?;
        if row.state != TxnState::Ongoing {
            return Err(TxnError::InvalidState(row.state).into());
        }
        sql::transactions::add_group(&mut tx.conn(), tid, group).await?;
        sql::transactions::stage_offsets(&mut tx.conn(), tid, group, commits).await?;
        tx.commit().await
    }

    /// EndTxn: commits or aborts the ongoing transaction. Ending it again
    /// the same way answers success (a retry); anything else is refused.
    pub async fn end_txn(&self, tid: &str, producer: ProducerIdentity, commit: bool) -> Result<()> {
        if commit {
            // The commit logs its offsets: the log exists before the
            // database transaction starts (creating it takes a write).
            self.ensure_offsets_topic_cached().await?;
        }
        let now = self.inner.clock.now_ms();
        let mut tx = self.inner.store.begin_write().await?;
        let row = sql::transactions::lock(&mut tx.conn(), tid, now).await?;
        let row = rules::check(row, producer)?;
        match (row.state, commit) {
            (TxnState::Ongoing, _) => {}
            (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => return Ok(()),
            (state, _) => return Err(TxnError::InvalidState(state).into()),
        }
        let ended = self.finish(&mut tx.conn(), tid, &row, commit, now).await?;
        let done = TxnRow {
            state: if commit {
                TxnState::CompleteCommit
            } else {
                TxnState::CompleteAbort
            },
            started_at: None,
            ..row
        };
        sql::transactions::put(&mut tx.conn(), tid, &done, now).await?;
        tx.commit().await?;
        self.after_end(ended);
        Ok(())
    }

    /// A transactional id's coordinator state, if it has one.
    pub async fn kafka_transaction(&self, tid: &str) -> Result<Option<TxnRow>> {
        sql::transactions::get(&self.inner.store, tid).await
    }

    /// Aborts up to `limit` transactions that outlived their timeout and
    /// fences their producers (a new epoch), as Kafka's coordinator does;
    /// returns how many. Each is one database transaction that re-reads
    /// the state under its lock, so brokers running this at once, or a
    /// producer ending the transaction meanwhile, agree on one outcome.
    pub async fn abort_expired_transactions(&self, limit: i64) -> Result<u64> {
        let now = self.inner.clock.now_ms();
        let mut aborted = 0;
        for tid in sql::transactions::expired(&self.inner.store, now, limit).await? {
            let mut tx = self.inner.store.begin_write().await?;
            let Some(row) = sql::transactions::lock(&mut tx.conn(), &tid, now).await? else {
                continue;
            };
            let expired = row
                .started_at
                .is_some_and(|start| start.saturating_add(row.timeout_ms) < now);
            if row.state != TxnState::Ongoing || !expired {
                continue;
            }
            let ended = self.finish(&mut tx.conn(), &tid, &row, false, now).await?;
            let fenced = sql::producers::init_id_in(&mut tx.conn(), Some(&tid), None, now).await?;
            let done = TxnRow {
                producer_id: fenced.id,
                epoch: fenced.epoch,
                state: TxnState::CompleteAbort,
                started_at: None,
                ..row
            };
            sql::transactions::put(&mut tx.conn(), &tid, &done, now).await?;
            tx.commit().await?;
            self.after_end(ended);
            aborted += 1;
        }
        Ok(aborted)
    }

    /// Every transactional id with its state (ListTransactions).
    pub async fn kafka_transactions(&self) -> Result<Vec<(String, TxnRow)>> {
        sql::transactions::list(&self.inner.store).await
    }

    /// The (topic, Kafka partition) pairs of a transactional id's ongoing
    /// transaction (DescribeTransactions).
    pub async fn kafka_transaction_partitions(&self, tid: &str) -> Result<Vec<(String, i32)>> {
        sql::transactions::topic_partitions(&self.inner.store, tid).await
    }

    /// The aborted transactions of a partition that have records in
    /// `from..to`, oldest first.
    pub async fn aborted_transactions(
        &self,
        partition_id: PartitionId,
        from: i64,
        to: i64,
    ) -> Result<Vec<AbortedTxn>> {
        let mut reader = self.inner.store.read_conn().await?;
        let ranges = sql::transactions::aborted(&mut reader.conn(), partition_id, from, to).await?;
        Ok(ranges
            .into_iter()
            .map(|r| AbortedTxn {
                producer_id: r.producer_id,
                first_offset: r.first_offset,
            })
            .collect())
    }

    /// The (topic, Kafka partition) pairs where an ongoing transaction
    /// holds offsets of `group` that are not committed yet.
    pub async fn pending_txn_offsets(&self, group: &str) -> Result<Vec<(String, i32)>> {
        sql::transactions::pending_offsets(&self.inner.store, group).await
    }

    /// Marks a transaction ongoing (from now, if it was not).
    async fn begin(&self, conn: &mut Conn<'_>, tid: &str, row: TxnRow, now: i64) -> Result<()> {
        if row.state == TxnState::Ongoing {
            return Ok(());
        }
        let ongoing = TxnRow {
            state: TxnState::Ongoing,
            started_at: Some(now),
            ..row
        };
        sql::transactions::put(conn, tid, &ongoing, now).await
    }

    /// Ends the ongoing transaction of `row` inside `conn`: a marker to
    /// each partition, the partitions' open transactions closed, offsets
    /// published (commit) or dropped, the transaction's holdings cleared.
    /// Returns the queues written to, to wake after the commit.
    async fn finish(
        &self,
        conn: &mut Conn<'_>,
        tid: &str,
        row: &TxnRow,
        commit: bool,
        now: i64,
    ) -> Result<Ended> {
        let partitions = sql::transactions::partitions(conn, tid).await?;
        let mark = TxnMark {
            producer_id: row.producer_id,
            epoch: row.epoch,
            marker: Some(if commit {
                Marker::Commit
            } else {
                Marker::Abort
            }),
        };
        let jobs: Vec<AppendJob> = partitions
            .iter()
            .map(|(partition_id, _)| AppendJob {
                partition_id: *partition_id,
                records: vec![marker_record(mark, now)],
                producer: None,
                screened: None,
            })
            .collect();
        let (outcomes, indexes) = if jobs.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            append(conn, &jobs, now, &self.inner.dedup, &self.inner.sealer).await?
        };
        let mut written = Vec::new();
        for ((partition_id, queue), outcome) in partitions.into_iter().zip(outcomes) {
            match outcome {
                JobOutcome::Done(answers) => {
                    let offset = answers
                        .first()
                        .map(|a| a.offset)
                        .ok_or(StorageError::CommitFailed)?;
                    sql::transactions::close(conn, partition_id, row.producer_id, offset, !commit)
                        .await?;
                    written.push((partition_id, queue));
                }
                // Its queue was deleted meanwhile: nothing left to mark.
                JobOutcome::PartitionGone(_) => {}
                JobOutcome::Refused(e) => return Err(e),
            }
        }
        let mut indexes = indexes;
        if commit {
            sql::transactions::publish_offsets(conn, tid, now).await?;
            let logged = self.log_txn_offsets(conn, tid, now).await?;
            written.extend(logged.written);
            indexes.extend(logged.indexes);
        }
        sql::transactions::clear(conn, tid).await?;
        Ok(Ended { written, indexes })
    }

    /// Appends the offsets a committed transaction publishes to the
    /// `__consumer_offsets` log, as a plain commit would
    /// ([`crate::offsets_log`]); a group whose log partition does not exist
    /// (the topic deleted meanwhile) is left out of the log.
    async fn log_txn_offsets(&self, conn: &mut Conn<'_>, tid: &str, now: i64) -> Result<Ended> {
        let staged = sql::transactions::staged_offsets(conn, tid).await?;
        let mut ended = Ended::default();
        for group in staged.chunk_by(|a, b| a.consumer_group == b.consumer_group) {
            let name = &group[0].consumer_group;
            let Some(log) = self
                .kafka_partition(OFFSETS_TOPIC, partition_for(name))
                .await?
            else {
                continue;
            };
            let committed: Vec<CommittedOffset> = group
                .iter()
                .map(|o| CommittedOffset {
                    offset: o.committed_offset,
                    metadata: sql::text(o.metadata.clone()),
                    leader_epoch: o.leader_epoch,
                })
                .collect();
            let entries: Vec<OffsetCommitEntry> = group
                .iter()
                .zip(&committed)
                .map(|(o, committed)| OffsetCommitEntry {
                    group: name,
                    topic: &o.topic,
                    partition: o.kafka_index,
                    committed,
                    commit_timestamp_ms: now,
                })
                .collect();
            if let Logged::Done(indexes) = self.log_commits(conn, log, &entries, now).await? {
                ended.indexes.extend(indexes);
                ended.written.push((log, OFFSETS_TOPIC.to_owned()));
            }
        }
        Ok(ended)
    }

    /// After a transaction's end committed: returns the dedup indexes to
    /// the cache (dropped on a rollback: they hold ids never stored) and
    /// wakes the readers of the queues marked.
    fn after_end(&self, ended: Ended) {
        for (partition_id, index) in ended.indexes {
            self.inner.dedup.put(partition_id, index);
        }
        for (_, queue) in &ended.written {
            self.announce(queue);
        }
    }
}

/// What ending a transaction wrote: the partitions marked with their
/// queues, and the dedup indexes the marker appends took from the cache.
#[derive(Default)]
struct Ended {
    written: Vec<(PartitionId, String)>,
    indexes: Indexes,
}

/// A commit or abort marker as Kafka writes it: a control record whose key
/// is (version 0, type) and value (version 0, coordinator epoch 0).
pub(crate) fn marker_record(mark: TxnMark, now: i64) -> Record {
    let kind: u8 = match mark.marker {
        Some(Marker::Commit) => 1,
        _ => 0,
    };
    Record {
        message_id: crate::new_message_id(),
        transaction_id: None,
        trace_id: None,
        producer_sub: None,
        content: Content::Kafka(KafkaRecord {
            key: Some(bytes::Bytes::copy_from_slice(&[0, 0, 0, kind])),
            value: Some(bytes::Bytes::from_static(&[0, 0, 0, 0, 0, 0])),
            headers: Vec::new(),
            timestamp_ms: now,
            txn: Some(mark),
        }),
    }
}
