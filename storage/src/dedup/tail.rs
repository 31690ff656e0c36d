//! The tail of a partition's dedup index: the transaction-id hashes appended
//! since its last sealed run, held in memory exactly (hash -> offsets).
//!
//! Its durable copy is the `txn_hashes` sidecar (one row per append), so a
//! cold broker rebuilds it by reading at most a tail's worth of rows; once it
//! holds [`super::SEAL_IDS`] hashes it is sealed into a run.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::run::Entry;
use super::HashRow;

/// Hashes are already uniform 64-bit values, so a map keyed by one (or by
/// a key that hashes as one) uses it as it is.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct PreHashed(u64);

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

/// The unsealed hashes of one partition.
#[derive(Debug, Default)]
pub(crate) struct Tail {
    /// Every stored offset below this one is reflected (or sealed).
    pub covered_to: i64,
    /// Hash -> the lowest offset carrying it.
    first: HashIndex<i64>,
    /// Hash -> further offsets (hash collisions and ids reused after their
    /// window; rare).
    more: HashIndex<Vec<i64>>,
    len: usize,
}

impl Tail {
    /// An empty tail starting at `offset`.
    pub(crate) fn starting_at(offset: i64) -> Self {
        Self {
            covered_to: offset,
            ..Self::default()
        }
    }

    /// How many hashes it holds.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The memory it holds, in bytes (about: a map entry is 16 bytes plus
    /// control bytes and spare capacity).
    pub(crate) fn bytes(&self) -> usize {
        self.first.capacity() * 17 + self.more.len() * 48
    }

    /// Adds a sidecar row (rows must come in offset order).
    pub(crate) fn add(&mut self, row: &HashRow) {
        for (i, &h) in row.hashes.iter().enumerate() {
            let offset = row.base_offset + i as i64;
            match self.first.get(&h) {
                Some(_) => self.more.entry(h).or_default().push(offset),
                None => {
                    self.first.insert(h, offset);
                }
            }
        }
        self.len += row.hashes.len();
        self.covered_to = self
            .covered_to
            .max(row.base_offset + row.hashes.len() as i64);
    }

    /// The offsets carrying `h`, lowest first.
    pub(crate) fn candidates(&self, h: i64) -> impl Iterator<Item = i64> + '_ {
        let first = self.first.get(&h).copied();
        let more = self.more.get(&h).into_iter().flatten().copied();
        first.into_iter().chain(more)
    }

    /// Every (hash, offset) it holds, sorted: the entries of the run it seals into.
    pub(crate) fn sorted_entries(&self) -> Vec<Entry> {
        let mut entries: Vec<Entry> = self.first.iter().map(|(&h, &o)| (h, o)).collect();
        for (&h, offsets) in &self.more {
            entries.extend(offsets.iter().map(|&o| (h, o)));
        }
        entries.sort_unstable();
        entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(base_offset: i64, hashes: &[i64]) -> HashRow {
        HashRow {
            base_offset,
            created_at: 0,
            hashes: hashes.to_vec(),
        }
    }

    #[test]
    fn collisions_keep_every_offset() {
        let mut tail = Tail::starting_at(0);
        tail.add(&row(0, &[1, 2, 1]));
        tail.add(&row(3, &[1, 3]));
        assert_eq!(tail.candidates(1).collect::<Vec<_>>(), [0, 2, 3]);
        assert_eq!(tail.candidates(4).count(), 0);
        assert_eq!(tail.covered_to, 5);
        assert_eq!(tail.len(), 5);
        assert_eq!(
            tail.sorted_entries(),
            [(1, 0), (1, 2), (1, 3), (2, 1), (3, 4)]
        );
    }
}
