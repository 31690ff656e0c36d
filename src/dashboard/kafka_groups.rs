//! `GET /api/v1/kafka/groups`: the Kafka consumer groups this broker
//! coordinates, with their state and members. Their committed offsets and
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
    let mut groups = state.broker.groups.list();
    groups.sort_by(|a, b| a.0.cmp(&b.0));
    let count = groups.len();
    let listed: Vec<Value> = groups
        .into_iter()
        .take(MAX_GROUPS)
        .map(|(name, g)| {
            let members: Vec<Value> = g
                .members
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
                "state": g.state.name(),
                "protocolType": g.protocol_type,
                "protocol": g.protocol,
                "members": members,
            })
        })
        .collect();
    Json(json!({ "groups": listed, "total": count }))
}
