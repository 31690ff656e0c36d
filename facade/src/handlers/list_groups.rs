//! ListGroups: the groups this broker coordinates, with members or with
//! committed offsets only (those are `Empty`, native consumer groups
//! included), filtered by state (v4+) and type (v5+; all are `classic`).

use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{GroupId, ListGroupsRequest, ListGroupsResponse};
use kafka_protocol::protocol::StrBytes;

use crate::broker::Broker;
use crate::error::storage_code;
use crate::groups::State;

/// Lists the groups coordinated here.
pub async fn handle(
    broker: &Broker,
    _version: i16,
    request: ListGroupsRequest,
) -> ListGroupsResponse {
    let (names, brokers) = match (
        broker.engine.group_names().await,
        broker.live_brokers().await,
    ) {
        (Ok(names), Ok(brokers)) => (names, brokers),
        (Err(e), _) | (_, Err(e)) => {
            return ListGroupsResponse::default().with_error_code(storage_code(&e))
        }
    };
    let mut listed: Vec<(String, State, String)> = broker
        .groups
        .list()
        .into_iter()
        .map(|(id, g)| (id, g.state, g.protocol_type))
        .collect();
    for name in names {
        let ours = Broker::coordinator(&brokers, &name).is_some_and(|b| b.id == broker.node_id);
        if ours && !listed.iter().any(|(id, _, _)| *id == name) {
            listed.push((name, State::Empty, String::new()));
        }
    }
    listed.sort_by(|a, b| a.0.cmp(&b.0));
    let wanted = |filter: &[StrBytes], value: &str| {
        filter.is_empty() || filter.iter().any(|f| f.eq_ignore_ascii_case(value))
    };
    let groups = listed
        .into_iter()
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
