//! `POST /api/v1/ack` and `POST /api/v1/ack/batch` (3.5, 3.6): always 200
//! once the body is valid, one result per acknowledgement, refusals as
//! `success: false` with the spec's error strings.

use std::sync::Arc;

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use storage::{Access, AckItem, AckResult, AckStatus, PartitionId, QUEUE_MODE_GROUP};

use super::authorize::{self, Allowed};
use super::body::JsonBody;
use super::error::ApiError;
use super::lenient::{self, Loose, Object, PartitionIdValue, StatusValue};
use super::AppState;

/// One acknowledgement's answer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct AckJson {
    index: usize,
    transaction_id: String,
    success: bool,
    error: Option<String>,
    lease_released: bool,
    dlq: bool,
    noop: bool,
    queue_name: Option<Arc<str>>,
    partition_name: Option<Arc<str>>,
}

/// The body of `POST /api/v1/ack`: one acknowledgement and its group.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct AckBody {
    consumer_group: Loose<String>,
    #[serde(flatten)]
    item: AckItemBody,
}

/// The body of `POST /api/v1/ack/batch`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct AckBatchBody {
    consumer_group: Loose<String>,
    acknowledgments: Loose<Vec<Loose<Object<AckItemBody>>>>,
}

/// One acknowledgement as clients send it.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct AckItemBody {
    #[serde(deserialize_with = "lenient::text")]
    transaction_id: Option<String>,
    partition_id: Loose<PartitionIdValue>,
    status: Loose<StatusValue>,
    #[serde(deserialize_with = "lenient::stringified")]
    error: Option<String>,
    lease_id: Loose<String>,
}

/// Acknowledges one message.
pub(super) async fn single(
    State(state): State<AppState>,
    Allowed(access): Allowed,
    JsonBody(body): JsonBody<Loose<Object<AckBody>>>,
) -> Result<Json<Vec<AckJson>>, ApiError> {
    let Some(Object(body)) = body.valid() else {
        return Err(ApiError::NotAnObject);
    };
    let group = group(body.consumer_group)?;
    let item = item(body.item, "")?;
    Ok(Json(apply(&state, &access, &group, vec![item]).await?))
}

/// Acknowledges several messages, possibly of several partitions and leases.
pub(super) async fn batch(
    State(state): State<AppState>,
    Allowed(access): Allowed,
    JsonBody(body): JsonBody<Loose<Object<AckBatchBody>>>,
) -> Result<Json<Vec<AckJson>>, ApiError> {
    let Some(Object(body)) = body.valid() else {
        return Err(ApiError::NotAnObject);
    };
    let group = group(body.consumer_group)?;
    let Some(list) = body.acknowledgments.valid() else {
        return Err(ApiError::BadRequest(
            "acknowledgments array is required".into(),
        ));
    };
    let items = list
        .into_iter()
        .enumerate()
        .map(|(i, v)| match v.valid() {
            Some(Object(o)) => item(o, &format!("acknowledgments[{i}].")),
            None => Err(ApiError::BadRequest(format!(
                "acknowledgments[{i}] must be an object"
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Json(apply(&state, &access, &group, items).await?))
}

/// An item as read from the body: the partition id may not parse, which
/// is answered per item rather than refusing the request.
struct Parsed {
    transaction_id: String,
    partition_id: Option<PartitionId>,
    status: AckStatus,
    error: Option<String>,
    lease_id: Option<String>,
}

/// The group named, or the queue-mode group when none (or `""`) is.
fn group(value: Loose<String>) -> Result<String, ApiError> {
    match value.optional() {
        Ok(Some(g)) if !g.is_empty() => Ok(g),
        Ok(_) => Ok(QUEUE_MODE_GROUP.to_owned()),
        Err(()) => Err(ApiError::BadRequest(
            "consumerGroup must be a string".into(),
        )),
    }
}

/// Checks one item; `path` prefixes the field names in errors.
fn item(o: AckItemBody, path: &str) -> Result<Parsed, ApiError> {
    let bad = |message: &str| ApiError::BadRequest(format!("{path}{message}"));
    let transaction_id = o
        .transaction_id
        .ok_or_else(|| bad("transactionId is required"))?;
    let partition_id = match o.partition_id.valid() {
        Some(p) if !p.is_blank() => p.id(),
        _ => return Err(bad("partitionId is required to ensure message uniqueness")),
    };
    let status = match o.status.optional() {
        Ok(s) => s.map_or(AckStatus::Completed, |s| s.status()),
        Err(()) => return Err(bad("status must be a string")),
    };
    let lease_id = match o.lease_id.optional() {
        Ok(l) => l.filter(|l| !l.is_empty()),
        Err(()) => return Err(bad("leaseId must be a string")),
    };
    Ok(Parsed {
        transaction_id,
        partition_id,
        status,
        error: o.error,
        lease_id,
    })
}

/// Acknowledges the items with a partition id, once the caller may READ
/// the group and every queue named: a refusal acknowledges nothing.
async fn apply(
    state: &AppState,
    access: &Access,
    group: &str,
    mut parsed: Vec<Parsed>,
) -> Result<Vec<AckJson>, ApiError> {
    if group.len() > storage::MAX_NAME_BYTES {
        return Err(ApiError::BadRequest("consumerGroup is too long".into()));
    }
    if !access.unrestricted() {
        let acks: Vec<(&str, PartitionId)> = parsed
            .iter()
            .filter_map(|p| p.partition_id.map(|id| (group, id)))
            .collect();
        authorize::require_ack(state, access, &acks).await?;
    }
    // The answer needs only the transaction ids back: the rest moves.
    let valid: Vec<AckItem> = parsed
        .iter_mut()
        .filter_map(|p| {
            p.partition_id.map(|partition_id| AckItem {
                transaction_id: p.transaction_id.clone(),
                partition_id,
                status: p.status,
                error: p.error.take(),
                lease_id: p.lease_id.take(),
            })
        })
        .collect();
    let mut results = state.engine.ack(group, valid).await?.into_iter();
    Ok(parsed
        .into_iter()
        .enumerate()
        .map(|(index, p)| {
            let r = match p.partition_id {
                Some(_) => results.next().unwrap_or_default(),
                None => AckResult::default(),
            };
            let error = match (p.partition_id, &r.refusal) {
                (None, _) => Some("partitionId is not a partition id".to_owned()),
                (Some(_), Some(refusal)) => Some(refusal.to_string()),
                (Some(_), None) => None,
            };
            AckJson {
                index,
                transaction_id: p.transaction_id,
                success: error.is_none(),
                error,
                lease_released: r.lease_released,
                dlq: r.dlq,
                noop: r.noop,
                queue_name: r.queue,
                partition_name: r.partition,
            }
        })
        .collect())
}
