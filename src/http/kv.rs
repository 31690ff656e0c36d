//! `POST /api/v1/kv` (3.9): a batch of KV ops in one transaction. The op
//! parser and the result shapes are shared with the KV rider of
//! `POST /api/v1/transaction`.

use axum::extract::State;
use axum::Json;
use serde_json::{json, Map, Value};
use storage::{
    KvEntry, KvExpiry, KvOp, KvOutcome, KvPreconditionFailed, KvRequest, KvResult, StorageError,
};

use super::body::JsonBody;
use super::error::ApiError;
use super::render::timestamp;
use super::AppState;

/// Runs the ops; 200 with `results`, or 200 `ok: false` when a required op
/// lost its precondition.
pub async fn kv(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<Value>,
) -> Result<Json<Value>, ApiError> {
    // The body is `{"operations": [...]}` or the bare array.
    let list = match body {
        Value::Array(list) => list,
        Value::Object(mut o) => match o.remove("operations") {
            Some(Value::Array(list)) => list,
            _ => return Err(bad("kv_bad_body", "operations must be an array of ops")),
        },
        _ => return Err(bad("kv_bad_body", "the body must be an object or an array")),
    };
    let (names, ops) = parse_ops(&list)?;
    match state.engine.kv(ops).await? {
        KvOutcome::Done(results) => Ok(Json(json!({
            "results": results
                .iter()
                .zip(&names)
                .enumerate()
                .map(|(i, (r, name))| Value::Object(result_json(i, name, r)))
                .collect::<Vec<_>>(),
        }))),
        KvOutcome::Aborted(failed) => Ok(Json(Value::Object(precondition_json(&failed)))),
    }
}

/// The fields of a `kv_precondition` answer.
pub fn precondition_json(failed: &KvPreconditionFailed) -> Map<String, Value> {
    let mut o = Map::new();
    o.insert("ok".into(), Value::Bool(false));
    o.insert("reason".into(), json!("kv_precondition"));
    o.insert("failedIndex".into(), json!(failed.index));
    o.insert("kvReason".into(), json!(failed.reason.as_str()));
    o.insert("version".into(), json!(failed.version));
    o.insert("value".into(), failed.value.clone());
    o
}

fn bad(reason: &'static str, detail: impl Into<String>) -> ApiError {
    ApiError::Storage(StorageError::KvBadRequest {
        reason,
        detail: detail.into(),
    })
}

/// Parses a list of ops; returns each op's name as sent (echoed in its
/// result) beside the ops.
pub fn parse_ops(list: &[Value]) -> Result<(Vec<String>, Vec<KvRequest>), ApiError> {
    let mut names = Vec::with_capacity(list.len());
    let mut ops = Vec::with_capacity(list.len());
    for (i, v) in list.iter().enumerate() {
        let Value::Object(o) = v else {
            return Err(bad("kv_bad_op", format!("op {i} must be an object")));
        };
        let (name, op) = parse_op(i, o)?;
        names.push(name);
        ops.push(op);
    }
    Ok((names, ops))
}

fn parse_op(i: usize, o: &Map<String, Value>) -> Result<(String, KvRequest), ApiError> {
    let name = match o.get("op") {
        Some(Value::String(s)) => s.clone(),
        _ => return Err(bad("kv_bad_op", format!("op {i}: op must be a string"))),
    };
    let text = |field: &str| -> Result<String, ApiError> {
        match o.get(field) {
            Some(Value::String(s)) => Ok(s.clone()),
            _ => Err(bad(
                if field == "ns" {
                    "kv_bad_ns"
                } else {
                    "kv_bad_key"
                },
                format!("op {i}: {field} must be a non-empty string"),
            )),
        }
    };
    let int = |field: &str| -> Result<Option<i64>, ApiError> {
        match o.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v.as_i64().map(Some).ok_or_else(|| {
                bad(
                    "kv_bad_number",
                    format!("op {i}: {field} must be an integer"),
                )
            }),
        }
    };
    let expect = || -> Result<Option<i64>, ApiError> {
        let e = int("expect")?;
        if e.is_some_and(|e| e < 0) {
            return Err(bad(
                "kv_bad_expect",
                format!("op {i}: expect must be an integer >= 0"),
            ));
        }
        Ok(e)
    };
    let expiry = || -> Result<KvExpiry, ApiError> {
        let forever = matches!(o.get("forever"), Some(Value::Bool(true)));
        let ttl = o.get("ttlSeconds").filter(|v| !v.is_null());
        match (ttl, forever) {
            (Some(_), true) => Err(bad(
                "kv_expiry_conflict",
                format!("op {i}: give ttlSeconds or forever, not both"),
            )),
            (None, false) => Err(bad(
                "kv_expiry_not_specified",
                format!("op {i}: a write needs ttlSeconds (> 0) or forever: true"),
            )),
            (None, true) => Ok(KvExpiry::Forever),
            (Some(v), false) => match v.as_i64() {
                Some(s) if s > 0 => Ok(KvExpiry::Ttl(s)),
                _ => Err(bad(
                    "kv_bad_ttl",
                    format!("op {i}: ttlSeconds must be a positive integer"),
                )),
            },
        }
    };
    let value = || -> Result<Value, ApiError> {
        o.get("value")
            .cloned()
            .ok_or_else(|| bad("kv_value_missing", format!("op {i}: value is required")))
    };
    let op = match name.as_str() {
        "get" => KvOp::Get { key: text("key")? },
        "getMany" => match o.get("keys") {
            Some(Value::Array(keys)) if !keys.is_empty() => KvOp::GetMany {
                keys: keys
                    .iter()
                    .map(|k| match k {
                        Value::String(s) => Ok(s.clone()),
                        _ => Err(bad("kv_bad_key", format!("op {i}: keys must be strings"))),
                    })
                    .collect::<Result<_, _>>()?,
            },
            _ => {
                return Err(bad(
                    "kv_bad_keys",
                    format!("op {i}: keys must be a non-empty array"),
                ))
            }
        },
        "getPrefix" => KvOp::GetPrefix {
            prefix: text("prefix").map_err(|_| {
                bad(
                    "kv_bad_prefix",
                    format!("op {i}: prefix must be a non-empty string"),
                )
            })?,
            after: match o.get("after") {
                Some(Value::String(s)) => Some(s.clone()),
                _ => None,
            },
            limit: int("limit")?.map_or(storage::kv::DEFAULT_PREFIX_LIMIT, |l| l.max(1) as usize),
            keys_only: matches!(o.get("keysOnly"), Some(Value::Bool(true))),
        },
        "put" => KvOp::Put {
            key: text("key")?,
            value: value()?,
            expiry: expiry()?,
            expect: expect()?,
        },
        "putIfAbsent" => KvOp::PutIfAbsent {
            key: text("key")?,
            value: value()?,
            expiry: expiry()?,
        },
        "delete" => KvOp::Delete {
            key: text("key")?,
            expect: expect()?,
        },
        "incr" => KvOp::Incr {
            key: text("key")?,
            delta: int("delta")?.unwrap_or(1),
            min: int("min")?,
            max: int("max")?,
            expiry: expiry()?,
        },
        "check" => KvOp::Check {
            key: text("key")?,
            expect: expect()?
                .ok_or_else(|| bad("kv_bad_expect", format!("op {i}: check needs expect")))?,
        },
        other => {
            return Err(bad(
                "kv_unknown_op",
                format!("op {i}: unknown op {other:?}"),
            ))
        }
    };
    let required = match o.get("required") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(bad(
                "kv_bad_required",
                format!("op {i}: required must be a boolean"),
            ))
        }
    };
    Ok((
        name,
        KvRequest {
            ns: text("ns")?,
            op,
            required,
        },
    ))
}

fn row_json(e: &KvEntry) -> Value {
    let mut o = Map::new();
    o.insert("key".into(), json!(e.key));
    if let Some(value) = &e.value {
        o.insert("value".into(), value.clone());
    }
    o.insert("version".into(), json!(e.version));
    o.insert("expiresAt".into(), json!(e.expires_at_ms.map(timestamp)));
    o.insert("updatedAt".into(), json!(timestamp(e.updated_at_ms)));
    Value::Object(o)
}

/// The JSON of one op's result at `index`.
pub fn result_json(index: usize, name: &str, result: &KvResult) -> Map<String, Value> {
    let mut o = Map::new();
    o.insert("index".into(), json!(index));
    o.insert("op".into(), json!(name));
    match result {
        KvResult::Get { key, entry } => match entry {
            Some(e) => {
                o.insert("found".into(), Value::Bool(true));
                if let Value::Object(row) = row_json(e) {
                    o.extend(row);
                }
            }
            None => {
                o.insert("found".into(), Value::Bool(false));
                o.insert("key".into(), json!(key));
            }
        },
        KvResult::Many { rows, missing } => {
            o.insert("rows".into(), rows.iter().map(row_json).collect());
            o.insert("missing".into(), json!(missing));
            o.insert("truncated".into(), Value::Bool(false));
        }
        KvResult::Prefix {
            rows,
            truncated,
            next_after,
        } => {
            o.insert("rows".into(), rows.iter().map(row_json).collect());
            o.insert("truncated".into(), Value::Bool(*truncated));
            o.insert("nextAfter".into(), json!(next_after));
        }
        KvResult::Write {
            key,
            applied,
            reason,
            value,
            version,
        } => {
            o.insert("applied".into(), Value::Bool(*applied));
            if let Some(reason) = reason {
                o.insert("reason".into(), json!(reason.as_str()));
            }
            o.insert("key".into(), json!(key));
            o.insert("value".into(), value.clone());
            o.insert("version".into(), json!(version));
        }
    }
    o
}
