//! AddOffsetsToTxn: the transaction will commit offsets of a consumer group
//! (TxnOffsetCommit follows), which become visible only when it commits.

use kafka_protocol::messages::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse};
use kafka_protocol::ResponseError;
use storage::producers::ProducerIdentity;
use storage::{Access, AclOperation, ResourceType, StorageError};

use crate::broker::Broker;
use crate::error::txn_code;

/// Adds the group to the producer's transaction.
pub(super) async fn handle(
    broker: &Broker,
    version: i16,
    request: AddOffsetsToTxnRequest,
    access: &Access,
) -> AddOffsetsToTxnResponse {
    let tid = request.transactional_id.to_string();
    let group = request.group_id.to_string();
    let refused = |e: ResponseError| AddOffsetsToTxnResponse::default().with_error_code(e.code());
    if !access.allows(AclOperation::Write, ResourceType::TransactionalId, &tid) {
        return refused(ResponseError::TransactionalIdAuthorizationFailed);
    }
    if !access.group(AclOperation::Read, &group) {
        return refused(ResponseError::GroupAuthorizationFailed);
    }
    let producer = ProducerIdentity {
        id: request.producer_id.0,
        epoch: request.producer_epoch,
    };
    match broker
        .engine
        .add_offsets_to_txn(&tid, producer, &group)
        .await
    {
        Ok(()) => AddOffsetsToTxnResponse::default(),
        Err(StorageError::InvalidInput(_) | StorageError::NameTooLong { .. }) => {
            refused(ResponseError::InvalidGroupId)
        }
        // PRODUCER_FENCED from v2 (KIP-588).
        Err(e) => AddOffsetsToTxnResponse::default().with_error_code(txn_code(&e, version, 2)),
    }
}
