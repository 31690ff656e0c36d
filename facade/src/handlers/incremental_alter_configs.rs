//! IncrementalAlterConfigs: SET, DELETE (back to the default), APPEND and
//! SUBTRACT (list configs only, such as `cleanup.policy`) on a topic's
//! configs, applied in order and validated as a whole before anything is
//! stored. Broker resources accept no change (see `alter_configs`); group
//! resources take the share-group configs of `crate::share::config`.

use kafka_protocol::messages::incremental_alter_configs_request::AlterableConfig;
use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse};
use kafka_protocol::ResponseError;
use storage::topic_configs::{self, ConfigOp};
use storage::Access;

use super::alter_configs::{
    alter_denied, change_topic, refuse_broker_change, split, unsupported_resource, Refusal, BROKER,
    GROUP, TOPIC,
};
use crate::broker::Broker;
use crate::share::config;

/// Changes each resource's configs (or, with `validate_only`, checks them).
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: IncrementalAlterConfigsRequest,
    access: &Access,
) -> IncrementalAlterConfigsResponse {
    let mut responses = Vec::with_capacity(request.resources.len());
    for resource in request.resources {
        let name = resource.resource_name.to_string();
        let outcome = match alter_denied(access, resource.resource_type, &name) {
            Some(refused) => Err(refused),
            None => match resource.resource_type {
                TOPIC => match ops(&resource.configs) {
                    Ok(changes) => {
                        change_topic(broker, &name, request.validate_only, |o| {
                            topic_configs::alter(o, &changes)
                        })
                        .await
                    }
                    Err(refusal) => Err(refusal),
                },
                BROKER => {
                    let names: Vec<String> = resource
                        .configs
                        .iter()
                        .map(|c| c.name.to_string())
                        .collect();
                    refuse_broker_change(broker, &name, names.iter())
                }
                GROUP => match ops(&resource.configs) {
                    Ok(changes) => {
                        change_group(broker, &name, request.validate_only, &changes).await
                    }
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
    IncrementalAlterConfigsResponse::default().with_responses(responses)
}

/// Applies SET and DELETE to a group's share configs
/// (`crate::share::config`), all or nothing.
async fn change_group(
    broker: &Broker,
    group: &str,
    validate_only: bool,
    changes: &[(String, ConfigOp)],
) -> Result<(), Refusal> {
    let invalid = |why: String| (ResponseError::InvalidConfig.code(), why);
    let storage = |e: storage::StorageError| (crate::error::storage_code(&e), e.to_string());
    let mut configs = config::stored(&broker.engine, group)
        .await
        .map_err(storage)?;
    for (name, op) in changes {
        match op {
            ConfigOp::Set(value) => {
                config::check(name, value).map_err(invalid)?;
                configs.insert(name.clone(), value.clone());
            }
            ConfigOp::Delete => {
                config::check(name, config::default_of(name).unwrap_or("")).map_err(invalid)?;
                configs.remove(name);
            }
            ConfigOp::Append(_) | ConfigOp::Subtract(_) => {
                return Err(invalid(format!("{name} is not a list config")));
            }
        }
    }
    if validate_only {
        return Ok(());
    }
    config::store(&broker.engine, group, &configs)
        .await
        .map_err(storage)
}

/// The changes of a resource, each with its operation and value; a null
/// value where one is needed, or an unknown operation, is a bad request.
fn ops(configs: &[AlterableConfig]) -> Result<Vec<(String, ConfigOp)>, Refusal> {
    configs
        .iter()
        .map(|c| {
            let name = c.name.to_string();
            let value = || {
                c.value.as_ref().map(|v| v.to_string()).ok_or_else(|| {
                    (
                        ResponseError::InvalidRequest.code(),
                        format!("Null value not supported for : {name}"),
                    )
                })
            };
            let op = match c.config_operation {
                0 => ConfigOp::Set(value()?),
                1 => ConfigOp::Delete,
                2 => ConfigOp::Append(value()?),
                3 => ConfigOp::Subtract(value()?),
                other => {
                    return Err((
                        ResponseError::InvalidRequest.code(),
                        format!("Unknown config operation {other} for {name}"),
                    ))
                }
            };
            Ok((name, op))
        })
        .collect()
}
