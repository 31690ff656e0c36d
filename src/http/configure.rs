//! `POST /api/v1/configure`: create a queue or replace all its options.

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};
use storage::QueueOptions;

use super::body::JsonBody;
use super::error::ApiError;
use super::queues::options_json;
use super::AppState;

/// Creates the queue or replaces every option (an omitted one takes its default).
pub async fn configure(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<Value>,
) -> Result<Json<Value>, ApiError> {
    let Value::Object(body) = body else {
        return Err(ApiError::BadRequest(
            "the body must be a JSON object".into(),
        ));
    };
    let Some(Value::String(queue)) = body.get("queue") else {
        return Err(ApiError::BadRequest("queue is required".into()));
    };
    // Raw callers may put the options at the top level instead of under `options`.
    let mut options = match body.get("options") {
        Some(Value::Object(o)) => o.clone(),
        None | Some(Value::Null) => body.clone(),
        Some(_) => return Err(ApiError::BadRequest("options must be an object".into())),
    };
    for label in ["namespace", "task"] {
        if let Some(v) = body.get(label).filter(|v| !v.is_null()) {
            options.insert(label.to_owned(), v.clone());
        }
    }
    let options = QueueOptions::from_json(&options).map_err(ApiError::BadRequest)?;
    let info = state.engine.configure_queue(queue, &options).await?;
    Ok(Json(json!({
        "configured": true,
        "queueId": info.id.to_string(),
        "partitionId": Value::Null,
        "queue": info.name,
        "namespace": info.options.namespace,
        "task": info.options.task,
        "options": options_json(&info.options),
    })))
}
