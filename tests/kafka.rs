//! The Kafka facade end to end, with librdkafka (the `rdkafka` crate)
//! against the running binary, on SQLite and PostgreSQL.

mod support;

use std::time::{Duration, Instant};

use rdkafka::admin::{
    AdminClient, AdminOptions, NewPartitions, NewTopic, ResourceSpecifier, TopicReplication,
};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Header, Headers, Message, OwnedHeaders, OwnedMessage};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};
use serde_json::{json, Value};
use support::kafka::create_topic;
use support::{Broker, TestDb};

const TIMEOUT: Duration = Duration::from_secs(20);

fn config(broker: &Broker) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", &broker.kafka)
        .set("broker.address.family", "v4")
        .set("topic.metadata.refresh.interval.ms", "1000");
    c
}

fn admin(broker: &Broker) -> AdminClient<DefaultClientContext> {
    config(broker).create().expect("admin client")
}

fn producer(broker: &Broker, extra: &[(&str, &str)]) -> FutureProducer {
    let mut c = config(broker);
    c.set("linger.ms", "5").set("acks", "all");
    for (k, v) in extra {
        c.set(*k, *v);
    }
    c.create().expect("producer")
}

fn consumer(broker: &Broker, extra: &[(&str, &str)]) -> BaseConsumer {
    let mut c = config(broker);
    c.set("group.id", "unused-no-commits")
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", "200");
    for (k, v) in extra {
        c.set(*k, *v);
    }
    c.create().expect("consumer")
}

async fn produce(p: &FutureProducer, record: FutureRecord<'_, [u8], [u8]>) -> (i32, i64) {
    let delivery = p
        .send(record, TIMEOUT)
        .await
        .unwrap_or_else(|(e, _)| panic!("produce failed: {e}"));
    (delivery.partition, delivery.offset)
}

/// Reads `n` messages from the assignment, in arrival order.
fn consume(c: &BaseConsumer, n: usize) -> Vec<OwnedMessage> {
    let deadline = Instant::now() + TIMEOUT;
    let mut out = Vec::new();
    while out.len() < n {
        assert!(
            Instant::now() < deadline,
            "only {} of {n} messages arrived",
            out.len()
        );
        if let Some(m) = c.poll(Duration::from_millis(200)) {
            out.push(m.expect("consume").detach());
        }
    }
    out
}

/// GETs a URL of the HTTP API and parses the JSON answer.
async fn get_json(url: &str) -> Value {
    reqwest::get(url)
        .await
        .expect("GET")
        .json()
        .await
        .expect("JSON answer")
}

fn assign(c: &BaseConsumer, topic: &str, partitions: &[(i32, Offset)]) {
    let mut tpl = TopicPartitionList::new();
    for &(p, offset) in partitions {
        tpl.add_partition_offset(topic, p, offset)
            .expect("partition");
    }
    c.assign(&tpl).expect("assign");
}

support::broker_scenarios!(
    &[];
    topics_are_created_described_grown_and_deleted,
    records_round_trip_with_keys_nulls_headers_and_timestamps,
    every_compression_codec_round_trips,
    a_one_mebibyte_record_round_trips,
    offsets_by_time_seek_and_out_of_range,
    a_waiting_fetch_returns_when_a_record_arrives,
    producing_to_an_unknown_topic_creates_it,
    http_and_kafka_share_queues_and_offsets,
    librdkafka_commits_are_the_native_position,
);

async fn topics_are_created_described_grown_and_deleted(broker: &Broker) {
    create_topic(&broker.kafka, "orders", 3).await;
    let admin = admin(broker);
    let again = admin
        .create_topics(
            &[NewTopic::new("orders", 3, TopicReplication::Fixed(1))],
            &AdminOptions::new(),
        )
        .await
        .expect("request");
    assert!(again[0].is_err(), "creating it twice is refused");

    let c = consumer(broker, &[]);
    let metadata = c.fetch_metadata(Some("orders"), TIMEOUT).expect("metadata");
    let topic = &metadata.topics()[0];
    assert_eq!(topic.name(), "orders");
    assert_eq!(topic.partitions().len(), 3);
    assert!(topic
        .partitions()
        .iter()
        .all(|p| p.leader() >= 0 && p.isr() == [p.leader()]));
    assert_eq!(metadata.brokers().len(), 1);

    let configs = admin
        .describe_configs(&[ResourceSpecifier::Topic("orders")], &AdminOptions::new())
        .await
        .expect("describe configs");
    let resource = configs[0].as_ref().expect("topic configs");
    let entries = resource.entry_map();
    assert_eq!(entries["cleanup.policy"].value.as_deref(), Some("delete"));
    assert_eq!(entries["retention.ms"].value.as_deref(), Some("-1"));
    assert!(entries.contains_key("max.message.bytes"));
    assert_eq!(
        entries["queen.dedupWindowSeconds"].value.as_deref(),
        Some("0"),
        "a Kafka topic has no dedup window"
    );

    let grown = admin
        .create_partitions(&[NewPartitions::new("orders", 5)], &AdminOptions::new())
        .await
        .expect("create partitions");
    grown[0].as_ref().expect("grown");
    let metadata = c.fetch_metadata(Some("orders"), TIMEOUT).expect("metadata");
    assert_eq!(metadata.topics()[0].partitions().len(), 5);

    let deleted = admin
        .delete_topics(&["orders"], &AdminOptions::new())
        .await
        .expect("delete");
    deleted[0].as_ref().expect("deleted");
    let http: Value = get_json(&format!("{}/api/v1/resources/queues/orders", broker.http)).await;
    assert_eq!(
        http["error"], "Queue not found",
        "the topic's queue is gone"
    );
}

async fn records_round_trip_with_keys_nulls_headers_and_timestamps(broker: &Broker) {
    create_topic(&broker.kafka, "events", 2).await;
    let p = producer(broker, &[]);
    let headers = OwnedHeaders::new()
        .insert(Header {
            key: "trace",
            value: Some(&[0xff, 0x00, 0x01][..]),
        })
        .insert(Header {
            key: "trace",
            value: Some("again"),
        })
        .insert(Header::<&[u8]> {
            key: "empty",
            value: None,
        });
    let key: &[u8] = b"customer-42";
    let value: &[u8] = b"{\"n\":1}";
    let first = produce(
        &p,
        FutureRecord::to("events")
            .partition(1)
            .key(key)
            .payload(value)
            .headers(headers)
            .timestamp(1_600_000_000_123),
    )
    .await;
    assert_eq!(first, (1, 0));
    let tombstone = produce(
        &p,
        FutureRecord::<[u8], [u8]>::to("events")
            .partition(1)
            .key(key),
    )
    .await;
    assert_eq!(tombstone, (1, 1));
    for i in 0..20u32 {
        let body = i.to_be_bytes();
        let (_, offset) = produce(
            &p,
            FutureRecord::to("events").partition(0).payload(&body[..]),
        )
        .await;
        assert_eq!(offset, i64::from(i), "offsets are gapless and in order");
    }

    let c = consumer(broker, &[]);
    assign(&c, "events", &[(1, Offset::Beginning)]);
    let got = consume(&c, 2);
    assert_eq!(got[0].key(), Some(key));
    assert_eq!(got[0].payload(), Some(value));
    assert_eq!(got[0].timestamp().to_millis(), Some(1_600_000_000_123));
    let h = got[0].headers().expect("headers");
    let pairs: Vec<(String, Option<Vec<u8>>)> = h
        .iter()
        .map(|h| (h.key.to_owned(), h.value.map(<[u8]>::to_vec)))
        .collect();
    assert_eq!(
        pairs,
        [
            ("trace".to_owned(), Some(vec![0xff, 0x00, 0x01])),
            ("trace".to_owned(), Some(b"again".to_vec())),
            ("empty".to_owned(), None),
        ],
        "headers keep order, duplicates and nulls"
    );
    assert_eq!(got[1].payload(), None, "a null value stays null");
    assert_eq!(got[1].offset(), 1);

    assign(&c, "events", &[(0, Offset::Beginning)]);
    let ordered = consume(&c, 20);
    let values: Vec<u32> = ordered
        .iter()
        .map(|m| u32::from_be_bytes(m.payload().expect("value").try_into().expect("4 bytes")))
        .collect();
    assert_eq!(
        values,
        (0..20).collect::<Vec<u32>>(),
        "order within a partition holds"
    );
}

async fn every_compression_codec_round_trips(broker: &Broker) {
    create_topic(&broker.kafka, "packed", 1).await;
    let codecs = ["none", "gzip", "snappy", "lz4", "zstd"];
    for codec in codecs {
        let p = producer(broker, &[("compression.type", codec), ("linger.ms", "50")]);
        let sends: Vec<_> = (0..50)
            .map(|i| {
                let value = format!("{codec}-{i}-{}", "x".repeat(100));
                p.send_result(FutureRecord::<[u8], [u8]>::to("packed").payload(value.as_bytes()))
                    .unwrap_or_else(|(e, _)| panic!("{codec}: {e}"))
            })
            .collect();
        for s in sends {
            s.await
                .expect("delivery")
                .unwrap_or_else(|(e, _)| panic!("{codec}: {e}"));
        }
    }
    let c = consumer(broker, &[]);
    assign(&c, "packed", &[(0, Offset::Beginning)]);
    let got = consume(&c, 50 * codecs.len());
    for (n, m) in got.iter().enumerate() {
        let expected = format!("{}-{}-{}", codecs[n / 50], n % 50, "x".repeat(100));
        assert_eq!(m.payload(), Some(expected.as_bytes()));
    }
}

async fn a_one_mebibyte_record_round_trips(broker: &Broker) {
    create_topic(&broker.kafka, "big", 1).await;
    let p = producer(broker, &[("message.max.bytes", "2000000")]);
    let big: Vec<u8> = (0..1024 * 1024).map(|i| (i % 251) as u8).collect();
    produce(&p, FutureRecord::<[u8], [u8]>::to("big").payload(&big)).await;
    produce(&p, FutureRecord::<[u8], [u8]>::to("big").payload(b"small")).await;
    let c = consumer(broker, &[("fetch.message.max.bytes", "100000")]);
    assign(&c, "big", &[(0, Offset::Beginning)]);
    let got = consume(&c, 2);
    assert_eq!(got[0].payload().map(<[u8]>::len), Some(big.len()));
    assert_eq!(
        got[0].payload(),
        Some(&big[..]),
        "a record larger than the fetch size still arrives whole"
    );
    assert_eq!(got[1].payload(), Some(&b"small"[..]));
}

async fn offsets_by_time_seek_and_out_of_range(broker: &Broker) {
    create_topic(&broker.kafka, "timed", 1).await;
    let p = producer(broker, &[]);
    for i in 0..10i64 {
        let body = i.to_string();
        produce(
            &p,
            FutureRecord::<[u8], [u8]>::to("timed")
                .payload(body.as_bytes())
                .timestamp(1_000_000 + i * 1000),
        )
        .await;
    }
    let c = consumer(broker, &[]);
    let mut query = TopicPartitionList::new();
    query
        .add_partition_offset("timed", 0, Offset::Offset(1_004_500))
        .expect("query");
    let found = c
        .offsets_for_times(query, TIMEOUT)
        .expect("offsets for times");
    assert_eq!(
        found
            .find_partition("timed", 0)
            .expect("partition")
            .offset(),
        Offset::Offset(5)
    );
    let (low, high) = c.fetch_watermarks("timed", 0, TIMEOUT).expect("watermarks");
    assert_eq!((low, high), (0, 10));

    assign(&c, "timed", &[(0, Offset::Offset(3))]);
    assert_eq!(consume(&c, 1)[0].payload(), Some(&b"3"[..]));
    c.seek("timed", 0, Offset::Offset(8), TIMEOUT)
        .expect("seek");
    assert_eq!(consume(&c, 1)[0].payload(), Some(&b"8"[..]));

    for (reset, expected) in [("earliest", &b"0"[..]), ("latest", &b"late"[..])] {
        let c = consumer(broker, &[("auto.offset.reset", reset)]);
        assign(&c, "timed", &[(0, Offset::Offset(1000))]);
        if reset == "latest" {
            // Give the consumer time to reset to the end, then add one record.
            std::thread::sleep(Duration::from_millis(1500));
            produce(&p, FutureRecord::<[u8], [u8]>::to("timed").payload(b"late")).await;
        }
        assert_eq!(
            consume(&c, 1)[0].payload(),
            Some(expected),
            "auto.offset.reset={reset}"
        );
    }
}

async fn a_waiting_fetch_returns_when_a_record_arrives(broker: &Broker) {
    create_topic(&broker.kafka, "waiting", 1).await;
    let c = consumer(broker, &[("fetch.wait.max.ms", "5000")]);
    assign(&c, "waiting", &[(0, Offset::End)]);
    // Let the consumer settle into a long poll at the end of the log.
    assert!(c.poll(Duration::from_millis(1500)).is_none());
    let p = producer(broker, &[("linger.ms", "0")]);
    let sent = Instant::now();
    produce(
        &p,
        FutureRecord::<[u8], [u8]>::to("waiting").payload(b"now"),
    )
    .await;
    let got = consume(&c, 1);
    let latency = sent.elapsed();
    assert_eq!(got[0].payload(), Some(&b"now"[..]));
    println!("long-poll fetch latency: {latency:?}");
    assert!(
        latency < Duration::from_millis(4000),
        "the waiting fetch was woken, not timed out: {latency:?}"
    );
}

async fn producing_to_an_unknown_topic_creates_it(broker: &Broker) {
    let p = producer(broker, &[]);
    let (partition, offset) = produce(
        &p,
        FutureRecord::<[u8], [u8]>::to("fresh").payload(b"hello"),
    )
    .await;
    assert_eq!((partition, offset), (0, 0));
    let q: Value = get_json(&format!("{}/api/v1/resources/queues/fresh", broker.http)).await;
    assert_eq!(
        q["options"]["dedupWindowSeconds"], 0,
        "an auto-created topic has no dedup window"
    );
    assert_eq!(q["totals"]["total"], 1);
}

async fn http_and_kafka_share_queues_and_offsets(broker: &Broker) {
    // A native queue with a dedup window, pushed over HTTP...
    let client = reqwest::Client::new();
    client
        .post(format!("{}/api/v1/configure", broker.http))
        .json(&json!({"queue": "shared", "options": {"dedupWindowSeconds": 600}}))
        .send()
        .await
        .expect("configure");
    let pushed: Value = client
        .post(format!("{}/api/v1/push", broker.http))
        .json(&json!({"items": [
            {"queue": "shared", "payload": {"order": 1, "note": "é"}, "transactionId": "order-1"},
            {"queue": "shared", "payload": [1, 2], "transactionId": "order-2", "traceId": "6f1c2f4e-8a1b-4c3d-9e5f-0a1b2c3d4e5f"},
        ]}))
        .send()
        .await
        .expect("push")
        .json()
        .await
        .expect("json");
    assert_eq!(pushed[1]["offset"], 1);

    // ...is fetched over Kafka at the same offsets, as compact JSON with its ids in headers.
    let c = consumer(broker, &[]);
    assign(&c, "shared", &[(0, Offset::Beginning)]);
    let got = consume(&c, 2);
    assert_eq!(got[0].offset(), 0);
    assert_eq!(got[0].key(), None);
    // serde_json's json! sorts keys, so the request carried them in this order.
    assert_eq!(
        got[0].payload(),
        Some("{\"note\":\"é\",\"order\":1}".as_bytes())
    );
    let header = |m: &OwnedMessage, name: &str| {
        m.headers().and_then(|h| {
            h.iter()
                .find(|h| h.key == name)
                .and_then(|h| h.value.map(<[u8]>::to_vec))
        })
    };
    assert_eq!(
        header(&got[0], "queen-transaction-id").as_deref(),
        Some(&b"order-1"[..])
    );
    assert_eq!(
        header(&got[1], "queen-trace-id").as_deref(),
        Some(&b"6f1c2f4e-8a1b-4c3d-9e5f-0a1b2c3d4e5f"[..])
    );
    assert_eq!(got[1].payload(), Some(&b"[1,2]"[..]));

    // A Kafka producer appends after them; the queue keeps its window.
    let p = producer(broker, &[]);
    let (_, offset) = produce(
        &p,
        FutureRecord::<[u8], [u8]>::to("shared").payload(b"from kafka"),
    )
    .await;
    assert_eq!(offset, 2, "one offset sequence for both front doors");
    let headers = OwnedHeaders::new()
        .insert(Header {
            key: "h",
            value: Some(&b"text"[..]),
        })
        .insert(Header {
            key: "h",
            value: Some(&[0xff, 0xfe][..]),
        })
        .insert(Header::<&[u8]> {
            key: "n",
            value: None,
        });
    let (_, offset) = produce(
        &p,
        FutureRecord::to("shared")
            .key(&b"customer-7"[..])
            .payload(&b"{\"ok\":true}"[..])
            .headers(headers)
            .timestamp(1_700_000_000_000),
    )
    .await;
    assert_eq!(offset, 3);
    produce(
        &p,
        FutureRecord::<[u8], [u8]>::to("shared").key(&[0x00, 0xff][..]),
    )
    .await;

    // Records produced over Kafka pop over HTTP, at their offsets, with the documented encodings.
    let popped: Value = get_json(&format!(
        "{}/api/v1/pop/queue/shared?batch=10&wait=false&consumerGroup=interop",
        broker.http
    ))
    .await;
    let messages = popped["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 5, "{popped}");
    assert_eq!(messages[0]["data"], json!({"note": "é", "order": 1}));
    assert_eq!(messages[0]["transactionId"], "order-1");
    let binary = &messages[2];
    assert_eq!(binary["offset"], 2);
    assert_eq!(binary["dataEncoding"], "base64");
    assert_eq!(
        binary["data"], "ZnJvbSBrYWZrYQ==",
        "base64 of the value bytes"
    );
    assert_eq!(
        binary["transactionId"], binary["id"],
        "a minted transaction id is the message id"
    );
    let keyed = &messages[3];
    assert_eq!(keyed["data"], json!({"ok": true}), "a JSON value is parsed");
    assert_eq!(keyed["key"], "customer-7");
    assert_eq!(keyed["timestamp"], 1_700_000_000_000i64);
    assert_eq!(
        keyed["headers"],
        json!([
            {"key": "h", "value": "text"},
            {"key": "h", "value": "//4=", "encoding": "base64"},
            {"key": "n", "value": null},
        ])
    );
    let tombstone = &messages[4];
    assert_eq!(tombstone["data"], Value::Null);
    assert_eq!(tombstone["key"], "AP8=");
    assert_eq!(tombstone["keyEncoding"], "base64");
    let q: Value = get_json(&format!("{}/api/v1/resources/queues/shared", broker.http)).await;
    assert_eq!(
        q["options"]["dedupWindowSeconds"], 600,
        "an existing queue keeps its options"
    );
    assert_eq!(q["totals"]["total"], 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_brokers_on_postgres_serve_the_same_partitions() {
    let db = TestDb::postgres().await;
    let a = Broker::start(&db.url, &[]);
    let b = Broker::start(&db.url, &[]);
    create_topic(&a.kafka, "spread", 4).await;

    let c = consumer(&b, &[]);
    let metadata = c.fetch_metadata(Some("spread"), TIMEOUT).expect("metadata");
    assert_eq!(metadata.brokers().len(), 2, "both brokers are listed");

    let pa = producer(&a, &[]);
    let pb = producer(&b, &[]);
    let mut expected = Vec::new();
    for i in 0..40u32 {
        let p = if i % 2 == 0 { &pa } else { &pb };
        let body = i.to_be_bytes();
        let (_, offset) = produce(
            p,
            FutureRecord::<[u8], [u8]>::to("spread")
                .partition((i % 4) as i32)
                .payload(&body[..]),
        )
        .await;
        expected.push(((i % 4) as i32, offset, i));
    }
    for partition in 0..4 {
        let offsets: Vec<i64> = expected
            .iter()
            .filter(|e| e.0 == partition)
            .map(|e| e.1)
            .collect();
        assert_eq!(
            offsets,
            (0..10).collect::<Vec<i64>>(),
            "appends through both brokers stay gapless"
        );
    }
    let ca = consumer(&a, &[]);
    assign(
        &ca,
        "spread",
        &(0..4).map(|p| (p, Offset::Beginning)).collect::<Vec<_>>(),
    );
    let got = consume(&ca, 40);
    let mut values: Vec<u32> = got
        .iter()
        .map(|m| u32::from_be_bytes(m.payload().expect("value").try_into().expect("4 bytes")))
        .collect();
    values.sort_unstable();
    assert_eq!(values, (0..40).collect::<Vec<u32>>());

    // A broker that stops withdraws at once: the other lists only itself,
    // and leads every partition, before any heartbeat could go stale.
    drop(ca);
    a.terminate();
    let metadata = c.fetch_metadata(Some("spread"), TIMEOUT).expect("metadata");
    let ids: Vec<i32> = metadata.brokers().iter().map(|b| b.id()).collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    let leaders: Vec<i32> = metadata.topics()[0]
        .partitions()
        .iter()
        .map(|p| p.leader())
        .collect();
    assert_eq!(leaders, [ids[0]; 4]);
    drop(b);
}

/// A librdkafka consumer's commit is the native group's position.
async fn librdkafka_commits_are_the_native_position(broker: &Broker) {
    create_topic(&broker.kafka, "committed", 1).await;
    let p = producer(broker, &[]);
    for i in 0..10u8 {
        produce(
            &p,
            FutureRecord::<[u8], [u8]>::to("committed").payload(&[i][..]),
        )
        .await;
    }
    let c = consumer(broker, &[("group.id", "g")]);
    assign(&c, "committed", &[(0, Offset::Beginning)]);
    assert_eq!(consume(&c, 5).last().map(|m| m.offset()), Some(4));
    let mut commit = TopicPartitionList::new();
    commit
        .add_partition_offset("committed", 0, Offset::Offset(5))
        .expect("tpl");
    c.commit(&commit, rdkafka::consumer::CommitMode::Async)
        .expect("commit");
    let deadline = Instant::now() + TIMEOUT;
    loop {
        c.poll(Duration::from_millis(100));
        let committed = c.committed(TIMEOUT).expect("committed");
        if committed.find_partition("committed", 0).map(|p| p.offset()) == Some(Offset::Offset(5)) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the commit never showed in OffsetFetch"
        );
    }
    let popped: Value = get_json(&format!(
        "{}/api/v1/pop/queue/committed?batch=100&wait=false&consumerGroup=g",
        broker.http
    ))
    .await;
    let offsets: Vec<i64> = popped["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["offset"].as_i64().expect("offset"))
        .collect();
    assert_eq!(
        offsets,
        [5, 6, 7, 8, 9],
        "the native group resumes at the librdkafka commit"
    );
}
