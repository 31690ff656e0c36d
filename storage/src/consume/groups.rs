//! What the admin endpoints read and change: positions of consumer groups,
//! their subscriptions, seeks and deletions, queue depth, and the state of
//! one message.

use std::collections::{BTreeSet, HashMap};

use super::dlq::dead_letter;
use super::validate_group;
use crate::append::txn_hash;
use crate::error::Result;
use crate::model::PartitionId;
use crate::model::{QueueInfo, QueueSummary};
use crate::record::Record;
use crate::sql;
use crate::Engine;

/// How many segments a message lookup reads, newest first, when the dedup
/// sidecar cannot point at the message: the lookup is bounded.
const LOOKUP_SEGMENTS: i64 = 1024;

/// The position of a group on a partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupPosition {
    /// The consumer group.
    pub group: String,
    /// The queue.
    pub queue: String,
    /// The partition name.
    pub partition: String,
    /// The partition id.
    pub partition_id: PartitionId,
    /// The next offset the group consumes (Kafka's committed offset).
    pub committed_offset: i64,
    /// The partition's next offset (high watermark).
    pub next_offset: i64,
    /// The partition's first stored offset.
    pub log_start: i64,
    /// `failed` acks charged against the message at the position.
    pub retry_count: i64,
    /// When the position last changed (ms).
    pub updated_at_ms: i64,
    /// When the group's live lease on the partition expires, if one is live.
    pub lease_expires_at_ms: Option<i64>,
    /// One past the last offset delivered under the live lease (the
    /// position when none is live).
    pub leased_to: i64,
    /// When the oldest message not yet consumed by the group was stored.
    pub oldest_pending_at_ms: Option<i64>,
}

impl GroupPosition {
    /// Messages stored after the position.
    pub fn lag(&self) -> i64 {
        (self.next_offset - self.committed_offset.max(self.log_start)).max(0)
    }

    /// Messages delivered under the live lease and not yet acknowledged.
    pub fn processing(&self) -> i64 {
        (self.leased_to - self.committed_offset.max(self.log_start)).max(0)
    }
}

/// Where a named group started on a queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    /// The consumer group.
    pub group: String,
    /// The queue.
    pub queue: String,
    /// `all`, `new` or `from`.
    pub mode: String,
    /// Messages created at or after this time are delivered (ms); `None`: all.
    pub start_at_ms: Option<i64>,
    /// When the group first met the queue (ms).
    pub created_at_ms: i64,
}

/// The message counts of a partition, for one group or for the slowest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionDepth {
    /// The partition id.
    pub partition_id: PartitionId,
    /// Messages stored.
    pub total: i64,
    /// Stored, not yet delivered (or delivered under a lease that ended).
    pub pending: i64,
    /// Delivered under a live lease, not yet acknowledged.
    pub processing: i64,
    /// Consumed (below the position).
    pub completed: i64,
    /// 1 when the message at the position failed and waits for its retry.
    pub failed: i64,
    /// Dead letters filed from this partition.
    pub dead_letter: i64,
}

/// Where a message stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageState {
    /// Not yet consumed.
    Pending,
    /// Delivered under a live lease.
    Processing,
    /// Consumed.
    Completed,
    /// Filed as a dead letter.
    DeadLetter,
}

/// One message with its state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageView {
    /// The queue.
    pub queue: String,
    /// The partition name.
    pub partition: String,
    /// Its offset.
    pub offset: i64,
    /// When it was stored (ms).
    pub created_at_ms: i64,
    /// The message.
    pub record: Record,
    /// Its state, for the slowest group (or a dead letter of any group).
    pub state: MessageState,
    /// The dead letter's error text.
    pub error_message: Option<String>,
    /// `failed` acks charged against it.
    pub retry_count: i64,
    /// When the lease it is processed under expires.
    pub lease_expires_at_ms: Option<i64>,
}

impl Engine {
    /// Every stored position, optionally of one group and one queue.
    pub async fn consumer_positions(
        &self,
        group: Option<&str>,
        queue: Option<&str>,
    ) -> Result<Vec<GroupPosition>> {
        let now = self.inner.clock.now_ms();
        sql::groups::positions(&self.inner.store, group, queue, now).await
    }

    /// Every stored subscription, optionally of one group.
    pub async fn subscriptions(&self, group: Option<&str>) -> Result<Vec<Subscription>> {
        sql::groups::subscriptions(&self.inner.store, group).await
    }

    /// Deletes a group's positions and leases on one queue or everywhere;
    /// with `metadata` also its subscriptions (it registers afresh on its
    /// next pop). Returns how many positions were deleted.
    pub async fn delete_consumer_group(
        &self,
        group: &str,
        queue: Option<&str>,
        metadata: bool,
    ) -> Result<u64> {
        validate_group(group)?;
        let deleted = sql::groups::delete(&self.inner.store, group, queue, metadata).await?;
        if metadata {
            self.inner.consume.registered().retain(|(_, g)| g != group);
        }
        Ok(deleted)
    }

    /// Moves a group on every partition of a queue to the end (`at` =
    /// `None`) or to the first message created at or after `at` (ms), and
    /// ends its leases there. `None` when the queue does not exist.
    pub async fn seek(&self, group: &str, queue: &str, at: Option<i64>) -> Result<Option<u64>> {
        validate_group(group)?;
        let now = self.inner.clock.now_ms();
        let updated = sql::groups::seek(&self.inner.store, group, queue, at, now).await?;
        if updated.is_some() {
            self.announce(queue);
        }
        Ok(updated)
    }

    /// Rewrites the start time of a group's subscriptions (partitions it
    /// has not touched yet start there). Returns how many were rewritten.
    pub async fn set_subscription_start(&self, group: &str, at_ms: i64) -> Result<u64> {
        validate_group(group)?;
        sql::groups::set_subscription_start(&self.inner.store, group, at_ms).await
    }

    /// The depth of every partition of a queue, for `group` or (without one)
    /// for the slowest group. `None` when the queue does not exist.
    pub async fn depth(
        &self,
        queue: &str,
        group: Option<&str>,
    ) -> Result<Option<(QueueInfo, Vec<PartitionDepth>)>> {
        let Some(info) = self.queue(queue).await? else {
            return Ok(None);
        };
        let now = self.inner.clock.now_ms();
        let store = &self.inner.store;
        let positions = sql::groups::positions(store, group, Some(queue), now).await?;
        let dead = sql::dead_letters::counts(store, Some(info.id), group)
            .await?
            .into_iter()
            .collect();
        let depths = partition_depths(&info, &positions, &dead, group);
        Ok(Some((info, depths)))
    }

    /// Every queue, by name, with its counts summed over its partitions
    /// for its slowest group (as [`Engine::depth`] counts without a
    /// group), in the same few statements however many queues there are.
    /// Only the partitions some group has a position on are looked at one
    /// by one: on the others nothing was consumed.
    pub async fn summaries(&self) -> Result<Vec<QueueSummary>> {
        let store = &self.inner.store;
        let mut summaries = sql::catalog::summaries(store).await?;
        let now = self.inner.clock.now_ms();
        let mut by_queue: HashMap<String, Vec<GroupPosition>> = HashMap::new();
        for position in sql::groups::positions(store, None, None, now).await? {
            by_queue
                .entry(position.queue.clone())
                .or_default()
                .push(position);
        }
        for summary in &mut summaries {
            let Some(positions) = by_queue.remove(&summary.name) else {
                continue;
            };
            let groups: BTreeSet<&str> = positions.iter().map(|p| p.group.as_str()).collect();
            for (id, here) in by_partition(&positions) {
                let Some(slowest) = slowest(here, &groups, id) else {
                    continue;
                };
                let depth =
                    partition_depth(id, slowest.log_start, slowest.next_offset, Some(slowest), 0);
                summary.pending -= depth.total - depth.pending;
                summary.processing += depth.processing;
            }
        }
        Ok(summaries)
    }

    /// A message of a partition by transaction id, with its state. Found
    /// through the dead letters, the dedup sidecar, or a bounded read of
    /// the partition's newest segments.
    pub async fn message(
        &self,
        partition_id: PartitionId,
        transaction_id: &str,
    ) -> Result<Option<MessageView>> {
        let store = &self.inner.store;
        let Some(sql::consume::PartitionRef {
            queue,
            partition,
            log_start,
            next_offset,
            last_stable,
        }) = sql::consume::partition_ref(store, partition_id).await?
        else {
            return Ok(None);
        };
        if let Some(row) = sql::dead_letters::of_message(store, partition_id, transaction_id)
            .await?
            .into_iter()
            .next()
        {
            let letter = dead_letter(row, &self.inner.sealer)?;
            return Ok(Some(MessageView {
                queue,
                partition,
                offset: letter.offset,
                created_at_ms: letter.created_at_ms,
                record: letter.record,
                state: MessageState::DeadLetter,
                error_message: letter.error_message,
                retry_count: letter.retry_count,
                lease_expires_at_ms: None,
            }));
        }
        let Some(found) = self.find(partition_id, transaction_id, next_offset).await? else {
            return Ok(None);
        };
        // Kafka transaction markers, and records of open or aborted
        // transactions, are not messages of the native door.
        if found.0 >= last_stable {
            return Ok(None);
        }
        let mut seen = vec![found];
        let mut reader = store.read_conn().await?;
        crate::transactions::retain_committed(
            &mut reader.conn(),
            partition_id,
            &mut seen,
            |(o, _, r)| (*o, r),
        )
        .await?;
        drop(reader);
        let Some((offset, created_at_ms, record)) = seen.pop() else {
            return Ok(None);
        };
        let now = self.inner.clock.now_ms();
        let positions = sql::groups::positions(store, None, Some(&queue), now).await?;
        let groups: BTreeSet<&str> = positions.iter().map(|p| p.group.as_str()).collect();
        let slowest = slowest(&positions, &groups, partition_id);
        let (state, retry_count, lease) = match slowest {
            Some(p) if offset < p.committed_offset.max(log_start) => {
                (MessageState::Completed, 0, None)
            }
            Some(p) if offset < p.leased_to && p.lease_expires_at_ms.is_some() => (
                MessageState::Processing,
                if offset == p.committed_offset {
                    p.retry_count
                } else {
                    0
                },
                p.lease_expires_at_ms,
            ),
            Some(p) => (
                MessageState::Pending,
                if offset == p.committed_offset {
                    p.retry_count
                } else {
                    0
                },
                None,
            ),
            None => (MessageState::Pending, 0, None),
        };
        Ok(Some(MessageView {
            queue,
            partition,
            offset,
            created_at_ms,
            record,
            state,
            error_message: None,
            retry_count,
            lease_expires_at_ms: lease,
        }))
    }

    /// The newest stored message of the partition with this transaction id.
    async fn find(
        &self,
        partition_id: PartitionId,
        transaction_id: &str,
        next_offset: i64,
    ) -> Result<Option<(i64, i64, Record)>> {
        let store = &self.inner.store;
        let mut reader = store.read_conn().await?;
        let mut candidates =
            sql::dedup::candidates(&mut reader.conn(), partition_id, txn_hash(transaction_id))
                .await?;
        candidates.sort_unstable_by(|a, b| b.cmp(a));
        for offset in candidates {
            if let Some(segment) =
                sql::segments::at(&mut reader.conn(), partition_id, offset).await?
            {
                let base = segment.base_offset;
                let created = segment.created_at;
                let records = segment.decode(&self.inner.sealer)?;
                if let Some(r) = usize::try_from(offset - base)
                    .ok()
                    .and_then(|i| records.into_iter().nth(i))
                {
                    if r.has_transaction_id(transaction_id) {
                        return Ok(Some((offset, created, r)));
                    }
                }
            }
        }
        let mut before = next_offset;
        let mut read = 0;
        while read < LOOKUP_SEGMENTS {
            let segments = sql::segments::before(store, partition_id, before, 64).await?;
            if segments.is_empty() {
                break;
            }
            for segment in segments {
                read += 1;
                before = segment.base_offset;
                let base = segment.base_offset;
                let created = segment.created_at;
                let records = segment.decode(&self.inner.sealer)?;
                if let Some((i, r)) = records
                    .into_iter()
                    .enumerate()
                    .rev()
                    .find(|(_, r)| r.has_transaction_id(transaction_id))
                {
                    return Ok(Some((base + i as i64, created, r)));
                }
            }
        }
        Ok(None)
    }
}

/// The depth of each partition of `info` for `group`, or (without one)
/// for the slowest of the groups with `positions` on the queue; `dead`
/// counts dead letters by partition.
fn partition_depths(
    info: &QueueInfo,
    positions: &[GroupPosition],
    dead: &HashMap<PartitionId, i64>,
    group: Option<&str>,
) -> Vec<PartitionDepth> {
    let groups: BTreeSet<&str> = match group {
        Some(g) => BTreeSet::from([g]),
        None => positions.iter().map(|p| p.group.as_str()).collect(),
    };
    let on = by_partition(positions);
    info.partitions
        .iter()
        .map(|p| {
            let here = on.get(&p.id).into_iter().flatten().copied();
            let slowest = slowest(here, &groups, p.id);
            let dead_letter = dead.get(&p.id).copied().unwrap_or(0);
            partition_depth(p.id, p.log_start, p.next_offset, slowest, dead_letter)
        })
        .collect()
}

/// The positions by partition: each partition looks only at its own,
/// however many groups the queue's other partitions have.
fn by_partition(positions: &[GroupPosition]) -> HashMap<PartitionId, Vec<&GroupPosition>> {
    let mut on: HashMap<PartitionId, Vec<&GroupPosition>> = HashMap::new();
    for position in positions {
        on.entry(position.partition_id).or_default().push(position);
    }
    on
}

/// The counts of the partition `id` whose log spans `log_start` to
/// `next_offset`, for the position of its slowest group (`None`: a group
/// has not started, or there is none).
fn partition_depth(
    id: PartitionId,
    log_start: i64,
    next_offset: i64,
    slowest: Option<&GroupPosition>,
    dead_letter: i64,
) -> PartitionDepth {
    let total = (next_offset - log_start).max(0);
    let (committed, processing, failed) = match slowest {
        Some(pos) => (
            pos.committed_offset.clamp(log_start, next_offset),
            pos.processing(),
            i64::from(pos.retry_count > 0),
        ),
        None => (log_start, 0, 0),
    };
    PartitionDepth {
        partition_id: id,
        total,
        completed: committed - log_start,
        processing,
        pending: (next_offset - committed - processing).max(0),
        failed,
        dead_letter,
    }
}

/// The position of the slowest of `groups` on the partition; a group
/// without a position there has not started, which counts as slowest.
fn slowest<'a>(
    positions: impl IntoIterator<Item = &'a GroupPosition>,
    groups: &BTreeSet<&str>,
    partition_id: PartitionId,
) -> Option<&'a GroupPosition> {
    let here: Vec<&GroupPosition> = positions
        .into_iter()
        .filter(|p| p.partition_id == partition_id && groups.contains(p.group.as_str()))
        .collect();
    if here.len() < groups.len() {
        return None;
    }
    here.into_iter().min_by_key(|p| {
        (
            p.committed_offset.max(p.log_start),
            p.lease_expires_at_ms.is_none(),
        )
    })
}
