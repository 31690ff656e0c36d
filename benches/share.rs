//! KIP-932 share-group throughput against the release binary: 20,000
//! records of ~10 bytes on 8 partitions, consumed by 1, 4 and 16 raw
//! share consumers (`tests/support/share.rs`; each fetches up to 500
//! records, then acknowledges them all with ACCEPT in a ShareAcknowledge
//! of its own), each run a fresh share group over the same records, on
//! SQLite and PostgreSQL. Prints records/s and the acknowledgement cost
//! per record (the time ShareAcknowledge took, divided by the records it
//! accepted, averaged over the consumers) and the broker's peak resident
//! memory.
//!
//! `cargo bench --bench share` runs everything; `-- --backend sqlite`,
//! `--records N`, `--consumers 1,4` narrow it.

#[path = "../tests/support/mod.rs"]
mod support;

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{fresh_db, peak_rss_mib, Flags};
use serde_json::json;
use support::share::{all, set_group_configs, ShareConsumer, ACCEPT};
use support::Broker;

const PARTITIONS: i64 = 8;
const TIMEOUT: Duration = Duration::from_secs(600);

/// Pushes `count` records `{"n": i}` over HTTP, 1,000 per request, spread
/// over the 8 partitions.
async fn fill(http: &str, topic: &str, count: i64) {
    let client = reqwest::Client::new();
    let mut n = 0;
    while n < count {
        let items: Vec<_> = (n..(n + 1000).min(count))
            .map(|i| json!({"queue": topic, "partition": (i % PARTITIONS).to_string(), "payload": {"n": i}}))
            .collect();
        n += items.len() as i64;
        let answer = client
            .post(format!("{http}/api/v1/push"))
            .json(&json!({ "items": items }))
            .send()
            .await
            .expect("push");
        assert!(answer.status().is_success());
    }
}

/// One run: `consumers` members of a fresh group take every record.
/// Returns (elapsed, ack seconds per record).
fn run(kafka: &str, group: &str, consumers: usize, records: usize) -> (Duration, f64) {
    set_group_configs(kafka, group, &[("share.auto.offset.reset", "earliest")]);
    let members: Vec<ShareConsumer> = (0..consumers)
        .map(|_| ShareConsumer::join(kafka, group, &["share-bench"]))
        .collect();
    let taken = Arc::new(AtomicUsize::new(0));
    let ack_cost = Arc::new(Mutex::new((Duration::ZERO, 0usize)));
    let start = Instant::now();
    let threads: Vec<_> = members
        .into_iter()
        .map(|mut member| {
            let taken = taken.clone();
            let ack_cost = ack_cost.clone();
            std::thread::spawn(move || {
                let deadline = Instant::now() + TIMEOUT;
                while taken.load(Ordering::Relaxed) < records {
                    assert!(Instant::now() < deadline, "share consumer stalled");
                    let got = member.fetch(&Default::default(), 500, 100);
                    if got.is_empty() {
                        continue;
                    }
                    let t = Instant::now();
                    let answer = member.acknowledge(&all(&got, ACCEPT));
                    let spent = t.elapsed();
                    assert_eq!(answer.error_code, 0);
                    let mut cost = ack_cost.lock().expect("cost");
                    cost.0 += spent;
                    cost.1 += got.len();
                    drop(cost);
                    taken.fetch_add(got.len(), Ordering::Relaxed);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("consumer thread");
    }
    let elapsed = start.elapsed();
    assert_eq!(taken.load(Ordering::Relaxed), records, "each record once");
    let (spent, acked) = *ack_cost.lock().expect("cost");
    (elapsed, spent.as_secs_f64() / acked.max(1) as f64)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    let flags = Flags::parse();
    let records: usize = flags.get("records", 20_000);
    let consumers: Vec<usize> = flags
        .get("consumers", "1,4,16".to_owned())
        .split(',')
        .filter_map(|c| c.parse().ok())
        .collect();
    for backend in flags.backends() {
        let db = fresh_db(&backend).await;
        let broker = Broker::start(&db.url, &[]);
        support::kafka::create_topic(&broker.kafka, "share-bench", PARTITIONS as i32).await;
        fill(&broker.http, "share-bench", records as i64).await;
        for &n in &consumers {
            let kafka = broker.kafka.clone();
            let group = format!("share-bench-{n}");
            let (elapsed, per_ack) =
                tokio::task::spawn_blocking(move || run(&kafka, &group, n, records))
                    .await
                    .expect("run");
            println!(
                "{backend:8} share group, {n:2} consumers on 8 partitions: {records} records in {elapsed:.2?}, {:>8.0} rec/s, ack {:.1} µs/record, broker peak RSS {:.0} MiB",
                records as f64 / elapsed.as_secs_f64(),
                per_ack * 1e6,
                peak_rss_mib(broker.child.id())
            );
        }
    }
}
