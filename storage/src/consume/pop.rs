//! The pop: claim partitions for a group, deliver from the cursor, record
//! what was delivered under the lease.
//!
//! Candidates are listed on a reader (no lock, no write transaction for an
//! empty pop); the write transaction then claims them in order with a
//! conditional write of their lease rows (on PostgreSQL as many as it needs
//! in one statement), which passes over a row another lease of the group
//! holds. The claim is the only arbiter: a candidate that was claimed
//! meanwhile is simply skipped, so two pops (on one broker or two) never
//! hold the same (partition, group) at once.

use std::time::Duration;

use tokio::time::Instant;

use super::{
    cursor, lease_seconds, validate_group, CursorRow, LeaseRow, PopOutcome, PopRequest,
    PoppedMessage, SubscriptionMode, MAX_POP_BATCH, MAX_POP_PARTITIONS, QUEUE_MODE_GROUP,
};
use crate::backend::Conn;
use crate::error::Result;
use crate::model::PartitionId;
use crate::options::QueueOptions;
use crate::partitions::QueueRef;
use crate::sql::consume;
use crate::sql::segments::{Kept, Source, Visit};
use crate::Engine;
/// How long a waiting pop sleeps at most before it looks again when
/// messages exist but time-based rules (delay, window buffer) hold them.
const RECHECK: Duration = Duration::from_secs(1);

/// A waiting pop stops trying this long before its deadline, so its answer
/// arrives in time.
const DEADLINE_MARGIN: Duration = Duration::from_millis(25);

/// What the candidate query filters on.
#[derive(Debug)]
pub(crate) struct CandidateFilter<'a> {
    pub queue_id: i64,
    pub group: &'a str,
    pub now: i64,
    pub limit: i64,
    pub partition: Option<&'a str>,
    /// Only partitions whose newest message is at least this old (window buffer).
    pub quiet_since: Option<i64>,
    /// Only partitions whose message at the cursor is at least this old (delay).
    pub visible_before: Option<i64>,
}

/// One pop transaction's work.
#[derive(Debug)]
pub(crate) struct PopJob {
    pub group: String,
    pub candidates: Vec<PartitionId>,
    pub batch: usize,
    pub max_partitions: usize,
    /// The lease to grant; with `auto_ack` it is released at once.
    pub lease_id: String,
    pub lease_ms: i64,
    pub auto_ack: bool,
    pub subscription: SubscriptionMode,
    pub now: i64,
}

pub(crate) async fn pop(engine: &Engine, request: &PopRequest) -> Result<PopOutcome> {
    validate_group(&request.group)?;
    let lease_id = crate::new_message_id().to_string();
    let deadline = request.wait.map(|w| Instant::now() + w);
    let wake = engine.inner.consume.wake.clone();
    loop {
        // Armed before the attempt: a push landing after it still wakes us.
        let notify = wake.subscribe(&request.queue);
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();

        let (outcome, recheck) = attempt(engine, request, &lease_id, request.batch).await?;
        if !outcome.messages.is_empty() {
            return Ok(outcome);
        }
        let Some(deadline) = deadline else {
            return Ok(outcome);
        };
        if !wait_again(notified.as_mut(), deadline, recheck).await {
            return Ok(PopOutcome::default());
        }
    }
}

pub(crate) async fn pop_matching(
    engine: &Engine,
    namespace: Option<&str>,
    task: Option<&str>,
    request: &PopRequest,
    access: &crate::Access,
) -> Result<PopOutcome> {
    validate_group(&request.group)?;
    let lease_id = crate::new_message_id().to_string();
    let deadline = request.wait.map(|w| Instant::now() + w);
    let wake = engine.inner.consume.wake.clone();
    loop {
        let notify = wake.any();
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();

        let mut queues: Vec<(String, QueueOptions)> = engine
            .queues()
            .await?
            .into_iter()
            .filter(|q| {
                namespace.is_none_or(|n| n.is_empty() || q.options.namespace == n)
                    && task.is_none_or(|t| t.is_empty() || q.options.task == t)
                    // Listed again on every try: a queue created while the
                    // pop waits is checked too.
                    && access.topic(crate::AclOperation::Read, &q.name)
            })
            .map(|q| (q.name, q.options))
            .collect();
        queues.sort_by(|a, b| b.1.priority.cmp(&a.1.priority).then(a.0.cmp(&b.0)));

        let mut total = PopOutcome::default();
        let mut recheck: Option<Duration> = None;
        for (queue, _) in queues {
            let budget = request.batch.saturating_sub(total.messages.len());
            let partitions = request
                .max_partitions
                .saturating_sub(total.partitions_claimed);
            if budget == 0 || partitions == 0 {
                break;
            }
            let one = PopRequest {
                queue,
                partition: None,
                max_partitions: partitions,
                ..request.clone()
            };
            let (outcome, r) = attempt(engine, &one, &lease_id, budget).await?;
            recheck = match (recheck, r) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if !outcome.messages.is_empty() {
                total.lease_id = outcome.lease_id;
                total.partitions_claimed += outcome.partitions_claimed;
                total.messages.extend(outcome.messages);
            }
        }
        if !total.messages.is_empty() {
            return Ok(total);
        }
        let Some(deadline) = deadline else {
            return Ok(total);
        };
        if !wait_again(notified.as_mut(), deadline, recheck).await {
            return Ok(PopOutcome::default());
        }
    }
}

/// After an empty try: sleeps until a wake-up, the next recheck, or just
/// before the deadline. `false` when no time is left to try again, so the
/// answer still reaches the client before its timeout.
async fn wait_again(
    notified: std::pin::Pin<&mut tokio::sync::futures::Notified<'_>>,
    deadline: Instant,
    recheck: Option<Duration>,
) -> bool {
    let now = Instant::now();
    if now + DEADLINE_MARGIN >= deadline {
        return false;
    }
    let until = recheck.map_or(deadline, |r| (now + r).min(deadline)) - DEADLINE_MARGIN;
    tokio::select! {
        () = notified => {}
        () = tokio::time::sleep_until(until.max(now)) => {}
    }
    true
}

/// One try: the outcome, and when an empty one should look again even if
/// nothing wakes it (`None`: only a wake-up can change the answer).
async fn attempt(
    engine: &Engine,
    request: &PopRequest,
    lease_id: &str,
    batch: usize,
) -> Result<(PopOutcome, Option<Duration>)> {
    let store = &engine.inner.store;
    let Some(QueueRef {
        id: queue_id,
        options,
    }) = engine.queue_ref(&request.queue).await?
    else {
        return Ok((PopOutcome::default(), None));
    };
    let now = engine.inner.clock.now_ms();
    if request.group != QUEUE_MODE_GROUP {
        register(engine, queue_id, &request.group, request.subscription, now).await?;
    }
    let max_partitions = request.max_partitions.clamp(1, MAX_POP_PARTITIONS);
    let batch = batch.clamp(1, MAX_POP_BATCH);
    let filter = CandidateFilter {
        queue_id,
        group: &request.group,
        now,
        // A few spares, for candidates another consumer claims first.
        limit: (max_partitions * 2 + 4) as i64,
        partition: request.partition.as_deref(),
        quiet_since: (options.window_buffer > 0)
            .then(|| now.saturating_sub(options.window_buffer.saturating_mul(1000))),
        visible_before: (options.delayed_processing > 0)
            .then(|| now.saturating_sub(options.delayed_processing.saturating_mul(1000))),
    };
    let listed = consume::candidates(store, &filter).await?;
    let missing: Vec<PartitionId> = listed
        .iter()
        .filter(|(_, has)| !has)
        .map(|(id, _)| *id)
        .collect();
    if !missing.is_empty() {
        store.create_lease_rows(&missing, &request.group).await?;
    }
    let mut candidates: Vec<PartitionId> = listed.into_iter().map(|(id, _)| id).collect();
    let timed = options.window_buffer > 0 || options.delayed_processing > 0;
    if candidates.is_empty() {
        let expiry = consume::next_expiry(store, queue_id, &request.group, now).await?;
        let until_expiry = expiry.map(|e| Duration::from_millis((e - now).max(1) as u64));
        let recheck = match (until_expiry, timed) {
            (Some(d), true) => Some(d.min(RECHECK)),
            (Some(d), false) => Some(d),
            (None, true) => Some(RECHECK),
            (None, false) => None,
        };
        return Ok((PopOutcome::default(), recheck));
    }
    // Concurrent consumers see the same list; starting at different places
    // spreads them over it instead of queueing them on its head.
    if candidates.len() > max_partitions {
        let shift = (crate::new_message_id().as_u128() % candidates.len() as u128) as usize;
        candidates.rotate_left(shift);
    }
    let lease_ms = lease_seconds(request.lease_seconds, &options).saturating_mul(1000);
    let job = PopJob {
        group: request.group.clone(),
        candidates,
        batch,
        max_partitions,
        lease_id: lease_id.to_owned(),
        lease_ms,
        auto_ack: request.auto_ack,
        subscription: request.subscription,
        now,
    };
    let outcome = engine.inner.consume.writers.pop(job).await?;
    let recheck = (outcome.messages.is_empty() && timed).then_some(RECHECK);
    Ok((outcome, recheck))
}

/// Registers a named group on the queue the first time this engine sees
/// the pair.
async fn register(
    engine: &Engine,
    queue_id: i64,
    group: &str,
    mode: SubscriptionMode,
    now: i64,
) -> Result<()> {
    let key = (queue_id, group.to_owned());
    if engine.inner.consume.registered().contains(&key) {
        return Ok(());
    }
    consume::register(&engine.inner.store, queue_id, group, mode, now).await?;
    let mut registered = engine.inner.consume.registered();
    if registered.len() >= 100_000 {
        registered.clear();
    }
    registered.insert(key);
    Ok(())
}

/// The pop transaction: claims candidates in order until `max_partitions`
/// of them delivered something or the batch is full.
pub(crate) async fn run(tx: &mut Conn<'_>, job: &PopJob, kept: Kept<'_>) -> Result<PopOutcome> {
    let mut outcome = PopOutcome::default();
    let expires_at = job.now.saturating_add(job.lease_ms);
    let mut rest = job.candidates.as_slice();
    while !rest.is_empty() {
        let wanted = job
            .max_partitions
            .saturating_sub(outcome.partitions_claimed);
        if wanted == 0 || outcome.messages.len() >= job.batch {
            break;
        }
        let (claimed, looked) = consume::claim_first(
            tx,
            rest,
            wanted,
            &job.group,
            &job.lease_id,
            expires_at,
            job.now,
        )
        .await?;
        rest = rest.get(looked..).unwrap_or_default();
        for (partition_id, lease) in claimed {
            // A budget spent by the partitions before frees the lease
            // again (nothing is delivered).
            let budget = job.batch.saturating_sub(outcome.messages.len());
            let delivered = deliver(tx, job, kept, partition_id, lease, expires_at, budget).await?;
            if !delivered.is_empty() {
                outcome.partitions_claimed += 1;
                outcome.messages.extend(delivered);
            }
        }
    }
    if !outcome.messages.is_empty() && !job.auto_ack {
        outcome.lease_id = job.lease_id.clone();
    }
    Ok(outcome)
}

/// Delivers up to `budget` messages of a claimed partition from the
/// group's cursor and records the span under the lease (or, committing at
/// delivery, moves the cursor past it and frees the lease).
async fn deliver(
    tx: &mut Conn<'_>,
    job: &PopJob,
    kept: Kept<'_>,
    partition_id: PartitionId,
    lease: LeaseRow,
    expires_at: i64,
    budget: usize,
) -> Result<Vec<PoppedMessage>> {
    let Some((part, stored)) = consume::partition(tx, partition_id, &job.group).await? else {
        return Ok(Vec::new()); // deleted since it was listed
    };
    let mut cursor = match stored {
        Some(c) => CursorRow {
            committed_offset: c.committed_offset.max(part.log_start),
            retry_count: c.retry_count,
        },
        None => CursorRow {
            committed_offset: cursor::seed(tx, &part, partition_id, &job.group, job.subscription)
                .await?,
            retry_count: 0,
        },
    };
    let visible_before = (part.options.delayed_processing > 0).then(|| {
        job.now
            .saturating_sub(part.options.delayed_processing.saturating_mul(1000))
    });
    let evict_before = (part.options.max_wait_time_seconds > 0).then(|| {
        job.now
            .saturating_sub(part.options.max_wait_time_seconds.saturating_mul(1000))
    });

    // Read from the cursor up to the last stable offset: messages that
    // waited past maxWaitTimeSeconds are skipped (they are the oldest, so
    // they lead); a message still inside its delay ends the batch (every
    // later one is younger). Kafka transaction markers and aborted records
    // are never delivered: leading ones are consumed (the cursor moves
    // past them), later ones lie inside the span and go with its ack.
    let upper = part.last_stable;
    let mut taken: Vec<(i64, i64, crate::record::Record)> = Vec::new();
    let mut next = cursor.committed_offset;
    while taken.len() < budget && next < upper {
        let from = next;
        let room = budget - taken.len();
        let mut read: Vec<(i64, i64, crate::record::Record)> = Vec::new();
        kept.scan(Source::Conn(tx), partition_id, next, |segment| {
            let base = segment.base_offset;
            let created_at = segment.created_at;
            if visible_before.is_some_and(|v| created_at > v) {
                return Ok(Visit::Stop);
            }
            if taken.is_empty()
                && read.is_empty()
                && segment.end() <= upper
                && evict_before.is_some_and(|e| created_at < e)
            {
                cursor.committed_offset = segment.end();
                cursor.retry_count = 0;
                next = cursor.committed_offset;
                return Ok(Visit::Next);
            }
            // Only the records this batch takes are decoded.
            let skip = usize::try_from(next - base).unwrap_or(0);
            let start = base + skip as i64;
            if start >= upper {
                return Ok(Visit::Stop);
            }
            let stable = usize::try_from(upper - start).unwrap_or(usize::MAX);
            let take = (room - read.len()).min(stable);
            let stored = segment.stored_range(skip, take)?;
            read.reserve(stored.len());
            for m in stored.decode() {
                let m = m?;
                next = m.offset + 1;
                read.push((m.offset, m.created_at_ms, m.record));
            }
            let done = read.len() >= room || next >= upper;
            Ok(match (done, next < segment.end()) {
                (false, _) => Visit::Next,
                // The next pop goes on inside this segment.
                (true, true) => Visit::StopInside,
                (true, false) => Visit::Stop,
            })
        })
        .await?;
        if next == from {
            break; // nothing more to read now
        }
        let scanned = read.len();
        crate::transactions::retain_committed(tx, partition_id, &mut read, |(o, _, r)| (*o, r))
            .await?;
        if taken.is_empty() {
            let first_seen = read.first().map_or(next, |(o, _, _)| *o);
            if first_seen > cursor.committed_offset {
                cursor.committed_offset = first_seen;
                cursor.retry_count = 0;
            }
        }
        let hidden = read.len() < scanned;
        taken.extend(read);
        if !hidden {
            break; // the scan stopped at the budget, a delay or the end
        }
    }

    let moved = stored.map(|c| c.committed_offset) != Some(cursor.committed_offset)
        || stored.map(|c| c.retry_count) != Some(cursor.retry_count);
    if taken.is_empty() {
        let free = LeaseRow {
            expires_at: 0,
            ..lease
        };
        let cursor = moved.then_some(cursor);
        consume::save(tx, partition_id, &job.group, Some(&free), cursor, job.now).await?;
        return Ok(Vec::new());
    }

    let first = cursor.committed_offset;
    let end = taken.last().map_or(first, |(o, _, _)| o + 1);
    // The message at the cursor was delivered before when it lies below
    // everything ever delivered: this is a redelivery of the span.
    let attempt = if first < lease.delivered_to {
        lease.attempts + 1
    } else {
        1
    };
    let saved = LeaseRow {
        lease_id: Some(job.lease_id.clone()),
        expires_at: if job.auto_ack { 0 } else { expires_at },
        span_start: first,
        span_end: end,
        delivered_to: lease.delivered_to.max(end),
        attempts: attempt,
    };
    let retry_at_cursor = cursor.retry_count;
    let cursor = if job.auto_ack {
        // Past the markers and aborted records read after the last one.
        Some(CursorRow {
            committed_offset: next,
            retry_count: 0,
        })
    } else {
        moved.then_some(cursor)
    };
    consume::save(tx, partition_id, &job.group, Some(&saved), cursor, job.now).await?;
    let lease_id = if job.auto_ack {
        String::new()
    } else {
        job.lease_id.clone()
    };
    Ok(taken
        .into_iter()
        .map(|(offset, created_at_ms, record)| PoppedMessage {
            queue: part.queue.clone(),
            partition: part.partition.clone(),
            partition_id,
            offset,
            created_at_ms,
            record,
            delivery_attempt: if offset < lease.delivered_to {
                attempt
            } else {
                1
            },
            retry_count: if offset == first { retry_at_cursor } else { 0 },
            lease_id: lease_id.clone(),
        })
        .collect())
}
