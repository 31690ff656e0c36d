//! The share-group configs of KIP-932 that this broker honours, set per
//! group with IncrementalAlterConfigs on a GROUP resource (as
//! `kafka-configs --entity-type groups` does) and kept in the database's
//! key/value store, so every broker of a shared database reads the same.

use std::collections::BTreeMap;

use serde_json::Value;
use storage::kv::{KvExpiry, KvOp, KvOutcome, KvRequest, KvResult};
use storage::{Engine, StorageError, SubscriptionMode};

/// The KV namespace of group configs (one key per group: a JSON object).
const NAMESPACE: &str = "queen.kafka.group-configs";

/// `share.record.lock.duration.ms`: how long an acquired record is locked.
pub(crate) const LOCK_DURATION: &str = "share.record.lock.duration.ms";
/// `share.delivery.count.limit`: deliveries before a record is dead-lettered.
pub(crate) const DELIVERY_LIMIT: &str = "share.delivery.count.limit";
/// `share.auto.offset.reset`: where a new share group starts.
pub(crate) const AUTO_OFFSET_RESET: &str = "share.auto.offset.reset";

/// The configs and their defaults (Kafka's).
pub(crate) const CONFIGS: &[(&str, &str)] = &[
    (LOCK_DURATION, "30000"),
    (DELIVERY_LIMIT, "5"),
    (AUTO_OFFSET_RESET, "latest"),
];

/// A group's share configs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ShareConfig {
    /// The acquisition lock, ms.
    pub(crate) lock_ms: i64,
    /// The most deliveries of a record.
    pub(crate) delivery_limit: i16,
    /// Where the group starts on a partition it has not consumed.
    pub(crate) start: SubscriptionMode,
}

impl Default for ShareConfig {
    fn default() -> Self {
        Self {
            lock_ms: 30_000,
            delivery_limit: 5,
            start: SubscriptionMode::New,
        }
    }
}

impl ShareConfig {
    /// The lock as the native lease counts it: whole seconds, rounded up.
    pub(crate) fn lease_seconds(&self) -> i64 {
        (self.lock_ms + 999) / 1000
    }
}

/// The default of a known config.
pub(crate) fn default_of(name: &str) -> Option<&'static str> {
    CONFIGS.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
}

/// Checks one config value; the error is Kafka's INVALID_CONFIG message.
pub(crate) fn check(name: &str, value: &str) -> Result<(), String> {
    let int = |lo: i64, hi: i64| match value.parse::<i64>() {
        Ok(v) if (lo..=hi).contains(&v) => Ok(()),
        _ => Err(format!(
            "Invalid value {value} for configuration {name}: must be between {lo} and {hi}"
        )),
    };
    match name {
        LOCK_DURATION => int(1000, 3_600_000),
        DELIVERY_LIMIT => int(2, 10),
        AUTO_OFFSET_RESET => match value {
            "earliest" | "latest" => Ok(()),
            _ => Err(format!(
                "Invalid value {value} for configuration {name}: must be earliest or latest"
            )),
        },
        _ => Err(format!("Unknown group config name: {name}")),
    }
}

/// The configs set on `group` (not the defaults), by name.
pub(crate) async fn stored(
    engine: &Engine,
    group: &str,
) -> Result<BTreeMap<String, String>, StorageError> {
    let outcome = engine
        .kv(vec![KvRequest {
            ns: NAMESPACE.into(),
            op: KvOp::Get { key: group.into() },
            required: false,
        }])
        .await?;
    let mut out = BTreeMap::new();
    if let KvOutcome::Done(results) = outcome {
        if let Some(KvResult::Get {
            entry: Some(entry), ..
        }) = results.into_iter().next()
        {
            if let Some(Value::Object(map)) = entry.value {
                for (k, v) in map {
                    if let Value::String(s) = v {
                        out.insert(k, s);
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Stores `configs` as the whole set of `group` (an empty set deletes it).
pub(crate) async fn store(
    engine: &Engine,
    group: &str,
    configs: &BTreeMap<String, String>,
) -> Result<(), StorageError> {
    let op = if configs.is_empty() {
        KvOp::Delete {
            key: group.into(),
            expect: None,
        }
    } else {
        let map = configs
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        KvOp::Put {
            key: group.into(),
            value: Value::Object(map),
            expiry: KvExpiry::Forever,
            expect: None,
        }
    };
    engine
        .kv(vec![KvRequest {
            ns: NAMESPACE.into(),
            op,
            required: false,
        }])
        .await?;
    Ok(())
}

/// The share configs of `group`: those set, the defaults otherwise.
pub(crate) async fn load(engine: &Engine, group: &str) -> Result<ShareConfig, StorageError> {
    let set = stored(engine, group).await?;
    let mut config = ShareConfig::default();
    if let Some(v) = set.get(LOCK_DURATION).and_then(|v| v.parse().ok()) {
        config.lock_ms = v;
    }
    if let Some(v) = set.get(DELIVERY_LIMIT).and_then(|v| v.parse().ok()) {
        config.delivery_limit = v;
    }
    if set.get(AUTO_OFFSET_RESET).map(String::as_str) == Some("earliest") {
        config.start = SubscriptionMode::All;
    }
    Ok(config)
}
