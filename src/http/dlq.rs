//! `GET /api/v1/dlq` (3.13): a queue's dead letters, newest first, with
//! `total`, `limit` and `offset`.

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::Json;
use serde_json::{json, Map, Value};
use storage::DeadLetterQuery;

use super::content::insert_content;
use super::error::ApiError;
use super::render::{parse_timestamp, timestamp};
use super::AppState;

/// The page size when the request names none.
const DEFAULT_LIMIT: i64 = 100;

/// The largest page.
const MAX_LIMIT: i64 = 10_000;

/// Lists dead letters of `queue`, optionally of one group or partition,
/// filed between `from` and `to`.
pub async fn list(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let Some(queue) = query.get("queue").filter(|q| !q.is_empty()) else {
        return Err(ApiError::BadRequest("queue is required".into()));
    };
    let int = |name: &str, default: i64| -> Result<i64, ApiError> {
        match query.get(name).filter(|v| !v.is_empty()) {
            None => Ok(default),
            Some(v) => v.parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(|| {
                ApiError::BadRequest(format!("{name} must be a non-negative integer"))
            }),
        }
    };
    let time = |name: &str| -> Result<Option<i64>, ApiError> {
        query
            .get(name)
            .filter(|v| !v.is_empty())
            .map(|v| {
                parse_timestamp(v).ok_or_else(|| {
                    ApiError::BadRequest(format!("{name} must be an ISO-8601 timestamp"))
                })
            })
            .transpose()
    };
    let limit = int("limit", DEFAULT_LIMIT)?.clamp(1, MAX_LIMIT);
    let offset = int("offset", 0)?;
    let request = DeadLetterQuery {
        queue: queue.clone(),
        group: query
            .get("consumerGroup")
            .filter(|g| !g.is_empty())
            .cloned(),
        partition: query.get("partition").filter(|p| !p.is_empty()).cloned(),
        from_ms: time("from")?,
        to_ms: time("to")?,
        limit,
        offset,
    };
    let page = state.engine.dead_letters(&request).await?;
    let messages: Vec<Value> = page
        .letters
        .iter()
        .map(|d| {
            let mut m = Map::new();
            m.insert("id".into(), json!(d.record.message_id.to_string()));
            m.insert("transactionId".into(), json!(d.record.transaction_id()));
            m.insert("partitionId".into(), json!(d.partition_id.to_string()));
            m.insert("queue".into(), json!(d.queue));
            m.insert("partition".into(), json!(d.partition));
            m.insert("consumerGroup".into(), json!(d.group));
            m.insert("offset".into(), json!(d.offset));
            m.insert("errorMessage".into(), json!(d.error_message));
            m.insert("retryCount".into(), json!(d.retry_count));
            m.insert(
                "traceId".into(),
                json!(d.record.trace_id.map(|t| t.to_string())),
            );
            insert_content(&mut m, "data", &d.record.content);
            m.insert("producerSub".into(), Value::Null);
            m.insert("createdAt".into(), json!(timestamp(d.created_at_ms)));
            m.insert("failedAt".into(), json!(timestamp(d.failed_at_ms)));
            Value::Object(m)
        })
        .collect();
    Ok(Json(json!({
        "messages": messages,
        "total": page.total,
        "limit": limit,
        "offset": offset,
    })))
}
