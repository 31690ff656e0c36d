//! Errors of the facade and their Kafka error codes.

use kafka_protocol::ResponseError;
use storage::producers::ProducerError;
use storage::StorageError;

/// The Kafka error code for a storage failure, as a client should see it.
pub(crate) fn storage_code(err: &StorageError) -> i16 {
    let e = match err {
        StorageError::QueueNotFound(_) | StorageError::PartitionNotFound(_) => {
            ResponseError::UnknownTopicOrPartition
        }
        StorageError::InvalidInput(_)
        | StorageError::NameTooLong { .. }
        | StorageError::KvBadRequest { .. }
        | StorageError::KvValueTooLarge { .. } => ResponseError::InvalidRequest,
        StorageError::OffsetOutOfRange { .. } => ResponseError::OffsetOutOfRange,
        StorageError::CommitFailed | StorageError::ShuttingDown => ResponseError::RequestTimedOut,
        StorageError::Producer(ProducerError::OutOfOrderSequence { .. }) => {
            ResponseError::OutOfOrderSequenceNumber
        }
        StorageError::Producer(ProducerError::StaleEpoch { .. }) => {
            ResponseError::InvalidProducerEpoch
        }
        StorageError::Producer(ProducerError::Fenced) => ResponseError::ProducerFenced,
        StorageError::Sealed(_)
        | StorageError::Corrupt(_)
        | StorageError::Database(_)
        | StorageError::Migrate(_) => {
            tracing::error!(error = %err, "kafka request failed in storage");
            ResponseError::KafkaStorageError
        }
    };
    e.code()
}

/// The code of an optional error: 0 (`NONE`) when there is none.
pub(crate) fn code(error: Option<ResponseError>) -> i16 {
    error.map_or(0, |e| e.code())
}
