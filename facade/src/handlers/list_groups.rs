//! ListGroups: the groups this broker coordinates, with members or with
//! committed offsets only (those are `Empty`, native consumer groups
//! included), filtered by state (v4+) and type (v5+): KIP-848 groups are of
//! type `consumer` (protocol type `consumer`), KIP-932 share groups of type
//! `share` (protocol type `share`), the others `classic`.

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
    // (id, state, protocol type, group type)
    let mut listed: Vec<(String, &'static str, String, &'static str)> = broker
        .groups
        .list()
        .into_iter()
        .map(|(id, g)| (id, g.state.name(), g.protocol_type, "classic"))
        .collect();
    listed.extend(
        broker
            .groups
            .consumer
            .list()
            .into_iter()
            .map(|(id, state)| (id, state.name(), "consumer".to_owned(), "consumer")),
    );
    listed.extend(
        broker
            .groups
            .share
            .list()
            .into_iter()
            .map(|(id, state)| (id, state.name(), "share".to_owned(), "share")),
    );
    let with_members: HashSet<String> = listed.iter().map(|(id, ..)| id.clone()).collect();
    for name in names {
        if with_members.contains(&name) {
            continue;
        }
        match broker.coordinates(&name).await {
            Ok(true) => listed.push((name, State::Empty.name(), String::new(), "classic")),
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
        .filter(|(id, ..)| everything || access.group(AclOperation::Describe, id))
        .filter(|(_, state, ..)| wanted(&request.states_filter, state))
        .filter(|(.., kind)| wanted(&request.types_filter, kind))
        .map(|(id, state, protocol_type, kind)| {
            ListedGroup::default()
                .with_group_id(GroupId(StrBytes::from_string(id)))
                .with_protocol_type(StrBytes::from_string(protocol_type))
                .with_group_state(StrBytes::from_static_str(state))
                .with_group_type(StrBytes::from_static_str(kind))
        })
        .collect();
    ListGroupsResponse::default().with_groups(groups)
}
