//! `POST /api/v1/ack` and `POST /api/v1/ack/batch` (3.5, 3.6): always 200
//! once the body is valid, one result per acknowledgement, refusals as
//! `success: false` with the spec's error strings.

use axum::extract::State;
use axum::Json;
use serde::Serialize;
use serde_json::{Map, Value};
use storage::{AckItem, AckResult, AckStatus, QUEUE_MODE_GROUP};

use super::body::JsonBody;
use super::error::ApiError;
use super::AppState;

/// One acknowledgement's answer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AckJson {
    index: usize,
    transaction_id: String,
    success: bool,
    error: Option<String>,
    lease_released: bool,
    dlq: bool,
    noop: bool,
    queue_name: Option<String>,
    partition_name: Option<String>,
}

/// Acknowledges one message.
pub async fn single(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<Value>,
) -> Result<Json<Vec<AckJson>>, ApiError> {
    let Value::Object(body) = body else {
        return Err(ApiError::BadRequest(
            "the body must be a JSON object".into(),
        ));
    };
    let group = group(body.get("consumerGroup"))?;
    let item = item(&body, "")?;
    Ok(Json(apply(&state, &group, vec![item]).await?))
}

/// Acknowledges several messages, possibly of several partitions and leases.
pub async fn batch(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<Value>,
) -> Result<Json<Vec<AckJson>>, ApiError> {
    let Value::Object(body) = body else {
        return Err(ApiError::BadRequest(
            "the body must be a JSON object".into(),
        ));
    };
    let group = group(body.get("consumerGroup"))?;
    let Some(Value::Array(list)) = body.get("acknowledgments") else {
        return Err(ApiError::BadRequest(
            "acknowledgments array is required".into(),
        ));
    };
    let items = list
        .iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::Object(o) => item(o, &format!("acknowledgments[{i}].")),
            _ => Err(ApiError::BadRequest(format!(
                "acknowledgments[{i}] must be an object"
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Json(apply(&state, &group, items).await?))
}

/// An item as read from the body: the partition id may not parse, which
/// is answered per item rather than refusing the request.
struct Parsed {
    transaction_id: String,
    partition_id: Option<i64>,
    status: AckStatus,
    error: Option<String>,
    lease_id: Option<String>,
}

fn group(value: Option<&Value>) -> Result<String, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(QUEUE_MODE_GROUP.to_owned()),
        Some(Value::String(g)) if g.is_empty() => Ok(QUEUE_MODE_GROUP.to_owned()),
        Some(Value::String(g)) => Ok(g.clone()),
        Some(_) => Err(ApiError::BadRequest(
            "consumerGroup must be a string".into(),
        )),
    }
}

fn item(o: &Map<String, Value>, path: &str) -> Result<Parsed, ApiError> {
    let transaction_id = match o.get("transactionId") {
        Some(Value::String(t)) if !t.is_empty() => t.clone(),
        _ => {
            return Err(ApiError::BadRequest(format!(
                "{path}transactionId is required"
            )))
        }
    };
    let partition_id = match o.get("partitionId") {
        Some(Value::String(p)) if !p.is_empty() => p.trim().parse::<i64>().ok(),
        Some(Value::Number(n)) => n.as_i64(),
        _ => {
            return Err(ApiError::BadRequest(format!(
                "{path}partitionId is required to ensure message uniqueness"
            )))
        }
    };
    let status = match o.get("status") {
        None | Some(Value::Null) => AckStatus::Completed,
        Some(Value::String(s)) => AckStatus::parse(s),
        Some(Value::Bool(true)) => AckStatus::Completed,
        Some(Value::Bool(false)) => AckStatus::Failed,
        Some(_) => {
            return Err(ApiError::BadRequest(format!(
                "{path}status must be a string"
            )))
        }
    };
    let text = |key: &str| -> Result<Option<String>, ApiError> {
        match o.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) if key == "error" => Ok(Some(other.to_string())),
            Some(_) => Err(ApiError::BadRequest(format!(
                "{path}{key} must be a string"
            ))),
        }
    };
    Ok(Parsed {
        transaction_id,
        partition_id,
        status,
        error: text("error")?,
        lease_id: text("leaseId")?,
    })
}

async fn apply(
    state: &AppState,
    group: &str,
    parsed: Vec<Parsed>,
) -> Result<Vec<AckJson>, ApiError> {
    if group.len() > storage::MAX_NAME_BYTES {
        return Err(ApiError::BadRequest("consumerGroup is too long".into()));
    }
    let valid: Vec<AckItem> = parsed
        .iter()
        .filter_map(|p| {
            p.partition_id.map(|partition_id| AckItem {
                transaction_id: p.transaction_id.clone(),
                partition_id,
                status: p.status,
                error: p.error.clone(),
                lease_id: p.lease_id.clone(),
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
