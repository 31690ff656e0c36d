//! Who may act on a transaction: Kafka's coordinator checks, as pure
//! functions of the stored state.

use crate::producers::ProducerIdentity;
use crate::sql::transactions::Admission;
use crate::transactions::{TxnRow, TxnState};

/// Why a transaction request was refused; nothing was changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TxnError {
    /// The transactional id is unknown, or has another producer id.
    #[error("the producer id does not belong to the transactional id")]
    InvalidProducerIdMapping,
    /// The producer's epoch is not the transactional id's current one: a
    /// newer producer took it over.
    #[error("the producer was fenced by a newer one with the same transactional id")]
    ProducerFenced,
    /// The request does not fit the transaction's state.
    #[error("the transaction is {}: the request does not fit", .0.as_str())]
    InvalidState(TxnState),
    /// A transactional batch for a partition not added to the transaction.
    #[error("the partition was not added to the transaction")]
    PartitionNotAdded,
}

/// The transactional id's row, if `producer` holds it at its current epoch.
pub(crate) fn check(row: Option<TxnRow>, producer: ProducerIdentity) -> Result<TxnRow, TxnError> {
    let row = row.ok_or(TxnError::InvalidProducerIdMapping)?;
    if row.producer_id != producer.id {
        return Err(TxnError::InvalidProducerIdMapping);
    }
    if row.epoch != producer.epoch {
        return Err(TxnError::ProducerFenced);
    }
    Ok(row)
}

/// Whether a transactional batch of a producer at `epoch` may be appended
/// to a partition, given its transaction's [`Admission`] there.
pub(crate) fn admit(found: Option<&Admission>, epoch: i16) -> Result<(), TxnError> {
    let found = found.ok_or(TxnError::InvalidProducerIdMapping)?;
    if i32::from(epoch) != found.epoch {
        return Err(TxnError::ProducerFenced);
    }
    if found.state != TxnState::Ongoing.as_str() {
        let state = found.state.parse().unwrap_or(TxnState::Empty);
        return Err(TxnError::InvalidState(state));
    }
    if !found.added {
        return Err(TxnError::PartitionNotAdded);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(state: TxnState) -> TxnRow {
        TxnRow {
            producer_id: 7,
            epoch: 3,
            state,
            timeout_ms: 60_000,
            started_at: None,
        }
    }

    #[test]
    fn only_the_current_producer_and_epoch_pass() {
        let me = ProducerIdentity { id: 7, epoch: 3 };
        assert!(check(Some(row(TxnState::Empty)), me).is_ok());
        assert_eq!(check(None, me), Err(TxnError::InvalidProducerIdMapping));
        assert_eq!(
            check(
                Some(row(TxnState::Ongoing)),
                ProducerIdentity { id: 8, epoch: 3 }
            ),
            Err(TxnError::InvalidProducerIdMapping)
        );
        assert_eq!(
            check(
                Some(row(TxnState::Ongoing)),
                ProducerIdentity { id: 7, epoch: 2 }
            ),
            Err(TxnError::ProducerFenced)
        );
    }

    #[test]
    fn batches_need_an_ongoing_transaction_holding_the_partition() {
        let admission = |epoch, state: TxnState, added| Admission {
            epoch,
            state: state.as_str().to_owned(),
            added,
        };
        assert!(admit(Some(&admission(3, TxnState::Ongoing, true)), 3).is_ok());
        assert_eq!(admit(None, 3), Err(TxnError::InvalidProducerIdMapping));
        assert_eq!(
            admit(Some(&admission(4, TxnState::Ongoing, true)), 3),
            Err(TxnError::ProducerFenced)
        );
        assert_eq!(
            admit(Some(&admission(3, TxnState::CompleteCommit, true)), 3),
            Err(TxnError::InvalidState(TxnState::CompleteCommit))
        );
        assert_eq!(
            admit(Some(&admission(3, TxnState::Ongoing, false)), 3),
            Err(TxnError::PartitionNotAdded)
        );
    }
}
