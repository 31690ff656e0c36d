//! Acknowledgements: resolve transaction ids to offsets inside the leased
//! span, then move the group's cursor, retry, or dead-letter.
//!
//! Per (partition, group), under the lease row's lock:
//! - the items are checked against the lease (an ack naming a lease must
//!   name the live one; a repeat of a released lease's `completed` ack is a
//!   harmless no-op);
//! - their transaction ids are resolved by reading the segments of the
//!   leased span (or, for an ack without a lease, a bounded stretch after
//!   the cursor), so this needs no index and works on queues without dedup;
//! - `completed` is cumulative; the lowest `failed`/`retry`/`dlq` signal
//!   wins and puts the cursor back at (or past) its message.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::{CursorRow, LeaseRow, NewDeadLetter, UNLEASED_ACK_BELOW, UNLEASED_ACK_SPAN};
use crate::backend::Conn;
use crate::error::{Result, StorageError};
use crate::model::{PartitionId, StoredMessage};
use crate::offsets_log;
use crate::record::Record;
use crate::sealing::seal_with;
use crate::sql::segments::{Kept, Source, Visit};
use crate::sql::{consume, dead_letters};

/// The dead-letter error text of a message whose retries ran out.
const RETRIES_EXHAUSTED: &str = "Retries exhausted";

/// What a consumer says about a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckStatus {
    /// Done: the cursor moves past it (and everything before it in the span).
    Completed,
    /// Failed: redelivered, charging the retry budget; dead-lettered once
    /// the budget is spent.
    Failed,
    /// Redeliver without charging the retry budget.
    Retry,
    /// Dead-letter it now.
    Dlq,
}

impl AckStatus {
    /// Reads a status as clients send it, case-insensitively: `completed`
    /// and `success` are [`Self::Completed`], as is anything unknown.
    pub fn parse(status: &str) -> Self {
        let is = |name: &str| status.eq_ignore_ascii_case(name);
        if is("failed") {
            Self::Failed
        } else if is("retry") {
            Self::Retry
        } else if is("dlq") {
            Self::Dlq
        } else {
            Self::Completed
        }
    }

    /// Which signal wins at equal offsets: `dlq` beats `failed` beats `retry`.
    fn strength(self) -> u8 {
        match self {
            Self::Dlq => 3,
            Self::Failed => 2,
            Self::Retry => 1,
            Self::Completed => 0,
        }
    }
}

/// One acknowledgement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckItem {
    /// The message's transaction id.
    pub transaction_id: String,
    /// The partition it was popped from.
    pub partition_id: PartitionId,
    /// What happened to it.
    pub status: AckStatus,
    /// The consumer's error text (kept on a dead letter).
    pub error: Option<String>,
    /// The lease it was delivered under; `None` skips the lease check.
    pub lease_id: Option<String>,
}

/// Why an acknowledgement was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AckRefusal {
    /// The named lease is not the live lease of the partition for the group.
    #[error("invalid or expired lease")]
    InvalidLease,
    /// The transaction id is not in the span, or is below the cursor.
    #[error("transaction is unresolvable, already committed, or acknowledgment is stale")]
    Unresolvable,
    /// No partition has that id.
    #[error("no partition {0}")]
    NoPartition(PartitionId),
}

/// The answer to one acknowledgement.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AckResult {
    /// Why it was refused; `None` when it was honoured.
    pub refusal: Option<AckRefusal>,
    /// The lease on the partition ended with this request.
    pub lease_released: bool,
    /// This item filed a dead letter.
    pub dlq: bool,
    /// A repeat of an already committed `completed` ack: nothing changed.
    pub noop: bool,
    /// The queue of the partition, when known (shared by the partition's
    /// items: a batch of a thousand would otherwise copy it a thousand times).
    pub queue: Option<Arc<str>>,
    /// The partition name, when known.
    pub partition: Option<Arc<str>>,
}

impl AckResult {
    /// Whether the acknowledgement was honoured.
    pub fn success(&self) -> bool {
        self.refusal.is_none()
    }
}

/// Runs a whole request: items grouped by partition, partitions in
/// ascending id order. Returns one result per item and the queues where a
/// lease ended (their waiting pops are woken).
pub(crate) async fn run(
    tx: &mut Conn<'_>,
    kept: Kept<'_>,
    group: &str,
    items: &[AckItem],
    now: i64,
) -> Result<(Vec<AckResult>, Vec<String>)> {
    let mut by_partition: BTreeMap<PartitionId, Vec<usize>> = BTreeMap::new();
    for (i, item) in items.iter().enumerate() {
        by_partition.entry(item.partition_id).or_default().push(i);
    }
    let mut results = vec![AckResult::default(); items.len()];
    let mut woken = Vec::new();
    for (partition_id, indexes) in by_partition {
        if let Some(queue) = partition(
            tx,
            kept,
            group,
            partition_id,
            items,
            &indexes,
            now,
            &mut results,
        )
        .await?
        {
            woken.push(queue);
        }
    }
    woken.sort();
    woken.dedup();
    Ok((results, woken))
}

/// How an item relates to the lease row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Names the live lease.
    Leased,
    /// Names the lease the row last held, no longer live.
    Stale,
    /// Names no lease.
    Free,
}

/// Where a transaction id was found.
#[derive(Debug, Default)]
struct Found {
    /// The highest offset below the cursor holding it.
    below: Option<i64>,
    /// The lowest offset at or after the cursor holding it, with the message.
    pending: Option<(i64, i64, Record)>,
}

/// Applies the items of one partition. Returns the queue name when a lease ended.
#[allow(clippy::too_many_arguments)]
async fn partition(
    tx: &mut Conn<'_>,
    kept: Kept<'_>,
    group: &str,
    partition_id: PartitionId,
    items: &[AckItem],
    indexes: &[usize],
    now: i64,
    results: &mut [AckResult],
) -> Result<Option<String>> {
    // The lease row is the (partition, group) lock: the cursor is read
    // once it is held, so no other pop or ack can have moved it since.
    let lease_row = consume::lock_lease(tx, partition_id, group).await?;
    let read = match lease_row {
        Some(_) => consume::partition(tx, partition_id, group).await?,
        None => None,
    };
    let (Some((part, stored)), Some(mut lease)) = (read, lease_row) else {
        for &i in indexes {
            results[i].refusal = Some(AckRefusal::NoPartition(partition_id));
        }
        return Ok(None);
    };
    // The broker's internal topics are written by the broker alone.
    if offsets_log::is_reserved(&part.queue) {
        return Err(StorageError::Reserved(part.queue));
    }
    let (queue, partition_name): (Arc<str>, Arc<str>) =
        (part.queue.as_str().into(), part.partition.as_str().into());
    for &i in indexes {
        results[i].queue = Some(Arc::clone(&queue));
        results[i].partition = Some(Arc::clone(&partition_name));
    }
    let cursor = stored.map_or(
        CursorRow {
            committed_offset: part.log_start,
            retry_count: 0,
        },
        |c| CursorRow {
            committed_offset: c.committed_offset.max(part.log_start),
            retry_count: c.retry_count,
        },
    );
    let c = cursor.committed_offset;
    let live = lease.lease_id.is_some() && lease.expires_at > now;

    let mut scopes = Vec::with_capacity(indexes.len());
    for &i in indexes {
        let scope = match items[i].lease_id.as_deref() {
            Some(l) if lease.is_live(l, now) => Some(Scope::Leased),
            Some(l) if lease.lease_id.as_deref() == Some(l) => Some(Scope::Stale),
            Some(_) => None,
            None => Some(Scope::Free),
        };
        if scope.is_none() {
            results[i].refusal = Some(AckRefusal::InvalidLease);
        }
        scopes.push(scope);
    }

    // The stretch to search: the lease's span (live or last), and for acks
    // without a lease a bounded stretch after the cursor.
    let has_span = lease.span_end > lease.span_start;
    let mut lo = if has_span { lease.span_start.min(c) } else { c };
    let mut hi = if has_span { lease.span_end.max(c) } else { c };
    if scopes.contains(&Some(Scope::Free)) {
        // Below the cursor only to recognise recent repeats as no-ops.
        lo = lo.min(c.saturating_sub(UNLEASED_ACK_BELOW));
        hi = hi.max(c.saturating_add(UNLEASED_ACK_SPAN));
    }
    // Nothing at or past the last stable offset was ever delivered.
    lo = lo.max(part.log_start);
    hi = hi.min(part.last_stable);
    let mut found: HashMap<&str, Found> = indexes
        .iter()
        .zip(&scopes)
        .filter(|(_, s)| s.is_some())
        .map(|(&i, _)| (items[i].transaction_id.as_str(), Found::default()))
        .collect();
    resolve(tx, kept, partition_id, lo, hi, c, &mut found).await?;
    hide_uncommitted(tx, partition_id, &mut found).await?;

    // What each item means for the cursor.
    enum Verdict {
        Apply(i64),
        Noop,
    }
    let mut verdicts: Vec<Option<Verdict>> = Vec::with_capacity(indexes.len());
    for (&i, scope) in indexes.iter().zip(&scopes) {
        let Some(scope) = scope else {
            verdicts.push(None);
            continue;
        };
        let item = &items[i];
        let f = found.get(item.transaction_id.as_str());
        let pending = f.and_then(|f| f.pending.as_ref()).map(|(o, _, _)| *o);
        let below = f.and_then(|f| f.below);
        let completed = item.status == AckStatus::Completed;
        let in_span = |o: i64| o >= lease.span_start && o < lease.span_end;
        let verdict = match scope {
            Scope::Leased => match (pending, below) {
                (Some(o), _) if in_span(o) => Some(Verdict::Apply(o)),
                (_, Some(o)) if completed && in_span(o) => Some(Verdict::Noop),
                _ => None,
            },
            Scope::Stale => match below {
                Some(o) if completed && in_span(o) => Some(Verdict::Noop),
                _ => {
                    results[i].refusal = Some(AckRefusal::InvalidLease);
                    verdicts.push(None);
                    continue;
                }
            },
            Scope::Free => match (pending, below) {
                (Some(o), _) => Some(Verdict::Apply(o)),
                (None, Some(_)) if completed => Some(Verdict::Noop),
                _ => None,
            },
        };
        if verdict.is_none() {
            results[i].refusal = Some(AckRefusal::Unresolvable);
        }
        if matches!(verdict, Some(Verdict::Noop)) {
            results[i].noop = true;
        }
        verdicts.push(verdict);
    }

    // The lowest signal wins; at equal offsets the stronger one.
    let mut signal: Option<(i64, AckStatus, usize)> = None;
    for (&i, verdict) in indexes.iter().zip(&verdicts) {
        if let (Some(Verdict::Apply(o)), status) = (verdict, items[i].status) {
            if status == AckStatus::Completed {
                continue;
            }
            let better = match signal {
                None => true,
                Some((so, ss, _)) => *o < so || (*o == so && status.strength() > ss.strength()),
            };
            if better {
                signal = Some((*o, status, i));
            }
        }
    }
    let completed_max = indexes
        .iter()
        .zip(&verdicts)
        .filter_map(|(&i, v)| match v {
            Some(Verdict::Apply(o)) if items[i].status == AckStatus::Completed => Some(*o),
            _ => None,
        })
        .filter(|o| signal.is_none_or(|(so, _, _)| *o < so))
        .max();

    let mut next = cursor;
    if let Some(m) = completed_max {
        if m + 1 > next.committed_offset {
            next = CursorRow {
                committed_offset: m + 1,
                retry_count: 0,
            };
        }
    }
    let mut release = false;
    // After a charged failure the partition rests for the queue's retryDelay
    // before the group can claim it again.
    let mut rest_until = 0;
    if let Some((offset, status, i)) = signal {
        let charged = if offset == c { cursor.retry_count } else { 0 };
        let options = &part.options;
        let mut file = false;
        next.committed_offset = offset;
        next.retry_count = charged;
        match status {
            AckStatus::Failed if charged >= options.retry_limit => {
                file = options.dead_letter_queue || options.dlq_after_max_retries;
                next.committed_offset = offset + 1;
                next.retry_count = 0;
            }
            AckStatus::Failed => {
                next.retry_count = charged + 1;
                rest_until = now.saturating_add(options.retry_delay.max(0));
            }
            AckStatus::Retry | AckStatus::Completed => {}
            AckStatus::Dlq => {
                file = true;
                next.committed_offset = offset + 1;
                next.retry_count = 0;
            }
        }
        if file {
            let Some((_, created_at, record)) = found
                .get(items[i].transaction_id.as_str())
                .and_then(|f| f.pending.as_ref())
            else {
                return Err(crate::StorageError::Corrupt(
                    "a resolved ack lost its message".into(),
                ));
            };
            let mut bytes = Vec::new();
            record.encode(&mut bytes);
            let seal = options.encryption_enabled.then_some(kept.sealer);
            let default_error = if status == AckStatus::Dlq {
                "Dead-lettered by the consumer"
            } else {
                RETRIES_EXHAUSTED
            };
            dead_letters::file(
                tx,
                &NewDeadLetter {
                    queue_id: part.queue_id,
                    partition_id,
                    group,
                    offset,
                    transaction_id: items[i].transaction_id.clone(),
                    error: Some(items[i].error.as_deref().unwrap_or(default_error)),
                    retry_count: charged,
                    created_at: *created_at,
                    failed_at: now,
                    record: seal_with(seal, bytes)?,
                },
            )
            .await?;
            results[i].dlq = true;
        }
        release = live;
    } else if live && next.committed_offset >= lease.span_end {
        release = true;
    }

    let moved = (next != cursor || stored.is_none()).then_some(next);
    if release {
        lease = if rest_until > now {
            // Nobody holds it while it rests: no ack or extend can match it.
            LeaseRow {
                lease_id: None,
                expires_at: rest_until,
                ..lease
            }
        } else {
            LeaseRow {
                expires_at: 0,
                ..lease
            }
        };
        consume::save(tx, partition_id, group, Some(&lease), moved, now).await?;
        for (&i, verdict) in indexes.iter().zip(&verdicts) {
            if verdict.is_some() {
                results[i].lease_released = true;
            }
        }
        return Ok(Some(part.queue));
    }
    consume::save(tx, partition_id, group, None, moved, now).await?;
    Ok(None)
}

/// Reads the segments of `[lo, hi)` until every wanted transaction id has
/// an offset at or after the cursor `c` (or the stretch ends).
async fn resolve(
    tx: &mut Conn<'_>,
    kept: Kept<'_>,
    partition_id: PartitionId,
    lo: i64,
    hi: i64,
    c: i64,
    found: &mut HashMap<&str, Found>,
) -> Result<()> {
    let mut next = lo;
    let mut unresolved = found.len();
    if next >= hi || unresolved == 0 {
        return Ok(());
    }
    kept.scan(Source::Conn(tx), partition_id, lo, |segment| {
        let base = segment.base_offset;
        let created_at = segment.created_at;
        let end = segment.end();
        // Only the records of [next, hi) are decoded.
        let skip = usize::try_from(next - base).unwrap_or(0);
        let take = usize::try_from(hi - base).unwrap_or(0).saturating_sub(skip);
        for m in segment.stored_range(skip, take)?.decode() {
            let StoredMessage { offset, record, .. } = m?;
            if let Some(f) = record.with_transaction_id(|txn| found.get_mut(txn)) {
                if offset < c {
                    f.below = Some(offset);
                } else if f.pending.is_none() {
                    f.pending = Some((offset, created_at, record));
                    unresolved -= 1;
                }
            }
        }
        next = next.max(end);
        let done = next >= hi || unresolved == 0;
        Ok(match (done, end > hi) {
            (false, _) => Visit::Next,
            // The next pop goes on inside this segment.
            (true, true) => Visit::StopInside,
            (true, false) => Visit::Stop,
        })
    })
    .await
}

/// Forgets the pending messages that are Kafka transaction markers or
/// records of aborted transactions: they were never delivered, so no ack
/// may move the cursor to them or dead-letter them.
async fn hide_uncommitted(
    tx: &mut Conn<'_>,
    partition_id: PartitionId,
    found: &mut HashMap<&str, Found>,
) -> Result<()> {
    let mut pending: Vec<(i64, Record)> = found
        .values()
        .filter_map(|f| f.pending.as_ref())
        .filter(|(_, _, record)| record.txn().is_some())
        .map(|(offset, _, record)| (*offset, record.clone()))
        .collect();
    if pending.is_empty() {
        return Ok(());
    }
    pending.sort_by_key(|(offset, _)| *offset);
    let all: Vec<i64> = pending.iter().map(|(offset, _)| *offset).collect();
    crate::transactions::retain_committed(tx, partition_id, &mut pending, |(o, r)| (*o, r)).await?;
    for f in found.values_mut() {
        let hidden = f.pending.as_ref().is_some_and(|(offset, _, _)| {
            all.contains(offset) && !pending.iter().any(|(o, _)| o == offset)
        });
        if hidden {
            f.pending = None;
        }
    }
    Ok(())
}
