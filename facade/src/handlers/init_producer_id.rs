//! InitProducerId: producer ids unique across every broker on the database;
//! a transactional id keeps its id and gets a new epoch, fencing the old
//! one, and the transaction it left ongoing is aborted first (as Kafka's
//! coordinator does). Its `transaction_timeout_ms` must be within
//! `--transaction-max-timeout-ms`.

use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};
use kafka_protocol::ResponseError;
use storage::producers::ProducerIdentity;
use storage::{Access, AclOperation, ResourceType};

use crate::broker::Broker;
use crate::error::txn_code;

/// Hands out an id and epoch (or bumps the epoch the producer names, v3+).
pub(super) async fn handle(
    broker: &Broker,
    version: i16,
    request: InitProducerIdRequest,
    access: &Access,
) -> InitProducerIdResponse {
    let transactional_id = request.transactional_id.as_ref().map(|t| t.to_string());
    let refused = |error: ResponseError| {
        InitProducerIdResponse::default()
            .with_error_code(error.code())
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1)
    };
    match &transactional_id {
        Some(id) if !access.allows(AclOperation::Write, ResourceType::TransactionalId, id) => {
            return refused(ResponseError::TransactionalIdAuthorizationFailed);
        }
        // Idempotence without a transaction, as Kafka 3: IDEMPOTENT_WRITE
        // on the cluster, or WRITE on some topic.
        None if !access.cluster(AclOperation::IdempotentWrite)
            && !access.allows_any(AclOperation::Write, ResourceType::Topic) =>
        {
            return refused(ResponseError::ClusterAuthorizationFailed);
        }
        _ => {}
    }
    let current = (version >= 3 && request.producer_id.0 >= 0).then_some(ProducerIdentity {
        id: request.producer_id.0,
        epoch: request.producer_epoch,
    });
    let answer = match &transactional_id {
        Some(id) => {
            let max = broker.config.transaction_max_timeout_ms;
            if request.transaction_timeout_ms <= 0 || request.transaction_timeout_ms > max {
                return refused(ResponseError::InvalidTransactionTimeout);
            }
            broker
                .engine
                .init_transactional_producer(id, request.transaction_timeout_ms, current)
                .await
        }
        None => broker.engine.init_producer_id(None, current).await,
    };
    match answer {
        Ok(p) => InitProducerIdResponse::default()
            .with_producer_id(ProducerId(p.id))
            .with_producer_epoch(p.epoch),
        // PRODUCER_FENCED from v4 (KIP-588).
        Err(e) => InitProducerIdResponse::default()
            .with_error_code(txn_code(&e, version, 4))
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1),
    }
}
