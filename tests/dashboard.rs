//! The dashboard at `/`, in a real browser: a broker with data on both
//! doors (a Kafka topic whose consumer group has a live member and
//! committed offsets, a native queue with a dead letter) is opened in
//! headless Chromium, and the rendered DOM must show the topic's
//! partitions, the group's lag and the dead letter's payload. A screenshot
//! is saved under the target directory. Also the API routes the dashboard
//! added (`/api/v1/brokers`, `/api/v1/throughput`, `/api/v1/kafka/groups`)
//! and the embedded assets.
//!
//! Chromium must be installed (`scripts/setup` installs Debian's
//! `chromium`): without it the browser test fails, it never skips.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::{Offset, TopicPartitionList};
use serde_json::{json, Value};
use support::kafka::{create_topic, produce_numbered};
use support::Broker;

const TIMEOUT: Duration = Duration::from_secs(30);

/// A short initial rebalance delay: the group gets its member at once.
const FLAGS: &[&str] = &["--group-initial-rebalance-delay-ms", "100"];

support::broker_scenarios!(crate::FLAGS;
    the_browser_shows_topics_partitions_lag_and_dead_letters,
    brokers_alive_list_this_broker,
    throughput_counts_what_each_door_moved,
    the_page_and_its_assets_are_embedded,
);

/// The Chromium binary: `QUEEN_TEST_CHROMIUM`, else `chromium` on the PATH.
fn chromium() -> String {
    std::env::var("QUEEN_TEST_CHROMIUM").unwrap_or_else(|_| "chromium".to_owned())
}

/// Runs headless Chromium on `url` with `args` until it exits; its stdout.
/// Virtual time lets the page's scripts run (and their fetches finish)
/// before the DOM is dumped or the screenshot taken.
fn run_chromium(url: &str, args: &[&str]) -> String {
    let profile = tempfile::tempdir().expect("a profile directory");
    let mut child = Command::new(chromium())
        .args(["--headless", "--disable-gpu", "--no-first-run"])
        // Tests often run as root (containers, CI), where the sandbox
        // refuses to start.
        .arg("--no-sandbox")
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--virtual-time-budget=4000")
        .args(args)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run Chromium ({}: {e}). The dashboard test needs a headless Chromium: \
                 run scripts/setup (installs Debian's `chromium`) or set QUEEN_TEST_CHROMIUM",
                chromium()
            )
        });
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match child.try_wait().expect("waiting for Chromium") {
            Some(_) => break,
            None if Instant::now() > deadline => {
                let _ = child.kill();
                panic!("Chromium did not finish within 60 s");
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    let output = child.wait_with_output().expect("Chromium's output");
    assert!(
        output.status.success(),
        "Chromium failed: {}",
        output.status
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn client(broker: &Broker) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", &broker.kafka)
        .set("broker.address.family", "v4");
    c
}

/// `orders`: 3 partitions holding 7, 7 and 6 records; group `billing` with
/// one live member (returned: dropping it leaves the group) that committed
/// 2, 3 and 0, so 15 records behind.
async fn kafka_topic_with_a_lagging_group(broker: &Broker) -> BaseConsumer {
    create_topic(&broker.kafka, "orders", 3).await;
    produce_numbered(&broker.kafka, "orders", "order", 20, 3).await;
    let member: BaseConsumer = client(broker)
        .set("group.id", "billing")
        .set("client.id", "billing-service")
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    member.subscribe(&["orders"]).expect("subscribe");
    let deadline = Instant::now() + TIMEOUT;
    while member.assignment().map_or(0, |a| a.count()) < 3 {
        assert!(
            Instant::now() < deadline,
            "billing never got its partitions"
        );
        let _ = member.poll(Duration::from_millis(100));
    }
    let mut offsets = TopicPartitionList::new();
    for (partition, offset) in [(0, 2), (1, 3), (2, 0)] {
        offsets
            .add_partition_offset("orders", partition, Offset::Offset(offset))
            .expect("offset");
    }
    member.commit(&offsets, CommitMode::Sync).expect("commit");
    member
}

/// `emails`: one message that failed twice for group `workers` and went to
/// the dead-letter queue.
async fn native_queue_with_a_dead_letter(broker: &Broker) {
    broker
        .post(
            "/api/v1/configure",
            json!({"queue": "emails", "options": {"retryLimit": 1, "retryDelay": 0}}),
        )
        .await;
    broker
        .post(
            "/api/v1/push",
            json!({"items": [{"queue": "emails", "transactionId": "mail-7",
            "payload": {"to": "ada@example.com", "subject": "poison-pill-42"}}]}),
        )
        .await;
    for attempt in 1..=2 {
        let pop = broker
            .get("/api/v1/pop/queue/emails?batch=1&consumerGroup=workers")
            .await;
        let m = &pop["messages"][0];
        let answer = broker
            .post(
                "/api/v1/ack",
                json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                "leaseId": m["leaseId"], "consumerGroup": "workers",
                "status": "failed", "error": format!("smtp refused {attempt}")}),
            )
            .await;
        assert_eq!(answer[0]["dlq"], attempt == 2, "{answer}");
    }
}

/// The part of `dom` from the first `start` on, up to `end` (exclusive).
fn between<'a>(dom: &'a str, start: &str, end: &str) -> &'a str {
    let from = dom
        .find(start)
        .unwrap_or_else(|| panic!("{start:?} is not in the rendered page:\n{dom}"));
    let rest = &dom[from..];
    &rest[..rest[start.len()..]
        .find(end)
        .map_or(rest.len(), |n| n + start.len())]
}

/// The table rows (`<tr>…</tr>`) of an HTML fragment, header row included.
fn rows(html: &str) -> Vec<&str> {
    html.split("<tr>")
        .skip(1)
        .map(|r| r.split("</tr>").next().unwrap_or(r))
        .collect()
}

/// The cells of a row, as text.
fn cells(row: &str) -> Vec<String> {
    row.split("<td")
        .skip(1)
        .map(|c| {
            let inner = c.split_once('>').map_or("", |(_, rest)| rest);
            let inner = inner.split("</td>").next().unwrap_or(inner);
            // Strip nested tags (badges, <pre>) down to their text.
            let mut text = String::new();
            let mut in_tag = false;
            for ch in inner.chars() {
                match ch {
                    '<' => in_tag = true,
                    '>' => in_tag = false,
                    _ if !in_tag => text.push(ch),
                    _ => {}
                }
            }
            text.replace("&amp;", "&").replace("&quot;", "\"")
        })
        .collect()
}

/// The sum of one door's `field` over every sample of a throughput answer.
fn throughput_total(answer: &Value, door: &str, field: &str) -> u64 {
    answer["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .map(|s| s[door][field].as_u64().expect("a count"))
        .sum()
}

fn screenshot_path(broker: &Broker) -> PathBuf {
    let backend = broker
        .listening
        .rsplit("database=")
        .next()
        .unwrap_or("unknown");
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("dashboard-{backend}.png"))
}

async fn the_browser_shows_topics_partitions_lag_and_dead_letters(broker: &Broker) {
    let member = kafka_topic_with_a_lagging_group(broker).await;
    native_queue_with_a_dead_letter(broker).await;

    // The address also asks for a message lookup, which the page runs.
    let url = format!("{}/#lookup/emails/mail-7", broker.http);
    let dom = tokio::task::spawn_blocking({
        let url = url.clone();
        move || run_chromium(&url, &["--dump-dom"])
    })
    .await
    .expect("Chromium ran");
    // Kept beside the screenshot, for whoever reads a failure.
    let dump = screenshot_path(broker).with_extension("html");
    std::fs::write(&dump, &dom).expect("the DOM saved");
    assert!(
        !dom.contains("refresh failed"),
        "the page's refresh failed:\n{dom}"
    );

    // The topic with its three partitions: Kafka index, log start, high
    // watermark and depth (all unconsumed: no native pop read them).
    let orders = between(&dom, r#"data-queue="orders""#, "</table>");
    let partitions: Vec<Vec<String>> = rows(orders).iter().map(|r| cells(r)).skip(1).collect();
    let columns: Vec<(String, String, String)> = partitions
        .iter()
        .map(|c| (c[1].clone(), c[2].clone(), c[3].clone()))
        .collect();
    assert_eq!(
        columns,
        [("0", "0", "7"), ("1", "0", "7"), ("2", "0", "6")].map(|(a, b, c)| (
            a.to_owned(),
            b.to_owned(),
            c.to_owned()
        )),
        "orders' partitions (Kafka index, log start, high watermark):\n{orders}"
    );

    // Both kinds of group, with their lag.
    let groups = between(&dom, r#"<table id="group-list">"#, "</table>");
    let group = |name: &str| {
        rows(groups)
            .iter()
            .map(|r| cells(r))
            .find(|c| c.first().map(String::as_str) == Some(name))
            .unwrap_or_else(|| panic!("no row for group {name}:\n{groups}"))
    };
    let billing = group("billing");
    assert_eq!(billing[1], "Kafka · Stable", "{billing:?}");
    assert_eq!(billing[2], "orders");
    assert!(billing[3].starts_with("billing-service@"), "{billing:?}");
    assert_eq!(billing[4], "15", "billing's lag: {billing:?}");
    let workers = group("workers");
    assert_eq!(
        (workers[1].as_str(), workers[2].as_str()),
        ("native", "emails")
    );
    assert_eq!(workers[4], "0", "the dead letter moved workers past it");
    let positions = between(&dom, "<h3>billing on orders</h3>", "</table>");
    let committed: Vec<(String, String)> = rows(positions)
        .iter()
        .map(|r| cells(r))
        .skip(1)
        .map(|c| (c[1].clone(), c[2].clone()))
        .collect();
    assert_eq!(
        committed,
        [("2", "5"), ("3", "4"), ("0", "6")].map(|(a, b)| (a.to_owned(), b.to_owned())),
        "billing's committed offsets and lag per partition:\n{positions}"
    );

    // The dead letter with its payload and error.
    let dlq = between(&dom, r#"<div id="dlq">"#, "</table>");
    let letter = rows(dlq)
        .iter()
        .map(|r| cells(r))
        .find(|c| c.first().map(String::as_str) == Some("mail-7"))
        .unwrap_or_else(|| panic!("no dead letter mail-7:\n{dlq}"));
    assert_eq!(letter[2], "workers");
    assert_eq!(letter[3], "smtp refused 2");
    assert!(letter[6].contains("poison-pill-42"), "payload: {letter:?}");

    // The lookup by transaction id found the dead-lettered message.
    let found = between(&dom, r#"<div id="lookup-result">"#, "</div>");
    assert!(
        found.contains(r#""status": "dead_letter""#) && found.contains("poison-pill-42"),
        "lookup of mail-7:\n{found}"
    );

    // A picture for people, once the throughput chart has the produce.
    let deadline = Instant::now() + TIMEOUT;
    while throughput_total(
        &broker.get("/api/v1/throughput").await,
        "kafka",
        "recordsIn",
    ) < 20
    {
        assert!(
            Instant::now() < deadline,
            "the produce never reached the throughput history"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let path = screenshot_path(broker);
    let shot = format!("--screenshot={}", path.display());
    tokio::task::spawn_blocking(move || run_chromium(&url, &[&shot, "--window-size=1400,1700"]))
        .await
        .expect("Chromium ran");
    let size = std::fs::metadata(&path).map_or(0, |m| m.len());
    assert!(
        size > 10_000,
        "screenshot {} is {size} bytes",
        path.display()
    );
    println!("dashboard screenshot: {}", path.display());
    drop(member);
}

async fn brokers_alive_list_this_broker(broker: &Broker) {
    let answer = broker.get("/api/v1/brokers").await;
    let brokers = answer["brokers"].as_array().expect("brokers");
    assert_eq!(brokers.len(), 1, "{answer}");
    let port: i64 = broker
        .kafka
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("Kafka port");
    assert_eq!(brokers[0]["port"], port);
    assert_eq!(brokers[0]["self"], true);
    assert_eq!(brokers[0]["id"], answer["nodeId"]);
    assert!(answer["clusterId"].as_str().is_some_and(|c| !c.is_empty()));

    // The Kafka group's membership, as the coordinator holds it.
    let none = broker.get("/api/v1/kafka/groups").await;
    assert_eq!(none, json!({"groups": [], "total": 0}));
    let member = kafka_topic_with_a_lagging_group(broker).await;
    let groups = broker.get("/api/v1/kafka/groups").await;
    assert_eq!(groups["total"], 1, "{groups}");
    let billing = &groups["groups"][0];
    assert_eq!(billing["name"], "billing");
    assert_eq!(billing["state"], "Stable");
    assert_eq!(billing["protocolType"], "consumer");
    assert_eq!(billing["members"][0]["clientId"], "billing-service");
    drop(member);
}

async fn throughput_counts_what_each_door_moved(broker: &Broker) {
    let items: Vec<Value> = (0..10)
        .map(|n| json!({"queue": "metered", "payload": {"n": n}}))
        .collect();
    broker.post("/api/v1/push", json!({"items": items})).await;
    // The pushes land in the next sample: wait for it (one interval, 5 s).
    let deadline = Instant::now() + TIMEOUT;
    let total = throughput_total;
    let answer = loop {
        let answer = broker.get("/api/v1/throughput").await;
        if total(&answer, "http", "recordsIn") > 0 {
            break answer;
        }
        assert!(
            Instant::now() < deadline,
            "no sample counted the push: {answer}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(answer["intervalSeconds"], 5);
    assert_eq!(answer["windowSeconds"], 900);
    assert_eq!(total(&answer, "http", "recordsIn"), 10);
    assert!(total(&answer, "http", "bytesIn") >= 10 * 7);
    assert_eq!(total(&answer, "kafka", "recordsIn"), 0);
    let samples = answer["samples"].as_array().expect("samples");
    assert!(
        samples
            .windows(2)
            .all(|w| w[0]["at"].as_i64() < w[1]["at"].as_i64()),
        "oldest first: {answer}"
    );
}

async fn the_page_and_its_assets_are_embedded(broker: &Broker) {
    let fetch = |path: &'static str| broker.fetch(path);
    let (status, content_type, page) = fetch("/").await;
    assert_eq!(status, 200);
    assert!(content_type.starts_with("text/html"), "{content_type}");
    assert!(page.contains(r#"<script src="/dashboard/dashboard.js">"#));
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "no CDN"
    );
    let (status, content_type, script) = fetch("/dashboard/dashboard.js").await;
    assert_eq!(status, 200);
    assert!(
        content_type.starts_with("text/javascript"),
        "{content_type}"
    );
    assert!(script.contains("/api/v1/throughput"));
    let (status, content_type, _) = fetch("/dashboard/dashboard.css").await;
    assert_eq!(
        (status.as_u16(), content_type.starts_with("text/css")),
        (200, true)
    );
    let (status, _, body) = fetch("/dashboard/../Cargo.toml").await;
    assert_eq!(status, 404, "{body}");
    let (status, _, body) = fetch("/dashboard/secrets.txt").await;
    assert_eq!(status, 404);
    let error: Value = serde_json::from_str(&body).expect("a JSON error");
    assert_eq!(error["code"], "no_such_route");
}
