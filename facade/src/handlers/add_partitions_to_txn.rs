//! AddPartitionsToTxn: a transactional producer names the partitions it
//! will write to before it writes (v0-3, one transaction), or a broker asks
//! for several transactions at once (v4+, the batched form of KIP-890,
//! which may only verify). The coordinator's state is in the database, so
//! any broker answers for any transactional id.

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, TransactionalId,
};
use kafka_protocol::ResponseError;
use storage::producers::ProducerIdentity;
use storage::{Access, AclOperation, ResourceType};

use crate::broker::Broker;
use crate::error::{storage_code, txn_code};

/// PRODUCER_FENCED is answered from this version on (KIP-588).
const FENCED_SINCE: i16 = 2;

/// Adds (or verifies) each transaction's partitions; errors per partition.
pub(super) async fn handle(
    broker: &Broker,
    version: i16,
    request: AddPartitionsToTxnRequest,
    access: &Access,
) -> AddPartitionsToTxnResponse {
    if version <= 3 {
        let one = Transaction {
            id: &request.v3_and_below_transactional_id,
            producer: ProducerIdentity {
                id: request.v3_and_below_producer_id.0,
                epoch: request.v3_and_below_producer_epoch,
            },
            verify_only: false,
            topics: &request.v3_and_below_topics,
        };
        let results = add(broker, version, one, access).await;
        return AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(results);
    }
    // The batched form is for brokers, as Kafka: CLUSTER_ACTION.
    if !access.cluster(AclOperation::ClusterAction) {
        return AddPartitionsToTxnResponse::default()
            .with_error_code(ResponseError::ClusterAuthorizationFailed.code());
    }
    let mut results = Vec::with_capacity(request.transactions.len());
    for t in &request.transactions {
        let one = Transaction {
            id: &t.transactional_id,
            producer: ProducerIdentity {
                id: t.producer_id.0,
                epoch: t.producer_epoch,
            },
            verify_only: t.verify_only,
            topics: &t.topics,
        };
        let topic_results = add(broker, version, one, access).await;
        results.push(
            AddPartitionsToTxnResult::default()
                .with_transactional_id(t.transactional_id.clone())
                .with_topic_results(topic_results),
        );
    }
    AddPartitionsToTxnResponse::default().with_results_by_transaction(results)
}

/// One transaction of the request.
struct Transaction<'a> {
    id: &'a TransactionalId,
    producer: ProducerIdentity,
    verify_only: bool,
    topics: &'a [AddPartitionsToTxnTopic],
}

/// Adds one transaction's partitions: every partition answers the same
/// error, except that when some are refused (authorization, unknown) the
/// others answer OPERATION_NOT_ATTEMPTED and nothing is added, as Kafka.
async fn add(
    broker: &Broker,
    version: i16,
    txn: Transaction<'_>,
    access: &Access,
) -> Vec<AddPartitionsToTxnTopicResult> {
    let tid = txn.id.to_string();
    let mut codes: Vec<Vec<i16>> = Vec::with_capacity(txn.topics.len());
    let mut ids = Vec::new();
    let mut refused = false;
    let id_allowed = access.allows(AclOperation::Write, ResourceType::TransactionalId, &tid);
    for topic in txn.topics {
        let name = topic.name.to_string();
        let mut topic_codes = Vec::with_capacity(topic.partitions.len());
        for &index in &topic.partitions {
            let code = if !id_allowed {
                ResponseError::TransactionalIdAuthorizationFailed.code()
            } else if !access.topic(AclOperation::Write, &name) {
                ResponseError::TopicAuthorizationFailed.code()
            } else {
                match broker.partition_id(&name, index, false).await {
                    Ok(Some(id)) => {
                        ids.push(id);
                        0
                    }
                    Ok(None) => ResponseError::UnknownTopicOrPartition.code(),
                    Err(e) => storage_code(&e),
                }
            };
            refused |= code != 0;
            topic_codes.push(code);
        }
        codes.push(topic_codes);
    }
    if refused {
        let skipped = ResponseError::OperationNotAttempted.code();
        for code in codes.iter_mut().flatten() {
            if *code == 0 {
                *code = skipped;
            }
        }
    } else {
        let answer = broker
            .engine
            .add_partitions_to_txn(&tid, txn.producer, &ids, txn.verify_only)
            .await;
        let mut held = ids.iter().map(|_| true).collect::<Vec<_>>().into_iter();
        let error = match answer {
            Ok(flags) => {
                held = flags.into_iter();
                0
            }
            Err(e) => txn_code(&e, version, FENCED_SINCE),
        };
        for code in codes.iter_mut().flatten() {
            let in_txn = held.next().unwrap_or(false);
            *code = if error != 0 {
                error
            } else if in_txn {
                0
            } else {
                ResponseError::InvalidTxnState.code()
            };
        }
    }
    txn.topics
        .iter()
        .zip(codes)
        .map(|(topic, topic_codes)| {
            AddPartitionsToTxnTopicResult::default()
                .with_name(topic.name.clone())
                .with_results_by_partition(
                    topic
                        .partitions
                        .iter()
                        .zip(topic_codes)
                        .map(|(&index, code)| {
                            AddPartitionsToTxnPartitionResult::default()
                                .with_partition_index(index)
                                .with_partition_error_code(code)
                        })
                        .collect(),
                )
        })
        .collect()
}
