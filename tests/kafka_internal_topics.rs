//! The broker's internal topic `__consumer_offsets`, on SQLite and
//! PostgreSQL: every offset commit is a record there in Kafka's own key
//! and value schema (what Burrow and lag exporters read), the topic is
//! internal (clients read it but never write it), and names starting with
//! `__` are reserved for the broker: no client creates such a topic.

mod support;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, CreateTopicsResponse, GroupId, MetadataRequest, MetadataResponse,
    OffsetCommitRequest, OffsetCommitResponse, TopicName,
};
use kafka_protocol::ResponseError;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Message, Offset, TopicPartitionList};
use storage::offsets_log::{partition_for, OFFSETS_PARTITIONS, OFFSETS_TOPIC};
use support::kafka::{call, create_topic};
use support::Broker;

const TIMEOUT: Duration = Duration::from_secs(20);

fn config(broker: &Broker) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", &broker.kafka)
        .set("broker.address.family", "v4");
    c
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Metadata for `names`, allowing auto-creation.
fn metadata(kafka: &str, names: &[&str]) -> MetadataResponse {
    let request = MetadataRequest::default()
        .with_allow_auto_topic_creation(true)
        .with_topics(Some(
            names
                .iter()
                .map(|n| {
                    MetadataRequestTopic::default()
                        .with_name(Some(TopicName((*n).to_owned().into())))
                })
                .collect(),
        ));
    call(kafka, ApiKey::Metadata, 9, &request)
}

/// An offset commit record of the log, decoded: (group, topic, partition)
/// from the key, (offset, leader epoch, metadata, commit time) from the
/// value.
type Commit = ((String, String, i32), (i64, i32, String, i64));

fn string(bytes: &[u8], at: &mut usize) -> String {
    let len = i16::from_be_bytes([bytes[*at], bytes[*at + 1]]) as usize;
    let s = String::from_utf8(bytes[*at + 2..*at + 2 + len].to_vec()).expect("UTF-8");
    *at += 2 + len;
    s
}

fn int<const N: usize>(bytes: &[u8], at: &mut usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&bytes[*at..*at + N]);
    *at += N;
    out
}

/// Decodes an OffsetCommitKey v1 and OffsetCommitValue v3.
fn decode(key: &[u8], value: &[u8]) -> Commit {
    let mut at = 0;
    assert_eq!(i16::from_be_bytes(int(key, &mut at)), 1, "key version");
    let group = string(key, &mut at);
    let topic = string(key, &mut at);
    let partition = i32::from_be_bytes(int(key, &mut at));
    assert_eq!(at, key.len(), "the whole key");
    let mut at = 0;
    assert_eq!(i16::from_be_bytes(int(value, &mut at)), 3, "value version");
    let offset = i64::from_be_bytes(int(value, &mut at));
    let epoch = i32::from_be_bytes(int(value, &mut at));
    let metadata = string(value, &mut at);
    let time = i64::from_be_bytes(int(value, &mut at));
    assert_eq!(at, value.len(), "the whole value");
    ((group, topic, partition), (offset, epoch, metadata, time))
}

/// Every record of the log partition holding `group`'s commits, read from
/// its start with rdkafka, decoded.
fn read_log(broker: &Broker, group: &str, want: usize) -> Vec<Commit> {
    read_partition(broker, partition_for(group), want, TIMEOUT)
        .iter()
        .map(|(k, v)| decode(k, v))
        .collect()
}

/// Up to `want` records (key, value) of partition `index` of the offsets
/// topic from its start, read with rdkafka for at most `wait`.
fn read_partition(
    broker: &Broker,
    index: i32,
    want: usize,
    wait: Duration,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let consumer: BaseConsumer = config(broker)
        .set("group.id", "log-reader")
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(OFFSETS_TOPIC, index, Offset::Beginning)
        .expect("tpl");
    consumer.assign(&tpl).expect("assign");
    // Compaction may have removed older commits of a key: read up to the
    // high watermark rather than a count.
    let (_, high) = consumer
        .fetch_watermarks(OFFSETS_TOPIC, index, TIMEOUT)
        .expect("watermarks");
    let deadline = std::time::Instant::now() + wait;
    let mut records = Vec::new();
    let mut next = 0;
    while records.len() < want && next < high && std::time::Instant::now() < deadline {
        if let Some(message) = consumer.poll(Duration::from_millis(200)) {
            let message = message.expect("a record");
            next = message.offset() + 1;
            records.push((
                message.key().unwrap_or_default().to_vec(),
                message.payload().unwrap_or_default().to_vec(),
            ));
        }
    }
    records
}

fn commit(broker: &Broker, group: &str, offsets: &[(&str, i32, i64, &str)]) -> KafkaResult {
    let tool: BaseConsumer = config(broker)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    for &(topic, p, offset, metadata) in offsets {
        tpl.add_partition_offset(topic, p, Offset::Offset(offset))
            .expect("tpl");
        tpl.find_partition(topic, p)
            .expect("added")
            .set_metadata(metadata);
    }
    let done = tool.commit(&tpl, CommitMode::Sync);
    // A partition's own error comes back in the list rdkafka keeps.
    done.and_then(|()| {
        let committed = tool.committed_offsets(tpl.clone(), TIMEOUT)?;
        for e in committed.elements() {
            e.error()?;
        }
        Ok(())
    })
}

type KafkaResult = Result<(), KafkaError>;

support::broker_scenarios!(&[];
    commits_are_records_of_the_offsets_log_in_kafkas_schema,
    the_offsets_topic_is_internal,
    double_underscore_names_are_reserved_for_the_broker,
    commit_metadata_past_kafkas_limit_is_refused,
    the_http_door_reads_internal_topics_but_never_writes_them,
);

async fn commits_are_records_of_the_offsets_log_in_kafkas_schema(broker: &Broker) {
    create_topic(&broker.kafka, "ledger", 2).await;
    create_topic(&broker.kafka, "audit", 1).await;
    let before = now_ms();
    tokio::task::block_in_place(|| {
        commit(
            broker,
            "accounts",
            &[
                ("ledger", 0, 5, "first"),
                ("ledger", 1, 7, "m\u{0}1"),
                ("audit", 0, 3, ""),
            ],
        )
        .expect("commit");
        commit(broker, "accounts", &[("ledger", 0, 6, "again")]).expect("second commit");
    });
    let after = now_ms();
    let log = tokio::task::block_in_place(|| read_log(broker, "accounts", 4));
    // The topic is compacted, as Kafka's: the first commit of ledger-0 may
    // be gone already; the last commit of each key is there, in order.
    assert!((3..=4).contains(&log.len()), "{log:?}");
    let mut last = std::collections::BTreeMap::new();
    for ((group, topic, partition), (offset, epoch, metadata, time)) in &log {
        assert_eq!(group, "accounts");
        // librdkafka sends the leader epoch it knows; none here.
        assert!(*epoch == -1 || *epoch == 0, "epoch {epoch}");
        assert!((before..=after).contains(time), "commit time {time}");
        last.insert((topic.clone(), *partition), (*offset, metadata.clone()));
    }
    let expected = [
        (("audit".to_owned(), 0), (3, String::new())),
        (("ledger".to_owned(), 0), (6, "again".to_owned())),
        (("ledger".to_owned(), 1), (7, "m\u{0}1".to_owned())),
    ];
    assert_eq!(last, expected.into_iter().collect());
    assert_eq!(
        log.last().map(|c| c.1 .0),
        Some(6),
        "the second commit is last"
    );
}

async fn the_offsets_topic_is_internal(broker: &Broker) {
    let kafka = broker.kafka.clone();
    // Named in Metadata, the broker creates its own topic, as Kafka does.
    let answer = tokio::task::block_in_place(|| metadata(&kafka, &[OFFSETS_TOPIC]));
    let topic = &answer.topics[0];
    assert_eq!(topic.error_code, 0);
    assert!(topic.is_internal, "flagged internal");
    assert_eq!(topic.partitions.len(), OFFSETS_PARTITIONS as usize);
    // Clients read it but never write to it.
    let producer: FutureProducer = config(broker)
        .set("message.timeout.ms", "5000")
        .create()
        .expect("producer");
    let refused = producer
        .send(
            FutureRecord::<str, str>::to(OFFSETS_TOPIC)
                .partition(0)
                .key("k")
                .payload("forged"),
            TIMEOUT,
        )
        .await;
    assert!(
        matches!(
            refused,
            Err((
                KafkaError::MessageProduction(RDKafkaErrorCode::InvalidTopic),
                _
            ))
        ),
        "{refused:?}"
    );
    let written =
        tokio::task::block_in_place(|| read_partition(broker, 0, 1, Duration::from_secs(3)));
    assert!(written.is_empty(), "nothing was written: {written:?}");
}

async fn double_underscore_names_are_reserved_for_the_broker(broker: &Broker) {
    let kafka = broker.kafka.clone();
    tokio::task::block_in_place(|| {
        // Metadata that may auto-create does not create one.
        let answer = metadata(&kafka, &["__reserved"]);
        assert_eq!(
            answer.topics[0].error_code,
            ResponseError::UnknownTopicOrPartition.code()
        );
        // Nor does CreateTopics.
        let request = CreateTopicsRequest::default()
            .with_timeout_ms(5_000)
            .with_topics(vec![CreatableTopic::default()
                .with_name(TopicName("__reserved".to_owned().into()))
                .with_num_partitions(1)
                .with_replication_factor(1)]);
        let created: CreateTopicsResponse = call(&kafka, ApiKey::CreateTopics, 5, &request);
        assert_eq!(
            created.topics[0].error_code,
            ResponseError::InvalidRequest.code()
        );
    });
    // Nor a produce.
    let producer: FutureProducer = config(broker)
        .set("message.timeout.ms", "3000")
        .create()
        .expect("producer");
    let refused = producer
        .send(
            FutureRecord::<str, str>::to("__reserved").payload("x"),
            TIMEOUT,
        )
        .await;
    assert!(refused.is_err(), "{refused:?}");
    let answer = tokio::task::block_in_place(|| metadata(&kafka, &["__reserved"]));
    assert_eq!(
        answer.topics[0].error_code,
        ResponseError::UnknownTopicOrPartition.code(),
        "still not there"
    );
    let (status, _) = broker
        .get_answer("/api/v1/resources/queues/__reserved")
        .await;
    assert_eq!(status, 404);
}

/// One OffsetCommit v8 of `group` outside any generation: the partition's
/// error code.
fn commit_raw(kafka: &str, group: &str, topic: &str, offset: i64, metadata: &str) -> i16 {
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(group.to_owned().into()))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(TopicName(topic.to_owned().into()))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(offset)
                .with_committed_metadata(Some(metadata.to_owned().into()))])]);
    let answer: OffsetCommitResponse = call(kafka, ApiKey::OffsetCommit, 8, &request);
    answer.topics[0].partitions[0].error_code
}

async fn commit_metadata_past_kafkas_limit_is_refused(broker: &Broker) {
    create_topic(&broker.kafka, "notes", 1).await;
    let kafka = broker.kafka.clone();
    tokio::task::block_in_place(|| {
        let code = commit_raw(&kafka, "scribes", "notes", 1, &"m".repeat(4097));
        assert_eq!(code, ResponseError::OffsetMetadataTooLarge.code());
        let code = commit_raw(&kafka, "scribes", "notes", 2, &"m".repeat(4096));
        assert_eq!(code, 0, "4096 bytes are fine");
    });
    let log = tokio::task::block_in_place(|| read_log(broker, "scribes", 2));
    assert_eq!(log.len(), 1, "only the accepted commit is logged");
    assert_eq!((log[0].1 .0, log[0].1 .2.len()), (2, 4096));
}

/// Asserts an HTTP refusal of a reserved topic: 400 `reserved_topic`.
fn assert_reserved(what: &str, (status, body): (reqwest::StatusCode, serde_json::Value)) {
    assert_eq!(status, 400, "{what}: {body}");
    assert_eq!(body["code"], "reserved_topic", "{what}: {body}");
    let error = body["error"].as_str().unwrap_or_default();
    assert!(error.contains("reserved"), "{what}: {body}");
}

async fn the_http_door_reads_internal_topics_but_never_writes_them(broker: &Broker) {
    use serde_json::json;
    // A Kafka commit writes the log's first record.
    broker
        .post(
            "/api/v1/push",
            json!({"items": [{"queue": "orders", "payload": 1}]}),
        )
        .await;
    tokio::task::block_in_place(|| commit(broker, "billing", &[("orders", 0, 1, "")]))
        .expect("commit");
    let log_partition = partition_for("billing");

    // Writes are refused, whatever the route, and change nothing.
    for queue in [OFFSETS_TOPIC, "__other"] {
        let push = json!({"items": [{"queue": queue, "partition": log_partition.to_string(), "payload": "forged"}]});
        assert_reserved("push", broker.post_answer("/api/v1/push", push).await);
        let configure = json!({"queue": queue, "options": {"leaseTime": 5}});
        assert_reserved(
            "configure",
            broker.post_answer("/api/v1/configure", configure).await,
        );
        let deleted = reqwest::Client::new()
            .delete(format!("{}/api/v1/resources/queues/{queue}", broker.http))
            .send()
            .await
            .expect("DELETE");
        let status = deleted.status();
        let body: serde_json::Value = deleted.json().await.expect("JSON");
        assert_reserved("delete", (status, body));
        let txn =
            json!({"operations": [{"type": "push", "items": [{"queue": queue, "payload": 1}]}]});
        assert_reserved(
            "transaction push",
            broker.post_answer("/api/v1/transaction", txn).await,
        );
    }
    let (status, _) = broker.get_answer("/api/v1/resources/queues/__other").await;
    assert_eq!(status, 404, "no reserved queue was created");

    // Reading is allowed, as Kafka allows it; acknowledging is a write.
    let read = broker
        .get(&format!(
            "/api/v1/pop/queue/{OFFSETS_TOPIC}/partition/{log_partition}?consumerGroup=reader&wait=false"
        ))
        .await;
    let record = &read["messages"][0];
    assert_eq!(record["offset"], 0, "{read}");
    let ack = json!({"transactionId": record["transactionId"], "partitionId": record["partitionId"],
                     "leaseId": record["leaseId"], "consumerGroup": "reader"});
    assert_reserved("ack", broker.post_answer("/api/v1/ack", ack.clone()).await);
    let mut in_txn = ack;
    in_txn["type"] = json!("ack");
    let txn = json!({"operations": [
        {"type": "push", "items": [{"queue": "audit", "payload": 1}]},
        in_txn,
    ]});
    assert_reserved(
        "transaction ack",
        broker.post_answer("/api/v1/transaction", txn).await,
    );
    let (status, body) = broker
        .get_answer("/api/v1/pop/queue/audit?wait=false")
        .await;
    assert_eq!(
        status, 204,
        "the transaction's push was rolled back: {body}"
    );
    let groups = broker.get("/api/v1/consumer-groups").await;
    let reader = groups
        .as_array()
        .and_then(|list| list.iter().find(|g| g["name"] == "reader"))
        .unwrap_or_else(|| panic!("the reader's position: {groups}"));
    assert_eq!(
        (&reader["queueName"], &reader["totalLag"]),
        (&json!(OFFSETS_TOPIC), &json!(1)),
        "the refused ack moved nothing: {reader}"
    );

    // The log holds the one record the broker wrote, and all 50 partitions.
    let log = tokio::task::block_in_place(|| read_log(broker, "billing", 10));
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(log[0].0 .1, "orders");
    let topic = broker
        .get(&format!("/api/v1/resources/queues/{OFFSETS_TOPIC}"))
        .await;
    assert_eq!(
        topic["partitions"].as_array().map(Vec::len),
        Some(OFFSETS_PARTITIONS as usize),
        "{topic}"
    );
}
