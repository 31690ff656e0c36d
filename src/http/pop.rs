//! Pop, on its three routes (3.4):
//! `GET /api/v1/pop/queue/{queue}`, `GET /api/v1/pop/queue/{queue}/partition/{partition}`
//! and `GET /api/v1/pop?namespace=&task=`.
//!
//! An empty pop answers 204 without a body. With `frames=true` the answer
//! is the framed one of spec 4.5 whenever it can carry what the JSON one
//! would (`binary::pop`). With `wait=true` the engine
//! holds the request until a message arrives or `timeout` ms pass, and
//! answers before the timeout.

use std::time::Duration;

use axum::body::HttpBody;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::json;
use serde_json::value::RawValue;
use storage::{
    Access, AclOperation, PopOutcome, PopRequest, PoppedMessage, SubscriptionMode, QUEUE_MODE_GROUP,
};
use telemetry::{Door, TRAFFIC};

use super::authorize::{self, Allowed};
use super::binary;
use super::body::QueryParams;
use super::content::{self, KafkaFields};
use super::error::ApiError;
use super::render::{parse_timestamp, timestamp};
use super::AppState;

/// The batch when the request leaves it to the broker (autopilot).
const DEFAULT_BATCH: usize = 100;

/// The long-poll timeout when the request names none, in ms.
const DEFAULT_TIMEOUT_MS: u64 = 30_000;

/// The longest a pop may wait, in ms.
const MAX_TIMEOUT_MS: u64 = 10 * 60 * 1000;

/// Pops from any partition of a queue.
pub(super) async fn queue(
    State(state): State<AppState>,
    Allowed(access): Allowed,
    Path(queue): Path<String>,
    QueryParams(query): QueryParams<PopQuery>,
) -> Result<Response, ApiError> {
    run(&state, &access, Target::Queue(queue, None), &query).await
}

/// Pops from one partition of a queue.
pub(super) async fn partition(
    State(state): State<AppState>,
    Allowed(access): Allowed,
    Path((queue, partition)): Path<(String, String)>,
    QueryParams(query): QueryParams<PopQuery>,
) -> Result<Response, ApiError> {
    run(
        &state,
        &access,
        Target::Queue(queue, Some(partition)),
        &query,
    )
    .await
}

/// Pops from every queue of a namespace and/or task that the caller may
/// READ.
pub(super) async fn matching(
    State(state): State<AppState>,
    Allowed(access): Allowed,
    QueryParams(query): QueryParams<PopQuery>,
) -> Result<Response, ApiError> {
    run(&state, &access, Target::Matching, &query).await
}

/// The query of a pop, as the client sends it. Flags are true as `true`
/// (any case) or `1`; an empty number is absent.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PopQuery {
    batch: Option<String>,
    partitions: Option<String>,
    timeout: Option<String>,
    lease_seconds: Option<String>,
    consumer_group: Option<String>,
    subscription_from: Option<String>,
    subscription_mode: Option<String>,
    wait: Option<String>,
    auto_ack: Option<String>,
    autopilot: Option<String>,
    conflation: Option<String>,
    namespace: Option<String>,
    task: Option<String>,
    frames: Option<String>,
}

fn flag(value: Option<&str>) -> bool {
    value.is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

fn number(name: &str, value: Option<&str>) -> Result<Option<u64>, ApiError> {
    value
        .filter(|v| !v.is_empty())
        .map(|v| {
            v.parse::<u64>()
                .map_err(|_| ApiError::BadRequest(format!("{name} must be a non-negative integer")))
        })
        .transpose()
}

enum Target {
    Queue(String, Option<String>),
    Matching,
}

/// A popped message as clients read it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MessageJson<'a> {
    id: String,
    transaction_id: String,
    trace_id: Option<String>,
    data: Box<RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data_encoding: Option<&'static str>,
    producer_sub: Option<&'a str>,
    created_at: String,
    partition_id: String,
    partition: &'a str,
    queue: &'a str,
    lease_id: &'a str,
    consumer_group: &'a str,
    delivery_attempt: i64,
    offset: i64,
    retry_count: i64,
    #[serde(flatten)]
    kafka: Option<KafkaFields>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PopJson<'a> {
    success: bool,
    queue: &'a str,
    partition: &'a str,
    partition_id: String,
    lease_id: &'a str,
    consumer_group: &'a str,
    messages: Vec<MessageJson<'a>>,
    partitions_claimed: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    autopilot: Option<serde_json::Value>,
}

async fn run(
    state: &AppState,
    access: &Access,
    target: Target,
    query: &PopQuery,
) -> Result<Response, ApiError> {
    if flag(query.conflation.as_deref()) {
        // Ignoring it would hand a last-value consumer its whole backlog.
        return Err(ApiError::PopRefused(Box::new(ApiError::BadRequest(
            "conflation is not supported by this broker".into(),
        ))));
    }
    let autopilot = flag(query.autopilot.as_deref());
    let batch = number("batch", query.batch.as_deref())?
        .map_or(DEFAULT_BATCH, |b| b as usize)
        .max(1);
    let partitions = number("partitions", query.partitions.as_deref())?
        .map_or(1, |p| p as usize)
        .max(1);
    let timeout_ms = number("timeout", query.timeout.as_deref())?
        .unwrap_or(DEFAULT_TIMEOUT_MS)
        .min(MAX_TIMEOUT_MS);
    let lease_seconds = number("leaseSeconds", query.lease_seconds.as_deref())?
        .map(|s| s.min(i64::MAX as u64) as i64);
    let group = query
        .consumer_group
        .clone()
        .filter(|g| !g.is_empty())
        .unwrap_or_else(|| QUEUE_MODE_GROUP.to_owned());
    let subscription = match query.subscription_from.as_deref().filter(|v| !v.is_empty()) {
        Some(from) if from.eq_ignore_ascii_case("now") => SubscriptionMode::New,
        Some(from) => SubscriptionMode::From(parse_timestamp(from).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "subscriptionFrom must be an ISO-8601 timestamp or now, not {from:?}"
            ))
        })?),
        None => query
            .subscription_mode
            .as_ref()
            .filter(|v| !v.is_empty())
            .map_or(state.default_subscription, |m| {
                SubscriptionMode::from_name(m)
            }),
    };
    let wait = flag(query.wait.as_deref()).then(|| Duration::from_millis(timeout_ms));
    let auto_ack = flag(query.auto_ack.as_deref());

    let (queue_name, partition) = match &target {
        Target::Queue(q, p) => {
            storage::validate_name("queue name", q)?;
            if let Some(p) = p {
                storage::validate_name("partition name", p)?;
            }
            (q.clone(), p.clone())
        }
        Target::Matching => (String::new(), None),
    };
    authorize::require_consumer_group(access, AclOperation::Read, &group)?;
    if let Target::Queue(..) = target {
        authorize::require_queue(access, AclOperation::Read, &queue_name)?;
    }
    let request = PopRequest {
        queue: queue_name,
        partition,
        group,
        batch,
        max_partitions: partitions,
        lease_seconds,
        auto_ack,
        subscription,
        wait,
    };
    let start = std::time::Instant::now();
    let outcome = match target {
        Target::Queue(..) => state.engine.pop(&request).await?,
        Target::Matching => {
            let namespace = query.namespace.as_deref();
            let task = query.task.as_deref();
            if namespace.is_none_or(str::is_empty) && task.is_none_or(str::is_empty) {
                return Err(ApiError::BadRequest(
                    "a pop without a queue needs namespace or task".into(),
                ));
            }
            state
                .engine
                .pop_matching(namespace, task, &request, access)
                .await?
        }
    };
    let traffic = TRAFFIC.door(Door::Http);
    if request.wait.is_some() {
        traffic.long_poll_seconds.observe_since(start);
    }
    if outcome.messages.is_empty() {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    let echo = autopilot.then(|| json!({"partitions": partitions, "batch": batch, "waitMs": 0}));
    let framed = flag(query.frames.as_deref())
        .then(|| {
            let own = echo.as_ref().map(|e| json!({ "autopilot": e }));
            binary::pop::encode(&outcome, &request.group, own.as_ref())
        })
        .flatten();
    let response = match framed {
        Some(bytes) => ([(header::CONTENT_TYPE, binary::pop::CONTENT_TYPE)], bytes).into_response(),
        // Whenever a frame cannot say what JSON would, the answer is JSON.
        None => Json(render(&outcome, &request.group, echo)).into_response(),
    };
    // The body is complete here: its exact size is known.
    traffic.records_out.inc_by(outcome.messages.len() as u64);
    traffic
        .bytes_out
        .inc_by(response.body().size_hint().exact().unwrap_or(0));
    Ok(response)
}

fn render<'a>(
    outcome: &'a PopOutcome,
    group: &'a str,
    autopilot: Option<serde_json::Value>,
) -> PopJson<'a> {
    let first = &outcome.messages[0];
    PopJson {
        success: true,
        queue: &first.queue,
        partition: &first.partition,
        partition_id: first.partition_id.to_string(),
        lease_id: &outcome.lease_id,
        consumer_group: group,
        messages: outcome.messages.iter().map(|m| message(m, group)).collect(),
        partitions_claimed: outcome.partitions_claimed,
        autopilot,
    }
}

fn message<'a>(m: &'a PoppedMessage, group: &'a str) -> MessageJson<'a> {
    let data = content::data(&m.record.content);
    MessageJson {
        id: m.record.message_id.to_string(),
        transaction_id: m.record.transaction_id(),
        trace_id: m.record.trace_id.map(|t| t.to_string()),
        data: data.json,
        data_encoding: data.encoding,
        producer_sub: m.record.producer_sub.as_deref(),
        created_at: timestamp(m.created_at_ms),
        partition_id: m.partition_id.to_string(),
        partition: &m.partition,
        queue: &m.queue,
        lease_id: &m.lease_id,
        consumer_group: group,
        delivery_attempt: m.delivery_attempt,
        offset: m.offset,
        retry_count: m.retry_count,
        kafka: content::kafka_fields(&m.record.content),
    }
}
