//! What the bench binaries share: their flags, a fresh database per
//! backend, queue set-up, popping and acking, Kafka clients and the timed
//! produce, and the broker's resident memory (peak and current).

use std::collections::HashMap;
use std::str::FromStr;

use serde::Deserialize;

use test_support::{Backend, TestDb};

/// `--name value` pairs from the command line (`cargo bench` adds `--bench`,
/// which takes no value and is ignored).
pub(crate) struct Flags(HashMap<String, String>);

impl Flags {
    /// Reads the process arguments.
    pub(crate) fn parse() -> Self {
        let mut flags = HashMap::new();
        let mut it = std::env::args().skip(1).peekable();
        while let Some(flag) = it.next() {
            let Some(name) = flag.strip_prefix("--") else {
                continue;
            };
            if let Some(value) = it.next_if(|v| !v.starts_with("--")) {
                flags.insert(name.to_owned(), value);
            }
        }
        Self(flags)
    }

    /// The value of `--name`, or `default` when absent or unparsable.
    pub(crate) fn get<T: FromStr>(&self, name: &str, default: T) -> T {
        self.0
            .get(name)
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }

    /// The backends to run: `--backend sqlite|postgres`, or both.
    #[allow(dead_code)] // the soak bench runs one backend, SQLite by default
    pub(crate) fn backends(&self) -> Vec<String> {
        match self.0.get("backend") {
            Some(b) => vec![b.clone()],
            None => vec!["sqlite".into(), "postgres".into()],
        }
    }
}

/// A fresh database of `backend`, removed when dropped.
pub(crate) async fn fresh_db(backend: &str) -> TestDb {
    if backend == "postgres" {
        TestDb::new(Backend::Postgres).await
    } else {
        TestDb::new(Backend::Sqlite).await
    }
}

/// Creates (or replaces) `queue` on the broker at `http` with a dedup
/// window of `window_seconds`; panics with the broker's answer if refused.
#[allow(dead_code)] // only the native-queue benches configure queues
pub(crate) async fn configure_queue(http: &str, queue: &str, window_seconds: i64) {
    let options = serde_json::json!({"dedupWindowSeconds": window_seconds});
    configure_queue_with(http, queue, options).await;
}

/// Creates (or replaces) `queue` on the broker at `http` with `options`;
/// panics with the broker's answer if refused.
pub(crate) async fn configure_queue_with(http: &str, queue: &str, options: serde_json::Value) {
    let answer = reqwest::Client::new()
        .post(format!("{http}/api/v1/configure"))
        .json(&serde_json::json!({"queue": queue, "options": options}))
        .send()
        .await
        .expect("configure");
    assert!(
        answer.status().is_success(),
        "configure failed: {}",
        answer.text().await.unwrap_or_default()
    );
}

/// Only what a consumer needs from a pop answer.
#[allow(dead_code)] // only the consuming benches pop
#[derive(Deserialize)]
pub(crate) struct Popped {
    pub messages: Vec<PoppedMessage>,
}

/// A popped message: what acking it takes.
#[allow(dead_code)] // only the consuming benches pop
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PoppedMessage {
    pub transaction_id: String,
    pub partition_id: String,
    pub lease_id: String,
}

/// Acks `messages` as completed in one batch request to `ack_url`, for
/// consumer group `group` (queue mode when `None`); panics unless the
/// broker answers 200. Returns the per-item answers.
#[allow(dead_code)] // only the consuming benches ack
pub(crate) async fn ack_completed(
    client: &reqwest::Client,
    ack_url: &str,
    group: Option<&str>,
    messages: &[PoppedMessage],
) -> serde_json::Value {
    let acks: Vec<serde_json::Value> = messages
        .iter()
        .map(|m| {
            serde_json::json!({
                "transactionId": m.transaction_id,
                "partitionId": m.partition_id,
                "leaseId": m.lease_id,
                "status": "completed",
            })
        })
        .collect();
    let response = client
        .post(ack_url)
        .json(&serde_json::json!({ "acknowledgments": acks, "consumerGroup": group }))
        .send()
        .await
        .expect("ack");
    let status = response.status().as_u16();
    let answer: serde_json::Value = response.json().await.expect("ack answer");
    assert_eq!(status, 200, "ack failed: {answer}");
    answer
}

/// The peak resident memory (VmHWM) of process `pid`, in MiB.
pub(crate) fn peak_rss_mib(pid: u32) -> f64 {
    status_mib(pid, "VmHWM:")
}

/// The CPU time (user and system) process `pid` has used so far, in
/// seconds; 0 when the process is gone.
#[allow(dead_code)] // not every bench reads it
pub(crate) fn cpu_seconds(pid: u32) -> f64 {
    // Fields 14 and 15 of `/proc/<pid>/stat`, counted after the command
    // name's closing parenthesis (the name may hold spaces), in clock ticks
    // of USER_HZ: 100 on every Linux the broker builds for.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let rest = &s[s.rfind(')')? + 1..];
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let ticks = |i: usize| fields.get(i)?.parse::<f64>().ok();
            Some((ticks(11)? + ticks(12)?) / 100.0)
        })
        .unwrap_or(0.0)
}

/// The current resident memory (VmRSS) of process `pid`, in MiB.
#[allow(dead_code)] // only the long-running benches sample it as they go
pub(crate) fn rss_mib(pid: u32) -> f64 {
    status_mib(pid, "VmRSS:")
}

/// A kB figure of `/proc/<pid>/status` (`field` with its colon), in MiB; 0
/// when the process is gone.
fn status_mib(pid: u32, field: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

/// `config` set for bulk produce: `acks=all`, batches of up to 1 MiB
/// lingering 20 ms, and a local queue deep enough never to be the limit.
#[allow(dead_code)] // only the Kafka benches produce
pub(crate) fn bulk_producer(
    config: &mut rdkafka::config::ClientConfig,
) -> &mut rdkafka::config::ClientConfig {
    config
        .set("acks", "all")
        .set("linger.ms", "20")
        .set("batch.size", "1048576")
        .set("batch.num.messages", "100000")
        .set("queue.buffering.max.messages", "1000000")
        .set("queue.buffering.max.kbytes", "1048576")
}

/// Flushes `producer` and waits until the broker has acknowledged every
/// record it holds. Call it before `commit_transaction`: rust-rdkafka 0.39
/// flushes there with `BaseProducer::poll`, which always waits out its
/// 100 ms step, so every transaction would pay up to 100 ms of the client's
/// own making (Java and librdkafka's other bindings do not).
#[allow(dead_code)] // only the Kafka benches produce
pub(crate) fn await_deliveries(
    producer: &rdkafka::producer::ThreadedProducer<rdkafka::producer::DefaultProducerContext>,
) {
    use rdkafka::producer::Producer;
    while producer.in_flight_count() > 0 {
        // A flush that returns at once (its time-out error is expected)
        // still wakes librdkafka's broker threads to send what lingers, as
        // a commit's flush does: without it, each transaction's last batch
        // waited out `linger.ms` (20 ms here), which halved the rate.
        let _ = producer.flush(std::time::Duration::ZERO);
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
}

/// Queues `record` in `producer`, polling while its queue is full (a bench
/// produces faster than the broker acknowledges).
#[allow(dead_code)] // only the Kafka benches produce
pub(crate) fn send_queued(
    producer: &rdkafka::producer::ThreadedProducer<rdkafka::producer::DefaultProducerContext>,
    mut record: rdkafka::producer::BaseRecord<'_, (), [u8]>,
) {
    loop {
        match producer.send(record) {
            Ok(()) => return,
            Err((_, r)) => {
                record = r;
                producer.poll(std::time::Duration::from_millis(5));
            }
        }
    }
}

/// A librdkafka client of the Kafka listener at `bootstrap` (IPv4).
#[allow(dead_code)] // only the Kafka benches
pub(crate) fn kafka_client(bootstrap: &str) -> rdkafka::config::ClientConfig {
    let mut c = rdkafka::config::ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4");
    c
}

/// The timed produce of the Kafka benches: one record of `payload` to
/// partition 0 of `topic`, untimed, then `settle` (the connection and any
/// producer id are start-up costs, not throughput); then `records` of them
/// round-robin over `partitions`, `before(i)` called ahead of record `i`,
/// and `settle` again. The seconds from the first timed record until
/// `settle` returned.
#[allow(dead_code)] // only the Kafka benches produce
pub(crate) fn timed_produce(
    producer: &rdkafka::producer::ThreadedProducer<rdkafka::producer::DefaultProducerContext>,
    topic: &str,
    partitions: i32,
    records: usize,
    payload: &[u8],
    settle: impl Fn(),
    mut before: impl FnMut(usize),
) -> f64 {
    use rdkafka::producer::BaseRecord;
    producer
        .send(
            BaseRecord::<(), [u8]>::to(topic)
                .payload(payload)
                .partition(0),
        )
        .map_err(|(e, _)| e)
        .expect("warm-up record");
    settle();
    let started = std::time::Instant::now();
    for i in 0..records {
        before(i);
        let partition = (i % partitions as usize) as i32;
        send_queued(
            producer,
            BaseRecord::<(), [u8]>::to(topic)
                .payload(payload)
                .partition(partition),
        );
    }
    settle();
    started.elapsed().as_secs_f64()
}

/// The (p50, p99) of `samples`, which must not be empty.
#[allow(dead_code)] // only the latency benches use it
pub(crate) fn p50_p99(
    mut samples: Vec<std::time::Duration>,
) -> (std::time::Duration, std::time::Duration) {
    assert!(!samples.is_empty(), "no latency samples");
    samples.sort_unstable();
    let n = samples.len();
    (samples[n / 2], samples[(n * 99 / 100).min(n - 1)])
}
