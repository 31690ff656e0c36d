//! DescribeGroups: state, protocol and members of each group. A group with
//! committed offsets and no members (a Kafka group between runs, or a
//! native consumer group) is `Empty`; an unknown one is `Dead`, as Kafka
//! answers. A KIP-848 consumer group is not a classic group: Kafka 4
//! describes it as `Dead` to these versions (up to 5; v6 would add
//! `GROUP_ID_NOT_FOUND`), and clients use ConsumerGroupDescribe; a KIP-932
//! share group likewise (clients use ShareGroupDescribe).

use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::{DescribeGroupsRequest, DescribeGroupsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::{Access, AclOperation};

use crate::broker::Broker;
use crate::error::storage_code;
use crate::groups::State;

/// Describes each group this broker coordinates.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: DescribeGroupsRequest,
    access: &Access,
) -> DescribeGroupsResponse {
    let asked = request.include_authorized_operations;
    let mut groups = Vec::with_capacity(request.groups.len());
    for id in request.groups {
        if !access.group(AclOperation::Describe, &id) {
            groups.push(
                DescribedGroup::default()
                    .with_group_id(id)
                    .with_error_code(ResponseError::GroupAuthorizationFailed.code()),
            );
            continue;
        }
        let operations = crate::authorized::group(asked, access, &id);
        let mut described = describe(broker, id).await;
        if described.error_code == 0 {
            described.authorized_operations = operations;
        }
        groups.push(described);
    }
    DescribeGroupsResponse::default().with_groups(groups)
}

async fn describe(broker: &Broker, id: kafka_protocol::messages::GroupId) -> DescribedGroup {
    let name = id.to_string();
    let described = DescribedGroup::default().with_group_id(id);
    if let Some(error) = broker.group_error(&name).await {
        return described.with_error_code(error.code());
    }
    if broker.groups.consumer.knows(&name) || broker.groups.share.knows(&name) {
        return described.with_group_state(StrBytes::from_static_str("Dead"));
    }
    if let Some(group) = broker.groups.describe(&name) {
        let members = group
            .members
            .into_iter()
            .map(|m| {
                DescribedGroupMember::default()
                    .with_member_id(StrBytes::from_string(m.member_id))
                    .with_group_instance_id(m.instance_id.map(StrBytes::from_string))
                    .with_client_id(StrBytes::from_string(m.client_id))
                    .with_client_host(StrBytes::from_string(m.client_host))
                    .with_member_metadata(m.metadata)
                    .with_member_assignment(m.assignment)
            })
            .collect();
        return described
            .with_group_state(StrBytes::from_static_str(group.state.name()))
            .with_protocol_type(StrBytes::from_string(group.protocol_type))
            .with_protocol_data(StrBytes::from_string(group.protocol))
            .with_members(members);
    }
    match broker.engine.committed_offsets(&name).await {
        Ok(offsets) if offsets.is_empty() => {
            described.with_group_state(StrBytes::from_static_str("Dead"))
        }
        Ok(_) => described.with_group_state(StrBytes::from_static_str(State::Empty.name())),
        Err(e) => described.with_error_code(storage_code(&e)),
    }
}
