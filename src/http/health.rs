//! `GET /health`: whether this node can serve.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::AppState;

/// 200 when the database answers, 503 otherwise.
pub(super) async fn health(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    let (status, label) = match state.engine.ping().await {
        Ok(()) => (StatusCode::OK, "healthy"),
        Err(e) => {
            tracing::warn!(error = %e, "health check: database unreachable");
            (StatusCode::SERVICE_UNAVAILABLE, "unhealthy")
        }
    };
    let body = json!({
        "status": label,
        "version": env!("CARGO_PKG_VERSION"),
        "database": state.engine.backend(),
    });
    (status, Json(body))
}
