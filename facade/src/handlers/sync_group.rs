//! SyncGroup: the leader hands in the assignment of the generation and
//! every member gets its own part (waiting for the leader when it must).

use kafka_protocol::messages::{SyncGroupRequest, SyncGroupResponse};
use kafka_protocol::protocol::StrBytes;
use storage::Access;

use crate::broker::Broker;
use crate::error::code;

/// Answers the member's assignment of the generation.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: SyncGroupRequest,
    access: &Access,
) -> SyncGroupResponse {
    let group = request.group_id.to_string();
    if let Some(error) = broker.member_error(access, &group).await {
        return SyncGroupResponse::default().with_error_code(error.code());
    }
    let assignments = request
        .assignments
        .into_iter()
        .map(|a| (a.member_id.to_string(), a.assignment))
        .collect();
    let answer = broker
        .groups
        .sync(
            &group,
            request.generation_id,
            &request.member_id,
            request.group_instance_id.as_deref(),
            (
                request.protocol_type.as_deref(),
                request.protocol_name.as_deref(),
            ),
            assignments,
        )
        .await;
    SyncGroupResponse::default()
        .with_error_code(code(answer.error))
        .with_protocol_type(answer.protocol_type.map(StrBytes::from_string))
        .with_protocol_name(answer.protocol.map(StrBytes::from_string))
        .with_assignment(answer.assignment)
}
