//! Consumer groups and offset queries of Debian's old Go clients (sarama
//! 1.22 and kafka-go 0.2, built in GOPATH mode: `tests/go/sarama_group`,
//! `tests/go/kafka_go_group`), on both backends: two members split four
//! partitions, what they commit is
//! where a restarted member resumes (nothing lost, nothing read twice),
//! offsets by time, and an out-of-range fetch and commit met with the
//! client's reset policy.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};
use serde_json::{json, Value};
use support::burrow::Burrow;
use support::go::{go_program, spoken};
use support::kafka::{create_topic, produce_numbered};
use support::Broker;

const TIMEOUT: Duration = Duration::from_secs(20);

fn sarama_group() -> std::path::PathBuf {
    go_program(
        "sarama_group",
        "github.com/Shopify/sarama",
        "golang-github-shopify-sarama-dev",
    )
}

/// What one run of `sarama_group group` printed: each member's claims at
/// its last generation, and every message read as (member, partition,
/// offset, value), in order.
#[derive(Debug, Default)]
struct GroupRun {
    claims: BTreeMap<u32, BTreeSet<i32>>,
    reads: Vec<(u32, i32, i64, String)>,
}

/// Runs `members` members of `group` on `topic` through `kafka` until
/// `want` messages arrived and `idle_ms` more passed; `initial` is the
/// reset policy.
/// Checks every message was read by a member that held its partition.
fn run_group(
    program: &std::path::Path,
    kafka: &str,
    group: &str,
    topic: &str,
    members: u32,
    (want, idle_ms): (usize, u64),
    initial: &str,
) -> GroupRun {
    let run = std::process::Command::new(program)
        .args(["group", kafka, group, topic])
        .args([members.to_string(), want.to_string(), idle_ms.to_string()])
        .arg(initial)
        .output()
        .expect("sarama_group runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "sarama_group {group}: {}\n{stdout}",
        String::from_utf8_lossy(&run.stderr)
    );
    let mut parsed = GroupRun::default();
    for line in stdout.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        let member: u32 = words[1].parse().expect("member");
        match words[0] {
            "claims" => {
                let claims = words
                    .get(3)
                    .filter(|w| !w.is_empty())
                    .map(|w| {
                        w.split(',')
                            .map(|p| p.parse().expect("partition"))
                            .collect()
                    })
                    .unwrap_or_default();
                parsed.claims.insert(member, claims);
            }
            "read" => {
                let partition: i32 = words[2].parse().expect("partition");
                assert!(
                    parsed
                        .claims
                        .get(&member)
                        .is_some_and(|c| c.contains(&partition)),
                    "member {member} read partition {partition} it does not hold:\n{stdout}"
                );
                let offset = words[3].parse().expect("offset");
                parsed
                    .reads
                    .push((member, partition, offset, words[4].to_owned()));
            }
            other => panic!("unexpected line {other:?} in\n{stdout}"),
        }
    }
    parsed
}

/// The reads as (partition, offset, value), sorted.
fn messages(run: &GroupRun) -> Vec<(i32, i64, String)> {
    let mut m: Vec<_> = run
        .reads
        .iter()
        .map(|(_, p, o, v)| (*p, *o, v.clone()))
        .collect();
    m.sort();
    m
}

/// `group`'s committed offsets on partitions 0–3 of `topic`, as rdkafka
/// reads them (-1: none).
fn committed(broker: &Broker, group: &str, topic: &str) -> Vec<i64> {
    let consumer = group_tool(broker, group);
    let mut tpl = TopicPartitionList::new();
    for p in 0..4 {
        tpl.add_partition(topic, p);
    }
    consumer
        .committed_offsets(tpl, TIMEOUT)
        .expect("committed offsets")
        .elements()
        .iter()
        .map(|e| e.offset().to_raw().unwrap_or(-1))
        .collect()
}

/// An rdkafka consumer of `group` that never joins it: it only reads and
/// writes the group's committed offsets.
fn group_tool(broker: &Broker, group: &str) -> BaseConsumer {
    ClientConfig::new()
        .set("bootstrap.servers", &broker.kafka)
        .set("broker.address.family", "v4")
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer")
}

async fn sarama_members_split_four_partitions_and_resume_from_commits(broker: &Broker) {
    let program = sarama_group();
    create_topic(&broker.kafka, "orders", 4).await;
    // Record n goes to partition n % 4: two per partition.
    produce_numbered(&broker.kafka, "orders", "first", 8, 4).await;

    let run = tokio::task::block_in_place(|| {
        run_group(
            &program,
            &broker.kafka,
            "billing",
            "orders",
            2,
            (8, 1000),
            "oldest",
        )
    });
    // Two members, two partitions each, all four held.
    assert_eq!(run.claims.len(), 2, "{run:?}");
    for claims in run.claims.values() {
        assert_eq!(claims.len(), 2, "an even split: {run:?}");
    }
    let held: BTreeSet<i32> = run.claims.values().flatten().copied().collect();
    assert_eq!(held, BTreeSet::from([0, 1, 2, 3]), "{run:?}");
    // Each message once, by the member holding its partition.
    let expected: Vec<_> = (0..8)
        .map(|n| (n % 4, i64::from(n / 4), format!("first-{n}")))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(messages(&run), expected, "{run:?}");
    assert!(
        run.reads.iter().any(|r| r.0 == 1) && run.reads.iter().any(|r| r.0 == 2),
        "both members read: {run:?}"
    );
    // Closing the members committed what they read.
    let read_by = tokio::task::block_in_place(|| committed(broker, "billing", "orders"));
    assert_eq!(read_by, [2, 2, 2, 2]);

    // A restarted member continues from the commits: only the new records.
    produce_numbered(&broker.kafka, "orders", "second", 4, 4).await;
    let resumed = tokio::task::block_in_place(|| {
        run_group(
            &program,
            &broker.kafka,
            "billing",
            "orders",
            1,
            (4, 1500),
            "oldest",
        )
    });
    assert_eq!(
        resumed.claims.get(&1),
        Some(&BTreeSet::from([0, 1, 2, 3])),
        "{resumed:?}"
    );
    let expected: Vec<_> = (0..4).map(|n| (n, 2, format!("second-{n}"))).collect();
    assert_eq!(messages(&resumed), expected, "nothing lost, nothing twice");
    let read_by = tokio::task::block_in_place(|| committed(broker, "billing", "orders"));
    assert_eq!(read_by, [3, 3, 3, 3]);

    // The group APIs were spoken at sarama's versions for Kafka 0.10.2.
    for (api, version) in [
        ("JoinGroup", 1),
        ("SyncGroup", 0),
        ("LeaveGroup", 0),
        ("OffsetFetch", 1),
        ("OffsetCommit", 1),
        ("Fetch", 3),
    ] {
        assert!(spoken(broker, api, version).await, "no {api} v{version}");
    }
    let _ = std::fs::remove_file(program);
}

async fn sarama_resets_an_out_of_range_commit_by_its_policy(broker: &Broker) {
    let program = sarama_group();
    create_topic(&broker.kafka, "audit", 4).await;
    produce_numbered(&broker.kafka, "audit", "a", 8, 4).await;
    // Partition 0's commit is past its end (offsets 0 and 1 exist); the
    // others are at their end.
    let commit_out_of_range = || {
        let tool = group_tool(broker, "auditors");
        let mut tpl = TopicPartitionList::new();
        for (p, offset) in [(0, 100), (1, 2), (2, 2), (3, 2)] {
            tpl.add_partition_offset("audit", p, Offset::Offset(offset))
                .expect("tpl");
        }
        tool.commit(&tpl, CommitMode::Sync).expect("commit");
    };

    // Reset to the newest: nothing to read, nothing committed.
    let newest = tokio::task::block_in_place(|| {
        commit_out_of_range();
        run_group(
            &program,
            &broker.kafka,
            "auditors",
            "audit",
            1,
            (0, 2000),
            "newest",
        )
    });
    assert_eq!(messages(&newest), [], "{newest:?}");
    // Reset to the oldest: partition 0 from its start, the others not again.
    let oldest = tokio::task::block_in_place(|| {
        commit_out_of_range();
        run_group(
            &program,
            &broker.kafka,
            "auditors",
            "audit",
            1,
            (2, 1500),
            "oldest",
        )
    });
    assert_eq!(
        messages(&oldest),
        [(0, 0, "a-0".to_owned()), (0, 1, "a-4".to_owned())],
        "{oldest:?}"
    );
    // sarama 1.22 only marks forward of the offset it fetched (its
    // MarkOffset ignores a lower one), so the commit stays where it was:
    // the broker kept what was committed, and nothing else.
    let read_by = tokio::task::block_in_place(|| committed(broker, "auditors", "audit"));
    assert_eq!(read_by, [100, 2, 2, 2]);
    let _ = std::fs::remove_file(program);
}

async fn sarama_finds_offsets_by_time_and_meets_out_of_range_fetches(broker: &Broker) {
    let program = sarama_group();
    create_topic(&broker.kafka, "events", 1).await;
    const T: i64 = 1_700_000_000_000;
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", &broker.kafka)
        .set("broker.address.family", "v4")
        .create()
        .expect("producer");
    for i in 0..3 {
        producer
            .send(
                FutureRecord::<[u8], [u8]>::to("events")
                    .partition(0)
                    .payload(b"e")
                    .timestamp(T + 10 * i),
                TIMEOUT,
            )
            .await
            .map_err(|(e, _)| e)
            .expect("produced");
    }

    let times = [-2, -1, T - 1, T, T + 5, T + 10, T + 20, T + 21];
    let run = std::process::Command::new(&program)
        .args(["offsets", &broker.kafka, "events", "0"])
        .args(times.map(|t| t.to_string()))
        .output()
        .expect("sarama_group runs");
    assert!(
        run.status.success(),
        "offsets: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    // Oldest, newest, then the first offset at or after each time (-1
    // past the last record), as Kafka answers ListOffsets v1.
    let offsets = [0, 3, 0, 0, 1, 1, 2, -1];
    let mut expected: String = times
        .iter()
        .zip(offsets)
        .map(|(t, o)| format!("offset {t} {o}\n"))
        .collect();
    expected.push_str(
        "fetch 103 kafka server: The requested offset is outside the range of offsets \
         maintained by the server for the given topic/partition.\n",
    );
    assert_eq!(String::from_utf8_lossy(&run.stdout), expected);
    for (api, version) in [("ListOffsets", 1), ("Fetch", 3)] {
        assert!(spoken(broker, api, version).await, "no {api} v{version}");
    }
    let _ = std::fs::remove_file(program);
}

/// Runs `readers` kafka-go readers of `group` on `topic` until `want`
/// messages arrived and `idle_ms` more passed: the messages read per
/// reader, as (partition, offset, value).
fn run_kafka_go_group(
    program: &std::path::Path,
    kafka: &str,
    group: &str,
    topic: &str,
    readers: u32,
    (want, idle_ms): (usize, u64),
) -> BTreeMap<u32, BTreeSet<(i32, i64, String)>> {
    let run = std::process::Command::new(program)
        .args([kafka, group, topic])
        .args([readers.to_string(), want.to_string(), idle_ms.to_string()])
        .output()
        .expect("kafka_go_group runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "kafka_go_group {group}: {}\n{stdout}",
        String::from_utf8_lossy(&run.stderr)
    );
    let mut reads: BTreeMap<u32, BTreeSet<(i32, i64, String)>> = BTreeMap::new();
    for line in stdout.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        assert_eq!(words.len(), 5, "unexpected line {line:?}");
        let message = (
            words[2].parse().expect("partition"),
            words[3].parse().expect("offset"),
            words[4].to_owned(),
        );
        let reader = words[1].parse().expect("reader");
        assert!(
            reads.entry(reader).or_default().insert(message),
            "read twice: {line}\n{stdout}"
        );
    }
    reads
}

async fn kafka_go_readers_split_four_partitions_and_resume_from_commits(broker: &Broker) {
    let program = go_program(
        "kafka_go_group",
        "github.com/segmentio/kafka-go",
        "golang-github-segmentio-kafka-go-dev",
    );
    create_topic(&broker.kafka, "payments", 4).await;
    produce_numbered(&broker.kafka, "payments", "first", 8, 4).await;

    let reads = tokio::task::block_in_place(|| {
        run_kafka_go_group(&program, &broker.kafka, "ledger", "payments", 2, (8, 1000))
    });
    // Two readers, two whole partitions each, every message once.
    assert_eq!(reads.len(), 2, "{reads:?}");
    let partitions =
        |r: &BTreeSet<(i32, i64, String)>| -> BTreeSet<i32> { r.iter().map(|m| m.0).collect() };
    for r in reads.values() {
        assert_eq!(partitions(r).len(), 2, "an even split: {reads:?}");
    }
    let all: BTreeSet<_> = reads.values().flatten().cloned().collect();
    let expected: BTreeSet<_> = (0..8)
        .map(|n| (n % 4, i64::from(n / 4), format!("first-{n}")))
        .collect();
    assert_eq!(all, expected);
    assert_eq!(reads.values().map(BTreeSet::len).sum::<usize>(), 8);
    let read_by = tokio::task::block_in_place(|| committed(broker, "ledger", "payments"));
    assert_eq!(read_by, [2, 2, 2, 2]);

    // A restarted reader continues from the commits.
    produce_numbered(&broker.kafka, "payments", "second", 4, 4).await;
    let resumed = tokio::task::block_in_place(|| {
        run_kafka_go_group(&program, &broker.kafka, "ledger", "payments", 1, (4, 1500))
    });
    let expected: BTreeSet<_> = (0..4).map(|n| (n, 2, format!("second-{n}"))).collect();
    assert_eq!(
        resumed.get(&1),
        Some(&expected),
        "nothing lost, nothing twice"
    );
    let read_by = tokio::task::block_in_place(|| committed(broker, "ledger", "payments"));
    assert_eq!(read_by, [3, 3, 3, 3]);
    // kafka-go 0.2 commits with OffsetCommit v2 and joins with v1.
    for (api, version) in [("JoinGroup", 1), ("OffsetCommit", 2), ("OffsetFetch", 1)] {
        assert!(spoken(broker, api, version).await, "no {api} v{version}");
    }
    let _ = std::fs::remove_file(program);
}

/// Polls Burrow's `path` until `field` of its answer is `expected`, for
/// up to 30 s.
async fn burrow_until(burrow: &Burrow, path: &str, field: &str, expected: Value) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = burrow.get(path).await;
        if answer[field] == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "Burrow's {path} still answers {answer}, not {field}: {expected}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Commits `offsets` (partition, offset) of `topic` for `group`, as a
/// consumer outside the group (generation -1) does.
fn commit(broker: &Broker, group: &str, topic: &str, offsets: &[(i32, i64)]) {
    let tool = group_tool(broker, group);
    let mut tpl = TopicPartitionList::new();
    for &(p, offset) in offsets {
        tpl.add_partition_offset(topic, p, Offset::Offset(offset))
            .expect("tpl");
    }
    tool.commit(&tpl, CommitMode::Sync).expect("commit");
}

/// Each partition's `current-lag` in Burrow's answer for `group` on
/// `topic` (`/v3/kafka/queen/consumer/GROUP`), by partition.
fn current_lags(answer: &Value, topic: &str) -> Value {
    let lags: Vec<Value> = answer["topics"][topic]
        .as_array()
        .map(|ps| ps.iter().map(|p| p["current-lag"].clone()).collect())
        .unwrap_or_default();
    Value::Array(lags)
}

/// Polls Burrow's consumer `group` until its current lags on `topic` are
/// `expected`, for up to 30 s.
async fn burrow_lags_until(burrow: &Burrow, group: &str, topic: &str, expected: Value) {
    let path = format!("/v3/kafka/queen/consumer/{group}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer: Value = reqwest::get(format!("{}{path}", burrow.http))
            .await
            .expect("GET from Burrow")
            .json()
            .await
            .expect("JSON");
        if answer["error"] == false && current_lags(&answer, topic) == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "Burrow's {path} still answers {answer}, not lags {expected}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn burrow_reads_topics_high_watermarks_and_group_lag(broker: &Broker) {
    create_topic(&broker.kafka, "watched", 4).await;
    produce_numbered(&broker.kafka, "watched", "w", 8, 4).await;
    let burrow = tokio::task::block_in_place(|| Burrow::start(&broker.kafka));
    burrow_until(&burrow, "/v3/kafka", "clusters", json!(["queen"])).await;
    // Burrow lists the cluster before its first metadata refresh has
    // listed the topics, so the topic list is polled too.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let topics = burrow.get("/v3/kafka/queen/topic").await;
        if topics["topics"]
            .as_array()
            .is_some_and(|t| t.contains(&json!("watched")))
        {
            break;
        }
        assert!(Instant::now() < deadline, "{topics}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // Each partition's high watermark, through Metadata and ListOffsets v1
    // as Burrow's sarama asks for them, and followed as records arrive.
    let path = "/v3/kafka/queen/topic/watched";
    burrow_until(&burrow, path, "offsets", json!([2, 2, 2, 2])).await;
    // The group's lag: its commits, read from `__consumer_offsets`, against
    // the high watermarks. (Burrow drops a commit of a partition whose high
    // watermark it has not read yet, so the group commits only now.)
    tokio::task::block_in_place(|| {
        commit(
            broker,
            "watchers",
            "watched",
            &[(0, 2), (1, 1), (2, 0), (3, 2)],
        );
    });
    burrow_lags_until(&burrow, "watchers", "watched", json!([0, 1, 2, 0])).await;
    produce_numbered(&broker.kafka, "watched", "x", 3, 4).await;
    burrow_until(&burrow, path, "offsets", json!([3, 3, 3, 2])).await;
    burrow_lags_until(&burrow, "watchers", "watched", json!([1, 2, 3, 0])).await;
    // A commit made while Burrow watches arrives through the log too.
    tokio::task::block_in_place(|| commit(broker, "watchers", "watched", &[(1, 3), (2, 2)]));
    burrow_lags_until(&burrow, "watchers", "watched", json!([1, 0, 1, 0])).await;
    let consumers = burrow.get("/v3/kafka/queen/consumer").await;
    assert!(
        consumers["consumers"]
            .as_array()
            .is_some_and(|c| c.contains(&json!("watchers"))),
        "{consumers}"
    );
    let status = burrow.get("/v3/kafka/queen/consumer/watchers/lag").await;
    assert_eq!(status["status"]["totallag"], json!(2), "{status}");
    assert!(spoken(broker, "ListOffsets", 1).await, "no ListOffsets v1");
}

support::broker_scenarios!(&[];
    sarama_members_split_four_partitions_and_resume_from_commits,
    sarama_resets_an_out_of_range_commit_by_its_policy,
    sarama_finds_offsets_by_time_and_meets_out_of_range_fetches,
    kafka_go_readers_split_four_partitions_and_resume_from_commits,
    burrow_reads_topics_high_watermarks_and_group_lag,
);
