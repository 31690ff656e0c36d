//! DeleteTopics: deletes the queue with everything in it.
//!
//! The broker's internal topics (names starting with `__`) are refused with
//! `INVALID_TOPIC_EXCEPTION`, the code Kafka gives every other client write
//! to one (Produce, DeleteRecords). Kafka's own broker deletes
//! `__consumer_offsets` when asked (only its command-line tools refuse);
//! here the log is the broker's copy of the commits it keeps writing, and
//! neither door lets a client delete it.

use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::{Access, AclOperation, StorageError};
use uuid::Uuid;

use crate::broker::Broker;
use crate::error::storage_code;

/// Deletes each named topic (by name up to v5, by name or id in v6).
pub(super) async fn handle(
    broker: &Broker,
    version: i16,
    request: DeleteTopicsRequest,
    access: &Access,
) -> DeleteTopicsResponse {
    let targets: Vec<(Option<String>, Uuid)> = if version >= 6 {
        request
            .topics
            .iter()
            .map(|t| (t.name.as_ref().map(|n| n.to_string()), t.topic_id))
            .collect()
    } else {
        request
            .topic_names
            .iter()
            .map(|n| (Some(n.to_string()), Uuid::nil()))
            .collect()
    };
    let mut responses = Vec::with_capacity(targets.len());
    for (name, id) in targets {
        let name = match name {
            Some(n) => Some(n),
            None => broker.topic_name(id).await.ok().flatten(),
        };
        let mut result = DeletableTopicResult::default()
            .with_name(name.clone().map(|n| TopicName(StrBytes::from_string(n))));
        if version >= 6 {
            result.topic_id = id;
        }
        result.error_code = match &name {
            None => ResponseError::UnknownTopicId.code(),
            Some(name) if !access.topic(AclOperation::Delete, name) => {
                ResponseError::TopicAuthorizationFailed.code()
            }
            Some(name) => match broker.engine.delete_queue(name).await {
                Ok(true) => 0,
                Ok(false) => ResponseError::UnknownTopicOrPartition.code(),
                Err(StorageError::Reserved(_)) => {
                    if version >= 5 {
                        result.error_message = Some(StrBytes::from_string(format!(
                            "Cannot delete internal topic {name}"
                        )));
                    }
                    ResponseError::InvalidTopicException.code()
                }
                Err(e) => storage_code(&e),
            },
        };
        responses.push(result);
    }
    DeleteTopicsResponse::default().with_responses(responses)
}
