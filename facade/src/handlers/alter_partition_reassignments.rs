//! AlterPartitionReassignments: a partition's one replica is its advertised
//! leader, and the data lives in the database rather than on a broker, so
//! nothing can be reassigned. A reassignment to the current replica set is
//! accepted as Kafka accepts it (nothing to do); cancelling finds none in
//! progress; any other target is refused.

use kafka_protocol::messages::alter_partition_reassignments_request::ReassignablePartition;
use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, BrokerId,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::{Access, AclOperation, BrokerInfo, QueueInfo, StorageError};

use crate::broker::Broker;
use crate::error::storage_code;

/// Answers each partition of the request.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: AlterPartitionReassignmentsRequest,
    access: &Access,
) -> AlterPartitionReassignmentsResponse {
    let allow_change = request.allow_replication_factor_change;
    if !access.cluster(AclOperation::Alter) {
        return refused(
            &request,
            ResponseError::ClusterAuthorizationFailed.code(),
            None,
        )
        .with_allow_replication_factor_change(allow_change);
    }
    let brokers = match broker
        .live_brokers(&broker.config.primary_listener().name)
        .await
    {
        Ok(brokers) => brokers,
        Err(e) => {
            return refused(&request, storage_code(&e), Some(e.to_string()))
                .with_allow_replication_factor_change(allow_change);
        }
    };
    let mut responses = Vec::with_capacity(request.topics.len());
    for topic in &request.topics {
        let name = topic.name.to_string();
        let queue = broker.engine.queue(&name).await;
        let partitions = topic
            .partitions
            .iter()
            .map(|target| {
                let (error, message) = match answer(&queue, &brokers, &name, target) {
                    Ok(()) => (0, None),
                    Err((error, message)) => (error, Some(StrBytes::from_string(message))),
                };
                ReassignablePartitionResponse::default()
                    .with_partition_index(target.partition_index)
                    .with_error_code(error)
                    .with_error_message(message)
            })
            .collect();
        responses.push(
            ReassignableTopicResponse::default()
                .with_name(topic.name.clone())
                .with_partitions(partitions),
        );
    }
    AlterPartitionReassignmentsResponse::default()
        .with_allow_replication_factor_change(allow_change)
        .with_responses(responses)
}

/// One partition's answer: nothing to do, or Kafka's error code and words.
fn answer(
    queue: &Result<Option<QueueInfo>, StorageError>,
    brokers: &[BrokerInfo],
    name: &str,
    target: &ReassignablePartition,
) -> Result<(), (i16, String)> {
    let index = target.partition_index;
    let unknown = ResponseError::UnknownTopicOrPartition.code();
    let queue = match queue {
        Ok(Some(q)) => q,
        Ok(None) => return Err((unknown, format!("Unable to find a topic named {name}."))),
        Err(e) => return Err((storage_code(e), e.to_string())),
    };
    if !queue.partitions.iter().any(|p| p.kafka_index == index) {
        return Err((unknown, format!("Unable to find partition {name}:{index}.")));
    }
    let Some(replicas) = &target.replicas else {
        return Err((
            ResponseError::NoReassignmentInProgress.code(),
            "No partition reassignment is in progress.".to_owned(),
        ));
    };
    let invalid = ResponseError::InvalidReplicaAssignment.code();
    if replicas.is_empty() {
        return Err((
            invalid,
            "The manual partition assignment includes an empty replica list.".to_owned(),
        ));
    }
    let mut sorted: Vec<i32> = replicas.iter().map(|b| b.0).collect();
    sorted.sort_unstable();
    for (i, &id) in sorted.iter().enumerate() {
        if !brokers.iter().any(|b| b.id == id) {
            return Err((
                invalid,
                format!(
                    "The manual partition assignment includes broker {id}, but no such broker is registered."
                ),
            ));
        }
        if i > 0 && sorted[i - 1] == id {
            return Err((
                invalid,
                format!("The manual partition assignment includes the broker {id} more than once."),
            ));
        }
    }
    let leader = Broker::leader(brokers, name, index);
    if replicas.as_slice() == [BrokerId(leader)] {
        return Ok(());
    }
    Err((
        invalid,
        format!(
            "Partition {name}:{index} has one replica, on broker {leader}: the database holds \
             its log and the brokers place leaders themselves, so it cannot be reassigned."
        ),
    ))
}

/// Kafka's error answer to the whole request: `error` at the top and on
/// every partition of the request.
fn refused(
    request: &AlterPartitionReassignmentsRequest,
    error: i16,
    message: Option<String>,
) -> AlterPartitionReassignmentsResponse {
    let responses = request
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    ReassignablePartitionResponse::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(error)
                        .with_error_message(message.clone().map(StrBytes::from_string))
                })
                .collect();
            ReassignableTopicResponse::default()
                .with_name(t.name.clone())
                .with_partitions(partitions)
        })
        .collect();
    AlterPartitionReassignmentsResponse::default()
        .with_error_code(error)
        .with_error_message(message.map(StrBytes::from_string))
        .with_responses(responses)
}
