//! `GET /api/v1/mirror/status` and `POST /api/v1/mirror/{topic}/fence`: the
//! topics `queen mirror` copies from a source cluster, per partition the
//! source's high watermark, the mirrored offset and the lag, each topic's
//! error; and the fence that hands a caught-up topic to local producers.

use axum::extract::{Path, State};
use axum::Json;
use serde_json::{json, Value};
use storage::AclOperation;

use super::authorize::{self, Allowed};
use super::error::ApiError;
use super::AppState;

/// Every mirrored topic the caller may describe, by name.
pub(super) async fn status(
    State(state): State<AppState>,
    Allowed(access): Allowed,
) -> Result<Json<Value>, ApiError> {
    let topics: Vec<_> = state
        .engine
        .mirror_status()
        .await?
        .into_iter()
        .filter(|t| access.topic(AclOperation::Describe, &t.topic))
        .collect();
    Ok(Json(json!({ "topics": topics })))
}

/// Fences `topic` (ALTER on it): 200 once local producers may write, 400
/// with the partitions still behind otherwise.
pub(super) async fn fence(
    State(state): State<AppState>,
    Allowed(access): Allowed,
    Path(topic): Path<String>,
) -> Result<Json<Value>, ApiError> {
    authorize::require_queue(&access, AclOperation::Alter, &topic)?;
    state.engine.fence_mirror(&topic).await?;
    Ok(Json(json!({ "topic": topic, "fenced": true })))
}
