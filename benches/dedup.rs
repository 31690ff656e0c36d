//! Native dedup at scale: how push throughput, the broker's memory and the
//! duplicate check's latency hold up as one dedup window fills with
//! millions of transaction ids.
//!
//! Per backend and partition count, a fresh broker (the release binary) on a
//! fresh database gets a queue with the default one-hour window, then
//! `--messages` JSON messages of about 200 bytes, each with a unique
//! transaction id, in requests of 1,000 from `--clients` concurrent HTTP
//! clients; with several partitions each request goes to the next partition
//! in turn. Every `--every` messages it prints the throughput of that stretch
//! and the broker's current (VmRSS) and peak (VmHWM) resident memory. Then,
//! one request at a time, `--lookups` single-item pushes re-sending a random
//! stored id (each must answer `duplicate`) and as many of fresh ids (each
//! must answer `queued`), with their latency percentiles, and a summary line:
//! first and last stretch's throughput, their ratio, peak RSS.
//!
//! `cargo bench --bench dedup` runs 20,000,000 messages on SQLite and
//! PostgreSQL, to 1 and to 16 partitions; `-- --backend sqlite`,
//! `--partitions N`, `--messages N`, `--clients N`, `--every N` and
//! `--lookups N` narrow it (`--messages 2000000` is a quick check).
//! `--window 0` pushes the same load with dedup off, for comparison (and
//! skips the lookups, which need a window).

#[path = "../tests/support/mod.rs"]
mod support;

mod common;

use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{configure_queue, fresh_db, peak_rss_mib, rss_mib, Flags};
use support::Broker;

const QUEUE: &str = "dedup";
const PER_REQUEST: usize = 1000;

struct Args {
    backends: Vec<String>,
    messages: usize,
    clients: usize,
    every: usize,
    partitions: Vec<usize>,
    lookups: usize,
    window: i64,
}

fn args() -> Args {
    let flags = Flags::parse();
    Args {
        backends: flags.backends(),
        messages: flags.get("messages", 20_000_000),
        clients: flags.get("clients", 4).max(1),
        every: flags.get("every", 1_000_000).max(1),
        partitions: match flags.get("partitions", 0) {
            0 => vec![1, 16],
            n => vec![n],
        },
        lookups: flags.get("lookups", 1000).max(1),
        window: flags.get("window", 3600),
    }
}

/// The transaction id of message `n`: every message of a run has its own.
fn txn_id(n: usize) -> String {
    format!("dedup-{n:012}")
}

/// The partition request `request` (and so each of its messages) goes to.
fn partition_of(request: usize, partitions: usize) -> String {
    format!("p{}", request % partitions)
}

/// Appends message `n` as one push item of about 200 bytes. Written by hand
/// rather than through `serde_json::json!`: 20,000,000 bodies cannot be
/// prepared before the clock starts as the push bench does, and the client
/// shares the machine's cores with the broker, so building them must be cheap.
fn push_item(out: &mut String, n: usize, partition: &str) {
    let _ = write!(
        out,
        r#"{{"queue":"{QUEUE}","partition":"{partition}","transactionId":"{}","payload":{{"orderId":{n},"customer":"customer-{:06}","amount":99.5,"currency":"EUR","note":"a message of about two hundred bytes, as a small business event would be"}}}}"#,
        txn_id(n),
        n % 100_000,
    );
}

/// The body of bulk request `request`: messages `request * 1000 ..`.
fn request_body(request: usize, partitions: usize) -> String {
    let partition = partition_of(request, partitions);
    let mut body = String::with_capacity(PER_REQUEST * 240);
    body.push_str(r#"{"items":["#);
    for i in 0..PER_REQUEST {
        if i > 0 {
            body.push(',');
        }
        push_item(&mut body, request * PER_REQUEST + i, &partition);
    }
    body.push_str("]}");
    body
}

/// Messages acknowledged so far, and what the progress lines report.
struct Progress {
    label: String,
    pid: u32,
    every: usize,
    done: usize,
    /// When the previous line's stretch ended, and the count then.
    mark: Instant,
    mark_done: usize,
    first: Option<f64>,
    last: Option<f64>,
}

impl Progress {
    /// Counts `n` more acknowledged messages; prints a line when the count
    /// crosses a multiple of `every`, and then returns true.
    fn add(&mut self, n: usize) -> bool {
        self.done += n;
        let crossed = self.done / self.every > self.mark_done / self.every;
        if crossed {
            self.line();
        }
        crossed
    }

    /// Prints the stretch since the previous line.
    fn line(&mut self) {
        let now = Instant::now();
        let stretch = self.done - self.mark_done;
        let rate = stretch as f64 / now.duration_since(self.mark).as_secs_f64();
        println!(
            "{}: {:>10} messages, {rate:>8.0} msg/s over the last {stretch}, RSS {:6.1} MiB, peak RSS {:6.1} MiB",
            self.label,
            self.done,
            rss_mib(self.pid),
            peak_rss_mib(self.pid),
        );
        self.first.get_or_insert(rate);
        self.last = Some(rate);
        self.mark = now;
        self.mark_done = self.done;
    }
}

/// The dedup index's counters on `/metrics`, in [`IndexWork::counters`] order.
const INDEX_COUNTERS: [&str; 6] = [
    "queen_dedup_filter_probes_total",
    "queen_dedup_filter_maybes_total",
    "queen_dedup_pages_read_total",
    "queen_dedup_merged_entries_total",
    "queen_storage_commit_duration_seconds_sum",
    "queen_storage_commit_duration_seconds_count",
];

/// What the index did up to the previous index line.
struct IndexWork {
    progress: Arc<Mutex<Progress>>,
    /// Messages acknowledged when the counters were read.
    at: usize,
    counters: [f64; 6],
}

/// The broker's [`INDEX_COUNTERS`] now.
async fn index_counters(client: &reqwest::Client, url: &str) -> [f64; 6] {
    let text = client
        .get(url)
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics text");
    INDEX_COUNTERS.map(|name| {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("{name} is not on /metrics"))
    })
}

/// Prints what the index did per message since the previous index line:
/// filter probes (the live runs a fresh id is checked against), "maybe"s,
/// pages read, and entries merges wrote (how often ids are rewritten).
async fn index_line(client: &reqwest::Client, url: &str, work: &tokio::sync::Mutex<IndexWork>) {
    let mut work = work.lock().await;
    let counters = index_counters(client, url).await;
    let (label, done) = {
        let progress = work.progress.lock().expect("progress lock");
        (progress.label.clone(), progress.done)
    };
    let messages = done.saturating_sub(work.at).max(1) as f64;
    let delta = |i: usize| counters[i] - work.counters[i];
    let per = |i: usize| delta(i) / messages;
    let commits = delta(5).max(1.0);
    println!(
        "{}: index per message: {:.2} filter probes, {:.4} maybes, {:.4} pages read, {:.2} entries merged; {:.0} group commits of {:.2} ms ({:.1} s)",
        label,
        per(0),
        per(1),
        per(2),
        per(3),
        delta(5),
        delta(4) * 1000.0 / commits,
        delta(4),
    );
    work.at = done;
    work.counters = counters;
}

/// Pushes every message of the run from `args.clients` clients.
async fn bulk_push(
    broker: &Broker,
    progress: Arc<Mutex<Progress>>,
    partitions: usize,
    args: &Args,
) {
    let requests = args.messages.div_ceil(PER_REQUEST);
    let next = Arc::new(AtomicUsize::new(0));
    let client = reqwest::Client::new();
    let metrics_url = format!("{}/metrics", broker.http);
    let index_work = Arc::new(tokio::sync::Mutex::new(IndexWork {
        progress: progress.clone(),
        at: 0,
        counters: index_counters(&client, &metrics_url).await,
    }));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..args.clients {
        let (client, next, progress) = (client.clone(), next.clone(), progress.clone());
        let (metrics_url, index_work) = (metrics_url.clone(), index_work.clone());
        let url = format!("{}/api/v1/push", broker.http);
        tasks.spawn(async move {
            loop {
                let r = next.fetch_add(1, Ordering::Relaxed);
                if r >= requests {
                    break;
                }
                let response = client
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(request_body(r, partitions))
                    .send()
                    .await
                    .expect("push");
                let status = response.status().as_u16();
                let answer = response.text().await.expect("push answer");
                assert_eq!(status, 201, "push {r} failed: {answer}");
                // Every id is new, so a duplicate is a false positive of the
                // dedup check. A substring search keeps the client from
                // parsing a million answers.
                assert!(
                    !answer.contains(r#""status":"duplicate""#),
                    "push {r}: a fresh id was answered duplicate: {answer}"
                );
                let line = progress.lock().expect("progress lock").add(PER_REQUEST);
                if line {
                    index_line(&client, &metrics_url, &index_work).await;
                }
            }
        });
    }
    tasks.join_all().await;
    let mut progress = progress.lock().expect("progress lock");
    if progress.done > progress.mark_done {
        // The rest after the last multiple of `--every`.
        progress.line();
    }
}

/// splitmix64: enough randomness to pick stored ids, without a dependency.
struct Rng(u64);

impl Rng {
    fn seeded() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Self(nanos)
    }

    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

/// One single-item push of message `n` to `partition`, timed until its
/// answer is read; panics unless the item is answered `expected`.
async fn timed_push(
    client: &reqwest::Client,
    url: &str,
    n: usize,
    partition: &str,
    expected: &str,
) -> Duration {
    let mut body = String::from(r#"{"items":["#);
    push_item(&mut body, n, partition);
    body.push_str("]}");
    let started = Instant::now();
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("single push");
    let status = response.status().as_u16();
    let answer = response.text().await.expect("single push answer");
    let took = started.elapsed();
    assert_eq!(status, 201, "single push of {} failed: {answer}", txn_id(n));
    let item: serde_json::Value = serde_json::from_str(&answer).expect("push answer JSON");
    assert_eq!(
        item[0]["status"],
        expected,
        "{} pushed again to {partition} must be answered {expected}: {answer}",
        txn_id(n),
    );
    took
}

/// p50, p99 and max of `latencies`, in ms.
fn percentiles(mut latencies: Vec<Duration>) -> (f64, f64, f64) {
    latencies.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let n = latencies.len();
    (
        ms(latencies[n / 2]),
        ms(latencies[(n * 99 / 100).min(n - 1)]),
        ms(latencies[n - 1]),
    )
}

/// The latency of duplicate lookups (re-sent stored ids) and of fresh ids,
/// one request at a time on an otherwise idle broker.
async fn lookups(broker: &Broker, label: &str, partitions: usize, args: &Args) {
    let client = reqwest::Client::new();
    let url = format!("{}/api/v1/push", broker.http);
    let stored = args.messages.div_ceil(PER_REQUEST) * PER_REQUEST;
    let mut rng = Rng::seeded();
    let mut duplicates = Vec::with_capacity(args.lookups);
    for _ in 0..args.lookups {
        let n = rng.below(stored);
        // Dedup is per partition: the id goes back where it was stored.
        let partition = partition_of(n / PER_REQUEST, partitions);
        duplicates.push(timed_push(&client, &url, n, &partition, "duplicate").await);
    }
    let (p50, p99, max) = percentiles(duplicates);
    println!(
        "{label}: {} duplicate lookups of random stored ids: p50 {p50:.2} ms, p99 {p99:.2} ms, max {max:.2} ms",
        args.lookups
    );
    let mut fresh = Vec::with_capacity(args.lookups);
    for i in 0..args.lookups {
        let partition = partition_of(rng.below(partitions), partitions);
        fresh.push(timed_push(&client, &url, stored + i, &partition, "queued").await);
    }
    let (p50, p99, max) = percentiles(fresh);
    println!(
        "{label}: {} single pushes of fresh ids: p50 {p50:.2} ms, p99 {p99:.2} ms, max {max:.2} ms",
        args.lookups
    );
}

async fn scenario(backend: &str, partitions: usize, args: &Args) {
    let db = fresh_db(backend).await;
    let broker = Broker::start(&db.url, &[]);
    let label = format!(
        "{backend:8} {partitions:2} partition{}",
        if partitions == 1 { "" } else { "s" }
    );
    configure_queue(&broker.http, QUEUE, args.window).await;

    let progress = Arc::new(Mutex::new(Progress {
        label: label.clone(),
        pid: broker.child.id(),
        every: args.every,
        done: 0,
        mark: Instant::now(),
        mark_done: 0,
        first: None,
        last: None,
    }));
    let started = Instant::now();
    bulk_push(&broker, progress.clone(), partitions, args).await;
    let elapsed = started.elapsed().as_secs_f64();
    let (done, first, last) = {
        let p = progress.lock().expect("progress lock");
        (p.done, p.first.unwrap_or(0.0), p.last.unwrap_or(0.0))
    };
    println!(
        "{label}: {done} messages in {elapsed:.1} s = {:.0} msg/s overall",
        done as f64 / elapsed
    );
    if args.window > 0 {
        lookups(&broker, &label, partitions, args).await;
    } else {
        println!("{label}: no lookups: the window is 0");
    }
    println!(
        "{label} summary: first {} {first:.0} msg/s, last {} {last:.0} msg/s, last/first {:.2}, peak RSS {:.1} MiB",
        args.every.min(done),
        // The last stretch is shorter when --messages is not a multiple of --every.
        if done % args.every == 0 { args.every.min(done) } else { done % args.every },
        last / first,
        peak_rss_mib(broker.child.id()),
    );
    drop(broker);
}

#[tokio::main]
async fn main() {
    let args = args();
    for backend in args.backends.clone() {
        for &partitions in &args.partitions {
            scenario(&backend, partitions, &args).await;
        }
    }
}
