//! `GET /api/v1/throughput`: this broker's traffic over the last 15
//! minutes, one point per interval, per door.

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use super::history::{INTERVAL, WINDOW};
use super::DashboardState;

/// The samples kept (at most one window's: bounded work), oldest first.
pub(super) async fn history(State(state): State<DashboardState>) -> Json<Value> {
    Json(json!({
        "intervalSeconds": INTERVAL.as_secs(),
        "windowSeconds": WINDOW.as_secs(),
        "samples": state.history.samples(),
    }))
}
