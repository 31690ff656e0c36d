//! Evaluating KV ops inside a caller's transaction, in order: a later op
//! sees what an earlier one wrote. The caller commits when the answer is
//! [`KvOutcome::Done`] and rolls back when it is [`KvOutcome::Aborted`].

use serde_json::Value;

use super::{KvEntry, KvExpiry, KvOp, KvOutcome, KvPreconditionFailed, KvReason, KvRequest};
use super::{KvResult, KvRow, MAX_PREFIX_LIMIT};
use crate::backend::Conn;
use crate::error::{Result, StorageError};
use crate::sql;

/// Runs `ops` at `now`. `base` is added to an op's index in a failure (a
/// transaction reports flat result indexes).
pub(crate) async fn run(
    tx: &mut Conn<'_>,
    ops: &[KvRequest],
    now: i64,
    base: usize,
) -> Result<KvOutcome> {
    // Lock every written key first, in one order, so that concurrent calls
    // writing overlapping keys queue instead of deadlocking.
    let mut hashes: Vec<i64> = ops
        .iter()
        .filter_map(|r| r.op.written_key().map(|k| key_hash(&r.ns, k)))
        .collect();
    hashes.sort_unstable();
    hashes.dedup();
    sql::kv::lock_keys(tx, &hashes).await?;

    let mut results = Vec::with_capacity(ops.len());
    for (i, request) in ops.iter().enumerate() {
        let result = one(tx, request, now).await?;
        if request.required {
            if let KvResult::Write {
                applied: false,
                reason: Some(reason),
                value,
                version,
                ..
            } = &result
            {
                return Ok(KvOutcome::Aborted(KvPreconditionFailed {
                    index: base + i,
                    reason: *reason,
                    version: *version,
                    value: value.clone(),
                }));
            }
        }
        results.push(result);
    }
    Ok(KvOutcome::Done(results))
}

/// The lock key of (ns, key): a stable hash, NUL-separated (neither may
/// hold a NUL).
fn key_hash(ns: &str, key: &str) -> i64 {
    let mut bytes = Vec::with_capacity(ns.len() + key.len() + 1);
    bytes.extend_from_slice(ns.as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(key.as_bytes());
    xxhash_rust::xxh3::xxh3_64(&bytes) as i64
}

async fn one(tx: &mut Conn<'_>, request: &KvRequest, now: i64) -> Result<KvResult> {
    let ns = request.ns.as_str();
    Ok(match &request.op {
        KvOp::Get { key } => KvResult::Get {
            key: key.clone(),
            entry: sql::kv::get(tx, ns, key, now)
                .await?
                .map(entry)
                .transpose()?,
        },
        KvOp::GetMany { keys } => {
            let mut rows = Vec::new();
            let mut missing = Vec::new();
            for key in keys {
                match sql::kv::get(tx, ns, key, now).await? {
                    Some(row) => rows.push(entry(row)?),
                    None => missing.push(key.clone()),
                }
            }
            KvResult::Many { rows, missing }
        }
        KvOp::GetPrefix {
            prefix,
            after,
            limit,
            keys_only,
        } => {
            let limit = (*limit).clamp(1, MAX_PREFIX_LIMIT);
            // One row more than asked says whether another page follows.
            let page = limit as i64 + 1;
            let mut rows = sql::kv::prefix(tx, ns, prefix, after.as_deref(), page, now).await?;
            let truncated = rows.len() > limit;
            rows.truncate(limit);
            let next_after = if truncated {
                rows.last().map(|r| r.key.clone())
            } else {
                None
            };
            let rows = rows
                .into_iter()
                .map(|r| {
                    let mut e = entry(r)?;
                    if *keys_only {
                        e.value = None;
                    }
                    Ok(e)
                })
                .collect::<Result<Vec<_>>>()?;
            KvResult::Prefix {
                rows,
                truncated,
                next_after,
            }
        }
        KvOp::Put {
            key,
            value,
            expiry,
            expect,
        } => {
            let current = sql::kv::get(tx, ns, key, now).await?;
            if let Some(reason) = expect.and_then(|e| unmet(e, current.as_ref())) {
                return refused(key, reason, current);
            }
            write(
                tx,
                ns,
                key,
                value.to_string(),
                expires_at(*expiry, now),
                now,
            )
            .await?
        }
        KvOp::PutIfAbsent { key, value, expiry } => {
            let current = sql::kv::get(tx, ns, key, now).await?;
            if current.is_some() {
                return refused(key, KvReason::Exists, current);
            }
            write(
                tx,
                ns,
                key,
                value.to_string(),
                expires_at(*expiry, now),
                now,
            )
            .await?
        }
        KvOp::Delete { key, expect } => {
            let current = sql::kv::get(tx, ns, key, now).await?;
            if let Some(reason) = expect.and_then(|e| unmet(e, current.as_ref())) {
                return refused(key, reason, current);
            }
            if current.is_none() {
                return refused(key, KvReason::Absent, None);
            }
            sql::kv::delete(tx, ns, key).await?;
            KvResult::Write {
                key: key.clone(),
                applied: true,
                reason: None,
                value: Value::Null,
                version: 0,
            }
        }
        KvOp::Incr {
            key,
            delta,
            min,
            max,
            expiry,
        } => {
            let current = sql::kv::get(tx, ns, key, now).await?;
            let (base, expires) = match &current {
                // An expired row counts as absent: it starts at zero with
                // the op's expiry, which is what makes a window limiter work.
                None => (0, expires_at(*expiry, now)),
                Some(row) => match parse(&row.value)?.as_i64() {
                    Some(n) => (n, row.expires_at),
                    None => return refused(key, KvReason::Type, current),
                },
            };
            let next = match base.checked_add(*delta) {
                Some(n) if min.is_none_or(|m| n >= m) && max.is_none_or(|m| n <= m) => n,
                _ => return refused(key, KvReason::Limit, current),
            };
            write(tx, ns, key, next.to_string(), expires, now).await?
        }
        KvOp::Check { key, expect } => {
            let current = sql::kv::get(tx, ns, key, now).await?;
            if let Some(reason) = unmet(*expect, current.as_ref()) {
                return refused(key, reason, current);
            }
            let (value, version) = match current {
                Some(row) => (parse(&row.value)?, row.version),
                None => (Value::Null, 0),
            };
            KvResult::Write {
                key: key.clone(),
                applied: true,
                reason: None,
                value,
                version,
            }
        }
    })
}

/// Why `expect` does not hold for `current`, if it does not.
fn unmet(expect: i64, current: Option<&KvRow>) -> Option<KvReason> {
    match (expect, current) {
        (0, None) => None,
        (0, Some(_)) => Some(KvReason::Exists),
        (_, None) => Some(KvReason::Absent),
        (e, Some(row)) if row.version != e => Some(KvReason::Version),
        _ => None,
    }
}

fn expires_at(expiry: KvExpiry, now: i64) -> Option<i64> {
    match expiry {
        KvExpiry::Forever => None,
        KvExpiry::Ttl(s) => Some(now.saturating_add(s.saturating_mul(1000))),
    }
}

/// Writes a row under a fresh version; answers what was written.
async fn write(
    tx: &mut Conn<'_>,
    ns: &str,
    key: &str,
    value: String,
    expires_at: Option<i64>,
    now: i64,
) -> Result<KvResult> {
    let row = KvRow {
        key: key.to_owned(),
        value,
        version: tx.next_kv_version().await?,
        expires_at,
        updated_at: now,
    };
    sql::kv::upsert(tx, ns, &row).await?;
    Ok(KvResult::Write {
        key: key.to_owned(),
        applied: true,
        reason: None,
        value: parse(&row.value)?,
        version: row.version,
    })
}

/// A write that did not apply, with the key's current value and version.
fn refused(key: &str, reason: KvReason, current: Option<KvRow>) -> Result<KvResult> {
    let (value, version) = match current {
        Some(row) => (parse(&row.value)?, row.version),
        None => (Value::Null, 0),
    };
    Ok(KvResult::Write {
        key: key.to_owned(),
        applied: false,
        reason: Some(reason),
        value,
        version,
    })
}

fn parse(text: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| StorageError::Corrupt(format!("stored KV value: {e}")))
}

fn entry(row: KvRow) -> Result<KvEntry> {
    Ok(KvEntry {
        value: Some(parse(&row.value)?),
        key: row.key,
        version: row.version,
        expires_at_ms: row.expires_at,
        updated_at_ms: row.updated_at,
    })
}
