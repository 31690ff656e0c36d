//! Changing a topic's configs: CreateTopics, AlterConfigs (replace) and
//! IncrementalAlterConfigs, as pure functions from the stored options to
//! the new ones. Everything is checked before an answer is returned, so a
//! refused change leaves nothing half done.

use std::collections::BTreeMap;

use super::catalogue::{known, list_items};
use super::{
    native_json, native_kind, retention_seconds_for, set_on_topic, stored_retention_ms,
    ConfigError, ConfigType, MAX_COMPACTION_LAG_MS, MIN_COMPACTION_LAG_MS, QUEEN_PREFIX,
    RETENTION_MS,
};
use crate::options::QueueOptions;

/// One change of IncrementalAlterConfigs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigOp {
    /// Set the config to this value.
    Set(String),
    /// Return the config to its default.
    Delete,
    /// Add these items to a list config (those not in it yet).
    Append(String),
    /// Remove these items from a list config.
    Subtract(String),
}

/// The options of a new topic with these configs (CreateTopics): Kafka's
/// topic defaults (no dedup window), with the configs applied. `None`
/// values are left at their defaults.
pub fn for_new_topic(configs: &[(String, Option<String>)]) -> Result<QueueOptions, ConfigError> {
    replace(&QueueOptions::for_kafka_topic(), configs)
}

/// The options after AlterConfigs: the topic's Kafka configs become
/// exactly `configs` (a config not given, or given as `None`, returns to
/// its default, as in Kafka). The queue's own options are changed only
/// where a `queen.<option>` is given (`None` returns it to the native
/// default); the others are kept, since they are not Kafka configs.
pub fn replace(
    o: &QueueOptions,
    configs: &[(String, Option<String>)],
) -> Result<QueueOptions, ConfigError> {
    no_repeats(configs.iter().map(|(name, _)| name))?;
    let mut change = Change::new(o);
    change.kafka.clear();
    for (name, value) in configs {
        match value {
            Some(value) => change.set(name, value)?,
            None => change.delete(name)?,
        }
    }
    change.finish()
}

/// The options after IncrementalAlterConfigs: each change applied in
/// order, then the whole result checked.
pub fn alter(
    o: &QueueOptions,
    changes: &[(String, ConfigOp)],
) -> Result<QueueOptions, ConfigError> {
    no_repeats(changes.iter().map(|(name, _)| name))?;
    let mut change = Change::new(o);
    for (name, op) in changes {
        match op {
            ConfigOp::Set(value) => change.set(name, value)?,
            ConfigOp::Delete => change.delete(name)?,
            ConfigOp::Append(value) => change.edit_list(name, value, true)?,
            ConfigOp::Subtract(value) => change.edit_list(name, value, false)?,
        }
    }
    change.finish()
}

/// The options a native configure stores: `new`, every native option as
/// the request gave it, with the Kafka topic configs of the queue carried
/// over from `old` (HTTP clients do not know them), less a `retention.ms`
/// that the new retention options make stale.
pub fn carry_over(old: &QueueOptions, mut new: QueueOptions) -> QueueOptions {
    new.topic_configs = old.topic_configs.clone();
    if stored_retention_ms(&new).is_none() {
        new.topic_configs.remove(RETENTION_MS);
    }
    new
}

fn no_repeats<'a>(names: impl Iterator<Item = &'a String>) -> Result<(), ConfigError> {
    let mut seen = std::collections::BTreeSet::new();
    for name in names {
        if !seen.insert(name) {
            return Err(ConfigError::Request(format!(
                "Error due to duplicate config keys: {name} is given more than once"
            )));
        }
    }
    Ok(())
}

/// A change in the making: the topic's Kafka configs as Kafka sees them
/// (with `retention.ms` as the native options make it) and the native
/// options as JSON (the `queen.<option>` configs).
struct Change<'a> {
    old: &'a QueueOptions,
    kafka: BTreeMap<String, String>,
    native: serde_json::Map<String, serde_json::Value>,
}

impl<'a> Change<'a> {
    fn new(old: &'a QueueOptions) -> Self {
        Self {
            old,
            kafka: set_on_topic(old),
            native: native_json(old),
        }
    }

    fn set(&mut self, name: &str, value: &str) -> Result<(), ConfigError> {
        if let Some(key) = name.strip_prefix(QUEEN_PREFIX) {
            let parsed = parse_native(&self.native, key, value)?;
            self.native.insert(key.to_owned(), parsed);
            return Ok(());
        }
        known(name)?.check(value)?;
        self.kafka.insert(name.to_owned(), value.to_owned());
        Ok(())
    }

    fn delete(&mut self, name: &str) -> Result<(), ConfigError> {
        if let Some(key) = name.strip_prefix(QUEEN_PREFIX) {
            native_kind(&self.native, key)?;
            let default = native_json(&QueueOptions::default())
                .remove(key)
                .unwrap_or(serde_json::Value::Null);
            self.native.insert(key.to_owned(), default);
            return Ok(());
        }
        known(name)?;
        self.kafka.remove(name);
        Ok(())
    }

    /// APPEND (`add`) or SUBTRACT the items of `value` on a list config,
    /// starting from its default when it is not set, as Kafka does.
    fn edit_list(&mut self, name: &str, value: &str, add: bool) -> Result<(), ConfigError> {
        let def = match name.strip_prefix(QUEEN_PREFIX) {
            Some(_) => None,
            None => Some(known(name)?),
        };
        let Some(def) = def.filter(|d| d.config_type == ConfigType::List) else {
            let op = if add { "append" } else { "subtract" };
            return Err(ConfigError::Invalid(format!(
                "Config value {op} is not allowed for config key: {name} (not a list)"
            )));
        };
        let current = self
            .kafka
            .get(name)
            .cloned()
            .unwrap_or_else(|| def.default_value(0));
        let mut items: Vec<String> = list_items(&current).into_iter().map(Into::into).collect();
        for item in list_items(value) {
            if add && !items.iter().any(|i| i == item) {
                items.push(item.to_owned());
            } else if !add {
                items.retain(|i| i != item);
            }
        }
        let joined = items.join(",");
        def.check(&joined)?;
        self.kafka.insert(name.to_owned(), joined);
        Ok(())
    }

    /// Checks what spans configs, then writes the change into options.
    fn finish(self) -> Result<QueueOptions, ConfigError> {
        let lag = |name, default| {
            self.kafka
                .get(name)
                .and_then(|v| v.trim().parse::<i64>().ok())
                .unwrap_or(default)
        };
        let (min_lag, max_lag) = (
            lag(MIN_COMPACTION_LAG_MS, 0),
            lag(MAX_COMPACTION_LAG_MS, i64::MAX),
        );
        if min_lag > max_lag {
            return Err(ConfigError::Invalid(format!(
                "conflict topic config setting {MIN_COMPACTION_LAG_MS} ({min_lag}) > {MAX_COMPACTION_LAG_MS} ({max_lag})"
            )));
        }
        let mut native = self.native;
        native.insert(
            "topicConfigs".into(),
            serde_json::to_value(&self.old.topic_configs).unwrap_or_default(),
        );
        let mut out: QueueOptions = serde_json::from_value(serde_json::Value::Object(native))
            .map_err(|e| ConfigError::Invalid(format!("queue options: {e}")))?;
        let retention = self.kafka.get(RETENTION_MS).cloned();
        let mut configs = self.kafka;
        configs.remove(RETENTION_MS);
        if retention != set_on_topic(self.old).remove(RETENTION_MS) {
            // retention.ms changed: it sets the native retention, last.
            let ms = retention
                .as_deref()
                .map_or(-1, |v| v.trim().parse().unwrap_or(-1));
            if ms >= 0 {
                out.retention_enabled = true;
                out.retention_seconds = retention_seconds_for(ms);
            } else {
                // Off by age; the switch stays on for completedRetentionSeconds.
                out.retention_seconds = 0;
                out.retention_enabled &= out.completed_retention_seconds > 0;
            }
            if let Some(text) = retention {
                configs.insert(RETENTION_MS.to_owned(), text);
            }
        } else if let Some(stored) = self.old.topic_configs.get(RETENTION_MS) {
            configs.insert(RETENTION_MS.to_owned(), stored.clone());
        }
        out.topic_configs = configs;
        if stored_retention_ms(&out).is_none() {
            out.topic_configs.remove(RETENTION_MS);
        }
        Ok(out)
    }
}

/// A `queen.<option>` value read as its option's type and checked with the
/// rules of the HTTP configure ([`crate::options`]).
fn parse_native(
    native: &serde_json::Map<String, serde_json::Value>,
    key: &str,
    value: &str,
) -> Result<serde_json::Value, ConfigError> {
    let invalid = |why: String| {
        ConfigError::Invalid(format!(
            "Invalid value {value} for configuration {QUEEN_PREFIX}{key}: {why}"
        ))
    };
    let trimmed = value.trim();
    Ok(match native_kind(native, key)? {
        ConfigType::Long => {
            let n: i64 = trimmed
                .parse()
                .map_err(|_| invalid("Not a number of type LONG".into()))?;
            crate::options::check_int(key, n).map_err(invalid)?.into()
        }
        ConfigType::Boolean => match trimmed.to_ascii_lowercase().as_str() {
            "true" => true.into(),
            "false" => false.into(),
            _ => return Err(invalid("Expected value to be either true or false".into())),
        },
        _ => {
            if key == "retentionSinkHold" {
                crate::options::check_sink_hold(value).map_err(invalid)?;
            }
            value.into()
        }
    })
}
