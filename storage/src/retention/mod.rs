//! Retention: deleting what a partition no longer keeps, by moving its log
//! start and then deleting the segments below it.
//!
//! A partition's log start is the first offset a reader may get. Everything
//! reads from `max(position, log_start)` (Fetch answers
//! `OFFSET_OUT_OF_RANGE` below it; pops and groups continue from it), so
//! moving it is what deletes messages; removing the rows that lie wholly
//! below it only gives their space back, and may lag behind.
//!
//! The log start moves for three reasons:
//! - the queue's rules ([`RetentionPolicy`]): age (`retentionSeconds`,
//!   `retention.ms`), eviction (`maxWaitTimeSeconds`), size
//!   (`retention.bytes`) and consumption by every group
//!   (`completedRetentionSeconds`), checked by [`Engine::enforce_retention`]
//!   whole segments at a time;
//! - Kafka's DeleteRecords ([`Engine::delete_records`]), to any offset;
//! - nothing else: appends never move it.
//!
//! Compaction ([`compaction`], `cleanup.policy=compact`) deletes inside the
//! log instead, leaving gaps; it has its own step and duty
//! ([`Engine::enforce_compaction`]).
//!
//! The work is done in bounded steps of short transactions, none under a
//! partition's append lock. On PostgreSQL the deleted rows' space comes
//! back through VACUUM ([`crate::vacuum`]). With several brokers on one PostgreSQL
//! database, one broker at a time does it: the duty's lease (table
//! `duties`) is renewed by every step, and taken over by another broker
//! once its holder has stopped renewing it.
//!
//! Transaction ids outlive their messages: the dedup sidecar keeps them for
//! `max(dedupWindowSeconds, completedRetentionSeconds, 900)` seconds
//! ([`sidecar_seconds`]), and a duplicate of a message already deleted
//! answers the zero message id with the original's offset.

mod compaction;
pub(crate) use compaction::compacted;
mod policy;

pub(crate) use policy::{PartitionView, RetentionPolicy, SegmentHead};

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use crate::error::{Result, StorageError};
use crate::log::LogBounds;
use crate::model::{PartitionId, PartitionInfo};
use crate::options::QueueOptions;
use crate::sql;
use crate::sql::catalog::Lifecycle;
use crate::vacuum::Table;
use crate::Engine;

/// The duty's name in `duties`.
const DUTY: &str = "retention";

/// How long a broker holds a duty (retention, compaction) after its last
/// step.
const DUTY_LEASE_MS: i64 = 30_000;

/// The oldest segments of a partition one step looks at.
const HEADS: i64 = 1_000;

/// Segments one step deletes (all partitions together).
const SWEEP_SEGMENTS: i64 = 500;

/// How long the sidecar keeps a queue's transaction ids, before its floor.
pub(crate) fn sidecar_seconds(options: &QueueOptions) -> i64 {
    options
        .dedup_window_seconds
        .max(options.completed_retention_seconds)
}

impl Engine {
    /// One step of retention: moves the log start of every partition whose
    /// rules delete its oldest segments, then deletes a bounded number of
    /// segments below log starts. Returns whether more work is waiting (the
    /// caller loops at once) or not (the caller pauses). A broker that does
    /// not hold the duty does nothing.
    pub async fn enforce_retention(&self) -> Result<bool> {
        let now = self.inner.clock.now_ms();
        let store = &self.inner.store;
        if !self.hold_duty(DUTY, now).await? {
            return Ok(false);
        }
        let mut more = false;
        for queue in sql::catalog::queues_for(store, Lifecycle::Retained).await? {
            let Some(policy) = RetentionPolicy::of(&queue.options) else {
                continue;
            };
            for partition in &queue.partitions {
                more |= self.apply(&policy, partition, now).await?;
            }
        }
        let swept = self.sweep(SWEEP_SEGMENTS).await?;
        crate::metrics::STORAGE.retention_segments.inc_by(swept);
        self.inner.vacuum.add(Table::Segments, swept);
        self.inner
            .vacuum
            .settle(store.reader(), Table::Segments)
            .await?;
        Ok(more || swept >= SWEEP_SEGMENTS as u64)
    }

    /// Takes or renews the duty `name` for this broker, unless another
    /// broker holds it; returns whether this broker holds it now. The lease
    /// is written only once half of it has run out: steps come every few
    /// hundred milliseconds, and each write would take the database's
    /// writer from the appends.
    pub(crate) async fn hold_duty(&self, name: &'static str, now: i64) -> Result<bool> {
        let duties = &self.inner.duties;
        if duties
            .held_until(name)
            .is_some_and(|until| now < until - DUTY_LEASE_MS / 2)
        {
            return Ok(true);
        }
        let until = now + DUTY_LEASE_MS;
        let mut tx = self.inner.store.begin_write().await?;
        let held =
            sql::retention::hold_duty(&mut tx.conn(), name, &self.inner.instance, now, until)
                .await?;
        tx.commit().await?;
        duties.set(name, held.then_some(until));
        Ok(held)
    }

    /// Gives up the duty `name` if this broker holds it, so another broker
    /// takes it at its next step rather than once the lease has run out.
    pub(crate) async fn release_duty(&self, name: &'static str) -> Result<()> {
        self.inner.duties.set(name, None);
        let mut tx = self.inner.store.begin_write().await?;
        sql::retention::release_duty(&mut tx.conn(), name, &self.inner.instance).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Moves the partition's log start as far as `policy` allows within the
    /// segments one step looks at; returns whether it may go further.
    async fn apply(&self, policy: &RetentionPolicy, p: &PartitionInfo, now: i64) -> Result<bool> {
        if p.log_start >= p.next_offset {
            return Ok(false);
        }
        let store = &self.inner.store;
        let heads = sql::retention::heads(store.reader(), p.id, p.log_start, HEADS).await?;
        let bytes = match policy.needs_size() {
            true => sql::retention::stored_bytes(store.reader(), p.id, p.log_start).await?,
            false => 0,
        };
        let min_committed = match policy.needs_positions() {
            true => sql::retention::min_committed(store.reader(), p.id).await?,
            false => None,
        };
        let view = PartitionView {
            log_start: p.log_start,
            bytes,
            min_committed,
        };
        let start = policy.new_log_start(&heads, view, now);
        if start <= p.log_start {
            return Ok(false);
        }
        let mut tx = store.begin_write().await?;
        sql::retention::advance_log_start(&mut tx.conn(), p.id, start).await?;
        tx.commit().await?;
        crate::metrics::STORAGE
            .retention_records
            .inc_by((start - p.log_start) as u64);
        let whole_page = heads.len() as i64 == HEADS;
        Ok(whole_page
            && heads
                .last()
                .is_some_and(|h| h.base_offset + h.record_count == start))
    }

    /// Deletes up to `limit` segments that lie wholly below their
    /// partition's log start, in one transaction; returns how many. The
    /// partitions are found with a reader: the writer is taken only when
    /// there is something to delete.
    async fn sweep(&self, limit: i64) -> Result<u64> {
        let store = &self.inner.store;
        let due = sql::retention::partitions_to_sweep(store.reader(), limit).await?;
        if due.is_empty() {
            return Ok(0);
        }
        let held = std::time::Instant::now();
        let mut tx = store.begin_write().await?;
        let mut conn = tx.conn();
        let mut deleted = 0;
        for (partition_id, log_start) in due {
            let left = limit - deleted as i64;
            if left <= 0 {
                break;
            }
            deleted +=
                sql::retention::delete_below(&mut conn, partition_id, log_start, left).await?;
            // Aborted ranges below the log start have no records left to hide.
            sql::transactions::forget_aborted_below(&mut conn, partition_id, log_start).await?;
        }
        tx.commit().await?;
        tracing::debug!(
            deleted,
            held_ms = held.elapsed().as_millis() as u64,
            "retention: segments deleted"
        );
        Ok(deleted)
    }

    /// Kafka's DeleteRecords: moves the partition's log start up to
    /// `offset` (`-1` for the high watermark) and answers the new log start.
    /// An offset below the log start changes nothing; one past the high
    /// watermark is refused. The segments below are deleted in the
    /// background.
    pub async fn delete_records(&self, partition_id: PartitionId, offset: i64) -> Result<i64> {
        let mut tx = self.inner.store.begin_write().await?;
        let mut conn = tx.conn();
        let LogBounds {
            log_start,
            next_offset,
            ..
        } = sql::catalog::bounds(&mut conn, partition_id)
            .await?
            .ok_or(StorageError::PartitionNotFound(partition_id))?;
        let target = if offset == -1 { next_offset } else { offset };
        if !(0..=next_offset).contains(&target) {
            return Err(StorageError::OffsetOutOfRange {
                offset,
                log_start,
                next_offset,
            });
        }
        sql::retention::advance_log_start(&mut conn, partition_id, target).await?;
        tx.commit().await?;
        Ok(log_start.max(target))
    }
}

/// The duties this broker holds, each with the end of its lease as last
/// written (ms): until half of it has run out, no other broker can take it.
#[derive(Debug, Default)]
pub(crate) struct HeldDuties(Mutex<HashMap<&'static str, i64>>);

impl HeldDuties {
    fn held_until(&self, name: &str) -> Option<i64> {
        self.lock().get(name).copied()
    }

    fn set(&self, name: &'static str, until: Option<i64>) {
        let mut held = self.lock();
        match until {
            Some(until) => held.insert(name, until),
            None => held.remove(name),
        };
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<&'static str, i64>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
