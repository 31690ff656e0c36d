//! The append algorithm: dedup and offset allocation under the partition lock.
//!
//! Both backends run this same code inside one database transaction (the
//! bulk writes differ: [`crate::backend::Conn::write_appends`]). For every partition
//! of a group commit it locks the partition row (the per-partition
//! serialiser), brings the partition's [`WindowIndex`] up to date with what
//! is stored, decides for each record whether its transaction id is already
//! stored inside the queue's window, and only then allocates offsets and
//! writes one segment and one sidecar row. Because all of it happens under
//! the lock, no other writer (on this broker or another) can slip a
//! colliding id in between.

use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;

use uuid::Uuid;

use crate::backend::Conn;
use crate::dedup::run::{self, Entry as RunEntry};
use crate::dedup::screen::{self, Screened};
use crate::dedup::tail::PreHashed;
use crate::dedup::{DedupCache, HashRow, TxnKey, TxnMap, WindowIndex};
use crate::error::{Result, StorageError};
use crate::metrics::STORAGE;
use crate::model::PartitionId;
use crate::model::PushStatus;
use crate::producers::{self, ProducerBatch, ProducerState, Verdict};
use crate::record::Record;
use crate::sealing::{seal_with, SealError, Sealer};
use crate::sql;

/// A partition's write state, read under its lock.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct PartitionHead {
    pub id: PartitionId,
    pub next_offset: i64,
    pub last_created_at: i64,
    pub dedup_window_seconds: i64,
    /// Ids below this offset are in the dedup index's runs.
    pub dedup_sealed_to: i64,
    /// Changes whenever the partition's runs do.
    pub dedup_epoch: i64,
    /// Whether the queue's payloads are sealed at rest.
    pub encryption_enabled: bool,
    /// Whether the queue is mirrored from a source cluster and not yet
    /// fenced: only the mirror writes to it ([`crate::mirror`]).
    pub mirrored: bool,
}

/// A segment about to be inserted.
#[derive(Debug)]
pub(crate) struct NewSegment {
    pub partition_id: PartitionId,
    pub base_offset: i64,
    pub count: i64,
    pub created_at: i64,
    /// The largest record timestamp: a Kafka record's own, else `created_at`.
    pub max_timestamp: i64,
    pub records: Vec<u8>,
}

/// A run of records for one partition, from one request. Items repeated
/// within the request were already folded by the caller.
#[derive(Debug)]
pub(crate) struct AppendJob {
    pub partition_id: PartitionId,
    pub records: Vec<Record>,
    /// The Kafka producer and sequence of the batch, for idempotent producers.
    pub producer: Option<ProducerBatch>,
    /// What the partition's runs said of the records before the job
    /// joined a group commit, if they were asked.
    pub screened: Option<Screened>,
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
    /// Refused, nothing written: a Kafka producer's batch (sequence or
    /// epoch), or any batch for an encrypted queue on a broker without a key.
    Refused(StorageError),
    /// The partition no longer exists (its queue was deleted meanwhile);
    /// the job's records are handed back for another try.
    PartitionGone(Vec<Record>),
}

/// What an append leaves behind besides its answers: the window indexes to
/// return to the cache once the transaction has committed.
pub(crate) type Indexes = Vec<(PartitionId, WindowIndex)>;

/// The dedup key of a transaction id: a stable 64-bit hash. A match is only
/// a candidate; the stored id is compared before anything is called a duplicate.
pub(crate) fn txn_hash(txn: &str) -> i64 {
    xxhash_rust::xxh3::xxh3_64(txn.as_bytes()) as i64
}

/// Runs a group commit's jobs inside `tx`; the caller commits, then returns
/// the indexes to `cache`.
pub(crate) async fn append(
    tx: &mut Conn<'_>,
    jobs: &[AppendJob],
    now_ms: i64,
    cache: &DedupCache,
    sealer: &Sealer,
) -> Result<(Vec<JobOutcome>, Indexes)> {
    let mut ids: Vec<PartitionId> = jobs.iter().map(|j| j.partition_id).collect();
    ids.sort_unstable();
    ids.dedup();
    let heads = tx.lock_partitions(&ids).await?;

    let mut outcomes: Vec<Option<JobOutcome>> = jobs.iter().map(|_| None).collect();
    let mut changed_producers = Vec::new();
    // (partition, producer, first offset) of transactions appended to.
    let mut opened = Vec::new();
    let mut producer_states = Vec::new();
    let mut segments = Vec::new();
    let mut hash_rows = Vec::new();
    let mut moved = Vec::new();
    let mut indexes = Vec::new();
    for mut head in heads {
        if head.encryption_enabled && !sealer.has_key() {
            for (j, _) in jobs
                .iter()
                .enumerate()
                .filter(|(_, j)| j.partition_id == head.id)
            {
                outcomes[j] = Some(JobOutcome::Refused(SealError::NoKey.into()));
            }
            continue;
        }
        if head.mirrored {
            for (j, _) in jobs
                .iter()
                .enumerate()
                .filter(|(_, j)| j.partition_id == head.id)
            {
                outcomes[j] = Some(JobOutcome::Refused(StorageError::Mirrored(head.id)));
            }
            continue;
        }
        let created_at = now_ms.max(head.last_created_at);
        let since = now_ms.saturating_sub(head.dedup_window_seconds.saturating_mul(1000));
        let mut index = if head.dedup_window_seconds > 0 {
            Some(window_index(tx, cache, &head, since).await?)
        } else {
            cache.forget(head.id);
            None
        };

        // Ids stored by earlier jobs of this group: not committed yet, so
        // not in the index, but duplicates all the same.
        let mut fresh: TxnMap<(Uuid, i64)> = TxnMap::default();
        let mut originals = Originals::default();
        // Each record's hash, computed once, by job (empty for the jobs of
        // other partitions, and without a window).
        let job_hashes: Vec<Cow<[i64]>> = match &index {
            Some(_) => jobs
                .iter()
                .map(|j| match (j.partition_id == head.id, &j.screened) {
                    (true, Some(s)) if s.hashes.len() == j.records.len() => Cow::from(&s.hashes),
                    (true, _) => j.records.iter().map(Record::txn_hash).collect(),
                    (false, _) => Cow::default(),
                })
                .collect(),
            None => Vec::new(),
        };
        if let Some(index) = index.as_ref().filter(|i| !i.runs.is_empty()) {
            let batches: Vec<Batch> = jobs
                .iter()
                .zip(&job_hashes)
                .filter(|(j, _)| j.partition_id == head.id)
                .map(|(j, hashes)| (&hashes[..], j.screened.as_ref()))
                .collect();
            originals.prefetch(tx, index, &batches).await?;
        }
        // Kafka producers' state, read once per producer and kept current
        // across this group's jobs.
        let mut producers: HashMap<i64, Option<ProducerState>> = HashMap::new();
        let mut stored: Vec<&Record> = Vec::new();
        let mut stored_hashes = Vec::new();
        for (j, job) in jobs
            .iter()
            .enumerate()
            .filter(|(_, j)| j.partition_id == head.id)
        {
            if let Some(batch) = &job.producer {
                // A transactional batch needs its transaction, at the
                // producer's current epoch, to hold the partition: a
                // fenced zombie's late writes change nothing.
                if batch.transactional {
                    let found =
                        sql::transactions::admission(tx, head.id, batch.producer_id).await?;
                    if let Err(e) = crate::transactions::admit(found.as_ref(), batch.epoch) {
                        outcomes[j] = Some(JobOutcome::Refused(e.into()));
                        continue;
                    }
                }
                if let Entry::Vacant(slot) = producers.entry(batch.producer_id) {
                    slot.insert(sql::producers::state(tx, head.id, batch.producer_id).await?);
                }
                let state = producers.get(&batch.producer_id).and_then(Option::as_ref);
                match producers::judge(state, batch, job.records.len()) {
                    Verdict::Append => {
                        let base = head.next_offset + stored.len() as i64;
                        let state = producers.remove(&batch.producer_id).flatten();
                        let next = producers::record(state, batch, job.records.len(), base, now_ms);
                        producers.insert(batch.producer_id, Some(next));
                        changed_producers.push((head.id, batch.producer_id));
                        if batch.transactional {
                            opened.push((head.id, batch.producer_id, base));
                        }
                    }
                    Verdict::Duplicate { base_offset } => {
                        let answers = (0..job.records.len() as i64)
                            .map(|i| Appended {
                                status: PushStatus::Duplicate,
                                message_id: Uuid::nil(),
                                offset: base_offset + i,
                            })
                            .collect();
                        outcomes[j] = Some(JobOutcome::Done(answers));
                        continue;
                    }
                    Verdict::Refuse(e) => {
                        outcomes[j] = Some(JobOutcome::Refused(e.into()));
                        continue;
                    }
                }
            }
            let mut answers = Vec::with_capacity(job.records.len());
            for (i, record) in job.records.iter().enumerate() {
                let offset = head.next_offset + stored.len() as i64;
                // Without a window nothing is a duplicate, and the (minted)
                // transaction id is not even formatted.
                if let Some(index) = &index {
                    let id = record.transaction_id();
                    let hash = match job_hashes.get(j).and_then(|h| h.get(i)) {
                        Some(&hash) => hash,
                        // Not expected (every record of the partition is
                        // hashed above); `find` trusts only prefetched "no"s.
                        None => {
                            let hash = txn_hash(&id);
                            originals.prefetch(tx, index, &[(&[hash], None)]).await?;
                            hash
                        }
                    };
                    let txn = TxnKey { hash, id };
                    let original = match fresh.get(&txn) {
                        Some(&found) => Some(found),
                        None => {
                            originals
                                .find(tx, sealer, head.id, index, since, &txn.id, hash)
                                .await?
                        }
                    };
                    if let Some((message_id, offset)) = original {
                        answers.push(Appended {
                            status: PushStatus::Duplicate,
                            message_id,
                            offset,
                        });
                        continue;
                    }
                    stored_hashes.push(hash);
                    fresh.insert(txn, (record.message_id, offset));
                }
                stored.push(record);
                answers.push(Appended {
                    status: PushStatus::Queued,
                    message_id: record.message_id,
                    offset,
                });
            }
            outcomes[j] = Some(JobOutcome::Done(answers));
        }
        for (partition_id, producer_id) in changed_producers.drain(..) {
            if let Some(Some(state)) = producers.get(&producer_id) {
                producer_states.push((partition_id, producer_id, state.clone()));
            }
        }

        if !stored.is_empty() {
            let seal = head.encryption_enabled.then_some(sealer);
            segments.extend(pack(head.id, head.next_offset, created_at, &stored, seal)?);
            if let Some(index) = &mut index {
                let row = HashRow {
                    base_offset: head.next_offset,
                    created_at,
                    hashes: stored_hashes,
                };
                index.tail.add(&row);
                hash_rows.push((head.id, row));
            }
            head.next_offset += stored.len() as i64;
            head.last_created_at = created_at;
            if let Some(index) = &mut index {
                index.seal_if_full(tx, &head, now_ms).await?;
            }
            moved.push(head.clone());
        }
        if let Some(index) = index {
            indexes.push((head.id, index));
        }
    }
    if !segments.is_empty() {
        tx.write_appends(segments, &hash_rows, &moved).await?;
    }
    if !producer_states.is_empty() {
        producer_states.dedup_by_key(|(p, id, _)| (*p, *id));
        sql::producers::save(tx, &producer_states).await?;
    }
    if !opened.is_empty() {
        sql::transactions::open(tx, &opened).await?;
    }
    let outcomes = outcomes
        .into_iter()
        .map(|o| o.unwrap_or(JobOutcome::PartitionGone(Vec::new())))
        .collect();
    Ok((outcomes, indexes))
}

/// The most bytes packed into one segment. Readers decode whole segments, so
/// a bound here bounds the work and memory of a read, whatever the size of
/// the group commit that wrote it.
const SEGMENT_BYTES: usize = 1024 * 1024;

/// Packs consecutive records into segments of about [`SEGMENT_BYTES`],
/// each sealed by `seal` when the queue is encrypted.
pub(crate) fn pack(
    partition_id: PartitionId,
    base_offset: i64,
    created_at: i64,
    records: &[&Record],
    seal: Option<&Sealer>,
) -> Result<Vec<NewSegment>> {
    let mut segments = Vec::new();
    let mut start = 0;
    let mut blob = Vec::new();
    let mut max_timestamp = i64::MIN;
    for (i, record) in records.iter().enumerate() {
        if blob.is_empty() {
            blob.reserve_exact(segment_len(&records[i..]));
        }
        record.encode(&mut blob);
        max_timestamp = max_timestamp.max(record.timestamp_ms().unwrap_or(created_at));
        if blob.len() >= SEGMENT_BYTES || i + 1 == records.len() {
            segments.push(NewSegment {
                partition_id,
                base_offset: base_offset + start as i64,
                count: (i + 1 - start) as i64,
                created_at,
                max_timestamp,
                records: seal_with(seal, std::mem::take(&mut blob))?,
            });
            start = i + 1;
            max_timestamp = i64::MIN;
        }
    }
    Ok(segments)
}

/// The bytes of the segment that starts with `records`, so that its buffer
/// is allocated once (grown by doubling, each segment was copied about once
/// more on its way to the database).
fn segment_len(records: &[&Record]) -> usize {
    let mut len = 0;
    for record in records {
        len += record.encoded_len();
        if len >= SEGMENT_BYTES {
            break;
        }
    }
    len
}

/// The partition's index, complete up to the partition's next offset: the
/// cached one brought up to date, or one loaded afresh.
async fn window_index(
    tx: &mut Conn<'_>,
    cache: &DedupCache,
    head: &PartitionHead,
    since: i64,
) -> Result<WindowIndex> {
    let mut index = cache.take(head.id).unwrap_or_default();
    index.refresh(tx, head, since).await?;
    Ok(index)
}

/// A job's hashes, and what its screen found.
type Batch<'a> = (&'a [i64], Option<&'a Screened>);

/// Looks up the stored originals of transaction ids, reading each segment
/// and each run page once per group commit.
#[derive(Default)]
struct Originals {
    segments: Vec<(i64, Vec<Record>)>,
    pages: HashMap<(i64, i64), Vec<RunEntry>>,
    /// The prefetched hashes some run's filter said "maybe" to: the only
    /// ones whose runs [`Self::find`] looks at (probing a large filter is a
    /// cache miss, so each is probed once per append, not twice).
    maybe: HashSet<i64, BuildHasherDefault<PreHashed>>,
    /// The partition's first offset inside the window, once needed.
    window_start: Option<i64>,
}

impl Originals {
    /// Reads, in one go, the run pages that the filters say may hold any
    /// of the batches' hashes: one round trip per append rather than one
    /// per "maybe". A batch's screen answers for the runs it asked, and
    /// names the pages of its "maybe"s.
    async fn prefetch(
        &mut self,
        tx: &mut Conn<'_>,
        index: &WindowIndex,
        batches: &[Batch<'_>],
    ) -> Result<()> {
        let mut wanted: Vec<(i64, i64)> = Vec::new();
        for &(hashes, screened) in batches {
            let unasked = index
                .runs
                .iter()
                .filter(|r| !screened.is_some_and(|s| s.asked(r.id)));
            let (maybe, keys) = screen::probe(unasked, hashes);
            self.maybe.extend(maybe);
            wanted.extend(keys);
            if let Some(screened) = screened {
                self.maybe.extend(&screened.maybe);
                // A retired run's pages may be gone already.
                let live = |key: &&(i64, i64)| index.runs.iter().any(|r| r.id == key.0);
                wanted.extend(screened.pages.iter().filter(live));
            }
        }
        wanted.sort_unstable();
        wanted.dedup();
        wanted.retain(|key| !self.pages.contains_key(key));
        STORAGE.dedup_pages_read.inc_by(wanted.len() as u64);
        if !wanted.is_empty() {
            self.pages.extend(tx.read_pages(&wanted).await?);
        }
        Ok(())
    }

    /// The original (message id, offset) of `txn` (whose hash is `hash`)
    /// in the partition's window starting at `since`: the lowest in-window
    /// candidate offset whose stored id is `txn`. When the segment is gone
    /// (retention) the hash decides and the id is nil. `hash` must have
    /// gone through [`Self::prefetch`]: the runs are asked only for a hash
    /// whose prefetch found a "maybe".
    #[allow(clippy::too_many_arguments)]
    async fn find(
        &mut self,
        tx: &mut Conn<'_>,
        sealer: &Sealer,
        partition_id: PartitionId,
        index: &WindowIndex,
        since: i64,
        txn: &str,
        hash: i64,
    ) -> Result<Option<(Uuid, i64)>> {
        let mut candidates: Vec<i64> = index.tail.candidates(hash).collect();
        let runs = match self.maybe.contains(&hash) {
            true => &index.runs[..],
            false => &[],
        };
        for run in runs {
            for page_no in run.pages_for(hash) {
                let page = match self.pages.entry((run.id, page_no)) {
                    Entry::Occupied(page) => page.into_mut(),
                    Entry::Vacant(slot) => {
                        STORAGE.dedup_pages_read.inc();
                        slot.insert(sql::dedup::page(tx, run.id, page_no).await?)
                    }
                };
                candidates.extend(run::offsets_in(page, hash));
            }
        }
        if candidates.is_empty() {
            return Ok(None);
        }
        let low = match self.window_start {
            Some(low) => low,
            None => {
                let low = sql::dedup::window_start(tx, partition_id, since)
                    .await?
                    .unwrap_or(i64::MAX);
                *self.window_start.insert(low)
            }
        };
        candidates.retain(|&o| o >= low);
        candidates.sort_unstable();
        candidates.dedup();
        for offset in candidates {
            match self.record_at(tx, sealer, partition_id, offset).await? {
                Some(record) if record.has_transaction_id(txn) => {
                    return Ok(Some((record.message_id, offset)));
                }
                Some(_) => {} // another id with the same hash
                None => return Ok(Some((Uuid::nil(), offset))),
            }
        }
        Ok(None)
    }

    async fn record_at(
        &mut self,
        tx: &mut Conn<'_>,
        sealer: &Sealer,
        partition_id: PartitionId,
        offset: i64,
    ) -> Result<Option<&Record>> {
        let held = |(base, records): &(i64, Vec<Record>)| {
            offset >= *base && offset < base + records.len() as i64
        };
        let position = match self.segments.iter().position(held) {
            Some(i) => i,
            None => match sql::segments::at(tx, partition_id, offset).await? {
                Some(row) => {
                    self.segments.push((row.base_offset, row.decode(sealer)?));
                    self.segments.len() - 1
                }
                None => return Ok(None),
            },
        };
        let (base, records) = &self.segments[position];
        let record = usize::try_from(offset - base)
            .ok()
            .and_then(|i| records.get(i))
            .ok_or_else(|| StorageError::Corrupt("sidecar points past its segment".into()))?;
        Ok(Some(record))
    }
}
