//! Kafka topic configs end to end, on SQLite and PostgreSQL: CreateTopics
//! with configs, DescribeConfigs, AlterConfigs and IncrementalAlterConfigs
//! through librdkafka (the `rdkafka` crate), every version of the alter
//! APIs on the wire, both doors seeing each other's changes, the produce
//! rules the configs set, and confluent-kafka's AdminClient from Python.

mod support;

use std::collections::HashMap;
use std::process::Command;
use std::time::Duration;

use kafka_protocol::messages::{
    alter_configs_request, describe_configs_request, incremental_alter_configs_request,
    AlterConfigsRequest, AlterConfigsResponse, ApiKey, DescribeConfigsRequest,
    DescribeConfigsResponse, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::admin::{
    AdminClient, AdminOptions, AlterConfig, ConfigSource, NewTopic, ResourceSpecifier,
    TopicReplication,
};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{FutureProducer, FutureRecord};
use serde_json::{json, Value};
use support::kafka::call;
use support::Broker;

const TIMEOUT: Duration = Duration::from_secs(20);

fn admin(broker: &Broker) -> AdminClient<DefaultClientContext> {
    ClientConfig::new()
        .set("bootstrap.servers", &broker.kafka)
        .set("broker.address.family", "v4")
        .create()
        .expect("admin client")
}

fn producer(broker: &Broker) -> FutureProducer {
    ClientConfig::new()
        .set("bootstrap.servers", &broker.kafka)
        .set("broker.address.family", "v4")
        .set("linger.ms", "0")
        .set("acks", "all")
        .set("message.timeout.ms", "10000")
        .create()
        .expect("producer")
}

/// A topic's configs as librdkafka describes them: value and source.
async fn describe(
    admin: &AdminClient<DefaultClientContext>,
    topic: &str,
) -> HashMap<String, (Option<String>, ConfigSource)> {
    let mut results = admin
        .describe_configs(&[ResourceSpecifier::Topic(topic)], &AdminOptions::new())
        .await
        .expect("describe configs");
    let resource = results.remove(0).expect("topic configs");
    resource
        .entries
        .into_iter()
        .map(|e| (e.name, (e.value, e.source)))
        .collect()
}

/// Asserts the value and source of each `(name, value, set on the topic)`.
fn assert_configs(
    described: &HashMap<String, (Option<String>, ConfigSource)>,
    expected: &[(&str, &str, bool)],
) {
    for &(name, value, set) in expected {
        let (got, source) = described
            .get(name)
            .unwrap_or_else(|| panic!("{name} is not described"));
        assert_eq!(got.as_deref(), Some(value), "value of {name}");
        let want = if set {
            ConfigSource::DynamicTopic
        } else {
            ConfigSource::Default
        };
        assert_eq!(source, &want, "source of {name}");
    }
}

async fn create(
    admin: &AdminClient<DefaultClientContext>,
    topic: NewTopic<'_>,
    opts: &AdminOptions,
) -> Result<String, (String, RDKafkaErrorCode)> {
    admin
        .create_topics(&[topic], opts)
        .await
        .expect("create topics")
        .remove(0)
}

/// AlterConfigs through librdkafka. The rdkafka crate (0.39) answers every
/// resource as a success whatever its error code, so callers check the
/// effect by describing, and read refusals from the wire ([`alter_raw`]).
async fn alter(admin: &AdminClient<DefaultClientContext>, config: AlterConfig<'_>) {
    admin
        .alter_configs(&[config], &AdminOptions::new())
        .await
        .expect("alter configs");
}

async fn get_queue(broker: &Broker, queue: &str) -> Value {
    reqwest::get(format!("{}/api/v1/resources/queues/{queue}", broker.http))
        .await
        .expect("GET queue")
        .json()
        .await
        .expect("JSON")
}

async fn configure(broker: &Broker, body: Value) -> Value {
    let answer = reqwest::Client::new()
        .post(format!("{}/api/v1/configure", broker.http))
        .json(&body)
        .send()
        .await
        .expect("configure");
    assert_eq!(answer.status(), 200);
    answer.json().await.expect("JSON")
}

support::broker_scenarios!(
    &[];
    created_configs_are_described_back_exactly,
    bad_configs_create_nothing,
    alter_configs_replaces_the_whole_set,
    each_door_sees_the_others_changes,
    compacted_topics_refuse_records_without_a_key,
    max_message_bytes_caps_a_batch,
    every_alter_version_works_on_the_wire,
    confluent_kafka_admin_round_trips,
);

async fn created_configs_are_described_back_exactly(broker: &Broker) {
    let admin = admin(broker);
    let topic = NewTopic::new("exact", 2, TopicReplication::Fixed(1))
        .set("retention.ms", "86400123")
        .set("cleanup.policy", "compact,delete")
        .set("compression.type", "lz4")
        .set("delete.retention.ms", "900")
        .set("segment.bytes", "1048576")
        .set("queen.leaseTime", "42");
    create(&admin, topic, &AdminOptions::new())
        .await
        .expect("created");
    let described = describe(&admin, "exact").await;
    assert_configs(
        &described,
        &[
            ("retention.ms", "86400123", true),
            ("cleanup.policy", "compact,delete", true),
            ("compression.type", "lz4", true),
            ("delete.retention.ms", "900", true),
            ("segment.bytes", "1048576", true),
            ("queen.leaseTime", "42", true),
            ("min.insync.replicas", "1", false),
            ("retention.bytes", "-1", false),
            ("message.timestamp.type", "CreateTime", false),
        ],
    );
    let max = described["max.message.bytes"].0.clone().expect("a value");
    assert!(max.parse::<i64>().expect("a number") > 0);

    // The native door sees the same options.
    let q = get_queue(broker, "exact").await;
    let o = &q["options"];
    assert_eq!(o["retentionEnabled"], true);
    assert_eq!(o["retentionSeconds"], 86_401);
    assert_eq!(o["leaseTime"], 42);
    assert_eq!(o["dedupWindowSeconds"], 0);
    assert_eq!(o["topicConfigs"]["retention.ms"], "86400123");
    assert_eq!(o["topicConfigs"]["cleanup.policy"], "compact,delete");
}

async fn bad_configs_create_nothing(broker: &Broker) {
    let admin = admin(broker);
    for (name, value) in [
        ("retention.ms", "soon"),
        ("retention.ms", "-2"),
        ("dummy.doesntexist", "1"),
        ("cleanup.policy", "compact,shred"),
        ("max.message.bytes", "-1"),
        ("queen.leaseTime", "-5"),
    ] {
        let topic = NewTopic::new("refused", 1, TopicReplication::Fixed(1)).set(name, value);
        let refused = create(&admin, topic, &AdminOptions::new()).await;
        assert_eq!(
            refused,
            Err(("refused".to_owned(), RDKafkaErrorCode::InvalidConfig)),
            "{name}={value}"
        );
    }
    // validate-only: a good topic is answered and not created either.
    let topic = NewTopic::new("refused", 1, TopicReplication::Fixed(1)).set("retention.ms", "1000");
    create(&admin, topic, &AdminOptions::new().validate_only(true))
        .await
        .expect("valid");
    let topic = NewTopic::new("refused", 1, TopicReplication::Fixed(1)).set("retention.ms", "x");
    assert!(
        create(&admin, topic, &AdminOptions::new().validate_only(true))
            .await
            .is_err()
    );
    let q = get_queue(broker, "refused").await;
    assert_eq!(q["error"], "Queue not found", "nothing was created: {q}");
}

async fn alter_configs_replaces_the_whole_set(broker: &Broker) {
    let admin = admin(broker);
    let topic = NewTopic::new("replaced", 1, TopicReplication::Fixed(1))
        .set("retention.ms", "5000")
        .set("cleanup.policy", "compact")
        .set("queen.leaseTime", "10");
    create(&admin, topic, &AdminOptions::new())
        .await
        .expect("created");
    let config = AlterConfig::new(ResourceSpecifier::Topic("replaced"))
        .set("max.message.bytes", "2048")
        .set("flush.ms", "12345678");
    alter(&admin, config).await;
    let described = describe(&admin, "replaced").await;
    assert_configs(
        &described,
        &[
            ("max.message.bytes", "2048", true),
            ("flush.ms", "12345678", true),
            ("retention.ms", "-1", false),
            ("cleanup.policy", "delete", false),
        ],
    );
    let q = get_queue(broker, "replaced").await;
    assert_eq!(q["options"]["retentionEnabled"], false, "{q}");
    assert_eq!(q["options"]["retentionSeconds"], 0);
    assert_eq!(
        q["options"]["leaseTime"], 10,
        "queen options not given are kept"
    );

    // Bad input and validate-only change nothing. (The rdkafka crate
    // reports every AlterConfigs resource as a success, whatever its error
    // code, so the refusals are read from the wire.)
    let kafka = broker.kafka.clone();
    for (name, value) in [
        ("max.message.bytes", "big"),
        ("nonsense.config", "1"),
        ("segment.ms", "0"),
    ] {
        let (code, message) = alter_raw(&kafka, TOPIC, "replaced", &[(name, value)], false);
        assert_eq!(code, 40, "{name}={value}: INVALID_CONFIG ({message:?})");
    }
    let (code, _) = alter_raw(
        &kafka,
        TOPIC,
        "replaced",
        &[("retention.ms", "60000")],
        true,
    );
    assert_eq!(code, 0, "validate-only accepts it");
    assert_eq!(describe(&admin, "replaced").await, described);

    let (code, _) = alter_raw(&kafka, TOPIC, "missing", &[("retention.ms", "1")], false);
    assert_eq!(code, 3, "UNKNOWN_TOPIC_OR_PARTITION");
    // Broker settings cannot change while the broker runs.
    let metadata = admin
        .inner()
        .fetch_metadata(None, TIMEOUT)
        .expect("metadata");
    let id = metadata.brokers()[0].id().to_string();
    let (code, message) = alter_raw(&kafka, BROKER, &id, &[("num.partitions", "3")], false);
    assert_eq!(code, 42, "INVALID_REQUEST");
    assert!(message.contains("num.partitions"), "{message}");
    let (code, _) = alter_raw(&kafka, BROKER, &id, &[], false);
    assert_eq!(code, 0, "no change is fine");
    // Among them the listeners, in Kafka's form.
    let mut described = admin
        .describe_configs(
            &[ResourceSpecifier::Broker(id.parse().expect("id"))],
            &AdminOptions::new(),
        )
        .await
        .expect("describe the broker");
    let entries = described.remove(0).expect("broker configs").entries;
    let advertised = entries
        .iter()
        .find(|e| e.name == "advertised.listeners")
        .expect("advertised.listeners is described");
    assert_eq!(
        advertised.value.as_deref(),
        Some(format!("PLAINTEXT://{}", broker.kafka).as_str())
    );
    assert!(advertised.is_read_only);
}

const TOPIC: i8 = 2;
const BROKER: i8 = 4;

/// One AlterConfigs v2 request for one resource: its error code and message.
fn alter_raw(
    kafka: &str,
    resource_type: i8,
    name: &str,
    configs: &[(&str, &str)],
    validate_only: bool,
) -> (i16, String) {
    let configs = configs
        .iter()
        .map(|(k, v)| {
            alter_configs_request::AlterableConfig::default()
                .with_name(s(k))
                .with_value(Some(s(v)))
        })
        .collect();
    let request = AlterConfigsRequest::default()
        .with_resources(vec![alter_configs_request::AlterConfigsResource::default()
            .with_resource_type(resource_type)
            .with_resource_name(s(name))
            .with_configs(configs)])
        .with_validate_only(validate_only);
    let answer: AlterConfigsResponse =
        tokio::task::block_in_place(|| call(kafka, ApiKey::AlterConfigs, 2, &request));
    let r = &answer.responses[0];
    (
        r.error_code,
        r.error_message
            .as_ref()
            .map(|m| m.to_string())
            .unwrap_or_default(),
    )
}

async fn each_door_sees_the_others_changes(broker: &Broker) {
    let admin = admin(broker);
    configure(
        broker,
        json!({"queue": "bridge", "options": {
            "retentionEnabled": true, "retentionSeconds": 60, "leaseTime": 30}}),
    )
    .await;
    assert_configs(
        &describe(&admin, "bridge").await,
        &[
            ("retention.ms", "60000", true),
            ("queen.leaseTime", "30", true),
            ("queen.dedupWindowSeconds", "3600", false),
            ("cleanup.policy", "delete", false),
        ],
    );

    let config = AlterConfig::new(ResourceSpecifier::Topic("bridge"))
        .set("retention.ms", "1500")
        .set("cleanup.policy", "compact");
    alter(&admin, config).await;
    let o = get_queue(broker, "bridge").await["options"].clone();
    assert_eq!(o["retentionEnabled"], true);
    assert_eq!(o["retentionSeconds"], 2, "1500 ms rounds up to 2 s");
    assert_eq!(o["leaseTime"], 30);
    assert_eq!(
        o["topicConfigs"],
        json!({"retention.ms": "1500", "cleanup.policy": "compact"})
    );

    // A native configure (full replace) keeps the Kafka configs it does not know.
    let answer = configure(
        broker,
        json!({"queue": "bridge", "options": {
            "retentionEnabled": true, "retentionSeconds": 2, "leaseTime": 31}}),
    )
    .await;
    assert_eq!(
        answer["options"]["topicConfigs"],
        json!({"retention.ms": "1500", "cleanup.policy": "compact"}),
        "{answer}"
    );
    assert_configs(
        &describe(&admin, "bridge").await,
        &[
            ("retention.ms", "1500", true),
            ("cleanup.policy", "compact", true),
            ("queen.leaseTime", "31", true),
        ],
    );
    // One that changes the retention makes the exact value stale.
    configure(
        broker,
        json!({"queue": "bridge", "options": {"retentionEnabled": true, "retentionSeconds": 10}}),
    )
    .await;
    assert_configs(
        &describe(&admin, "bridge").await,
        &[
            ("retention.ms", "10000", true),
            ("cleanup.policy", "compact", true),
        ],
    );
    let o = get_queue(broker, "bridge").await["options"].clone();
    assert_eq!(o["topicConfigs"], json!({"cleanup.policy": "compact"}));
}

async fn compacted_topics_refuse_records_without_a_key(broker: &Broker) {
    let admin = admin(broker);
    let topic =
        NewTopic::new("compacted", 1, TopicReplication::Fixed(1)).set("cleanup.policy", "compact");
    create(&admin, topic, &AdminOptions::new())
        .await
        .expect("created");
    let p = producer(broker);
    let refused = p
        .send(
            FutureRecord::<[u8], [u8]>::to("compacted").payload(b"no key"),
            TIMEOUT,
        )
        .await
        .map(drop)
        .map_err(|(e, _)| e);
    assert_eq!(
        refused,
        Err(KafkaError::MessageProduction(
            RDKafkaErrorCode::InvalidRecord
        ))
    );
    let delivered = p
        .send(
            FutureRecord::<[u8], [u8]>::to("compacted")
                .key(b"k")
                .payload(b"keyed"),
            TIMEOUT,
        )
        .await
        .unwrap_or_else(|(e, _)| panic!("keyed record refused: {e}"));
    assert_eq!(delivered.offset, 0, "the refused record wrote nothing");
}

async fn max_message_bytes_caps_a_batch(broker: &Broker) {
    let admin = admin(broker);
    let topic =
        NewTopic::new("capped", 1, TopicReplication::Fixed(1)).set("max.message.bytes", "1024");
    create(&admin, topic, &AdminOptions::new())
        .await
        .expect("created");
    let p = producer(broker);
    let big = vec![b'x'; 4000];
    async fn send(p: &FutureProducer, payload: &[u8]) -> Result<i64, KafkaError> {
        p.send(
            FutureRecord::<[u8], [u8]>::to("capped")
                .key(b"k")
                .payload(payload),
            TIMEOUT,
        )
        .await
        .map(|d| d.offset)
        .map_err(|(e, _)| e)
    }
    let refused = send(&p, &big).await.map(drop);
    assert_eq!(
        refused,
        Err(KafkaError::MessageProduction(
            RDKafkaErrorCode::MessageSizeTooLarge
        ))
    );
    send(&p, b"small").await.expect("a small record is taken");
    // Raised on this broker: the next produce sees it at once.
    let config =
        AlterConfig::new(ResourceSpecifier::Topic("capped")).set("max.message.bytes", "8192");
    alter(&admin, config).await;
    let offset = send(&p, &big).await.expect("taken after the raise");
    assert_eq!(offset, 1);
}

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_owned())
}

/// AlterConfigs v0–v2 and IncrementalAlterConfigs v0–v1 (flexible and
/// not), answered and applied; APPEND on a non-list and a null SET refused.
async fn every_alter_version_works_on_the_wire(broker: &Broker) {
    let admin = admin(broker);
    create(
        &admin,
        NewTopic::new("wire", 1, TopicReplication::Fixed(1)),
        &AdminOptions::new(),
    )
    .await
    .expect("created");
    let kafka = broker.kafka.clone();
    tokio::task::block_in_place(|| {
        for version in 0..=2 {
            let value = format!("{}", 1000 * (version + 1));
            let config = alter_configs_request::AlterableConfig::default()
                .with_name(s("retention.ms"))
                .with_value(Some(s(&value)));
            let request = AlterConfigsRequest::default().with_resources(vec![
                alter_configs_request::AlterConfigsResource::default()
                    .with_resource_type(TOPIC)
                    .with_resource_name(s("wire"))
                    .with_configs(vec![config]),
            ]);
            let answer: AlterConfigsResponse =
                call(&kafka, ApiKey::AlterConfigs, version, &request);
            assert_eq!(answer.responses[0].error_code, 0, "v{version}");
            assert_eq!(
                value_of(&kafka, "wire", "retention.ms"),
                value,
                "v{version}"
            );
        }
        for version in 0..=1 {
            let op = |name: &str, op: i8, value: Option<&str>| {
                incremental_alter_configs_request::AlterableConfig::default()
                    .with_name(s(name))
                    .with_config_operation(op)
                    .with_value(value.map(s))
            };
            let incremental = |configs| {
                let request = IncrementalAlterConfigsRequest::default().with_resources(vec![
                    incremental_alter_configs_request::AlterConfigsResource::default()
                        .with_resource_type(TOPIC)
                        .with_resource_name(s("wire"))
                        .with_configs(configs),
                ]);
                let answer: IncrementalAlterConfigsResponse =
                    call(&kafka, ApiKey::IncrementalAlterConfigs, version, &request);
                answer.responses[0].clone()
            };
            let done = incremental(vec![
                op("cleanup.policy", 2, Some("compact")),
                op("retention.ms", 1, None),
            ]);
            assert_eq!(done.error_code, 0, "v{version}: {:?}", done.error_message);
            assert_eq!(value_of(&kafka, "wire", "cleanup.policy"), "delete,compact");
            assert_eq!(value_of(&kafka, "wire", "retention.ms"), "-1");
            let refused = incremental(vec![op("retention.ms", 2, Some("5"))]);
            assert_eq!(
                refused.error_code, 40,
                "APPEND on a non-list: INVALID_CONFIG"
            );
            let refused = incremental(vec![op("retention.ms", 0, None)]);
            assert_eq!(refused.error_code, 42, "SET null: INVALID_REQUEST");
            let done = incremental(vec![op("cleanup.policy", 3, Some("compact"))]);
            assert_eq!(done.error_code, 0);
            assert_eq!(value_of(&kafka, "wire", "cleanup.policy"), "delete");
        }
        // Documentation and synonyms when asked.
        let answer = describe_raw(&kafka, "wire", "retention.ms", 4);
        let entry = &answer.results[0].configs[0];
        assert_eq!(entry.config_type, 5, "LONG");
        assert!(entry.documentation.as_ref().is_some_and(|d| !d.is_empty()));
        assert_eq!(entry.synonyms[0].name.as_str(), "log.retention.ms");
    });
}

fn describe_raw(kafka: &str, topic: &str, key: &str, version: i16) -> DescribeConfigsResponse {
    let request = DescribeConfigsRequest::default()
        .with_resources(vec![
            describe_configs_request::DescribeConfigsResource::default()
                .with_resource_type(TOPIC)
                .with_resource_name(s(topic))
                .with_configuration_keys(Some(vec![s(key)])),
        ])
        .with_include_synonyms(true)
        .with_include_documentation(version >= 3);
    call(kafka, ApiKey::DescribeConfigs, version, &request)
}

fn value_of(kafka: &str, topic: &str, key: &str) -> String {
    let answer = describe_raw(kafka, topic, key, 1);
    let configs = &answer.results[0].configs;
    assert_eq!(configs.len(), 1, "{key}");
    configs[0]
        .value
        .as_ref()
        .map(|v| v.to_string())
        .unwrap_or_default()
}

/// `tests/python/kafka_configs.py` with confluent-kafka's AdminClient.
async fn confluent_kafka_admin_round_trips(broker: &Broker) {
    let python = std::env::var("QUEEN_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let probe = Command::new(&python)
        .args(["-c", "import confluent_kafka"])
        .status()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    assert!(
        probe.success(),
        "confluent-kafka is not installed for {python}: \
         pip install -r tests/python/requirements.txt (scripts/test does it)"
    );
    let path = format!(
        "{}/tests/python/kafka_configs.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let output = tokio::task::block_in_place(|| {
        Command::new(&python)
            .arg(&path)
            .env("QUEEN_URL", &broker.http)
            .env("QUEEN_KAFKA", &broker.kafka)
            .output()
            .expect("run the python script")
    });
    print!("{}", String::from_utf8_lossy(&output.stdout));
    assert!(
        output.status.success(),
        "kafka_configs.py failed\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
