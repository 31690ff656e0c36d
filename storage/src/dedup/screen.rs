//! The part of a dedup lookup that needs no lock: probing a partition's
//! sealed runs for a push's transaction ids before the push joins a group
//! commit.
//!
//! Runs never change once written, so their filters can be probed on the
//! request's own task, beside the writer, rather than inside the append,
//! where every other append of the partition waits for them (on
//! PostgreSQL behind the partition's row lock, on SQLite behind the one
//! writer). Under the lock the append then probes only the live runs the
//! screen did not ask (sealed or merged since), and reads the pages of
//! every "maybe" in one statement. The "maybe" pages are read there and
//! not here: on SQLite the writer's connection has them in its cache
//! (a reader connection's reads cost more than they saved, measured).
//! The decision stays exact: every live run is either screened or probed,
//! and a candidate is still verified against its stored id.

use std::collections::HashSet;
use std::sync::Arc;

use super::run::Run;
use super::DedupCache;
use crate::metrics::STORAGE;
use crate::model::PartitionId;
use crate::record::Record;

/// What the runs a screen asked said about one job's records.
#[derive(Debug, Default)]
pub(crate) struct Screened {
    /// Each record's transaction-id hash, in order.
    pub hashes: Vec<i64>,
    /// The runs asked: the append probes only live runs not among them.
    runs: Vec<i64>,
    /// The hashes some screened run said "maybe" to.
    pub maybe: Vec<i64>,
    /// The (run, page) keys those "maybe"s point to, read under the lock
    /// (by the writer's connection, whose cache holds the pages recently
    /// written) unless their run was retired meanwhile.
    pub pages: Vec<(i64, i64)>,
}

impl Screened {
    /// Whether the screen asked run `id`.
    pub(crate) fn asked(&self, id: i64) -> bool {
        self.runs.contains(&id)
    }
}

/// Screens `records`, all of `partition_id`, against the runs its cached
/// index published; `None` when there is nothing to ask (no window, no
/// sealed run yet, or an index not cached).
pub(crate) fn screen(
    cache: &DedupCache,
    partition_id: PartitionId,
    records: &[Record],
) -> Option<Screened> {
    let runs = cache.published_runs(partition_id);
    if runs.is_empty() {
        return None;
    }
    let hashes: Vec<i64> = records.iter().map(Record::txn_hash).collect();
    let (maybe, pages) = probe(&runs, &hashes);
    Some(Screened {
        hashes,
        runs: runs.iter().map(|r| r.id).collect(),
        maybe,
        pages,
    })
}

/// Probes every run for every hash (run by run, so the probes of one
/// filter follow each other and their memory loads overlap): the hashes
/// some run said "maybe" to, and the (run, page) keys to read, sorted.
pub(crate) fn probe<'r>(
    runs: impl IntoIterator<Item = &'r Arc<Run>>,
    hashes: &[i64],
) -> (Vec<i64>, Vec<(i64, i64)>) {
    let mut maybe = HashSet::new();
    let mut wanted = Vec::new();
    let (mut probes, mut maybes) = (0, 0);
    for run in runs {
        probes += hashes.len();
        for &hash in hashes {
            let pages = run.pages_for(hash);
            if !pages.is_empty() {
                maybes += 1;
                maybe.insert(hash);
                wanted.extend(pages.map(|page_no| (run.id, page_no)));
            }
        }
    }
    wanted.sort_unstable();
    wanted.dedup();
    let metrics = &*STORAGE;
    metrics.dedup_probes.inc_by(probes as u64);
    metrics.dedup_maybes.inc_by(maybes);
    (maybe.into_iter().collect(), wanted)
}
