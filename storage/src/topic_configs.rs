//! The Kafka topic configs of a queue, read from its [`QueueOptions`].
//!
//! Native options and Kafka topic configs are two views of one set of
//! options. The configs a Kafka client set are kept in
//! [`QueueOptions::topic_configs`] exactly as given; a config absent there
//! has its default. `retention.ms` is the one config that maps onto native
//! options (`retentionEnabled` + `retentionSeconds`, see [`retention_ms`]).
//!
//! The accessors below are what the engine acts on (retention, compaction,
//! produce limits); each answers the effective value, the default included.

use std::collections::BTreeMap;

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
/// `max.message.bytes`: the largest record batch a produce may carry.
pub const MAX_MESSAGE_BYTES: &str = "max.message.bytes";

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

/// The largest record batch a produce to this topic may carry, in bytes:
/// `max.message.bytes`, else the broker's `message.max.bytes`
/// (`broker_default`).
pub fn max_message_bytes(o: &QueueOptions, broker_default: i64) -> i64 {
    long(o, MAX_MESSAGE_BYTES).unwrap_or(broker_default)
}

// ---------------------------------------------------------------------------
// The catalogue: every config a topic accepts, after Kafka's `LogConfig`.
// ---------------------------------------------------------------------------

/// The prefix of the queue's own options seen as Kafka configs
/// (`queen.leaseTime`, `queen.dedupWindowSeconds`, …).
pub const QUEEN_PREFIX: &str = "queen.";

/// A config's type, as DescribeConfigs (v3+) reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    /// `true` or `false`.
    Boolean,
    /// Free text or one of a set of words.
    String,
    /// A 32-bit integer.
    Int,
    /// A 64-bit integer.
    Long,
    /// A floating-point number.
    Double,
    /// A comma-separated list.
    List,
}

impl ConfigType {
    /// The wire code (`DescribeConfigsResponse` `ConfigType`).
    pub fn code(self) -> i8 {
        match self {
            Self::Boolean => 1,
            Self::String => 2,
            Self::Int => 3,
            Self::Long => 5,
            Self::Double => 6,
            Self::List => 7,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Boolean => "BOOLEAN",
            Self::String => "STRING",
            Self::Int => "INT",
            Self::Long => "LONG",
            Self::Double => "DOUBLE",
            Self::List => "LIST",
        }
    }
}

/// The values a config accepts besides its type.
#[derive(Debug, Clone, Copy)]
enum Valid {
    /// Any value of the type.
    Any,
    /// An integer (or, for a double, a number) in `min..=max`.
    Range(i64, i64),
    /// `-1`, or an integer in `min..=max` (the compression levels).
    MinusOneOr(i64, i64),
    /// One of these words (a string), or a list of them.
    OneOf(&'static [&'static str]),
    /// `*`, or a list of `partition:broker` pairs.
    ThrottledReplicas,
    /// Only `false`: what this broker does not have cannot be enabled.
    OnlyFalse,
}

/// What a config defaults to.
#[derive(Debug, Clone, Copy)]
enum DefaultValue {
    /// This text.
    Text(&'static str),
    /// The broker's `message.max.bytes`.
    BrokerMaxMessageBytes,
}

/// One topic config: its name, type, valid values, default, the broker
/// config that supplies the default in Kafka, and what it does here.
#[derive(Debug)]
pub struct ConfigDef {
    /// The config's name.
    pub name: &'static str,
    /// Its type.
    pub config_type: ConfigType,
    valid: Valid,
    default: DefaultValue,
    /// The broker config whose value is the default in Kafka.
    pub broker_synonym: &'static str,
    /// What it is and whether it has an effect here.
    pub doc: &'static str,
}

const LONG_MAX: &str = "9223372036854775807";
const INT_MAX: i64 = i32::MAX as i64;

macro_rules! def {
    ($name:literal, $ty:ident, $valid:expr, $default:expr, $synonym:literal, $doc:literal) => {
        ConfigDef {
            name: $name,
            config_type: ConfigType::$ty,
            valid: $valid,
            default: $default,
            broker_synonym: $synonym,
            doc: $doc,
        }
    };
}

use DefaultValue::Text;

/// Every Kafka topic config a topic accepts, by name. The list and the
/// rules are Kafka's `LogConfig` (4.x, with the 3.x configs clients still
/// send). Only `retention.ms`, `retention.bytes`, `cleanup.policy`, the
/// compaction settings and `max.message.bytes` act on the log here; the
/// others are stored and described. Segments are rows, so the segment,
/// index, flush and preallocation settings have no effect.
pub static CATALOGUE: &[ConfigDef] = &[
    def!("cleanup.policy", List, Valid::OneOf(&["compact", "delete"]), Text("delete"),
        "log.cleanup.policy",
        "delete: records go by age and size; compact: only the latest record of each key is kept; both, or neither (kept forever)."),
    def!("compression.gzip.level", Int, Valid::MinusOneOr(1, 9), Text("-1"),
        "compression.gzip.level", "Stored and described; batches are stored as produced."),
    def!("compression.lz4.level", Int, Valid::Range(1, 17), Text("9"),
        "compression.lz4.level", "Stored and described; batches are stored as produced."),
    def!("compression.type", String,
        Valid::OneOf(&["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"]),
        Text("producer"), "compression.type",
        "Stored and described; records are stored decompressed and fetched uncompressed whatever it says."),
    def!("compression.zstd.level", Int, Valid::Range(-131_072, 22), Text("3"),
        "compression.zstd.level", "Stored and described; batches are stored as produced."),
    def!("delete.retention.ms", Long, Valid::Range(0, i64::MAX), Text("86400000"),
        "log.cleaner.delete.retention.ms",
        "How long compaction keeps a tombstone (a record with a null value), in milliseconds."),
    def!("file.delete.delay.ms", Long, Valid::Range(0, i64::MAX), Text("60000"),
        "log.segment.delete.delay.ms", "Stored and described; no effect (segments are rows)."),
    def!("flush.messages", Long, Valid::Range(1, i64::MAX), Text(LONG_MAX),
        "log.flush.interval.messages",
        "Stored and described; no effect: every acknowledged write is committed to the database."),
    def!("flush.ms", Long, Valid::Range(0, i64::MAX), Text(LONG_MAX),
        "log.flush.interval.ms",
        "Stored and described; no effect: every acknowledged write is committed to the database."),
    def!("follower.replication.throttled.replicas", List, Valid::ThrottledReplicas, Text(""),
        "follower.replication.throttled.replicas",
        "Stored and described; no effect (the database replicates)."),
    def!("index.interval.bytes", Int, Valid::Range(0, INT_MAX), Text("4096"),
        "log.index.interval.bytes", "Stored and described; no effect (segments are rows)."),
    def!("leader.replication.throttled.replicas", List, Valid::ThrottledReplicas, Text(""),
        "leader.replication.throttled.replicas",
        "Stored and described; no effect (the database replicates)."),
    def!("local.retention.bytes", Long, Valid::Range(-2, i64::MAX), Text("-2"),
        "log.local.retention.bytes", "Stored and described; no effect (no tiered storage)."),
    def!("local.retention.ms", Long, Valid::Range(-2, i64::MAX), Text("-2"),
        "log.local.retention.ms", "Stored and described; no effect (no tiered storage)."),
    def!("max.compaction.lag.ms", Long, Valid::Range(1, i64::MAX), Text(LONG_MAX),
        "log.cleaner.max.compaction.lag.ms",
        "The age past which a record is due for compaction, in milliseconds."),
    def!("max.message.bytes", Int, Valid::Range(0, INT_MAX), DefaultValue::BrokerMaxMessageBytes,
        "message.max.bytes",
        "The largest record batch a produce may carry, in bytes (MESSAGE_TOO_LARGE beyond)."),
    def!("message.downconversion.enable", Boolean, Valid::Any, Text("true"),
        "log.message.downconversion.enable",
        "Stored and described; no effect (Fetch v4+ needs no down-conversion)."),
    def!("message.timestamp.after.max.ms", Long, Valid::Range(0, i64::MAX), Text(LONG_MAX),
        "log.message.timestamp.after.max.ms", "Stored and described; not enforced."),
    def!("message.timestamp.before.max.ms", Long, Valid::Range(0, i64::MAX), Text(LONG_MAX),
        "log.message.timestamp.before.max.ms", "Stored and described; not enforced."),
    def!("message.timestamp.difference.max.ms", Long, Valid::Range(0, i64::MAX), Text(LONG_MAX),
        "log.message.timestamp.difference.max.ms", "Stored and described; not enforced."),
    def!("message.timestamp.type", String, Valid::OneOf(&["CreateTime", "LogAppendTime"]),
        Text("CreateTime"), "log.message.timestamp.type",
        "Stored and described; records keep the timestamp their producer gave."),
    def!("min.cleanable.dirty.ratio", Double, Valid::Range(0, 1), Text("0.5"),
        "log.cleaner.min.cleanable.ratio", "Stored and described."),
    def!("min.compaction.lag.ms", Long, Valid::Range(0, i64::MAX), Text("0"),
        "log.cleaner.min.compaction.lag.ms",
        "Records younger than this are not compacted, in milliseconds."),
    def!("min.insync.replicas", Int, Valid::Range(1, INT_MAX), Text("1"),
        "min.insync.replicas", "Stored and described; no effect (the database replicates)."),
    def!("preallocate", Boolean, Valid::Any, Text("false"), "log.preallocate",
        "Stored and described; no effect (segments are rows)."),
    def!("remote.log.copy.disable", Boolean, Valid::Any, Text("false"),
        "remote.log.copy.disable", "Stored and described; no effect (no tiered storage)."),
    def!("remote.log.delete.on.disable", Boolean, Valid::Any, Text("false"),
        "remote.log.delete.on.disable", "Stored and described; no effect (no tiered storage)."),
    def!("remote.storage.enable", Boolean, Valid::OnlyFalse, Text("false"),
        "remote.log.storage.system.enable",
        "Tiered storage: not available on this broker, so only false is accepted."),
    def!("retention.bytes", Long, Valid::Range(-1, i64::MAX), Text("-1"),
        "log.retention.bytes",
        "The size past which a partition's oldest records are deleted, in bytes; -1 for no limit."),
    def!("retention.ms", Long, Valid::Range(-1, i64::MAX), Text("-1"),
        "log.retention.ms",
        "The age past which records are deleted, in milliseconds; -1 keeps them forever. The same as the queue's retentionEnabled and retentionSeconds (rounded up to seconds)."),
    def!("segment.bytes", Int, Valid::Range(14, INT_MAX), Text("1073741824"),
        "log.segment.bytes", "Stored and described; no effect (segments are rows)."),
    def!("segment.index.bytes", Int, Valid::Range(4, INT_MAX), Text("10485760"),
        "log.index.size.max.bytes", "Stored and described; no effect (segments are rows)."),
    def!("segment.jitter.ms", Long, Valid::Range(0, i64::MAX), Text("0"),
        "log.roll.jitter.ms", "Stored and described; no effect (segments are rows)."),
    def!("segment.ms", Long, Valid::Range(1, i64::MAX), Text("604800000"),
        "log.roll.ms", "Stored and described; no effect (segments are rows)."),
    def!("unclean.leader.election.enable", Boolean, Valid::Any, Text("false"),
        "unclean.leader.election.enable",
        "Stored and described; no effect (the database replicates)."),
];

/// The config named `name`, if topics have it.
pub fn find(name: &str) -> Option<&'static ConfigDef> {
    CATALOGUE
        .binary_search_by(|d| d.name.cmp(name))
        .ok()
        .map(|i| &CATALOGUE[i])
}

impl ConfigDef {
    /// The default value, given the broker's `message.max.bytes`.
    pub fn default_value(&self, broker_max_message_bytes: i64) -> String {
        match self.default {
            Text(text) => text.to_owned(),
            DefaultValue::BrokerMaxMessageBytes => broker_max_message_bytes.to_string(),
        }
    }

    /// Checks `value` as Kafka's `ConfigDef` would: type, then valid values.
    pub fn check(&self, value: &str) -> Result<(), ConfigError> {
        let invalid = |why: String| {
            ConfigError::Invalid(format!(
                "Invalid value {value} for configuration {}: {why}",
                self.name
            ))
        };
        let trimmed = value.trim();
        let not_a_number = || invalid(format!("Not a number of type {}", self.config_type.name()));
        match self.config_type {
            ConfigType::Boolean => {
                let b = if trimmed.eq_ignore_ascii_case("true") {
                    true
                } else if trimmed.eq_ignore_ascii_case("false") {
                    false
                } else {
                    return Err(invalid("Expected value to be either true or false".into()));
                };
                if b && matches!(self.valid, Valid::OnlyFalse) {
                    return Err(invalid(
                        "tiered storage is not available on this broker".into(),
                    ));
                }
            }
            ConfigType::Int | ConfigType::Long => {
                let n: i64 = trimmed.parse().map_err(|_| not_a_number())?;
                if self.config_type == ConfigType::Int && i32::try_from(n).is_err() {
                    return Err(not_a_number());
                }
                check_range(self.valid, n as f64).map_err(invalid)?;
            }
            ConfigType::Double => {
                let x: f64 = trimmed
                    .parse()
                    .ok()
                    .filter(|x: &f64| x.is_finite())
                    .ok_or_else(not_a_number)?;
                check_range(self.valid, x).map_err(invalid)?;
            }
            ConfigType::String => {
                if let Valid::OneOf(words) = self.valid {
                    if !words.contains(&trimmed) {
                        return Err(invalid(format!(
                            "String must be one of: {}",
                            words.join(", ")
                        )));
                    }
                }
            }
            ConfigType::List => {
                let items = list_items(value);
                match self.valid {
                    Valid::OneOf(words) => {
                        if let Some(bad) = items.iter().find(|i| !words.contains(i)) {
                            return Err(ConfigError::Invalid(format!(
                                "Invalid value {bad} for configuration {}: String must be one of: {}",
                                self.name,
                                words.join(", ")
                            )));
                        }
                    }
                    Valid::ThrottledReplicas => {
                        let pair = |i: &str| {
                            i.split_once(':').is_some_and(|(p, b)| {
                                p.trim().parse::<u32>().is_ok() && b.trim().parse::<u32>().is_ok()
                            })
                        };
                        let ok = items == ["*"] || items.iter().all(|i| pair(i));
                        if !ok {
                            return Err(invalid(
                                "must be the wildcard (*) or a list of partitionId:brokerId pairs"
                                    .into(),
                            ));
                        }
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

fn check_range(valid: Valid, x: f64) -> Result<(), String> {
    let (min, max) = match valid {
        Valid::Range(min, max) => (min, max),
        Valid::MinusOneOr(_, _) if x == -1.0 => return Ok(()),
        Valid::MinusOneOr(min, max) => (min, max),
        _ => return Ok(()),
    };
    if x < min as f64 {
        Err(format!("Value must be at least {min}"))
    } else if x > max as f64 {
        Err(format!("Value must be no more than {max}"))
    } else {
        Ok(())
    }
}

/// The items of a list value: comma-separated, trimmed, empty ones left out.
fn list_items(value: &str) -> Vec<&str> {
    value
        .split(',')
        .map(str::trim)
        .filter(|i| !i.is_empty())
        .collect()
}

// ---------------------------------------------------------------------------
// Changing configs: CreateTopics, AlterConfigs, IncrementalAlterConfigs.
// ---------------------------------------------------------------------------

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

fn known(name: &str) -> Result<&'static ConfigDef, ConfigError> {
    find(name).ok_or_else(|| ConfigError::Invalid(format!("Unknown topic config name: {name}")))
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

// ---------------------------------------------------------------------------
// Describing: DescribeConfigs and the CreateTopics answer.
// ---------------------------------------------------------------------------

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

#[cfg(test)]
mod tests {
    use super::*;

    fn with(configs: &[(&str, &str)]) -> QueueOptions {
        let mut o = QueueOptions::for_kafka_topic();
        for (k, v) in configs {
            o.topic_configs.insert((*k).into(), (*v).into());
        }
        o
    }

    #[test]
    fn defaults_when_nothing_is_set() {
        let o = QueueOptions::default();
        assert_eq!(retention_ms(&o), None);
        assert_eq!(retention_bytes(&o), None);
        assert_eq!(cleanup_policy(&o), CleanupPolicy::default());
        assert_eq!(delete_retention_ms(&o), 86_400_000);
        assert_eq!(min_compaction_lag_ms(&o), 0);
        assert_eq!(max_compaction_lag_ms(&o), i64::MAX);
        assert_eq!(max_message_bytes(&o, 1000), 1000);
    }

    #[test]
    fn retention_ms_is_exact_while_it_rounds_up_to_the_native_seconds() {
        let mut o = with(&[("retention.ms", "86400123")]);
        o.retention_enabled = true;
        o.retention_seconds = 86_401;
        assert_eq!(retention_ms(&o), Some(86_400_123));
        // A native configure changed the seconds: the native value counts.
        o.retention_seconds = 60;
        assert_eq!(retention_ms(&o), Some(60_000));
        // Retention switched off natively: kept forever.
        o.retention_seconds = 86_401;
        o.retention_enabled = false;
        assert_eq!(retention_ms(&o), None);
    }

    #[test]
    fn retention_seconds_round_up_and_never_reach_zero() {
        assert_eq!(retention_seconds_for(0), 1);
        assert_eq!(retention_seconds_for(1), 1);
        assert_eq!(retention_seconds_for(1000), 1);
        assert_eq!(retention_seconds_for(1001), 2);
        assert_eq!(retention_seconds_for(86_400_123), 86_401);
    }

    #[test]
    fn cleanup_policy_reads_either_order() {
        let both = CleanupPolicy {
            delete: true,
            compact: true,
        };
        assert_eq!(
            cleanup_policy(&with(&[("cleanup.policy", "compact,delete")])),
            both
        );
        assert_eq!(
            cleanup_policy(&with(&[("cleanup.policy", "delete, compact")])),
            both
        );
        let compact = cleanup_policy(&with(&[("cleanup.policy", "compact")]));
        assert!(compact.compact && !compact.delete);
        let none = cleanup_policy(&with(&[("cleanup.policy", "")]));
        assert!(!none.compact && !none.delete);
    }

    #[test]
    fn typed_values_are_read() {
        let o = with(&[
            ("retention.bytes", "1048576"),
            ("delete.retention.ms", "5"),
            ("min.compaction.lag.ms", "7"),
            ("max.compaction.lag.ms", "9"),
            ("max.message.bytes", "2048"),
        ]);
        assert_eq!(retention_bytes(&o), Some(1_048_576));
        assert_eq!(delete_retention_ms(&o), 5);
        assert_eq!(min_compaction_lag_ms(&o), 7);
        assert_eq!(max_compaction_lag_ms(&o), 9);
        assert_eq!(max_message_bytes(&o, 1000), 2048);
        assert_eq!(retention_bytes(&with(&[("retention.bytes", "-1")])), None);
    }

    fn configs(pairs: &[(&str, &str)]) -> Vec<(String, Option<String>)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Some((*v).to_owned())))
            .collect()
    }

    fn described(o: &QueueOptions, name: &str) -> DescribedConfig {
        describe(o, 1_000_000)
            .into_iter()
            .find(|d| d.name == name)
            .expect("described")
    }

    #[test]
    fn the_catalogue_is_sorted_and_findable() {
        assert!(CATALOGUE.windows(2).all(|w| w[0].name < w[1].name));
        for def in CATALOGUE {
            assert!(find(def.name).is_some(), "{}", def.name);
            def.check(&def.default_value(1_000_000))
                .unwrap_or_else(|e| panic!("{}: default refused: {e}", def.name));
        }
        assert!(find("dummy.doesntexist").is_none());
    }

    #[test]
    fn a_new_topic_keeps_retention_ms_exactly() {
        let o = for_new_topic(&configs(&[("retention.ms", "86400123")])).expect("valid");
        assert!(o.retention_enabled);
        assert_eq!(o.retention_seconds, 86_401);
        assert_eq!(
            o.dedup_window_seconds, 0,
            "a Kafka topic has no dedup window"
        );
        assert_eq!(
            o.topic_configs.get("retention.ms").map(String::as_str),
            Some("86400123")
        );
        let d = described(&o, "retention.ms");
        assert_eq!((d.value.as_str(), d.set_on_topic), ("86400123", true));
        assert_eq!(retention_ms(&o), Some(86_400_123));
        let d = described(&QueueOptions::for_kafka_topic(), "retention.ms");
        assert_eq!((d.value.as_str(), d.set_on_topic), ("-1", false));
    }

    #[test]
    fn bad_values_are_refused_with_kafkas_words() {
        let refused = |pairs: &[(&str, &str)]| for_new_topic(&configs(pairs)).expect_err("refused");
        assert_eq!(
            refused(&[("dummy.doesntexist", "1")]),
            ConfigError::Invalid("Unknown topic config name: dummy.doesntexist".into())
        );
        assert_eq!(
            refused(&[("retention.ms", "soon")]),
            ConfigError::Invalid(
                "Invalid value soon for configuration retention.ms: Not a number of type LONG"
                    .into()
            )
        );
        assert_eq!(
            refused(&[("retention.ms", "-2")]),
            ConfigError::Invalid(
                "Invalid value -2 for configuration retention.ms: Value must be at least -1".into()
            )
        );
        assert!(
            matches!(refused(&[("cleanup.policy", "compact,shred")]), ConfigError::Invalid(m) if m.contains("shred"))
        );
        assert!(
            matches!(refused(&[("max.message.bytes", "3000000000")]), ConfigError::Invalid(m) if m.contains("INT"))
        );
        assert!(matches!(
            refused(&[("preallocate", "yes")]),
            ConfigError::Invalid(_)
        ));
        assert!(matches!(
            refused(&[("min.cleanable.dirty.ratio", "1.5")]),
            ConfigError::Invalid(_)
        ));
        assert!(matches!(
            refused(&[("message.timestamp.type", "Whenever")]),
            ConfigError::Invalid(_)
        ));
        assert!(matches!(
            refused(&[("remote.storage.enable", "true")]),
            ConfigError::Invalid(_)
        ));
        assert!(matches!(
            refused(&[("min.compaction.lag.ms", "10"), ("max.compaction.lag.ms", "5")]),
            ConfigError::Invalid(m) if m.starts_with("conflict topic config setting")
        ));
        assert!(
            matches!(refused(&[("queen.leaseTime", "-1")]), ConfigError::Invalid(m) if m.contains("leaseTime must be between 0 and"))
        );
        assert!(matches!(
            refused(&[("queen.leaseTime", "soon")]),
            ConfigError::Invalid(_)
        ));
        assert!(matches!(
            refused(&[("queen.nothing", "1")]),
            ConfigError::Invalid(_)
        ));
        assert!(matches!(
            refused(&[("queen.topicConfigs", "{}")]),
            ConfigError::Invalid(_)
        ));
        assert!(matches!(
            refused(&[("retention.ms", "1"), ("retention.ms", "2")]),
            ConfigError::Request(_)
        ));
    }

    #[test]
    fn common_client_configs_are_accepted_as_given() {
        let given = [
            ("cleanup.policy", "delete, compact"),
            ("compression.type", "lz4"),
            ("delete.retention.ms", "900"),
            ("flush.ms", "12345678"),
            ("max.compaction.lag.ms", "3600000"),
            ("segment.bytes", "1048576"),
            ("segment.ms", "60000"),
            ("message.timestamp.type", "LogAppendTime"),
            ("min.insync.replicas", "2"),
            ("unclean.leader.election.enable", "TRUE"),
            ("message.downconversion.enable", "false"),
            ("leader.replication.throttled.replicas", "0:1,1:1"),
            ("follower.replication.throttled.replicas", "*"),
        ];
        let o = for_new_topic(&configs(&given)).expect("valid");
        for (name, value) in given {
            let d = described(&o, name);
            assert_eq!((d.value.as_str(), d.set_on_topic), (value, true), "{name}");
        }
        assert_eq!(described(&o, "max.message.bytes").value, "1000000");
        assert!(!described(&o, "max.message.bytes").set_on_topic);
    }

    #[test]
    fn replace_resets_what_is_not_given_and_keeps_native_options() {
        let mut o = for_new_topic(&configs(&[
            ("retention.ms", "5000"),
            ("cleanup.policy", "compact"),
            ("queen.leaseTime", "10"),
        ]))
        .expect("valid");
        assert_eq!((o.lease_time, o.retention_seconds), (10, 5));
        o = replace(&o, &configs(&[("max.message.bytes", "2048")])).expect("valid");
        assert_eq!(o.topic_configs.len(), 1, "{:?}", o.topic_configs);
        assert_eq!(max_message_bytes(&o, 1), 2048);
        assert_eq!(cleanup_policy(&o), CleanupPolicy::default());
        assert!(!o.retention_enabled && o.retention_seconds == 0);
        assert_eq!(retention_ms(&o), None);
        assert_eq!(o.lease_time, 10, "queen options not given are kept");
        // A refused replace changes nothing: it answers an error only.
        assert!(replace(&o, &configs(&[("retention.ms", "x")])).is_err());
    }

    #[test]
    fn incremental_set_delete_append_subtract() {
        let o = QueueOptions::for_kafka_topic();
        let set = |name: &str, v: &str| (name.to_owned(), ConfigOp::Set(v.into()));
        let o = alter(
            &o,
            &[
                set("retention.ms", "1500"),
                set("queen.dedupWindowSeconds", "60"),
            ],
        )
        .expect("valid");
        assert_eq!((o.retention_seconds, o.dedup_window_seconds), (2, 60));
        let append = (
            "cleanup.policy".to_owned(),
            ConfigOp::Append("compact".into()),
        );
        let o = alter(&o, std::slice::from_ref(&append)).expect("valid");
        assert_eq!(o.topic_configs["cleanup.policy"], "delete,compact");
        assert_eq!(
            alter(&o, &[append]).expect("valid").topic_configs["cleanup.policy"],
            "delete,compact"
        );
        let subtract = (
            "cleanup.policy".to_owned(),
            ConfigOp::Subtract("delete".into()),
        );
        let o = alter(&o, &[subtract]).expect("valid");
        assert_eq!(o.topic_configs["cleanup.policy"], "compact");
        assert_eq!(o.retention_seconds, 2, "untouched configs stay");
        let o = alter(&o, &[("retention.ms".to_owned(), ConfigOp::Delete)]).expect("valid");
        assert!(!o.retention_enabled && !o.topic_configs.contains_key("retention.ms"));
        let o = alter(
            &o,
            &[("queen.dedupWindowSeconds".to_owned(), ConfigOp::Delete)],
        )
        .expect("valid");
        assert_eq!(o.dedup_window_seconds, 3600, "back to the native default");
        for name in ["retention.ms", "queen.leaseTime"] {
            let e = alter(&o, &[(name.to_owned(), ConfigOp::Append("1".into()))])
                .expect_err("not a list");
            assert!(
                matches!(e, ConfigError::Invalid(m) if m.contains("append")),
                "{name}"
            );
        }
    }

    #[test]
    fn retention_minus_one_keeps_the_completed_rule_on() {
        let o = QueueOptions {
            retention_enabled: true,
            retention_seconds: 60,
            completed_retention_seconds: 30,
            ..QueueOptions::default()
        };
        assert_eq!(described(&o, "retention.ms").value, "60000");
        let o = alter(
            &o,
            &[("retention.ms".to_owned(), ConfigOp::Set("-1".into()))],
        )
        .expect("valid");
        assert!(
            o.retention_enabled,
            "completedRetentionSeconds still needs the switch"
        );
        assert_eq!(o.retention_seconds, 0);
        assert_eq!(retention_ms(&o), None);
        let d = described(&o, "retention.ms");
        assert_eq!((d.value.as_str(), d.set_on_topic), ("-1", true));
    }

    #[test]
    fn a_native_configure_carries_the_topic_configs_over() {
        let old = for_new_topic(&configs(&[
            ("retention.ms", "86400123"),
            ("cleanup.policy", "compact"),
        ]))
        .expect("valid");
        let same = QueueOptions {
            retention_enabled: true,
            retention_seconds: 86_401,
            ..QueueOptions::default()
        };
        let kept = carry_over(&old, same);
        assert_eq!(kept.topic_configs, old.topic_configs);
        let changed = QueueOptions {
            retention_enabled: true,
            retention_seconds: 10,
            ..QueueOptions::default()
        };
        let moved = carry_over(&old, changed);
        assert!(!moved.topic_configs.contains_key("retention.ms"), "stale");
        assert_eq!(moved.topic_configs["cleanup.policy"], "compact");
        assert_eq!(described(&moved, "retention.ms").value, "10000");
    }

    #[test]
    fn queen_options_are_described_and_marked_when_not_default() {
        let o = QueueOptions::for_kafka_topic();
        let d = described(&o, "queen.dedupWindowSeconds");
        assert_eq!(
            (d.value.as_str(), d.set_on_topic, d.config_type),
            ("0", true, ConfigType::Long)
        );
        let d = described(&o, "queen.leaseTime");
        assert_eq!((d.value.as_str(), d.set_on_topic), ("300", false));
        assert_eq!(
            described(&o, "queen.deadLetterQueue").config_type,
            ConfigType::Boolean
        );
        assert!(describe(&o, 1)
            .iter()
            .all(|d| d.name != "queen.topicConfigs"));
    }
}
