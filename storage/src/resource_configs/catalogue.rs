//! The configs of brokers and groups a client may change while the broker
//! runs, after Kafka's: the dynamic broker configs (`DynamicBrokerConfig`:
//! thread pools, log defaults, the log cleaner, listener SASL settings,
//! connection quotas) and the group configs (KIP-848's). Each is checked
//! as Kafka checks it; this broker stores and describes them. The
//! broker's own settings (its command line: `message.max.bytes`,
//! `num.partitions`, …) are static and described read-only.

use crate::topic_configs::{def, ConfigDef, DefaultValue::Text, Valid, INT_MAX, LONG_MAX};

/// The dynamic broker configs, by name.
pub(super) static BROKER: &[ConfigDef] = &[
    def!(
        "background.threads",
        Int,
        Valid::Range(1, INT_MAX),
        Text("10"),
        "background.threads",
        "Stored and described; no effect (the runtime sizes its pools)."
    ),
    def!(
        "compression.type",
        String,
        Valid::OneOf(&["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"]),
        Text("producer"),
        "compression.type",
        "Stored and described; records are stored as produced."
    ),
    def!(
        "log.cleaner.backoff.ms",
        Long,
        Valid::Range(0, i64::MAX),
        Text("15000"),
        "log.cleaner.backoff.ms",
        "Stored and described; compaction runs on its own schedule."
    ),
    def!(
        "log.cleaner.delete.retention.ms",
        Long,
        Valid::Range(0, i64::MAX),
        Text("86400000"),
        "log.cleaner.delete.retention.ms",
        "Stored and described; topics carry their own."
    ),
    def!(
        "log.cleaner.io.max.bytes.per.second",
        Double,
        Valid::Any,
        Text("1.7976931348623157E308"),
        "log.cleaner.io.max.bytes.per.second",
        "Stored and described; no effect."
    ),
    def!(
        "log.cleaner.max.compaction.lag.ms",
        Long,
        Valid::Range(1, i64::MAX),
        Text(LONG_MAX),
        "log.cleaner.max.compaction.lag.ms",
        "Stored and described; topics carry their own."
    ),
    def!(
        "log.cleaner.min.cleanable.ratio",
        Double,
        Valid::Range(0, 1),
        Text("0.5"),
        "log.cleaner.min.cleanable.ratio",
        "Stored and described; topics carry their own."
    ),
    def!(
        "log.cleaner.min.compaction.lag.ms",
        Long,
        Valid::Range(0, i64::MAX),
        Text("0"),
        "log.cleaner.min.compaction.lag.ms",
        "Stored and described; topics carry their own."
    ),
    def!(
        "log.cleaner.threads",
        Int,
        Valid::Range(0, INT_MAX),
        Text("1"),
        "log.cleaner.threads",
        "Stored and described; no effect."
    ),
    def!(
        "log.cleanup.policy",
        List,
        Valid::OneOf(&["compact", "delete"]),
        Text("delete"),
        "log.cleanup.policy",
        "Stored and described; topics carry their own."
    ),
    def!(
        "log.flush.interval.messages",
        Long,
        Valid::Range(1, i64::MAX),
        Text(LONG_MAX),
        "log.flush.interval.messages",
        "Stored and described; every write is committed."
    ),
    def!(
        "log.flush.interval.ms",
        Long,
        Valid::Range(0, i64::MAX),
        Text(LONG_MAX),
        "log.flush.interval.ms",
        "Stored and described; every write is committed."
    ),
    def!(
        "log.index.interval.bytes",
        Int,
        Valid::Range(0, INT_MAX),
        Text("4096"),
        "log.index.interval.bytes",
        "Stored and described; no effect (segments are rows)."
    ),
    def!(
        "log.message.timestamp.type",
        String,
        Valid::OneOf(&["CreateTime", "LogAppendTime"]),
        Text("CreateTime"),
        "log.message.timestamp.type",
        "Stored and described; records keep their producer's timestamp."
    ),
    def!(
        "log.retention.bytes",
        Long,
        Valid::Range(-1, i64::MAX),
        Text("-1"),
        "log.retention.bytes",
        "Stored and described; topics carry their own."
    ),
    def!(
        "log.retention.ms",
        Long,
        Valid::Range(-1, i64::MAX),
        Text("604800000"),
        "log.retention.ms",
        "Stored and described; topics carry their own."
    ),
    def!(
        "log.roll.ms",
        Long,
        Valid::Range(1, i64::MAX),
        Text("604800000"),
        "log.roll.ms",
        "Stored and described; no effect (segments are rows)."
    ),
    def!(
        "log.segment.bytes",
        Int,
        Valid::Range(14, INT_MAX),
        Text("1073741824"),
        "log.segment.bytes",
        "Stored and described; no effect (segments are rows)."
    ),
    def!(
        "max.connections",
        Int,
        Valid::Range(0, INT_MAX),
        Text("2147483647"),
        "max.connections",
        "Stored and described; --max-kafka-connections is the limit."
    ),
    def!(
        "max.connections.per.ip",
        Int,
        Valid::Range(0, INT_MAX),
        Text("2147483647"),
        "max.connections.per.ip",
        "Stored and described; no effect."
    ),
    def!(
        "metric.reporters",
        List,
        Valid::Any,
        Text(""),
        "metric.reporters",
        "Stored and described; metrics are at GET /metrics."
    ),
    def!(
        "num.io.threads",
        Int,
        Valid::Range(1, INT_MAX),
        Text("8"),
        "num.io.threads",
        "Stored and described; no effect (the runtime sizes its pools)."
    ),
    def!(
        "num.network.threads",
        Int,
        Valid::Range(1, INT_MAX),
        Text("3"),
        "num.network.threads",
        "Stored and described; no effect (the runtime sizes its pools)."
    ),
    def!(
        "num.recovery.threads.per.data.dir",
        Int,
        Valid::Range(1, INT_MAX),
        Text("2"),
        "num.recovery.threads.per.data.dir",
        "Stored and described; no effect."
    ),
    def!(
        "num.replica.fetchers",
        Int,
        Valid::Range(1, INT_MAX),
        Text("1"),
        "num.replica.fetchers",
        "Stored and described; no effect (the database replicates)."
    ),
    def!(
        "sasl.kerberos.kinit.cmd",
        String,
        Valid::Any,
        Text("/usr/bin/kinit"),
        "sasl.kerberos.kinit.cmd",
        "Stored and described; no effect (no GSSAPI here)."
    ),
    def!(
        "sasl.kerberos.min.time.before.relogin",
        Long,
        Valid::Any,
        Text("60000"),
        "sasl.kerberos.min.time.before.relogin",
        "Stored and described; no effect (no GSSAPI here)."
    ),
    def!(
        "sasl.kerberos.ticket.renew.jitter",
        Double,
        Valid::Any,
        Text("0.05"),
        "sasl.kerberos.ticket.renew.jitter",
        "Stored and described; no effect (no GSSAPI here)."
    ),
    def!(
        "sasl.kerberos.ticket.renew.window.factor",
        Double,
        Valid::Any,
        Text("0.8"),
        "sasl.kerberos.ticket.renew.window.factor",
        "Stored and described; no effect (no GSSAPI here)."
    ),
    def!(
        "unclean.leader.election.enable",
        Boolean,
        Valid::Any,
        Text("false"),
        "unclean.leader.election.enable",
        "Stored and described; no effect (the database replicates)."
    ),
];

/// The group configs (KIP-848 and KIP-932 share groups), by name.
pub(super) static GROUP: &[ConfigDef] = &[
    def!(
        "consumer.heartbeat.interval.ms",
        Int,
        Valid::Range(1, INT_MAX),
        Text("5000"),
        "group.consumer.heartbeat.interval.ms",
        "Stored and described; the broker's interval applies."
    ),
    def!(
        "consumer.session.timeout.ms",
        Int,
        Valid::Range(1, INT_MAX),
        Text("45000"),
        "group.consumer.session.timeout.ms",
        "Stored and described; --group-consumer-session-timeout-ms applies."
    ),
    def!(
        "share.auto.offset.reset",
        String,
        Valid::OneOf(&["earliest", "latest"]),
        Text("latest"),
        "share.auto.offset.reset",
        "Where a share group starts on a partition it has not consumed (KIP-932)."
    ),
    def!(
        "share.delivery.count.limit",
        Int,
        Valid::Range(2, 10),
        Text("5"),
        "group.share.delivery.count.limit",
        "Deliveries of a record before it goes to the dead-letter queue (KIP-932)."
    ),
    def!(
        "share.record.lock.duration.ms",
        Int,
        Valid::Range(1000, 3_600_000),
        Text("30000"),
        "group.share.record.lock.duration.ms",
        "How long a share consumer holds an acquired record, rounded up to whole seconds (KIP-932)."
    ),
];

/// The config named `name` in `catalogue`, if it has it.
pub(super) fn find(catalogue: &'static [ConfigDef], name: &str) -> Option<&'static ConfigDef> {
    catalogue
        .binary_search_by(|d| d.name.cmp(name))
        .ok()
        .map(|i| &catalogue[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogues_are_sorted_for_lookup() {
        for catalogue in [BROKER, GROUP] {
            assert!(catalogue.windows(2).all(|w| w[0].name < w[1].name));
            for def in catalogue {
                assert!(std::ptr::eq(find(catalogue, def.name).expect("found"), def));
                let default = def.default_value(0);
                assert!(def.check(&default).is_ok(), "{}: {default}", def.name);
            }
        }
    }
}
