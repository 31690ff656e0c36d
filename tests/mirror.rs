//! `queen mirror` end to end: a second broker process is the source,
//! reached only through its Kafka listener; the mirror and a broker share
//! the scenario's database (SQLite or PostgreSQL). Records arrive at their
//! source offsets with the same keys, values, headers and timestamps
//! (every codec, gaps from DeleteRecords and aborted transactions), the
//! mirror survives SIGKILL without writing anything twice, a consumer group
//! cuts over, and faults show up per topic.

mod support;

use std::collections::{BTreeMap, HashMap};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::admin::{
    AdminClient, AdminOptions, NewPartitions, NewTopic, ResourceSpecifier, TopicReplication,
};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, Headers, Message, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, FutureProducer, FutureRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};
use serde_json::{json, Value};
use support::pki::Pki;
use support::{Broker, TestDb};

const TIMEOUT: Duration = Duration::from_secs(10);
/// The timestamp of the first produced record.
const T0: i64 = 1_700_000_000_000;

/// One record as a reader sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rec {
    partition: i32,
    offset: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(String, Option<Vec<u8>>)>,
    timestamp: Option<i64>,
}

fn client(bootstrap: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4");
    c
}

fn admin(bootstrap: &str) -> AdminClient<DefaultClientContext> {
    client(bootstrap).create().expect("admin client")
}

/// A source broker on a database of its own (always SQLite: the
/// destination is the scenario's backend).
fn source() -> (TestDb, Broker) {
    let db = TestDb::sqlite();
    let broker = Broker::start(&db.url, &[]);
    (db, broker)
}

/// A running `queen mirror`, killed when dropped.
struct MirrorProcess(Child);

impl MirrorProcess {
    fn start(url: &str, source: &str, args: &[&str]) -> Self {
        let child = Command::new(env!("CARGO_BIN_EXE_queen"))
            .args(["--database-url", url, "mirror", "--source", source])
            .args(["--refresh-ms", "200"])
            .args(args)
            .env("QUEEN_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn queen mirror");
        Self(child)
    }

    /// SIGKILL: no chance to finish anything.
    fn kill(mut self) {
        self.0.kill().expect("SIGKILL");
        self.0.wait().expect("wait");
    }
}

impl Drop for MirrorProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn create(bootstrap: &str, topic: &str, partitions: i32, configs: &[(&str, &str)]) {
    let mut new = NewTopic::new(topic, partitions, TopicReplication::Fixed(1));
    for (k, v) in configs {
        new = new.set(k, v);
    }
    for r in admin(bootstrap)
        .create_topics(&[new], &AdminOptions::new())
        .await
        .expect("create topics")
    {
        r.expect("topic created");
    }
}

/// Produces `count` records to `topic` with `codec`, record n to
/// partition n % `partitions`: keys (every fifth null), headers (one with
/// a null value), timestamps `T0 + n`, values of `value_bytes` or more.
fn produce(bootstrap: &str, topic: &str, codec: &str, first: i64, count: i64, partitions: i32) {
    let producer: BaseProducer = client(bootstrap)
        .set("compression.type", codec)
        .set("linger.ms", "20")
        .set("acks", "all")
        .set("queue.buffering.max.messages", "200000")
        .create()
        .expect("producer");
    for n in first..first + count {
        let key = format!("{codec}-key-{n}");
        let value = format!("{codec}-value-{n}-{}", "x".repeat((n % 7) as usize * 10));
        let headers = OwnedHeaders::new()
            .insert(Header {
                key: "n",
                value: Some(n.to_string().as_bytes()),
            })
            .insert(Header::<&[u8]> {
                key: "empty",
                value: None,
            });
        let mut record = BaseRecord::to(topic)
            .partition((n % i64::from(partitions)) as i32)
            .payload(value.as_bytes())
            .timestamp(T0 + n)
            .headers(headers);
        if n % 5 != 0 {
            record = record.key(key.as_bytes());
        }
        let mut record = record;
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                    producer.poll(Duration::from_millis(10));
                    record = r;
                }
                Err((e, _)) => panic!("produce: {e}"),
            }
        }
    }
    producer.flush(Duration::from_secs(60)).expect("flushed");
}

/// Every committed record of `topic` at `bootstrap`, by partition and offset.
fn read_all(bootstrap: &str, topic: &str, partitions: i32) -> Vec<Rec> {
    let consumer: BaseConsumer = client(bootstrap)
        .set("group.id", "reader")
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_committed")
        .set("enable.partition.eof", "true")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    let mut ends = HashMap::new();
    for p in 0..partitions {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .expect("tpl");
        let (_, high) = consumer
            .fetch_watermarks(topic, p, TIMEOUT)
            .expect("watermarks");
        ends.insert(p, high);
    }
    consumer.assign(&tpl).expect("assign");
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    // A partition is read when the consumer reports its end (past any
    // transaction marker at the end, which no reader sees as a record).
    let mut at_end: std::collections::HashSet<i32> = ends
        .iter()
        .filter(|(_, h)| **h == 0)
        .map(|(p, _)| *p)
        .collect();
    while at_end.len() < partitions as usize {
        assert!(
            Instant::now() < deadline,
            "{topic} not read to its end at {bootstrap}: {} records, ends {ends:?}, at end {at_end:?}, last {:?}",
            out.len(),
            out.last()
        );
        let Some(m) = consumer.poll(Duration::from_millis(200)) else {
            continue;
        };
        let m = match m {
            Err(KafkaError::PartitionEOF(p)) => {
                at_end.insert(p);
                continue;
            }
            other => other,
        };
        let m = m.expect("message");
        let headers = m
            .headers()
            .map(|h| {
                h.iter()
                    .map(|h| (h.key.to_owned(), h.value.map(<[u8]>::to_vec)))
                    .collect()
            })
            .unwrap_or_default();
        out.push(Rec {
            partition: m.partition(),
            offset: m.offset(),
            key: m.key().map(<[u8]>::to_vec),
            value: m.payload().map(<[u8]>::to_vec),
            headers,
            timestamp: m.timestamp().to_millis(),
        });
    }
    out.sort_by_key(|r| (r.partition, r.offset));
    out
}

/// The source's high watermark of each partition.
fn watermarks(bootstrap: &str, topic: &str, partitions: i32) -> Vec<i64> {
    let consumer: BaseConsumer = client(bootstrap).create().expect("consumer");
    (0..partitions)
        .map(|p| {
            consumer
                .fetch_watermarks(topic, p, TIMEOUT)
                .expect("watermarks")
                .1
        })
        .collect()
}

/// The mirror status entry of `topic` at the destination broker.
async fn status_of(dest: &Broker, topic: &str) -> Option<Value> {
    let status = dest.get("/api/v1/mirror/status").await;
    status["topics"]
        .as_array()
        .expect("topics")
        .iter()
        .find(|t| t["topic"] == topic)
        .cloned()
}

/// Waits until every partition of `topic` has been mirrored up to the
/// source's high watermark `highs`, and the status says so.
async fn wait_mirrored(dest: &Broker, topic: &str, highs: &[i64]) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if let Some(t) = status_of(dest, topic).await {
            let parts = t["partitions"].as_array().cloned().unwrap_or_default();
            let caught_up = parts.len() == highs.len()
                && parts.iter().all(|p| {
                    let i = p["partition"].as_u64().unwrap_or(0) as usize;
                    p["source_high_watermark"] == highs[i]
                        && p["mirrored_offset"] == highs[i]
                        && p["lag"] == 0
                });
            if caught_up {
                return;
            }
            assert!(Instant::now() < deadline, "{topic} not mirrored: {t}");
        }
        assert!(Instant::now() < deadline, "{topic} never in the status");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the status of `topic` shows an error containing `text`.
async fn wait_error(dest: &Broker, topic: &str, text: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(t) = status_of(dest, topic).await {
            if t["error"].as_str().is_some_and(|e| e.contains(text)) {
                return t;
            }
            assert!(Instant::now() < deadline, "{topic}: no error {text:?}: {t}");
        }
        assert!(Instant::now() < deadline, "{topic} never in the status");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until `topic` is mirrored up to the source's high watermarks,
/// then checks that both hold the same records at the same offsets.
async fn mirrored_alike(src: &str, dest: &Broker, topic: &'static str, partitions: i32) {
    let s = src.to_owned();
    let highs = blocking(move || watermarks(&s, topic, partitions)).await;
    wait_mirrored(dest, topic, &highs).await;
    let (s, d) = (src.to_owned(), dest.kafka.clone());
    let (from_source, mirrored) = blocking(move || {
        (
            read_all(&s, topic, partitions),
            read_all(&d, topic, partitions),
        )
    })
    .await;
    assert_eq!(from_source.len(), mirrored.len(), "{topic}");
    assert!(
        from_source == mirrored,
        "{topic}: not the same records at the same offsets"
    );
}

/// Runs `f` off the async runtime (librdkafka's calls block).
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("blocking task")
}

/// What a local produce of one record to partition 0 of `topic` answers.
async fn local_produce(bootstrap: &str, topic: &str, value: &str) -> Result<i64, KafkaError> {
    let producer: FutureProducer = client(bootstrap)
        .set("message.send.max.retries", "0")
        .create()
        .expect("producer");
    producer
        .send(
            FutureRecord::<[u8], [u8]>::to(topic)
                .partition(0)
                .payload(value.as_bytes()),
            TIMEOUT,
        )
        .await
        .map(|delivered| delivered.offset)
        .map_err(|(e, _)| e)
}

support::url_scenarios!(
    records_arrive_at_their_source_offsets_and_keep_coming,
    a_killed_mirror_resumes_and_writes_nothing_twice,
    a_consumer_group_cuts_over_exactly_once,
    faults_are_shown_per_topic_and_the_others_keep_mirroring,
    brokers_mirror_from_their_config_file_one_at_a_time,
    partitions_added_at_the_source_are_added_and_copied,
    a_source_behind_sasl_ssl_is_mirrored,
);

const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];

async fn records_arrive_at_their_source_offsets_and_keep_coming(url: &str) {
    let (_sdb, source) = source();
    let src = source.kafka.clone();
    create(&src, "one", 1, &[("retention.ms", "604800001")]).await;
    create(&src, "eight", 8, &[]).await;
    let s = src.clone();
    blocking(move || {
        for (i, codec) in CODECS.iter().enumerate() {
            let first = i as i64 * 40;
            produce(&s, "one", codec, first, 40, 1);
            produce(&s, "eight", codec, first, 40, 8);
        }
        // Gaps in the middle: an aborted transaction's records and the
        // markers are offsets no reader sees.
        let txn: BaseProducer = client(&s)
            .set("transactional.id", "mirror-test")
            .create()
            .expect("transactional producer");
        txn.init_transactions(TIMEOUT).expect("init");
        for (commit, values) in [
            (false, ["aborted-1", "aborted-2", "aborted-3"]),
            (true, ["kept-1", "kept-2", "kept-3"]),
        ] {
            txn.begin_transaction().expect("begin");
            for v in values {
                txn.send(
                    BaseRecord::<[u8], [u8]>::to("one")
                        .partition(0)
                        .payload(v.as_bytes()),
                )
                .map_err(|(e, _)| e)
                .expect("send");
            }
            txn.flush(TIMEOUT).expect("flushed");
            if commit {
                txn.commit_transaction(TIMEOUT).expect("commit");
            } else {
                txn.abort_transaction(TIMEOUT).expect("abort");
            }
        }
    })
    .await;
    // A gap at the start: DeleteRecords moves the source's log start.
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset("one", 0, Offset::Offset(7))
        .expect("tpl");
    admin(&src)
        .delete_records(&tpl, &AdminOptions::new())
        .await
        .expect("delete records");

    let dest = Broker::start(url, &[]);
    let _mirror = MirrorProcess::start(url, &src, &["--topics", "one,eight"]);
    for (topic, partitions) in [("one", 1), ("eight", 8)] {
        mirrored_alike(&src, &dest, topic, partitions).await;
    }
    let one = blocking({
        let d = dest.kafka.clone();
        move || read_all(&d, "one", 1)
    })
    .await;
    assert_eq!(
        one.first().map(|r| r.offset),
        Some(7),
        "the log start is the source's"
    );
    let offsets: Vec<i64> = one.iter().map(|r| r.offset).collect();
    assert!(
        offsets.windows(2).any(|w| w[1] > w[0] + 1),
        "the aborted transaction is a gap: {offsets:?}"
    );
    assert!(one
        .iter()
        .any(|r| r.value.as_deref() == Some(b"kept-2".as_slice())));
    assert!(!one
        .iter()
        .any(|r| r.value.as_deref() == Some(b"aborted-2".as_slice())));
    let d = dest.kafka.clone();
    let earliest = blocking(move || {
        let c: BaseConsumer = client(&d).create().expect("consumer");
        c.fetch_watermarks("one", 0, TIMEOUT).expect("watermarks").0
    })
    .await;
    assert_eq!(earliest, 7);

    // The source's topic-level config came along.
    let described = admin(&dest.kafka)
        .describe_configs(&[ResourceSpecifier::Topic("one")], &AdminOptions::new())
        .await
        .expect("describe");
    let resource = described
        .into_iter()
        .next()
        .expect("one")
        .expect("described");
    assert_eq!(
        resource
            .get("retention.ms")
            .and_then(|e| e.value.clone())
            .as_deref(),
        Some("604800001")
    );

    // Local producers are refused while the topic is mirrored, on both doors.
    let refused = local_produce(&dest.kafka, "one", "local").await;
    assert!(
        matches!(
            refused,
            Err(KafkaError::MessageProduction(
                RDKafkaErrorCode::PolicyViolation
            ))
        ),
        "{refused:?}"
    );
    let (status, body) = dest
        .post_answer(
            "/api/v1/push",
            json!({"items": [{"queue": "one", "partition": "0", "payload": {"local": true}}]}),
        )
        .await;
    assert_eq!(status, 409, "{body}");

    // Records produced at the source later come too.
    let s = src.clone();
    blocking(move || {
        produce(&s, "one", "lz4", 1000, 25, 1);
        produce(&s, "eight", "zstd", 1000, 80, 8);
    })
    .await;
    for (topic, partitions) in [("one", 1), ("eight", 8)] {
        mirrored_alike(&src, &dest, topic, partitions).await;
    }

    // The command line shows the same status.
    let out = Command::new(env!("CARGO_BIN_EXE_queen"))
        .args(["--database-url", url, "mirror-status"])
        .env("QUEEN_LOG", "warn")
        .output()
        .expect("queen mirror-status");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.starts_with("eight\t")).count(),
        8,
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("one\t0\t") && l.contains("\t0\tmirroring")),
        "{text}"
    );
}

async fn a_killed_mirror_resumes_and_writes_nothing_twice(url: &str) {
    const TOTAL: i64 = 100_000;
    let (_sdb, source) = source();
    let src = source.kafka.clone();
    create(&src, "big", 8, &[]).await;
    let s = src.clone();
    blocking(move || produce(&s, "big", "lz4", 0, TOTAL, 8)).await;
    let dest = Broker::start(url, &[]);

    let mirror = MirrorProcess::start(url, &src, &["--topics", "big"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    let killed_at = loop {
        let mirrored: i64 = match status_of(&dest, "big").await {
            Some(t) => t["partitions"]
                .as_array()
                .map(|ps| {
                    ps.iter()
                        .filter_map(|p| p["mirrored_offset"].as_i64())
                        .sum()
                })
                .unwrap_or(0),
            None => 0,
        };
        if mirrored > 0 {
            break mirrored;
        }
        assert!(
            Instant::now() < deadline,
            "the mirror never started copying"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    mirror.kill();
    assert!(
        killed_at < TOTAL,
        "killed mid-copy, at {killed_at} of {TOTAL}"
    );

    let _mirror = MirrorProcess::start(url, &src, &["--topics", "big"]);
    let s = src.clone();
    let highs = blocking(move || watermarks(&s, "big", 8)).await;
    assert_eq!(
        highs.iter().sum::<i64>(),
        TOTAL,
        "every record once at the source"
    );
    // Same records at the same offsets: every one once here too.
    mirrored_alike(&src, &dest, "big", 8).await;
}

/// Produces numbered records ("0", "1", …; n to partition n % 2) to `topic`
/// at `bootstrap` from `first` until `stop` is set (or `until` is reached);
/// returns the next number.
fn produce_numbers(bootstrap: &str, topic: &str, first: i64, until: i64, stop: &AtomicBool) -> i64 {
    let producer: BaseProducer = client(bootstrap)
        .set("linger.ms", "1")
        .set("acks", "all")
        .create()
        .expect("producer");
    let mut n = first;
    while n < until && !stop.load(Ordering::Relaxed) {
        let value = n.to_string();
        producer
            .send(
                BaseRecord::<[u8], [u8]>::to(topic)
                    .partition((n % 2) as i32)
                    .payload(value.as_bytes()),
            )
            .map_err(|(e, _)| e)
            .expect("queued");
        producer.poll(Duration::from_millis(2));
        n += 1;
    }
    producer.flush(Duration::from_secs(30)).expect("flushed");
    n
}

/// Consumes `topic` as member of `group` at `bootstrap` until `enough`
/// says so, commits and leaves: (partition, offset, number) in order.
fn consume_numbers(
    bootstrap: &str,
    topic: &str,
    group: &str,
    enough: impl Fn(usize) -> bool,
) -> Vec<(i32, i64, i64)> {
    let consumer: BaseConsumer = client(bootstrap)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .create()
        .expect("consumer");
    consumer.subscribe(&[topic]).expect("subscribe");
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !enough(seen.len()) {
        assert!(
            Instant::now() < deadline,
            "{group} saw only {} records",
            seen.len()
        );
        if let Some(m) = consumer.poll(Duration::from_millis(200)) {
            let m = m.expect("message");
            let n: i64 = std::str::from_utf8(m.payload().expect("value"))
                .expect("utf8")
                .parse()
                .expect("number");
            seen.push((m.partition(), m.offset(), n));
        }
    }
    consumer
        .commit_consumer_state(CommitMode::Sync)
        .expect("commit");
    seen
}

/// The committed offsets of `group` on partitions 0 and 1 of `topic`.
fn committed(bootstrap: &str, topic: &str, group: &str) -> Vec<i64> {
    let consumer: BaseConsumer = client(bootstrap)
        .set("group.id", group)
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition(topic, 0);
    tpl.add_partition(topic, 1);
    let got = consumer.committed_offsets(tpl, TIMEOUT).expect("committed");
    (0..2)
        .map(|p| {
            got.find_partition(topic, p)
                .and_then(|e| e.offset().to_raw())
                .unwrap_or(-1)
        })
        .collect()
}

async fn a_consumer_group_cuts_over_exactly_once(url: &str) {
    let (_sdb, source) = source();
    let src = source.kafka.clone();
    create(&src, "cut", 2, &[]).await;
    let dest = Broker::start(url, &[]);
    let _mirror = MirrorProcess::start(url, &src, &["--topics", "cut", "--groups", "cut"]);

    // A producer keeps writing to the source…
    let stop = Arc::new(AtomicBool::new(false));
    let produced = Arc::new(AtomicI64::new(0));
    let producer = {
        let (s, stop, produced) = (src.clone(), stop.clone(), produced.clone());
        std::thread::spawn(move || {
            produced.store(
                produce_numbers(&s, "cut", 0, i64::MAX, &stop),
                Ordering::SeqCst,
            )
        })
    };
    // …and a consumer group reads there and commits, then stops.
    let s = src.clone();
    let first = blocking(move || consume_numbers(&s, "cut", "cut", |n| n >= 300)).await;
    // A partition the group never read has no commit (-1001, OFFSET_INVALID).
    let mut at_source = vec![-1001i64; 2];
    for (p, o, _) in &first {
        at_source[*p as usize] = at_source[*p as usize].max(o + 1);
    }
    // The mirror copies the group's commits.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let d = dest.kafka.clone();
        let here = blocking(move || committed(&d, "cut", "cut")).await;
        if here == at_source {
            break;
        }
        let s = src.clone();
        let there = blocking(move || committed(&s, "cut", "cut")).await;
        assert!(
            Instant::now() < deadline,
            "the group's offsets were not copied: {here:?} here, {there:?} at the source, {at_source:?} seen"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // The consumer starts against this broker while the mirror still runs.
    let total = Arc::new(AtomicI64::new(i64::MAX));
    let second = {
        let (d, total, already) = (dest.kafka.clone(), total.clone(), first.len());
        std::thread::spawn(move || {
            consume_numbers(&d, "cut", "cut", |n| {
                (already + n) as i64 >= total.load(Ordering::SeqCst)
            })
        })
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    // The producer stops at the source; the mirror catches up.
    stop.store(true, Ordering::SeqCst);
    producer.join().expect("producer");
    let at_switch = produced.load(Ordering::SeqCst);
    let s = src.clone();
    let highs = blocking(move || watermarks(&s, "cut", 2)).await;
    assert_eq!(highs.iter().sum::<i64>(), at_switch);
    wait_mirrored(&dest, "cut", &highs).await;
    // Before the fence a local produce is refused; then the fence.
    let refused = local_produce(&dest.kafka, "cut", "-1").await;
    assert!(
        matches!(
            refused,
            Err(KafkaError::MessageProduction(
                RDKafkaErrorCode::PolicyViolation
            ))
        ),
        "{refused:?}"
    );
    dest.post("/api/v1/mirror/cut/fence", json!({})).await;
    // The producer moves to this broker.
    let d = dest.kafka.clone();
    let end = blocking(move || {
        produce_numbers(
            &d,
            "cut",
            at_switch,
            at_switch + 200,
            &AtomicBool::new(false),
        )
    })
    .await;
    total.store(end, Ordering::SeqCst);
    let second = blocking(move || second.join().expect("consumer")).await;

    // Every number exactly once, in order per partition.
    let all: Vec<(i32, i64, i64)> = first.iter().chain(&second).copied().collect();
    let mut numbers: Vec<i64> = all.iter().map(|r| r.2).collect();
    numbers.sort_unstable();
    assert_eq!(
        numbers,
        (0..end).collect::<Vec<_>>(),
        "every record exactly once"
    );
    let mut by_partition: BTreeMap<i32, Vec<(i64, i64)>> = BTreeMap::new();
    for (p, o, n) in &all {
        by_partition.entry(*p).or_default().push((*o, *n));
    }
    for (p, records) in &by_partition {
        assert!(
            records
                .windows(2)
                .all(|w| w[1].0 > w[0].0 && w[1].1 > w[0].1),
            "partition {p} in order"
        );
    }

    // A queen-mq (HTTP) consumer of the same group continues from the
    // group's position: the Kafka consumer's commits.
    let mut position = [0i64; 2];
    for (p, o, _) in &all {
        position[*p as usize] = position[*p as usize].max(o + 1);
    }
    let d = dest.kafka.clone();
    assert_eq!(
        blocking(move || committed(&d, "cut", "cut")).await,
        position,
        "the group's commits here"
    );
    let d = dest.kafka.clone();
    blocking(move || produce_numbers(&d, "cut", end, end + 10, &AtomicBool::new(false))).await;
    let from = json!({"0": position[0], "1": position[1]}).to_string();
    let expect = json!((end..end + 10).collect::<Vec<_>>()).to_string();
    support::python::run(
        "mirror_cutover_pop.py",
        &dest,
        &[
            ("QUEEN_QUEUE", "cut"),
            ("QUEEN_GROUP", "cut"),
            ("QUEEN_FROM", &from),
            ("QUEEN_EXPECT", &expect),
        ],
    );
    let status = status_of(&dest, "cut").await.expect("status");
    assert_eq!(status["fenced"], true, "{status}");
}

async fn faults_are_shown_per_topic_and_the_others_keep_mirroring(url: &str) {
    let (_sdb, source) = source();
    let src = source.kafka.clone();
    for (topic, partitions) in [("fine", 1), ("doomed", 1), ("mismatch", 2)] {
        create(&src, topic, partitions, &[]).await;
        let s = src.clone();
        blocking(move || produce(&s, topic, "none", 0, 10, partitions)).await;
    }
    let dest = Broker::start(url, &[]);
    create(&dest.kafka, "mismatch", 3, &[]).await;
    let _mirror = MirrorProcess::start(url, &src, &["--topic-regex", "fine|doomed|mis.*"]);

    let t = wait_error(&dest, "mismatch", "3 partitions, the source's 2").await;
    assert_eq!(t["partitions"], json!([]), "{t}");
    // The mirror did not take it: its local producers keep writing.
    let offset = local_produce(&dest.kafka, "mismatch", "local").await;
    assert_eq!(offset.expect("a local produce"), 0);
    for topic in ["fine", "doomed"] {
        wait_mirrored(&dest, topic, &[10]).await;
    }
    // A topic deleted at the source.
    admin(&src)
        .delete_topics(&["doomed"], &AdminOptions::new())
        .await
        .expect("delete")
        .into_iter()
        .for_each(|r| {
            r.expect("deleted");
        });
    wait_error(&dest, "doomed", "no longer exists at the source").await;
    // The others keep mirroring.
    let s = src.clone();
    blocking(move || produce(&s, "fine", "gzip", 10, 15, 1)).await;
    wait_mirrored(&dest, "fine", &[25]).await;
    assert!(status_of(&dest, "fine").await.expect("fine")["error"].is_null());
    // The source goes away.
    drop(source);
    wait_error(&dest, "fine", "cannot be reached").await;
}

async fn brokers_mirror_from_their_config_file_one_at_a_time(url: &str) {
    let (_sdb, source) = source();
    let src = source.kafka.clone();
    create(&src, "filed", 3, &[]).await;
    let s = src.clone();
    blocking(move || produce(&s, "filed", "snappy", 0, 60, 3)).await;
    let dir = tempfile::tempdir().expect("temp dir");

    // A bad file is a start-up error that names it and what is wrong.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, json!({"source": src, "topic": ["filed"]}).to_string()).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_queen"))
        .args(["--database-url", url, "--http-addr", "127.0.0.1:0"])
        .args(["--kafka-addr", "127.0.0.1:0", "--mirror-config"])
        .arg(&bad)
        .env("QUEEN_LOG", "warn")
        .output()
        .expect("queen with a bad mirror config");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("bad.json") && stderr.contains("unknown field `topic`"),
        "{stderr}"
    );

    let config = dir.path().join("mirror.json");
    std::fs::write(
        &config,
        json!({"source": src, "topics": ["filed"], "groups": ["g"], "refresh_ms": 200}).to_string(),
    )
    .expect("write");
    let path = config.to_str().expect("utf-8 path");
    let first = Broker::start(url, &["--mirror-config", path]);
    mirrored_alike(&src, &first, "filed", 3).await;
    let t = status_of(&first, "filed").await.expect("in the status");
    assert_eq!((&t["source"], &t["fenced"]), (&json!(src), &json!(false)));

    // A second broker on the database waits while the first mirrors, and
    // takes over when it stops.
    let second = Broker::start(url, &["--mirror-config", path]);
    let s = src.clone();
    blocking(move || produce(&s, "filed", "zstd", 60, 30, 3)).await;
    mirrored_alike(&src, &second, "filed", 3).await;
    assert!(first.terminate().success(), "a clean stop");
    let s = src.clone();
    blocking(move || produce(&s, "filed", "gzip", 90, 30, 3)).await;
    mirrored_alike(&src, &second, "filed", 3).await;
}

/// CreatePartitions at the source: `topic` grows to `total` partitions.
async fn grow(bootstrap: &str, topic: &str, total: usize) {
    for r in admin(bootstrap)
        .create_partitions(&[NewPartitions::new(topic, total)], &AdminOptions::new())
        .await
        .expect("create partitions")
    {
        r.expect("partitions created");
    }
}

async fn partitions_added_at_the_source_are_added_and_copied(url: &str) {
    let (_sdb, source) = source();
    let src = source.kafka.clone();
    create(&src, "grows", 2, &[]).await;
    let s = src.clone();
    blocking(move || produce(&s, "grows", "none", 0, 20, 2)).await;
    let dest = Broker::start(url, &[]);
    let mirror = MirrorProcess::start(url, &src, &["--topics", "grows"]);
    mirrored_alike(&src, &dest, "grows", 2).await;

    // While the mirror runs.
    grow(&src, "grows", 3).await;
    let s = src.clone();
    blocking(move || produce(&s, "grows", "lz4", 20, 30, 3)).await;
    mirrored_alike(&src, &dest, "grows", 3).await;

    // While it is stopped: added when it starts again.
    mirror.kill();
    grow(&src, "grows", 5).await;
    let s = src.clone();
    blocking(move || produce(&s, "grows", "zstd", 50, 50, 5)).await;
    let _mirror = MirrorProcess::start(url, &src, &["--topics", "grows"]);
    mirrored_alike(&src, &dest, "grows", 5).await;
    let t = status_of(&dest, "grows").await.expect("status");
    assert!(t["error"].is_null(), "{t}");
    // The new partitions are the mirror's alone too.
    let refused = local_produce(&dest.kafka, "grows", "local").await;
    assert!(refused.is_err(), "{refused:?}");
}

/// A source that takes SCRAM-SHA-512 over TLS only on the listener the
/// mirror is given: the mirror's `--source-property` settings reach every
/// connection it makes (metadata, fetches, group offsets). With a wrong
/// password nothing is written, and the status says why for the topic
/// asked for.
async fn a_source_behind_sasl_ssl_is_mirrored(url: &str) {
    let pki = Pki::new();
    let source_db = TestDb::sqlite();
    let source = support::security::start(&source_db.url, &pki, &[]);
    support::security::add_user(&source_db.url, "mirror", "mirror-secret", false, &[]);
    // Written through the source's open listener, read through its secured one.
    let src = source.kafka.clone();
    create(&src, "secured", 2, &[]).await;
    let s = src.clone();
    blocking(move || produce(&s, "secured", "zstd", 0, 200, 2)).await;
    let secured = source.listener("SASL_SSL");
    let ca = format!("ssl.ca.location={}", pki.path("ca.pem"));
    let settings = |password: &str| {
        vec![
            "--source-property".to_owned(),
            "security.protocol=sasl_ssl".to_owned(),
            "--source-property".to_owned(),
            "sasl.mechanism=SCRAM-SHA-512".to_owned(),
            "--source-property".to_owned(),
            "sasl.username=mirror".to_owned(),
            "--source-property".to_owned(),
            format!("sasl.password={password}"),
            "--source-property".to_owned(),
            ca.clone(),
            "--topics".to_owned(),
            "secured".to_owned(),
        ]
    };

    let dest = Broker::start(url, &[]);
    let wrong = settings("not-the-secret");
    let wrong: Vec<&str> = wrong.iter().map(String::as_str).collect();
    let refused = MirrorProcess::start(url, &secured, &wrong);
    // Nothing can be read, so nothing is written, and the status says why.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let t = status_of(&dest, "secured").await;
        // The first look may fail before librdkafka has said why.
        let why = |t: &Value| {
            t["error"]
                .as_str()
                .is_some_and(|e| e.contains("SASL authentication"))
        };
        if t.as_ref().is_some_and(why) {
            break;
        }
        assert!(Instant::now() < deadline, "no cause in the status: {t:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // It stays while the source refuses (librdkafka does not repeat it).
    tokio::time::sleep(Duration::from_secs(1)).await;
    let t = status_of(&dest, "secured").await.expect("status");
    let error = t["error"].as_str().unwrap_or_default();
    assert!(error.contains("SASL authentication"), "{t}");
    assert!(error.contains("the source cannot be reached"), "{t}");
    assert!(
        t["partitions"].as_array().is_none_or(|ps| ps
            .iter()
            .all(|p| p["mirrored_offset"].as_i64().unwrap_or(0) == 0)),
        "records mirrored with a wrong password: {t}"
    );
    refused.kill();

    let right = settings("mirror-secret");
    let right: Vec<&str> = right.iter().map(String::as_str).collect();
    let _mirror = MirrorProcess::start(url, &secured, &right);
    mirrored_alike(&src, &dest, "secured", 2).await;
    let t = status_of(&dest, "secured").await.expect("status");
    assert!(t["error"].is_null(), "{t}");
}
