//! `POST /api/v1/push`: append messages, with exact per-partition dedup,
//! from a JSON body or the binary one of spec 4.2 (decoded in `binary`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use storage::{Content, PushItem, PushStatus, Record, DEFAULT_PARTITION};
use telemetry::{Door, TRAFFIC};
use uuid::Uuid;

use super::auth::{producer_sub, Caller};
use super::authorize::{self, Allowed};
use super::binary;
use super::body::BinaryOrJson;
use super::error::ApiError;
use super::render::compact_json;
use super::reserved;
use super::AppState;

/// The JSON push body.
#[derive(Debug, Deserialize)]
pub(super) struct PushBody {
    items: Option<Vec<PushItemBody>>,
}

/// One item of a push, as clients send it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PushItemBody {
    queue: Option<String>,
    partition: Option<String>,
    payload: Option<Box<RawValue>>,
    transaction_id: Option<String>,
    trace_id: Option<String>,
}

/// The answer for one item, in request order.
#[derive(Debug, Serialize)]
pub(super) struct PushAnswer {
    index: usize,
    message_id: Uuid,
    transaction_id: String,
    #[serde(rename = "queueName")]
    queue_name: String,
    #[serde(rename = "partitionId")]
    partition_id: String,
    status: &'static str,
    offset: i64,
}

/// The counts-only answer of a binary push with flag 2.
#[derive(Debug, Serialize)]
pub(super) struct PushCounts {
    count: usize,
    queued: usize,
    duplicate: usize,
    error: usize,
}

/// Appends the items of a JSON or binary (4.2) body, stamped with the
/// caller's subject; answers 201 with one element per item (or, for a
/// binary body with flag 2, the counts). Every queue is checked before
/// anything is written: one refused queue refuses the whole push.
pub(super) async fn push(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    Allowed(access): Allowed,
    body: BinaryOrJson<PushBody>,
) -> Result<Response, ApiError> {
    let producer_sub = producer_sub(&caller);
    let (mut items, counts) = match body {
        BinaryOrJson::Json(body) => (json_items(body)?, false),
        BinaryOrJson::Binary(bytes) => {
            let push = binary::push::decode_push(&bytes, state.max_body_bytes)?;
            (push.items, push.counts)
        }
    };
    for item in &mut items {
        item.record.producer_sub.clone_from(&producer_sub);
    }
    let bytes = items
        .iter()
        .map(|item| match &item.record.content {
            Content::Json(data) => data.len(),
            Content::Kafka(_) => 0,
        })
        .sum();
    let queues: Vec<String> = items.iter().map(|i| i.queue.clone()).collect();
    reserved::refuse(queues.iter().map(String::as_str))?;
    authorize::require_push(&state, &access, &queues).await?;
    let outcomes = state.engine.push(items).await?;
    received(bytes, outcomes.len());
    if counts {
        let duplicate = outcomes
            .iter()
            .filter(|o| o.status == PushStatus::Duplicate)
            .count();
        let answer = PushCounts {
            count: outcomes.len(),
            queued: outcomes.len() - duplicate,
            duplicate,
            error: 0,
        };
        return Ok((StatusCode::CREATED, Json(answer)).into_response());
    }
    let answers: Vec<PushAnswer> = outcomes
        .into_iter()
        .zip(queues)
        .enumerate()
        .map(|(index, (o, queue_name))| PushAnswer {
            index,
            message_id: o.message_id,
            transaction_id: o.transaction_id,
            queue_name,
            partition_id: o.partition_id.to_string(),
            status: match o.status {
                PushStatus::Queued => "queued",
                PushStatus::Duplicate => "duplicate",
            },
            offset: o.offset,
        })
        .collect();
    Ok((StatusCode::CREATED, Json(answers)).into_response())
}

/// The items of a JSON body.
fn json_items(body: PushBody) -> Result<Vec<PushItem>, ApiError> {
    body.items
        .ok_or_else(|| ApiError::BadRequest("items array is required".into()))?
        .into_iter()
        .enumerate()
        .map(|(i, item)| to_push_item(i, item))
        .collect()
}

/// Counts an accepted push in the HTTP door's traffic: once per request.
fn received(bytes: usize, records: usize) {
    let traffic = TRAFFIC.door(Door::Http);
    traffic.records_in.inc_by(records as u64);
    traffic.bytes_in.inc_by(bytes as u64);
    traffic.batch_records.observe(records as f64);
    traffic.batch_bytes.observe(bytes as f64);
}

/// One item of a JSON body, without a producer subject (the handler
/// stamps it).
fn to_push_item(index: usize, item: PushItemBody) -> Result<PushItem, ApiError> {
    let queue = item
        .queue
        .ok_or_else(|| ApiError::BadRequest(format!("items[{index}].queue is required")))?;
    let partition = item
        .partition
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| DEFAULT_PARTITION.to_owned());
    let data = item
        .payload
        .map_or_else(|| "null".to_owned(), |raw| compact_json(raw.get()));
    Ok(PushItem {
        queue,
        partition,
        record: Record {
            message_id: storage::new_message_id(),
            transaction_id: item.transaction_id,
            // An unparsable trace id is ignored, as the spec asks, not refused.
            trace_id: item.trace_id.and_then(|t| Uuid::parse_str(&t).ok()),
            producer_sub: None,
            content: Content::Json(data),
        },
    })
}
