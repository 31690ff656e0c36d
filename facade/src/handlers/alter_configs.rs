//! AlterConfigs (the legacy, replacing form): a topic's Kafka configs
//! become exactly those given, as in Kafka; a config left out returns to
//! its default. The queue's own options change only where a
//! `queen.<option>` is given (they are not Kafka configs, and a Kafka tool
//! replacing the topic's configs does not mean to reset them).
//!
//! Also the pieces IncrementalAlterConfigs shares: resource types, the
//! change of a topic's options (validated first; bad input changes
//! nothing) and the answer to broker resources, which accept no change.

use kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{AlterConfigsRequest, AlterConfigsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::options::OptionsUpdate;
use storage::topic_configs::{self, ConfigError};
use storage::QueueOptions;
use storage::{Access, AclOperation};

use crate::broker::Broker;
use crate::error::storage_code;

/// Config resource types.
pub(super) const TOPIC: i8 = 2;
pub(super) const BROKER: i8 = 4;
/// Group resources (KIP-848, KIP-932): only IncrementalAlterConfigs
/// changes them, as in Kafka.
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
                BROKER => refuse_broker_change(broker, &name, configs.iter().map(|(n, _)| n)),
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
        OptionsUpdate::Updated(_) => {
            broker.forget_produce_rules(name);
            Ok(())
        }
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

/// Broker resources: this broker's settings are its command line and
/// cannot change while it runs, so any change is refused as Kafka refuses a
/// config that cannot be updated dynamically (`INVALID_REQUEST`); an empty
/// change is accepted. The name must be this broker's id, or empty for the
/// cluster default, as in Kafka.
pub(super) fn refuse_broker_change<'a>(
    broker: &Broker,
    name: &str,
    configs: impl Iterator<Item = &'a String>,
) -> Result<(), Refusal> {
    let refuse = |message| Err((ResponseError::InvalidRequest.code(), message));
    if !name.is_empty() && name != broker.node_id.to_string() {
        return refuse(format!(
            "Unexpected broker id, expected {} or empty string, but received {name}",
            broker.node_id
        ));
    }
    let configs: Vec<&str> = configs.map(String::as_str).collect();
    if configs.is_empty() {
        return Ok(());
    }
    refuse(format!(
        "Cannot update these configs dynamically: {}",
        configs.join(", ")
    ))
}

/// A resource type that has no alterable configs here.
pub(super) fn unsupported_resource(resource_type: i8) -> Refusal {
    (
        ResponseError::InvalidRequest.code(),
        format!("Unsupported resource type {resource_type}: only topics (2) and brokers (4)"),
    )
}
