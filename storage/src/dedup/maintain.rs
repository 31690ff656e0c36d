//! Background upkeep of the dedup index, in bounded steps that any broker
//! may run (several on one PostgreSQL database run side by side): merging
//! runs, dropping runs past their window, deleting dead runs' pages and
//! purging old sidecar rows.
//!
//! Its transactions do not wait for the disk ([`Store::begin_write_lazy`]):
//! one lost in a crash of the machine is only done again (a merge's output
//! that was never published is abandoned). Only a merge's publication,
//! which retires its inputs, is committed durably.

use std::time::Instant;

use super::run::{self, Entry, Finished, Page, Run, RunBuilder};
use super::{RunState, MERGE_FANOUT, TOP_LEVEL};
use crate::backend::Store;
use crate::error::Result;
use crate::metrics::STORAGE;
use crate::model::PartitionId;
use crate::sql;
use crate::sql::dedup::{NewRun, RunHead};
use crate::vacuum::Table;
use crate::Engine;

/// Sidecar rows are kept at least this long whatever the window, for the
/// lookups of messages by transaction id (spec 5.2: `max(window, …, 900)`).
const SIDECAR_FLOOR_SECONDS: i64 = 900;

/// Sidecar rows one step purges.
const PURGE_ROWS: i64 = 1_000;

/// Pages of a dead run one step deletes. Each step also runs the upkeep's
/// other statements in its write transaction, which under load cost more
/// than deleting 256 pages did: larger steps, fewer of them.
const SWEEP_PAGES: i64 = 1024;

/// Pages a merge reads from an input at a time.
const READ_PAGES: i64 = 16;

/// Pages a merge writes per transaction: short, so appends keep the writer.
const WRITE_PAGES: usize = 64;

/// Merges of at least this many ids pace themselves: after each write they
/// rest as long as they worked, so a merge of a million ids or more takes
/// at most about half of a core and of the writer from the appends it runs
/// beside (it takes twice as long; the smaller merges go on meanwhile).
/// From 1M, not 4M: partitions filled at the same pace reach a level
/// together, and their unpaced 1M merges ran back to back.
const PACED_MERGE: i64 = 1 << 20;

/// The longest the upkeep waits for a running merge to end before it looks
/// for work again (runs sealed meanwhile may make a new candidate).
const MERGE_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// Merges one broker runs at once.
pub(crate) const MAX_MERGES: usize = 2;

/// A merge begun this long ago whose output is still building was left by
/// a broker that stopped; its output is discarded.
const ABANDONED_MS: i64 = 10 * 60 * 1000;

impl Engine {
    /// One step of dedup upkeep; returns whether more work is waiting (the
    /// caller loops at once) or not (the caller pauses).
    pub async fn maintain_dedup(&self) -> Result<bool> {
        let now = self.inner.clock.now_ms();
        let store = &self.inner.store;
        let mut tx = store.begin_write_lazy().await?;
        let mut conn = tx.conn();
        sql::dedup::expire_runs(&mut conn, now).await?;
        sql::dedup::abandon_runs(&mut conn, now - ABANDONED_MS).await?;
        let swept = sql::dedup::sweep_dead_run(&mut conn, SWEEP_PAGES).await?;
        let purged =
            sql::dedup::purge_sidecar(&mut conn, now, SIDECAR_FLOOR_SECONDS, PURGE_ROWS).await?;
        let merging = &self.inner.merging;
        let candidate = match merging.available_permits() {
            0 => None,
            _ => sql::dedup::merge_candidate(&mut conn, MERGE_FANOUT, TOP_LEVEL).await?,
        };
        tx.commit().await?;
        self.inner.vacuum.add(Table::DedupPages, swept);
        self.inner.vacuum.add(Table::TxnHashes, purged);
        self.inner
            .vacuum
            .settle(store.reader(), Table::DedupPages)
            .await?;
        self.inner
            .vacuum
            .settle(store.reader(), Table::TxnHashes)
            .await?;
        // Merges run beside the upkeep, so that a long one (millions of ids)
        // does not hold back the small ones that keep a partition's run
        // count low meanwhile.
        let started = match (candidate, merging.clone().try_acquire_owned()) {
            (Some((partition_id, level)), Ok(permit)) => {
                let engine = self.clone();
                tokio::spawn(async move {
                    if let Err(e) = engine.merge_runs(partition_id, level, now).await {
                        tracing::warn!(error = %e, %partition_id, level, "merging dedup runs failed");
                    }
                    drop(permit);
                    engine.inner.merge_ended.notify_one();
                });
                true
            }
            _ => false,
        };
        // A sweep step that did anything may have left the rest of its
        // run, and a merge just started may have left another candidate.
        if swept > 0 || purged >= PURGE_ROWS as u64 || started {
            return Ok(true);
        }
        // Otherwise, while merges run, the next one can start only once
        // one ends or appends seal more runs: wait for that rather than
        // take the writer every 10 ms to find nothing.
        if merging.available_permits() < MAX_MERGES {
            let _ = tokio::time::timeout(MERGE_WAIT, self.inner.merge_ended.notified()).await;
            return Ok(true);
        }
        Ok(false)
    }

    /// Merges the partition's oldest [`MERGE_FANOUT`] runs of `level` into
    /// one of the next level; false if another merge got there first.
    async fn merge_runs(&self, partition_id: PartitionId, level: i64, now: i64) -> Result<bool> {
        let store = &self.inner.store;
        let mut tx = store.begin_write_lazy().await?;
        let mut conn = tx.conn();
        let inputs = sql::dedup::merge_inputs(&mut conn, partition_id, level, MERGE_FANOUT).await?;
        let Some(window) = sql::dedup::window_seconds(&mut conn, partition_id).await? else {
            return Ok(false);
        };
        if inputs.len() < MERGE_FANOUT as usize {
            return Ok(false);
        }
        // Entries already past the window are left behind.
        let since = now.saturating_sub(window.saturating_mul(1000));
        let low = sql::dedup::window_start(&mut conn, partition_id, since)
            .await?
            .unwrap_or(i64::MAX);
        let output = NewRun {
            partition_id,
            level: level + 1,
            state: RunState::Building,
            entries: inputs.iter().map(|r| r.entries).sum(),
            created_max: inputs.iter().map(|r| r.created_max).max().unwrap_or(0),
            started_at: now,
            fences: None,
        };
        let Some(id) = sql::dedup::insert_run(&mut conn, &output).await? else {
            return Ok(false);
        };
        tx.commit().await?;

        let Finished {
            filter,
            fences,
            entries,
            ..
        } = match write_merged(store, id, &inputs, low, output.entries).await {
            Ok(written) => written,
            Err(e) => {
                let mut tx = store.begin_write_lazy().await?;
                sql::dedup::set_state(&mut tx.conn(), id, RunState::Dead).await?;
                tx.commit().await?;
                return Err(e);
            }
        };
        let mut tx = store.begin_write_lazy().await?;
        sql::dedup::insert_filter(&mut tx.conn(), id, &filter).await?;
        tx.commit().await?;
        let retired: Vec<i64> = inputs.iter().map(|r| r.id).collect();
        let mut tx = store.begin_write().await?;
        let mut conn = tx.conn();
        let epoch = sql::dedup::lock_epoch(&mut conn, partition_id).await?;
        let published = match epoch {
            Some(_) if sql::dedup::retire_runs(&mut conn, &retired).await? => {
                let fences = run::encode_fences(&fences);
                sql::dedup::publish_run(&mut conn, id, partition_id, entries, &fences).await?;
                tx.commit().await?;
                true
            }
            _ => {
                drop(tx); // rolls back a partial retire
                let mut tx = store.begin_write_lazy().await?;
                sql::dedup::set_state(&mut tx.conn(), id, RunState::Dead).await?;
                tx.commit().await?;
                false
            }
        };
        if let (true, Some(epoch)) = (published, epoch) {
            let run = Run {
                id,
                created_max: output.created_max,
                filter,
                fences,
            };
            self.inner.dedup.merged(partition_id, epoch, retired, run);
        }
        Ok(published)
    }
}

/// Streams the inputs' pages into the output run `id` in hash order,
/// leaving out offsets below `low`, a bounded number of pages per write
/// transaction; returns the run's filter, fences and entry count.
async fn write_merged(
    store: &Store,
    id: i64,
    inputs: &[RunHead],
    low: i64,
    capacity: i64,
) -> Result<Finished> {
    let mut cursors: Vec<Cursor> = inputs.iter().map(|r| Cursor::new(r.id)).collect();
    let mut builder = RunBuilder::new(usize::try_from(capacity).unwrap_or(0));
    let mut pending: Vec<Page> = Vec::new();
    let paced = capacity >= PACED_MERGE;
    let mut round = Instant::now();
    loop {
        // Refill whichever input ran dry, then merge in memory until one
        // does again: the awaits stay per page, not per entry.
        for cursor in &mut cursors {
            cursor.fill(store).await?;
        }
        cursors.retain(|c| !c.is_finished());
        if cursors.is_empty() {
            break;
        }
        while let Some(entry) = next_entry(&mut cursors) {
            if entry.1 >= low {
                pending.extend(builder.push(entry));
            }
        }
        if pending.len() >= WRITE_PAGES {
            flush(store, id, &mut pending).await?;
            if paced {
                tokio::time::sleep(round.elapsed()).await;
                round = Instant::now();
            }
        }
    }
    let mut finished = builder.finish();
    pending.extend(finished.last_page.take());
    flush(store, id, &mut pending).await?;
    STORAGE
        .dedup_merged_entries
        .inc_by(u64::try_from(finished.entries).unwrap_or(0));
    Ok(finished)
}

async fn flush(store: &Store, id: i64, pending: &mut Vec<Page>) -> Result<()> {
    if pending.is_empty() {
        return Ok(());
    }
    let mut tx = store.begin_write_lazy().await?;
    tx.conn().write_pages(id, pending).await?;
    tx.commit().await?;
    pending.clear();
    Ok(())
}

/// Reads one input run's entries in order, a few pages at a time.
struct Cursor {
    run_id: i64,
    next_page: i64,
    buffered: std::collections::VecDeque<Entry>,
    done: bool,
}

impl Cursor {
    fn new(run_id: i64) -> Self {
        Self {
            run_id,
            next_page: 0,
            buffered: Default::default(),
            done: false,
        }
    }

    /// Reads the next pages if nothing is buffered.
    async fn fill(&mut self, store: &Store) -> Result<()> {
        if self.buffered.is_empty() && !self.done {
            let mut reader = store.read_conn().await?;
            let pages =
                sql::dedup::pages_from(&mut reader.conn(), self.run_id, self.next_page, READ_PAGES)
                    .await?;
            self.done = (pages.len() as i64) < READ_PAGES;
            self.next_page += pages.len() as i64;
            self.buffered.extend(pages.into_iter().flatten());
        }
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.done && self.buffered.is_empty()
    }
}

/// Takes the smallest buffered entry, while every cursor still has one
/// buffered (a cursor that ran dry may hold smaller ones in its next pages).
fn next_entry(cursors: &mut [Cursor]) -> Option<Entry> {
    let mut best: Option<(usize, Entry)> = None;
    for (i, cursor) in cursors.iter().enumerate() {
        match cursor.buffered.front() {
            Some(&entry) if best.is_none_or(|(_, b)| entry < b) => best = Some((i, entry)),
            Some(_) => {}
            None if cursor.done => {}
            None => return None,
        }
    }
    let (i, entry) = best?;
    cursors[i].buffered.pop_front();
    Some(entry)
}
