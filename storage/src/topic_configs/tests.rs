//! The accessors, the catalogue's rules, every kind of change and the
//! descriptions, without a database.

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
            "Invalid value soon for configuration retention.ms: Not a number of type LONG".into()
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
        ("message.format.version", "0.10.0.0"),
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
        let e =
            alter(&o, &[(name.to_owned(), ConfigOp::Append("1".into()))]).expect_err("not a list");
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
