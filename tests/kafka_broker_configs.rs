//! Dynamic configs of brokers and groups, on SQLite and PostgreSQL:
//! AlterConfigs and IncrementalAlterConfigs on a BROKER resource (this
//! broker, or the default of every broker) and on a GROUP resource, as
//! Kafka answers them (librdkafka's test 0081 sets
//! `sasl.kerberos.min.time.before.relogin` and expects success), checked
//! values, static settings refused, and everything kept in the database
//! across a restart.

mod support;

use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::{
    alter_configs_request, incremental_alter_configs_request, AlterConfigsRequest,
    AlterConfigsResponse, ApiKey, DescribeConfigsRequest, DescribeConfigsResponse,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use support::kafka::call;
use support::Broker;

const BROKER: i8 = 4;
const GROUP: i8 = 32;
/// Kafka's config sources.
const DYNAMIC_BROKER: i8 = 2;
const DYNAMIC_DEFAULT_BROKER: i8 = 3;
const DEFAULT: i8 = 5;
const GROUP_CONFIG: i8 = 8;

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_owned())
}

/// The node id this broker gives itself in Metadata.
fn node_id(kafka: &str) -> String {
    let answer: kafka_protocol::messages::MetadataResponse = call(
        kafka,
        ApiKey::Metadata,
        9,
        &kafka_protocol::messages::MetadataRequest::default().with_topics(Some(Vec::new())),
    );
    answer.brokers[0].node_id.0.to_string()
}

/// AlterConfigs v2 of one resource: its error code and message.
fn alter(kafka: &str, kind: i8, name: &str, configs: &[(&str, &str)]) -> (i16, String) {
    let configs = configs
        .iter()
        .map(|(k, v)| {
            alter_configs_request::AlterableConfig::default()
                .with_name(s(k))
                .with_value(Some(s(v)))
        })
        .collect();
    let request = AlterConfigsRequest::default().with_resources(vec![
        alter_configs_request::AlterConfigsResource::default()
            .with_resource_type(kind)
            .with_resource_name(s(name))
            .with_configs(configs),
    ]);
    let answer: AlterConfigsResponse = call(kafka, ApiKey::AlterConfigs, 2, &request);
    let r = &answer.responses[0];
    let message = r.error_message.as_ref().map(|m| m.to_string());
    (r.error_code, message.unwrap_or_default())
}

/// IncrementalAlterConfigs v1 of one resource with (name, op, value)
/// changes (op: 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT): its error code.
fn alter_incrementally(kafka: &str, kind: i8, name: &str, changes: &[(&str, i8, &str)]) -> i16 {
    let configs = changes
        .iter()
        .map(|(k, op, v)| {
            incremental_alter_configs_request::AlterableConfig::default()
                .with_name(s(k))
                .with_config_operation(*op)
                .with_value(Some(s(v)))
        })
        .collect();
    let request = IncrementalAlterConfigsRequest::default().with_resources(vec![
        incremental_alter_configs_request::AlterConfigsResource::default()
            .with_resource_type(kind)
            .with_resource_name(s(name))
            .with_configs(configs),
    ]);
    let answer: IncrementalAlterConfigsResponse =
        call(kafka, ApiKey::IncrementalAlterConfigs, 1, &request);
    answer.responses[0].error_code
}

/// DescribeConfigs v4 of one config of one resource: (value, source,
/// read-only, synonyms' sources).
fn describe(kafka: &str, kind: i8, name: &str, key: &str) -> (String, i8, bool, Vec<i8>) {
    let request = DescribeConfigsRequest::default()
        .with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(kind)
            .with_resource_name(s(name))
            .with_configuration_keys(Some(vec![s(key)]))])
        .with_include_synonyms(true);
    let answer: DescribeConfigsResponse = call(kafka, ApiKey::DescribeConfigs, 4, &request);
    let result = &answer.results[0];
    assert_eq!(result.error_code, 0, "{:?}", result.error_message);
    assert_eq!(result.configs.len(), 1, "{key} is described");
    let c = &result.configs[0];
    (
        c.value.as_ref().map(|v| v.to_string()).unwrap_or_default(),
        c.config_source,
        c.read_only,
        c.synonyms.iter().map(|s| s.source).collect(),
    )
}

support::url_scenarios!(broker_and_group_configs_change_while_running_and_persist);

async fn broker_and_group_configs_change_while_running_and_persist(url: &str) {
    let broker = Broker::start(url, &[]);
    let kafka = broker.kafka.clone();
    let id = tokio::task::block_in_place(|| node_id(&kafka));
    tokio::task::block_in_place(|| {
        // What librdkafka's 0081 sets: a dynamic listener config.
        let (code, message) = alter(
            &kafka,
            BROKER,
            &id,
            &[("sasl.kerberos.min.time.before.relogin", "58000")],
        );
        assert_eq!((code, message.as_str()), (0, ""));
        assert_eq!(
            describe(&kafka, BROKER, &id, "sasl.kerberos.min.time.before.relogin"),
            (
                "58000".to_owned(),
                DYNAMIC_BROKER,
                false,
                vec![DYNAMIC_BROKER, DEFAULT]
            )
        );
        // A static setting (the command line) is refused, changing nothing.
        let (code, message) = alter(&kafka, BROKER, &id, &[("message.max.bytes", "1")]);
        assert_eq!(code, ResponseError::InvalidRequest.code());
        assert!(message.contains("message.max.bytes"), "{message}");
        let (_, _, read_only, _) = describe(&kafka, BROKER, &id, "message.max.bytes");
        assert!(read_only, "static settings are read-only");
        // A bad value is INVALID_CONFIG and nothing changes.
        let code = alter_incrementally(&kafka, BROKER, &id, &[("background.threads", 0, "nine")]);
        assert_eq!(code, ResponseError::InvalidConfig.code());
        assert_eq!(
            describe(&kafka, BROKER, &id, "background.threads").0,
            "10",
            "unchanged"
        );
        // 0081's helper: SET and APPEND, then DELETE and SUBTRACT.
        let code = alter_incrementally(
            &kafka,
            BROKER,
            &id,
            &[
                ("background.threads", 0, "9"),
                ("log.cleanup.policy", 2, "compact"),
            ],
        );
        assert_eq!(code, 0);
        assert_eq!(describe(&kafka, BROKER, &id, "background.threads").0, "9");
        assert_eq!(
            describe(&kafka, BROKER, &id, "log.cleanup.policy").0,
            "delete,compact"
        );
        // The earlier AlterConfigs value stays: incremental changes keep
        // what they do not name.
        assert_eq!(
            describe(&kafka, BROKER, &id, "sasl.kerberos.min.time.before.relogin").0,
            "58000"
        );
        let code = alter_incrementally(
            &kafka,
            BROKER,
            &id,
            &[
                ("background.threads", 1, ""),
                ("log.cleanup.policy", 3, "compact"),
            ],
        );
        assert_eq!(code, 0);
        assert_eq!(
            describe(&kafka, BROKER, &id, "background.threads"),
            ("10".to_owned(), DEFAULT, false, vec![DEFAULT])
        );
        assert_eq!(
            describe(&kafka, BROKER, &id, "log.cleanup.policy").0,
            "delete"
        );
        // The default of every broker, under this broker's own setting.
        let (code, _) = alter(&kafka, BROKER, "", &[("num.io.threads", "4")]);
        assert_eq!(code, 0);
        assert_eq!(
            describe(&kafka, BROKER, &id, "num.io.threads"),
            (
                "4".to_owned(),
                DYNAMIC_DEFAULT_BROKER,
                false,
                vec![DYNAMIC_DEFAULT_BROKER, DEFAULT]
            )
        );
        // Another broker's id is not this broker's to change.
        let (code, _) = alter(&kafka, BROKER, "987654", &[("num.io.threads", "2")]);
        assert_eq!(code, ResponseError::InvalidRequest.code());
        // A group's configs (KIP-848), as 0081's helper sets them.
        let code = alter_incrementally(
            &kafka,
            GROUP,
            "payments",
            &[("consumer.session.timeout.ms", 0, "50000")],
        );
        assert_eq!(code, 0);
        let code = alter_incrementally(&kafka, GROUP, "payments", &[("no.such", 0, "1")]);
        assert_eq!(code, ResponseError::InvalidConfig.code());
        // The share-group configs (KIP-932) live beside them, checked as Kafka bounds them.
        let code = alter_incrementally(
            &kafka,
            GROUP,
            "payments",
            &[("share.delivery.count.limit", 0, "11")],
        );
        assert_eq!(code, ResponseError::InvalidConfig.code());
        let code = alter_incrementally(
            &kafka,
            GROUP,
            "payments",
            &[("share.delivery.count.limit", 0, "3")],
        );
        assert_eq!(code, 0);
    });
    drop(broker);

    // Kept in the database: a broker started again at the same address
    // (so with the same node id) describes them.
    let again = Broker::start_on(url, "127.0.0.1:0", &kafka, &[]);
    tokio::task::block_in_place(|| {
        assert_eq!(node_id(&again.kafka), id, "same node id");
        assert_eq!(
            describe(
                &again.kafka,
                BROKER,
                &id,
                "sasl.kerberos.min.time.before.relogin"
            )
            .0,
            "58000"
        );
        assert_eq!(describe(&again.kafka, BROKER, &id, "num.io.threads").0, "4");
        assert_eq!(
            describe(
                &again.kafka,
                GROUP,
                "payments",
                "consumer.session.timeout.ms"
            ),
            (
                "50000".to_owned(),
                GROUP_CONFIG,
                false,
                vec![GROUP_CONFIG, DEFAULT]
            )
        );
        assert_eq!(
            describe(
                &again.kafka,
                GROUP,
                "payments",
                "share.delivery.count.limit"
            )
            .0,
            "3"
        );
        // AlterConfigs replaces the whole set: the others return to defaults.
        let (code, _) = alter(&again.kafka, BROKER, &id, &[("background.threads", "3")]);
        assert_eq!(code, 0);
        assert_eq!(
            describe(
                &again.kafka,
                BROKER,
                &id,
                "sasl.kerberos.min.time.before.relogin"
            ),
            ("60000".to_owned(), DEFAULT, false, vec![DEFAULT])
        );
    });
}
