//! DescribeTransactions: the coordinator's state of each transactional id
//! asked for, read from the database (any broker answers for any id).

use kafka_protocol::messages::describe_transactions_response::{TopicData, TransactionState};
use kafka_protocol::messages::{
    DescribeTransactionsRequest, DescribeTransactionsResponse, ProducerId, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::{Access, AclOperation, ResourceType};

use crate::broker::Broker;
use crate::error::storage_code;

/// Describes each id; an unknown one answers TRANSACTIONAL_ID_NOT_FOUND.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: DescribeTransactionsRequest,
    access: &Access,
) -> DescribeTransactionsResponse {
    let mut states = Vec::with_capacity(request.transactional_ids.len());
    for id in request.transactional_ids {
        let tid = id.to_string();
        let answer = TransactionState::default()
            .with_transactional_id(id)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1)
            .with_transaction_start_time_ms(-1);
        if !access.allows(AclOperation::Describe, ResourceType::TransactionalId, &tid) {
            states.push(
                answer.with_error_code(ResponseError::TransactionalIdAuthorizationFailed.code()),
            );
            continue;
        }
        let row = match broker.engine.kafka_transaction(&tid).await {
            Ok(Some(row)) => row,
            Ok(None) => {
                states.push(answer.with_error_code(ResponseError::TransactionalIdNotFound.code()));
                continue;
            }
            Err(e) => {
                states.push(answer.with_error_code(storage_code(&e)));
                continue;
            }
        };
        let partitions = match broker.engine.kafka_transaction_partitions(&tid).await {
            Ok(p) => p,
            Err(e) => {
                states.push(answer.with_error_code(storage_code(&e)));
                continue;
            }
        };
        let mut topics: Vec<TopicData> = Vec::new();
        for (topic, index) in partitions {
            match topics.last_mut() {
                Some(t) if t.topic.as_str() == topic => t.partitions.push(index),
                _ => topics.push(
                    TopicData::default()
                        .with_topic(TopicName(StrBytes::from_string(topic)))
                        .with_partitions(vec![index]),
                ),
            }
        }
        states.push(
            answer
                .with_transaction_state(StrBytes::from_static_str(row.state.as_str()))
                .with_transaction_timeout_ms(i32::try_from(row.timeout_ms).unwrap_or(i32::MAX))
                .with_transaction_start_time_ms(row.started_at.unwrap_or(-1))
                .with_producer_id(ProducerId(row.producer_id))
                .with_producer_epoch(row.epoch)
                .with_topics(topics),
        );
    }
    DescribeTransactionsResponse::default().with_transaction_states(states)
}
