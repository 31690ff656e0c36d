//! `GET /api/v1/resources/queues[/:queue]` and `DELETE /api/v1/resources/queues/:queue`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use storage::{PartitionInfo, QueueInfo, QueueOptions};

use super::error::ApiError;
use super::render::timestamp;
use super::AppState;

/// The options as the API echoes them (with `maxQueueSize` beside `maxSize`).
pub fn options_json(options: &QueueOptions) -> Value {
    let mut v = serde_json::to_value(options).unwrap_or_else(|_| json!({}));
    if let Value::Object(map) = &mut v {
        map.remove("namespace");
        map.remove("task");
        map.insert("maxQueueSize".into(), json!(options.max_size));
    }
    v
}

/// Every queue with its counts.
pub async fn list(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let queues: Vec<Value> = state
        .engine
        .queues()
        .await?
        .iter()
        .map(|q| {
            let total: i64 = q.partitions.iter().map(stored).sum();
            json!({
                "id": q.id.to_string(),
                "name": q.name,
                "namespace": q.options.namespace,
                "task": q.options.task,
                "createdAt": timestamp(q.created_at_ms),
                "partitions": q.partitions.len(),
                "messages": { "total": total, "pending": total, "processing": 0 },
                "options": options_json(&q.options),
            })
        })
        .collect();
    Ok(Json(json!({ "queues": queues })))
}

/// One queue with its partitions.
pub async fn get(State(state): State<AppState>, Path(name): Path<String>) -> Response {
    match state.engine.queue(&name).await {
        Ok(Some(q)) => Json(queue_json(&q)).into_response(),
        Ok(None) => (
            StatusCode::NOT_FOUND,
            Json(json!({ "error": "Queue not found", "code": "queue_not_found" })),
        )
            .into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// Deletes a queue and everything in it; 200 whether or not it existed.
pub async fn delete(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let existed = state.engine.delete_queue(&name).await?;
    Ok(Json(
        json!({ "deleted": existed, "existed": existed, "queue": name }),
    ))
}

/// Messages still stored in a partition. Until consumers exist every stored
/// message is pending.
fn stored(p: &PartitionInfo) -> i64 {
    p.next_offset - p.log_start
}

fn queue_json(q: &QueueInfo) -> Value {
    let partitions: Vec<Value> = q
        .partitions
        .iter()
        .map(|p| {
            let total = stored(p);
            json!({
                "id": p.id.to_string(),
                "name": p.name,
                "kafkaIndex": p.kafka_index,
                "createdAt": timestamp(p.created_at_ms),
                "logStartOffset": p.log_start,
                "nextOffset": p.next_offset,
                "stats": counts(total),
                "oldestMessage": p.first_created_at_ms.map(timestamp),
                "newestMessage": (total > 0).then(|| timestamp(p.last_created_at_ms)),
            })
        })
        .collect();
    let total: i64 = q.partitions.iter().map(stored).sum();
    json!({
        "id": q.id.to_string(),
        "name": q.name,
        "namespace": q.options.namespace,
        "task": q.options.task,
        "createdAt": timestamp(q.created_at_ms),
        "options": options_json(&q.options),
        "partitions": partitions,
        "totals": counts(total),
    })
}

fn counts(total: i64) -> Value {
    json!({
        "total": total,
        "pending": total,
        "processing": 0,
        "completed": 0,
        "failed": 0,
        "deadLetter": 0,
    })
}
