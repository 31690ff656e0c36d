//! The consumer-group endpoints (3.10): list, lagging, describe, delete,
//! seek, subscription, and `POST /api/v1/stats/refresh`.
//!
//! Positions come from the same store Kafka consumer groups commit to; lag
//! is counted from them, time lag from the oldest message not yet consumed.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::Json;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{json, Value};
use storage::{Access, AclOperation, GroupPosition, ResourceType};

use super::authorize::{self, Allowed};
use super::body::{JsonBody, QueryParams};
use super::error::ApiError;
use super::lenient::{Loose, Object};
use super::render::{parse_timestamp, timestamp};
use super::AppState;

/// The lagging threshold when the request names none, in seconds.
const DEFAULT_MIN_LAG_SECONDS: i64 = 3600;

fn time_lag_seconds(p: &GroupPosition, now: i64) -> i64 {
    p.oldest_pending_at_ms
        .map_or(0, |at| ((now - at) / 1000).max(0))
}

/// Whether a listing shows `group`'s position on `queue`: the group as
/// Kafka's ListGroups shows it, the queue as its Metadata does.
fn listed(access: &Access, group: &str, queue: &str) -> bool {
    authorize::may_list_group(access, group) && access.topic(AclOperation::Describe, queue)
}

/// `GET /api/v1/consumer-groups`: one entry per group and queue the
/// caller may describe.
pub(super) async fn list(
    State(state): State<AppState>,
    Allowed(access): Allowed,
) -> Result<Json<Value>, ApiError> {
    let now = state.engine.clock().now_ms();
    let mut positions = state.engine.consumer_positions(None, None).await?;
    let mut subscriptions = state.engine.subscriptions(None).await?;
    positions.retain(|p| listed(&access, &p.group, &p.queue));
    subscriptions.retain(|s| listed(&access, &s.group, &s.queue));
    let mut entries: BTreeMap<(String, String), Vec<&GroupPosition>> = BTreeMap::new();
    for p in &positions {
        entries
            .entry((p.group.clone(), p.queue.clone()))
            .or_default()
            .push(p);
    }
    for s in &subscriptions {
        entries
            .entry((s.group.clone(), s.queue.clone()))
            .or_default();
    }
    let list: Vec<Value> = entries
        .iter()
        .map(|((group, queue), ps)| {
            let sub = subscriptions
                .iter()
                .find(|s| &s.group == group && &s.queue == queue);
            let total_lag: i64 = ps.iter().map(|p| p.lag()).sum();
            json!({
                "name": group,
                "topics": [queue],
                "queueName": queue,
                "members": ps.iter().filter(|p| p.lease_expires_at_ms.is_some()).count(),
                "partitionsWithLag": ps.iter().filter(|p| p.lag() > 0).count(),
                "totalLag": total_lag,
                "maxTimeLag": ps.iter().map(|p| time_lag_seconds(p, now)).max().unwrap_or(0),
                "state": if total_lag > 0 { "Lagging" } else { "Stable" },
                "subscriptionMode": sub.map_or("all", |s| s.mode.as_str()),
                "subscriptionTimestamp": sub.and_then(|s| s.start_at_ms).map(timestamp),
                "subscriptionCreatedAt": sub.map(|s| timestamp(s.created_at_ms)),
            })
        })
        .collect();
    Ok(Json(Value::Array(list)))
}

/// The query of `lagging`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct LaggingQuery {
    min_lag_seconds: Option<String>,
}

/// `GET /api/v1/consumer-groups/lagging?minLagSeconds=N`.
pub(super) async fn lagging(
    State(state): State<AppState>,
    Allowed(access): Allowed,
    QueryParams(query): QueryParams<LaggingQuery>,
) -> Result<Json<Value>, ApiError> {
    let min = match query.min_lag_seconds.filter(|v| !v.is_empty()) {
        None => DEFAULT_MIN_LAG_SECONDS,
        Some(v) => v
            .parse::<i64>()
            .map_err(|_| ApiError::BadRequest("minLagSeconds must be an integer".into()))?,
    };
    let now = state.engine.clock().now_ms();
    let list: Vec<Value> = state
        .engine
        .consumer_positions(None, None)
        .await?
        .iter()
        .filter(|p| p.lag() > 0 && p.oldest_pending_at_ms.is_some())
        .filter(|p| listed(&access, &p.group, &p.queue))
        .filter(|p| time_lag_seconds(p, now) >= min)
        .map(|p| {
            let lag = time_lag_seconds(p, now);
            json!({
                "consumer_group": p.group,
                "queue_name": p.queue,
                "partition_name": p.partition,
                "partition_id": p.partition_id.to_string(),
                "worker_id": Value::Null,
                "offset_lag": p.lag(),
                "time_lag_seconds": lag,
                "lag_hours": lag as f64 / 3600.0,
                "oldest_unconsumed_at": p.oldest_pending_at_ms.map(timestamp),
                "last_consumed_at": timestamp(p.updated_at_ms),
            })
        })
        .collect();
    Ok(Json(Value::Array(list)))
}

/// `GET /api/v1/consumer-groups/{group}`: its partitions per queue
/// (DESCRIBE on the group; the queues the caller may describe, as Kafka's
/// OffsetFetch).
pub(super) async fn describe(
    State(state): State<AppState>,
    Allowed(access): Allowed,
    Path(group): Path<String>,
) -> Result<Json<Value>, ApiError> {
    authorize::require(&access, AclOperation::Describe, ResourceType::Group, &group)?;
    let now = state.engine.clock().now_ms();
    let mut queues = serde_json::Map::new();
    for p in state.engine.consumer_positions(Some(&group), None).await? {
        if !access.topic(AclOperation::Describe, &p.queue) {
            continue;
        }
        let entry = queues
            .entry(p.queue.clone())
            .or_insert_with(|| json!({"partitions": []}));
        if let Some(Value::Array(list)) = entry.get_mut("partitions") {
            list.push(json!({
                "partition": p.partition,
                "partitionId": p.partition_id.to_string(),
                "workerId": Value::Null,
                "lastConsumedAt": timestamp(p.updated_at_ms),
                "totalConsumed": (p.committed_offset - p.log_start).max(0),
                "committedOffset": p.committed_offset,
                "offsetLag": p.lag(),
                "timeLagSeconds": time_lag_seconds(&p, now),
                "leaseActive": p.lease_expires_at_ms.is_some(),
            }));
        }
    }
    Ok(Json(Value::Object(queues)))
}

/// The query of the deletes: metadata goes too unless `deleteMetadata=false`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DeleteQuery {
    delete_metadata: Option<String>,
}

impl DeleteQuery {
    fn metadata(&self) -> bool {
        self.delete_metadata
            .as_ref()
            .is_none_or(|v| !v.eq_ignore_ascii_case("false"))
    }
}

/// `DELETE /api/v1/consumer-groups/{group}?deleteMetadata=`: DELETE on
/// the group (Kafka's DeleteGroups).
pub(super) async fn delete(
    State(state): State<AppState>,
    Allowed(access): Allowed,
    Path(group): Path<String>,
    QueryParams(query): QueryParams<DeleteQuery>,
) -> Result<Json<Value>, ApiError> {
    authorize::require(&access, AclOperation::Delete, ResourceType::Group, &group)?;
    let metadata = query.metadata();
    let deleted = state
        .engine
        .delete_consumer_group(&group, None, metadata)
        .await?;
    Ok(Json(json!({
        "success": true,
        "consumerGroup": group,
        "deletedPartitions": deleted,
        "metadataDeleted": metadata,
    })))
}

/// `DELETE /api/v1/consumer-groups/{group}/queues/{queue}?deleteMetadata=`:
/// DELETE on the group and READ on the queue (Kafka's OffsetDelete).
pub(super) async fn delete_for_queue(
    State(state): State<AppState>,
    Allowed(access): Allowed,
    Path((group, queue)): Path<(String, String)>,
    QueryParams(query): QueryParams<DeleteQuery>,
) -> Result<Json<Value>, ApiError> {
    authorize::require(&access, AclOperation::Delete, ResourceType::Group, &group)?;
    authorize::require_queue(&access, AclOperation::Read, &queue)?;
    let metadata = query.metadata();
    let deleted = state
        .engine
        .delete_consumer_group(&group, Some(&queue), metadata)
        .await?;
    Ok(Json(json!({
        "success": true,
        "consumerGroup": group,
        "queueName": queue,
        "deletedPartitions": deleted,
        "metadataDeleted": metadata,
    })))
}

/// The seek body: `toEnd: true`, or a `timestamp`, or nothing at all.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct SeekBody {
    to_end: Loose<bool>,
    timestamp: Loose<String>,
    /// Any other key, kept only so that `{"x": 1}` does not read as `{}`.
    #[serde(flatten)]
    others: BTreeMap<String, IgnoredAny>,
}

/// `POST /api/v1/consumer-groups/{group}/queues/{queue}/seek`: to the end
/// (also when the body is empty) or to a timestamp. READ on the group and
/// the queue, as a Kafka offset commit.
pub(super) async fn seek(
    State(state): State<AppState>,
    Allowed(access): Allowed,
    Path((group, queue)): Path<(String, String)>,
    JsonBody(body): JsonBody<Loose<Object<SeekBody>>>,
) -> Result<Json<Value>, ApiError> {
    authorize::require(&access, AclOperation::Read, ResourceType::Group, &group)?;
    authorize::require_queue(&access, AclOperation::Read, &queue)?;
    let refuse = || {
        ApiError::Unsuccessful(Box::new(ApiError::BadRequest(
            "Must specify toEnd=true or a timestamp".into(),
        )))
    };
    let Some(Object(body)) = body.valid() else {
        return Err(refuse());
    };
    let empty = matches!(
        (&body.to_end, &body.timestamp),
        (Loose::Absent, Loose::Absent)
    ) && body.others.is_empty();
    let at = match body.timestamp.optional() {
        Ok(None) => None,
        Ok(Some(t)) => Some(parse_timestamp(&t).ok_or_else(refuse)?),
        Err(()) => return Err(refuse()),
    };
    let target = match (body.to_end.valid(), at) {
        (Some(true), _) => None,
        (_, Some(ms)) => Some(ms),
        (None, None) if empty => None,
        _ => return Err(refuse()),
    };
    let Some(updated) = state.engine.seek(&group, &queue, target).await? else {
        return Err(ApiError::Unsuccessful(Box::new(ApiError::QueueNotFound)));
    };
    Ok(Json(json!({
        "success": true,
        "consumerGroup": group,
        "queueName": queue,
        "seekToEnd": target.is_none(),
        "targetTimestamp": target.map(timestamp),
        "partitionsUpdated": updated,
    })))
}

/// The subscription body.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct SubscriptionBody {
    subscription_timestamp: Loose<String>,
}

/// `POST /api/v1/consumer-groups/{group}/subscription`: rewrites the
/// subscription start of the group, on every queue it is subscribed to:
/// READ on the group and on each of them.
pub(super) async fn subscription(
    State(state): State<AppState>,
    Allowed(access): Allowed,
    Path(group): Path<String>,
    JsonBody(body): JsonBody<Loose<Object<SubscriptionBody>>>,
) -> Result<Json<Value>, ApiError> {
    authorize::require(&access, AclOperation::Read, ResourceType::Group, &group)?;
    if !access.unrestricted() {
        for s in state.engine.subscriptions(Some(&group)).await? {
            authorize::require_queue(&access, AclOperation::Read, &s.queue)?;
        }
    }
    let Some(text) = body
        .valid()
        .and_then(|Object(b)| b.subscription_timestamp.valid())
    else {
        return Err(ApiError::BadRequest(
            "subscriptionTimestamp is required".into(),
        ));
    };
    let at = parse_timestamp(&text).ok_or_else(|| {
        ApiError::BadRequest("subscriptionTimestamp must be an ISO-8601 timestamp".into())
    })?;
    let rows = state.engine.set_subscription_start(&group, at).await?;
    Ok(Json(json!({
        "success": true,
        "consumerGroup": group,
        "newTimestamp": timestamp(at),
        "rowsUpdated": rows,
    })))
}

/// `POST /api/v1/stats/refresh`: lag and depth are computed on read, so
/// there is nothing to refresh; DESCRIBE on the cluster all the same, as
/// the routes about every queue.
pub(super) async fn refresh_stats(Allowed(access): Allowed) -> Result<Json<Value>, ApiError> {
    authorize::require_cluster(&access, AclOperation::Describe)?;
    Ok(Json(json!({"success": true})))
}
