//! AlterConfigs (the legacy, replacing form): a topic's Kafka configs
//! become exactly those given, as in Kafka; a config left out returns to
//! its default. The queue's own options change only where a
//! `queen.<option>` is given (they are not Kafka configs, and a Kafka tool
//! replacing the topic's configs does not mean to reset them).
//!
//! Brokers and groups: their dynamic configs (`storage::resource_configs`)
//! become exactly those given; a broker's static settings (its command
//! line) are refused with `INVALID_REQUEST`, as Kafka refuses a config it
//! cannot update dynamically.
//!
//! Also the pieces IncrementalAlterConfigs shares: resource types, the
//! change of a topic's options and of a broker's or group's configs
//! (validated first; bad input changes nothing).

use kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{AlterConfigsRequest, AlterConfigsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::options::OptionsUpdate;
use storage::resource_configs::ConfigResource;
use storage::topic_configs::{self, ConfigError};
use storage::QueueOptions;
use storage::{Access, AclOperation};

use crate::broker::Broker;
use crate::error::storage_code;

/// Config resource types.
pub(super) const TOPIC: i8 = 2;
pub(super) const BROKER: i8 = 4;
/// Group resources (KIP-848, KIP-932).
pub(super) const GROUP: i8 = 32;

/// Why a resource's change was refused: the error code and message.
pub(super) type Refusal = (i16, String);

/// Changes each resource's configs (or, with `validate_only`, checks them).
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: AlterConfigsRequest,
    access: &Access,
) -> AlterConfigsResponse {
    let mut responses = Vec::with_capacity(request.resources.len());
    for resource in request.resources {
        let name = resource.resource_name.to_string();
        let configs: Vec<(String, Option<String>)> = resource
            .configs
            .iter()
            .map(|c| (c.name.to_string(), c.value.as_ref().map(|v| v.to_string())))
            .collect();
        let outcome = match alter_denied(access, resource.resource_type, &name) {
            Some(refused) => Err(refused),
            None => match resource.resource_type {
                TOPIC => {
                    change_topic(broker, &name, request.validate_only, |o| {
                        topic_configs::replace(o, &configs)
                    })
                    .await
                }
                BROKER | GROUP => match config_resource(broker, resource.resource_type, &name) {
                    Ok(target) => settle(
                        broker
                            .engine
                            .replace_resource_configs(&target, &configs, request.validate_only)
                            .await,
                    ),
                    Err(refusal) => Err(refusal),
                },
                other => Err(unsupported_resource(other)),
            },
        };
        let (code, message) = split(outcome);
        responses.push(
            AlterConfigsResourceResponse::default()
                .with_resource_type(resource.resource_type)
                .with_resource_name(resource.resource_name)
                .with_error_code(code)
                .with_error_message(message),
        );
    }
    AlterConfigsResponse::default().with_responses(responses)
}

/// Why ALTER_CONFIGS on the resource (a topic, or a broker: the cluster)
/// is refused, if it is.
pub(super) fn alter_denied(access: &Access, kind: i8, name: &str) -> Option<Refusal> {
    match kind {
        TOPIC if !access.topic(AclOperation::AlterConfigs, name) => Some((
            ResponseError::TopicAuthorizationFailed.code(),
            format!("ALTER_CONFIGS on topic {name} is not allowed"),
        )),
        GROUP if !access.group(AclOperation::AlterConfigs, name) => Some((
            ResponseError::GroupAuthorizationFailed.code(),
            format!("ALTER_CONFIGS on group {name} is not allowed"),
        )),
        BROKER if !access.cluster(AclOperation::AlterConfigs) => Some((
            ResponseError::ClusterAuthorizationFailed.code(),
            "ALTER_CONFIGS on the cluster is not allowed".to_owned(),
        )),
        _ => None,
    }
}

/// The error code and message of an outcome (`0` and null for success).
pub(super) fn split(outcome: Result<(), Refusal>) -> (i16, Option<StrBytes>) {
    match outcome {
        Ok(()) => (0, None),
        Err((code, message)) => (code, Some(StrBytes::from_string(message))),
    }
}

/// Applies `change` to the options of topic `name`, all or nothing; with
/// `validate_only`, only checks that it would apply. This broker's produce
/// rules for the topic are refreshed at once.
pub(super) async fn change_topic(
    broker: &Broker,
    name: &str,
    validate_only: bool,
    change: impl FnOnce(&QueueOptions) -> Result<QueueOptions, ConfigError>,
) -> Result<(), Refusal> {
    let unknown = || {
        (
            ResponseError::UnknownTopicOrPartition.code(),
            format!("Topic {name} does not exist"),
        )
    };
    let storage = |e: storage::StorageError| (storage_code(&e), e.to_string());
    if validate_only {
        let queue = broker
            .engine
            .queue(name)
            .await
            .map_err(storage)?
            .ok_or_else(unknown)?;
        return change(&queue.options).map(drop).map_err(config_refusal);
    }
    match broker
        .engine
        .update_options(name, change)
        .await
        .map_err(storage)?
    {
        OptionsUpdate::Updated(_) => Ok(()),
        OptionsUpdate::Refused(e) => Err(config_refusal(e)),
        OptionsUpdate::NoQueue => Err(unknown()),
    }
}

/// A refused config change as Kafka answers it.
pub(super) fn config_refusal(e: ConfigError) -> Refusal {
    let code = match e {
        ConfigError::Invalid(_) => ResponseError::InvalidConfig,
        ConfigError::Request(_) => ResponseError::InvalidRequest,
    };
    (code.code(), e.to_string())
}

/// The broker or group resource `name` names. A broker is this broker's
/// id, or empty for the default of every broker, as in Kafka.
pub(super) fn config_resource(
    broker: &Broker,
    kind: i8,
    name: &str,
) -> Result<ConfigResource, Refusal> {
    if kind == GROUP {
        return Ok(ConfigResource::Group(name.to_owned()));
    }
    if !name.is_empty() && name != broker.node_id.to_string() {
        return Err((
            ResponseError::InvalidRequest.code(),
            format!(
                "Unexpected broker id, expected {} or empty string, but received {name}",
                broker.node_id
            ),
        ));
    }
    Ok(ConfigResource::Broker(name.to_owned()))
}

/// The outcome of a change of a broker's or group's configs.
pub(super) fn settle(
    outcome: Result<Result<(), ConfigError>, storage::StorageError>,
) -> Result<(), Refusal> {
    match outcome {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(config_refusal(e)),
        Err(e) => Err((storage_code(&e), e.to_string())),
    }
}

/// A resource type that has no alterable configs here.
pub(super) fn unsupported_resource(resource_type: i8) -> Refusal {
    (
        ResponseError::InvalidRequest.code(),
        format!(
            "Unsupported resource type {resource_type}: only topics (2), brokers (4) and groups (32)"
        ),
    )
}
