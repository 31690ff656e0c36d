//! The key/value store: versioned JSON values per (namespace, key), with a
//! TTL or none, and the `once` markers of transactions.
//!
//! Semantics (section 5.3 of the HTTP spec): every write draws a fresh
//! version that is never issued again; an expired row is invisible to every
//! read and every precondition at once (judged against the engine's clock,
//! whether or not the sweep has removed it); writes to one key are
//! serialised (SQLite's single writer; on PostgreSQL an advisory lock per
//! key). A `required` op whose precondition fails aborts the whole call.
//!
//! `eval` runs a list of ops inside a caller's transaction (a KV call, or
//! the KV rider of a transaction); the statements are in `sql/kv.rs`.

pub(crate) mod eval;

use serde_json::Value;

use crate::error::{Result, StorageError};
use crate::Engine;

/// The largest key, in bytes.
pub const MAX_KEY_BYTES: usize = 512;
/// The largest value, in bytes of compact JSON.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;
/// The most ops of one KV call.
pub const MAX_OPS: usize = 256;
/// The most keys one KV call names.
pub const MAX_KEYS: usize = 4096;
/// The most KV ops of one transaction.
pub const MAX_TXN_OPS: usize = 64;
/// The most keys the KV ops of one transaction name.
pub const MAX_TXN_KEYS: usize = 256;
/// The most rows a `getPrefix` returns, and its default.
pub const MAX_PREFIX_LIMIT: usize = 1000;
/// The rows a `getPrefix` returns when it names no limit.
pub const DEFAULT_PREFIX_LIMIT: usize = 100;

/// How long a written row lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvExpiry {
    /// This many seconds after the write (> 0).
    Ttl(i64),
    /// Until deleted.
    Forever,
}

/// One KV operation.
#[derive(Debug, Clone, PartialEq)]
pub enum KvOp {
    /// Reads one key.
    Get {
        /// The key.
        key: String,
    },
    /// Reads several keys.
    GetMany {
        /// The keys (non-empty).
        keys: Vec<String>,
    },
    /// Reads the keys starting with `prefix`, in byte order.
    GetPrefix {
        /// The prefix (non-empty).
        prefix: String,
        /// Only keys after this one (an exclusive cursor).
        after: Option<String>,
        /// The most rows (clamped to 1..=[`MAX_PREFIX_LIMIT`]).
        limit: usize,
        /// Rows without their values.
        keys_only: bool,
    },
    /// Writes a value; with `expect`, only when the key is absent (`0`) or
    /// at that version.
    Put {
        /// The key.
        key: String,
        /// The value.
        value: Value,
        /// Its lifetime.
        expiry: KvExpiry,
        /// The precondition.
        expect: Option<i64>,
    },
    /// Writes a value only when the key is absent (what `once` is).
    PutIfAbsent {
        /// The key.
        key: String,
        /// The value.
        value: Value,
        /// Its lifetime.
        expiry: KvExpiry,
    },
    /// Deletes a key; with `expect`, only at that version.
    Delete {
        /// The key.
        key: String,
        /// The precondition.
        expect: Option<i64>,
    },
    /// Adds `delta` to an integer (an absent key counts as 0); refused, not
    /// clamped, beyond `min`/`max`. The expiry applies only to a new row.
    Incr {
        /// The key.
        key: String,
        /// What to add.
        delta: i64,
        /// The lowest value allowed.
        min: Option<i64>,
        /// The highest value allowed.
        max: Option<i64>,
        /// The lifetime of a row this creates.
        expiry: KvExpiry,
    },
    /// Writes nothing: applies when the key is absent (`expect: 0`) or at
    /// version `expect`.
    Check {
        /// The key.
        key: String,
        /// The precondition.
        expect: i64,
    },
}

impl KvOp {
    /// The keys the op names.
    fn keys(&self) -> Vec<&str> {
        match self {
            Self::GetMany { keys } => keys.iter().map(String::as_str).collect(),
            Self::GetPrefix { prefix, .. } => vec![prefix.as_str()],
            Self::Get { key }
            | Self::Put { key, .. }
            | Self::PutIfAbsent { key, .. }
            | Self::Delete { key, .. }
            | Self::Incr { key, .. }
            | Self::Check { key, .. } => vec![key.as_str()],
        }
    }

    /// The key the op writes (or guards), if it is a write.
    pub(crate) fn written_key(&self) -> Option<&str> {
        match self {
            Self::Get { .. } | Self::GetMany { .. } | Self::GetPrefix { .. } => None,
            Self::Put { key, .. }
            | Self::PutIfAbsent { key, .. }
            | Self::Delete { key, .. }
            | Self::Incr { key, .. }
            | Self::Check { key, .. } => Some(key),
        }
    }

    fn value(&self) -> Option<&Value> {
        match self {
            Self::Put { value, .. } | Self::PutIfAbsent { value, .. } => Some(value),
            _ => None,
        }
    }
}

/// An op with its namespace and whether its failure aborts the call.
#[derive(Debug, Clone, PartialEq)]
pub struct KvRequest {
    /// The namespace.
    pub ns: String,
    /// The op.
    pub op: KvOp,
    /// A lost precondition aborts the whole call (or transaction).
    pub required: bool,
}

/// A stored row as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct KvEntry {
    /// The key.
    pub key: String,
    /// The value; `None` for a `keysOnly` prefix read.
    pub value: Option<Value>,
    /// Its version.
    pub version: i64,
    /// When it expires, ms since the epoch; `None` for never.
    pub expires_at_ms: Option<i64>,
    /// When it was last written, ms since the epoch.
    pub updated_at_ms: i64,
}

/// Why a write (or check) did not apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvReason {
    /// The key is at another version than expected.
    Version,
    /// The key does not exist.
    Absent,
    /// The key exists where it must not.
    Exists,
    /// An increment would leave `min`/`max` (or overflow).
    Limit,
    /// The stored value is not an integer.
    Type,
}

impl KvReason {
    /// The reason as the wire spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Version => "version",
            Self::Absent => "absent",
            Self::Exists => "exists",
            Self::Limit => "limit",
            Self::Type => "type",
        }
    }
}

/// The answer to one op.
#[derive(Debug, Clone, PartialEq)]
pub enum KvResult {
    /// A `get`: the row, if it exists.
    Get {
        /// The key read.
        key: String,
        /// The row.
        entry: Option<KvEntry>,
    },
    /// A `getMany`: the rows found, in request order, and the keys missing.
    Many {
        /// The rows found.
        rows: Vec<KvEntry>,
        /// The keys not found.
        missing: Vec<String>,
    },
    /// A `getPrefix`.
    Prefix {
        /// The rows, in key order.
        rows: Vec<KvEntry>,
        /// More rows follow.
        truncated: bool,
        /// The cursor of the next page.
        next_after: Option<String>,
    },
    /// A write or a check.
    Write {
        /// The key.
        key: String,
        /// Whether it applied.
        applied: bool,
        /// Why not.
        reason: Option<KvReason>,
        /// The value written, or the current one (`null` when absent).
        value: Value,
        /// The version written, or the current one (0 when absent).
        version: i64,
    },
}

/// A `required` op lost its precondition: nothing of the call was applied.
#[derive(Debug, Clone, PartialEq)]
pub struct KvPreconditionFailed {
    /// The index of the op (in a transaction: its flat result index).
    pub index: usize,
    /// Why it did not apply.
    pub reason: KvReason,
    /// The key's current version (0 when absent).
    pub version: i64,
    /// The key's current value (`null` when absent).
    pub value: Value,
}

/// What a KV call did.
#[derive(Debug, Clone, PartialEq)]
pub enum KvOutcome {
    /// Every op ran; one result per op, in order.
    Done(Vec<KvResult>),
    /// A required op failed and the call was rolled back.
    Aborted(KvPreconditionFailed),
}

/// A row as stored: the value as compact JSON text.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct KvRow {
    pub key: String,
    pub value: String,
    pub version: i64,
    pub expires_at: Option<i64>,
    pub updated_at: i64,
}

/// Where a list of ops comes from: the limits differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Surface {
    /// `POST /api/v1/kv`.
    Call,
    /// The KV rider of a transaction.
    Transaction,
}

fn bad(reason: &'static str, detail: impl Into<String>) -> StorageError {
    StorageError::KvBadRequest {
        reason,
        detail: detail.into(),
    }
}

/// Checks a list of ops against the limits of section 3.9.
pub(crate) fn validate(ops: &[KvRequest], surface: Surface) -> Result<()> {
    let (max_ops, max_keys) = match surface {
        Surface::Call => (MAX_OPS, MAX_KEYS),
        Surface::Transaction => (MAX_TXN_OPS, MAX_TXN_KEYS),
    };
    if ops.len() > max_ops {
        return Err(bad(
            "kv_too_many_ops",
            format!("{} ops; at most {max_ops} are allowed", ops.len()),
        ));
    }
    let mut keys = 0usize;
    let mut written = std::collections::HashSet::new();
    for (i, request) in ops.iter().enumerate() {
        check_name("ns", i, &request.ns)?;
        if surface == Surface::Transaction && matches!(request.op, KvOp::GetPrefix { .. }) {
            return Err(bad(
                "kv_op_not_allowed",
                format!("op {i}: getPrefix is not allowed in a transaction"),
            ));
        }
        if let KvOp::GetMany { keys } = &request.op {
            if keys.is_empty() {
                return Err(bad(
                    "kv_bad_keys",
                    format!("op {i}: keys must not be empty"),
                ));
            }
        }
        for key in request.op.keys() {
            check_name("key", i, key)?;
        }
        keys += request.op.keys().len();
        if let KvOp::Put {
            expiry: KvExpiry::Ttl(s),
            ..
        }
        | KvOp::PutIfAbsent {
            expiry: KvExpiry::Ttl(s),
            ..
        }
        | KvOp::Incr {
            expiry: KvExpiry::Ttl(s),
            ..
        } = &request.op
        {
            if *s <= 0 {
                return Err(bad(
                    "kv_bad_ttl",
                    format!("op {i}: ttlSeconds must be a positive integer"),
                ));
            }
        }
        if let Some(value) = request.op.value() {
            let size = value.to_string().len();
            if size > MAX_VALUE_BYTES {
                return Err(StorageError::KvValueTooLarge {
                    bytes: size,
                    limit: MAX_VALUE_BYTES,
                });
            }
        }
        if let Some(key) = request.op.written_key() {
            if !written.insert((request.ns.as_str(), key)) {
                return Err(bad(
                    "kv_duplicate_write",
                    format!("op {i}: key {key:?} is written twice in one call"),
                ));
            }
        }
        match &request.op {
            KvOp::Put {
                expect: Some(e), ..
            }
            | KvOp::Delete {
                expect: Some(e), ..
            }
            | KvOp::Check { expect: e, .. }
                if *e < 0 =>
            {
                return Err(bad(
                    "kv_bad_expect",
                    format!("op {i}: expect must be an integer >= 0"),
                ));
            }
            _ => {}
        }
    }
    if keys > max_keys {
        return Err(bad(
            "kv_too_many_keys",
            format!("{keys} keys; at most {max_keys} are allowed"),
        ));
    }
    Ok(())
}

fn check_name(what: &'static str, i: usize, name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(bad(
            if what == "ns" {
                "kv_bad_ns"
            } else {
                "kv_bad_key"
            },
            format!("op {i}: {what} must be a non-empty string"),
        ));
    }
    if name.len() > MAX_KEY_BYTES || name.contains('\0') {
        return Err(bad(
            if what == "ns" {
                "kv_bad_ns"
            } else {
                "kv_bad_key"
            },
            format!("op {i}: {what} must be at most {MAX_KEY_BYTES} bytes, without NUL"),
        ));
    }
    Ok(())
}

impl Engine {
    /// Runs a KV call (section 3.9) in one transaction: one result per op,
    /// or, when a `required` op loses its precondition, nothing applied
    /// and the failure.
    pub async fn kv(&self, ops: Vec<KvRequest>) -> Result<KvOutcome> {
        validate(&ops, Surface::Call)?;
        let now = self.inner.clock.now_ms();
        let mut tx = self.inner.store.begin_write().await?;
        let outcome = eval::run(&mut tx.conn(), &ops, now, 0).await?;
        // Committed when it ran to the end, rolled back when a required op failed.
        match &outcome {
            KvOutcome::Done(_) => tx.commit().await?,
            KvOutcome::Aborted(_) => tx.rollback().await?,
        }
        Ok(outcome)
    }

    /// Deletes at most `limit` expired KV rows; returns how many. Safe to
    /// run on several brokers at once: each step is one short transaction.
    pub async fn sweep_kv(&self, limit: usize) -> Result<u64> {
        let now = self.inner.clock.now_ms();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        crate::sql::kv::sweep(&self.inner.store, now, limit).await
    }
}
