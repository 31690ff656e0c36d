//! FindCoordinator: the broker that coordinates a group, chosen the same way
//! by every broker ([`Broker::coordinator`] over the live brokers), so every
//! member of a group is sent to the same one. A transactional id (key
//! type 1) is placed the same way: its coordinator's state is in the
//! database, so any broker could serve it. As Kafka, the key needs
//! DESCRIBE on its group or transactional id.

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::{Access, AclOperation, ResourceType};

use crate::broker::Broker;
use crate::error::storage_code;

/// Answers the coordinator of each key (one key up to v3, a batch from v4).
pub(super) async fn handle(
    broker: &Broker,
    version: i16,
    request: FindCoordinatorRequest,
    listener: &str,
    access: &Access,
) -> FindCoordinatorResponse {
    let refusal = |key: &str| refusal(access, request.key_type, key);
    let brokers = match broker.live_brokers(listener).await {
        Ok(b) => b,
        Err(e) => {
            let code = storage_code(&e);
            return if version >= 4 {
                let coordinators = request
                    .coordinator_keys
                    .into_iter()
                    .map(|key| Coordinator::default().with_key(key).with_error_code(code))
                    .collect();
                FindCoordinatorResponse::default().with_coordinators(coordinators)
            } else {
                FindCoordinatorResponse::default().with_error_code(code)
            };
        }
    };
    if version >= 4 {
        let coordinators = request
            .coordinator_keys
            .into_iter()
            .map(
                |key| match (refusal(&key), Broker::coordinator(&brokers, &key)) {
                    (Some(e), _) => Coordinator::default()
                        .with_key(key)
                        .with_error_code(e.code()),
                    (None, Some(b)) => Coordinator::default()
                        .with_key(key)
                        .with_node_id(BrokerId(b.id))
                        .with_host(StrBytes::from_string(b.host.clone()))
                        .with_port(b.port),
                    (None, None) => Coordinator::default()
                        .with_key(key)
                        .with_error_code(ResponseError::CoordinatorNotAvailable.code()),
                },
            )
            .collect();
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    if let Some(e) = refusal(&request.key) {
        return FindCoordinatorResponse::default().with_error_code(e.code());
    }
    match Broker::coordinator(&brokers, &request.key) {
        Some(b) => FindCoordinatorResponse::default()
            .with_node_id(BrokerId(b.id))
            .with_host(StrBytes::from_string(b.host.clone()))
            .with_port(b.port),
        None => FindCoordinatorResponse::default()
            .with_error_code(ResponseError::CoordinatorNotAvailable.code()),
    }
}

/// Why the principal may not look up `key` of `key_type`, if it may not.
fn refusal(access: &Access, key_type: i8, key: &str) -> Option<ResponseError> {
    match key_type {
        0 => (!access.group(AclOperation::Describe, key))
            .then_some(ResponseError::GroupAuthorizationFailed),
        1 => (!access.allows(AclOperation::Describe, ResourceType::TransactionalId, key))
            .then_some(ResponseError::TransactionalIdAuthorizationFailed),
        _ => Some(ResponseError::InvalidRequest),
    }
}
