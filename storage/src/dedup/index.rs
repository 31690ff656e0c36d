//! A partition's dedup index as a broker holds it: the exact tail in
//! memory, and the filters and fences of its live runs, brought up to date
//! with the database under the partition's append lock.

use std::sync::Arc;

use super::run::{self, Finished, Run, RunBuilder};
use super::tail::Tail;
use super::{RunState, SEAL_IDS};
use crate::append::PartitionHead;
use crate::backend::Conn;
use crate::error::{Result, StorageError};
use crate::sql;
use crate::sql::dedup::{NewRun, RunHead};

/// The dedup index of one partition.
#[derive(Debug)]
pub(crate) struct WindowIndex {
    /// The partition's `dedup_epoch` the runs reflect (`None`: not loaded).
    pub epoch: Option<i64>,
    /// Ids below this offset are in runs; the tail starts here.
    pub sealed_to: i64,
    pub tail: Tail,
    /// Shared with [`super::screen`]'s lookups outside the append lock;
    /// a run never changes once loaded (folding replaces it).
    pub runs: Vec<Arc<Run>>,
}

impl Default for WindowIndex {
    fn default() -> Self {
        Self {
            epoch: None,
            sealed_to: 0,
            tail: Tail::starting_at(0),
            runs: Vec::new(),
        }
    }
}

impl WindowIndex {
    /// The memory it holds, in bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.tail.bytes() + self.runs.iter().map(|r| r.bytes()).sum::<usize>()
    }

    /// Halves its largest filter; false when none can be folded.
    pub(crate) fn fold_largest(&mut self) -> bool {
        let Some(largest) = self.runs.iter_mut().max_by_key(|r| r.filter.bytes()) else {
            return false;
        };
        match largest.folded() {
            Some(folded) => {
                *largest = Arc::new(folded);
                true
            }
            None => false,
        }
    }

    /// Brings the index up to date with what is stored for the partition
    /// whose locked head is `head`, for the window starting at `since`:
    /// runs another broker sealed or merged are loaded (filters only), runs
    /// past the window are dropped, and the tail gets the sidecar rows it
    /// lacks. Reads at most a tail's worth of hashes.
    pub(crate) async fn refresh(
        &mut self,
        tx: &mut Conn<'_>,
        head: &PartitionHead,
        since: i64,
    ) -> Result<()> {
        if self.epoch != Some(head.dedup_epoch) {
            let live = sql::dedup::live_runs(tx, head.id).await?;
            self.runs.retain(|r| live.iter().any(|l| l.id == r.id));
            for l in live {
                if l.created_max >= since && !self.runs.iter().any(|r| r.id == l.id) {
                    self.runs.push(load_run(tx, l).await?);
                }
            }
            self.runs.sort_unstable_by_key(|r| r.id);
            self.epoch = Some(head.dedup_epoch);
        }
        self.runs.retain(|r| r.created_max >= since);
        if self.sealed_to != head.dedup_sealed_to || self.tail.covered_to > head.next_offset {
            self.sealed_to = head.dedup_sealed_to;
            self.tail = Tail::starting_at(head.dedup_sealed_to);
        }
        if self.tail.covered_to < head.next_offset {
            for row in sql::dedup::rows(tx, head.id, self.tail.covered_to, since).await? {
                self.tail.add(&row);
            }
        }
        // Under the lock, everything below the next offset is committed and reflected.
        self.tail.covered_to = head.next_offset;
        Ok(())
    }

    /// Seals the tail into a level-0 run once it is large enough, inside the
    /// append's transaction; `next_offset` is the partition's after the append.
    pub(crate) async fn seal_if_full(
        &mut self,
        tx: &mut Conn<'_>,
        head: &PartitionHead,
        now: i64,
    ) -> Result<()> {
        if self.tail.len() < SEAL_IDS {
            return Ok(());
        }
        let entries = self.tail.sorted_entries();
        let mut builder = RunBuilder::new(entries.len());
        let mut pages: Vec<run::Page> = entries.iter().filter_map(|&e| builder.push(e)).collect();
        let Finished {
            last_page,
            filter,
            fences,
            entries: count,
        } = builder.finish();
        pages.extend(last_page);
        let id = sql::dedup::insert_run(
            tx,
            &NewRun {
                partition_id: head.id,
                level: 0,
                state: RunState::Live,
                entries: count,
                created_max: head.last_created_at,
                started_at: now,
                fences: Some(&run::encode_fences(&fences)),
            },
        )
        .await?
        .ok_or_else(|| StorageError::Corrupt("a sealed run was refused".into()))?;
        tx.write_pages(id, &pages).await?;
        sql::dedup::insert_filter(tx, id, &filter).await?;
        sql::dedup::set_sealed(tx, head.id, head.next_offset).await?;
        self.runs.push(Arc::new(Run {
            id,
            created_max: head.last_created_at,
            filter,
            fences,
        }));
        self.epoch = self.epoch.map(|e| e + 1);
        self.sealed_to = head.next_offset;
        self.tail = Tail::starting_at(head.next_offset);
        Ok(())
    }
}

/// Reads a live run's filter and fences.
async fn load_run(tx: &mut Conn<'_>, head: RunHead) -> Result<Arc<Run>> {
    Ok(Arc::new(Run {
        id: head.id,
        created_max: head.created_max,
        filter: sql::dedup::load_filter(tx, head.id).await?,
        fences: sql::dedup::run_fences(tx, head.id).await?,
    }))
}
