//! EndTxn: commits or aborts the producer's transaction. The markers go to
//! every partition of the transaction, its offsets are published or
//! dropped, and its state moves on, in one database transaction.

use kafka_protocol::messages::{EndTxnRequest, EndTxnResponse, ProducerId};
use kafka_protocol::ResponseError;
use storage::producers::ProducerIdentity;
use storage::{Access, AclOperation, ResourceType};

use crate::broker::Broker;
use crate::error::txn_code;

/// Ends the transaction; a repeat of the same end answers success.
pub(super) async fn handle(
    broker: &Broker,
    version: i16,
    request: EndTxnRequest,
    access: &Access,
) -> EndTxnResponse {
    let tid = request.transactional_id.to_string();
    // v5+ (KIP-890) answers the producer id and epoch; no epoch is bumped
    // here, so they are the ones the request carried.
    let answer = EndTxnResponse::default()
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    if !access.allows(AclOperation::Write, ResourceType::TransactionalId, &tid) {
        return answer.with_error_code(ResponseError::TransactionalIdAuthorizationFailed.code());
    }
    let producer = ProducerIdentity {
        id: request.producer_id.0,
        epoch: request.producer_epoch,
    };
    match broker
        .engine
        .end_txn(&tid, producer, request.committed)
        .await
    {
        Ok(()) => answer
            .with_producer_id(request.producer_id)
            .with_producer_epoch(request.producer_epoch),
        // PRODUCER_FENCED from v2 (KIP-588).
        Err(e) => answer.with_error_code(txn_code(&e, version, 2)),
    }
}
