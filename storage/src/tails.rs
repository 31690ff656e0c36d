//! The segment each partition's last read stopped inside, kept so that the
//! next read from there (a consumer's next fetch) takes the rest of it
//! without reading the whole segment from the database again.
//!
//! A fetch's budget (a megabyte per partition by default) rarely ends where
//! a stored segment (about a megabyte) does, so without this every segment
//! was read, and on PostgreSQL decompressed, twice over.
//!
//! Segments never change once written, but for compaction, which replaces a
//! segment with smaller ones holding the same offsets: a tail kept from
//! before answers as a read just before the compaction would have. Partition
//! ids are never reused, so a deleted partition's tail is never read again;
//! it leaves when evicted.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::model::PartitionId;
use crate::sql::segments::Opened;

/// The most bytes of tails kept at once: about sixteen segments of a
/// megabyte, enough for the partitions a few consumers read at a time, and
/// a bound on memory whatever the number of partitions or the size of their
/// segments (a segment that alone takes more than a quarter of it is not
/// kept).
const MAX_BYTES: usize = 16 << 20;

/// The tails, by partition.
#[derive(Debug, Default)]
pub(crate) struct Tails {
    kept: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    by_partition: HashMap<PartitionId, Opened>,
    /// The bytes of the segments in `by_partition`.
    bytes: usize,
}

impl Tails {
    /// The kept segment of `partition` that holds offset `from`, taken out.
    pub(crate) fn take(&self, partition: PartitionId, from: i64) -> Option<Opened> {
        let mut kept = self.kept();
        let holds = kept
            .by_partition
            .get(&partition)
            .is_some_and(|s| s.base_offset <= from && from < s.end());
        if !holds {
            return None;
        }
        let segment = kept.by_partition.remove(&partition)?;
        kept.bytes -= segment.records.len();
        Some(segment)
    }

    /// Keeps `segment` as the tail of `partition`, in place of any other;
    /// other partitions' tails, taken arbitrarily, make room when needed.
    pub(crate) fn keep(&self, partition: PartitionId, segment: Opened) {
        let len = segment.records.len();
        if len > MAX_BYTES / 4 {
            return;
        }
        let mut kept = self.kept();
        if let Some(old) = kept.by_partition.remove(&partition) {
            kept.bytes -= old.records.len();
        }
        while kept.bytes + len > MAX_BYTES {
            let Some(&other) = kept.by_partition.keys().next() else {
                break;
            };
            if let Some(old) = kept.by_partition.remove(&other) {
                kept.bytes -= old.records.len();
            }
        }
        kept.bytes += len;
        kept.by_partition.insert(partition, segment);
    }

    fn kept(&self) -> MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    fn segment(base_offset: i64, bytes: usize) -> Opened {
        Opened {
            base_offset,
            count: 10,
            created_at: 0,
            format: crate::record::FORMAT_V1,
            records: Bytes::from(vec![0; bytes]),
        }
    }

    #[test]
    fn tails_stay_within_their_bytes_and_answer_only_inside_them() {
        let tails = Tails::default();
        for p in 1..=40 {
            tails.keep(PartitionId::new(p), segment(100, 1 << 20));
            assert!(tails.kept().bytes <= MAX_BYTES);
        }
        assert_eq!(tails.kept().by_partition.len(), 16);
        // The last kept is there; outside its offsets it is not taken.
        let last = PartitionId::new(40);
        assert!(tails.take(last, 99).is_none());
        assert!(tails.take(last, 110).is_none());
        assert_eq!(tails.take(last, 105).map(|s| s.base_offset), Some(100));
        assert!(tails.take(last, 105).is_none(), "taken out");
        // A segment larger than a quarter of the bound is not kept.
        tails.keep(last, segment(0, MAX_BYTES / 4 + 1));
        assert!(tails.take(last, 0).is_none());
        let sum: usize = tails
            .kept()
            .by_partition
            .values()
            .map(|s| s.records.len())
            .sum();
        assert_eq!(tails.kept().bytes, sum);
    }
}
