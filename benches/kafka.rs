//! Kafka throughput and latency with librdkafka against the release binary:
//! 1,000,000 records of 100 bytes (acks=all, batches up to 1 MiB) to 1 and
//! 8 partitions, produced then consumed, on SQLite and PostgreSQL; then the
//! latency (p50/p99) of a steady stream of 2,000 records/s, end to end and
//! to the producer's acknowledgement, produced with `linger.ms` 5 and 0,
//! alone and beside a second producer sending to another topic as fast as
//! it can; and
//! on 8 partitions a consumer group of three librdkafka members subscribing
//! together (each member's time from its subscribe to its first record,
//! with the broker's default 3 s initial rebalance delay for the classic
//! protocol, then group throughput with auto-commit), once with the classic
//! protocol and once with KIP-848's (`group.protocol=consumer`: no initial
//! delay, the broker assigns and moves partitions at heartbeats). Prints
//! records/s, MB/s and the broker's peak resident memory (VmHWM).
//!
//! Produce is timed after one warm-up record (connection and producer id).
//! `cargo bench --bench kafka` runs everything; `-- --backend sqlite`,
//! `--records N`, `--partitions N` narrow it; `--idempotent true` produces with
//! `enable.idempotence=true`; `--max-in-flight N` sets the producer's
//! `max.in.flight` (librdkafka's default otherwise: with idempotence it sends
//! one request per partition at a time, so `--max-in-flight 1` without it
//! shows what that alone costs); `--repeat N` times the produce N times (each
//! into a topic of its own) and reports the median, for a noisy machine.
//! `--transaction-size N` produces with a `transactional.id`, N records per
//! transaction (Kafka transactions); `--linger-ms N` sets the producer's
//! `linger.ms` (20 otherwise); `--batch-bytes N` its `batch.size` (1 MiB
//! otherwise); `--isolation read_committed` consumes
//! at that isolation level; `--throughput-only true` skips the group and
//! latency runs.

#[path = "../tests/support/mod.rs"]
mod support;

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{cpu_seconds, fresh_db, p50_p99, peak_rss_mib, Flags};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{Message, Offset, TopicPartitionList};
use support::Broker;

struct Args {
    backends: Vec<String>,
    records: usize,
    mode: Mode,
    repeat: usize,
    partitions: Vec<i32>,
    isolation: String,
    throughput_only: bool,
}

/// How the timed producer sends: with or without idempotence, and with
/// librdkafka's own in-flight limit unless `--max-in-flight` sets one.
#[derive(Clone, Copy)]
struct Mode {
    idempotent: bool,
    max_in_flight: Option<u32>,
    /// Records per Kafka transaction; 0 produces without transactions.
    transaction_size: usize,
    /// The producer's `linger.ms`, when not the bulk default.
    linger_ms: Option<u32>,
    /// The producer's `batch.size`, when not the bulk default (1 MiB).
    batch_bytes: Option<u32>,
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.transaction_size {
            0 => write!(f, "idempotent {}", self.idempotent)?,
            n => write!(f, "transactions of {n}")?,
        }
        if let Some(n) = self.max_in_flight {
            write!(f, ", max.in.flight {n}")?;
        }
        if let Some(n) = self.linger_ms {
            write!(f, ", linger.ms {n}")?;
        }
        match self.batch_bytes {
            Some(n) => write!(f, ", batch.size {n}"),
            None => Ok(()),
        }
    }
}

fn args() -> Args {
    let flags = Flags::parse();
    Args {
        backends: flags.backends(),
        records: flags.get("records", 1_000_000),
        mode: Mode {
            idempotent: flags.get("idempotent", false),
            max_in_flight: match flags.get("max-in-flight", 0) {
                0 => None,
                n => Some(n),
            },
            transaction_size: flags.get("transaction-size", 0),
            linger_ms: Some(flags.get("linger-ms", u32::MAX)).filter(|&n| n != u32::MAX),
            batch_bytes: Some(flags.get("batch-bytes", 0)).filter(|&n| n != 0),
        },
        repeat: flags.get("repeat", 1).max(1),
        partitions: match flags.get("partitions", 0) {
            0 => vec![1, 8],
            n => vec![n],
        },
        isolation: flags.get("isolation", "read_uncommitted".to_owned()),
        throughput_only: flags.get("throughput-only", false),
    }
}

fn client(broker: &Broker) -> ClientConfig {
    common::kafka_client(&broker.kafka)
}

fn produce(broker: &Broker, topic: &str, partitions: i32, records: usize, mode: Mode) -> f64 {
    let mut config = client(broker);
    if let Some(n) = mode.max_in_flight {
        config.set("max.in.flight", n.to_string());
    }
    let transactional = mode.transaction_size > 0;
    if transactional {
        config.set("transactional.id", format!("bench-{topic}"));
    }
    common::bulk_producer(&mut config);
    if let Some(n) = mode.linger_ms {
        config.set("linger.ms", n.to_string());
    }
    if let Some(n) = mode.batch_bytes {
        config.set("batch.size", n.to_string());
    }
    let producer: ThreadedProducer<DefaultProducerContext> = config
        .set(
            "enable.idempotence",
            (mode.idempotent || transactional).to_string(),
        )
        .create()
        .expect("producer");
    let wait = Duration::from_secs(300);
    if transactional {
        producer.init_transactions(wait).expect("init_transactions");
        producer.begin_transaction().expect("begin");
    }
    // With idempotence librdkafka asks for the producer id ~0.5 s after
    // start, once a broker connection is up: the warm-up record waits for it.
    common::timed_produce(
        &producer,
        topic,
        partitions,
        records,
        &[b'x'; 100],
        || {
            common::await_deliveries(&producer);
            match transactional {
                true => producer.commit_transaction(wait).expect("commit"),
                false => producer.flush(wait).expect("flush"),
            }
        },
        |i| {
            if transactional && i % mode.transaction_size == 0 {
                if i > 0 {
                    common::await_deliveries(&producer);
                    producer.commit_transaction(wait).expect("commit");
                }
                producer.begin_transaction().expect("begin");
            }
        },
    )
}

/// Reads `records` from offset 0 of every partition: the seconds from the
/// assignment to the last record, and to the first.
fn consume(
    broker: &Broker,
    topic: &str,
    partitions: i32,
    records: usize,
    isolation: &str,
) -> (f64, f64) {
    let consumer: BaseConsumer = client(broker)
        .set("group.id", "bench-no-commits")
        .set("isolation.level", isolation)
        .set("enable.auto.commit", "false")
        .set("queued.max.messages.kbytes", "1048576")
        .create()
        .expect("consumer");
    // The topic's leaders first, untimed, as a subscribed consumer knows
    // them by the time it is assigned: librdkafka assigned partitions it
    // has no leader for yet waits out a 500 ms offset-query timer, which
    // every consume here once paid (README, "the first half second").
    consumer
        .fetch_metadata(Some(topic), Duration::from_secs(10))
        .expect("metadata");
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .expect("tpl");
    }
    consumer.assign(&tpl).expect("assign");
    let started = Instant::now();
    let mut first = None;
    let mut seen = 0;
    while seen < records {
        if let Some(m) = consumer.poll(Duration::from_secs(5)) {
            m.expect("message");
            first.get_or_insert_with(|| started.elapsed().as_secs_f64());
            seen += 1;
        } else {
            panic!("consumer stalled after {seen} records");
        }
    }
    (started.elapsed().as_secs_f64(), first.unwrap_or(0.0))
}

/// Three members of one group speaking `protocol` (`classic`, or
/// `consumer` for KIP-848) subscribe to `topic` and consume its `records`
/// together: (time until every member had records, total time).
/// Three members of a fresh group read `topic` to its end: how long each
/// waited from its own subscribe to its first record (`None`: the others
/// read everything first), sorted, and how long the whole read took.
fn group_consume(
    broker: &Broker,
    topic: &str,
    records: usize,
    protocol: &str,
) -> (Vec<Option<Duration>>, Duration) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let total = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let members: Vec<_> = (0..3)
        .map(|_| {
            let consumer: BaseConsumer = client(broker)
                .set("group.id", format!("bench-group-{protocol}"))
                .set("group.protocol", protocol)
                .set("auto.offset.reset", "earliest")
                .set("queued.max.messages.kbytes", "262144")
                .create()
                .expect("consumer");
            let total = total.clone();
            let topic = topic.to_owned();
            std::thread::spawn(move || {
                let subscribed = Instant::now();
                consumer.subscribe(&[&topic]).expect("subscribe");
                let mut first = None;
                let mut idle = Instant::now();
                while total.load(Ordering::Relaxed) < records {
                    match consumer.poll(Duration::from_millis(100)) {
                        Some(m) => {
                            m.expect("message");
                            first.get_or_insert_with(|| subscribed.elapsed());
                            total.fetch_add(1, Ordering::Relaxed);
                            idle = Instant::now();
                        }
                        None => assert!(
                            idle.elapsed() < Duration::from_secs(30),
                            "group member stalled"
                        ),
                    }
                }
                first
            })
        })
        .collect();
    let mut firsts: Vec<Option<Duration>> = members
        .into_iter()
        .map(|m| m.join().expect("member"))
        .collect();
    // Members with a record first, quickest first; those without last.
    firsts.sort_by_key(|first| (first.is_none(), *first));
    (firsts, started.elapsed())
}

const LATENCY_TOPIC: &str = "latency";

/// The topic the background load of a latency run goes to.
const LOAD_TOPIC: &str = "load";

/// A producer sending 100-byte records to [`LOAD_TOPIC`] as fast as the
/// broker takes them, until `stop`; the thread answers how many it sent.
fn background_load(broker: &Broker, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<usize> {
    let producer: ThreadedProducer<DefaultProducerContext> =
        common::bulk_producer(&mut client(broker))
            .create()
            .expect("load producer");
    std::thread::spawn(move || {
        let mut sent = 0;
        while !stop.load(Ordering::Relaxed) {
            let record = BaseRecord::<(), [u8]>::to(LOAD_TOPIC).payload(&[b'x'; 100][..]);
            match producer.send(record) {
                Ok(()) => sent += 1,
                // The client's queue is full: the broker sets the pace.
                Err(_) => std::thread::sleep(Duration::from_millis(1)),
            }
        }
        producer
            .flush(Duration::from_secs(60))
            .expect("flush the load");
        sent
    })
}

/// The latencies of one run: end to end (produced to consumed) and to the
/// producer's acknowledgement, as (p50, p99) each.
struct Latency {
    end_to_end: (Duration, Duration),
    acked: (Duration, Duration),
}

/// Records, from the producer's delivery reports, how long each record
/// took from its send (the microseconds since `epoch` in its payload) to
/// its acknowledgement.
struct Acks {
    epoch: Instant,
    took: Arc<std::sync::Mutex<Vec<Duration>>>,
}

impl rdkafka::ClientContext for Acks {}

impl rdkafka::producer::ProducerContext for Acks {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &rdkafka::producer::DeliveryResult<'_>, _: ()) {
        let Ok(message) = result else { return };
        let sent = sent_us(message.payload());
        if sent > 0 {
            let now = self.epoch.elapsed().as_micros() as u64;
            if let Ok(mut took) = self.took.lock() {
                took.push(Duration::from_micros(now.saturating_sub(sent)));
            }
        }
    }
}

/// The send time a latency record carries (0 for the warm-up record).
fn sent_us(payload: Option<&[u8]>) -> u64 {
    u64::from_be_bytes(
        payload
            .and_then(|p| p.try_into().ok())
            .expect("an 8-byte payload"),
    )
}

/// The latency of 2,000 records/s produced with `linger_ms` and consumed
/// at once.
fn latency(broker: &Broker, topic: &str, linger_ms: u32) -> Latency {
    let epoch = Instant::now();
    let took = Arc::new(std::sync::Mutex::new(Vec::new()));
    let producer: ThreadedProducer<Acks> = client(broker)
        .set("acks", "all")
        .set("linger.ms", linger_ms.to_string())
        .create_with_context(Acks {
            epoch,
            took: took.clone(),
        })
        .expect("producer");
    let consumer: BaseConsumer = client(broker)
        .set("group.id", "bench-latency")
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", "500")
        .create()
        .expect("consumer");
    // A first record creates the topic before the consumer looks for it.
    producer
        .send(
            BaseRecord::<(), [u8]>::to(topic)
                .payload(&[0u8; 8][..])
                .partition(0),
        )
        .map_err(|(e, _)| e)
        .expect("warm-up record");
    producer.flush(Duration::from_secs(10)).expect("flush");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::End)
        .expect("tpl");
    consumer.assign(&tpl).expect("assign");
    std::thread::sleep(Duration::from_secs(2));
    let origin = Instant::now();
    let count = 10_000; // five seconds at 2,000 records/s
    let sender = std::thread::spawn(move || {
        for i in 0..count {
            let due = origin + Duration::from_micros(500 * i as u64);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            let payload = (epoch.elapsed().as_micros() as u64).to_be_bytes();
            let mut record = BaseRecord::<(), [u8]>::to(LATENCY_TOPIC)
                .payload(&payload[..])
                .partition(0);
            while let Err((_, r)) = producer.send(record) {
                record = r;
                producer.poll(Duration::from_millis(1));
            }
        }
        producer.flush(Duration::from_secs(30)).expect("flush");
    });
    let mut latencies = Vec::with_capacity(count);
    while latencies.len() < count {
        let m = consumer
            .poll(Duration::from_secs(10))
            .expect("latency stream stalled")
            .expect("message");
        let sent = sent_us(m.payload());
        latencies.push(Duration::from_micros(
            (epoch.elapsed().as_micros() as u64).saturating_sub(sent),
        ));
    }
    sender.join().expect("sender");
    let acked = std::mem::take(&mut *took.lock().expect("delivery reports"));
    Latency {
        end_to_end: p50_p99(latencies),
        acked: p50_p99(acked),
    }
}

#[tokio::main]
async fn main() {
    let args = args();
    for backend in args.backends.clone() {
        for partitions in args.partitions.clone() {
            let backend = backend.clone();
            let db = fresh_db(&backend).await;
            let broker = Broker::start(&db.url, &["--default-partitions", &partitions.to_string()]);
            // One topic per produce run, so the consume phase reads a topic
            // of exactly `n` records (the last run's).
            let topic = move |run: usize| format!("bench-{run}");
            let n = args.records;
            let label = backend.clone();
            let mode = args.mode;
            let repeat = args.repeat;
            let isolation = args.isolation.clone();
            let throughput_only = args.throughput_only;
            let broker = tokio::task::spawn_blocking(move || {
                let backend = label;
                let pid = broker.child.id();
                let cpu_at_start = cpu_seconds(pid);
                let mut runs: Vec<f64> = (0..repeat)
                    .map(|run| produce(&broker, &topic(run), partitions, n, mode))
                    .collect();
                let cpu_produced = cpu_seconds(pid);
                runs.sort_by(f64::total_cmp);
                let produced = runs[runs.len() / 2];
                if repeat > 1 {
                    println!(
                        "{backend:8} partitions {partitions} {mode}: {repeat} produce runs, {:.0} to {:.0} rec/s, median below",
                        n as f64 / runs[runs.len() - 1],
                        n as f64 / runs[0],
                    );
                }
                let after_produce = peak_rss_mib(broker.child.id());
                let topic = topic(repeat - 1);
                let (consumed, first) = consume(&broker, &topic, partitions, n, &isolation);
                // The broker's CPU per record in each phase (µs).
                let per_record = |seconds: f64, records: usize| seconds * 1e6 / records as f64;
                let produce_cpu = per_record(cpu_produced - cpu_at_start, n * repeat);
                let consume_cpu = per_record(cpu_seconds(pid) - cpu_produced, n);
                let mb = (n * 100) as f64 / 1e6;
                println!(
                    "{backend:8} partitions {partitions} {mode}: produce {:>9.0} rec/s {:6.1} MB/s | consume ({isolation}) {:>9.0} rec/s {:6.1} MB/s (first record after {:.0} ms, {:.0} rec/s from it) | peak RSS {:5.1} MiB (after producing {after_produce:5.1} MiB) | broker CPU per record: produce {produce_cpu:.2} µs, consume {consume_cpu:.2} µs",
                    n as f64 / produced,
                    mb / produced,
                    n as f64 / consumed,
                    mb / consumed,
                    first * 1e3,
                    (n - 1) as f64 / (consumed - first).max(f64::EPSILON),
                    peak_rss_mib(broker.child.id()),
                );
                if partitions == 8 && !throughput_only {
                    for protocol in ["classic", "consumer"] {
                        let (firsts, took) = group_consume(&broker, &topic, n, protocol);
                        let firsts: Vec<String> = firsts
                            .iter()
                            .map(|first| match first {
                                Some(t) => format!("{t:.2?}"),
                                None => "none (the others read everything)".to_owned(),
                            })
                            .collect();
                        println!(
                            "{backend:8} group of 3 on 8 partitions, {protocol} protocol: subscribe to first record {}; {:>9.0} rec/s including the joins",
                            firsts.join(" / "),
                            n as f64 / took.as_secs_f64(),
                        );
                    }
                }
                broker
            })
            .await
            .expect("bench thread");
            if partitions == 1 && !throughput_only {
                let broker = tokio::task::spawn_blocking(move || {
                    for loaded in [false, true] {
                        for linger_ms in [5, 0] {
                            let stop = Arc::new(AtomicBool::new(false));
                            let load = loaded.then(|| background_load(&broker, stop.clone()));
                            let started = Instant::now();
                            let Latency {
                                end_to_end: (p50, p99),
                                acked: (ack50, ack99),
                            } = latency(&broker, LATENCY_TOPIC, linger_ms);
                            stop.store(true, Ordering::Relaxed);
                            let beside = match load {
                                Some(load) => format!(
                                    ", beside a producer at {:.0} rec/s to another topic",
                                    load.join().expect("load thread") as f64
                                        / started.elapsed().as_secs_f64()
                                ),
                                None => String::new(),
                            };
                            println!(
                                "{backend:8} end-to-end latency at 2,000 records/s, linger.ms {linger_ms}: p50 {p50:?}, p99 {p99:?} (acknowledged: p50 {ack50:?}, p99 {ack99:?}){beside}"
                            );
                        }
                    }
                    broker
                })
                .await
                .expect("latency thread");
                drop(broker);
            } else {
                drop(broker);
            }
        }
    }
}
