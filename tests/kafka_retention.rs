//! Retention and DeleteRecords end to end, with librdkafka (the `rdkafka`
//! crate) and the HTTP API against the running binary, on SQLite and
//! PostgreSQL: every reader follows a moved log start.

mod support;

use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::RDKafkaErrorCode;
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};
use serde_json::Value;
use support::kafka::create_topic;
use support::Broker;

const TIMEOUT: Duration = Duration::from_secs(20);

fn config(broker: &Broker) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", &broker.kafka)
        .set("broker.address.family", "v4");
    c
}

fn admin(broker: &Broker) -> AdminClient<DefaultClientContext> {
    config(broker).create().expect("admin client")
}

fn consumer(broker: &Broker, group: &str) -> BaseConsumer {
    config(broker)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", "200")
        .create()
        .expect("consumer")
}

async fn produce_n(broker: &Broker, topic: &str, n: usize) {
    let p: FutureProducer = config(broker).create().expect("producer");
    for i in 0..n {
        let payload = format!("v{i}");
        p.send(
            FutureRecord::<[u8], [u8]>::to(topic)
                .partition(0)
                .payload(payload.as_bytes()),
            TIMEOUT,
        )
        .await
        .unwrap_or_else(|(e, _)| panic!("produce failed: {e}"));
    }
}

/// The offset of the first record `c` receives.
fn first_offset(c: &BaseConsumer) -> i64 {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        assert!(Instant::now() < deadline, "no record arrived");
        if let Some(m) = c.poll(Duration::from_millis(200)) {
            return m.expect("consume").offset();
        }
    }
}

/// Moves partition 0 of `topic` to `offset`; the partition's answer.
async fn delete_records(
    admin: &AdminClient<DefaultClientContext>,
    topic: &str,
    offset: Offset,
) -> Result<Offset, rdkafka::error::KafkaError> {
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, offset).expect("tpl");
    let answer = admin
        .delete_records(&tpl, &AdminOptions::new())
        .await
        .expect("delete records answered");
    let p = answer.find_partition(topic, 0).expect("partition answered");
    p.error().map(|()| p.offset())
}

support::broker_scenarios!(
    &[];
    delete_records_moves_every_readers_start,
    retention_ms_deletes_old_records,
    a_compacted_topic_reads_across_its_gaps,
);

async fn delete_records_moves_every_readers_start(broker: &Broker) {
    create_topic(&broker.kafka, "dr", 1).await;
    produce_n(broker, "dr", 10).await;
    let admin = admin(broker);
    assert_eq!(
        delete_records(&admin, "dr", Offset::Offset(4))
            .await
            .expect("deleted"),
        Offset::Offset(4)
    );
    let c = consumer(broker, "fresh");
    assert_eq!(
        c.fetch_watermarks("dr", 0, TIMEOUT).expect("watermarks"),
        (4, 10)
    );

    // A fetch below the start is out of range; the reset policy applies.
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset("dr", 0, Offset::Offset(1))
        .expect("tpl");
    c.assign(&tpl).expect("assign");
    assert_eq!(first_offset(&c), 4);
    let group = consumer(broker, "subscriber");
    group.subscribe(&["dr"]).expect("subscribe");
    assert_eq!(
        first_offset(&group),
        4,
        "a new group starts at the log start"
    );

    let popped: Value = reqwest::get(format!(
        "{}/api/v1/pop/queue/dr?batch=100&wait=false&consumerGroup=native",
        broker.http
    ))
    .await
    .expect("pop")
    .json()
    .await
    .expect("JSON");
    assert_eq!(popped["messages"][0]["offset"], 4, "native pops follow too");

    match delete_records(&admin, "dr", Offset::Offset(11)).await {
        Err(e) => assert_eq!(
            e.rdkafka_error_code(),
            Some(RDKafkaErrorCode::OffsetOutOfRange),
            "{e}"
        ),
        Ok(o) => panic!("deleting past the high watermark answered {o:?}"),
    }
    assert_eq!(
        delete_records(&admin, "dr", Offset::End)
            .await
            .expect("deleted"),
        Offset::Offset(10),
        "the end is the high watermark"
    );
    assert_eq!(
        c.fetch_watermarks("dr", 0, TIMEOUT).expect("watermarks"),
        (10, 10)
    );
}

async fn retention_ms_deletes_old_records(broker: &Broker) {
    let admin = admin(broker);
    let topics = [
        NewTopic::new("short", 1, TopicReplication::Fixed(1)).set("retention.ms", "1000"),
        NewTopic::new("long", 1, TopicReplication::Fixed(1)).set("retention.ms", "3600000"),
    ];
    for r in admin
        .create_topics(&topics, &AdminOptions::new())
        .await
        .expect("create")
    {
        r.expect("created");
    }
    produce_n(broker, "short", 5).await;
    produce_n(broker, "long", 5).await;
    let c = consumer(broker, "watch");
    let deadline = Instant::now() + TIMEOUT;
    while c.fetch_watermarks("short", 0, TIMEOUT).expect("watermarks") != (5, 5) {
        assert!(
            Instant::now() < deadline,
            "the old records were never deleted"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(
        c.fetch_watermarks("long", 0, TIMEOUT).expect("watermarks"),
        (0, 5),
        "records younger than their topic's retention stay"
    );
    // Retention goes on: a record produced now goes in its turn.
    produce_n(broker, "short", 1).await;
    while c.fetch_watermarks("short", 0, TIMEOUT).expect("watermarks") != (6, 6) {
        assert!(
            Instant::now() < deadline,
            "the new record was never deleted"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Every record of partition 0 of `topic` up to `last`, read by a fresh
/// consumer from the beginning: (offset, key, value).
fn read_to(broker: &Broker, topic: &str, last: i64) -> Vec<(i64, String, String)> {
    let c = consumer(broker, "reader");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Beginning)
        .expect("tpl");
    c.assign(&tpl).expect("assign");
    let text = |b: Option<&[u8]>| String::from_utf8_lossy(b.unwrap_or_default()).into_owned();
    let deadline = Instant::now() + TIMEOUT;
    let mut out = Vec::new();
    while out.last().is_none_or(|(o, _, _)| *o < last) {
        assert!(Instant::now() < deadline, "read stopped at {out:?}");
        if let Some(m) = c.poll(Duration::from_millis(200)) {
            let m = m.expect("consume");
            out.push((m.offset(), text(m.key()), text(m.payload())));
        }
    }
    out
}

async fn a_compacted_topic_reads_across_its_gaps(broker: &Broker) {
    let admin = admin(broker);
    let topic =
        NewTopic::new("compacted", 1, TopicReplication::Fixed(1)).set("cleanup.policy", "compact");
    for r in admin
        .create_topics(&[topic], &AdminOptions::new())
        .await
        .expect("create")
    {
        r.expect("created");
    }
    // Ten rounds over ten keys, sent at once: batches of many records, so
    // compaction leaves gaps inside stored batches as well as between them.
    let p: FutureProducer = config(broker)
        .set("linger.ms", "20")
        .create()
        .expect("producer");
    // Queued in order (send_result does not wait), acknowledged together.
    let sends: Vec<_> = (0..100)
        .map(|i| {
            let (key, value) = (format!("k{}", i % 10), format!("r{}", i / 10));
            let record = FutureRecord::to("compacted")
                .partition(0)
                .key(&key)
                .payload(&value);
            p.send_result(record)
                .unwrap_or_else(|(e, _)| panic!("queue the record: {e}"))
        })
        .collect();
    for (i, sent) in sends.into_iter().enumerate() {
        let delivery = sent
            .await
            .expect("delivery report")
            .unwrap_or_else(|(e, _)| panic!("produce failed: {e}"));
        assert_eq!(delivery.offset, i as i64, "records land in the order sent");
    }
    let deadline = Instant::now() + TIMEOUT;
    let latest = loop {
        let read = read_to(broker, "compacted", 99);
        if read.len() == 10 {
            break read;
        }
        assert!(
            Instant::now() < deadline,
            "never compacted: {} records",
            read.len()
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    let expected: Vec<(i64, String, String)> = (90..100)
        .map(|o| (o, format!("k{}", o % 10), "r9".to_owned()))
        .collect();
    assert_eq!(
        latest, expected,
        "the latest record of each key, at its offset"
    );
    let group = consumer(broker, "compacted-group");
    group.subscribe(&["compacted"]).expect("subscribe");
    assert_eq!(
        first_offset(&group),
        90,
        "a group starts at the first record left"
    );
}
