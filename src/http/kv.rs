//! `POST /api/v1/kv` (3.9): a batch of KV ops in one transaction. The op
//! parser and the result shapes are shared with the KV rider of
//! `POST /api/v1/transaction`.

use axum::extract::State;
use axum::Json;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use serde_json::{json, Map, Value};
use storage::{
    KvEntry, KvExpiry, KvOp, KvOutcome, KvPreconditionFailed, KvRequest, KvResult, StorageError,
};

use super::authorize::{self, Allowed};
use super::body::JsonBody;
use super::error::ApiError;
use super::lenient::{self, Loose, Object};
use super::render::timestamp;
use super::AppState;

/// The body of `POST /api/v1/kv`: `{"operations": [...]}` or the bare array.
#[derive(Debug)]
pub(super) enum KvBody {
    /// `[op, ...]`.
    Bare(KvOps),
    /// `{"operations": [op, ...]}`.
    Wrapped(KvWrapped),
    /// Anything else, refused.
    Other,
}

impl<'de> Deserialize<'de> for KvBody {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Every field below is loose, so only the JSON type picks the shape.
        Ok(match Value::deserialize(deserializer)? {
            list @ Value::Array(_) => {
                Self::Bare(KvOps::deserialize(list).map_err(D::Error::custom)?)
            }
            object @ Value::Object(_) => {
                Self::Wrapped(KvWrapped::deserialize(object).map_err(D::Error::custom)?)
            }
            _ => Self::Other,
        })
    }
}

/// `{"operations": [...]}`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct KvWrapped {
    operations: Loose<KvOps>,
}

/// A list of KV ops as sent; an element that is not an object is refused
/// by its index.
pub(super) type KvOps = Vec<Loose<Object<KvOpBody>>>;

/// One KV op as clients send it. Every field is loose: a wrong type is
/// refused with the `kv_bad_*` reason of that field.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct KvOpBody {
    op: Loose<String>,
    ns: Loose<String>,
    key: Loose<String>,
    keys: Loose<Vec<Loose<String>>>,
    prefix: Loose<String>,
    after: Loose<String>,
    limit: Loose<i64>,
    keys_only: Loose<bool>,
    /// The value to write: any JSON, `null` included; `None` when absent.
    #[serde(deserialize_with = "lenient::present")]
    value: Option<Value>,
    ttl_seconds: Loose<i64>,
    forever: Loose<bool>,
    expect: Loose<i64>,
    delta: Loose<i64>,
    min: Loose<i64>,
    max: Loose<i64>,
    required: Loose<bool>,
}

/// Runs the ops; 200 with `results`, or 200 `ok: false` when a required op
/// lost its precondition.
pub(super) async fn kv(
    State(state): State<AppState>,
    Allowed(access): Allowed,
    JsonBody(body): JsonBody<KvBody>,
) -> Result<Json<Value>, ApiError> {
    let list = match body {
        KvBody::Bare(list) => list,
        KvBody::Wrapped(o) => o
            .operations
            .valid()
            .ok_or_else(|| bad("kv_bad_body", "operations must be an array of ops"))?,
        KvBody::Other => return Err(bad("kv_bad_body", "the body must be an object or an array")),
    };
    let (names, ops) = parse_ops(list)?;
    authorize::require_kv(&access, &ops)?;
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
pub(super) fn precondition_json(failed: &KvPreconditionFailed) -> Map<String, Value> {
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

/// Checks a list of ops; returns each op's name as sent (echoed in its
/// result) beside the ops.
pub(super) fn parse_ops(list: KvOps) -> Result<(Vec<String>, Vec<KvRequest>), ApiError> {
    let mut names = Vec::with_capacity(list.len());
    let mut ops = Vec::with_capacity(list.len());
    for (i, v) in list.into_iter().enumerate() {
        let Some(Object(o)) = v.valid() else {
            return Err(bad("kv_bad_op", format!("op {i} must be an object")));
        };
        let (name, op) = parse_op(i, o)?;
        names.push(name);
        ops.push(op);
    }
    Ok((names, ops))
}

/// Checks one op, field by field in the order clients have always been
/// answered (the op, its own fields, `required`, then `ns`).
fn parse_op(i: usize, o: KvOpBody) -> Result<(String, KvRequest), ApiError> {
    let Some(name) = o.op.valid() else {
        return Err(bad("kv_bad_op", format!("op {i}: op must be a string")));
    };
    let text = |value: Loose<String>, field: &str, reason: &'static str| {
        value.valid().ok_or_else(|| {
            bad(
                reason,
                format!("op {i}: {field} must be a non-empty string"),
            )
        })
    };
    let key = |value: Loose<String>| text(value, "key", "kv_bad_key");
    let int = |value: Loose<i64>, field: &str| {
        value.optional().map_err(|()| {
            bad(
                "kv_bad_number",
                format!("op {i}: {field} must be an integer"),
            )
        })
    };
    let expect = |value: Loose<i64>| -> Result<Option<i64>, ApiError> {
        let e = int(value, "expect")?;
        if e.is_some_and(|e| e < 0) {
            return Err(bad(
                "kv_bad_expect",
                format!("op {i}: expect must be an integer >= 0"),
            ));
        }
        Ok(e)
    };
    let expiry = |ttl: Loose<i64>, forever: Loose<bool>| -> Result<KvExpiry, ApiError> {
        let forever = matches!(forever, Loose::Valid(true));
        match (ttl.is_none(), forever) {
            (false, true) => Err(bad(
                "kv_expiry_conflict",
                format!("op {i}: give ttlSeconds or forever, not both"),
            )),
            (true, false) => Err(bad(
                "kv_expiry_not_specified",
                format!("op {i}: a write needs ttlSeconds (> 0) or forever: true"),
            )),
            (true, true) => Ok(KvExpiry::Forever),
            (false, false) => match ttl.valid() {
                Some(s) if s > 0 => Ok(KvExpiry::Ttl(s)),
                _ => Err(bad(
                    "kv_bad_ttl",
                    format!("op {i}: ttlSeconds must be a positive integer"),
                )),
            },
        }
    };
    let value = |value: Option<Value>| {
        value.ok_or_else(|| bad("kv_value_missing", format!("op {i}: value is required")))
    };
    let op = match name.as_str() {
        "get" => KvOp::Get { key: key(o.key)? },
        "getMany" => match o.keys.valid() {
            Some(keys) if !keys.is_empty() => KvOp::GetMany {
                keys: keys
                    .into_iter()
                    .map(|k| {
                        k.valid().ok_or_else(|| {
                            bad("kv_bad_key", format!("op {i}: keys must be strings"))
                        })
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
            prefix: text(o.prefix, "prefix", "kv_bad_prefix")?,
            after: o.after.valid(),
            limit: int(o.limit, "limit")?
                .map_or(storage::kv::DEFAULT_PREFIX_LIMIT, |l| l.max(1) as usize),
            keys_only: matches!(o.keys_only, Loose::Valid(true)),
        },
        "put" => KvOp::Put {
            key: key(o.key)?,
            value: value(o.value)?,
            expiry: expiry(o.ttl_seconds, o.forever)?,
            expect: expect(o.expect)?,
        },
        "putIfAbsent" => KvOp::PutIfAbsent {
            key: key(o.key)?,
            value: value(o.value)?,
            expiry: expiry(o.ttl_seconds, o.forever)?,
        },
        "delete" => KvOp::Delete {
            key: key(o.key)?,
            expect: expect(o.expect)?,
        },
        "incr" => KvOp::Incr {
            key: key(o.key)?,
            delta: int(o.delta, "delta")?.unwrap_or(1),
            min: int(o.min, "min")?,
            max: int(o.max, "max")?,
            expiry: expiry(o.ttl_seconds, o.forever)?,
        },
        "check" => KvOp::Check {
            key: key(o.key)?,
            expect: expect(o.expect)?
                .ok_or_else(|| bad("kv_bad_expect", format!("op {i}: check needs expect")))?,
        },
        other => {
            return Err(bad(
                "kv_unknown_op",
                format!("op {i}: unknown op {other:?}"),
            ))
        }
    };
    let required = o.required.optional().map_err(|()| {
        bad(
            "kv_bad_required",
            format!("op {i}: required must be a boolean"),
        )
    })?;
    Ok((
        name,
        KvRequest {
            ns: text(o.ns, "ns", "kv_bad_ns")?,
            op,
            required: required.unwrap_or(false),
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
pub(super) fn result_json(index: usize, name: &str, result: &KvResult) -> Map<String, Value> {
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
