//! ListOffsets: earliest, latest, by timestamp, max timestamp.

use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};
use kafka_protocol::ResponseError;
use storage::{Access, AclOperation};
use storage::{PartitionId, StorageError, TimestampedOffset};

use crate::broker::Broker;
use crate::error::storage_code;

const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
const EARLIEST_LOCAL: i64 = -4;
const LATEST_TIERED: i64 = -5;

/// Answers each partition's offset for its timestamp query.
pub(super) async fn handle(
    broker: &Broker,
    version: i16,
    request: ListOffsetsRequest,
    access: &Access,
) -> ListOffsetsResponse {
    let mut topics = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let name = topic.name.to_string();
        let denied = !access.topic(AclOperation::Describe, &name);
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for p in topic.partitions {
            let mut answer =
                ListOffsetsPartitionResponse::default().with_partition_index(p.partition_index);
            if denied {
                answer.error_code = ResponseError::TopicAuthorizationFailed.code();
                partitions.push(answer);
                continue;
            }
            let found = match broker.partition_id(&name, p.partition_index, false).await {
                Ok(Some(id)) => lookup(broker, id, p.timestamp, request.isolation_level == 1).await,
                Ok(None) => Err(StorageError::QueueNotFound(name.clone())),
                Err(e) => Err(e),
            };
            match found {
                Ok((offset, timestamp)) => {
                    answer.offset = offset;
                    answer.timestamp = timestamp;
                    if version >= 4 {
                        answer.leader_epoch = 0;
                    }
                }
                Err(StorageError::QueueNotFound(_) | StorageError::PartitionNotFound(_)) => {
                    answer.error_code = ResponseError::UnknownTopicOrPartition.code();
                }
                Err(e) => answer.error_code = storage_code(&e),
            }
            partitions.push(answer);
        }
        topics.push(
            ListOffsetsTopicResponse::default()
                .with_name(topic.name)
                .with_partitions(partitions),
        );
    }
    ListOffsetsResponse::default().with_topics(topics)
}

/// (offset, timestamp) answering `timestamp`; (-1, -1) when no message
/// qualifies. Latest is the last stable offset for `read_committed`.
async fn lookup(
    broker: &Broker,
    partition_id: PartitionId,
    timestamp: i64,
    read_committed: bool,
) -> Result<(i64, i64), StorageError> {
    let engine = &broker.engine;
    match timestamp {
        LATEST | LATEST_TIERED => {
            let bounds = engine.log_bounds(partition_id).await?;
            match read_committed {
                true => Ok((bounds.last_stable, -1)),
                false => Ok((bounds.next_offset, -1)),
            }
        }
        EARLIEST | EARLIEST_LOCAL => Ok((engine.log_bounds(partition_id).await?.log_start, -1)),
        MAX_TIMESTAMP => Ok(found(engine.max_timestamp_offset(partition_id).await?)),
        ts if ts >= 0 => Ok(found(engine.offset_for_timestamp(partition_id, ts).await?)),
        other => Err(StorageError::InvalidInput(format!(
            "unknown timestamp query {other}"
        ))),
    }
}

/// (offset, timestamp) of what a lookup found; (-1, -1) when nothing.
fn found(at: Option<TimestampedOffset>) -> (i64, i64) {
    at.map_or((-1, -1), |m| (m.offset, m.timestamp_ms))
}
