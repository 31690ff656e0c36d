//! `GET /api/v1/dlq` (3.13): a queue's dead letters, newest first, with
//! `total`, `limit` and `offset`.

use axum::extract::State;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use storage::{AclOperation, DeadLetterQuery, ResourceType};

use super::authorize::{self, Allowed};
use super::body::QueryParams;
use super::content::insert_content;
use super::error::ApiError;
use super::render::{parse_timestamp, timestamp};
use super::AppState;

/// The page size when the request names none.
const DEFAULT_LIMIT: i64 = 100;

/// The largest page.
const MAX_LIMIT: i64 = 10_000;

/// The query of the list; an empty value is absent.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DlqQuery {
    queue: Option<String>,
    consumer_group: Option<String>,
    partition: Option<String>,
    from: Option<String>,
    to: Option<String>,
    limit: Option<String>,
    offset: Option<String>,
}

/// Lists dead letters of `queue`, optionally of one group or partition,
/// filed between `from` and `to`.
pub(super) async fn list(
    State(state): State<AppState>,
    Allowed(access): Allowed,
    QueryParams(query): QueryParams<DlqQuery>,
) -> Result<Json<Value>, ApiError> {
    let given = |v: Option<String>| v.filter(|v| !v.is_empty());
    let Some(queue) = given(query.queue) else {
        return Err(ApiError::BadRequest("queue is required".into()));
    };
    let int = |name: &str, value: Option<String>, default: i64| -> Result<i64, ApiError> {
        match given(value) {
            None => Ok(default),
            Some(v) => v.parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(|| {
                ApiError::BadRequest(format!("{name} must be a non-negative integer"))
            }),
        }
    };
    let time = |name: &str, value: Option<String>| -> Result<Option<i64>, ApiError> {
        given(value)
            .map(|v| {
                parse_timestamp(&v).ok_or_else(|| {
                    ApiError::BadRequest(format!("{name} must be an ISO-8601 timestamp"))
                })
            })
            .transpose()
    };
    let limit = int("limit", query.limit, DEFAULT_LIMIT)?.clamp(1, MAX_LIMIT);
    let offset = int("offset", query.offset, 0)?;
    let request = DeadLetterQuery {
        queue,
        group: given(query.consumer_group),
        partition: given(query.partition),
        from_ms: time("from", query.from)?,
        to_ms: time("to", query.to)?,
        limit,
        offset,
    };
    // Dead letters hold the messages: READ on the queue; a group named
    // also needs DESCRIBE on it.
    authorize::require_queue(&access, AclOperation::Read, &request.queue)?;
    if let Some(group) = &request.group {
        authorize::require(&access, AclOperation::Describe, ResourceType::Group, group)?;
    }
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
            m.insert("producerSub".into(), json!(d.record.producer_sub));
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
