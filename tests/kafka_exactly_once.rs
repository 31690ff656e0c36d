//! Exactly-once processing through failures, with librdkafka:
//! - a consume-transform-produce loop (`send_offsets_to_transaction`) runs
//!   in a child process that is SIGKILLed mid-run and started again; in
//!   the end every input record is in the output topic exactly once and
//!   the group's committed offset is the input's end (SQLite and
//!   PostgreSQL);
//! - on PostgreSQL, the broker coordinating a transaction is killed while
//!   it is open; the producer carries on through a second broker sharing
//!   the database and commits, and a read_committed reader sees every
//!   record of it once.
//!
//! The child process is this test binary, running the ignored test
//! `pipeline_child` with the broker's address in `QUEEN_PIPELINE_KAFKA`.

mod support;

use std::collections::BTreeSet;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{
    ApiKey, FindCoordinatorRequest, FindCoordinatorResponse, GroupId, OffsetFetchRequest,
    OffsetFetchResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::Producer;
use rdkafka::{Message, Offset, TopicPartitionList};
use support::kafka::{call, create_topic, produce_numbered};
use support::txn::{client, latest, read_all, send, transactional, WAIT};
use support::{Broker, TestDb};

/// Input records of the pipeline.
const INPUT: i64 = 300;
/// Records per transaction of the pipeline.
const BATCH: usize = 10;

/// The consume-transform-produce loop: reads `eos-in` from the group's
/// committed offset, writes `out-<value>` to `eos-out` and the consumed
/// offset in the same transaction, until the input's end.
fn pipeline(kafka: &str) {
    // The producer first: its InitProducerId aborts what a killed
    // predecessor left open, so the consumer's stable offset fetch is
    // not held up by it.
    let producer = transactional(kafka, "eos-app");
    let consumer: BaseConsumer = client(kafka)
        .set("group.id", "eos")
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_committed")
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", "50")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition("eos-in", 0);
    consumer.assign(&tpl).expect("assigned");
    let metadata = consumer.group_metadata().expect("group metadata");
    loop {
        let mut batch: Vec<(i64, String)> = Vec::new();
        while batch.len() < BATCH {
            match consumer.poll(Duration::from_millis(200)) {
                Some(Ok(m)) => batch.push((
                    m.offset(),
                    String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned(),
                )),
                Some(Err(e)) => panic!("consume failed: {e}"),
                None => break,
            }
        }
        let Some(&(last, _)) = batch.last() else {
            continue;
        };
        producer.begin_transaction().expect("begin");
        for (_, value) in &batch {
            send(&producer, "eos-out", 0, &format!("out-{value}"));
        }
        // Time inside the transaction, so that a kill lands there too.
        std::thread::sleep(Duration::from_millis(20));
        let mut offsets = TopicPartitionList::new();
        offsets
            .add_partition_offset("eos-in", 0, Offset::Offset(last + 1))
            .expect("offset");
        producer
            .send_offsets_to_transaction(&offsets, &metadata, WAIT)
            .expect("offsets sent");
        producer.commit_transaction(WAIT).expect("commit");
        if last + 1 >= INPUT {
            return;
        }
    }
}

#[test]
#[ignore = "the child process of a_killed_pipeline_resumes_exactly_once: it runs only as that"]
fn pipeline_child() {
    let kafka = std::env::var("QUEEN_PIPELINE_KAFKA")
        .expect("run by a_killed_pipeline_resumes_exactly_once, which names the broker");
    pipeline(&kafka);
}

/// Starts the pipeline in a child process.
fn start_pipeline(kafka: &str) -> Child {
    Command::new(std::env::current_exe().expect("test binary"))
        .args(["pipeline_child", "--exact", "--ignored", "--nocapture"])
        .env("QUEEN_PIPELINE_KAFKA", kafka)
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn the pipeline")
}

/// The committed offset of `group` on `topic`/0, stable offsets only.
fn committed(kafka: &str, group: &str, topic: &str) -> (i64, i16) {
    let request = OffsetFetchRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
        .with_require_stable(true)
        .with_topics(Some(vec![OffsetFetchRequestTopic::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
            .with_partition_indexes(vec![0])]));
    let answer: OffsetFetchResponse = call(kafka, ApiKey::OffsetFetch, 7, &request);
    let p = &answer.topics[0].partitions[0];
    (p.committed_offset, p.error_code.max(answer.error_code))
}

/// Checks the output of the pipeline: every input once, transformed, and
/// the group's offset at the input's end.
fn check_output(kafka: &str) {
    let (seen, _) = read_all(kafka, &[("eos-out", 0)], "read_committed");
    let distinct: BTreeSet<&String> = seen.iter().collect();
    let expected: BTreeSet<String> = (0..INPUT).map(|n| format!("out-in-{n}")).collect();
    assert_eq!(
        seen.len(),
        distinct.len(),
        "no input is reflected twice in the output"
    );
    assert_eq!(
        distinct.into_iter().cloned().collect::<BTreeSet<_>>(),
        expected,
        "every input is reflected in the output"
    );
    assert_eq!(committed(kafka, "eos", "eos-in"), (INPUT, 0));
}

async fn a_killed_pipeline_resumes_exactly_once(url: &str) {
    let broker = Broker::start(url, &[]);
    create_topic(&broker.kafka, "eos-in", 1).await;
    create_topic(&broker.kafka, "eos-out", 1).await;
    produce_numbered(&broker.kafka, "eos-in", "in", INPUT as i32, 1).await;
    let kafka = broker.kafka.clone();
    tokio::task::spawn_blocking(move || {
        let mut first = start_pipeline(&kafka);
        // Killed once a few transactions are in, well before the end.
        let deadline = Instant::now() + WAIT;
        while latest(&kafka, "eos-out", 0, 0) < 5 * BATCH as i64 {
            assert!(Instant::now() < deadline, "the pipeline made no progress");
            assert!(
                first.try_wait().expect("child").is_none(),
                "the pipeline ended before it was killed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        first.kill().expect("SIGKILL");
        first.wait().expect("reaped");
        let (before, _) = committed(&kafka, "eos", "eos-in");
        assert!(before < INPUT, "killed mid-run (at {before})");

        let mut second = start_pipeline(&kafka);
        let deadline = Instant::now() + Duration::from_secs(120);
        let status = loop {
            if let Some(status) = second.try_wait().expect("child") {
                break status;
            }
            if Instant::now() > deadline {
                let _ = second.kill();
                panic!("the restarted pipeline did not finish");
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        assert!(status.success(), "the restarted pipeline failed");
        check_output(&kafka);
    })
    .await
    .expect("scenario");
}

/// The coordinator of transactional id `tid`, as `kafka` answers it.
fn coordinator_port(kafka: &str, tid: &str) -> i32 {
    let request = FindCoordinatorRequest::default()
        .with_key(StrBytes::from_string(tid.to_owned()))
        .with_key_type(1);
    let answer: FindCoordinatorResponse = call(kafka, ApiKey::FindCoordinator, 3, &request);
    assert_eq!(answer.error_code, 0);
    answer.port
}

fn port(addr: &str) -> i32 {
    addr.rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("port")
}

async fn a_coordinators_death_leaves_the_transaction_to_another_broker(url: &str) {
    let one = Broker::start(url, &[]);
    let two = Broker::start(url, &[]);
    create_topic(&one.kafka, "handover", 1).await;
    let tid = "handover-app";
    // Both brokers answer the same coordinator; the other one survives.
    let coordinator = coordinator_port(&one.kafka, tid);
    assert_eq!(coordinator, coordinator_port(&two.kafka, tid));
    let (doomed, survivor) = if coordinator == port(&one.kafka) {
        (one, two)
    } else {
        assert_eq!(coordinator, port(&two.kafka));
        (two, one)
    };
    let bootstrap = format!("{},{}", doomed.kafka, survivor.kafka);
    let survivor_kafka = survivor.kafka.clone();
    let producer = tokio::task::spawn_blocking(move || {
        let producer = transactional(&bootstrap, tid);
        producer.begin_transaction().expect("begin");
        send(&producer, "handover", 0, "before");
        producer.flush(WAIT).expect("flushed");
        producer
    })
    .await
    .expect("started");
    // SIGKILL: the broker leaves no word; the others drop it from the
    // live brokers once its heartbeat is old.
    drop(doomed);
    tokio::task::spawn_blocking(move || {
        send(&producer, "handover", 0, "after");
        producer
            .commit_transaction(Duration::from_secs(90))
            .expect("committed through the survivor");
        let (seen, _) = read_all(&survivor_kafka, &[("handover", 0)], "read_committed");
        assert_eq!(seen, ["before", "after"]);
        assert_eq!(
            latest(&survivor_kafka, "handover", 0, 1),
            3,
            "two records and the commit marker"
        );
    })
    .await
    .expect("scenario");
    drop(survivor);
}

mod sqlite {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_killed_pipeline_resumes_exactly_once() {
        let db = crate::TestDb::sqlite();
        crate::a_killed_pipeline_resumes_exactly_once(&db.url).await;
    }
}

mod postgres {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_killed_pipeline_resumes_exactly_once() {
        let db = crate::TestDb::postgres().await;
        crate::a_killed_pipeline_resumes_exactly_once(&db.url).await;
    }

    /// Several brokers share a database on PostgreSQL only.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_coordinators_death_leaves_the_transaction_to_another_broker() {
        let db = crate::TestDb::postgres().await;
        crate::a_coordinators_death_leaves_the_transaction_to_another_broker(&db.url).await;
    }
}
