//! DescribeConfigs: a topic's Kafka configs as its queue options map onto
//! them, plus every queue option as `queen.<option>`; a few broker configs.

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult,
};
use kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::QueueInfo;

use crate::broker::Broker;
use crate::error::storage_code;

const TOPIC: i8 = 2;
const BROKER: i8 = 4;
/// Config sources: the topic's own setting, or the broker's default.
const DYNAMIC_TOPIC_CONFIG: i8 = 1;
const DEFAULT_CONFIG: i8 = 5;

/// Answers each resource's configs, filtered by the keys asked for.
pub(super) async fn handle(
    broker: &Broker,
    version: i16,
    request: DescribeConfigsRequest,
) -> DescribeConfigsResponse {
    let mut results = Vec::with_capacity(request.resources.len());
    for resource in request.resources {
        let mut result = DescribeConfigsResult::default()
            .with_resource_type(resource.resource_type)
            .with_resource_name(resource.resource_name.clone());
        let entries = match resource.resource_type {
            TOPIC => match broker.engine.queue(&resource.resource_name).await {
                Ok(Some(q)) => Ok(topic_configs(broker, &q)),
                Ok(None) => Err(ResponseError::UnknownTopicOrPartition.code()),
                Err(e) => Err(storage_code(&e)),
            },
            BROKER => Ok(broker_configs(broker)),
            _ => Err(ResponseError::InvalidRequest.code()),
        };
        match entries {
            Ok(entries) => {
                let keys = resource.configuration_keys.as_ref();
                result.configs = entries
                    .into_iter()
                    .filter(|(name, _, _)| keys.is_none_or(|k| k.iter().any(|k| **k == **name)))
                    .map(|(name, value, source)| {
                        let mut entry = DescribeConfigsResourceResult::default()
                            .with_name(StrBytes::from_string(name))
                            .with_value(Some(StrBytes::from_string(value)))
                            .with_config_source(source);
                        if version >= 3 {
                            entry.config_type = 2; // STRING; clients read the value
                        }
                        entry
                    })
                    .collect();
            }
            Err(code) => result.error_code = code,
        }
        results.push(result);
    }
    DescribeConfigsResponse::default().with_results(results)
}

fn topic_configs(broker: &Broker, q: &QueueInfo) -> Vec<(String, String, i8)> {
    let o = &q.options;
    let retention_ms = if o.retention_enabled && o.retention_seconds > 0 {
        (o.retention_seconds * 1000).to_string()
    } else {
        "-1".to_owned()
    };
    let mut configs = vec![
        (
            "retention.ms".to_owned(),
            retention_ms,
            DYNAMIC_TOPIC_CONFIG,
        ),
        (
            "cleanup.policy".to_owned(),
            "delete".to_owned(),
            DEFAULT_CONFIG,
        ),
        (
            "max.message.bytes".to_owned(),
            broker.config.max_message_bytes.to_string(),
            DEFAULT_CONFIG,
        ),
        (
            "message.timestamp.type".to_owned(),
            "CreateTime".to_owned(),
            DEFAULT_CONFIG,
        ),
    ];
    if let Ok(serde_json::Value::Object(options)) = serde_json::to_value(o) {
        for (key, value) in options {
            let text = match value {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            configs.push((format!("queen.{key}"), text, DYNAMIC_TOPIC_CONFIG));
        }
    }
    configs
}

fn broker_configs(broker: &Broker) -> Vec<(String, String, i8)> {
    let c = &broker.config;
    vec![
        (
            "auto.create.topics.enable".into(),
            c.auto_create_topics.to_string(),
            DEFAULT_CONFIG,
        ),
        (
            "num.partitions".into(),
            c.default_partitions.to_string(),
            DEFAULT_CONFIG,
        ),
        (
            "message.max.bytes".into(),
            c.max_message_bytes.to_string(),
            DEFAULT_CONFIG,
        ),
        (
            "socket.request.max.bytes".into(),
            c.max_request_bytes.to_string(),
            DEFAULT_CONFIG,
        ),
    ]
}
