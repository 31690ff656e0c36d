//! Compaction (`cleanup.policy=compact`): a partition keeps the latest
//! record of each key; the others are deleted and their offsets become
//! gaps, as in Kafka.
//!
//! A segment row holds consecutive offsets, so a segment that loses records
//! is replaced by one row per run of survivors: offsets never change and a
//! reader sees the gaps between rows (readers resume after the end of the
//! last row they read, so a row replaced under them is not read twice).
//!
//! Compaction has its own step ([`Engine::enforce_compaction`]) and duty,
//! checked more often than retention: how far a partition's stored-record
//! count rises above its live keys depends on how soon a cleaning follows
//! the writes that made it dirty.
//!
//! A cleaning of a partition, like Kafka's cleaner:
//! 1. the dirty part is `[compacted_to, limit)`, where `limit` ends the
//!    oldest segments stored at least `min.compaction.lag.ms` ago; a cleaning
//!    starts only when more than `min.cleanable.dirty.ratio` (0.5 by
//!    default) of the partition's stored records are dirty (Kafka counts
//!    bytes; records are what is at hand here), or when its oldest dirty
//!    segment was stored longer than `max.compaction.lag.ms` ago; the counts
//!    are compared before anything is read;
//! 2. the latest offset of every key in the dirty part is mapped (up to
//!    [`MAP_BYTES`] of keys: a larger dirty part is cleaned in pieces);
//! 3. every segment of `[log_start, limit)` loses the records whose key has
//!    a later offset in the map, and the tombstones (null values) that were
//!    already cleaned once and are older than `delete.retention.ms`: they
//!    are found with a reader, and only the segments that lose records are
//!    rewritten, a bounded batch per short transaction
//!    ([`REWRITE_SEGMENTS`], [`REWRITE_BYTES`]);
//! 4. `compacted_to` moves to `limit`.
//!
//! Records without a key (native messages) are never removed by it.
//!
//! Kafka transactions: only the part below the last stable offset is
//! cleaned (an open transaction may still abort). Records of aborted
//! transactions are removed at their first cleaning and never count as a
//! key's latest record; commit and abort markers are no keyed records:
//! they stay until they were cleaned once and are older than
//! `delete.retention.ms`, as tombstones do, and an abort marker takes its
//! aborted range with it.

use std::collections::HashMap;
use std::ops::ControlFlow;

use bytes::Bytes;

use crate::append::NewSegment;
use crate::error::Result;
use crate::model::{PartitionId, PartitionInfo};
use crate::options::QueueOptions;
use crate::record::{encode_segment, Content, Marker, Record, TxnMark};
use crate::sealing::{is_sealed, seal_with, Sealer};
use crate::sql;
use crate::sql::catalog::Lifecycle;
use crate::topic_configs;
use crate::transactions::AbortedRange;
use crate::vacuum::Table;
use crate::Engine;

/// The memory the key map of one cleaning may take (keys and their
/// bookkeeping); a dirty part with more keys is cleaned in several pieces.
const MAP_BYTES: usize = 32 << 20;

/// What a map entry costs besides its key's bytes.
const ENTRY_OVERHEAD: usize = 64;

/// The most segments one rewrite transaction replaces.
const REWRITE_SEGMENTS: usize = 2_048;

/// A rewrite transaction takes no more segments once it has read this many
/// bytes of them: the writer is held briefly whatever the segments' size.
const REWRITE_BYTES: usize = 4 << 20;

/// The duty's name in `duties`.
const DUTY: &str = "compaction";

/// The compaction settings of a queue.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct CompactionPolicy {
    /// The share of stored records that must be dirty before a cleaning.
    pub min_dirty_ratio: f64,
    /// Records stored more recently than this (ms) are not cleaned yet.
    pub min_lag_ms: i64,
    /// Records stored longer ago than this (ms) are cleaned whatever the
    /// ratio of dirty to clean.
    pub max_lag_ms: i64,
    /// How long a tombstone stays after its first cleaning (ms).
    pub delete_retention_ms: i64,
}

impl CompactionPolicy {
    /// The queue's compaction settings, when its cleanup policy compacts.
    pub(crate) fn of(options: &QueueOptions) -> Option<Self> {
        topic_configs::cleanup_policy(options)
            .compact
            .then(|| Self {
                min_dirty_ratio: topic_configs::min_cleanable_dirty_ratio(options),
                min_lag_ms: topic_configs::min_compaction_lag_ms(options),
                max_lag_ms: topic_configs::max_compaction_lag_ms(options),
                delete_retention_ms: topic_configs::delete_retention_ms(options),
            })
    }

    /// Whether `dirty` records against `clean` ones are worth a cleaning.
    fn worth_cleaning(&self, clean: i64, dirty: i64) -> bool {
        dirty > 0 && dirty as f64 > self.min_dirty_ratio * (clean + dirty) as f64
    }
}

/// Whether a queue with `options` is compacted.
pub(crate) fn compacted(options: &QueueOptions) -> bool {
    CompactionPolicy::of(options).is_some()
}

impl Engine {
    /// One step of compaction: cleans every partition of a compacted topic
    /// whose dirty part has grown enough. Returns whether it cleaned any
    /// (the caller looks again at once) or not (the caller pauses). Like
    /// retention, one broker at a time does it; a broker with no compacted
    /// topic does not even take the duty.
    pub async fn enforce_compaction(&self) -> Result<bool> {
        let now = self.inner.clock.now_ms();
        let mut due = Vec::new();
        let queues = sql::catalog::queues_for(&self.inner.store, Lifecycle::Compacted).await?;
        for queue in queues {
            if let Some(policy) = CompactionPolicy::of(&queue.options) {
                due.extend(queue.partitions.into_iter().map(|p| (policy, p)));
            }
        }
        if due.is_empty() || !self.hold_duty(DUTY, now).await? {
            return Ok(false);
        }
        let mut cleaned = false;
        for (policy, partition) in &due {
            cleaned |= self.compact(*policy, partition, now).await?;
        }
        Ok(cleaned)
    }

    /// Cleans the partition if its dirty part has grown enough; returns
    /// whether it did.
    pub(super) async fn compact(
        &self,
        policy: CompactionPolicy,
        p: &PartitionInfo,
        now: i64,
    ) -> Result<bool> {
        let store = &self.inner.store;
        let sealer = &*self.inner.sealer;
        let compacted_to = sql::retention::compacted_to(store.reader(), p.id).await?;
        let dirty_from = compacted_to.max(p.log_start);
        // Counted before anything is read: most steps end here.
        let clean =
            sql::retention::stored_records(store.reader(), p.id, p.log_start, dirty_from).await?;
        let dirty =
            sql::retention::stored_records(store.reader(), p.id, dirty_from, i64::MAX).await?;
        let first_dirty = sql::retention::heads(store.reader(), p.id, dirty_from, 1).await?;
        let max_lag = now.saturating_sub(policy.max_lag_ms);
        let overdue = first_dirty.first().is_some_and(|h| h.created_at < max_lag);
        if dirty == 0 || !(overdue || policy.worth_cleaning(clean, dirty)) {
            return Ok(false);
        }
        let lag_limit = now.saturating_sub(policy.min_lag_ms);
        let txns = self.txn_view(p.id, dirty_from).await?;
        let Some(Dirty { keys, limit }) = self.key_map(p.id, dirty_from, lag_limit, &txns).await?
        else {
            return Ok(false);
        };
        if !(overdue || policy.worth_cleaning(clean, limit - dirty_from)) {
            return Ok(false); // most of the dirty part is younger than the lag
        }
        let tombstones_before = now.saturating_sub(policy.delete_retention_ms);
        let keep = |offset: i64, record: &Record, created_at: i64| {
            let Content::Kafka(k) = &record.content else {
                return true;
            };
            // Past its delete retention, cleaned once: a tombstone, or a
            // transaction marker (its transaction's records went before it).
            let expired = offset < compacted_to && created_at < tombstones_before;
            match k.txn {
                // A marker's key is Kafka's control key, not a user's.
                Some(TxnMark {
                    marker: Some(_), ..
                }) => return !expired,
                Some(t) if txns.aborted(t.producer_id, offset) => return false,
                _ => {}
            }
            let Some(key) = &k.key else { return true };
            if keys.get(key).is_some_and(|&latest| latest > offset) {
                return false;
            }
            !(k.value.is_none() && expired)
        };
        // Found with a reader first: only the segments that lose records
        // take the writer, one short transaction each.
        let mut doomed = Vec::new();
        let mut reader = store.read_conn().await?;
        sql::segments::scan(&mut reader.conn(), p.id, p.log_start, |segment| {
            if segment.base_offset >= limit {
                return Ok(ControlFlow::Break(()));
            }
            let (base, created_at) = (segment.base_offset, segment.created_at);
            let records = segment.decode(sealer)?;
            let loses = (base..).zip(&records).any(|(o, r)| !keep(o, r, created_at));
            if loses {
                doomed.push(base);
            }
            Ok(ControlFlow::Continue(()))
        })
        .await?;
        drop(reader);
        self.clean_segments(p.id, &doomed, &keep).await?;
        let mut tx = store.begin_write().await?;
        sql::retention::set_compacted_to(&mut tx.conn(), p.id, limit).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// What a cleaning from `from` needs to know of Kafka transactions:
    /// the last stable offset and the aborted transactions after `from`.
    async fn txn_view(&self, partition_id: PartitionId, from: i64) -> Result<TxnView> {
        let mut reader = self.inner.store.read_conn().await?;
        let bounds = sql::catalog::bounds(&mut reader.conn(), partition_id).await?;
        let last_stable = bounds.map_or(from, |b| b.last_stable);
        let aborted = if last_stable > from {
            sql::transactions::aborted(&mut reader.conn(), partition_id, from, last_stable).await?
        } else {
            Vec::new()
        };
        Ok(TxnView {
            last_stable,
            aborted,
        })
    }

    /// The dirty part from `from` over the segments stored before
    /// `lag_limit` and ending below the last stable offset (an open
    /// transaction may still abort); `None` when nothing is dirty.
    /// Transaction markers and aborted records are no keyed records.
    async fn key_map(
        &self,
        partition_id: PartitionId,
        from: i64,
        lag_limit: i64,
        txns: &TxnView,
    ) -> Result<Option<Dirty>> {
        let sealer = &*self.inner.sealer;
        let mut map: HashMap<Bytes, i64> = HashMap::new();
        let mut bytes = 0;
        let mut limit = from;
        let mut reader = self.inner.store.read_conn().await?;
        sql::segments::scan(&mut reader.conn(), partition_id, from, |segment| {
            if segment.created_at > lag_limit
                || bytes >= MAP_BYTES
                || segment.end() > txns.last_stable
            {
                return Ok(ControlFlow::Break(()));
            }
            let base = segment.base_offset;
            let end = segment.end();
            for (i, record) in segment.decode(sealer)?.into_iter().enumerate() {
                let offset = base + i as i64;
                if offset < from {
                    continue;
                }
                if let Content::Kafka(k) = record.content {
                    let user_record = match k.txn {
                        Some(t) => t.marker.is_none() && !txns.aborted(t.producer_id, offset),
                        None => true,
                    };
                    if let Some(key) = k.key.filter(|_| user_record) {
                        // A copy: the key must not keep its segment in memory.
                        let key = Bytes::copy_from_slice(&key);
                        let len = key.len();
                        if map.insert(key, offset).is_none() {
                            bytes += len + ENTRY_OVERHEAD;
                        }
                    }
                }
            }
            limit = end;
            Ok(ControlFlow::Continue(()))
        })
        .await?;
        Ok((limit > from).then_some(Dirty { keys: map, limit }))
    }

    /// Rewrites the segments at `bases` with only the records `keep`
    /// accepts (given their offset, record and the segment's creation
    /// time), each as one row per run of consecutive survivors, a bounded
    /// batch of segments per transaction.
    async fn clean_segments(
        &self,
        partition_id: PartitionId,
        bases: &[i64],
        keep: impl Fn(i64, &Record, i64) -> bool,
    ) -> Result<()> {
        let sealer = &*self.inner.sealer;
        let mut bases = bases.iter().copied().peekable();
        while bases.peek().is_some() {
            let held = std::time::Instant::now();
            let mut tx = self.inner.store.begin_write().await?;
            let mut conn = tx.conn();
            let (mut replaced, mut bytes, mut runs, mut removed) = (0, 0, Vec::new(), 0);
            while replaced < REWRITE_SEGMENTS && bytes < REWRITE_BYTES {
                let Some(base) = bases.next() else { break };
                // Read again under the write lock: DeleteRecords may have
                // swept it.
                let Some(segment) = sql::segments::at(&mut conn, partition_id, base).await? else {
                    continue;
                };
                if segment.base_offset != base {
                    continue;
                }
                bytes += segment.records.len();
                let created_at = segment.created_at;
                // What was sealed stays sealed.
                let seal = is_sealed(&segment.records).then_some(sealer);
                let records = segment.decode(sealer)?;
                let survivors: Vec<(i64, &Record)> = (base..)
                    .zip(&records)
                    .filter(|&(offset, r)| keep(offset, r, created_at))
                    .collect();
                if survivors.len() == records.len() {
                    continue;
                }
                // An abort marker goes with its aborted range: read_committed
                // readers drop a producer's records from the range's start
                // until they meet the marker.
                for (offset, record) in (base..).zip(&records) {
                    let abort = record.txn().and_then(|t| t.marker) == Some(Marker::Abort);
                    if abort && !keep(offset, record, created_at) {
                        sql::transactions::forget_aborted(&mut conn, partition_id, offset).await?;
                    }
                }
                for run in runs_of_consecutive(&survivors) {
                    runs.push(new_segment(partition_id, created_at, run, seal)?);
                }
                sql::retention::delete_segment(&mut conn, partition_id, base).await?;
                replaced += 1;
                removed += records.len() - survivors.len();
            }
            let written = runs.len();
            conn.write_appends(runs, &[], &[]).await?;
            tx.commit().await?;
            tracing::debug!(
                partition_id = partition_id.get(),
                replaced,
                written,
                removed,
                held_ms = held.elapsed().as_millis() as u64,
                "compaction: segments rewritten"
            );
            crate::metrics::STORAGE
                .compaction_records
                .inc_by(removed as u64);
            // The replaced rows are dead space until a vacuum.
            self.inner.vacuum.add(Table::Segments, replaced as u64);
        }
        Ok(())
    }
}

/// The Kafka transactions of a partition, as one cleaning sees them.
struct TxnView {
    /// Nothing at or after it is cleaned: an open transaction may abort.
    last_stable: i64,
    /// The aborted transactions after the clean part.
    aborted: Vec<AbortedRange>,
}

impl TxnView {
    /// Whether the record of `producer_id` at `offset` was aborted.
    fn aborted(&self, producer_id: i64, offset: i64) -> bool {
        self.aborted.iter().any(|a| a.holds(producer_id, offset))
    }
}

/// The dirty part of a partition, as one cleaning maps it.
struct Dirty {
    /// The latest offset of each key in it.
    keys: HashMap<Bytes, i64>,
    /// Where it ends (the first offset not mapped).
    limit: i64,
}

/// Splits offset-ordered survivors into runs of consecutive offsets.
fn runs_of_consecutive<'a>(survivors: &[(i64, &'a Record)]) -> Vec<Vec<(i64, &'a Record)>> {
    let mut runs: Vec<Vec<(i64, &Record)>> = Vec::new();
    for &(offset, record) in survivors {
        match runs.last_mut() {
            Some(run) if run.last().is_some_and(|&(o, _)| o + 1 == offset) => {
                run.push((offset, record));
            }
            _ => runs.push(vec![(offset, record)]),
        }
    }
    runs
}

/// A segment row for one run of consecutive records, sealed by `seal`.
fn new_segment(
    partition_id: PartitionId,
    created_at: i64,
    run: Vec<(i64, &Record)>,
    seal: Option<&Sealer>,
) -> Result<NewSegment> {
    let base_offset = run.first().map_or(0, |&(o, _)| o);
    let max_timestamp = run
        .iter()
        .map(|(_, r)| r.timestamp_ms().unwrap_or(created_at))
        .max()
        .unwrap_or(created_at);
    let records = encode_segment(run.iter().map(|&(_, r)| r));
    Ok(NewSegment {
        partition_id,
        base_offset,
        count: run.len() as i64,
        created_at,
        max_timestamp,
        records: seal_with(seal, records)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn record() -> Record {
        Record {
            message_id: Uuid::nil(),
            transaction_id: None,
            trace_id: None,
            producer_sub: None,
            content: Content::Json("{}".into()),
        }
    }

    #[test]
    fn survivors_split_where_offsets_jump() {
        let r = record();
        let survivors = [(3, &r), (4, &r), (9, &r), (11, &r), (12, &r)];
        let runs: Vec<Vec<i64>> = runs_of_consecutive(&survivors)
            .into_iter()
            .map(|run| run.into_iter().map(|(o, _)| o).collect())
            .collect();
        assert_eq!(runs, vec![vec![3, 4], vec![9], vec![11, 12]]);
    }
}
