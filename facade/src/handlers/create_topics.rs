//! CreateTopics: a topic is a queue created with `dedupWindowSeconds = 0`
//! and partitions named after their index; its configs are checked and
//! stored by `storage::topic_configs` (a bad one creates nothing), and the
//! answer (v5+) lists every config of the topic as DescribeConfigs would.

use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::topic_configs::{self, ConfigError};
use storage::{Access, AclOperation};
use storage::{QueueOptions, StorageError, TopicCreation};

use super::describe_configs::{DEFAULT_CONFIG, DYNAMIC_TOPIC_CONFIG};
use crate::broker::Broker;
use crate::error::storage_code;

/// Creates (or, with `validate_only`, checks) each topic.
pub(super) async fn handle(
    broker: &Broker,
    version: i16,
    request: CreateTopicsRequest,
    access: &Access,
) -> CreateTopicsResponse {
    let mut results = Vec::with_capacity(request.topics.len());
    // CREATE on the cluster allows every topic; on a topic, that topic.
    let any_topic = access.cluster(AclOperation::Create);
    for topic in request.topics {
        if !any_topic && !access.topic(AclOperation::Create, &topic.name) {
            results.push(
                CreatableTopicResult::default()
                    .with_name(topic.name.clone())
                    .with_error_code(ResponseError::TopicAuthorizationFailed.code())
                    .with_error_message(Some(StrBytes::from_static_str(
                        "CREATE on the topic or the cluster is not allowed",
                    ))),
            );
            continue;
        }
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
    let mut result = CreatableTopicResult::default()
        .with_name(topic.name.clone())
        .with_error_message(None);
    let fail = |mut result: CreatableTopicResult, e: ResponseError, message: String| {
        result.error_code = e.code();
        result.error_message = Some(StrBytes::from_string(message));
        result
    };
    if let Some(why) = crate::topic_name::illegal(&name) {
        return fail(result, ResponseError::InvalidTopicException, why);
    }
    if crate::topic_name::reserved(&name) {
        // Kafka's words for its own internal topic (`__cluster_metadata`).
        let why = format!("Creation of internal topic {name} is prohibited.");
        return fail(result, ResponseError::InvalidRequest, why);
    }
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
        Err(e @ ConfigError::Invalid(_)) => {
            return fail(result, ResponseError::InvalidConfig, e.to_string())
        }
        Err(e @ ConfigError::Request(_)) => {
            return fail(result, ResponseError::InvalidRequest, e.to_string())
        }
    };
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
                result.configs = Some(configs(broker, &options));
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
/// with the topic's configs checked and applied.
fn options(topic: &CreatableTopic) -> Result<QueueOptions, ConfigError> {
    let configs: Vec<(String, Option<String>)> = topic
        .configs
        .iter()
        .map(|c| (c.name.to_string(), c.value.as_ref().map(|v| v.to_string())))
        .collect();
    topic_configs::for_new_topic(&configs)
}

/// Every config of the new topic, as the v5+ answer lists them.
fn configs(broker: &Broker, options: &QueueOptions) -> Vec<CreatableTopicConfigs> {
    topic_configs::describe(options, broker.config.max_message_bytes as i64)
        .into_iter()
        .map(|c| {
            CreatableTopicConfigs::default()
                .with_name(StrBytes::from_string(c.name))
                .with_value(Some(StrBytes::from_string(c.value)))
                .with_config_source(if c.set_on_topic {
                    DYNAMIC_TOPIC_CONFIG
                } else {
                    DEFAULT_CONFIG
                })
        })
        .collect()
}
