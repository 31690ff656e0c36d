//! `GET /api/v1/resources/queues[/:queue]`, `GET /api/v1/resources/queues/:queue/depth`
//! and `DELETE /api/v1/resources/queues/:queue`. Counts come from the
//! consumer groups' positions and leases (the slowest group's, unless one is named).

use axum::extract::{Path, State};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use storage::{AclOperation, PartitionDepth, QueueInfo, QueueOptions, ResourceType};

use super::authorize::{self, Allowed};
use super::body::QueryParams;
use super::error::ApiError;
use super::render::timestamp;
use super::AppState;

/// The options as the API echoes them (with `maxQueueSize` beside `maxSize`).
pub(super) fn options_json(options: &QueueOptions) -> Value {
    let mut v = serde_json::to_value(options).unwrap_or_else(|_| json!({}));
    if let Value::Object(map) = &mut v {
        map.remove("namespace");
        map.remove("task");
        map.insert("maxQueueSize".into(), json!(options.max_size));
    }
    v
}

/// Every queue with its counts (for the slowest consumer group).
pub(super) async fn list(
    State(state): State<AppState>,
    Allowed(access): Allowed,
) -> Result<Json<Value>, ApiError> {
    let mut queues = Vec::new();
    // Every queue's counts at once, summed in the engine: a read per queue
    // made the listing grow with the number of queues times their reads,
    // and reading every partition made it grow with the partitions.
    for q in state.engine.summaries().await? {
        // As Kafka's Metadata: only the queues the caller may describe.
        if !access.topic(AclOperation::Describe, &q.name) {
            continue;
        }
        queues.push(json!({
            "id": q.id.to_string(),
            "name": q.name,
            "namespace": q.options.namespace,
            "task": q.options.task,
            "createdAt": timestamp(q.created_at_ms),
            "partitions": q.partitions,
            "messages": {
                "total": q.total,
                "pending": q.pending,
                "processing": q.processing,
            },
            "options": options_json(&q.options),
        }));
    }
    Ok(Json(json!({ "queues": queues })))
}

/// One queue with its partitions and their counts.
pub(super) async fn get(
    State(state): State<AppState>,
    Allowed(access): Allowed,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    authorize::require_queue(&access, AclOperation::Describe, &name)?;
    let (q, depths) = state
        .engine
        .depth(&name, None)
        .await?
        .ok_or(ApiError::QueueNotFound)?;
    Ok(Json(queue_json(&q, &depths)))
}

/// The query of `depth`: the group to count for (empty is none).
#[derive(Debug, Deserialize)]
pub(super) struct DepthQuery {
    group: Option<String>,
}

/// `GET /api/v1/resources/queues/{queue}/depth[?group=]`: messages not yet
/// consumed, per partition, for the group or for the slowest one.
pub(super) async fn depth(
    State(state): State<AppState>,
    Allowed(access): Allowed,
    Path(name): Path<String>,
    QueryParams(query): QueryParams<DepthQuery>,
) -> Result<Json<Value>, ApiError> {
    let group = query.group.filter(|g| !g.is_empty());
    authorize::require_queue(&access, AclOperation::Describe, &name)?;
    if let Some(group) = &group {
        authorize::require(&access, AclOperation::Describe, ResourceType::Group, group)?;
    }
    let (q, depths) = state
        .engine
        .depth(&name, group.as_deref())
        .await?
        .ok_or(ApiError::QueueNotFound)?;
    let pending: i64 = depths.iter().map(|d| d.pending + d.processing).sum();
    let partitions: Vec<Value> = q
        .partitions
        .iter()
        .zip(&depths)
        .map(|(p, d)| json!({"partition": p.name, "pending": d.pending + d.processing}))
        .collect();
    Ok(Json(json!({
        "queue": q.name,
        "group": group,
        "pending": pending,
        "partitionsPending": depths.iter().filter(|d| d.pending + d.processing > 0).count(),
        "conflation": false,
        "effectivePending": pending,
        "partitions": partitions,
    })))
}

/// Deletes a queue and everything in it; 200 whether or not it existed.
pub(super) async fn delete(
    State(state): State<AppState>,
    Allowed(access): Allowed,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    authorize::require_queue(&access, AclOperation::Delete, &name)?;
    let existed = state.engine.delete_queue(&name).await?;
    Ok(Json(
        json!({ "deleted": existed, "existed": existed, "queue": name }),
    ))
}

fn queue_json(q: &QueueInfo, depths: &[PartitionDepth]) -> Value {
    let partitions: Vec<Value> = q
        .partitions
        .iter()
        .zip(depths)
        .map(|(p, d)| {
            json!({
                "id": p.id.to_string(),
                "name": p.name,
                "kafkaIndex": p.kafka_index,
                "createdAt": timestamp(p.created_at_ms),
                "logStartOffset": p.log_start,
                "nextOffset": p.next_offset,
                "stats": counts(std::slice::from_ref(d)),
                "oldestMessage": p.first_created_at_ms.map(timestamp),
                "newestMessage": (d.total > 0).then(|| timestamp(p.last_created_at_ms)),
            })
        })
        .collect();
    json!({
        "id": q.id.to_string(),
        "name": q.name,
        "namespace": q.options.namespace,
        "task": q.options.task,
        "createdAt": timestamp(q.created_at_ms),
        "options": options_json(&q.options),
        "partitions": partitions,
        "totals": counts(depths),
    })
}

/// The counts of some partitions, summed.
fn counts(depths: &[PartitionDepth]) -> Value {
    let sum = |f: fn(&PartitionDepth) -> i64| depths.iter().map(f).sum::<i64>();
    json!({
        "total": sum(|d| d.total),
        "pending": sum(|d| d.pending),
        "processing": sum(|d| d.processing),
        "completed": sum(|d| d.completed),
        "failed": sum(|d| d.failed),
        "deadLetter": sum(|d| d.dead_letter),
    })
}
