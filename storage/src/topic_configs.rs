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
}
