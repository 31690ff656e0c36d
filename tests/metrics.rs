//! `GET /metrics` after real traffic on both doors: librdkafka produces and
//! consumes in a group, HTTP clients push, pop and ack; the scrape is
//! parsed as the text exposition format and the families must have moved.
//! Lag appears for groups that are behind and goes to 0 once they catch up.

#[path = "support/exposition.rs"]
mod exposition;
mod support;

use std::time::{Duration, Instant};

use exposition::Scrape;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::{Offset, TopicPartitionList};
use serde_json::{json, Value};
use support::kafka::{create_topic, produce_numbered};
use support::{Broker, TestDb};

const TIMEOUT: Duration = Duration::from_secs(30);

/// A short initial rebalance delay: the group test needs one rebalance.
const FLAGS: &[&str] = &["--group-initial-rebalance-delay-ms", "100"];

async fn scrape(broker: &Broker) -> Scrape {
    let (status, content_type, body) = broker.fetch("/metrics").await;
    assert!(status.is_success());
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    Scrape::parse(&body)
}

/// Pops up to `batch` messages of `queue` for `group` and acks them; the
/// number popped.
async fn pop_and_ack(broker: &Broker, queue: &str, group: &str, batch: usize) -> usize {
    let response = reqwest::get(format!(
        "{}/api/v1/pop/queue/{queue}?batch={batch}&consumerGroup={group}&wait=true&timeout=200",
        broker.http
    ))
    .await
    .expect("pop");
    if response.status() == reqwest::StatusCode::NO_CONTENT {
        return 0;
    }
    let popped: Value = response.json().await.expect("pop body");
    let messages = popped["messages"].as_array().expect("messages").clone();
    let acks: Vec<Value> = messages
        .iter()
        .map(|m| {
            json!({
                "transactionId": m["transactionId"],
                "partitionId": m["partitionId"],
                "leaseId": m["leaseId"],
                "status": "completed",
            })
        })
        .collect();
    let answers = broker
        .post(
            "/api/v1/ack/batch",
            json!({"consumerGroup": group, "acknowledgments": acks}),
        )
        .await;
    let answers = answers.as_array().expect("one answer per ack");
    assert!(
        answers.len() == messages.len() && answers.iter().all(|a| a["success"] == true),
        "{answers:?}"
    );
    messages.len()
}

fn client(broker: &Broker) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", &broker.kafka)
        .set("broker.address.family", "v4")
        .set("topic.metadata.refresh.interval.ms", "1000");
    c
}

/// Commits `offset` on partition 0 of `topic` for `group`, from outside it.
fn commit_from_outside(broker: &Broker, group: &str, topic: &str, offset: i64) {
    let tool: BaseConsumer = client(broker)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Offset(offset))
        .expect("tpl");
    tool.commit(&tpl, CommitMode::Sync).expect("commit");
}

/// Waits until the scrape satisfies `done` (figures read at scrape time
/// follow commits at once; group membership follows the client's pace).
async fn scrape_until(broker: &Broker, what: &str, done: impl Fn(&Scrape) -> bool) -> Scrape {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let s = scrape(broker).await;
        if done(&s) {
            return s;
        }
        assert!(Instant::now() < deadline, "{what}: never seen");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn families_move_with_kafka_and_http_traffic(broker: &Broker) {
    let before = scrape(broker).await;
    assert!(before.sum("process_resident_memory_bytes", &[]) > 0.0);

    // Kafka: 20 records produced, a group that committed 5 of them.
    create_topic(&broker.kafka, "orders", 1).await;
    produce_numbered(&broker.kafka, "orders", "order", 20, 1).await;
    commit_from_outside(broker, "billing", "orders", 5);

    // HTTP: 10 messages pushed, a group that consumed 4 of them.
    let items: Vec<Value> = (0..10)
        .map(|n| json!({"queue": "emails", "payload": {"n": n}}))
        .collect();
    broker.post("/api/v1/push", json!({"items": items})).await;
    assert_eq!(pop_and_ack(broker, "emails", "mailer", 4).await, 4);

    let behind = scrape(broker).await;
    assert_eq!(behind.types["queen_kafka_requests_total"], "counter");
    assert_eq!(
        behind.types["queen_storage_commit_duration_seconds"],
        "histogram"
    );
    let lag = |s: &Scrape, group: &str, topic: &str| {
        s.get(
            "queen_consumer_group_lag",
            &[("group", group), ("topic", topic)],
        )
    };
    assert_eq!(
        lag(&behind, "billing", "orders"),
        Some(15.0),
        "Kafka group behind"
    );
    assert_eq!(
        lag(&behind, "mailer", "emails"),
        Some(6.0),
        "native group behind"
    );
    let topic = |s: &Scrape, name: &str, topic: &str| s.get(name, &[("topic", topic)]);
    assert_eq!(
        topic(&behind, "queen_topic_high_watermark", "orders"),
        Some(20.0)
    );
    assert_eq!(
        topic(&behind, "queen_topic_high_watermark", "emails"),
        Some(10.0)
    );
    assert_eq!(
        topic(&behind, "queen_topic_partitions", "orders"),
        Some(1.0)
    );
    assert_eq!(
        topic(&behind, "queen_topic_log_start_offset", "orders"),
        Some(0.0)
    );
    assert!(topic(&behind, "queen_topic_stored_bytes", "orders").is_some_and(|b| b > 20.0 * 7.0));
    assert!(
        behind
            .matching("queen_consumer_group_lag", &[])
            .all(|(labels, _)| labels.len() == 2),
        "per topic by default: no partition label"
    );

    // What moved, by door.
    let moved =
        |name: &str, labels: &[(&str, &str)]| behind.sum(name, labels) - before.sum(name, labels);
    assert_eq!(moved("queen_records_in_total", &[("door", "kafka")]), 20.0);
    assert_eq!(moved("queen_records_in_total", &[("door", "http")]), 10.0);
    assert_eq!(moved("queen_records_out_total", &[("door", "http")]), 4.0);
    assert!(moved("queen_bytes_in_total", &[("door", "kafka")]) >= 20.0 * 7.0);
    assert!(moved("queen_bytes_in_total", &[("door", "http")]) >= 10.0 * 7.0);
    assert!(moved("queen_bytes_out_total", &[("door", "http")]) > 0.0);
    assert_eq!(
        moved("queen_produce_batch_records_count", &[("door", "http")]),
        1.0
    );
    assert!(moved("queen_produce_batch_records_count", &[("door", "kafka")]) >= 1.0);
    assert_eq!(
        moved("queen_produce_batch_records_sum", &[("door", "kafka")]),
        20.0
    );
    assert!(
        moved(
            "queen_long_poll_duration_seconds_count",
            &[("door", "http")]
        ) >= 1.0
    );

    // Kafka requests per API and version; latency observed for each.
    let produce_requests = moved("queen_kafka_requests_total", &[("api", "Produce")]);
    assert!(produce_requests >= 1.0);
    assert_eq!(
        moved(
            "queen_kafka_request_duration_seconds_count",
            &[("api", "Produce")]
        ),
        produce_requests
    );
    assert!(moved("queen_kafka_requests_total", &[("api", "Metadata")]) >= 1.0);
    assert!(moved("queen_kafka_requests_total", &[("api", "OffsetCommit")]) >= 1.0);
    assert!(behind
        .matching("queen_kafka_requests_total", &[("api", "Produce")])
        .all(|(labels, _)| labels
            .iter()
            .any(|(k, v)| k == "version" && v.parse::<i16>().is_ok())));
    assert_eq!(moved("queen_kafka_request_errors_total", &[]), 0.0);

    // HTTP requests by route template, never by raw path.
    assert_eq!(
        moved(
            "queen_http_requests_total",
            &[
                ("route", "/api/v1/push"),
                ("method", "POST"),
                ("status", "201")
            ]
        ),
        1.0
    );
    assert_eq!(
        moved(
            "queen_http_requests_total",
            &[("route", "/api/v1/pop/queue/{queue}"), ("status", "200")]
        ),
        1.0
    );
    assert!(
        behind
            .matching("queen_http_requests_total", &[])
            .all(|(labels, _)| labels.iter().all(|(_, v)| !v.contains("emails"))),
        "no raw paths as labels"
    );
    assert!(
        moved(
            "queen_http_request_duration_seconds_count",
            &[("route", "/api/v1/ack/batch")]
        ) >= 1.0
    );

    // Storage: group commits and their sizes, pools, the database.
    assert!(moved("queen_storage_commit_duration_seconds_count", &[]) >= 2.0);
    assert!(moved("queen_storage_group_commit_records_sum", &[]) >= 30.0);
    assert!(moved("queen_db_pool_acquire_duration_seconds_count", &[]) >= 1.0);
    assert!(behind.sum("queen_db_pool_max_connections", &[]) >= 1.0);
    assert!(behind.sum("queen_database_size_bytes", &[]) > 0.0);
    assert!(behind.sum("process_cpu_seconds_total", &[]) > 0.0);
    assert_eq!(behind.sum("queen_metrics_scrape_errors_total", &[]), 0.0);

    // Both groups catch up: a Kafka member reads everything and commits,
    // the HTTP group pops and acks the rest.
    let member: BaseConsumer = client(broker)
        .set("group.id", "billing")
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", "100")
        .create()
        .expect("member");
    member.subscribe(&["orders"]).expect("subscribe");
    let mut read = 0;
    let deadline = Instant::now() + TIMEOUT;
    while read < 15 {
        assert!(
            Instant::now() < deadline,
            "only {read} of 15 records arrived"
        );
        if let Some(m) = member.poll(Duration::from_millis(100)) {
            m.expect("record");
            read += 1;
        }
    }
    member
        .commit_consumer_state(CommitMode::Sync)
        .expect("commit");
    while pop_and_ack(broker, "emails", "mailer", 100).await > 0 {}

    let caught_up = scrape_until(broker, "a member in group billing", |s| {
        s.get("queen_kafka_group_members", &[("group", "billing")]) == Some(1.0)
    })
    .await;
    assert_eq!(lag(&caught_up, "billing", "orders"), Some(0.0));
    assert_eq!(lag(&caught_up, "mailer", "emails"), Some(0.0));
    assert!(
        caught_up.sum(
            "queen_kafka_group_rebalances_total",
            &[("group", "billing")]
        ) >= 1.0
    );
    assert!(caught_up.sum("queen_connections_open", &[("door", "kafka")]) >= 1.0);
    assert!(caught_up.sum("queen_connections_open", &[("door", "http")]) >= 1.0);
    let delivered = caught_up.sum("queen_records_out_total", &[("door", "kafka")])
        - before.sum("queen_records_out_total", &[("door", "kafka")]);
    assert!(delivered >= 15.0, "{delivered}");
    assert!(
        caught_up.sum(
            "queen_long_poll_duration_seconds_count",
            &[("door", "kafka")]
        ) >= 1.0,
        "librdkafka's fetches wait"
    );
    assert!(
        caught_up.sum("queen_kafka_requests_total", &[("api", "Fetch")])
            >= caught_up.sum(
                "queen_long_poll_duration_seconds_count",
                &[("door", "kafka")]
            ),
    );
    documented(&caught_up);
}

/// Every family a scrape shows and every one the Grafana dashboard
/// queries is documented in the README's table.
fn documented(scrape: &Scrape) {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).expect("README");
    let dashboard =
        std::fs::read_to_string(format!("{root}/ops/grafana/queen.json")).expect("dashboard");
    let row = |family: &str| readme.contains(&format!("| `{family}` |"));
    for family in scrape.types.keys() {
        assert!(row(family), "{family} is not documented in README.md");
    }
    let mut queried = 0;
    for (i, _) in dashboard
        .match_indices("queen_")
        .chain(dashboard.match_indices("process_"))
    {
        let name: String = dashboard[i..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .unwrap_or(&name);
        assert!(
            row(family),
            "the dashboard queries {name}, not in README.md"
        );
        queried += 1;
    }
    assert!(queried > 30, "the dashboard queries {queried} series");
}

/// Pushes `ids` to `queue` (its default one-hour window), 1,000 per request.
async fn push_ids(broker: &Broker, queue: &str, ids: std::ops::Range<usize>) -> Vec<Value> {
    let mut answers = Vec::new();
    let ids: Vec<usize> = ids.collect();
    for chunk in ids.chunks(1000) {
        let items: Vec<Value> = chunk
            .iter()
            .map(|n| json!({"queue": queue, "transactionId": format!("id-{n}"), "payload": {"n": n}}))
            .collect();
        let answer = broker.post("/api/v1/push", json!({"items": items})).await;
        answers.extend(answer.as_array().expect("push answers").iter().cloned());
    }
    answers
}

/// The dedup index's counters move as a window fills: once a partition's
/// ids are sealed into a run, every pushed id probes its filter, and a
/// duplicate of a sealed id is a "maybe" that reads a page.
async fn dedup_counters_move_as_a_window_fills(broker: &Broker) {
    let count = |s: &Scrape, name: &str| s.sum(name, &[]);
    // More than one tail (16,384 ids): the first ones are sealed into a run.
    push_ids(broker, "orders", 0..20_000).await;
    let before = scrape(broker).await;
    let fresh = push_ids(broker, "orders", 20_000..21_000).await;
    assert!(fresh.iter().all(|a| a["status"] == "queued"), "{fresh:?}");
    let after_fresh = scrape(broker).await;
    let probes = count(&after_fresh, "queen_dedup_filter_probes_total")
        - count(&before, "queen_dedup_filter_probes_total");
    assert!(probes >= 1000.0, "1,000 fresh ids probed {probes} filters");

    let again = push_ids(broker, "orders", 0..10).await;
    assert!(
        again.iter().all(|a| a["status"] == "duplicate"),
        "{again:?}"
    );
    let after = scrape(broker).await;
    for name in [
        "queen_dedup_filter_maybes_total",
        "queen_dedup_pages_read_total",
    ] {
        let moved = count(&after, name) - count(&after_fresh, name);
        assert!(
            moved >= 1.0,
            "{name} moved by {moved} for 10 sealed duplicates"
        );
    }
    documented(&after);
}

support::broker_scenarios!(
    crate::FLAGS;
    families_move_with_kafka_and_http_traffic,
    dedup_counters_move_as_a_window_fills,
);

/// With `--metrics-per-partition`, topic and lag series name the partition.
async fn partitions_are_labelled_on_request(db: &TestDb) {
    let broker = Broker::start(&db.url, &["--metrics-per-partition"]);
    let items: Vec<Value> = (0..6)
        .map(|n| {
            let partition = ["a", "b"][n % 2];
            json!({"queue": "tasks", "partition": partition, "payload": n})
        })
        .collect();
    broker.post("/api/v1/push", json!({"items": items})).await;
    assert_eq!(pop_and_ack(&broker, "tasks", "workers", 1).await, 1);
    let s = scrape(&broker).await;
    for p in ["a", "b"] {
        assert_eq!(
            s.get(
                "queen_topic_high_watermark",
                &[("topic", "tasks"), ("partition", p)]
            ),
            Some(3.0)
        );
    }
    assert_eq!(
        s.get("queen_topic_partitions", &[("topic", "tasks")]),
        Some(2.0)
    );
    let lag: f64 = s
        .matching(
            "queen_consumer_group_lag",
            &[("group", "workers"), ("topic", "tasks")],
        )
        .map(|(labels, v)| {
            assert!(labels.iter().any(|(k, _)| k == "partition"), "{labels:?}");
            v
        })
        .sum();
    assert_eq!(lag, 2.0, "the popped partition's other two messages");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_are_labelled_on_request_sqlite() {
    partitions_are_labelled_on_request(&TestDb::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_are_labelled_on_request_postgres() {
    partitions_are_labelled_on_request(&TestDb::postgres().await).await;
}
