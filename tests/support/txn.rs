//! Kafka transactions through librdkafka, shared by the transaction tests:
//! a transactional producer, reads at either isolation level until the
//! partitions' ends, and ListOffsets at an isolation level. Blocking: call
//! them off the async runtime's threads.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{ApiKey, ListOffsetsRequest, ListOffsetsResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseRecord, Producer, ThreadedProducer};
use rdkafka::{Message, Offset, TopicPartitionList};

use super::kafka::call;

/// A producer that serves its delivery reports on its own thread, as
/// librdkafka's transactional calls need.
pub(crate) type TxnProducer = ThreadedProducer<rdkafka::producer::DefaultProducerContext>;
pub(crate) const WAIT: Duration = Duration::from_secs(30);

pub(crate) fn client(kafka: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", kafka)
        .set("broker.address.family", "v4");
    c
}

/// A transactional producer with `id`, its transactions initialised.
pub(crate) fn transactional(kafka: &str, id: &str) -> TxnProducer {
    let producer: TxnProducer = client(kafka)
        .set("transactional.id", id)
        .set("linger.ms", "5")
        .set("transaction.timeout.ms", "60000")
        .create()
        .expect("producer");
    producer.init_transactions(WAIT).expect("init_transactions");
    producer
}

/// Queues `value` to `topic`/`partition` (sent by the next flush or commit).
pub(crate) fn send(producer: &TxnProducer, topic: &str, partition: i32, value: &str) {
    producer
        .send(
            BaseRecord::<(), str>::to(topic)
                .partition(partition)
                .payload(value),
        )
        .map_err(|(e, _)| e)
        .expect("queued");
}

/// Every value of `partitions` from the beginning, in partition order, as a
/// consumer at `isolation` reads them, with its final position on each
/// partition: read until every position reaches the partition's end as
/// ListOffsets tells it at that isolation level (the last stable offset
/// for read_committed), so the positions must move past aborted records
/// and markers.
pub(crate) fn read_all(
    kafka: &str,
    partitions: &[(&str, i32)],
    isolation: &str,
) -> (Vec<String>, BTreeMap<(String, i32), i64>) {
    let level = i8::from(isolation == "read_committed");
    let ends: BTreeMap<(String, i32), i64> = partitions
        .iter()
        .map(|(t, p)| ((t.to_string(), *p), latest(kafka, t, *p, level)))
        .collect();
    let consumer: BaseConsumer = client(kafka)
        .set("group.id", "readers")
        .set("enable.auto.commit", "false")
        .set("isolation.level", isolation)
        .set("fetch.wait.max.ms", "100")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    for (topic, p) in partitions {
        tpl.add_partition_offset(topic, *p, Offset::Beginning)
            .expect("partition");
    }
    consumer.assign(&tpl).expect("assigned");
    let mut values: BTreeMap<(String, i32), Vec<String>> = BTreeMap::new();
    let deadline = Instant::now() + WAIT;
    loop {
        let positions: BTreeMap<(String, i32), i64> = consumer
            .position()
            .expect("position")
            .elements()
            .iter()
            .map(|e| {
                let offset = match e.offset() {
                    Offset::Offset(o) => o,
                    _ => -1,
                };
                ((e.topic().to_owned(), e.partition()), offset)
            })
            .collect();
        if ends.iter().all(|(k, end)| positions.get(k) >= Some(end)) {
            return (values.into_values().flatten().collect(), positions);
        }
        assert!(
            Instant::now() < deadline,
            "{isolation}: positions {positions:?} did not reach {ends:?}"
        );
        match consumer.poll(Duration::from_millis(100)) {
            None => {}
            Some(Err(e)) => panic!("consume failed: {e}"),
            Some(Ok(m)) => {
                let value = String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned();
                values
                    .entry((m.topic().to_owned(), m.partition()))
                    .or_default()
                    .push(value);
            }
        }
    }
}

/// The latest offset of `topic`/`partition` through ListOffsets at
/// `isolation_level` (0 read_uncommitted: the high watermark; 1
/// read_committed: the last stable offset).
pub(crate) fn latest(kafka: &str, topic: &str, partition: i32, isolation_level: i8) -> i64 {
    let request = ListOffsetsRequest::default()
        .with_replica_id(kafka_protocol::messages::BrokerId(-1))
        .with_isolation_level(isolation_level)
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(partition)
                .with_timestamp(-1)])]);
    let answer: ListOffsetsResponse = call(kafka, ApiKey::ListOffsets, 5, &request);
    let p = &answer.topics[0].partitions[0];
    assert_eq!(p.error_code, 0, "ListOffsets of {topic}/{partition}");
    p.offset
}
