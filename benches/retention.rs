//! Retention and compaction over time: does the database level off while a
//! topic is written at a steady rate, and what does the work cost produce?
//!
//! On a fresh broker (the release binary) on a fresh database, a librdkafka
//! producer (`acks=all`, `linger.ms=5`) sends `--rate` records/s of 100
//! bytes for `--minutes` to a one-partition topic created with
//! `retention.ms=--retention-ms` (0: no retention, the baseline), or with
//! `--keys N`, `cleanup.policy=compact` over N keys (record i has key
//! `k{i mod N}`). Every `--sample-seconds` it prints the database's size on
//! disk (SQLite: the file with its WAL; PostgreSQL: `pg_database_size`),
//! the records the partition stores, the records/s the broker acknowledged
//! and the produce latency p50/p99 (send to acknowledgement) over the
//! sample; at the end, how much the last five samples of size and count
//! differ (the target: within 10 %), and the whole run's rate.
//!
//! `cargo bench --bench retention` runs 10 minutes at 20,000 records/s on
//! SQLite with retention.ms=60000; `-- --backend postgres`, `--rate N`
//! (0: as fast as the broker takes them), `--retention-ms 0` and
//! `--keys 10000` (with `--dirty-ratio R`, the topic's
//! `min.cleanable.dirty.ratio`, 0.5 by default) change that.
//! `QUEEN_BENCH_LOG` is the broker's log filter (default `warn`), e.g.
//! `warn,storage::committer=debug,storage::retention=debug,storage::sqlite=debug`
//! to see how long each cleaning, sweep, WAL restart and slow group commit
//! held the writer.

#[path = "../tests/support/mod.rs"]
mod support;

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{fresh_db, peak_rss_mib, Flags};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::{ClientContext, DefaultClientContext};
use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use sqlx::Connection;
use support::Broker;

const TOPIC: &str = "retained";

struct Args {
    backend: String,
    minutes: u64,
    rate: u64,
    retention_ms: i64,
    keys: u64,
    dirty_ratio: String,
    sample_seconds: u64,
}

fn args() -> Args {
    let flags = Flags::parse();
    Args {
        backend: flags.get("backend", "sqlite".to_owned()),
        minutes: flags.get("minutes", 10).max(1),
        rate: flags.get("rate", 20_000),
        retention_ms: flags.get("retention-ms", 60_000),
        keys: flags.get("keys", 0),
        dirty_ratio: flags.get("dirty-ratio", "0.5".to_owned()),
        sample_seconds: flags.get("sample-seconds", 10).max(1),
    }
}

/// Acknowledged records and their latencies (µs) since the last sample.
#[derive(Default)]
struct Delivered {
    acked: AtomicU64,
    errors: AtomicU64,
    latencies: Mutex<Vec<u32>>,
}

struct Context(Arc<Delivered>);

impl ClientContext for Context {}

impl ProducerContext for Context {
    type DeliveryOpaque = Box<Instant>;

    fn delivery(&self, result: &DeliveryResult<'_>, sent: Box<Instant>) {
        if result.is_err() {
            self.0.errors.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.0.acked.fetch_add(1, Ordering::Relaxed);
        let micros = u32::try_from(sent.elapsed().as_micros()).unwrap_or(u32::MAX);
        if let Ok(mut l) = self.0.latencies.lock() {
            l.push(micros);
        }
    }
}

fn client(kafka: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", kafka)
        .set("broker.address.family", "v4");
    c
}

async fn create(kafka: &str, args: &Args) {
    let admin: AdminClient<DefaultClientContext> = client(kafka).create().expect("admin");
    let retention = args.retention_ms.to_string();
    let mut topic = NewTopic::new(TOPIC, 1, TopicReplication::Fixed(1));
    topic = if args.keys > 0 {
        topic
            .set("cleanup.policy", "compact")
            .set("min.cleanable.dirty.ratio", &args.dirty_ratio)
    } else if args.retention_ms > 0 {
        topic.set("retention.ms", &retention)
    } else {
        topic
    };
    for r in admin
        .create_topics(&[topic], &AdminOptions::new())
        .await
        .expect("create topic")
    {
        r.expect("topic created");
    }
}

/// Sends `rate` records/s (0: as fast as librdkafka's queue drains) until
/// `stop`, then flushes.
fn produce(kafka: &str, rate: u64, keys: u64, delivered: Arc<Delivered>, stop: Arc<AtomicBool>) {
    let producer: ThreadedProducer<Context> = client(kafka)
        .set("acks", "all")
        .set("linger.ms", "5")
        .create_with_context(Context(delivered))
        .expect("producer");
    let payload = [b'x'; 100];
    let started = Instant::now();
    let mut sent: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        let due = if rate == 0 {
            sent + 1_000
        } else {
            (started.elapsed().as_secs_f64() * rate as f64) as u64
        };
        while sent < due && !stop.load(Ordering::Relaxed) {
            let key = (keys > 0).then(|| format!("k{}", sent % keys));
            let mut record = BaseRecord::<str, [u8], Box<Instant>>::with_opaque_to(
                TOPIC,
                Box::new(Instant::now()),
            )
            .payload(&payload[..])
            .partition(0);
            if let Some(k) = &key {
                record = record.key(k.as_str());
            }
            while let Err((_, r)) = producer.send(record) {
                record = r;
                producer.poll(Duration::from_millis(1));
            }
            sent += 1;
        }
        if rate > 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    producer.flush(Duration::from_secs(60)).expect("flush");
}

/// The database's size on disk, in MiB.
async fn size_mib(url: &str) -> f64 {
    let bytes: i64 = if let Some(path) = url.strip_prefix("sqlite://") {
        ["", "-wal", "-shm"]
            .iter()
            .filter_map(|s| std::fs::metadata(format!("{path}{s}")).ok())
            .map(|m| m.len() as i64)
            .sum()
    } else {
        let mut c = sqlx::PgConnection::connect(url).await.expect("connect");
        sqlx::query_scalar("SELECT pg_database_size(current_database())")
            .fetch_one(&mut c)
            .await
            .expect("database size")
    };
    bytes as f64 / (1 << 20) as f64
}

/// The records the database stores (all partitions: there is one).
async fn stored(url: &str) -> i64 {
    let sql = "SELECT CAST(COALESCE(SUM(record_count), 0) AS BIGINT) FROM segments";
    if url.starts_with("sqlite:") {
        let mut c = sqlx::SqliteConnection::connect(url).await.expect("connect");
        sqlx::query_scalar(sql)
            .fetch_one(&mut c)
            .await
            .expect("count")
    } else {
        let mut c = sqlx::PgConnection::connect(url).await.expect("connect");
        sqlx::query_scalar(sql)
            .fetch_one(&mut c)
            .await
            .expect("count")
    }
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    f64::from(sorted[i]) / 1000.0
}

/// How far apart the largest and smallest of `values` are, relative to the
/// smallest.
fn spread(values: &[f64]) -> f64 {
    let max = values.iter().copied().fold(f64::MIN, f64::max);
    let min = values.iter().copied().fold(f64::MAX, f64::min);
    if min > 0.0 {
        (max - min) / min
    } else {
        f64::INFINITY
    }
}

#[tokio::main]
async fn main() {
    let args = args();
    let backend = args.backend.as_str();
    let db = fresh_db(backend).await;
    let log = std::env::var("QUEEN_BENCH_LOG").unwrap_or_else(|_| "warn".into());
    let broker = Broker::start(&db.url, &["--log-level", &log]);
    let pid = broker.child.id();
    create(&broker.kafka, &args).await;
    let what = if args.keys > 0 {
        format!(
            "cleanup.policy=compact over {} keys, min.cleanable.dirty.ratio={}",
            args.keys, args.dirty_ratio
        )
    } else if args.retention_ms > 0 {
        format!("retention.ms={}", args.retention_ms)
    } else {
        "no retention".to_owned()
    };
    println!(
        "{backend}: {what}, {} rec/s asked for {} min",
        args.rate, args.minutes
    );

    let delivered = Arc::new(Delivered::default());
    let stop = Arc::new(AtomicBool::new(false));
    let producer = {
        let (kafka, delivered, stop) = (broker.kafka.clone(), delivered.clone(), stop.clone());
        let (rate, keys) = (args.rate, args.keys);
        std::thread::spawn(move || produce(&kafka, rate, keys, delivered, stop))
    };

    let started = Instant::now();
    let samples = args.minutes * 60 / args.sample_seconds;
    let (mut sizes, mut counts) = (Vec::new(), Vec::new());
    let mut acked_before = 0;
    let mut at_before = started;
    for i in 1..=samples {
        let due = started + Duration::from_secs(i * args.sample_seconds);
        tokio::time::sleep_until(due.into()).await;
        let now = Instant::now();
        let acked = delivered.acked.load(Ordering::Relaxed);
        let mut latencies = std::mem::take(&mut *delivered.latencies.lock().expect("latencies"));
        latencies.sort_unstable();
        let size = size_mib(&db.url).await;
        let count = stored(&db.url).await;
        let rate = (acked - acked_before) as f64 / now.duration_since(at_before).as_secs_f64();
        println!(
            "{backend:8} {:5} s: size {size:8.1} MiB | stored {count:10} records | acked {rate:8.0} rec/s | p50 {:6.1} ms, p99 {:6.1} ms",
            i * args.sample_seconds,
            percentile(&latencies, 0.5),
            percentile(&latencies, 0.99),
        );
        sizes.push(size);
        counts.push(count as f64);
        acked_before = acked;
        at_before = now;
        if producer.is_finished() {
            break;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    producer.join().expect("producer");
    let tail = |v: &[f64]| spread(&v[v.len().saturating_sub(5)..]);
    println!(
        "{backend}: {what}: {:.0} rec/s acknowledged over the run, {} delivery errors; last five samples: size spread {:.1} %, count spread {:.1} %; broker peak RSS {:.1} MiB",
        acked_before as f64 / elapsed,
        delivered.errors.load(Ordering::Relaxed),
        100.0 * tail(&sizes),
        100.0 * tail(&counts),
        peak_rss_mib(pid),
    );
}
