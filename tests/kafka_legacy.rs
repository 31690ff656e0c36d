//! The protocol versions older than the protocol crate's, as old clients
//! (sarama 1.22, kafka-go 0.2, Burrow) send them: Produce v0–v2 with
//! message sets of magic 0 and 1, Fetch v0–v3 with down-conversion, and
//! the old offset and admin versions, spoken byte by byte and compared
//! byte for byte; records cross between the old formats, rdkafka and the
//! HTTP API unchanged; Debian's sarama 1.22 and kafka-go 0.2 (Go programs
//! built in GOPATH mode) produce and consume with every codec; versions not served are answered UNSUPPORTED_VERSION
//! where the answer has a form the client can read.

mod support;

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, DescribeClientQuotasResponse, ResponseHeader,
};
use kafka_protocol::protocol::Decodable;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Header, Message, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};
use serde_json::Value;
use support::go::{go_program, spoken};
use support::security::Raw;
use support::Broker;

const TIMEOUT: Duration = Duration::from_secs(20);

/// CRC-32 (IEEE), bit by bit: the tests' own, independent of the broker's.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn i16b(v: i16) -> Vec<u8> {
    v.to_be_bytes().to_vec()
}
fn i32b(v: i32) -> Vec<u8> {
    v.to_be_bytes().to_vec()
}
fn i64b(v: i64) -> Vec<u8> {
    v.to_be_bytes().to_vec()
}
fn string(s: &str) -> Vec<u8> {
    [i16b(s.len() as i16), s.as_bytes().to_vec()].concat()
}
fn nullable_bytes(b: Option<&[u8]>) -> Vec<u8> {
    match b {
        None => i32b(-1),
        Some(b) => [i32b(b.len() as i32), b.to_vec()].concat(),
    }
}
/// An array of `items`, each already encoded.
fn array(items: &[Vec<u8>]) -> Vec<u8> {
    [i32b(items.len() as i32), items.concat()].concat()
}

/// One message of a message set: offset, size, CRC-32 over the rest,
/// magic, attributes, (magic 1) timestamp, key, value.
fn message(
    magic: i8,
    offset: i64,
    timestamp: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> Vec<u8> {
    let mut rest = vec![magic as u8, 0];
    if magic == 1 {
        rest.extend(i64b(timestamp));
    }
    rest.extend(nullable_bytes(key));
    rest.extend(nullable_bytes(value));
    let crc = crc32(&rest).to_be_bytes().to_vec();
    [i64b(offset), i32b((rest.len() + 4) as i32), crc, rest].concat()
}

/// A request frame body: header v1 (key, version, correlation id, client
/// id), then `body`.
fn request(api: ApiKey, version: i16, correlation: i32, body: &[u8]) -> Vec<u8> {
    [
        i16b(api as i16),
        i16b(version),
        i32b(correlation),
        string("legacy-test"),
        body.to_vec(),
    ]
    .concat()
}

/// Sends a request and returns its answer frame (correlation id first).
fn exchange(raw: &mut Raw, api: ApiKey, version: i16, correlation: i32, body: &[u8]) -> Bytes {
    raw.send_raw(&request(api, version, correlation, body));
    raw.frame()
        .unwrap_or_else(|| panic!("{api:?} v{version}: the broker closed the connection"))
}

/// A stored record as the tests know it: key, value, timestamp (-1: none).
type Rec = (Option<&'static [u8]>, Option<&'static [u8]>, i64);

const T2: i64 = 1_700_000_000_002;
const T3: i64 = 1_700_000_000_003;

/// What the produce scenario stores: two magic-0 messages (no timestamp),
/// then two magic-1 messages, one with a null value.
const PRODUCED: [Rec; 4] = [
    (Some(b"k0"), Some(br#"{"n":0}"#), -1),
    (None, Some(br#"{"n":1}"#), -1),
    (Some(b"k2"), Some(br#"{"n":2}"#), T2),
    (Some(b"k3"), None, T3),
];

/// Produce v`version` of `set` to partition 0 of `topic`, acks 1.
fn produce_body(topic: &str, set: &[u8]) -> Vec<u8> {
    [
        i16b(1),
        i32b(5000),
        array(&[[
            string(topic),
            array(&[[i32b(0), nullable_bytes(Some(set))].concat()]),
        ]
        .concat()]),
    ]
    .concat()
}

/// Fetch v`version` of partition 0 of `topic` from `offset`.
fn fetch_body(version: i16, topic: &str, offset: i64) -> Vec<u8> {
    let mut body = [i32b(-1), i32b(100), i32b(1)].concat();
    if version >= 3 {
        body.extend(i32b(1 << 20));
    }
    body.extend(array(&[[
        string(topic),
        array(&[[i32b(0), i64b(offset), i32b(1 << 20)].concat()]),
    ]
    .concat()]));
    body
}

/// The Fetch v`version` answer of partition 0 of `topic` holding
/// `records` from offset 0: magic 0 (no timestamps) for v0–v1, magic 1
/// for v2–v3.
/// Fetch v0–v3 of partition 0 of `topic` from offset 0 (correlation ids
/// from `first`) each answer exactly `records`, down-converted.
fn fetches_read_from_the_start(raw: &mut Raw, topic: &str, first: i32, records: &[Rec]) {
    for version in 0..=3 {
        let correlation = first + i32::from(version);
        let answer = exchange(
            raw,
            ApiKey::Fetch,
            version,
            correlation,
            &fetch_body(version, topic, 0),
        );
        assert_eq!(
            &answer[..],
            &fetch_answer(correlation, version, topic, records)[..],
            "Fetch v{version}"
        );
    }
}

fn fetch_answer(correlation: i32, version: i16, topic: &str, records: &[Rec]) -> Vec<u8> {
    let magic = if version >= 2 { 1 } else { 0 };
    let set: Vec<u8> = records
        .iter()
        .enumerate()
        .flat_map(|(offset, &(key, value, ts))| message(magic, offset as i64, ts, key, value))
        .collect();
    let mut answer = i32b(correlation);
    if version >= 1 {
        answer.extend(i32b(0)); // throttle time
    }
    answer.extend(array(&[[
        string(topic),
        array(&[[
            i32b(0),
            i16b(0),
            i64b(records.len() as i64),
            nullable_bytes(Some(&set)),
        ]
        .concat()]),
    ]
    .concat()]));
    answer
}

/// The CRC is the standard one: the check value of "123456789".
#[test]
fn the_tests_crc_is_crc32_ieee() {
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
}

async fn old_produce_versions_answer_and_store_byte_for_byte(broker: &Broker) {
    let topic = "legacy-produce";
    let mut raw = Raw::connect(&broker.kafka);
    let [m0, m1, m2, m3] = PRODUCED;

    // v0: two magic-0 messages (the offsets a client sends are ignored).
    let set = [message(0, 0, -1, m0.0, m0.1), message(0, 0, -1, m1.0, m1.1)].concat();
    let answer = exchange(&mut raw, ApiKey::Produce, 0, 10, &produce_body(topic, &set));
    let partition = |base: i64, extra: Vec<u8>| {
        array(&[[
            string(topic),
            array(&[[i32b(0), i16b(0), i64b(base), extra].concat()]),
        ]
        .concat()])
    };
    assert_eq!(
        &answer[..],
        [i32b(10), partition(0, vec![])].concat(),
        "Produce v0"
    );

    // v1: a magic-1 message; the answer ends with the throttle time.
    let set = message(1, 0, m2.2, m2.0, m2.1);
    let answer = exchange(&mut raw, ApiKey::Produce, 1, 11, &produce_body(topic, &set));
    assert_eq!(
        &answer[..],
        [i32b(11), partition(2, vec![]), i32b(0)].concat(),
        "Produce v1"
    );

    // v2: each partition also answers its append time (-1: CreateTime).
    let set = message(1, 0, m3.2, m3.0, m3.1);
    let answer = exchange(&mut raw, ApiKey::Produce, 2, 12, &produce_body(topic, &set));
    assert_eq!(
        &answer[..],
        [i32b(12), partition(3, i64b(-1)), i32b(0)].concat(),
        "Produce v2"
    );

    // A flipped bit fails the CRC: CORRUPT_MESSAGE, nothing stored, and
    // the connection keeps serving.
    let mut bad = message(1, 0, 5, Some(b"k"), Some(b"v"));
    let last = bad.len() - 1;
    bad[last] ^= 1;
    let answer = exchange(&mut raw, ApiKey::Produce, 2, 13, &produce_body(topic, &bad));
    let refused = array(&[[
        string(topic),
        array(&[[i32b(0), i16b(2), i64b(-1), i64b(-1)].concat()]),
    ]
    .concat()]);
    assert_eq!(
        &answer[..],
        [i32b(13), refused, i32b(0)].concat(),
        "a bad CRC"
    );

    // Produce v3 and later take only record batches: INVALID_RECORD.
    let v3 = [
        i16b(-1),
        produce_body(topic, &message(1, 0, 5, None, Some(b"v"))),
    ]
    .concat();
    let answer = exchange(&mut raw, ApiKey::Produce, 3, 14, &v3);
    let refused = array(&[[
        string(topic),
        array(&[[i32b(0), i16b(87), i64b(-1), i64b(-1)].concat()]),
    ]
    .concat()]);
    assert_eq!(
        &answer[..],
        [i32b(14), refused, i32b(0)].concat(),
        "a message set in v3"
    );

    // Every Fetch version reads the same four records back, down-converted.
    fetches_read_from_the_start(&mut raw, topic, 20, &PRODUCED);

    // rdkafka reads them with their keys, values and timestamps.
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &broker.kafka)
        .set("broker.address.family", "v4")
        .set("group.id", "legacy-reader")
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Beginning)
        .expect("partition");
    consumer.assign(&tpl).expect("assign");
    let deadline = Instant::now() + TIMEOUT;
    let mut read = Vec::new();
    while read.len() < PRODUCED.len() {
        assert!(Instant::now() < deadline, "rdkafka read only {read:?}");
        if let Some(m) = consumer.poll(Duration::from_millis(100)) {
            let m = m.expect("consumed");
            read.push((
                m.offset(),
                m.key().map(<[u8]>::to_vec),
                m.payload().map(<[u8]>::to_vec),
                m.timestamp().to_millis().unwrap_or(-1),
            ));
        }
    }
    let expected: Vec<_> = PRODUCED
        .iter()
        .enumerate()
        .map(|(i, &(k, v, ts))| (i as i64, k.map(<[u8]>::to_vec), v.map(<[u8]>::to_vec), ts))
        .collect();
    assert_eq!(read, expected, "rdkafka");

    // And so does an HTTP pop.
    let url = format!(
        "{}/api/v1/pop/queue/{topic}?batch=10&autoAck=true",
        broker.http
    );
    let popped: Value = reqwest::get(&url)
        .await
        .expect("pop")
        .json()
        .await
        .expect("JSON");
    let popped: Vec<_> = popped["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            (
                m["offset"].as_i64().expect("offset"),
                m["key"].clone(),
                m["data"].clone(),
                m["timestamp"].as_i64().expect("timestamp"),
            )
        })
        .collect();
    let expected: Vec<_> = PRODUCED
        .iter()
        .enumerate()
        .map(|(i, &(k, v, ts))| {
            let key = k.map_or(Value::Null, |k| Value::from(String::from_utf8_lossy(k)));
            let data = v.map_or(Value::Null, |v| {
                serde_json::from_slice(v).expect("JSON value")
            });
            (i as i64, key, data, ts)
        })
        .collect();
    assert_eq!(popped, expected, "HTTP pop");
}

async fn rdkafka_records_read_back_through_old_fetches(broker: &Broker) {
    let topic = "legacy-fetch";
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", &broker.kafka)
        .set("broker.address.family", "v4")
        .set("compression.codec", "lz4")
        .create()
        .expect("producer");
    const SENT: [Rec; 3] = [
        (Some(b"a"), Some(b"first"), 1_600_000_000_000),
        (None, Some(b"second"), 1_600_000_000_500),
        (Some(b"c"), None, 1_600_000_000_250),
    ];
    for (key, value, ts) in SENT {
        let mut record = FutureRecord::<[u8], [u8]>::to(topic)
            .partition(0)
            .timestamp(ts)
            // Headers have no place in a message set: dropped.
            .headers(OwnedHeaders::new().insert(Header {
                key: "h",
                value: Some("x"),
            }));
        if let Some(k) = key {
            record = record.key(k);
        }
        if let Some(v) = value {
            record = record.payload(v);
        }
        producer
            .send(record, TIMEOUT)
            .await
            .unwrap_or_else(|(e, _)| panic!("produce failed: {e}"));
    }
    let mut raw = Raw::connect(&broker.kafka);
    fetches_read_from_the_start(&mut raw, topic, 30, &SENT);
    // From the middle, messages carry their absolute offsets.
    let answer = exchange(&mut raw, ApiKey::Fetch, 2, 40, &fetch_body(2, topic, 2));
    let (key, value, ts) = SENT[2];
    let set = message(1, 2, ts, key, value);
    let expected = [
        i32b(40),
        i32b(0),
        array(&[[
            string(topic),
            array(&[[i32b(0), i16b(0), i64b(3), nullable_bytes(Some(&set))].concat()]),
        ]
        .concat()]),
    ]
    .concat();
    assert_eq!(&answer[..], &expected[..], "Fetch v2 from offset 2");
}

async fn old_offset_and_admin_versions_are_served(broker: &Broker) {
    let topic = "legacy-admin";
    let mut raw = Raw::connect(&broker.kafka);

    // CreateTopics v0: two partitions; answered [name, error].
    let create = [
        array(&[[string(topic), i32b(2), i16b(1), array(&[]), array(&[])].concat()]),
        i32b(5000),
    ]
    .concat();
    let answer = exchange(&mut raw, ApiKey::CreateTopics, 0, 50, &create);
    assert_eq!(
        &answer[..],
        [i32b(50), array(&[[string(topic), i16b(0)].concat()])].concat(),
        "CreateTopics v0"
    );
    // v1 (validate only) of an existing topic: the error with its message.
    let again = [&create[..], &[1u8]].concat();
    let answer = exchange(&mut raw, ApiKey::CreateTopics, 1, 51, &again);
    let at = 4 + 4 + 2 + topic.len();
    assert_eq!(
        i16::from_be_bytes([answer[at], answer[at + 1]]),
        36,
        "TOPIC_ALREADY_EXISTS"
    );

    // Three records in partition 0.
    let set: Vec<u8> = (0..3)
        .flat_map(|i| message(1, 0, 1_000 + i, None, Some(b"x")))
        .collect();
    exchange(&mut raw, ApiKey::Produce, 2, 52, &produce_body(topic, &set));

    // ListOffsets v0: latest and earliest, as lists of one offset.
    let list = |timestamp: i64| {
        [
            i32b(-1),
            array(&[[
                string(topic),
                array(&[[i32b(0), i64b(timestamp), i32b(1)].concat()]),
            ]
            .concat()]),
        ]
        .concat()
    };
    let offsets = |correlation: i32, offset: i64| {
        [
            i32b(correlation),
            array(&[[
                string(topic),
                array(&[[i32b(0), i16b(0), array(&[i64b(offset)])].concat()]),
            ]
            .concat()]),
        ]
        .concat()
    };
    let answer = exchange(&mut raw, ApiKey::ListOffsets, 0, 53, &list(-1));
    assert_eq!(&answer[..], offsets(53, 3), "ListOffsets v0 latest");
    let answer = exchange(&mut raw, ApiKey::ListOffsets, 0, 54, &list(-2));
    assert_eq!(&answer[..], offsets(54, 0), "ListOffsets v0 earliest");

    // OffsetCommit v0 then v1 (generation -1: no members), OffsetFetch v0.
    let committed = |correlation: i32| {
        [
            i32b(correlation),
            array(&[[string(topic), array(&[[i32b(0), i16b(0)].concat()])].concat()]),
        ]
        .concat()
    };
    let commit_v0 = [
        string("old-group"),
        array(&[[
            string(topic),
            array(&[[i32b(0), i64b(2), string("meta-0")].concat()]),
        ]
        .concat()]),
    ]
    .concat();
    let answer = exchange(&mut raw, ApiKey::OffsetCommit, 0, 55, &commit_v0);
    assert_eq!(&answer[..], committed(55), "OffsetCommit v0");
    let fetch_offsets = [
        string("old-group"),
        array(&[[string(topic), array(&[i32b(0)])].concat()]),
    ]
    .concat();
    let fetched = |correlation: i32, offset: i64, metadata: &str| {
        [
            i32b(correlation),
            array(&[[
                string(topic),
                array(&[[i32b(0), i64b(offset), string(metadata), i16b(0)].concat()]),
            ]
            .concat()]),
        ]
        .concat()
    };
    let answer = exchange(&mut raw, ApiKey::OffsetFetch, 0, 56, &fetch_offsets);
    assert_eq!(&answer[..], fetched(56, 2, "meta-0"), "OffsetFetch v0");
    let commit_v1 = [
        string("old-group"),
        i32b(-1),
        string(""),
        array(&[[
            string(topic),
            array(&[[i32b(0), i64b(3), i64b(-1), string("meta-1")].concat()]),
        ]
        .concat()]),
    ]
    .concat();
    let answer = exchange(&mut raw, ApiKey::OffsetCommit, 1, 57, &commit_v1);
    assert_eq!(&answer[..], committed(57), "OffsetCommit v1");
    let answer = exchange(&mut raw, ApiKey::OffsetFetch, 0, 58, &fetch_offsets);
    assert_eq!(&answer[..], fetched(58, 3, "meta-1"), "OffsetFetch v0");

    // DeleteTopics v0: [name, error].
    let delete = [array(&[string(topic)]), i32b(5000)].concat();
    let answer = exchange(&mut raw, ApiKey::DeleteTopics, 0, 59, &delete);
    assert_eq!(
        &answer[..],
        [i32b(59), array(&[[string(topic), i16b(0)].concat()])].concat(),
        "DeleteTopics v0"
    );
}

fn nullable_string(s: Option<&str>) -> Vec<u8> {
    s.map_or_else(|| i16b(-1), string)
}

async fn old_epoch_config_and_acl_versions_are_served(broker: &Broker) {
    let topic = "legacy-more";
    let mut raw = Raw::connect(&broker.kafka);
    let set: Vec<u8> = (0..3)
        .flat_map(|i| message(1, 0, 1_000 + i, None, Some(b"x")))
        .collect();
    exchange(&mut raw, ApiKey::Produce, 2, 70, &produce_body(topic, &set));

    // OffsetForLeaderEpoch v0 and v1: epoch 0 ends at the high watermark.
    let epochs = array(&[[string(topic), array(&[[i32b(0), i32b(0)].concat()])].concat()]);
    for version in 0..=1 {
        let correlation = 71 + i32::from(version);
        let answer = exchange(
            &mut raw,
            ApiKey::OffsetForLeaderEpoch,
            version,
            correlation,
            &epochs,
        );
        let epoch = if version >= 1 { i32b(0) } else { vec![] };
        let expected = [
            i32b(correlation),
            array(&[[
                string(topic),
                array(&[[i16b(0), i32b(0), epoch, i64b(3)].concat()]),
            ]
            .concat()]),
        ]
        .concat();
        assert_eq!(
            &answer[..],
            &expected[..],
            "OffsetForLeaderEpoch v{version}"
        );
    }

    // DescribeConfigs v0 of one topic config: is_default rather than a source.
    let describe =
        array(&[[vec![2u8], string(topic), array(&[string("cleanup.policy")])].concat()]);
    let answer = exchange(&mut raw, ApiKey::DescribeConfigs, 0, 73, &describe);
    let expected = [
        i32b(73),
        i32b(0),
        array(&[[
            i16b(0),
            nullable_string(None),
            vec![2u8],
            string(topic),
            array(&[[string("cleanup.policy"), string("delete"), vec![0, 1, 0]].concat()]),
        ]
        .concat()]),
    ]
    .concat();
    assert_eq!(&answer[..], &expected[..], "DescribeConfigs v0");

    // CreateAcls, DescribeAcls and DeleteAcls v0: literal topic bindings.
    const TOPIC: u8 = 2;
    const READ: u8 = 3;
    const ALLOW: u8 = 3;
    const ANY: u8 = 1;
    let creation = [
        vec![TOPIC],
        string(topic),
        string("User:old"),
        string("*"),
        vec![READ, ALLOW],
    ]
    .concat();
    let answer = exchange(&mut raw, ApiKey::CreateAcls, 0, 74, &array(&[creation]));
    let expected = [
        i32b(74),
        i32b(0),
        // The handler's success message is the protocol crate's default, "".
        array(&[[i16b(0), string("")].concat()]),
    ]
    .concat();
    assert_eq!(&answer[..], &expected[..], "CreateAcls v0");
    let filter = [
        vec![ANY],
        nullable_string(None),
        nullable_string(None),
        nullable_string(None),
        vec![ANY, ANY],
    ]
    .concat();
    let answer = exchange(&mut raw, ApiKey::DescribeAcls, 0, 75, &filter);
    let acl = [string("User:old"), string("*"), vec![READ, ALLOW]].concat();
    let expected = [
        i32b(75),
        i32b(0),
        i16b(0),
        string(""),
        array(&[[vec![TOPIC], string(topic), array(&[acl])].concat()]),
    ]
    .concat();
    assert_eq!(&answer[..], &expected[..], "DescribeAcls v0");
    let answer = exchange(&mut raw, ApiKey::DeleteAcls, 0, 76, &array(&[filter]));
    let matching = [
        i16b(0),
        string(""),
        vec![TOPIC],
        string(topic),
        string("User:old"),
        string("*"),
        vec![READ, ALLOW],
    ]
    .concat();
    let expected = [
        i32b(76),
        i32b(0),
        array(&[[i16b(0), string(""), array(&[matching])].concat()]),
    ]
    .concat();
    assert_eq!(&answer[..], &expected[..], "DeleteAcls v0");

    // DescribeLogDirs v0 (Kafka 3.9 serves it; v1 has the same wire form).
    let dirs = array(&[[string(topic), array(&[i32b(0), i32b(7)])].concat()]);
    let answer = exchange(&mut raw, ApiKey::DescribeLogDirs, 0, 77, &dirs);
    let as_v1 = exchange(&mut raw, ApiKey::DescribeLogDirs, 1, 77, &dirs);
    assert_eq!(answer, as_v1, "DescribeLogDirs v0 answers as v1");
    let dir_len = usize::from(u16::from_be_bytes([answer[14], answer[15]]));
    let after_dir = 16 + dir_len;
    let head = [i32b(77), i32b(0), i32b(1), i16b(0)].concat();
    assert_eq!(
        &answer[..14],
        &head[..],
        "DescribeLogDirs v0: one dir, no error"
    );
    let dir = std::str::from_utf8(&answer[16..after_dir]).expect("a dir name");
    assert!(dir.contains(':'), "backend:cluster, got {dir}");
    let size_at = after_dir + 4 + topic.len() + 2 + 4 + 4;
    let size = i64::from_be_bytes(answer[size_at..size_at + 8].try_into().expect("8 bytes"));
    assert!(size > 0, "partition 0 holds three messages");
    let expected = [array(&[[
        string(topic),
        array(&[[i32b(0), i64b(size), i64b(0), vec![0]].concat()]),
    ]
    .concat()])]
    .concat();
    assert_eq!(
        &answer[after_dir..],
        &expected[..],
        "DescribeLogDirs v0: partition 0 only (7 does not exist)"
    );
}

/// Every record of partition 0 of `topic` as rdkafka reads it, one line
/// each: "offset key value timestamp-ms" (-1: none).
fn rdkafka_lines(broker: &Broker, topic: &str, count: usize) -> String {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &broker.kafka)
        .set("broker.address.family", "v4")
        .set("group.id", "legacy-go-reader")
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Beginning)
        .expect("partition");
    consumer.assign(&tpl).expect("assign");
    let deadline = Instant::now() + TIMEOUT;
    let mut read = String::new();
    let mut n = 0;
    while n < count {
        assert!(Instant::now() < deadline, "rdkafka read only {read}");
        if let Some(m) = consumer.poll(Duration::from_millis(100)) {
            let m = m.expect("consumed");
            read.push_str(&format!(
                "{} {} {} {}\n",
                m.offset(),
                String::from_utf8_lossy(m.key().unwrap_or_default()),
                String::from_utf8_lossy(m.payload().unwrap_or_default()),
                m.timestamp().to_millis().unwrap_or(-1)
            ));
            n += 1;
        }
    }
    read
}

async fn sarama_1_22_produces_and_consumes_with_every_codec(broker: &Broker) {
    let program = go_program(
        "sarama_roundtrip",
        "github.com/Shopify/sarama",
        "golang-github-shopify-sarama-dev",
    );
    // 0.8.2.0: Produce v0, Fetch v0, message format 0 (no timestamps, no
    // lz4 in sarama); 0.10.0.0: Produce v2, Fetch v2, message format 1.
    let runs = [
        ("0.8.2.0", "none"),
        ("0.8.2.0", "gzip"),
        ("0.8.2.0", "snappy"),
        ("0.10.0.0", "none"),
        ("0.10.0.0", "gzip"),
        ("0.10.0.0", "snappy"),
        ("0.10.0.0", "lz4"),
    ];
    for (version, codec) in runs {
        let topic = format!("sarama-{version}-{codec}");
        let run = std::process::Command::new(&program)
            .args([&broker.kafka, &topic, version, codec])
            .output()
            .expect("sarama program runs");
        assert!(
            run.status.success(),
            "sarama {version} {codec}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let timestamp = |i: i64| {
            if version == "0.8.2.0" {
                -1
            } else {
                1_700_000_000_000 + i
            }
        };
        let expected: String = (0..3)
            .map(|i| format!("{i} k{i} v{i}-{codec} {}\n", timestamp(i)))
            .collect();
        assert_eq!(
            String::from_utf8_lossy(&run.stdout),
            expected,
            "sarama {version} {codec} reads back what it produced"
        );

        // rdkafka reads the same records, compressed wrappers unpacked.
        let read = rdkafka_lines(broker, &topic, 3);
        assert_eq!(read, expected, "rdkafka reads sarama {version} {codec}");
    }

    // The old versions were the ones spoken.
    for (api, version) in [("Produce", 0), ("Produce", 2), ("Fetch", 0), ("Fetch", 2)] {
        assert!(spoken(broker, api, version).await, "no {api} v{version}");
    }
    let _ = std::fs::remove_file(program);
}

async fn kafka_go_0_2_writes_and_reads_with_every_codec(broker: &Broker) {
    let program = go_program(
        "kafka_go_roundtrip",
        "github.com/segmentio/kafka-go",
        "golang-github-segmentio-kafka-go-dev",
    );
    for codec in ["none", "gzip", "snappy", "lz4"] {
        let topic = format!("kafka-go-{codec}");
        let run = std::process::Command::new(&program)
            .args([&broker.kafka, &topic, codec])
            .output()
            .expect("kafka-go program runs");
        assert!(
            run.status.success(),
            "kafka-go {codec}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let expected: String = (0..3)
            .map(|i: i64| format!("{i} k{i} v{i}-{codec} {}\n", 1_700_000_000_000 + i))
            .collect();
        assert_eq!(
            String::from_utf8_lossy(&run.stdout),
            expected,
            "kafka-go {codec}"
        );
        assert_eq!(
            rdkafka_lines(broker, &topic, 3),
            expected,
            "rdkafka reads kafka-go {codec}"
        );
    }
    for (api, version) in [("Produce", 2), ("Fetch", 2), ("ListOffsets", 1)] {
        assert!(spoken(broker, api, version).await, "no {api} v{version}");
    }
    let _ = std::fs::remove_file(program);
}

async fn unsupported_versions_are_answered_where_the_client_can_read_them(broker: &Broker) {
    let mut raw = Raw::connect(&broker.kafka);
    // A flexible version: the header ends with its (empty) tagged fields.
    let mut answer = exchange(&mut raw, ApiKey::ApiVersions, 99, 60, &[0]);
    let header = ResponseHeader::decode(&mut answer, 0).expect("header v0");
    assert_eq!(header.correlation_id, 60);
    let versions = ApiVersionsResponse::decode(&mut answer, 0).expect("a v0 answer");
    assert_eq!(versions.error_code, 35, "UNSUPPORTED_VERSION");
    let range = |key: ApiKey| {
        versions
            .api_keys
            .iter()
            .find(|k| k.api_key == key as i16)
            .map(|k| (k.min_version, k.max_version))
    };
    // The old versions are advertised with the new.
    assert_eq!(range(ApiKey::Produce), Some((0, 13)));
    assert_eq!(range(ApiKey::Fetch), Some((0, 18)));
    assert_eq!(range(ApiKey::ListOffsets).map(|r| r.0), Some(0));
    assert_eq!(range(ApiKey::OffsetCommit).map(|r| r.0), Some(0));
    assert_eq!(range(ApiKey::OffsetFetch).map(|r| r.0), Some(0));
    assert_eq!(range(ApiKey::CreateTopics).map(|r| r.0), Some(0));
    for key in [
        ApiKey::DeleteTopics,
        ApiKey::DescribeConfigs,
        ApiKey::OffsetForLeaderEpoch,
        ApiKey::DescribeAcls,
        ApiKey::CreateAcls,
        ApiKey::DeleteAcls,
    ] {
        assert_eq!(range(key).map(|r| r.0), Some(0), "{key:?}");
    }
    // An API this broker does not implement, at a version whose answer
    // has a top-level error: UNSUPPORTED_VERSION in that answer.
    let mut answer = exchange(&mut raw, ApiKey::DescribeClientQuotas, 0, 62, &[]);
    let header = ResponseHeader::decode(&mut answer, 0).expect("header v0");
    assert_eq!(header.correlation_id, 62);
    let quotas = DescribeClientQuotasResponse::decode(&mut answer, 0)
        .expect("a DescribeClientQuotas v0 answer");
    assert_eq!(quotas.error_code, 35, "UNSUPPORTED_VERSION");
    // The connection still serves: a v0 Fetch of nothing.
    let answer = exchange(
        &mut raw,
        ApiKey::Fetch,
        0,
        61,
        &[i32b(-1), i32b(0), i32b(0), array(&[])].concat(),
    );
    assert_eq!(&answer[..], [i32b(61), array(&[])].concat());

    // A version newer than any schema here has no form the client could
    // read: the connection is closed, as Kafka closes it.
    raw.send_raw(&request(ApiKey::Produce, 99, 63, &[0]));
    assert!(raw.frame().is_none(), "Produce v99 closes the connection");
}

support::broker_scenarios!(&[];
    old_produce_versions_answer_and_store_byte_for_byte,
    rdkafka_records_read_back_through_old_fetches,
    old_offset_and_admin_versions_are_served,
    old_epoch_config_and_acl_versions_are_served,
    sarama_1_22_produces_and_consumes_with_every_codec,
    kafka_go_0_2_writes_and_reads_with_every_codec,
    unsupported_versions_are_answered_where_the_client_can_read_them,
);
