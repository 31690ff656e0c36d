//! The Kafka topic configs of a queue, read from its [`QueueOptions`].
//!
//! Native options and Kafka topic configs are two views of one set of
//! options. The configs a Kafka client set are kept in
//! [`QueueOptions::topic_configs`] exactly as given; a config absent there
//! has its default. `retention.ms` is the one config that maps onto native
//! options (`retentionEnabled` + `retentionSeconds`, see [`retention_ms`]).
//!
//! Where things live:
//! - here: the accessors the engine acts on (retention, compaction, produce
//!   limits), each answering the effective value, the default included;
//!   and how `retention.ms` reads from the native options;
//! - `catalogue`: every config a topic accepts, with its type, valid
//!   values, default and broker synonym (Kafka's `LogConfig`);
//! - `change`: CreateTopics, AlterConfigs (replace) and
//!   IncrementalAlterConfigs (SET, DELETE, APPEND, SUBTRACT) as pure
//!   functions from options to options, all checked before anything is
//!   returned, plus what a native configure carries over;
//! - `describe`: every config of a topic with its value and source.

mod catalogue;
mod change;
mod describe;

use std::collections::BTreeMap;

pub(crate) use catalogue::{def, list_items, DefaultValue, Valid, INT_MAX, LONG_MAX};
pub use catalogue::{find, ConfigDef, ConfigType, CATALOGUE, QUEEN_PREFIX};
pub use change::{alter, carry_over, for_new_topic, replace, ConfigOp};
pub use describe::{describe, DescribedConfig};

use crate::options::QueueOptions;

/// `retention.ms`: the age past which records are deleted.
pub const RETENTION_MS: &str = "retention.ms";
/// `retention.bytes`: the size past which a partition's oldest records are deleted.
pub const RETENTION_BYTES: &str = "retention.bytes";
/// `cleanup.policy`: `delete`, `compact`, or both.
pub const CLEANUP_POLICY: &str = "cleanup.policy";
/// `delete.retention.ms`: how long a compacted tombstone is kept.
pub const DELETE_RETENTION_MS: &str = "delete.retention.ms";
/// `min.compaction.lag.ms`: records younger than this are not compacted.
pub const MIN_COMPACTION_LAG_MS: &str = "min.compaction.lag.ms";
/// `max.compaction.lag.ms`: records older than this are compacted soon.
pub const MAX_COMPACTION_LAG_MS: &str = "max.compaction.lag.ms";
/// `min.cleanable.dirty.ratio`: how much of a compacted partition must be
/// dirty before it is cleaned.
pub const MIN_CLEANABLE_DIRTY_RATIO: &str = "min.cleanable.dirty.ratio";
/// `max.message.bytes`: the largest record batch a produce may carry.
pub const MAX_MESSAGE_BYTES: &str = "max.message.bytes";
/// `message.timestamp.type`: `CreateTime` (the producer's) or
/// `LogAppendTime` (the broker's, when it appends).
pub const MESSAGE_TIMESTAMP_TYPE: &str = "message.timestamp.type";

/// The default of `delete.retention.ms` (one day), as in Kafka.
pub const DEFAULT_DELETE_RETENTION_MS: i64 = 86_400_000;

/// What `cleanup.policy` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanupPolicy {
    /// Delete records by age (`retention.ms`) and size (`retention.bytes`).
    pub delete: bool,
    /// Keep only the latest record of each key.
    pub compact: bool,
}

impl Default for CleanupPolicy {
    /// `delete`, Kafka's default.
    fn default() -> Self {
        Self {
            delete: true,
            compact: false,
        }
    }
}

/// The `retentionSeconds` that `retention.ms = ms` (≥ 0) sets: the
/// milliseconds rounded up to whole seconds, at least one second (so that
/// `0`, "delete at once" in Kafka, is not "keep forever" natively).
pub fn retention_seconds_for(ms: i64) -> i64 {
    (ms.max(0) / 1000 + i64::from(ms.max(0) % 1000 != 0)).max(1)
}

/// Whether the queue's native options delete records by age.
fn age_retention_on(o: &QueueOptions) -> bool {
    o.retention_enabled && o.retention_seconds > 0
}

/// The `retention.ms` stored on the queue, if it is still the one in force:
/// a positive value while it rounds up to `retentionSeconds` (and
/// retention is on), `-1` while age retention is off. A native configure
/// that changed the retention since makes it stale.
pub(crate) fn stored_retention_ms(o: &QueueOptions) -> Option<i64> {
    let ms: i64 = o.topic_configs.get(RETENTION_MS)?.trim().parse().ok()?;
    let current = if ms < 0 {
        !age_retention_on(o)
    } else {
        age_retention_on(o) && retention_seconds_for(ms) == o.retention_seconds
    };
    current.then_some(ms)
}

/// The age limit of records in milliseconds, `None` to keep them forever.
///
/// The native options decide (`retentionEnabled` and `retentionSeconds >
/// 0`); the exact `retention.ms` a Kafka client set counts while it still
/// rounds up to `retentionSeconds`, else the limit is `retentionSeconds *
/// 1000`. Kafka applies it only when [`cleanup_policy`] includes `delete`.
pub fn retention_ms(o: &QueueOptions) -> Option<i64> {
    if !age_retention_on(o) {
        return None;
    }
    Some(
        stored_retention_ms(o)
            .filter(|&ms| ms >= 0)
            .unwrap_or_else(|| o.retention_seconds.saturating_mul(1000)),
    )
}

/// A config's stored value as an integer, if it is set (and reads as one:
/// every stored value was validated, so only a hand-edited row fails).
fn long(o: &QueueOptions, name: &str) -> Option<i64> {
    o.topic_configs.get(name)?.trim().parse().ok()
}

/// The size limit of each partition in bytes (`retention.bytes`), `None`
/// (the default, `-1`) for no limit. Like [`retention_ms`], it applies
/// only when [`cleanup_policy`] includes `delete`.
pub fn retention_bytes(o: &QueueOptions) -> Option<i64> {
    long(o, RETENTION_BYTES).filter(|&b| b >= 0)
}

/// The cleanup policy: `delete` unless the topic says otherwise. An empty
/// `cleanup.policy` is neither: records are kept forever.
pub fn cleanup_policy(o: &QueueOptions) -> CleanupPolicy {
    let Some(value) = o.topic_configs.get(CLEANUP_POLICY) else {
        return CleanupPolicy::default();
    };
    let items = || value.split(',').map(str::trim);
    CleanupPolicy {
        delete: items().any(|i| i.eq_ignore_ascii_case("delete")),
        compact: items().any(|i| i.eq_ignore_ascii_case("compact")),
    }
}

/// How long compaction keeps a tombstone (a record with a null value) in
/// milliseconds: `delete.retention.ms`, one day by default.
pub fn delete_retention_ms(o: &QueueOptions) -> i64 {
    long(o, DELETE_RETENTION_MS).unwrap_or(DEFAULT_DELETE_RETENTION_MS)
}

/// How old a record must be before compaction may remove it, in
/// milliseconds: `min.compaction.lag.ms`, 0 by default.
pub fn min_compaction_lag_ms(o: &QueueOptions) -> i64 {
    long(o, MIN_COMPACTION_LAG_MS).unwrap_or(0)
}

/// The age past which a record is due for compaction, in milliseconds:
/// `max.compaction.lag.ms`, unbounded (`i64::MAX`) by default.
pub fn max_compaction_lag_ms(o: &QueueOptions) -> i64 {
    long(o, MAX_COMPACTION_LAG_MS).unwrap_or(i64::MAX)
}

/// The share of a compacted partition's records that must be dirty (not
/// cleaned yet) before a cleaning starts: `min.cleanable.dirty.ratio`, 0.5
/// by default as in Kafka.
pub fn min_cleanable_dirty_ratio(o: &QueueOptions) -> f64 {
    o.topic_configs
        .get(MIN_CLEANABLE_DIRTY_RATIO)
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|r| (0.0..=1.0).contains(r))
        .unwrap_or(0.5)
}

/// The largest record batch a produce to this topic may carry, in bytes:
/// `max.message.bytes`, else the broker's `message.max.bytes`
/// (`broker_default`).
pub fn max_message_bytes(o: &QueueOptions, broker_default: i64) -> i64 {
    long(o, MAX_MESSAGE_BYTES).unwrap_or(broker_default)
}

/// Whether records take the broker's time when appended
/// (`message.timestamp.type=LogAppendTime`) instead of their producer's.
pub fn log_append_time(o: &QueueOptions) -> bool {
    o.topic_configs
        .get(MESSAGE_TIMESTAMP_TYPE)
        .is_some_and(|v| v == "LogAppendTime")
}

/// Why a config change was refused. Nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// An unknown name, a value of the wrong type or out of range, or an
    /// operation the config does not take (Kafka's `INVALID_CONFIG`).
    #[error("{0}")]
    Invalid(String),
    /// A malformed request: a name given twice, a missing value (Kafka's
    /// `INVALID_REQUEST`).
    #[error("{0}")]
    Request(String),
}

/// The `retention.ms` set on the topic: the stored text while it is the one
/// in force, else `retentionSeconds * 1000` while age retention is on;
/// `None` (the default: kept forever) otherwise.
fn retention_ms_text(o: &QueueOptions) -> Option<String> {
    if stored_retention_ms(o).is_some() {
        return o.topic_configs.get(RETENTION_MS).cloned();
    }
    age_retention_on(o).then(|| o.retention_seconds.saturating_mul(1000).to_string())
}

/// The Kafka configs set on the topic, `retention.ms` as the native
/// options make it.
fn set_on_topic(o: &QueueOptions) -> BTreeMap<String, String> {
    let mut configs = o.topic_configs.clone();
    configs.remove(RETENTION_MS);
    if let Some(ms) = retention_ms_text(o) {
        configs.insert(RETENTION_MS.to_owned(), ms);
    }
    configs
}

/// The native options as their JSON object, without the topic configs.
fn native_json(o: &QueueOptions) -> serde_json::Map<String, serde_json::Value> {
    let mut map = match serde_json::to_value(o) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    map.remove("topicConfigs");
    map
}

/// The JSON kind of native option `key`, if the queue has it.
fn native_kind(
    native: &serde_json::Map<String, serde_json::Value>,
    key: &str,
) -> Result<ConfigType, ConfigError> {
    match native.get(key) {
        Some(serde_json::Value::Number(_)) => Ok(ConfigType::Long),
        Some(serde_json::Value::Bool(_)) => Ok(ConfigType::Boolean),
        Some(serde_json::Value::String(_)) => Ok(ConfigType::String),
        _ => Err(ConfigError::Invalid(format!(
            "Unknown topic config name: {QUEEN_PREFIX}{key}"
        ))),
    }
}

#[cfg(test)]
mod tests;
