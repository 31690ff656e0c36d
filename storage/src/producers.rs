//! Kafka idempotent producers: producer ids, and per (producer, partition)
//! the epoch and the last five appended batches, kept in the same storage
//! transaction as the append, so a retried batch gets the same answer after
//! a restart or through another broker.
//!
//! The rules are Kafka's (`ProducerStateManager`): a batch that repeats one
//! of the last five is a duplicate (answered with its original base offset,
//! nothing written); the next batch must start right after the last sequence
//! (wrapping at 2^31); an older epoch is refused; a newer epoch starts its
//! sequences at 0; a producer the partition has no state for may start
//! anywhere (its state may have expired).

use crate::error::{Result, StorageError};
use crate::model::PartitionId;
use crate::Engine;

/// How many batches per producer and partition are remembered for retries.
pub const REMEMBERED_BATCHES: usize = 5;

/// The producer identity a Kafka record batch carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerBatch {
    /// The producer id handed out by InitProducerId.
    pub producer_id: i64,
    /// The producer epoch.
    pub epoch: i16,
    /// The sequence number of the batch's first record.
    pub base_sequence: i32,
    /// Whether the batch belongs to a transaction (Kafka's transactional
    /// attribute): it is refused unless its transaction holds the partition.
    pub transactional: bool,
}

/// Why a producer's batch was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ProducerError {
    /// The batch does not follow the last one appended.
    #[error("out of order sequence {got}: expected {expected}")]
    OutOfOrderSequence {
        /// The first sequence the batch carried.
        got: i32,
        /// The sequence that was expected.
        expected: i32,
    },
    /// InitProducerId named an id and epoch that are no longer current.
    #[error("the producer id and epoch are no longer current")]
    Fenced,
    /// The batch's epoch is older than the producer's current one.
    #[error("producer epoch {got} is older than the current {current}")]
    StaleEpoch {
        /// The batch's epoch.
        got: i16,
        /// The producer's current epoch on the partition.
        current: i16,
    },
}

/// One remembered batch: its sequence range and where it was stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchMeta {
    pub first_sequence: i32,
    pub last_sequence: i32,
    pub base_offset: i64,
}

/// A producer's state on one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProducerState {
    pub epoch: i16,
    /// Oldest first; at most [`REMEMBERED_BATCHES`].
    pub batches: Vec<BatchMeta>,
    pub updated_at: i64,
}

/// What to do with a producer's batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Append it.
    Append,
    /// A retry of a batch stored at `base_offset`: write nothing.
    Duplicate { base_offset: i64 },
    /// Refuse it.
    Refuse(ProducerError),
}

/// The last sequence of a batch of `count` records starting at `first`.
fn last_sequence(first: i32, count: usize) -> i32 {
    // Sequences wrap from i32::MAX to 0.
    ((i64::from(first) + count as i64 - 1) % (i64::from(i32::MAX) + 1)) as i32
}

/// The sequence after `last`.
fn next_sequence(last: i32) -> i32 {
    if last == i32::MAX {
        0
    } else {
        last + 1
    }
}

/// Judges a batch of `count` records against the producer's state.
pub(crate) fn judge(state: Option<&ProducerState>, batch: &ProducerBatch, count: usize) -> Verdict {
    let Some(state) = state else {
        return Verdict::Append;
    };
    if batch.epoch < state.epoch {
        return Verdict::Refuse(ProducerError::StaleEpoch {
            got: batch.epoch,
            current: state.epoch,
        });
    }
    if batch.epoch > state.epoch {
        return if batch.base_sequence == 0 {
            Verdict::Append
        } else {
            Verdict::Refuse(ProducerError::OutOfOrderSequence {
                got: batch.base_sequence,
                expected: 0,
            })
        };
    }
    let last = last_sequence(batch.base_sequence, count);
    if let Some(seen) = state
        .batches
        .iter()
        .find(|b| b.first_sequence == batch.base_sequence && b.last_sequence == last)
    {
        return Verdict::Duplicate {
            base_offset: seen.base_offset,
        };
    }
    let expected = state
        .batches
        .last()
        .map_or(batch.base_sequence, |b| next_sequence(b.last_sequence));
    if batch.base_sequence == expected {
        Verdict::Append
    } else {
        Verdict::Refuse(ProducerError::OutOfOrderSequence {
            got: batch.base_sequence,
            expected,
        })
    }
}

/// The state after appending a batch of `count` records at `base_offset`.
pub(crate) fn record(
    state: Option<ProducerState>,
    batch: &ProducerBatch,
    count: usize,
    base_offset: i64,
    now_ms: i64,
) -> ProducerState {
    let mut batches = match state {
        Some(s) if s.epoch == batch.epoch => s.batches,
        _ => Vec::new(),
    };
    batches.push(BatchMeta {
        first_sequence: batch.base_sequence,
        last_sequence: last_sequence(batch.base_sequence, count),
        base_offset,
    });
    if batches.len() > REMEMBERED_BATCHES {
        batches.remove(0);
    }
    ProducerState {
        epoch: batch.epoch,
        batches,
        updated_at: now_ms,
    }
}

/// Packs remembered batches for the `batches` column: 16 bytes each.
pub(crate) fn pack(batches: &[BatchMeta]) -> Vec<u8> {
    let mut out = Vec::with_capacity(batches.len() * 16);
    for b in batches {
        out.extend_from_slice(&b.first_sequence.to_be_bytes());
        out.extend_from_slice(&b.last_sequence.to_be_bytes());
        out.extend_from_slice(&b.base_offset.to_be_bytes());
    }
    out
}

/// Unpacks the `batches` column.
pub(crate) fn unpack(blob: &[u8]) -> Result<Vec<BatchMeta>> {
    if !blob.len().is_multiple_of(16) {
        return Err(StorageError::Corrupt("producer state batches".into()));
    }
    Ok(blob
        .chunks_exact(16)
        .map(|c| BatchMeta {
            first_sequence: i32::from_be_bytes([c[0], c[1], c[2], c[3]]),
            last_sequence: i32::from_be_bytes([c[4], c[5], c[6], c[7]]),
            base_offset: i64::from_be_bytes([c[8], c[9], c[10], c[11], c[12], c[13], c[14], c[15]]),
        })
        .collect())
}

/// A Kafka producer id with its epoch, as InitProducerId hands it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerIdentity {
    /// The producer id, unique across the brokers sharing the database.
    pub id: i64,
    /// The epoch: a higher one fences every holder of a lower one.
    pub epoch: i16,
}

/// A producer as DescribeProducers shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerInfo {
    /// The producer id.
    pub producer_id: i64,
    /// Its current epoch on the partition.
    pub epoch: i16,
    /// The last sequence appended.
    pub last_sequence: i32,
    /// When it last appended, ms since the epoch.
    pub last_timestamp_ms: i64,
}

impl Engine {
    /// Hands out a producer id and epoch. Without a transactional id every
    /// call gets a new id (epoch 0), unless the producer asks to bump the
    /// epoch of the id it holds (`current`); with one, the id is kept and
    /// its epoch bumped, which fences the previous holder.
    pub async fn init_producer_id(
        &self,
        transactional_id: Option<&str>,
        current: Option<ProducerIdentity>,
    ) -> Result<ProducerIdentity> {
        let now = self.inner.clock.now_ms();
        crate::sql::producers::init_id(&self.inner.store, transactional_id, current, now).await
    }

    /// The producers with state on a partition.
    pub async fn producers(&self, partition_id: PartitionId) -> Result<Vec<ProducerInfo>> {
        crate::sql::producers::on_partition(&self.inner.store, partition_id).await
    }

    /// Forgets up to `limit` producer states idle for longer than
    /// `idle_ms`; returns how many. Meant for a background loop.
    pub async fn expire_producers(&self, idle_ms: i64, limit: i64) -> Result<u64> {
        let before = self.inner.clock.now_ms().saturating_sub(idle_ms);
        crate::sql::producers::expire(&self.inner.store, before, limit).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(epoch: i16, base_sequence: i32) -> ProducerBatch {
        ProducerBatch {
            producer_id: 7,
            epoch,
            base_sequence,
            transactional: false,
        }
    }

    #[test]
    fn sequences_follow_wrap_and_repeat() {
        let mut state = None;
        let mut offset = 0;
        for (seq, count) in [(0, 3), (3, 2), (5, 1)] {
            assert_eq!(
                judge(state.as_ref(), &batch(0, seq), count),
                Verdict::Append
            );
            state = Some(record(state, &batch(0, seq), count, offset, 0));
            offset += count as i64;
        }
        assert_eq!(
            judge(state.as_ref(), &batch(0, 3), 2),
            Verdict::Duplicate { base_offset: 3 }
        );
        assert_eq!(
            judge(state.as_ref(), &batch(0, 7), 1),
            Verdict::Refuse(ProducerError::OutOfOrderSequence {
                got: 7,
                expected: 6
            })
        );
        assert_eq!(
            judge(state.as_ref(), &batch(0, 3), 3),
            Verdict::Refuse(ProducerError::OutOfOrderSequence {
                got: 3,
                expected: 6
            }),
            "a different range is not a repeat"
        );
        assert_eq!(
            judge(state.as_ref(), &batch(-1, 6), 1),
            Verdict::Refuse(ProducerError::StaleEpoch {
                got: -1,
                current: 0
            })
        );
        assert_eq!(
            judge(state.as_ref(), &batch(1, 0), 1),
            Verdict::Append,
            "a new epoch starts at 0"
        );
        assert!(matches!(
            judge(state.as_ref(), &batch(1, 5), 1),
            Verdict::Refuse(_)
        ));

        let near_end = Some(record(None, &batch(0, i32::MAX - 1), 2, 100, 0));
        assert_eq!(
            judge(near_end.as_ref(), &batch(0, 0), 1),
            Verdict::Append,
            "sequences wrap at 2^31"
        );
        assert_eq!(last_sequence(i32::MAX, 2), 0);
    }

    #[test]
    fn only_five_batches_are_remembered() {
        let mut state = None;
        for i in 0..7 {
            state = Some(record(state, &batch(0, i), 1, i64::from(i), 0));
        }
        let s = state.expect("state");
        assert_eq!(s.batches.len(), REMEMBERED_BATCHES);
        assert_eq!(
            judge(Some(&s), &batch(0, 2), 1),
            Verdict::Duplicate { base_offset: 2 }
        );
        assert!(
            matches!(judge(Some(&s), &batch(0, 1), 1), Verdict::Refuse(_)),
            "too old to recognise"
        );
        assert_eq!(unpack(&pack(&s.batches)).expect("unpack"), s.batches);
    }
}
