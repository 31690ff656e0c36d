//! DescribeConfigs: every config of a topic with its effective value and
//! source (the catalogue is `storage::topic_configs`: the Kafka topic
//! configs, then the queue's own options as `queen.<option>`); a few
//! broker configs, read-only.

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::resource_configs::{ConfigResource, DescribedResourceConfig};
use storage::topic_configs::{self, ConfigType, DescribedConfig};
use storage::{Access, AclOperation};

use super::alter_configs::{BROKER, GROUP, TOPIC};
use crate::broker::Broker;
use crate::error::storage_code;

/// Config sources: set on the topic, or the default.
pub(super) const DYNAMIC_TOPIC_CONFIG: i8 = 1;
pub(super) const DEFAULT_CONFIG: i8 = 5;

/// What the request asks to see besides names and values.
#[derive(Debug, Clone, Copy)]
struct Detail {
    version: i16,
    synonyms: bool,
    documentation: bool,
}

/// Answers each resource's configs, filtered by the keys asked for.
pub(super) async fn handle(
    broker: &Broker,
    version: i16,
    request: DescribeConfigsRequest,
    access: &Access,
) -> DescribeConfigsResponse {
    let detail = Detail {
        version,
        synonyms: request.include_synonyms,
        documentation: version >= 3 && request.include_documentation,
    };
    let mut results = Vec::with_capacity(request.resources.len());
    for resource in request.resources {
        let mut result = DescribeConfigsResult::default()
            .with_resource_type(resource.resource_type)
            .with_resource_name(resource.resource_name.clone())
            .with_error_message(None);
        let name = resource.resource_name.to_string();
        let entries = match resource.resource_type {
            TOPIC if !access.topic(AclOperation::DescribeConfigs, &name) => Err((
                ResponseError::TopicAuthorizationFailed.code(),
                format!("DESCRIBE_CONFIGS on topic {name} is not allowed"),
            )),
            BROKER if !access.cluster(AclOperation::DescribeConfigs) => Err((
                ResponseError::ClusterAuthorizationFailed.code(),
                "DESCRIBE_CONFIGS on the cluster is not allowed".to_owned(),
            )),
            TOPIC => match broker.engine.queue(&name).await {
                Ok(Some(q)) => Ok(topic_configs::describe(
                    &q.options,
                    broker.config.max_message_bytes as i64,
                )
                .iter()
                .map(|c| topic_entry(c, detail))
                .collect()),
                Ok(None) => Err((
                    ResponseError::UnknownTopicOrPartition.code(),
                    format!("Topic {name} does not exist"),
                )),
                Err(e) => Err((storage_code(&e), e.to_string())),
            },
            GROUP if !access.group(AclOperation::DescribeConfigs, &name) => Err((
                ResponseError::GroupAuthorizationFailed.code(),
                format!("DESCRIBE_CONFIGS on group {name} is not allowed"),
            )),
            BROKER | GROUP => {
                let target = if resource.resource_type == BROKER {
                    ConfigResource::Broker(name.clone())
                } else {
                    ConfigResource::Group(name.clone())
                };
                match broker.engine.describe_resource_configs(&target).await {
                    Ok(dynamic) => {
                        let mut entries = if resource.resource_type == BROKER {
                            broker_configs(broker, detail)
                        } else {
                            Vec::new()
                        };
                        entries.extend(dynamic.iter().map(|c| dynamic_entry(c, detail)));
                        Ok(entries)
                    }
                    Err(e) => Err((storage_code(&e), e.to_string())),
                }
            }
            other => Err((
                ResponseError::InvalidRequest.code(),
                format!("resource type {other} has no configs here"),
            )),
        };
        match entries {
            Ok(entries) => {
                let keys = resource.configuration_keys.as_ref();
                result.configs = entries
                    .into_iter()
                    .filter(|e: &DescribeConfigsResourceResult| {
                        keys.is_none_or(|k| k.contains(&e.name))
                    })
                    .collect();
            }
            Err((code, message)) => {
                result.error_code = code;
                result.error_message = Some(StrBytes::from_string(message));
            }
        }
        results.push(result);
    }
    DescribeConfigsResponse::default().with_results(results)
}

fn text(s: impl Into<String>) -> StrBytes {
    StrBytes::from_string(s.into())
}

fn synonym(name: &str, value: &str, source: i8) -> DescribeConfigsSynonym {
    DescribeConfigsSynonym::default()
        .with_name(text(name))
        .with_value(Some(text(value)))
        .with_source(source)
}

/// One topic config as Kafka describes it: with synonyms, the topic's own
/// setting (when set) and then the broker config that supplies the default.
fn topic_entry(c: &DescribedConfig, detail: Detail) -> DescribeConfigsResourceResult {
    let source = if c.set_on_topic {
        DYNAMIC_TOPIC_CONFIG
    } else {
        DEFAULT_CONFIG
    };
    let mut entry = DescribeConfigsResourceResult::default()
        .with_name(text(c.name.clone()))
        .with_value(Some(text(c.value.clone())))
        .with_config_source(source)
        .with_documentation(None);
    if detail.synonyms {
        if c.set_on_topic {
            entry
                .synonyms
                .push(synonym(&c.name, &c.value, DYNAMIC_TOPIC_CONFIG));
        }
        if let Some((name, default)) = &c.default_synonym {
            entry.synonyms.push(synonym(name, default, DEFAULT_CONFIG));
        }
    }
    if detail.version >= 3 {
        entry.config_type = c.config_type.code();
        if detail.documentation {
            entry.documentation = Some(text(c.doc));
        }
    }
    entry
}

/// A dynamic config of a broker or group, with the values it would take
/// in order of precedence as its synonyms.
fn dynamic_entry(c: &DescribedResourceConfig, detail: Detail) -> DescribeConfigsResourceResult {
    let mut entry = DescribeConfigsResourceResult::default()
        .with_name(text(c.name))
        .with_value(Some(text(c.value.clone())))
        .with_config_source(c.source.code())
        .with_documentation(None);
    if detail.synonyms {
        entry.synonyms = c
            .synonyms
            .iter()
            .map(|(name, value, source)| synonym(name, value, source.code()))
            .collect();
    }
    if detail.version >= 3 {
        entry.config_type = c.config_type.code();
        if detail.documentation {
            entry.documentation = Some(text(c.doc));
        }
    }
    entry
}

/// The broker configs clients ask about: the broker's settings, which
/// cannot be changed while it runs (so read-only).
fn broker_configs(broker: &Broker, detail: Detail) -> Vec<DescribeConfigsResourceResult> {
    let c = &broker.config;
    // Kafka's form, `NAME://host:port` per listener (admin tools and
    // kafka-python's suite read it).
    let advertised = c
        .listeners
        .iter()
        .map(|l| format!("{}://{}:{}", l.name, l.advertised_host, l.advertised_port))
        .collect::<Vec<_>>()
        .join(",");
    [
        ("advertised.listeners", advertised, ConfigType::List),
        (
            "auto.create.topics.enable",
            c.auto_create_topics.to_string(),
            ConfigType::Boolean,
        ),
        (
            "num.partitions",
            c.default_partitions.to_string(),
            ConfigType::Int,
        ),
        (
            "message.max.bytes",
            c.max_message_bytes.to_string(),
            ConfigType::Int,
        ),
        (
            "socket.request.max.bytes",
            c.max_request_bytes.to_string(),
            ConfigType::Int,
        ),
    ]
    .into_iter()
    .map(|(name, value, config_type)| {
        let mut entry = DescribeConfigsResourceResult::default()
            .with_name(text(name))
            .with_value(Some(text(value.clone())))
            .with_read_only(true)
            .with_config_source(DEFAULT_CONFIG)
            .with_documentation(None);
        if detail.synonyms {
            entry.synonyms = vec![synonym(name, &value, DEFAULT_CONFIG)];
        }
        if detail.version >= 3 {
            entry.config_type = config_type.code();
        }
        entry
    })
    .collect()
}
