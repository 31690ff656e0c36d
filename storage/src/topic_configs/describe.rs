//! Describing a topic's configs: DescribeConfigs and the CreateTopics answer.

use super::catalogue::CATALOGUE;
use super::{native_json, native_kind, set_on_topic, ConfigType, QUEEN_PREFIX};
use crate::options::QueueOptions;

/// One config as DescribeConfigs shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedConfig {
    /// The config's name.
    pub name: String,
    /// The effective value.
    pub value: String,
    /// Whether it is set on the topic (`DYNAMIC_TOPIC_CONFIG`), rather than
    /// a default (`DEFAULT_CONFIG`).
    pub set_on_topic: bool,
    /// Its type.
    pub config_type: ConfigType,
    /// What it is.
    pub doc: &'static str,
    /// The broker config that supplies the default, with that default.
    pub default_synonym: Option<(&'static str, String)>,
}

/// Every config of a topic with its effective value: the Kafka topic
/// configs of [`CATALOGUE`], then the queue's own options as
/// `queen.<option>` (set on the topic where they differ from the native
/// defaults). `broker_max_message_bytes` is the broker's
/// `message.max.bytes`, the default of `max.message.bytes`.
pub fn describe(o: &QueueOptions, broker_max_message_bytes: i64) -> Vec<DescribedConfig> {
    let set = set_on_topic(o);
    let mut out = Vec::with_capacity(CATALOGUE.len() + 24);
    for def in CATALOGUE {
        let default = def.default_value(broker_max_message_bytes);
        let value = set.get(def.name);
        out.push(DescribedConfig {
            name: def.name.to_owned(),
            value: value.cloned().unwrap_or_else(|| default.clone()),
            set_on_topic: value.is_some(),
            config_type: def.config_type,
            doc: def.doc,
            default_synonym: Some((def.broker_synonym, default)),
        });
    }
    let defaults = native_json(&QueueOptions::default());
    let native = native_json(o);
    for (key, value) in &native {
        let config_type = native_kind(&native, key).unwrap_or(ConfigType::String);
        let text = match value {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out.push(DescribedConfig {
            name: format!("{QUEEN_PREFIX}{key}"),
            value: text,
            set_on_topic: defaults.get(key) != Some(value),
            config_type,
            doc: "The queue's own option of the same name (see the HTTP API's configure).",
            default_synonym: None,
        });
    }
    out
}
