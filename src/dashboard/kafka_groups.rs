//! `GET /api/v1/kafka/groups`: the Kafka consumer groups this broker
//! coordinates (classic and KIP-848 ones, told apart by `type`), with their
//! state and members. Their committed offsets and
//! lag are the same positions `GET /api/v1/consumer-groups` lists; only
//! membership lives in the coordinator's memory.

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use super::DashboardState;

/// The most groups answered: one answer stays small whatever the number
/// of groups (the count says how many there are).
const MAX_GROUPS: usize = 1_000;

/// Every group with members (or recently emptied), by name.
pub(super) async fn list(State(state): State<DashboardState>) -> Json<Value> {
    let classic = state.broker.groups.list().into_iter().map(|(name, g)| {
        let kind = ("classic", g.state.name(), g.protocol_type, g.protocol);
        (name, kind, g.members)
    });
    let consumer = state.broker.groups.consumer_groups().into_iter().map(|g| {
        let kind = ("consumer", g.state, "consumer".to_owned(), g.assignor);
        (g.name, kind, g.members)
    });
    let mut groups: Vec<_> = classic.chain(consumer).collect();
    groups.sort_by(|a, b| a.0.cmp(&b.0));
    let count = groups.len();
    let listed: Vec<Value> = groups
        .into_iter()
        .take(MAX_GROUPS)
        .map(
            |(name, (kind, group_state, protocol_type, protocol), members)| {
                let members: Vec<Value> = members
                    .iter()
                    .map(|m| {
                        json!({
                            "memberId": m.member_id,
                            "instanceId": m.instance_id,
                            "clientId": m.client_id,
                            "clientHost": m.client_host,
                        })
                    })
                    .collect();
                json!({
                    "name": name,
                    "type": kind,
                    "state": group_state,
                    "protocolType": protocol_type,
                    "protocol": protocol,
                    "members": members,
                })
            },
        )
        .collect();
    Json(json!({ "groups": listed, "total": count }))
}
