//! ElectLeaders: every partition has one replica, its leader, so there is
//! never an election to hold; answered as Kafka answers for a partition
//! whose preferred replica already leads.

use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::{ElectLeadersRequest, ElectLeadersResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::{Access, AclOperation};

use crate::broker::Broker;
use crate::error::storage_code;

/// Kafka's election types: preferred replica (0) and unclean (1).
const ELECTION_TYPES: std::ops::RangeInclusive<i8> = 0..=1;

/// Answers `ELECTION_NOT_NEEDED` for each named partition that exists and
/// `UNKNOWN_TOPIC_OR_PARTITION` for the others. For all partitions (a
/// null list) Kafka leaves out those that need no election: every topic
/// is listed with no partition.
pub(super) async fn handle(
    broker: &Broker,
    version: i16,
    request: ElectLeadersRequest,
    access: &Access,
) -> ElectLeadersResponse {
    if !access.cluster(AclOperation::Alter) {
        return refused(
            version,
            request,
            ResponseError::ClusterAuthorizationFailed.code(),
            None,
        );
    }
    if !ELECTION_TYPES.contains(&request.election_type) {
        let why = format!("Unknown election type {}", request.election_type);
        return refused(
            version,
            request,
            ResponseError::InvalidRequest.code(),
            Some(why),
        );
    }
    let Some(topics) = request.topic_partitions else {
        let results = match broker.engine.queues().await {
            Ok(queues) => queues
                .into_iter()
                .map(|q| {
                    ReplicaElectionResult::default()
                        .with_topic(TopicName(StrBytes::from_string(q.name)))
                })
                .collect(),
            Err(e) => {
                let all = ElectLeadersRequest::default().with_topic_partitions(None);
                return refused(version, all, storage_code(&e), None);
            }
        };
        return ElectLeadersResponse::default().with_replica_election_results(results);
    };
    let mut results = Vec::with_capacity(topics.len());
    for topic in topics {
        let name = topic.topic.to_string();
        let queue = broker.engine.queue(&name).await;
        let partition_result = topic
            .partitions
            .iter()
            .map(|&index| {
                let answer = PartitionResult::default().with_partition_id(index);
                match &queue {
                    Ok(Some(q)) if q.partitions.iter().any(|p| p.kafka_index == index) => answer
                        .with_error_code(ResponseError::ElectionNotNeeded.code())
                        .with_error_message(Some(StrBytes::from_static_str(
                            "Leader election not needed for topic partition.",
                        ))),
                    Ok(found) => answer
                        .with_error_code(ResponseError::UnknownTopicOrPartition.code())
                        .with_error_message(Some(StrBytes::from_string(match found {
                            // Kafka's words for each case.
                            Some(_) => format!("No such partition as {name}-{index}"),
                            None => format!("No such topic as {name}"),
                        }))),
                    Err(e) => answer.with_error_code(storage_code(e)),
                }
            })
            .collect();
        results.push(
            ReplicaElectionResult::default()
                .with_topic(topic.topic)
                .with_partition_result(partition_result),
        );
    }
    ElectLeadersResponse::default().with_replica_election_results(results)
}

/// Kafka's error answer to the whole request: `error` on every named
/// partition, and at the top from v1 (v0 has no such field).
fn refused(
    version: i16,
    request: ElectLeadersRequest,
    error: i16,
    message: Option<String>,
) -> ElectLeadersResponse {
    let results = request
        .topic_partitions
        .unwrap_or_default()
        .into_iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|&index| {
                    PartitionResult::default()
                        .with_partition_id(index)
                        .with_error_code(error)
                        .with_error_message(message.clone().map(StrBytes::from_string))
                })
                .collect();
            ReplicaElectionResult::default()
                .with_topic(t.topic)
                .with_partition_result(partitions)
        })
        .collect();
    let mut answer = ElectLeadersResponse::default().with_replica_election_results(results);
    if version >= 1 {
        answer.error_code = error;
    }
    answer
}
