//! Flat cost at scale (issue 22): one broker (the release binary) grown in
//! steps to `--topics` topics of `--partitions-per-topic` partitions
//! (10,000 × 5 = 50,000 partitions by default, created with CreateTopics
//! in batches), `--connections` idle Kafka connections (2,000; each did
//! ApiVersions and a one-topic Metadata, then sleeps) and `--groups`
//! consumer groups (500: half classic Kafka groups that committed an
//! offset, half native groups that popped and acked once), all three grown
//! in proportion to the topics at each of `--steps` (topic counts; by
//! default 1, a tenth, a half and all of `--topics`).
//!
//! At each step, on one warm connection each, `--requests` times (200): a
//! Kafka Produce of one batch of 10 records of 100 bytes to one partition;
//! a Fetch of 64 KiB from one partition (by topic id, as current clients
//! do); a Metadata for one topic; a native `pop` (batch 1, a named group)
//! with its `ack` — p50 and p99 of each; then a burst of `--burst`
//! records (20,000 × 100 B) from librdkafka to one partition (rec/s), the
//! time of `GET /api/v1/resources/queues` and of a Metadata for every
//! topic (median of 3), the broker's resident memory (VmRSS) and what each
//! idle connection opened at that step added to it.
//!
//! The summary line per backend divides the last step's p50s and burst
//! rate by the first step's. The goals: produce, fetch, one-topic Metadata
//! and pop within 20 % of the small case, at most 64 KiB per idle
//! connection, queue listing and full Metadata under 1 s at full size.
//!
//! `cargo bench --bench scale` runs both backends at full size (it needs
//! `ulimit -n` above the connections); a small run:
//! `cargo bench --bench scale -- --backend sqlite --topics 500
//! --connections 100 --groups 20`.

#[path = "../tests/support/mod.rs"]
mod support;

mod common;

use std::time::{Duration, Instant};

use common::{ack_completed, fresh_db, peak_rss_mib, rss_mib, Flags, Popped};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, BrokerId, CreateTopicsRequest,
    CreateTopicsResponse, FetchRequest, FetchResponse, GroupId, MetadataRequest, MetadataResponse,
    OffsetCommitRequest, OffsetCommitResponse, ProduceRequest, ProduceResponse, ResponseHeader,
    TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use kafka_protocol::ResponseError;
use rdkafka::producer::{DefaultProducerContext, Producer, ThreadedProducer};
use support::security::Raw;
use support::Broker;

/// The topic every Kafka measurement uses: the first one created.
const MEASURED: &str = "scale-00000";
/// The native queue the pops read, and the native groups popped once.
const POP_QUEUE: &str = "scale-pop";
/// The named group whose pops are timed.
const POP_GROUP: &str = "scale-measure";
/// Topics per CreateTopics request.
const CREATE_BATCH: usize = 500;
/// Requests sent before each timed series, to warm caches and connections.
const WARM_UP: usize = 10;

struct Args {
    backends: Vec<String>,
    topics: usize,
    partitions: i32,
    connections: usize,
    groups: usize,
    steps: Vec<usize>,
    requests: usize,
    burst: usize,
}

fn args() -> Args {
    let flags = Flags::parse();
    let topics: usize = flags.get("topics", 10_000).max(1);
    let steps = match flags.get("steps", String::new()) {
        s if s.is_empty() => vec![1, topics / 10, topics / 2, topics],
        s => s.split(',').filter_map(|n| n.trim().parse().ok()).collect(),
    };
    let mut steps: Vec<usize> = steps
        .into_iter()
        .map(|n: usize| n.clamp(1, topics))
        .chain([topics])
        .collect();
    steps.sort_unstable();
    steps.dedup();
    Args {
        backends: flags.backends(),
        topics,
        partitions: flags.get("partitions-per-topic", 5).max(1),
        connections: flags.get("connections", 2_000),
        groups: flags.get("groups", 500),
        steps,
        requests: flags.get("requests", 200).max(1),
        burst: flags.get("burst", 20_000).max(1),
    }
}

/// The share of `total` that goes with `topics` of `all` topics.
fn share(total: usize, topics: usize, all: usize) -> usize {
    total * topics / all
}

/// The name of topic `i`.
fn topic(i: usize) -> String {
    format!("scale-{i:05}")
}

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_owned()))
}

/// p50 and p99 of some timings.
#[derive(Clone, Copy)]
struct Latency {
    p50: Duration,
    p99: Duration,
}

impl Latency {
    /// Times `f` `n` times (after [`WARM_UP`] untimed calls).
    fn of(n: usize, mut f: impl FnMut()) -> Self {
        for _ in 0..WARM_UP {
            f();
        }
        Self::from((0..n).map(|_| {
            let started = Instant::now();
            f();
            started.elapsed()
        }))
    }

    fn from(timings: impl Iterator<Item = Duration>) -> Self {
        let (p50, p99) = common::p50_p99(timings.collect());
        Self { p50, p99 }
    }
}

impl std::fmt::Display for Latency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "p50 {:7.2} ms  p99 {:7.2} ms",
            ms(self.p50),
            ms(self.p99)
        )
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// What one step measured.
struct Step {
    topics: usize,
    connections: usize,
    groups: usize,
    produce: Latency,
    burst: f64,
    fetch: Latency,
    metadata: Latency,
    pop: Latency,
    listing: Duration,
    full_metadata: Duration,
    full_metadata_bytes: usize,
    rss_mib: f64,
    peak_rss_mib: f64,
    /// KiB of resident memory per idle connection opened at this step.
    per_connection_kib: Option<f64>,
}

impl Step {
    fn print(&self, backend: &str, partitions: i32) {
        let connection = self
            .per_connection_kib
            .map_or("no new idle connections".to_owned(), |k| {
                format!("{k:.1} KiB per idle connection opened at this step")
            });
        println!(
            "{backend:8} {} topics, {} partitions, {} idle connections, {} groups\n  \
             produce 10 × 100 B       {}  | burst {:>9.0} rec/s\n  \
             fetch one partition      {}\n  \
             metadata, one topic      {}\n  \
             pop + ack (batch 1)      {}\n  \
             GET resources/queues     {:9.1} ms\n  \
             metadata, all topics     {:9.1} ms ({:.1} KiB)\n  \
             broker RSS               {:9.1} MiB (peak {:.1}); {connection}",
            self.topics,
            self.topics * partitions as usize,
            self.connections,
            self.groups,
            self.produce,
            self.burst,
            self.fetch,
            self.metadata,
            self.pop,
            ms(self.listing),
            ms(self.full_metadata),
            self.full_metadata_bytes as f64 / 1024.0,
            self.rss_mib,
            self.peak_rss_mib,
        );
    }
}

/// Creates topics `from..to` with `partitions` each, in batches.
fn create_topics(kafka: &str, from: usize, to: usize, partitions: i32) {
    let mut first = from;
    while first < to {
        let last = (first + CREATE_BATCH).min(to);
        let request = CreateTopicsRequest::default()
            .with_timeout_ms(60_000)
            .with_topics(
                (first..last)
                    .map(|i| {
                        CreatableTopic::default()
                            .with_name(name(&topic(i)))
                            .with_num_partitions(partitions)
                            .with_replication_factor(1)
                    })
                    .collect(),
            );
        let answer: CreateTopicsResponse =
            support::kafka::call(kafka, ApiKey::CreateTopics, 5, &request);
        for t in &answer.topics {
            assert!(
                t.error_code == 0 || t.error_code == ResponseError::TopicAlreadyExists.code(),
                "creating {:?}: error {}",
                t.name,
                t.error_code
            );
        }
        first = last;
    }
}

/// A connection as a client leaves it idle: ApiVersions, then Metadata
/// for one topic.
fn idle_connection(kafka: &str) -> Raw {
    let mut raw = Raw::connect(kafka);
    let request = ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("scale-bench"))
        .with_client_software_version(StrBytes::from_static_str("1"));
    let versions: ApiVersionsResponse = raw
        .call(ApiKey::ApiVersions, 3, &request)
        .expect("ApiVersions answered");
    assert_eq!(versions.error_code, 0);
    let metadata = raw.metadata(MEASURED).expect("Metadata answered");
    assert_eq!(metadata.topics[0].error_code, 0);
    raw
}

/// Group `g` of the classic protocol commits offset 0 of partition 0 of
/// one of the `topics` topics (generation -1: a group without members).
fn commit_group(raw: &mut Raw, g: usize, topics: usize) {
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(format!("scale-group-{g}"))))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(name(&topic(g % topics)))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(0)])]);
    let answer: OffsetCommitResponse = raw
        .call(ApiKey::OffsetCommit, 8, &request)
        .expect("OffsetCommit answered");
    assert_eq!(
        answer.topics[0].partitions[0].error_code, 0,
        "commit of group {g}"
    );
}

/// A Produce of one batch of 10 records of 100 bytes to partition 0 of
/// [`MEASURED`].
fn produce_request() -> ProduceRequest {
    let batch = support::kafka::record_batch(
        -1,
        -1,
        -1,
        vec![bytes::Bytes::from_static(&[b'x'; 100]); 10],
    );
    ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name(MEASURED))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(batch))])])
}

/// A Fetch of up to 64 KiB from offset 0 of partition 0 of the topic with
/// id `topic_id` (Fetch v13 names topics by id).
fn fetch_request(topic_id: uuid::Uuid) -> FetchRequest {
    FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(64 * 1024)
        .with_topics(vec![FetchTopic::default()
            .with_topic_id(topic_id)
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(0)
                .with_partition_max_bytes(64 * 1024)])])
}

/// The Kafka measurements of a step, on one warm connection `raw`:
/// produce, fetch, one-topic Metadata, and full Metadata (its time and
/// size).
fn kafka_latencies(raw: &mut Raw, requests: usize) -> (Latency, Latency, Latency, Duration, usize) {
    let produce = produce_request();
    let produced = Latency::of(requests, || {
        let answer: ProduceResponse = raw
            .call(ApiKey::Produce, 9, &produce)
            .expect("Produce answered");
        assert_eq!(answer.responses[0].partition_responses[0].error_code, 0);
    });
    let topic_id = raw.metadata(MEASURED).expect("Metadata answered").topics[0].topic_id;
    let fetch = fetch_request(topic_id);
    let fetched = Latency::of(requests, || {
        let answer: FetchResponse = raw.call(ApiKey::Fetch, 13, &fetch).expect("Fetch answered");
        let partition = &answer.responses[0].partitions[0];
        assert_eq!(partition.error_code, 0);
        assert!(partition.records.as_ref().is_some_and(|r| !r.is_empty()));
    });
    let metadata = Latency::of(requests, || {
        let answer = raw.metadata(MEASURED).expect("Metadata answered");
        assert_eq!(answer.topics[0].error_code, 0);
    });
    let all = MetadataRequest::default().with_topics(None);
    let mut bytes = 0;
    let mut full: Vec<Duration> = (0..3)
        .map(|_| {
            let started = Instant::now();
            raw.send(ApiKey::Metadata, 12, &all);
            let mut frame = raw.frame().expect("Metadata answered");
            let took = started.elapsed();
            bytes = frame.len();
            ResponseHeader::decode(&mut frame, ApiKey::Metadata.response_header_version(12))
                .expect("header");
            let answer = MetadataResponse::decode(&mut frame, 12).expect("Metadata answer");
            assert!(answer.topics.iter().all(|t| t.error_code == 0));
            took
        })
        .collect();
    full.sort_unstable();
    (produced, fetched, metadata, full[1], bytes)
}

/// librdkafka produces `records` of 100 bytes to partition 0 of
/// [`MEASURED`] as fast as it can: records/s.
fn burst(kafka: &str, records: usize) -> f64 {
    let mut config = common::kafka_client(kafka);
    let producer: ThreadedProducer<DefaultProducerContext> = config
        .set("acks", "all")
        .set("linger.ms", "5")
        .create()
        .expect("producer");
    let wait = Duration::from_secs(120);
    let took = common::timed_produce(
        &producer,
        MEASURED,
        1,
        records,
        &[b'x'; 100],
        || producer.flush(wait).expect("flush"),
        |_| {},
    );
    records as f64 / took
}

/// The native side: pushes, pops and acks over HTTP.
struct Native {
    client: reqwest::Client,
    http: String,
}

impl Native {
    /// Pushes `count` messages to [`POP_QUEUE`], 1,000 per request.
    async fn fill(&self, count: usize) {
        let mut pushed = 0;
        while pushed < count {
            let n = (count - pushed).min(1000);
            let items: Vec<_> = (pushed..pushed + n)
                .map(|i| serde_json::json!({"queue": POP_QUEUE, "payload": {"n": i}}))
                .collect();
            let answer = self
                .client
                .post(format!("{}/api/v1/push", self.http))
                .json(&serde_json::json!({ "items": items }))
                .send()
                .await
                .expect("push");
            assert!(answer.status().is_success(), "push: {}", answer.status());
            pushed += n;
        }
    }

    /// One pop of one message for `group` and its ack.
    async fn pop_and_ack(&self, group: &str) {
        let url = format!(
            "{}/api/v1/pop/queue/{POP_QUEUE}?batch=1&wait=false&consumerGroup={group}",
            self.http
        );
        let response = self.client.get(&url).send().await.expect("pop");
        assert_eq!(response.status().as_u16(), 200, "pop for {group}");
        let popped: Popped = response.json().await.expect("pop answer");
        assert_eq!(popped.messages.len(), 1);
        let ack = format!("{}/api/v1/ack/batch", self.http);
        ack_completed(&self.client, &ack, Some(group), &popped.messages).await;
    }

    /// The pop + ack latency of [`POP_GROUP`] over `n` pairs.
    async fn pop_latency(&self, n: usize) -> Latency {
        let mut timings = Vec::with_capacity(n);
        for i in 0..WARM_UP + n {
            let started = Instant::now();
            self.pop_and_ack(POP_GROUP).await;
            if i >= WARM_UP {
                timings.push(started.elapsed());
            }
        }
        Latency::from(timings.into_iter())
    }

    /// The median time of 3 `GET /api/v1/resources/queues`; checks that
    /// the answer lists `at_least` queues.
    async fn listing(&self, at_least: usize) -> Duration {
        let url = format!("{}/api/v1/resources/queues", self.http);
        let mut times = Vec::new();
        for _ in 0..3 {
            let started = Instant::now();
            let response = self.client.get(&url).send().await.expect("list");
            assert!(response.status().is_success());
            let body: serde_json::Value = response.json().await.expect("list answer");
            times.push(started.elapsed());
            let listed = body["queues"].as_array().map_or(0, Vec::len);
            assert!(listed >= at_least, "{listed} queues listed");
        }
        times.sort_unstable();
        times[1]
    }
}

/// Runs `f` off the runtime's threads (the Kafka side speaks blocking
/// sockets) and hands back what it returns.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("bench thread")
}

/// Grows a broker on `backend` through the steps; one [`Step`] each.
async fn scenario(backend: &str, args: &Args) -> Vec<Step> {
    let db = fresh_db(backend).await;
    let broker = Broker::start(&db.url, &[]);
    let pid = broker.child.id();
    let kafka = broker.kafka.clone();
    let native = Native {
        client: reqwest::Client::new(),
        http: broker.http.clone(),
    };
    // Every native group pops one message, the measured group two series
    // per step.
    native
        .fill(args.groups + (WARM_UP + args.requests) * args.steps.len() + 100)
        .await;
    let mut idle: Vec<Raw> = Vec::new();
    let (mut topics, mut groups) = (0, 0);
    let mut work: Option<Raw> = None;
    let mut steps = Vec::new();
    for &step in &args.steps {
        let (k, partitions) = (kafka.clone(), args.partitions);
        blocking(move || create_topics(&k, topics, step, partitions)).await;
        topics = step;

        let wanted = share(args.groups, step, args.topics);
        let k = kafka.clone();
        let mut raw = work.take();
        let (from, to) = (groups, wanted);
        let classic: Vec<usize> = (from..to).filter(|g| g % 2 == 0).collect();
        raw = Some(
            blocking(move || {
                let mut raw = raw.unwrap_or_else(|| Raw::connect(&k));
                for g in classic {
                    commit_group(&mut raw, g, step);
                }
                raw
            })
            .await,
        );
        for g in (from..to).filter(|g| g % 2 == 1) {
            native.pop_and_ack(&format!("scale-group-{g}")).await;
        }
        groups = wanted;

        let new = share(args.connections, step, args.topics).saturating_sub(idle.len());
        let before = rss_mib(pid);
        let k = kafka.clone();
        let opened =
            blocking(move || (0..new).map(|_| idle_connection(&k)).collect::<Vec<_>>()).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let per_connection_kib = (new > 0).then(|| (rss_mib(pid) - before) * 1024.0 / new as f64);
        idle.extend(opened);

        let (requests, k) = (args.requests, kafka.clone());
        let mut conn = raw.take().expect("work connection");
        let (conn, (produce, fetch, metadata, full_metadata, full_metadata_bytes)) =
            blocking(move || {
                let measured = kafka_latencies(&mut conn, requests);
                (conn, measured)
            })
            .await;
        let burst_records = args.burst;
        let burst = blocking(move || burst(&k, burst_records)).await;
        let pop = native.pop_latency(args.requests).await;
        let listing = native.listing(step).await;
        work = Some(conn);
        let measured = Step {
            topics: step,
            connections: idle.len(),
            groups,
            produce,
            burst,
            fetch,
            metadata,
            pop,
            listing,
            full_metadata,
            full_metadata_bytes,
            rss_mib: rss_mib(pid),
            peak_rss_mib: peak_rss_mib(pid),
            per_connection_kib,
        };
        measured.print(backend, args.partitions);
        steps.push(measured);
    }
    drop(idle);
    steps
}

/// The summary line: the last step against the first, and the goals.
fn summary(backend: &str, steps: &[Step]) {
    let (Some(small), Some(large)) = (steps.first(), steps.last()) else {
        return;
    };
    let ratio = |f: fn(&Step) -> Duration| f(large).as_secs_f64() / f(small).as_secs_f64();
    let ratios = [
        ("produce", ratio(|s| s.produce.p50)),
        ("fetch", ratio(|s| s.fetch.p50)),
        ("metadata", ratio(|s| s.metadata.p50)),
        ("pop", ratio(|s| s.pop.p50)),
    ];
    let flat = ratios.iter().all(|(_, r)| *r <= 1.2);
    let per_connection = steps
        .iter()
        .filter_map(|s| s.per_connection_kib)
        .fold(None, |max: Option<f64>, k| {
            Some(max.map_or(k, |m| m.max(k)))
        });
    let listed = |d: Duration| {
        if d < Duration::from_secs(1) {
            "ok"
        } else {
            "MISSED"
        }
    };
    println!(
        "{backend:8} summary, {} topics against {}: p50 ratios {} (goal ≤ 1.20: {}); burst {:.2}; \
         idle connection at most {} (goal ≤ 64 KiB); GET resources/queues {:.0} ms, full metadata {:.0} ms \
         (goal < 1 s: {} / {}); RSS {:.1} → {:.1} MiB",
        large.topics,
        small.topics,
        ratios
            .iter()
            .map(|(what, r)| format!("{what} {r:.2}"))
            .collect::<Vec<_>>()
            .join(", "),
        if flat { "ok" } else { "MISSED" },
        large.burst / small.burst,
        per_connection.map_or("not measured".to_owned(), |k| format!("{k:.1} KiB")),
        ms(large.listing),
        ms(large.full_metadata),
        listed(large.listing),
        listed(large.full_metadata),
        small.rss_mib,
        large.rss_mib,
    );
}

#[tokio::main]
async fn main() {
    let args = args();
    for backend in args.backends.clone() {
        let steps = scenario(&backend, &args).await;
        summary(&backend, &steps);
    }
}
