//! OffsetCommit: a group's committed offsets, stored where native consumer
//! groups keep their positions. A member commits with its generation; a
//! consumer that assigns itself partitions (or an admin resetting offsets)
//! commits with generation -1, accepted while the group has no members.

use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse};
use kafka_protocol::ResponseError;
use storage::offsets::CommittedOffset;
use storage::offsets_log::MAX_METADATA_BYTES;
use storage::{Access, AclOperation, PartitionId};

use crate::broker::Broker;
use crate::error::storage_code;

/// The partition a commit to partition `index` of topic `name` goes to, or
/// the error code that partition answers (TxnOffsetCommit too).
pub(super) async fn target(
    broker: &Broker,
    access: &Access,
    name: &str,
    index: i32,
) -> Result<PartitionId, i16> {
    if !access.topic(AclOperation::Read, name) {
        return Err(ResponseError::TopicAuthorizationFailed.code());
    }
    match broker.partition_id(name, index, false).await {
        Ok(Some(id)) => Ok(id),
        Ok(None) => Err(ResponseError::UnknownTopicOrPartition.code()),
        Err(e) => Err(storage_code(&e)),
    }
}

/// Stores each partition's committed offset; errors are per partition.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: OffsetCommitRequest,
    access: &Access,
) -> OffsetCommitResponse {
    let group = request.group_id.to_string();
    let refusal = match broker.member_error(access, &group).await {
        Some(error) => Some(error),
        None => broker.groups.commit_check(
            &group,
            request.generation_id_or_member_epoch,
            &request.member_id,
            request.group_instance_id.as_deref(),
        ),
    };
    if let Some(error) = refusal {
        tracing::debug!(
            group,
            generation = request.generation_id_or_member_epoch,
            member = %request.member_id,
            ?error,
            "kafka: commit refused"
        );
        return refused(&request, error.code());
    }
    let mut topics = Vec::with_capacity(request.topics.len());
    let mut commits = Vec::new();
    let mut slots = Vec::new();
    for topic in &request.topics {
        let name = topic.name.to_string();
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for p in &topic.partitions {
            let mut answer =
                OffsetCommitResponsePartition::default().with_partition_index(p.partition_index);
            let offset = CommittedOffset {
                offset: p.committed_offset,
                metadata: p.committed_metadata.as_ref().map(|m| m.to_string()),
                leader_epoch: (p.committed_leader_epoch >= 0).then_some(p.committed_leader_epoch),
            };
            let too_large = offset
                .metadata
                .as_ref()
                .is_some_and(|m| m.len() > MAX_METADATA_BYTES);
            match target(broker, access, &name, p.partition_index).await {
                // Kafka's `offset.metadata.max.bytes`: the log holds it.
                Ok(_) if too_large => {
                    answer.error_code = ResponseError::OffsetMetadataTooLarge.code()
                }
                Ok(id) => {
                    commits.push((id, offset));
                    slots.push((topics.len(), partitions.len()));
                }
                Err(code) => answer.error_code = code,
            }
            partitions.push(answer);
        }
        topics.push(
            OffsetCommitResponseTopic::default()
                .with_name(topic.name.clone())
                .with_partitions(partitions),
        );
    }
    if let Err(e) = broker.engine.commit_offsets(&group, &commits).await {
        let code = match e {
            storage::StorageError::InvalidInput(_) | storage::StorageError::NameTooLong { .. } => {
                ResponseError::InvalidGroupId.code()
            }
            other => storage_code(&other),
        };
        for (t, p) in slots {
            topics[t].partitions[p].error_code = code;
        }
    }
    OffsetCommitResponse::default().with_topics(topics)
}

/// The same error for every partition of the request.
fn refused(request: &OffsetCommitRequest, code: i16) -> OffsetCommitResponse {
    let topics = request
        .topics
        .iter()
        .map(|t| {
            OffsetCommitResponseTopic::default()
                .with_name(t.name.clone())
                .with_partitions(
                    t.partitions
                        .iter()
                        .map(|p| {
                            OffsetCommitResponsePartition::default()
                                .with_partition_index(p.partition_index)
                                .with_error_code(code)
                        })
                        .collect(),
                )
        })
        .collect();
    OffsetCommitResponse::default().with_topics(topics)
}
