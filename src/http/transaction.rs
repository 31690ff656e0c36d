//! `POST /api/v1/transaction` (3.8): acks, pushes and KV ops applied all
//! together or not at all. Every verdict, including an invalid bundle, is
//! 200 with `success`; only a body that is not JSON is 400.

use axum::extract::State;
use axum::{Extension, Json};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use storage::{
    Access, AckItem, AckStatus, Content, PushItem, PushStatus, Record, StorageError, TxnOp,
    TxnOpResult, TxnOutcome, TxnRequest, TxnRollback, DEFAULT_PARTITION, QUEUE_MODE_GROUP,
};
use uuid::Uuid;

use super::auth::{producer_sub, Caller};
use super::authorize::{self, Allowed};
use super::binary;
use super::body::{parse_json, BinaryOrJson};
use super::error::ApiError;
use super::kv::{parse_ops, precondition_json, result_json, KvOps};
use super::lenient::{self, Loose, Object, PartitionIdValue, StatusValue};
use super::reserved;
use super::AppState;

/// A transaction bundle as clients send it. Its shape is checked after
/// parsing, because a bad bundle is a verdict (200), not a 400.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct TxnBody {
    operations: Loose<Vec<Loose<Object<TxnOpBody>>>>,
    required_leases: Loose<Vec<Loose<String>>>,
    kv: Loose<KvOps>,
    timers: Loose<Vec<IgnoredAny>>,
}

/// One operation: an ack, or a push of `items` or of itself as one item.
/// Its text fields count only as non-empty strings.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct TxnOpBody {
    #[serde(rename = "type")]
    kind: Loose<String>,
    #[serde(deserialize_with = "lenient::text")]
    transaction_id: Option<String>,
    partition_id: Loose<PartitionIdValue>,
    status: Loose<StatusValue>,
    #[serde(deserialize_with = "lenient::text")]
    consumer_group: Option<String>,
    #[serde(deserialize_with = "lenient::text")]
    error: Option<String>,
    #[serde(deserialize_with = "lenient::text")]
    lease_id: Option<String>,
    items: Loose<Vec<Loose<Object<TxnPushBody>>>>,
    /// Present (even as `null`) makes the operation its own pushed item.
    queue: Loose<String>,
    /// The rest of that item (its `queue` and `transactionId` are read above).
    #[serde(flatten)]
    inline: TxnPushBody,
}

/// One pushed item.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct TxnPushBody {
    #[serde(deserialize_with = "lenient::text")]
    queue: Option<String>,
    #[serde(deserialize_with = "lenient::text")]
    partition: Option<String>,
    /// The message: any JSON; absent is `null`.
    payload: Option<Value>,
    #[serde(deserialize_with = "lenient::text")]
    transaction_id: Option<String>,
    #[serde(deserialize_with = "lenient::text")]
    trace_id: Option<String>,
}

/// What the parser keeps beside each operation, for its result.
enum Echo {
    Ack { transaction_id: String },
    Push { queue: String },
}

/// Runs a transaction, from a JSON body or the binary one of spec 4.3
/// (its JSON head, then its pushes after the head's operations), and
/// answers its verdict. Its pushes are stamped with the caller's subject.
pub(super) async fn transaction(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    Allowed(access): Allowed,
    body: BinaryOrJson<Loose<Object<TxnBody>>>,
) -> Result<Json<Value>, ApiError> {
    let id = storage::new_message_id();
    let (body, pushes, counts) = match body {
        BinaryOrJson::Json(body) => (body, Vec::new(), false),
        BinaryOrJson::Binary(bytes) => {
            let txn = binary::push::decode_transaction(&bytes, state.max_body_bytes)?;
            (parse_json(txn.head)?, txn.pushes, txn.counts)
        }
    };
    let (mut request, mut echoes, kv_names) = match parse(body) {
        Ok(parsed) => parsed,
        Err(error) => return Ok(Json(bad_request(id, &error))),
    };
    // A binary body's pushes answer after the head's operations (4.3).
    for item in pushes {
        echoes.push(Echo::Push {
            queue: item.queue.clone(),
        });
        request.operations.push(TxnOp::Push(item));
    }
    reserved::refuse(request.operations.iter().filter_map(|op| match op {
        TxnOp::Push(item) => Some(item.queue.as_str()),
        TxnOp::Ack { .. } => None,
    }))?;
    authorize(&state, &access, &request).await?;
    let producer_sub = producer_sub(&caller);
    for op in &mut request.operations {
        if let TxnOp::Push(item) = op {
            item.record.producer_sub.clone_from(&producer_sub);
        }
    }
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
        TxnOutcome::Committed { operations, kv } if counts => {
            counted(id, &operations, &kv, &kv_names)
        }
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
            results.extend(kv_results(operations.len(), &kv, &kv_names));
            json!({"transactionId": id, "success": true, "results": results})
        }
        TxnOutcome::RolledBack(rollback) => rolled_back(id, &rollback),
    }))
}

/// The committed answer with flag 2 of a binary body: the pushes and acks
/// counted (`pushed`, `duplicate`, `acked`), the KV results listed.
fn counted(
    id: Uuid,
    operations: &[TxnOpResult],
    kv: &[storage::KvResult],
    kv_names: &[String],
) -> Value {
    let (mut pushed, mut duplicate, mut acked) = (0, 0, 0);
    for result in operations {
        match result {
            TxnOpResult::Push(o) if o.status == PushStatus::Duplicate => duplicate += 1,
            TxnOpResult::Push(_) => pushed += 1,
            TxnOpResult::Ack(_) => acked += 1,
        }
    }
    let results: Vec<Value> = kv_results(0, kv, kv_names).collect();
    json!({"transactionId": id, "success": true, "pushed": pushed, "duplicate": duplicate,
           "acked": acked, "results": results})
}

/// The results of the KV riders, the first at flat index `first`.
fn kv_results<'a>(
    first: usize,
    kv: &'a [storage::KvResult],
    kv_names: &'a [String],
) -> impl Iterator<Item = Value> + 'a {
    kv.iter()
        .zip(kv_names)
        .enumerate()
        .map(move |(j, (result, name))| {
            let mut r = result_json(first + j, name, result);
            r.insert("type".into(), json!("kv"));
            r.insert("opIndex".into(), json!(j));
            Value::Object(r)
        })
}

/// Checks every operation of the bundle before any runs, each as its own
/// route would: pushes WRITE (and CREATE for a new queue), acks READ on
/// the group and the queue, KV ops the cluster's READ or WRITE. A refusal
/// is a 403, not a verdict: the caller's rights, not the bundle, are wrong.
async fn authorize(
    state: &AppState,
    access: &Access,
    request: &TxnRequest,
) -> Result<(), ApiError> {
    if access.unrestricted() {
        return Ok(());
    }
    let mut pushed = Vec::new();
    let mut acked = Vec::new();
    for op in &request.operations {
        match op {
            TxnOp::Push(item) => pushed.push(item.queue.as_str()),
            TxnOp::Ack { group, item } => acked.push((group.as_str(), item.partition_id)),
        }
    }
    authorize::require_push(state, access, &pushed).await?;
    authorize::require_ack(state, access, &acked).await?;
    authorize::require_kv(access, &request.kv)
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

fn parse(body: Loose<Object<TxnBody>>) -> Result<Parsed, String> {
    let Some(Object(body)) = body.valid() else {
        return Err(ApiError::NotAnObject.to_string());
    };
    // Timers are not implemented: a bundle that carries them is refused,
    // never committed without them.
    match body.timers {
        Loose::Absent | Loose::Null => {}
        Loose::Valid(t) if t.is_empty() => {}
        _ => return Err("timers are not supported by this broker".into()),
    }
    let list = body
        .operations
        .optional()
        .map_err(|()| "operations must be an array".to_owned())?
        .unwrap_or_default();
    let required_leases = match body.required_leases.optional() {
        Ok(None) => Vec::new(),
        Ok(Some(l)) => l
            .into_iter()
            .map(|v| {
                v.valid()
                    .ok_or_else(|| "requiredLeases must hold strings".to_owned())
            })
            .collect::<Result<_, _>>()?,
        Err(()) => return Err("requiredLeases must be an array".into()),
    };
    let (kv_names, kv) = match body.kv.optional() {
        Ok(None) => (Vec::new(), Vec::new()),
        Ok(Some(ops)) => parse_ops(ops).map_err(|e| e.to_string())?,
        Err(()) => return Err("kv must be an array".into()),
    };
    let mut operations = Vec::new();
    let mut echoes = Vec::new();
    for (i, op) in list.into_iter().enumerate() {
        let Some(Object(mut o)) = op.valid() else {
            return Err(format!("operations[{i}] must be an object"));
        };
        let kind = std::mem::take(&mut o.kind);
        match kind.valid().as_deref() {
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
                let items: Vec<TxnPushBody> = match o.items {
                    Loose::Valid(items) => items
                        .into_iter()
                        .map(|v| {
                            v.valid()
                                .map(|Object(item)| item)
                                .ok_or_else(|| format!("operations[{i}].items must hold objects"))
                        })
                        .collect::<Result<_, _>>()?,
                    // A single inline item.
                    Loose::Absent if !matches!(o.queue, Loose::Absent) => vec![TxnPushBody {
                        queue: o.queue.text(),
                        transaction_id: o.transaction_id,
                        ..o.inline
                    }],
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

fn ack(i: usize, o: TxnOpBody) -> Result<TxnOp, String> {
    let transaction_id = o
        .transaction_id
        .ok_or_else(|| format!("operations[{i}].transactionId is required"))?;
    let partition_id = o
        .partition_id
        .valid()
        .and_then(|p| p.id())
        .ok_or_else(|| format!("operations[{i}].partitionId is not a partition id"))?;
    let status = match o.status.valid() {
        Some(StatusValue::Name(status)) => status,
        _ => AckStatus::Completed,
    };
    Ok(TxnOp::Ack {
        group: o
            .consumer_group
            .unwrap_or_else(|| QUEUE_MODE_GROUP.to_owned()),
        item: AckItem {
            transaction_id,
            partition_id,
            status,
            error: o.error,
            lease_id: o.lease_id,
        },
    })
}

fn push(i: usize, o: TxnPushBody) -> Result<PushItem, String> {
    let queue = o
        .queue
        .ok_or_else(|| format!("operations[{i}]: a pushed item needs a queue"))?;
    let data = o
        .payload
        .map_or_else(|| "null".to_owned(), |v| v.to_string());
    Ok(PushItem {
        queue,
        partition: o.partition.unwrap_or_else(|| DEFAULT_PARTITION.to_owned()),
        record: Record {
            message_id: storage::new_message_id(),
            transaction_id: o.transaction_id,
            trace_id: o.trace_id.and_then(|t| Uuid::parse_str(&t).ok()),
            // Stamped by the handler, from the caller, never from the body.
            producer_sub: None,
            content: Content::Json(data),
        },
    })
}
