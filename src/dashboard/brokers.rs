//! `GET /api/v1/brokers`: the brokers sharing the database that sent a
//! heartbeat lately, as Kafka clients of the first listener reach them.

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use super::DashboardState;
use crate::http::ApiError;

/// The live brokers, this one marked `self`.
pub(super) async fn list(State(state): State<DashboardState>) -> Result<Json<Value>, ApiError> {
    let broker = &state.broker;
    let listener = &broker.config.primary_listener().name;
    let brokers: Vec<Value> = broker
        .live_brokers(listener)
        .await?
        .iter()
        .map(|b| {
            json!({
                "id": b.id,
                "host": b.host,
                "port": b.port,
                "self": b.id == broker.node_id,
            })
        })
        .collect();
    Ok(Json(json!({
        "nodeId": broker.node_id,
        "clusterId": broker.cluster_id,
        "brokers": brokers,
    })))
}
