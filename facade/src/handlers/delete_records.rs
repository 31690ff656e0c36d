//! DeleteRecords: moves partitions' log start (their low watermark); the
//! records below it are gone for every reader at once, and their space is
//! given back in the background.

use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse};
use kafka_protocol::ResponseError;
use storage::{Access, AclOperation};

use crate::broker::Broker;
use crate::error::storage_code;

/// Answers each partition's new low watermark, or its error with -1.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: DeleteRecordsRequest,
    access: &Access,
) -> DeleteRecordsResponse {
    let mut topics = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let denied = !access.topic(AclOperation::Delete, &topic.name);
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for p in topic.partitions {
            let found = if denied {
                Err(ResponseError::TopicAuthorizationFailed.code())
            } else {
                broker
                    .partition_id(&topic.name, p.partition_index, false)
                    .await
                    .map_err(|e| storage_code(&e))
            };
            let result = match found {
                Ok(Some(id)) => broker
                    .engine
                    .delete_records(id, p.offset)
                    .await
                    .map_err(|e| storage_code(&e)),
                Ok(None) => Err(ResponseError::UnknownTopicOrPartition.code()),
                Err(code) => Err(code),
            };
            let (low_watermark, error_code) = match result {
                Ok(low) => (low, 0),
                Err(code) => (-1, code),
            };
            partitions.push(
                DeleteRecordsPartitionResult::default()
                    .with_partition_index(p.partition_index)
                    .with_low_watermark(low_watermark)
                    .with_error_code(error_code),
            );
        }
        topics.push(
            DeleteRecordsTopicResult::default()
                .with_name(topic.name)
                .with_partitions(partitions),
        );
    }
    DeleteRecordsResponse::default().with_topics(topics)
}
