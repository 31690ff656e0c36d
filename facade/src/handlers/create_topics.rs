//! CreateTopics: a topic is a queue created with `dedupWindowSeconds = 0`
//! and partitions named after their index.

use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::{QueueOptions, StorageError, TopicCreation};

use crate::broker::Broker;
use crate::error::storage_code;

/// Creates (or, with `validate_only`, checks) each topic.
pub(super) async fn handle(
    broker: &Broker,
    version: i16,
    request: CreateTopicsRequest,
) -> CreateTopicsResponse {
    let mut results = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        results.push(create(broker, version, &topic, request.validate_only).await);
    }
    CreateTopicsResponse::default().with_topics(results)
}

async fn create(
    broker: &Broker,
    version: i16,
    topic: &CreatableTopic,
    validate_only: bool,
) -> CreatableTopicResult {
    let name = topic.name.to_string();
    let mut result = CreatableTopicResult::default().with_name(topic.name.clone());
    let fail = |mut result: CreatableTopicResult, e: ResponseError, message: String| {
        result.error_code = e.code();
        result.error_message = Some(StrBytes::from_string(message));
        result
    };
    let partitions = match (topic.num_partitions, topic.assignments.len()) {
        (-1, 0) => broker.config.default_partitions,
        (-1, n) => n as i32,
        (n, _) => n,
    };
    if partitions < 1 {
        return fail(
            result,
            ResponseError::InvalidPartitions,
            format!("{partitions} partitions: at least 1 is needed"),
        );
    }
    if topic.replication_factor == 0 || topic.replication_factor < -1 {
        return fail(
            result,
            ResponseError::InvalidReplicationFactor,
            "the replication factor must be -1 or at least 1".into(),
        );
    }
    let options = match options(topic) {
        Ok(o) => o,
        Err(message) => return fail(result, ResponseError::InvalidConfig, message),
    };
    if let Err(e) = storage::validate_name("topic name", &name) {
        return fail(result, ResponseError::InvalidTopicException, e.to_string());
    }
    let outcome = if validate_only {
        match broker.engine.queue(&name).await {
            Ok(Some(_)) => Ok(TopicCreation::AlreadyExists),
            Ok(None) => Ok(TopicCreation::Created),
            Err(e) => Err(e),
        }
    } else {
        broker
            .engine
            .create_topic(&name, partitions, &options)
            .await
    };
    match outcome {
        Ok(TopicCreation::Created) => {
            if version >= 5 {
                result.num_partitions = partitions;
                result.replication_factor = 1;
            }
            if version >= 7 && !validate_only {
                if let Ok(Some(q)) = broker.engine.queue(&name).await {
                    result.topic_id = q.topic_id;
                }
            }
            result
        }
        Ok(TopicCreation::AlreadyExists) => fail(
            result,
            ResponseError::TopicAlreadyExists,
            format!("Topic '{name}' already exists."),
        ),
        Err(e @ (StorageError::InvalidInput(_) | StorageError::NameTooLong { .. })) => {
            fail(result, ResponseError::InvalidTopicException, e.to_string())
        }
        Err(e) => {
            result.error_code = storage_code(&e);
            result
        }
    }
}

/// The queue options of a new topic: Kafka's defaults (no dedup window),
/// with the topic configs that map onto queue options applied.
fn options(topic: &CreatableTopic) -> Result<QueueOptions, String> {
    let mut options = QueueOptions::for_kafka_topic();
    for config in &topic.configs {
        let value = config.value.as_deref().unwrap_or("");
        match &*config.name {
            "retention.ms" => {
                let ms: i64 = value
                    .parse()
                    .map_err(|_| format!("retention.ms must be an integer, not {value:?}"))?;
                if ms > 0 {
                    options.retention_enabled = true;
                    options.retention_seconds = (ms + 999) / 1000;
                }
            }
            "cleanup.policy" if value != "delete" => {
                return Err(format!(
                    "cleanup.policy {value:?} is not supported; only \"delete\""
                ));
            }
            other => tracing::debug!(
                config = other,
                "kafka: topic config accepted and not applied"
            ),
        }
    }
    Ok(options)
}
