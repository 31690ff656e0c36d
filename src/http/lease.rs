//! `POST /api/v1/lease/{leaseId}/extend` (3.7): renew every live lease
//! held under an id. Always 200; `success: false` when nothing was renewed.

use axum::extract::{Path, State};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use storage::AclOperation;

use super::authorize::{self, Allowed};
use super::body::JsonBody;
use super::error::ApiError;
use super::lenient::{Loose, Object};
use super::render::timestamp;
use super::AppState;

/// How long a renewal extends a lease when the body names no `seconds`.
const DEFAULT_SECONDS: i64 = 60;

/// The renewal body; any JSON that is not an object reads as `{}`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct ExtendBody {
    seconds: Loose<i64>,
}

/// Extends the lease to at least now + `seconds` (default 60), if the
/// caller may READ every queue and group it covers.
pub(super) async fn extend(
    State(state): State<AppState>,
    Allowed(access): Allowed,
    Path(lease_id): Path<String>,
    JsonBody(body): JsonBody<Loose<Object<ExtendBody>>>,
) -> Result<Json<Value>, ApiError> {
    let body = body.valid().map(|Object(b)| b).unwrap_or_default();
    let seconds = match body.seconds.optional() {
        Ok(None) => DEFAULT_SECONDS,
        Ok(Some(s)) if s >= 0 => s,
        _ => {
            return Err(ApiError::BadRequest(
                "seconds must be a non-negative integer".into(),
            ))
        }
    };
    if !access.unrestricted() {
        // The lease names its queues and groups only in the database.
        for (queue, group) in state.engine.lease_holders(&lease_id).await? {
            authorize::require_consumer_group(&access, AclOperation::Read, &group)?;
            authorize::require_queue(&access, AclOperation::Read, &queue)?;
        }
    }
    let e = state.engine.extend_lease(&lease_id, seconds).await?;
    let expires = e.expires_at_ms.map(timestamp);
    let mut answer = json!({
        "leaseId": lease_id,
        "success": e.renewed > 0,
        "renewed": e.renewed,
        "newExpiresAt": expires,
        "expiresAt": expires,
        "lease_expires_at": expires,
    });
    if e.renewed == 0 {
        answer["error"] = json!("lease not found, expired or released");
    }
    Ok(Json(answer))
}
