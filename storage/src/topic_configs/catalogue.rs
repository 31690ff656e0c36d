//! The catalogue: every config a topic accepts, after Kafka's `LogConfig`,
//! and how a value is checked against it.

use super::ConfigError;

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
pub(crate) enum Valid {
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
pub(crate) enum DefaultValue {
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
    pub(crate) valid: Valid,
    pub(crate) default: DefaultValue,
    /// The broker config whose value is the default in Kafka.
    pub broker_synonym: &'static str,
    /// What it is and whether it has an effect here.
    pub doc: &'static str,
}

pub(crate) const LONG_MAX: &str = "9223372036854775807";
pub(crate) const INT_MAX: i64 = i32::MAX as i64;

macro_rules! def {
    ($name:literal, $ty:ident, $valid:expr, $default:expr, $synonym:literal, $doc:literal) => {
        ConfigDef {
            name: $name,
            config_type: $crate::topic_configs::ConfigType::$ty,
            valid: $valid,
            default: $default,
            broker_synonym: $synonym,
            doc: $doc,
        }
    };
}

pub(crate) use def;
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
    def!("message.format.version", String, Valid::Any, Text("3.0-IV1"),
        "log.message.format.version",
        "Deprecated; stored and described, and ignored as Kafka 3 ignores it: records are \
         stored in format v2 and converted for the Fetch and Produce versions that need v0 or v1."),
    def!("message.timestamp.after.max.ms", Long, Valid::Range(0, i64::MAX), Text(LONG_MAX),
        "log.message.timestamp.after.max.ms", "Stored and described; not enforced."),
    def!("message.timestamp.before.max.ms", Long, Valid::Range(0, i64::MAX), Text(LONG_MAX),
        "log.message.timestamp.before.max.ms", "Stored and described; not enforced."),
    def!("message.timestamp.difference.max.ms", Long, Valid::Range(0, i64::MAX), Text(LONG_MAX),
        "log.message.timestamp.difference.max.ms", "Stored and described; not enforced."),
    def!("message.timestamp.type", String, Valid::OneOf(&["CreateTime", "LogAppendTime"]),
        Text("CreateTime"), "log.message.timestamp.type",
        "With LogAppendTime a Kafka produce's records take the broker's time when appended \
         (Fetch still marks them CreateTime)."),
    def!("min.cleanable.dirty.ratio", Double, Valid::Range(0, 1), Text("0.5"),
        "log.cleaner.min.cleanable.ratio",
        "The share of a compacted partition's records that must be dirty before it is cleaned."),
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
pub(crate) fn list_items(value: &str) -> Vec<&str> {
    value
        .split(',')
        .map(str::trim)
        .filter(|i| !i.is_empty())
        .collect()
}

pub(super) fn known(name: &str) -> Result<&'static ConfigDef, ConfigError> {
    find(name).ok_or_else(|| ConfigError::Invalid(format!("Unknown topic config name: {name}")))
}
