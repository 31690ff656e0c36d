//! AlterShareGroupOffsets (KIP-932): sets a share group's start offset on
//! partitions, where its members (and its HTTP consumers) acquire from
//! next. As Kafka: READ on the group and on each topic, refused while the
//! group has members (`NON_EMPTY_GROUP`), a new group id creates an empty
//! share group; an unknown topic or partition is refused per partition
//! and the others are set.

use kafka_protocol::messages::alter_share_group_offsets_response::{
    AlterShareGroupOffsetsResponsePartition, AlterShareGroupOffsetsResponseTopic,
};
use kafka_protocol::messages::{AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse};
use kafka_protocol::ResponseError;
use storage::offsets::CommittedOffset;
use storage::{Access, AclOperation};
use uuid::Uuid;

use crate::broker::Broker;
use crate::error::storage_error;
use crate::share::{offsets, Refusal};

/// Sets the start offsets; errors are for the whole request or per partition.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: AlterShareGroupOffsetsRequest,
    access: &Access,
) -> AlterShareGroupOffsetsResponse {
    crate::share::answer(alter(broker, request, access).await)
}

async fn alter(
    broker: &Broker,
    request: AlterShareGroupOffsetsRequest,
    access: &Access,
) -> Result<AlterShareGroupOffsetsResponse, Refusal> {
    let group = request.group_id.to_string();
    if !access.group(AclOperation::Read, &group) {
        return Err((
            ResponseError::GroupAuthorizationFailed,
            format!("READ on group {group} is not allowed"),
        ));
    }
    if let Some(refusal) = offsets::group_error(broker, &group).await {
        return Err(refusal);
    }
    offsets::refuse_if_busy(broker, &group)?;
    let mut commits = Vec::new();
    let mut responses = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let name = topic.topic_name.to_string();
        let info = offsets::topic(broker, access, AclOperation::Read, &name).await;
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for p in &topic.partitions {
            let code = match &info {
                Err(code) => *code,
                Ok(_) if p.start_offset < 0 => ResponseError::InvalidRequest.code(),
                Ok(info) => match info
                    .partitions
                    .iter()
                    .find(|q| q.kafka_index == p.partition_index)
                {
                    Some(q) => {
                        let at = CommittedOffset {
                            offset: p.start_offset,
                            metadata: None,
                            leader_epoch: None,
                        };
                        commits.push((q.id, at));
                        0
                    }
                    None => ResponseError::UnknownTopicOrPartition.code(),
                },
            };
            partitions.push(
                AlterShareGroupOffsetsResponsePartition::default()
                    .with_partition_index(p.partition_index)
                    .with_error_code(code),
            );
        }
        responses.push(
            AlterShareGroupOffsetsResponseTopic::default()
                .with_topic_name(topic.topic_name)
                .with_topic_id(info.map_or(Uuid::nil(), |i| i.topic_id))
                .with_partitions(partitions),
        );
    }
    if !commits.is_empty() {
        broker
            .engine
            .commit_offsets(&group, &commits)
            .await
            .map_err(|e| (storage_error(&e), e.to_string()))?;
        broker.groups.share.adopt(&group);
    }
    Ok(AlterShareGroupOffsetsResponse::default().with_responses(responses))
}
