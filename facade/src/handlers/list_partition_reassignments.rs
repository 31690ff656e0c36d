//! ListPartitionReassignments: none is ever in progress (see
//! `alter_partition_reassignments`), so the list is empty, as Kafka's is
//! when nothing is being reassigned.

use kafka_protocol::messages::list_partition_reassignments_response::{
    OngoingPartitionReassignment, OngoingTopicReassignment,
};
use kafka_protocol::messages::{
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
};
use kafka_protocol::ResponseError;
use storage::{Access, AclOperation};

use crate::broker::Broker;

/// Answers an empty list, or `CLUSTER_AUTHORIZATION_FAILED` without
/// DESCRIBE on the cluster (naming each requested partition, as Kafka's
/// error answer does).
pub(super) async fn handle(
    _broker: &Broker,
    _version: i16,
    request: ListPartitionReassignmentsRequest,
    access: &Access,
) -> ListPartitionReassignmentsResponse {
    if access.cluster(AclOperation::Describe) {
        return ListPartitionReassignmentsResponse::default();
    }
    let topics = request
        .topics
        .unwrap_or_default()
        .into_iter()
        .map(|t| {
            OngoingTopicReassignment::default()
                .with_name(t.name)
                .with_partitions(
                    t.partition_indexes
                        .into_iter()
                        .map(|i| OngoingPartitionReassignment::default().with_partition_index(i))
                        .collect(),
                )
        })
        .collect();
    ListPartitionReassignmentsResponse::default()
        .with_error_code(ResponseError::ClusterAuthorizationFailed.code())
        .with_topics(topics)
}
