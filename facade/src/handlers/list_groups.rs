//! ListGroups: the groups this broker coordinates, with members or with
//! committed offsets only (those are `Empty`, native consumer groups
//! included), filtered by state (v4+) and type (v5+; all are `classic`).

use std::collections::HashSet;
use storage::{Access, AclOperation};

use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{GroupId, ListGroupsRequest, ListGroupsResponse};
use kafka_protocol::protocol::StrBytes;

use crate::broker::Broker;
use crate::error::storage_code;
use crate::groups::State;

/// Lists the groups coordinated here.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: ListGroupsRequest,
    access: &Access,
) -> ListGroupsResponse {
    let names = match broker.engine.group_names().await {
        Ok(names) => names,
        Err(e) => return ListGroupsResponse::default().with_error_code(storage_code(&e)),
    };
    let mut listed: Vec<(String, State, String)> = broker
        .groups
        .list()
        .into_iter()
        .map(|(id, g)| (id, g.state, g.protocol_type))
        .collect();
    let with_members: HashSet<String> = listed.iter().map(|(id, _, _)| id.clone()).collect();
    for name in names {
        if with_members.contains(&name) {
            continue;
        }
        match broker.coordinates(&name).await {
            Ok(true) => listed.push((name, State::Empty, String::new())),
            Ok(false) => {}
            Err(e) => return ListGroupsResponse::default().with_error_code(storage_code(&e)),
        }
    }
    listed.sort_by(|a, b| a.0.cmp(&b.0));
    let wanted = |filter: &[StrBytes], value: &str| {
        filter.is_empty() || filter.iter().any(|f| f.eq_ignore_ascii_case(value))
    };
    // Only the groups the principal may describe (all of them with
    // DESCRIBE on the cluster), as Kafka lists them.
    let everything = access.cluster(AclOperation::Describe);
    let groups = listed
        .into_iter()
        .filter(|(id, _, _)| everything || access.group(AclOperation::Describe, id))
        .filter(|(_, state, _)| wanted(&request.states_filter, state.name()))
        .filter(|_| wanted(&request.types_filter, "classic"))
        .map(|(id, state, protocol_type)| {
            ListedGroup::default()
                .with_group_id(GroupId(StrBytes::from_string(id)))
                .with_protocol_type(StrBytes::from_string(protocol_type))
                .with_group_state(StrBytes::from_static_str(state.name()))
                .with_group_type(StrBytes::from_static_str("classic"))
        })
        .collect();
    ListGroupsResponse::default().with_groups(groups)
}
