//! CreatePartitions: grows a topic; new partitions are named after their index.

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::{Access, AclOperation};

use crate::broker::Broker;
use crate::error::storage_code;

/// Grows each topic to its requested count (or, with `validate_only`, checks it).
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: CreatePartitionsRequest,
    access: &Access,
) -> CreatePartitionsResponse {
    let mut results = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let name = topic.name.to_string();
        let mut result = CreatePartitionsTopicResult::default().with_name(topic.name.clone());
        if !access.topic(AclOperation::Alter, &name) {
            result.error_code = ResponseError::TopicAuthorizationFailed.code();
            results.push(result);
            continue;
        }
        let current = match broker.engine.queue(&name).await {
            Ok(Some(q)) => q.partitions.len() as i32,
            Ok(None) => {
                result.error_code = ResponseError::UnknownTopicOrPartition.code();
                results.push(result);
                continue;
            }
            Err(e) => {
                result.error_code = storage_code(&e);
                results.push(result);
                continue;
            }
        };
        if topic.count <= current {
            result.error_code = ResponseError::InvalidPartitions.code();
            result.error_message = Some(StrBytes::from_string(format!(
                "Topic currently has {current} partitions, which is higher than or equal to the requested {}.",
                topic.count
            )));
        } else if !request.validate_only {
            if let Err(e) = broker.engine.create_partitions(&name, topic.count).await {
                result.error_code = ResponseError::InvalidPartitions.code();
                result.error_message = Some(StrBytes::from_string(e.to_string()));
            }
        }
        results.push(result);
    }
    CreatePartitionsResponse::default().with_results(results)
}
