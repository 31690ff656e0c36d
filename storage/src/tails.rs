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

/// The most tails kept at once (each about a segment, a megabyte): enough
/// for the partitions a few consumers read at a time, and a bound on memory
/// whatever the number of partitions.
const MAX_TAILS: usize = 16;

/// The tails, by partition.
#[derive(Debug, Default)]
pub(crate) struct Tails {
    kept: Mutex<HashMap<PartitionId, Opened>>,
}

impl Tails {
    /// The kept segment of `partition` that holds offset `from`, taken out.
    pub(crate) fn take(&self, partition: PartitionId, from: i64) -> Option<Opened> {
        let mut kept = self.kept();
        let holds = kept
            .get(&partition)
            .is_some_and(|s| s.base_offset <= from && from < s.end());
        if holds {
            kept.remove(&partition)
        } else {
            None
        }
    }

    /// Keeps `segment` as the tail of `partition`, in place of any other;
    /// when full, an arbitrary other partition's tail makes room.
    pub(crate) fn keep(&self, partition: PartitionId, segment: Opened) {
        let mut kept = self.kept();
        if kept.len() >= MAX_TAILS && !kept.contains_key(&partition) {
            if let Some(&other) = kept.keys().next() {
                kept.remove(&other);
            }
        }
        kept.insert(partition, segment);
    }

    fn kept(&self) -> MutexGuard<'_, HashMap<PartitionId, Opened>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
