//! DescribeProducers: the idempotent producers with state on each partition.

use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::{DescribeProducersRequest, DescribeProducersResponse, ProducerId};
use kafka_protocol::ResponseError;
use storage::{Access, AclOperation};

use crate::broker::Broker;
use crate::error::storage_code;

/// Lists each partition's producers: id, epoch, last sequence and time.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: DescribeProducersRequest,
    access: &Access,
) -> DescribeProducersResponse {
    let mut topics = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let name = topic.name.to_string();
        let denied = !access.topic(AclOperation::Read, &name);
        let mut partitions = Vec::with_capacity(topic.partition_indexes.len());
        for index in topic.partition_indexes {
            let mut answer = PartitionResponse::default().with_partition_index(index);
            if denied {
                answer.error_code = ResponseError::TopicAuthorizationFailed.code();
                partitions.push(answer);
                continue;
            }
            let producers = match broker.partition_id(&name, index, false).await {
                Ok(Some(id)) => broker.engine.producers(id).await,
                Ok(None) => {
                    answer.error_code = ResponseError::UnknownTopicOrPartition.code();
                    partitions.push(answer);
                    continue;
                }
                Err(e) => Err(e),
            };
            match producers {
                Ok(list) => {
                    answer.active_producers = list
                        .into_iter()
                        .map(|p| {
                            ProducerState::default()
                                .with_producer_id(ProducerId(p.producer_id))
                                .with_producer_epoch(i32::from(p.epoch))
                                .with_last_sequence(p.last_sequence)
                                .with_last_timestamp(p.last_timestamp_ms)
                        })
                        .collect();
                }
                Err(e) => answer.error_code = storage_code(&e),
            }
            partitions.push(answer);
        }
        topics.push(
            TopicResponse::default()
                .with_name(topic.name)
                .with_partitions(partitions),
        );
    }
    DescribeProducersResponse::default().with_topics(topics)
}
