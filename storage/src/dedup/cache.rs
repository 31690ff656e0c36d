//! The partitions' dedup indexes kept between appends, within one memory
//! budget shared by all partitions.
//!
//! Over budget, the cache first drops the indexes of partitions that have
//! been idle a while (they reload from the database when next written),
//! then folds the largest filters of the rest: a busy partition never has
//! to reload, it only gets more "maybe" answers, each costing a page read.
//! Only when nothing can be folded any more does it drop a busy index.
//!
//! Lookups outside the append lock ([`super::screen`]) see an index's runs
//! while it is held, and the runs it was taken out with while it is out for
//! an append. They are the same runs (shared), so they cost no memory of
//! their own, except a run a fold or a merge has just replaced, until the
//! lookups holding it end or the index is put back.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::index::WindowIndex;
use super::run::Run;
use crate::model::PartitionId;

/// An index that has not been used for this long is dropped first.
const IDLE: Duration = Duration::from_secs(30);

#[derive(Debug)]
struct Held {
    index: WindowIndex,
    used: Instant,
}

/// A run a merge of this broker published, to be given to the partition's
/// index in place of the merge's inputs, so that no broker reads back a
/// filter it has just built.
#[derive(Debug)]
struct Merged {
    /// The partition's epoch before the merge.
    epoch: i64,
    retired: Vec<i64>,
    run: Arc<Run>,
}

impl Merged {
    /// Applies the merge if the index was current when it was published;
    /// otherwise the index reloads its runs at its next append.
    fn apply(self, index: &mut WindowIndex) {
        if index.epoch == Some(self.epoch) {
            index.runs.retain(|r| !self.retired.contains(&r.id));
            index.runs.push(self.run);
            index.runs.sort_unstable_by_key(|r| r.id);
            index.epoch = Some(self.epoch + 1);
        }
    }
}

#[derive(Debug, Default)]
struct Slots {
    held: HashMap<PartitionId, Held>,
    /// Indexes out for an append.
    out: HashMap<PartitionId, Out>,
}

/// An index out for an append.
#[derive(Debug, Default)]
struct Out {
    /// Its runs when it was taken, for lookups meanwhile.
    runs: Vec<Arc<Run>>,
    /// What a merge published meanwhile.
    merged: Option<Merged>,
}

/// Window indexes kept between appends, bounded by a number of bytes.
#[derive(Debug)]
pub(crate) struct DedupCache {
    budget: AtomicUsize,
    slots: Mutex<Slots>,
}

impl DedupCache {
    /// A cache holding at most about `budget` bytes.
    pub(crate) fn new(budget: usize) -> Self {
        Self {
            budget: AtomicUsize::new(budget),
            slots: Mutex::new(Slots::default()),
        }
    }

    /// Takes the partition's index out for an append (appends of one
    /// partition are serialised, so nobody else needs it meanwhile).
    pub(crate) fn take(&self, partition_id: PartitionId) -> Option<WindowIndex> {
        let mut slots = self.lock();
        let taken = slots.held.remove(&partition_id).map(|h| h.index);
        let runs = taken.as_ref().map(|i| i.runs.clone()).unwrap_or_default();
        slots.out.insert(partition_id, Out { runs, merged: None });
        taken
    }

    /// Drops the partition's index (its queue lost its window, or its
    /// records were written without sidecar rows).
    pub(crate) fn forget(&self, partition_id: PartitionId) {
        let mut slots = self.lock();
        slots.held.remove(&partition_id);
        slots.out.remove(&partition_id);
    }

    /// Puts an index back after its append committed, and brings the cache
    /// back within budget (see the module doc).
    pub(crate) fn put(&self, partition_id: PartitionId, mut index: WindowIndex) {
        let mut slots = self.lock();
        if let Some(merged) = slots.out.remove(&partition_id).and_then(|o| o.merged) {
            merged.apply(&mut index);
        }
        let indexes = &mut slots.held;
        let now = Instant::now();
        indexes.insert(partition_id, Held { index, used: now });
        let budget = self.budget.load(Ordering::Relaxed);
        let mut total: usize = indexes.values().map(|h| h.index.bytes()).sum();
        while total > budget {
            let idle = indexes
                .iter()
                .filter(|(_, h)| now.duration_since(h.used) > IDLE)
                .min_by_key(|(_, h)| h.used)
                .map(|(&id, _)| id);
            if let Some(id) = idle {
                total -= indexes.remove(&id).map_or(0, |h| h.index.bytes());
                continue;
            }
            let Some(largest) = indexes.values_mut().max_by_key(|h| h.index.bytes()) else {
                break;
            };
            let before = largest.index.bytes();
            if largest.index.fold_largest() {
                total -= before - largest.index.bytes();
                continue;
            }
            let oldest = indexes
                .iter()
                .min_by_key(|(_, h)| h.used)
                .map(|(&id, _)| id);
            match oldest {
                Some(id) => total -= indexes.remove(&id).map_or(0, |h| h.index.bytes()),
                None => break,
            }
        }
    }

    /// The partition's runs, for a lookup outside the append lock: its
    /// held index's, or those its index was taken out with; empty when the
    /// cache holds no index for it. They may be stale (a run sealed, merged
    /// or expired since): the append checks, under the lock, every live run
    /// they lack.
    pub(crate) fn published_runs(&self, partition_id: PartitionId) -> Vec<Arc<Run>> {
        let slots = self.lock();
        match slots.held.get(&partition_id) {
            Some(held) => held.index.runs.clone(),
            None => slots
                .out
                .get(&partition_id)
                .map(|o| o.runs.clone())
                .unwrap_or_default(),
        }
    }

    /// Changes the budget; it is enforced from the next [`Self::put`] on.
    pub(crate) fn set_budget(&self, bytes: usize) {
        self.budget.store(bytes, Ordering::Relaxed);
    }

    /// Gives the partition's index the run a merge just published in place
    /// of the merge's inputs, `epoch` being the partition's before the merge:
    /// at once if the index is held, when it is put back if it is out for
    /// an append.
    pub(crate) fn merged(
        &self,
        partition_id: PartitionId,
        epoch: i64,
        retired: Vec<i64>,
        run: Run,
    ) {
        let merged = Merged {
            epoch,
            retired,
            run: Arc::new(run),
        };
        let mut slots = self.lock();
        if let Some(held) = slots.held.get_mut(&partition_id) {
            merged.apply(&mut held.index);
        } else if let Some(out) = slots.out.get_mut(&partition_id) {
            out.merged = Some(merged);
        }
    }

    /// The bytes its indexes hold.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.lock().held.values().map(|h| h.index.bytes()).sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dedup::run::RunBuilder;

    fn index_with_run(keys: usize) -> WindowIndex {
        let mut builder = RunBuilder::new(keys);
        for i in 0..keys as i64 {
            builder.push((i * 7919, i));
        }
        let run = builder.finish();
        WindowIndex {
            runs: vec![Arc::new(Run {
                id: 1,
                created_max: 0,
                filter: run.filter,
                fences: run.fences,
            })],
            ..WindowIndex::default()
        }
    }

    #[test]
    fn busy_indexes_are_folded_to_fit_and_kept() {
        let one = index_with_run(100_000).bytes();
        let cache = DedupCache::new(one + one / 2);
        cache.put(PartitionId::new(1), index_with_run(100_000));
        cache.put(PartitionId::new(2), index_with_run(100_000));
        assert!(cache.bytes() <= one + one / 2, "{} > budget", cache.bytes());
        let a = cache.take(PartitionId::new(1)).expect("kept, folded");
        let b = cache.take(PartitionId::new(2)).expect("kept, folded");
        for index in [a, b] {
            assert!((0..100_000i64).all(|i| index.runs[0].filter.may_contain(i * 7919)));
        }
    }

    #[test]
    fn runs_stay_published_while_their_index_is_out() {
        let one = index_with_run(100_000).bytes();
        let cache = DedupCache::new(one);
        let p = PartitionId::new(1);
        assert!(cache.published_runs(p).is_empty());
        cache.put(p, index_with_run(100_000));
        let index = cache.take(p).expect("held");
        assert_eq!(cache.published_runs(p).len(), 1, "out for an append");
        // Folded to fit a smaller budget: the published run is the folded one.
        cache.set_budget(one / 2 + one / 4);
        cache.put(p, index);
        let published = cache.published_runs(p);
        assert!(published[0].filter.bytes() * 2 <= index_with_run(100_000).runs[0].filter.bytes());
        cache.forget(p);
        assert!(cache.published_runs(p).is_empty());
        assert!(cache.take(p).is_none());
    }

    #[test]
    fn an_index_that_cannot_fit_is_dropped() {
        let cache = DedupCache::new(10);
        cache.put(PartitionId::new(1), index_with_run(100_000));
        assert!(cache.published_runs(PartitionId::new(1)).is_empty());
        assert!(cache.take(PartitionId::new(1)).is_none());
    }
}
