//! A mixed soak: Kafka and the native HTTP API on one broker for minutes, to
//! see whether anything degrades as the database grows.
//!
//! On a fresh broker (the release binary) on a fresh database, for
//! `--minutes` at once:
//! - a librdkafka producer sends `--rate` records/s (rate-limited) of 100
//!   bytes, `acks=all`, round-robin to a topic of 4 partitions, and one
//!   librdkafka consumer in a consumer group (auto-commit) consumes it;
//! - one HTTP client loops: push 100 messages with fresh transaction ids to a
//!   native queue with the default one-hour dedup window, pop them
//!   (`batch=100&wait=false`), ack them; a cycle is those three.
//!
//! Every minute it prints the HTTP cycles/s, the Kafka records/s produced
//! (acknowledged by the broker) and consumed, how far the consumer is
//! behind, and the broker's resident memory; at the end the ratio of the last
//! minute's HTTP cycle rate to the first's and the consumer's lag once the
//! producer has stopped and flushed.
//!
//! `cargo bench --bench soak` runs 10 minutes on SQLite; `-- --backend
//! postgres`, `--minutes N` and `--rate N` change that.

#[path = "../tests/support/mod.rs"]
mod support;

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{ack_completed, configure_queue, fresh_db, peak_rss_mib, rss_mib, Flags, Popped};
use rdkafka::client::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::Offset;
use support::kafka::create_topic;
use support::Broker;

const TOPIC: &str = "soak";
const PARTITIONS: i32 = 4;
const QUEUE: &str = "soak-native";
const PER_CYCLE: usize = 100;

struct Args {
    backend: String,
    minutes: u32,
    rate: u64,
}

fn args() -> Args {
    let flags = Flags::parse();
    Args {
        // One backend: a soak is long, and SQLite is the default deployment.
        backend: flags.get("backend", "sqlite".to_owned()),
        minutes: flags.get("minutes", 10).max(1),
        rate: flags.get("rate", 20_000).max(1),
    }
}

/// What the loads have done so far, read by the minute reports.
#[derive(Default)]
struct Counters {
    cycles: AtomicU64,
    produced: AtomicU64,
    delivery_errors: AtomicU64,
    consumed: AtomicU64,
}

/// Counts the producer's delivery reports: a record is produced once the
/// broker has acknowledged it, not when librdkafka queued it.
struct Delivered(Arc<Counters>);

impl ClientContext for Delivered {}

impl ProducerContext for Delivered {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        let counter = match result {
            Ok(_) => &self.0.produced,
            Err(_) => &self.0.delivery_errors,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

fn kafka_client(kafka: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", kafka)
        .set("broker.address.family", "v4");
    c
}

/// Sends `rate` records/s until `stop`, then flushes.
fn produce(kafka: &str, rate: u64, counters: Arc<Counters>, stop: Arc<AtomicBool>) {
    let producer: ThreadedProducer<Delivered> = kafka_client(kafka)
        .set("acks", "all")
        .set("linger.ms", "5")
        .create_with_context(Delivered(counters))
        .expect("producer");
    let payload = [b'x'; 100];
    let started = Instant::now();
    let mut sent: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        // Sends what the schedule says is due by now, so a slow send is made
        // up for and the rate holds on average; if the broker cannot keep
        // up, the produced figure shows it.
        let due = (started.elapsed().as_secs_f64() * rate as f64) as u64;
        while sent < due && !stop.load(Ordering::Relaxed) {
            let mut record = BaseRecord::<(), [u8]>::to(TOPIC)
                .payload(&payload[..])
                .partition((sent % PARTITIONS as u64) as i32);
            while let Err((_, r)) = producer.send(record) {
                // librdkafka's queue is full: let deliveries drain it.
                record = r;
                producer.poll(Duration::from_millis(1));
            }
            sent += 1;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    producer.flush(Duration::from_secs(60)).expect("flush");
}

/// Consumes the topic in group `soak` until `stop`; answers the lag then
/// (records stored and not yet consumed, over the four partitions).
fn consume(kafka: &str, counters: Arc<Counters>, stop: Arc<AtomicBool>) -> i64 {
    let consumer: BaseConsumer = kafka_client(kafka)
        .set("group.id", "soak")
        .set("auto.offset.reset", "earliest")
        .create()
        .expect("consumer");
    consumer.subscribe(&[TOPIC]).expect("subscribe");
    while !stop.load(Ordering::Relaxed) {
        if let Some(m) = consumer.poll(Duration::from_millis(100)) {
            m.expect("consumed record");
            counters.consumed.fetch_add(1, Ordering::Relaxed);
        }
    }
    let positions = consumer.position().expect("consumer position");
    let mut lag = 0;
    for p in 0..PARTITIONS {
        let (low, high) = consumer
            .fetch_watermarks(TOPIC, p, Duration::from_secs(10))
            .expect("watermarks");
        // A partition the consumer holds no position on (never assigned, or
        // nothing consumed yet) is behind by everything it stores.
        let position = positions
            .find_partition(TOPIC, p)
            .and_then(|e| match e.offset() {
                Offset::Offset(n) => Some(n),
                _ => None,
            })
            .unwrap_or(low);
        lag += high - position;
    }
    // Leave the group and see the partitions revoked before the drop: a drop
    // that meets a revocation can hang in rust-rdkafka's close (see
    // tests/kafka_groups.rs).
    consumer.unsubscribe();
    let leaving = Instant::now();
    while consumer.assignment().is_ok_and(|a| a.count() > 0)
        && leaving.elapsed() < Duration::from_secs(10)
    {
        let _ = consumer.poll(Duration::from_millis(100));
    }
    lag
}

fn txn_id(n: usize) -> String {
    format!("soak-{n:012}")
}

/// Push 100, pop them, ack them, until `stop`. Every answer is checked: the
/// cycle must get back exactly the messages it pushed, in order.
async fn http_loop(base: String, counters: Arc<Counters>, stop: Arc<AtomicBool>) {
    let client = reqwest::Client::new();
    let push_url = format!("{base}/api/v1/push");
    let pop_url = format!("{base}/api/v1/pop/queue/{QUEUE}?batch={PER_CYCLE}&wait=false");
    let ack_url = format!("{base}/api/v1/ack/batch");
    let mut cycle = 0;
    while !stop.load(Ordering::Relaxed) {
        let first = cycle * PER_CYCLE;
        let items: Vec<serde_json::Value> = (first..first + PER_CYCLE)
            .map(|n| {
                serde_json::json!({
                    "queue": QUEUE,
                    "transactionId": txn_id(n),
                    "payload": {"orderId": n, "amount": 99.5, "currency": "EUR"},
                })
            })
            .collect();
        let response = client
            .post(&push_url)
            .json(&serde_json::json!({ "items": items }))
            .send()
            .await
            .expect("push");
        let status = response.status().as_u16();
        let answer: serde_json::Value = response.json().await.expect("push answer");
        assert_eq!(status, 201, "push failed: {answer}");
        for item in answer.as_array().expect("push answer array") {
            assert_eq!(
                item["status"], "queued",
                "a fresh id was not queued: {item}"
            );
        }

        let mut next = first;
        let mut empty = 0;
        while next < first + PER_CYCLE {
            let response = client.get(&pop_url).send().await.expect("pop");
            if response.status().as_u16() == 204 {
                // The pushed messages are committed before the push answers,
                // so an empty pop here is a broker fault; a few retries only
                // rule out a momentary lease race.
                empty += 1;
                assert!(
                    empty < 100,
                    "pop found none of messages {next}.. after 100 tries"
                );
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
            let status = response.status().as_u16();
            let text = response.text().await.expect("pop answer");
            assert_eq!(status, 200, "pop failed: {text}");
            let popped: Popped = serde_json::from_str(&text).expect("pop JSON");
            for m in &popped.messages {
                assert_eq!(m.transaction_id, txn_id(next), "popped out of order");
                next += 1;
            }
            let answer = ack_completed(&client, &ack_url, None, &popped.messages).await;
            for a in answer.as_array().expect("ack answer array") {
                assert_eq!(a["success"], true, "ack refused: {a}");
            }
        }
        counters.cycles.fetch_add(1, Ordering::Relaxed);
        cycle += 1;
    }
}

/// The counters at one instant.
#[derive(Clone, Copy)]
struct Snapshot {
    at: Instant,
    cycles: u64,
    produced: u64,
    consumed: u64,
}

impl Snapshot {
    fn take(c: &Counters) -> Self {
        Self {
            at: Instant::now(),
            cycles: c.cycles.load(Ordering::Relaxed),
            produced: c.produced.load(Ordering::Relaxed),
            consumed: c.consumed.load(Ordering::Relaxed),
        }
    }
}

#[tokio::main]
async fn main() {
    let args = args();
    let backend = args.backend.as_str();
    let db = fresh_db(backend).await;
    let broker = Broker::start(&db.url, &[]);
    let pid = broker.child.id();
    create_topic(&broker.kafka, TOPIC, PARTITIONS).await;
    configure_queue(&broker.http, QUEUE, 3600).await;

    let counters = Arc::new(Counters::default());
    let stop_producing = Arc::new(AtomicBool::new(false));
    let stop_consuming = Arc::new(AtomicBool::new(false));
    let stop_http = Arc::new(AtomicBool::new(false));
    let consumer = {
        let (kafka, counters, stop) = (
            broker.kafka.clone(),
            counters.clone(),
            stop_consuming.clone(),
        );
        std::thread::spawn(move || consume(&kafka, counters, stop))
    };
    let producer = {
        let (kafka, counters, stop) = (
            broker.kafka.clone(),
            counters.clone(),
            stop_producing.clone(),
        );
        let rate = args.rate;
        std::thread::spawn(move || produce(&kafka, rate, counters, stop))
    };
    let http = tokio::spawn(http_loop(
        broker.http.clone(),
        counters.clone(),
        stop_http.clone(),
    ));

    let started = Snapshot::take(&counters);
    let mut previous = started;
    let mut http_rates = Vec::new();
    for minute in 1..=args.minutes {
        tokio::time::sleep_until((started.at + Duration::from_secs(60 * u64::from(minute))).into())
            .await;
        let now = Snapshot::take(&counters);
        let secs = now.at.duration_since(previous.at).as_secs_f64();
        let http_rate = (now.cycles - previous.cycles) as f64 / secs;
        http_rates.push(http_rate);
        let errors = counters.delivery_errors.load(Ordering::Relaxed);
        println!(
            "{backend:8} minute {minute:3}: HTTP {http_rate:7.1} cycles/s | Kafka produced {:7.0} rec/s, consumed {:7.0} rec/s, consumer behind by {} | RSS {:6.1} MiB, peak RSS {:6.1} MiB{}",
            (now.produced - previous.produced) as f64 / secs,
            (now.consumed - previous.consumed) as f64 / secs,
            now.produced.saturating_sub(now.consumed),
            rss_mib(pid),
            peak_rss_mib(pid),
            if errors > 0 { format!(" | {errors} delivery errors so far") } else { String::new() },
        );
        previous = now;
        // A load that died (its asserts panic) ends the soak at once.
        if http.is_finished() || producer.is_finished() || consumer.is_finished() {
            break;
        }
    }

    stop_http.store(true, Ordering::Relaxed);
    http.await.expect("HTTP loop");
    stop_producing.store(true, Ordering::Relaxed);
    tokio::task::spawn_blocking(move || producer.join())
        .await
        .expect("producer join")
        .expect("producer");
    stop_consuming.store(true, Ordering::Relaxed);
    let lag = tokio::task::spawn_blocking(move || consumer.join())
        .await
        .expect("consumer join")
        .expect("consumer");

    let end = Snapshot::take(&counters);
    let (first, last) = (
        http_rates.first().copied().unwrap_or(0.0),
        http_rates.last().copied().unwrap_or(0.0),
    );
    println!(
        "{backend:8} HTTP cycles: first minute {first:.1}/s, last minute {last:.1}/s, last/first {:.2}",
        last / first
    );
    println!(
        "{backend:8} Kafka: {} records produced, {} consumed, {} delivery errors; consumer lag once the producer stopped: {lag} records",
        end.produced,
        end.consumed,
        counters.delivery_errors.load(Ordering::Relaxed),
    );
    println!(
        "{backend:8} {} HTTP cycles ({} messages pushed, popped and acked); broker peak RSS {:.1} MiB",
        end.cycles,
        end.cycles * PER_CYCLE as u64,
        peak_rss_mib(pid)
    );
    drop(broker);
}
