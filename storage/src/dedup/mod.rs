//! The dedup index: for each partition of a queue with a window, which
//! offsets carry a given transaction-id hash.
//!
//! The decision stays exact: the index only names candidate offsets, and a
//! candidate is a duplicate once its stored transaction id compares equal
//! and it lies inside the window. What the index has to be is cheap at any
//! window population, bounded in memory, and quick to pick up cold:
//!
//! - Every append writes one `txn_hashes` row: its ids' 64-bit hashes in
//!   offset order (sequential, a few bytes per id).
//! - The **tail** ([`tail::Tail`]), the hashes appended since the last seal,
//!   is held in memory exactly. At [`SEAL_IDS`] hashes the append that
//!   filled it **seals** it into a level-0 **run** ([`run`]): its (hash,
//!   offset) pairs sorted by hash in pages of about 8 KiB, with a Bloom filter
//!   ([`filter::Filter`]) and the first hash of each page.
//! - A background task ([`maintain`]) **merges** [`MERGE_FANOUT`] runs of a
//!   level into one of the next, in bounded steps, up to [`TOP_LEVEL`] (runs
//!   of about 4M ids), so a partition holds a handful of runs per power of
//!   four of its window up to 4M ids and one run per 4M ids beyond; it
//!   also drops runs past the window and purges the sidecar.
//! - A lookup asks the tail, then each run's filter; only a "maybe" (about
//!   0.1 % per run for an absent id) reads one page. So an append costs
//!   about the same at ten thousand ids in the window and at millions: each
//!   id is rewritten by merges at most [`TOP_LEVEL`] times, and past 4M ids
//!   a lookup costs one more filter probe per 4M.
//! - Memory per partition is its tail (at most [`SEAL_IDS`] entries) plus
//!   about 16 bits per windowed id for the filters; the [`cache::DedupCache`]
//!   holds every partition's index within one budget. Beside it, each
//!   running merge (at most [`maintain::MAX_MERGES`] per broker) holds its
//!   output's filter, at most 8 MiB (a top-level run's), and a few input and
//!   output pages.
//! - A cold broker (a restart, another broker on PostgreSQL) reads a
//!   partition's run filters and at most one tail's sidecar rows, never its
//!   window's hashes.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

mod bits;
pub(crate) mod cache;
pub(crate) mod filter;
pub(crate) mod index;
pub(crate) mod maintain;
pub(crate) mod run;
pub(crate) mod screen;
pub(crate) mod tail;

pub(crate) use cache::DedupCache;
pub(crate) use index::WindowIndex;

/// Hashes in a tail before it is sealed into a run.
pub(crate) const SEAL_IDS: usize = 16_384;

/// Runs of one level merged into one of the next.
pub(crate) const MERGE_FANOUT: i64 = 4;

/// The highest level a merge writes: runs of about 4M ids (16,384 × 4⁴).
/// Top-level runs are not merged further; they leave the window whole, and
/// a window of n ids holds about n / 4M of them. Merging them too would
/// rewrite every id once more per factor of four (16M, 64M, …), the work
/// per append growing with the window, and would hold a run's filter twice
/// (inputs and output, 32 MiB each at 16M ids) while it ran; a top-level run
/// costs a lookup one filter probe and about 0.1 % more page reads instead.
pub(crate) const TOP_LEVEL: i64 = 4;

/// The life of a run (`dedup_runs.state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunState {
    /// A merge is writing it; nobody reads it.
    Building = 0,
    /// Lookups use it.
    Live = 1,
    /// Superseded or expired; its pages are being deleted.
    Dead = 2,
}

/// One sidecar row: the hashes of an append's transaction ids.
#[derive(Debug, Clone)]
pub(crate) struct HashRow {
    pub base_offset: i64,
    pub created_at: i64,
    pub hashes: Vec<i64>,
}

/// Packs 64-bit values little-endian (sidecar hashes, pages, fences).
pub(crate) fn pack_i64s(values: &[i64]) -> Vec<u8> {
    values.iter().flat_map(|h| h.to_le_bytes()).collect()
}

/// A transaction id with its dedup hash, as a map key: hashed by the hash
/// alone (already uniform, see [`tail::PreHashed`]), so a lookup does not
/// hash the id's text again; equal only with the same id.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TxnKey {
    pub hash: i64,
    pub id: String,
}

impl Hash for TxnKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_i64(self.hash);
    }
}

/// A map keyed by transaction id, each hashed once.
pub(crate) type TxnMap<V> = HashMap<TxnKey, V, BuildHasherDefault<tail::PreHashed>>;

/// Unpacks [`pack_i64s`]; `None` if the length is not a multiple of 8.
pub(crate) fn unpack_i64s(blob: &[u8]) -> Option<Vec<i64>> {
    if !blob.len().is_multiple_of(8) {
        return None;
    }
    Some(
        blob.chunks_exact(8)
            .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_pack_and_unpack() {
        let h = [i64::MIN, -1, 0, 7, i64::MAX];
        assert_eq!(unpack_i64s(&pack_i64s(&h)).as_deref(), Some(&h[..]));
        assert!(unpack_i64s(&[1, 2, 3]).is_none());
    }
}
