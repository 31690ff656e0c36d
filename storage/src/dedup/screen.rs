//! The part of a dedup lookup that needs no lock: asking a partition's
//! sealed runs about a push's transaction ids before the push joins a
//! group commit.
//!
//! Runs never change once written, so their filters can be probed, and
//! the pages of their "maybe"s read, on the request's own task and a
//! reader connection, beside the writer rather than inside its
//! transaction, where every append of the partition (on SQLite, of the
//! whole broker) waits for them. Under the lock the append then probes
//! only the live runs the screen did not see (sealed or merged since),
//! and finds the screened runs' "maybe" pages already read. The decision
//! stays exact: every live run is either screened or probed, and a
//! candidate is still verified against its stored id.

use std::collections::HashSet;
use std::sync::Arc;

use super::run::{KeyedPage, Run};
use super::DedupCache;
use crate::backend::Store;
use crate::error::Result;
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
    /// The pages those "maybe"s point to. A page missing here belongs to
    /// a run retired meanwhile, or is read under the lock.
    pub pages: Vec<KeyedPage>,
}

impl Screened {
    /// Whether the screen asked run `id`.
    pub(crate) fn asked(&self, id: i64) -> bool {
        self.runs.contains(&id)
    }
}

/// Screens `records`, all of `partition_id`, against the runs its cached
/// index published; `None` when there is nothing to ask (no window, no
/// sealed run yet, or an index not cached). A failed page read only
/// leaves the work to the append.
pub(crate) async fn screen(
    cache: &DedupCache,
    store: &Store,
    partition_id: PartitionId,
    records: &[Record],
) -> Option<Screened> {
    let runs = cache.published_runs(partition_id);
    if runs.is_empty() {
        return None;
    }
    let hashes: Vec<i64> = records.iter().map(Record::txn_hash).collect();
    let (maybe, wanted) = probe(&runs, &hashes);
    let pages = match wanted.is_empty() {
        true => Vec::new(),
        false => match read_pages(store, &wanted).await {
            Ok(pages) => pages,
            Err(e) => {
                tracing::debug!(error = %e, %partition_id, "dedup screen: pages left to the append");
                return None;
            }
        },
    };
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

async fn read_pages(store: &Store, keys: &[(i64, i64)]) -> Result<Vec<KeyedPage>> {
    let mut conn = store.read_conn().await?;
    let pages = conn.conn().read_pages(keys).await?;
    STORAGE.dedup_pages_read.inc_by(pages.len() as u64);
    Ok(pages)
}
