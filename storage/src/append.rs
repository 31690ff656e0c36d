//! The append algorithm: dedup and offset allocation under the partition lock.
//!
//! Both backends run this same code inside one database transaction; they
//! only supply the primitive statements ([`AppendTx`]). For every partition
//! of a group commit it locks the partition row (the per-partition
//! serialiser), probes the dedup index for the incoming transaction ids
//! inside the queue's window, and only then allocates offsets and writes one
//! segment. Because the probe happens under the lock, no other writer (on
//! this broker or another) can slip a colliding id in between.

use std::collections::HashMap;

use bytes::Bytes;
use uuid::Uuid;

use crate::error::{Result, StorageError};
use crate::model::PushStatus;
use crate::record::{decode_segment, encode_segment, Record};

/// A partition's write state, read under its lock.
#[derive(Debug, Clone)]
pub(crate) struct PartitionHead {
    pub id: i64,
    pub next_offset: i64,
    pub last_created_at: i64,
    pub dedup_window_seconds: i64,
}

/// A row of the dedup index that matched a probed hash.
#[derive(Debug, Clone)]
pub(crate) struct IndexHit {
    pub txn_hash: i64,
    pub offset: i64,
}

/// A segment about to be inserted.
#[derive(Debug)]
pub(crate) struct NewSegment {
    pub partition_id: i64,
    pub base_offset: i64,
    pub count: i64,
    pub created_at: i64,
    pub records: Vec<u8>,
}

/// A dedup index row about to be inserted.
#[derive(Debug)]
pub(crate) struct IndexRow {
    pub partition_id: i64,
    pub txn_hash: i64,
    pub offset: i64,
    pub created_at: i64,
}

/// A stored segment as read back.
#[derive(Debug)]
pub(crate) struct SegmentRow {
    pub base_offset: i64,
    pub count: i64,
    pub created_at: i64,
    pub format: i16,
    pub records: Vec<u8>,
}

impl SegmentRow {
    pub(crate) fn decode(self) -> Result<Vec<Record>> {
        decode_segment(self.format, Bytes::from(self.records), self.count as usize)
    }
}

/// The statements a backend runs inside the append transaction.
pub(crate) trait AppendTx {
    /// Locks the given partitions (ids ascending, so concurrent writers never
    /// deadlock) and returns the state of those that exist.
    async fn lock_partitions(&mut self, ids: &[i64]) -> Result<Vec<PartitionHead>>;
    /// Index rows of the partition with one of `hashes`, created at or after `since_ms`.
    async fn probe(
        &mut self,
        partition_id: i64,
        hashes: &[i64],
        since_ms: i64,
    ) -> Result<Vec<IndexHit>>;
    /// The segment of the partition that holds `offset`, if still stored.
    async fn segment_at(&mut self, partition_id: i64, offset: i64) -> Result<Option<SegmentRow>>;
    /// Inserts segments, index rows, and moves the partition heads forward.
    async fn write(
        &mut self,
        segments: &[NewSegment],
        index: &[IndexRow],
        heads: &[PartitionHead],
    ) -> Result<()>;
}

/// A run of records for one partition, from one request. Items repeated
/// within the request were already folded by the caller.
#[derive(Debug)]
pub(crate) struct AppendJob {
    pub partition_id: i64,
    pub records: Vec<Record>,
}

/// The answer to one record of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Appended {
    pub status: PushStatus,
    pub message_id: Uuid,
    pub offset: i64,
}

/// The answer to one job.
#[derive(Debug)]
pub(crate) enum JobOutcome {
    /// One answer per record, in order.
    Done(Vec<Appended>),
    /// The partition no longer exists (its queue was deleted meanwhile).
    PartitionGone,
}

/// The dedup key of a transaction id: a stable 64-bit hash. A match is only
/// a candidate; the stored id is compared before anything is called a duplicate.
pub(crate) fn txn_hash(txn: &str) -> i64 {
    xxhash_rust::xxh3::xxh3_64(txn.as_bytes()) as i64
}

/// Runs a group commit's jobs inside `tx`; the caller commits.
pub(crate) async fn append<T: AppendTx>(
    tx: &mut T,
    jobs: &[AppendJob],
    now_ms: i64,
) -> Result<Vec<JobOutcome>> {
    let mut ids: Vec<i64> = jobs.iter().map(|j| j.partition_id).collect();
    ids.sort_unstable();
    ids.dedup();
    let heads = tx.lock_partitions(&ids).await?;

    let mut outcomes: Vec<Option<Vec<Appended>>> = jobs.iter().map(|_| None).collect();
    let mut segments = Vec::new();
    let mut index = Vec::new();
    let mut moved = Vec::new();
    for mut head in heads {
        let job_ids: Vec<usize> = (0..jobs.len())
            .filter(|&j| jobs[j].partition_id == head.id)
            .collect();
        let created_at = now_ms.max(head.last_created_at);
        let dedup = head.dedup_window_seconds > 0;
        let mut known = if dedup {
            let since = now_ms.saturating_sub(head.dedup_window_seconds.saturating_mul(1000));
            stored_originals(tx, head.id, job_ids.iter().map(|&j| &jobs[j]), since).await?
        } else {
            HashMap::new()
        };

        let mut stored: Vec<&Record> = Vec::new();
        for &j in &job_ids {
            let mut answers = Vec::with_capacity(jobs[j].records.len());
            for record in &jobs[j].records {
                let txn = record.transaction_id();
                if let Some(&(message_id, offset)) = known.get(&txn) {
                    answers.push(Appended {
                        status: PushStatus::Duplicate,
                        message_id,
                        offset,
                    });
                    continue;
                }
                let offset = head.next_offset + stored.len() as i64;
                if dedup {
                    index.push(IndexRow {
                        partition_id: head.id,
                        txn_hash: txn_hash(&txn),
                        offset,
                        created_at,
                    });
                    known.insert(txn, (record.message_id, offset));
                }
                stored.push(record);
                answers.push(Appended {
                    status: PushStatus::Queued,
                    message_id: record.message_id,
                    offset,
                });
            }
            outcomes[j] = Some(answers);
        }
        if !stored.is_empty() {
            segments.push(NewSegment {
                partition_id: head.id,
                base_offset: head.next_offset,
                count: stored.len() as i64,
                created_at,
                records: encode_segment(stored.iter().copied()),
            });
            head.next_offset += stored.len() as i64;
            head.last_created_at = created_at;
            moved.push(head);
        }
    }
    if !segments.is_empty() {
        tx.write(&segments, &index, &moved).await?;
    }
    Ok(outcomes
        .into_iter()
        .map(|o| o.map_or(JobOutcome::PartitionGone, JobOutcome::Done))
        .collect())
}

/// For every transaction id of `jobs` already stored in the partition since
/// `since_ms`: the original's message id and offset. The earliest in-window
/// copy is the original; its id is the nil UUID when its segment is gone.
async fn stored_originals<'a, T: AppendTx>(
    tx: &mut T,
    partition_id: i64,
    jobs: impl Iterator<Item = &'a AppendJob>,
    since_ms: i64,
) -> Result<HashMap<String, (Uuid, i64)>> {
    let mut wanted: HashMap<i64, Vec<String>> = HashMap::new();
    for record in jobs.flat_map(|j| &j.records) {
        let txn = record.transaction_id();
        wanted.entry(txn_hash(&txn)).or_default().push(txn);
    }
    let hashes: Vec<i64> = wanted.keys().copied().collect();
    let mut hits = tx.probe(partition_id, &hashes, since_ms).await?;
    hits.sort_by_key(|h| h.offset);

    let mut found = HashMap::new();
    let mut segments: Vec<(i64, Vec<Record>)> = Vec::new();
    for hit in hits {
        let Some(candidates) = wanted.get(&hit.txn_hash) else {
            continue;
        };
        let cached = segments
            .iter()
            .position(|(base, recs)| hit.offset >= *base && hit.offset < base + recs.len() as i64);
        let segment = match cached {
            Some(i) => Some(&segments[i]),
            None => match tx.segment_at(partition_id, hit.offset).await? {
                Some(row) => {
                    let base = row.base_offset;
                    segments.push((base, row.decode()?));
                    segments.last()
                }
                None => None,
            },
        };
        match segment {
            Some((base, records)) => {
                let record = usize::try_from(hit.offset - base)
                    .ok()
                    .and_then(|i| records.get(i))
                    .ok_or_else(|| {
                        StorageError::Corrupt("dedup index points past its segment".into())
                    })?;
                let txn = record.transaction_id();
                if candidates.contains(&txn) {
                    found.entry(txn).or_insert((record.message_id, hit.offset));
                }
            }
            // The original was removed by retention: its id can no longer be
            // compared, so the hash match decides and the id degrades to nil.
            None => {
                for txn in candidates {
                    found
                        .entry(txn.clone())
                        .or_insert((Uuid::nil(), hit.offset));
                }
            }
        }
    }
    Ok(found)
}
