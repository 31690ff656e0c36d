//! Heartbeat: a member keeps its session and learns of a rebalance.

use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse};
use storage::Access;

use crate::broker::Broker;
use crate::error::code;

/// Renews the member's session.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: HeartbeatRequest,
    access: &Access,
) -> HeartbeatResponse {
    let group = request.group_id.to_string();
    let error = match broker.member_error(access, &group).await {
        Some(error) => Some(error),
        None => broker.groups.heartbeat(
            &group,
            request.generation_id,
            &request.member_id,
            request.group_instance_id.as_deref(),
        ),
    };
    HeartbeatResponse::default().with_error_code(code(error))
}
