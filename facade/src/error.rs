//! Errors of the facade and their Kafka error codes.

use kafka_protocol::ResponseError;
use storage::producers::ProducerError;
use storage::transactions::TxnError;
use storage::StorageError;

/// The Kafka error code for a storage failure, as a client should see it.
pub(crate) fn storage_code(err: &StorageError) -> i16 {
    storage_error(err).code()
}

/// The Kafka error of a storage failure, as a client should see it.
pub(crate) fn storage_error(err: &StorageError) -> ResponseError {
    match err {
        StorageError::QueueNotFound(_) | StorageError::PartitionNotFound(_) => {
            ResponseError::UnknownTopicOrPartition
        }
        StorageError::InvalidInput(_)
        | StorageError::NameTooLong { .. }
        | StorageError::KvBadRequest { .. }
        | StorageError::KvValueTooLarge { .. } => ResponseError::InvalidRequest,
        StorageError::OffsetOutOfRange { .. } => ResponseError::OffsetOutOfRange,
        StorageError::CommitFailed | StorageError::ShuttingDown => ResponseError::RequestTimedOut,
        // Not retriable: the topic takes local produces only once fenced.
        StorageError::Mirrored(_) => ResponseError::PolicyViolation,
        StorageError::Reserved(_) => ResponseError::InvalidTopicException,
        StorageError::Producer(ProducerError::OutOfOrderSequence { .. }) => {
            ResponseError::OutOfOrderSequenceNumber
        }
        StorageError::Producer(ProducerError::StaleEpoch { .. }) => {
            ResponseError::InvalidProducerEpoch
        }
        StorageError::Producer(ProducerError::Fenced) => ResponseError::ProducerFenced,
        StorageError::Transaction(TxnError::InvalidProducerIdMapping) => {
            ResponseError::InvalidProducerIdMapping
        }
        StorageError::Transaction(TxnError::ProducerFenced) => ResponseError::ProducerFenced,
        StorageError::Transaction(TxnError::InvalidState(_) | TxnError::PartitionNotAdded) => {
            ResponseError::InvalidTxnState
        }
        StorageError::Sealed(_)
        | StorageError::Corrupt(_)
        | StorageError::Database(_)
        | StorageError::Migrate(_) => {
            tracing::error!(error = %err, "kafka request failed in storage");
            ResponseError::KafkaStorageError
        }
    }
}

/// [`storage_code`] for a request of an API that learnt `PRODUCER_FENCED`
/// only at version `fenced_since` (KIP-588): older clients get
/// `INVALID_PRODUCER_EPOCH`, as Kafka answers them.
pub(crate) fn txn_code(err: &StorageError, version: i16, fenced_since: i16) -> i16 {
    let code = storage_code(err);
    if code == ResponseError::ProducerFenced.code() && version < fenced_since {
        ResponseError::InvalidProducerEpoch.code()
    } else {
        code
    }
}

/// The code of an optional error: 0 (`NONE`) when there is none.
pub(crate) fn code(error: Option<ResponseError>) -> i16 {
    error.map_or(0, |e| e.code())
}
