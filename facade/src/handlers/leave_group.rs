//! LeaveGroup: members leave (one before v3, a batch from v3, where an
//! admin may also remove static members by instance id) and the group
//! rebalances without them.

use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{LeaveGroupRequest, LeaveGroupResponse};
use storage::Access;

use crate::broker::Broker;
use crate::error::code;

/// Removes the members; errors are per member from v3.
pub(super) async fn handle(
    broker: &Broker,
    version: i16,
    request: LeaveGroupRequest,
    access: &Access,
) -> LeaveGroupResponse {
    let group = request.group_id.to_string();
    if let Some(error) = broker.member_error(access, &group).await {
        return LeaveGroupResponse::default().with_error_code(error.code());
    }
    if version < 3 {
        let leaving = [(request.member_id.to_string(), None)];
        let error = broker.groups.leave(&group, &leaving).pop().flatten();
        return LeaveGroupResponse::default().with_error_code(code(error));
    }
    let leaving: Vec<(String, Option<String>)> = request
        .members
        .iter()
        .map(|m| {
            (
                m.member_id.to_string(),
                m.group_instance_id.as_ref().map(|i| i.to_string()),
            )
        })
        .collect();
    let errors = broker.groups.leave(&group, &leaving);
    let members = request
        .members
        .into_iter()
        .zip(errors)
        .map(|(m, error)| {
            MemberResponse::default()
                .with_member_id(m.member_id)
                .with_group_instance_id(m.group_instance_id)
                .with_error_code(code(error))
        })
        .collect();
    LeaveGroupResponse::default().with_members(members)
}
