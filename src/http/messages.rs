//! `GET /api/v1/messages/{partitionId}/{transactionId}` (3.12): one
//! message with its state.

use axum::extract::{Path, State};
use axum::Json;
use serde_json::{json, Map, Value};
use storage::{AclOperation, MessageState, PartitionId};

use super::authorize::{self, Allowed};
use super::content::insert_content;
use super::error::ApiError;
use super::render::timestamp;
use super::AppState;

/// Looks a message up by partition id (as pops render it) and transaction id.
pub(super) async fn get(
    State(state): State<AppState>,
    Allowed(access): Allowed,
    Path((partition_id, transaction_id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let Ok(id) = partition_id.parse::<PartitionId>() else {
        return Err(ApiError::MessageNotFound);
    };
    if !access.unrestricted() {
        // The message is the queue's: READ on it, checked before the read.
        let Some(queue) = state.engine.partition_queue(id).await? else {
            return Err(ApiError::MessageNotFound);
        };
        authorize::require_queue(&access, AclOperation::Read, &queue)?;
    }
    let Some(m) = state.engine.message(id, &transaction_id).await? else {
        return Err(ApiError::MessageNotFound);
    };
    let (namespace, task) = match state.engine.queue(&m.queue).await? {
        Some(q) => (q.options.namespace, q.options.task),
        None => (String::new(), String::new()),
    };
    let mut out = Map::new();
    out.insert("id".into(), json!(m.record.message_id.to_string()));
    out.insert("transactionId".into(), json!(m.record.transaction_id()));
    out.insert("partitionId".into(), json!(partition_id));
    out.insert("queue".into(), json!(m.queue));
    out.insert("partition".into(), json!(m.partition));
    out.insert("namespace".into(), json!(namespace));
    out.insert("task".into(), json!(task));
    out.insert("offset".into(), json!(m.offset));
    out.insert(
        "status".into(),
        json!(match m.state {
            MessageState::Pending => "pending",
            MessageState::Processing => "processing",
            MessageState::Completed => "completed",
            MessageState::DeadLetter => "dead_letter",
        }),
    );
    insert_content(&mut out, "payload", &m.record.content);
    out.insert(
        "traceId".into(),
        json!(m.record.trace_id.map(|t| t.to_string())),
    );
    out.insert("producerSub".into(), json!(m.record.producer_sub));
    out.insert("createdAt".into(), json!(timestamp(m.created_at_ms)));
    out.insert("errorMessage".into(), json!(m.error_message));
    out.insert("retryCount".into(), json!(m.retry_count));
    out.insert(
        "leaseExpiresAt".into(),
        json!(m.lease_expires_at_ms.map(timestamp)),
    );
    Ok(Json(Value::Object(out)))
}
