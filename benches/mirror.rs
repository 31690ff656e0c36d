//! `queen mirror` throughput against the release binary: 1,000,000 records
//! of 100 B and of 1 KiB on 8 partitions, copied from a source broker (its
//! own SQLite database, reached over Kafka) into a destination database on
//! SQLite and on PostgreSQL, timed from the mirror's start until the status
//! shows every partition caught up, and from the topic's registration (the
//! start done: process, database, source metadata, topic created) until
//! then, as the produce is timed after its warm-up; beside it, the destination broker's own
//! produce of the same records with the same client settings (acks=all,
//! batches up to 1 MiB, `common::bulk_producer`). Prints records/s, MB/s
//! the mirror's share of the produce rate, and its peak resident memory.
//!
//! `cargo bench --bench mirror` runs everything; `-- --backend sqlite`,
//! `--records N`, `--sizes 100,1024` narrow it.

#[path = "../tests/support/mod.rs"]
mod support;

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{cpu_seconds, fresh_db, peak_rss_mib, Flags};
use rdkafka::producer::{DefaultProducerContext, Producer, ThreadedProducer};
use support::Broker;

const PARTITIONS: i32 = 8;

/// Produces `records` of `size` bytes round-robin to `topic`; the seconds
/// from the first to the last acknowledgement (after one warm-up record).
fn produce(broker: &Broker, topic: &str, records: usize, size: usize) -> f64 {
    let producer: ThreadedProducer<DefaultProducerContext> =
        common::bulk_producer(&mut common::kafka_client(&broker.kafka))
            .create()
            .expect("producer");
    let flush = || producer.flush(Duration::from_secs(600)).expect("flush");
    common::timed_produce(
        &producer,
        topic,
        PARTITIONS,
        records,
        &vec![b'x'; size],
        flush,
        |_| {},
    )
}

/// The records mirrored into `topic` at `dest` as its status shows them,
/// once it reports every partition (the mirror has created and registered
/// the topic and assigned its partitions). The mirrored offsets are read
/// live from the partitions; the lag waits for the mirror's next look at
/// the source (every second, its default), so it is not what is timed.
async fn mirrored(dest: &Broker, topic: &str) -> Option<i64> {
    let status = dest.get("/api/v1/mirror/status").await;
    let t = status["topics"]
        .as_array()
        .and_then(|ts| ts.iter().find(|t| t["topic"] == topic))?;
    let parts = t["partitions"].as_array().cloned().unwrap_or_default();
    (parts.len() == PARTITIONS as usize).then(|| {
        parts
            .iter()
            .filter_map(|p| p["mirrored_offset"].as_i64())
            .sum()
    })
}

#[tokio::main]
async fn main() {
    let flags = Flags::parse();
    let records: usize = flags.get("records", 1_000_000);
    let sizes: Vec<usize> = flags
        .get("sizes", "100,1024".to_owned())
        .split(',')
        .filter_map(|s| s.parse().ok())
        .collect();
    let source_db = fresh_db("sqlite").await;
    let source = Broker::start(&source_db.url, &["--default-partitions", "8"]);
    for backend in flags.backends() {
        for &size in &sizes {
            let db = fresh_db(&backend).await;
            let dest = Broker::start(&db.url, &["--default-partitions", "8"]);
            let topic = format!("mirror-{backend}-{size}");
            // The source's copy (+1: the warm-up record).
            let (s, t) = (&source, &topic);
            produce(s, t, records, size);
            let dest_cpu = cpu_seconds(dest.child.id());
            let own = produce(&dest, &format!("own-{size}"), records, size);
            let produce_cpu = cpu_seconds(dest.child.id()) - dest_cpu;
            let source_cpu = cpu_seconds(source.child.id());

            let started = Instant::now();
            let mut mirror = Command::new(env!("CARGO_BIN_EXE_queen"))
                .args([
                    "--database-url",
                    &db.url,
                    "mirror",
                    "--source",
                    &source.kafka,
                ])
                .args(["--topics", &topic])
                .env("QUEEN_LOG", "warn")
                .stdout(Stdio::null())
                .spawn()
                .expect("queen mirror");
            // Copying starts once the topic is registered; the time before
            // is the mirror's start (process, database, source metadata).
            let mut copying = None;
            loop {
                let done = mirrored(&dest, &topic).await;
                if done.is_some() && copying.is_none() {
                    copying = Some(Instant::now());
                }
                if done.is_some_and(|n| n > records as i64) {
                    break;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(1800),
                    "mirror stalled"
                );
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let copy = copying.map_or(0.0, |c| c.elapsed().as_secs_f64());
            let mirrored = started.elapsed().as_secs_f64();
            let rss = peak_rss_mib(mirror.id());
            let mirror_cpu = cpu_seconds(mirror.id());
            let serve_cpu = cpu_seconds(source.child.id()) - source_cpu;
            let _ = mirror.kill();
            let _ = mirror.wait();
            let mb = (records * size) as f64 / 1e6;
            println!(
                "{backend:8} {size:5} B x {records}: produce {:>9.0} rec/s {:>7.1} MB/s | mirror {:>9.0} rec/s {:>7.1} MB/s ({:.0}% of produce; copying alone {:.0} rec/s, {:.0}%, after a start of {:.2} s), mirror peak RSS {rss:.0} MiB",
                records as f64 / own,
                mb / own,
                records as f64 / mirrored,
                mb / mirrored,
                100.0 * own / mirrored,
                records as f64 / copy,
                100.0 * own / copy,
                mirrored - copy,
            );
            // CPU per record of each party, which a shared machine's
            // throughput hides: the broker producing, against the mirror
            // and the source broker serving its fetches.
            let us = |seconds: f64| seconds * 1e6 / records as f64;
            println!(
                "{backend:8} {size:5} B CPU per record: produce (broker) {:.2} µs | mirror {:.2} µs + source serving {:.2} µs",
                us(produce_cpu),
                us(mirror_cpu),
                us(serve_cpu),
            );
        }
    }
}
