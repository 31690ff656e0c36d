//! `POST /api/v1/transaction` (3.8): acks, pushes and KV ops applied all
//! together or not at all. Every verdict, including an invalid bundle, is
//! 200 with `success`; only a body that is not JSON is 400.

use axum::extract::State;
use axum::Json;
use serde_json::{json, Map, Value};
use storage::{
    AckItem, AckStatus, Content, PushItem, PushStatus, Record, StorageError, TxnOp, TxnOpResult,
    TxnOutcome, TxnRequest, TxnRollback, DEFAULT_PARTITION, QUEUE_MODE_GROUP,
};
use uuid::Uuid;

use super::body::JsonBody;
use super::error::ApiError;
use super::kv::{parse_ops, precondition_json, result_json};
use super::AppState;

/// What the parser keeps beside each operation, for its result.
enum Echo {
    Ack { transaction_id: String },
    Push { queue: String },
}

/// Runs a transaction and answers its verdict.
pub async fn transaction(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<Value>,
) -> Result<Json<Value>, ApiError> {
    let id = storage::new_message_id();
    let (request, echoes, kv_names) = match parse(body) {
        Ok(parsed) => parsed,
        Err(error) => return Ok(Json(bad_request(id, &error))),
    };
    let outcome = match state.engine.transaction(request).await {
        Ok(outcome) => outcome,
        Err(
            e @ (StorageError::InvalidInput(_)
            | StorageError::NameTooLong { .. }
            | StorageError::KvBadRequest { .. }
            | StorageError::KvValueTooLarge { .. }),
        ) => return Ok(Json(bad_request(id, &e.to_string()))),
        Err(e) => return Err(e.into()),
    };
    Ok(Json(match outcome {
        TxnOutcome::Committed { operations, kv } => {
            let mut results = Vec::with_capacity(operations.len() + kv.len());
            for (index, (result, echo)) in operations.iter().zip(&echoes).enumerate() {
                results.push(match (result, echo) {
                    (TxnOpResult::Push(o), Echo::Push { queue }) => {
                        let mut r = json!({
                            "index": index, "type": "push", "success": true,
                            "transactionId": o.transaction_id, "messageId": o.message_id,
                            "queueName": queue, "partitionId": o.partition_id.to_string(),
                            "offset": o.offset,
                        });
                        if o.status == PushStatus::Duplicate {
                            r["duplicate"] = Value::Bool(true);
                        }
                        r
                    }
                    (TxnOpResult::Ack(a), Echo::Ack { transaction_id }) => json!({
                        "index": index, "type": "ack", "success": true,
                        "transactionId": transaction_id, "error": null, "dlq": a.dlq,
                    }),
                    _ => {
                        return Err(ApiError::Storage(StorageError::Corrupt(
                            "a transaction result is out of order".into(),
                        )))
                    }
                });
            }
            for (j, (result, name)) in kv.iter().zip(&kv_names).enumerate() {
                let mut r = result_json(operations.len() + j, name, result);
                r.insert("type".into(), json!("kv"));
                r.insert("opIndex".into(), json!(j));
                results.push(Value::Object(r));
            }
            json!({"transactionId": id, "success": true, "results": results})
        }
        TxnOutcome::RolledBack(rollback) => rolled_back(id, &rollback),
    }))
}

fn failure(id: Uuid, reason: &str, error: String) -> Map<String, Value> {
    let mut o = Map::new();
    o.insert("transactionId".into(), json!(id));
    o.insert("success".into(), Value::Bool(false));
    o.insert("reason".into(), json!(reason));
    o.insert("error".into(), json!(error));
    o.insert("results".into(), json!([]));
    o
}

fn bad_request(id: Uuid, error: &str) -> Value {
    Value::Object(failure(id, "bad_request", format!("bad_request: {error}")))
}

fn rolled_back(id: Uuid, rollback: &TxnRollback) -> Value {
    Value::Object(match rollback {
        TxnRollback::Duplicate {
            index,
            queue,
            partition,
            transaction_id,
            offset,
        } => {
            let mut o = failure(
                id,
                "duplicate",
                format!(
                    "duplicate: transactionId {transaction_id:?} (operation {index}) is already \
                     stored in queue {queue:?} partition {partition:?} at offset {offset}; \
                     the transaction rolled back"
                ),
            );
            o.insert("failedIndex".into(), json!(index));
            o
        }
        TxnRollback::RejectedAck {
            index,
            transaction_id,
            detail,
        } => {
            let mut o = failure(
                id,
                "rejected_ack",
                format!(
                    "rejected_ack: the ack of {transaction_id:?} (operation {index}) was \
                     refused: {detail}; the transaction rolled back"
                ),
            );
            o.insert("failedIndex".into(), json!(index));
            o
        }
        TxnRollback::KvPrecondition(failed) => {
            let mut o = failure(
                id,
                "kv_precondition",
                "QKV a required KV precondition failed; the transaction rolled back".into(),
            );
            o.extend(precondition_json(failed));
            o
        }
    })
}

type Parsed = (TxnRequest, Vec<Echo>, Vec<String>);

fn parse(body: Value) -> Result<Parsed, String> {
    let Value::Object(mut body) = body else {
        return Err("the body must be a JSON object".into());
    };
    // Timers are not implemented: a bundle that carries them is refused,
    // never committed without them.
    match body.get("timers") {
        None | Some(Value::Null) => {}
        Some(Value::Array(t)) if t.is_empty() => {}
        Some(_) => return Err("timers are not supported by this broker".into()),
    }
    let list = match body.remove("operations") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => list,
        Some(_) => return Err("operations must be an array".into()),
    };
    let required_leases = match body.remove("requiredLeases") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(l)) => l
            .into_iter()
            .map(|v| match v {
                Value::String(s) => Ok(s),
                _ => Err("requiredLeases must hold strings".to_owned()),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("requiredLeases must be an array".into()),
    };
    let (kv_names, kv) = match body.remove("kv") {
        None | Some(Value::Null) => (Vec::new(), Vec::new()),
        Some(Value::Array(ops)) => parse_ops(&ops).map_err(|e| e.to_string())?,
        Some(_) => return Err("kv must be an array".into()),
    };
    let mut operations = Vec::new();
    let mut echoes = Vec::new();
    for (i, op) in list.iter().enumerate() {
        let Value::Object(o) = op else {
            return Err(format!("operations[{i}] must be an object"));
        };
        match o.get("type").and_then(Value::as_str) {
            Some("ack") => {
                let op = ack(i, o)?;
                if let TxnOp::Ack { item, .. } = &op {
                    echoes.push(Echo::Ack {
                        transaction_id: item.transaction_id.clone(),
                    });
                }
                operations.push(op);
            }
            Some("push") => {
                let items: Vec<&Map<String, Value>> = match o.get("items") {
                    Some(Value::Array(items)) => items
                        .iter()
                        .map(|v| {
                            v.as_object()
                                .ok_or_else(|| format!("operations[{i}].items must hold objects"))
                        })
                        .collect::<Result<_, _>>()?,
                    // A single inline item.
                    None if o.contains_key("queue") => vec![o],
                    _ => return Err(format!("operations[{i}]: a push needs items")),
                };
                for item in items {
                    let item = push(i, item)?;
                    echoes.push(Echo::Push {
                        queue: item.queue.clone(),
                    });
                    operations.push(TxnOp::Push(item));
                }
            }
            Some(other) => {
                return Err(format!(
                    "operations[{i}]: type {other:?} is not an operation (kv and timers ride at the top level)"
                ))
            }
            None => return Err(format!("operations[{i}]: type is required")),
        }
    }
    Ok((
        TxnRequest {
            operations,
            required_leases,
            kv,
        },
        echoes,
        kv_names,
    ))
}

fn text(o: &Map<String, Value>, key: &str) -> Option<String> {
    match o.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

fn ack(i: usize, o: &Map<String, Value>) -> Result<TxnOp, String> {
    let transaction_id = text(o, "transactionId")
        .ok_or_else(|| format!("operations[{i}].transactionId is required"))?;
    let partition_id = match o.get("partitionId") {
        Some(Value::String(p)) => p.trim().parse::<i64>().ok(),
        Some(Value::Number(n)) => n.as_i64(),
        _ => None,
    }
    .ok_or_else(|| format!("operations[{i}].partitionId is not a partition id"))?;
    let status = match o.get("status") {
        Some(Value::String(s)) => AckStatus::parse(s),
        _ => AckStatus::Completed,
    };
    Ok(TxnOp::Ack {
        group: text(o, "consumerGroup").unwrap_or_else(|| QUEUE_MODE_GROUP.to_owned()),
        item: AckItem {
            transaction_id,
            partition_id,
            status,
            error: text(o, "error"),
            lease_id: text(o, "leaseId"),
        },
    })
}

fn push(i: usize, o: &Map<String, Value>) -> Result<PushItem, String> {
    let queue =
        text(o, "queue").ok_or_else(|| format!("operations[{i}]: a pushed item needs a queue"))?;
    let data = o
        .get("payload")
        .map_or_else(|| "null".to_owned(), Value::to_string);
    Ok(PushItem {
        queue,
        partition: text(o, "partition").unwrap_or_else(|| DEFAULT_PARTITION.to_owned()),
        record: Record {
            message_id: storage::new_message_id(),
            transaction_id: text(o, "transactionId"),
            trace_id: text(o, "traceId").and_then(|t| Uuid::parse_str(&t).ok()),
            content: Content::Json(data),
        },
    })
}
