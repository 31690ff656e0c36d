//! OffsetForLeaderEpoch: every partition has had one leader epoch, 0, so
//! its end offset is the high watermark.

use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};
use kafka_protocol::ResponseError;
use storage::{Access, AclOperation};

use crate::broker::Broker;
use crate::error::storage_code;

/// Answers the end offset of epoch 0 for each partition.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: OffsetForLeaderEpochRequest,
    access: &Access,
) -> OffsetForLeaderEpochResponse {
    let mut topics = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let name = topic.topic.to_string();
        let denied = !access.topic(AclOperation::Describe, &name);
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for p in topic.partitions {
            let mut answer = EpochEndOffset::default().with_partition(p.partition);
            if denied {
                answer.error_code = ResponseError::TopicAuthorizationFailed.code();
                partitions.push(answer);
                continue;
            }
            match broker.partition_id(&name, p.partition, false).await {
                Ok(Some(id)) => match broker.engine.log_bounds(id).await {
                    Ok(bounds) => {
                        answer.leader_epoch = 0;
                        answer.end_offset = bounds.next_offset;
                    }
                    Err(e) => answer.error_code = storage_code(&e),
                },
                Ok(None) => answer.error_code = ResponseError::UnknownTopicOrPartition.code(),
                Err(e) => answer.error_code = storage_code(&e),
            }
            partitions.push(answer);
        }
        topics.push(
            OffsetForLeaderTopicResult::default()
                .with_topic(topic.topic)
                .with_partitions(partitions),
        );
    }
    OffsetForLeaderEpochResponse::default().with_topics(topics)
}
