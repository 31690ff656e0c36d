//! Share sessions (KIP-932): a ShareFetch at epoch 0 opens one for the
//! member, each later ShareFetch or ShareAcknowledge must carry the next
//! epoch (1, 2, … wrapping to 1), and epoch -1 closes it, releasing what
//! the member still holds. A session remembers the partitions fetched
//! from, so an incremental ShareFetch may name only what changed.

use std::collections::BTreeSet;

use kafka_protocol::ResponseError;
use storage::PartitionId;
use uuid::Uuid;

use super::member::Member;
use super::Ms;

/// A partition of a session: topic id and partition index.
pub(crate) type SessionPartition = (Uuid, i32);

/// A record acquired by a member: the lease it is held under, the
/// transaction id the engine acknowledges it by, its delivery count and
/// when its lock ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Held {
    /// Its offset.
    pub(crate) offset: i64,
    /// The native lease.
    pub(crate) lease_id: String,
    /// The record's transaction id.
    pub(crate) transaction_id: String,
    /// Deliveries so far, this one included.
    pub(crate) delivery: i16,
    /// When the acquisition lock ends.
    pub(crate) expires_at: Ms,
}

/// A member's share session.
#[derive(Debug, Default)]
pub(crate) struct Session {
    /// The epoch the next request must carry.
    next_epoch: i32,
    /// The partitions fetched from.
    pub(crate) partitions: BTreeSet<SessionPartition>,
}

/// The epoch after `epoch`: 1 after the largest.
fn next(epoch: i32) -> i32 {
    if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

impl Member {
    /// Opens a new session (ShareFetch at epoch 0), replacing any other.
    pub(crate) fn open_session(&mut self) {
        self.session = Some(Session {
            next_epoch: 1,
            partitions: BTreeSet::new(),
        });
    }

    /// Takes `epoch` as the session's next: `SHARE_SESSION_NOT_FOUND`
    /// without a session, `INVALID_SHARE_SESSION_EPOCH` at another epoch.
    pub(crate) fn advance_session(&mut self, epoch: i32) -> Result<&mut Session, ResponseError> {
        let session = self
            .session
            .as_mut()
            .ok_or(ResponseError::ShareSessionNotFound)?;
        if epoch != session.next_epoch {
            return Err(ResponseError::InvalidShareSessionEpoch);
        }
        session.next_epoch = next(epoch);
        Ok(session)
    }

    /// `SHARE_SESSION_NOT_FOUND` unless the member has a session (a
    /// request at epoch -1 needs one).
    pub(crate) fn has_session(&self) -> Result<(), ResponseError> {
        self.session
            .as_ref()
            .map(|_| ())
            .ok_or(ResponseError::ShareSessionNotFound)
    }

    /// Closes the session (epoch -1) and takes what the member holds, for
    /// release.
    pub(crate) fn close_session(&mut self) -> Vec<(PartitionId, Held)> {
        self.session = None;
        self.take_held()
    }

    /// Forgets the records whose lock ended: the engine gives them out again.
    pub(crate) fn prune(&mut self, now: Ms) {
        for records in self.held.values_mut() {
            records.retain(|_, h| h.expires_at > now);
        }
        self.held.retain(|_, records| !records.is_empty());
    }

    /// The held records of `offsets` on a partition, with their types, or
    /// `INVALID_RECORD_STATE` when any of them is not held by this member
    /// (then nothing is acknowledged).
    pub(crate) fn acknowledgeable(
        &mut self,
        partition_id: PartitionId,
        offsets: &[(i64, i8)],
        now: Ms,
    ) -> Result<Vec<(Held, i8)>, ResponseError> {
        self.prune(now);
        let held = self.held.get(&partition_id);
        offsets
            .iter()
            .map(|&(offset, kind)| {
                held.and_then(|h| h.get(&offset))
                    .map(|h| (h.clone(), kind))
                    .ok_or(ResponseError::InvalidRecordState)
            })
            .collect()
    }

    /// Records the outcome of acknowledgements on a partition: `done`
    /// offsets are no longer held, nor is anything under a lease that ended
    /// (the engine hands those records out again).
    pub(crate) fn settle(&mut self, partition_id: PartitionId, done: &[i64], ended: &[String]) {
        if let Some(records) = self.held.get_mut(&partition_id) {
            for offset in done {
                records.remove(offset);
            }
            records.retain(|_, h| !ended.contains(&h.lease_id));
            if records.is_empty() {
                self.held.remove(&partition_id);
            }
        }
    }

    /// Records acquired records.
    pub(crate) fn hold(&mut self, partition_id: PartitionId, records: Vec<Held>) {
        let entry = self.held.entry(partition_id).or_default();
        for h in records {
            entry.insert(h.offset, h);
        }
    }
}
