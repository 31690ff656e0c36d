//! Sealed runs: the part of a partition's dedup index that lives on disk.
//!
//! A run is an immutable set of (hash, offset) pairs sorted by hash, stored
//! as pages of [`PAGE_ENTRIES`] pairs. A broker keeps of each live run only
//! its Bloom filter and the first hash of every page (the fences): a lookup
//! asks the filter, and only on "maybe" reads the one page the fences point
//! to. Runs are written once, by sealing a partition's tail or by merging
//! runs, always through a [`RunBuilder`].

use std::ops::Range;

use super::filter::Filter;
use super::{pack_i64s, unpack_i64s};

/// Pairs per stored page (7.9 KiB). Small enough that a page row fits in
/// one PostgreSQL heap page (8,108 bytes with its tuple header, under the
/// 8,160-byte `toast_tuple_target` of `dedup_pages`), so reading a "maybe"
/// page is one heap fetch instead of a TOAST index lookup and four chunk
/// fetches. Readers go by the fences and each page's length, so runs
/// written with another page size stay readable.
pub(crate) const PAGE_ENTRIES: usize = 504;

/// Filter bits per id: about 0.1 % of absent ids get a "maybe" from each
/// run, and each "maybe" costs the append a page read (10-20 µs on SQLite
/// under load, inside the writer's transaction). Large runs once had 12
/// bits (0.5 %): at 20M ids in a window their "maybe"s were most of the
/// page reads, which cost more than the 4 bits per id they saved.
const BITS_PER_ID: usize = 16;

/// A transaction-id hash and the offset that carries it.
pub(crate) type Entry = (i64, i64);

/// A stored page: its number in the run, and its bytes.
pub(crate) type Page = (i64, Vec<u8>);

/// A page read by key: (run id, page number), and its entries.
pub(crate) type KeyedPage = ((i64, i64), Vec<Entry>);

/// What is left when a run is written out.
#[derive(Debug)]
pub(crate) struct Finished {
    /// The last, partial page, if any.
    pub last_page: Option<Page>,
    pub filter: Filter,
    pub fences: Vec<i64>,
    pub entries: i64,
}

/// What a broker holds in memory of a live run.
#[derive(Debug)]
pub(crate) struct Run {
    pub id: i64,
    /// The newest creation time of its ids: past the window, the run is dropped.
    pub created_max: i64,
    pub filter: Filter,
    /// The first hash of each page.
    pub fences: Vec<i64>,
}

impl Run {
    /// The pages that may hold `hash`: usually one, none when the filter
    /// says no, several only when equal hashes straddle pages.
    pub(crate) fn pages_for(&self, hash: i64) -> Range<i64> {
        if !self.filter.may_contain(hash) {
            return 0..0;
        }
        pages_for(&self.fences, hash)
    }

    /// The memory it holds, in bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.filter.bytes() + self.fences.len() * 8 + std::mem::size_of::<Self>()
    }

    /// The run with its filter halved; `None` when it can no longer be folded.
    pub(crate) fn folded(&self) -> Option<Self> {
        Some(Self {
            id: self.id,
            created_max: self.created_max,
            filter: self.filter.folded()?,
            fences: self.fences.clone(),
        })
    }
}

/// The pages whose key range may contain `hash`, by the fences alone.
pub(crate) fn pages_for(fences: &[i64], hash: i64) -> Range<i64> {
    let below = fences.partition_point(|&f| f < hash);
    let upto = fences.partition_point(|&f| f <= hash);
    if upto == 0 {
        return 0..0;
    }
    below.saturating_sub(1) as i64..upto as i64
}

/// The offsets in a page that carry `hash`.
pub(crate) fn offsets_in(page: &[Entry], hash: i64) -> impl Iterator<Item = i64> + '_ {
    let start = page.partition_point(|&(h, _)| h < hash);
    page[start..]
        .iter()
        .take_while(move |&&(h, _)| h == hash)
        .map(|&(_, offset)| offset)
}

/// Decodes a stored page; `None` if it is not whole pairs.
pub(crate) fn decode_page(bytes: &[u8]) -> Option<Vec<Entry>> {
    let words = unpack_i64s(bytes)?;
    if words.len() % 2 != 0 {
        return None;
    }
    Some(words.chunks_exact(2).map(|p| (p[0], p[1])).collect())
}

/// Writes a run from entries given in (hash, offset) order: full pages come
/// out as they fill, the filter and fences at the end.
#[derive(Debug)]
pub(crate) struct RunBuilder {
    filter: Filter,
    fences: Vec<i64>,
    page: Vec<i64>,
    entries: i64,
}

impl RunBuilder {
    /// A builder for a run of about `capacity` entries (sizes the filter).
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            filter: Filter::with_capacity(capacity, BITS_PER_ID),
            fences: Vec::new(),
            page: Vec::with_capacity(2 * PAGE_ENTRIES),
            entries: 0,
        }
    }

    /// Adds the next entry; returns a page once one is full, as (page number, bytes).
    pub(crate) fn push(&mut self, (hash, offset): Entry) -> Option<Page> {
        if self.page.is_empty() {
            self.fences.push(hash);
        }
        self.filter.insert(hash);
        self.page.extend([hash, offset]);
        self.entries += 1;
        (self.page.len() == 2 * PAGE_ENTRIES).then(|| self.take_page())
    }

    /// Ends the run: its last page, filter and fences.
    pub(crate) fn finish(mut self) -> Finished {
        Finished {
            last_page: (!self.page.is_empty()).then(|| self.take_page()),
            filter: self.filter,
            fences: self.fences,
            entries: self.entries,
        }
    }

    fn take_page(&mut self) -> Page {
        let bytes = pack_i64s(&self.page);
        self.page.clear();
        (self.fences.len() as i64 - 1, bytes)
    }
}

/// The stored form of fences.
pub(crate) fn encode_fences(fences: &[i64]) -> Vec<u8> {
    pack_i64s(fences)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_built_run_finds_every_entry_through_its_fences() {
        // Hash 7 repeats across a page boundary (a collision of ids).
        let mut entries: Vec<Entry> = (0..1_500).map(|i| (i * 10, i)).collect();
        entries.extend((0..600).map(|i| (7_005, 10_000 + i)));
        entries.sort_unstable();
        let mut builder = RunBuilder::new(entries.len());
        let mut pages = Vec::new();
        for &e in &entries {
            pages.extend(builder.push(e));
        }
        let run = builder.finish();
        pages.extend(run.last_page);
        assert_eq!(run.entries, entries.len() as i64);
        assert_eq!(pages.len(), run.fences.len());
        let pages: Vec<Vec<Entry>> = pages
            .iter()
            .enumerate()
            .map(|(i, (n, bytes))| {
                assert_eq!(*n, i as i64);
                decode_page(bytes).expect("whole pairs")
            })
            .collect();
        let run = Run {
            id: 1,
            created_max: 0,
            filter: run.filter,
            fences: run.fences,
        };
        let lookup = |hash: i64| -> Vec<i64> {
            run.pages_for(hash)
                .flat_map(|p| offsets_in(&pages[p as usize], hash).collect::<Vec<_>>())
                .collect()
        };
        assert_eq!(lookup(7_005), (10_000..10_600).collect::<Vec<_>>());
        assert_eq!(lookup(14_990), [1_499]);
        assert_eq!(lookup(0), [0]);
        assert!(lookup(5).is_empty());
        assert!(lookup(-1).is_empty());
        assert!(lookup(i64::MAX).is_empty());
    }

    #[test]
    fn fences_name_the_pages_a_hash_can_be_in() {
        let fences = [10, 20, 20, 30];
        assert_eq!(pages_for(&fences, 5), 0..0);
        assert_eq!(pages_for(&fences, 10), 0..1);
        assert_eq!(pages_for(&fences, 15), 0..1);
        assert_eq!(pages_for(&fences, 20), 0..3);
        assert_eq!(pages_for(&fences, 25), 2..3);
        assert_eq!(pages_for(&fences, 99), 3..4);
        assert!(decode_page(&[0; 24]).is_none());
    }
}
