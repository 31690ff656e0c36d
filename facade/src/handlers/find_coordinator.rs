//! FindCoordinator: the broker that coordinates a group, chosen the same way
//! by every broker (by the key, over the live brokers), so every member of a
//! group is sent to the same one.

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;
use storage::BrokerInfo;

use crate::broker::Broker;
use crate::error::storage_code;

/// Answers the coordinator of each key (one key up to v3, a batch from v4).
pub async fn handle(
    broker: &Broker,
    version: i16,
    request: FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    let brokers = match broker.live_brokers().await {
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
            .map(|key| {
                let b = coordinator(&brokers, &key);
                Coordinator::default()
                    .with_key(key)
                    .with_node_id(BrokerId(b.id))
                    .with_host(StrBytes::from_string(b.host.clone()))
                    .with_port(b.port)
            })
            .collect();
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    let b = coordinator(&brokers, &request.key);
    FindCoordinatorResponse::default()
        .with_node_id(BrokerId(b.id))
        .with_host(StrBytes::from_string(b.host.clone()))
        .with_port(b.port)
}

/// The coordinator of `key` among `brokers` (never empty: this broker is
/// always among the live ones).
fn coordinator<'a>(brokers: &'a [BrokerInfo], key: &str) -> &'a BrokerInfo {
    let hash = key
        .bytes()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
    &brokers[hash as usize % brokers.len()]
}
