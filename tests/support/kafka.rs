//! Kafka helpers shared by the tests and benches: topic creation through
//! librdkafka's admin client, and one raw request/answer exchange for the
//! cases a client library cannot produce (replays, coordinator lookups).

use std::io::{Read, Write};

use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::producer::{FutureProducer, FutureRecord};

/// Creates `name` with `partitions` partitions through `bootstrap`.
pub(crate) async fn create_topic(bootstrap: &str, name: &str, partitions: i32) {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .create()
        .expect("admin client");
    for r in admin
        .create_topics(
            &[NewTopic::new(name, partitions, TopicReplication::Fixed(1))],
            &AdminOptions::new(),
        )
        .await
        .expect("create topics")
    {
        r.expect("topic created");
    }
}

/// Produces `count` records `"{prefix}-{n}"` to `topic` through
/// `bootstrap` (record n to partition n % `partitions`), each acknowledged
/// by every replica before this returns.
pub(crate) async fn produce_numbered(
    bootstrap: &str,
    topic: &str,
    prefix: &str,
    count: i32,
    partitions: i32,
) {
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .set("linger.ms", "5")
        .set("acks", "all")
        .create()
        .expect("producer");
    for n in 0..count {
        let body = format!("{prefix}-{n}");
        producer
            .send(
                FutureRecord::<[u8], [u8]>::to(topic)
                    .partition(n % partitions)
                    .payload(body.as_bytes()),
                std::time::Duration::from_secs(30),
            )
            .await
            .map_err(|(e, _)| e)
            .expect("produced");
    }
}

/// Sends one request of `api` at `version` on a fresh connection and
/// decodes its answer (blocking: call it off the async runtime's threads).
pub(crate) fn call<A: Decodable>(
    kafka: &str,
    api: ApiKey,
    version: i16,
    request: &impl Encodable,
) -> A {
    let header = RequestHeader::default()
        .with_request_api_key(api as i16)
        .with_request_api_version(version)
        .with_correlation_id(1);
    let mut body = bytes::BytesMut::new();
    header
        .encode(&mut body, api.request_header_version(version))
        .expect("header");
    request.encode(&mut body, version).expect("body");
    let mut stream = std::net::TcpStream::connect(kafka).expect("connect");
    stream
        .write_all(&(body.len() as i32).to_be_bytes())
        .and_then(|()| stream.write_all(&body))
        .expect("send");
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).expect("answer length");
    let mut answer = vec![0u8; i32::from_be_bytes(len) as usize];
    stream.read_exact(&mut answer).expect("answer");
    let mut answer = bytes::Bytes::from(answer);
    ResponseHeader::decode(&mut answer, api.response_header_version(version)).expect("header");
    A::decode(&mut answer, version).expect("answer body")
}

/// One uncompressed record batch (v2) of `values`, by producer
/// `producer_id` at `epoch` from sequence `sequence` on (all -1: not
/// idempotent).
pub(crate) fn record_batch(
    producer_id: i64,
    epoch: i16,
    sequence: i32,
    values: Vec<bytes::Bytes>,
) -> bytes::Bytes {
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };
    let records: Vec<Record> = values
        .into_iter()
        .enumerate()
        .map(|(i, value)| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id,
            producer_epoch: epoch,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: if sequence < 0 {
                -1
            } else {
                sequence + i as i32
            },
            timestamp: 1_700_000_000_000,
            key: None,
            value: Some(value),
            headers: Default::default(),
        })
        .collect();
    let mut batch = bytes::BytesMut::new();
    RecordBatchEncoder::encode(
        &mut batch,
        &records,
        &RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        },
    )
    .expect("batch");
    batch.freeze()
}
