//! The in-window transaction-id index of a partition, and the cache of them.
//!
//! The database stores, per appended segment, the 64-bit hashes of its
//! transaction ids in offset order (the `txn_hashes` sidecar): one row per
//! segment, written sequentially, so dedup costs one small insert per append.
//! A [`WindowIndex`] is those hashes loaded into memory for one partition and
//! one window: hash -> offsets. It is only ever a candidate list; a candidate
//! is a duplicate once the stored transaction id is compared equal.
//!
//! The [`DedupCache`] keeps indexes between appends so the sidecar need not
//! be read again. An index remembers how far it covers (`covered_to`, the
//! partition's next offset when it was last brought up to date, and
//! `covered_since`, the oldest creation time it loaded), so the append reads
//! only what other writers added since: the cache saves reads, never changes
//! an answer. A cold, evicted or over-budget partition reads its whole window.

use crate::model::PartitionId;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Mutex, PoisonError};

/// One sidecar row: the hashes of a segment's transaction ids.
#[derive(Debug, Clone)]
pub(crate) struct HashRow {
    pub base_offset: i64,
    pub created_at: i64,
    pub hashes: Vec<i64>,
}

/// Packs hashes for the sidecar's `hashes` column.
pub(crate) fn pack_hashes(hashes: &[i64]) -> Vec<u8> {
    hashes.iter().flat_map(|h| h.to_le_bytes()).collect()
}

/// Unpacks the sidecar's `hashes` column; `None` if its length is not a multiple of 8.
pub(crate) fn unpack_hashes(blob: &[u8]) -> Option<Vec<i64>> {
    if !blob.len().is_multiple_of(8) {
        return None;
    }
    Some(
        blob.chunks_exact(8)
            .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect(),
    )
}

/// Hashes are already uniform 64-bit values, so the map uses them as they are.
#[derive(Debug, Default, Clone, Copy)]
struct PreHashed(u64);

impl Hasher for PreHashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_i64(&mut self, n: i64) {
        self.0 = n as u64;
    }
}

type HashIndex<V> = HashMap<i64, V, BuildHasherDefault<PreHashed>>;

/// The transaction-id hashes of one partition inside a window.
///
/// Entries are forgotten lazily: the window's lowest offset (`low`) moves
/// as segments expire, lookups ignore entries below it, and the map is swept
/// once enough of it is stale, so memory is one map entry per hash.
#[derive(Debug, Default)]
pub(crate) struct WindowIndex {
    /// All stored offsets before this one are reflected.
    pub covered_to: i64,
    /// Segments created before this time were not loaded.
    pub covered_since: i64,
    /// Offsets below this one are outside the window.
    low: i64,
    /// Hash -> the lowest in-window offset carrying it.
    first: HashIndex<i64>,
    /// Hash -> further in-window offsets (hash collisions; rare).
    more: HashIndex<Vec<i64>>,
    /// (creation time, first offset) of each loaded segment, for expiry.
    segments: VecDeque<(i64, i64)>,
    /// Entries at or above `low`.
    live: usize,
}

impl WindowIndex {
    /// An empty index whose coverage starts at `since`.
    pub(crate) fn new(since: i64) -> Self {
        Self {
            covered_since: since,
            ..Self::default()
        }
    }

    /// How many hashes it holds in memory, stale ones included.
    pub(crate) fn len(&self) -> usize {
        self.first.len() + self.more.values().map(Vec::len).sum::<usize>()
    }

    /// Adds a sidecar row (rows must come in offset order).
    pub(crate) fn add(&mut self, row: &HashRow) {
        if self.segments.is_empty() {
            self.low = row.base_offset;
        }
        for (i, &h) in row.hashes.iter().enumerate() {
            let offset = row.base_offset + i as i64;
            match self.first.get(&h) {
                Some(&old) if old >= self.low => self.more.entry(h).or_default().push(offset),
                _ => {
                    self.first.insert(h, offset);
                }
            }
        }
        self.live += row.hashes.len();
        self.covered_to = self
            .covered_to
            .max(row.base_offset + row.hashes.len() as i64);
        self.segments.push_back((row.created_at, row.base_offset));
    }

    /// Forgets the segments created before `since`.
    pub(crate) fn evict_before(&mut self, since: i64) {
        while self
            .segments
            .front()
            .is_some_and(|&(created_at, _)| created_at < since)
        {
            self.segments.pop_front();
            let low = self
                .segments
                .front()
                .map_or(self.covered_to, |&(_, base)| base);
            self.live = self
                .live
                .saturating_sub(usize::try_from(low - self.low).unwrap_or(0));
            self.low = low;
        }
        self.covered_since = self.covered_since.max(since);
        // Sweep once stale entries are as many as live ones: amortised O(1).
        if self.first.len() > 2 * self.live + 1024 {
            let low = self.low;
            self.first.retain(|_, o| *o >= low);
            self.more.retain(|_, rest| {
                rest.retain(|&o| o >= low);
                !rest.is_empty()
            });
            self.first.shrink_to_fit();
        }
    }

    /// The in-window offsets carrying `h`, lowest first.
    pub(crate) fn candidates(&self, h: i64) -> Vec<i64> {
        let mut out: Vec<i64> = self.first.get(&h).copied().into_iter().collect();
        if let Some(rest) = self.more.get(&h) {
            out.extend(rest);
        }
        out.retain(|&o| o >= self.low);
        out.sort_unstable();
        out
    }
}

/// Window indexes kept between appends, bounded by a number of hashes.
#[derive(Debug)]
pub(crate) struct DedupCache {
    budget: usize,
    indexes: Mutex<HashMap<PartitionId, WindowIndex>>,
}

impl DedupCache {
    /// A cache holding at most `budget` hashes in all.
    pub(crate) fn new(budget: usize) -> Self {
        Self {
            budget,
            indexes: Mutex::new(HashMap::new()),
        }
    }

    /// Takes the partition's index out for an append (appends of one
    /// partition are serialised, so nobody else needs it meanwhile).
    pub(crate) fn take(&self, partition_id: PartitionId) -> Option<WindowIndex> {
        self.lock().remove(&partition_id)
    }

    /// Puts an index back after its append committed. Other partitions are
    /// evicted to stay in budget; an index larger than the budget is dropped.
    pub(crate) fn put(&self, partition_id: PartitionId, index: WindowIndex) {
        if index.len() > self.budget {
            return;
        }
        let mut indexes = self.lock();
        let mut total: usize = indexes.values().map(WindowIndex::len).sum();
        while total + index.len() > self.budget {
            let Some((&victim, _)) = indexes.iter().max_by_key(|(_, i)| i.len()) else {
                break;
            };
            total -= indexes.remove(&victim).map_or(0, |i| i.len());
        }
        indexes.insert(partition_id, index);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PartitionId, WindowIndex>> {
        self.indexes.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(base_offset: i64, created_at: i64, hashes: &[i64]) -> HashRow {
        HashRow {
            base_offset,
            created_at,
            hashes: hashes.to_vec(),
        }
    }

    #[test]
    fn collisions_keep_every_offset_and_eviction_is_exact() {
        let mut index = WindowIndex::new(0);
        index.add(&row(0, 10, &[1, 2, 1]));
        index.add(&row(3, 20, &[1, 3]));
        assert_eq!(index.candidates(1), [0, 2, 3]);
        assert_eq!(index.covered_to, 5);
        index.evict_before(15);
        assert_eq!(index.candidates(1), [3]);
        assert!(index.candidates(2).is_empty());
        index.add(&row(5, 30, &[2]));
        assert_eq!(
            index.candidates(2),
            [5],
            "a hash seen again after expiry is found"
        );
        index.evict_before(35);
        assert!(index.candidates(3).is_empty());
        assert!(index.candidates(2).is_empty());
    }

    #[test]
    fn stale_entries_are_swept() {
        let mut index = WindowIndex::new(0);
        for s in 0..100 {
            let hashes: Vec<i64> = (0..100).map(|i| s * 100 + i).collect();
            index.add(&row(s * 100, s, &hashes));
        }
        assert_eq!(index.len(), 10_000);
        index.evict_before(90);
        assert_eq!(index.len(), 1_000, "the map is swept once mostly stale");
        assert_eq!(index.candidates(8_999), Vec::<i64>::new());
        assert_eq!(index.candidates(9_000), [9_000]);
    }

    #[test]
    fn the_cache_stays_in_budget() {
        let cache = DedupCache::new(5);
        let mut a = WindowIndex::new(0);
        a.add(&row(0, 1, &[1, 2, 3]));
        cache.put(PartitionId::new(1), a);
        let mut b = WindowIndex::new(0);
        b.add(&row(0, 1, &[1, 2, 3]));
        cache.put(PartitionId::new(2), b);
        assert!(
            cache.take(PartitionId::new(1)).is_none(),
            "the larger index went"
        );
        assert!(cache.take(PartitionId::new(2)).is_some());
        let mut huge = WindowIndex::new(0);
        huge.add(&row(0, 1, &[1, 2, 3, 4, 5, 6]));
        cache.put(PartitionId::new(3), huge);
        assert!(
            cache.take(PartitionId::new(3)).is_none(),
            "an index over budget is not kept"
        );
    }

    #[test]
    fn hashes_pack_and_unpack() {
        let h = [i64::MIN, -1, 0, 7, i64::MAX];
        assert_eq!(unpack_hashes(&pack_hashes(&h)).as_deref(), Some(&h[..]));
        assert!(unpack_hashes(&[1, 2, 3]).is_none());
    }
}
