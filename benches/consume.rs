//! Consumption throughput over HTTP: pop + ack with batch 100 and 1,000, on
//! SQLite and PostgreSQL. Each scenario runs a fresh broker (the release
//! binary) on a fresh database, preloads JSON messages of about 200 bytes
//! with the push API, then lets N consumers loop pop (queue mode, one
//! partition per pop) + ack/batch until the queue is drained, and reports
//! messages/s of the consuming phase.
//!
//! `cargo bench --bench consume` runs everything; `-- --backend sqlite`,
//! `--batch N`, `--messages N`, `--consumers N` and `--partitions N` narrow it;
//! `--group NAME` pops and acks as that consumer group instead of queue mode;
//! `--framed 1` pops with `frames=true` (the framed answer of spec 4.5, as
//! the queen-mq client's `framed_pop`).

#[path = "../tests/support/mod.rs"]
mod support;

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use common::{ack_completed, cpu_seconds, fresh_db, peak_rss_mib, Flags, Popped, PoppedMessage};
use support::Broker;

struct Args {
    backends: Vec<String>,
    batches: Vec<usize>,
    messages: usize,
    consumers: usize,
    partitions: usize,
    /// The consumer group popping and acking; queue mode when absent.
    group: Option<String>,
    /// Pops ask for the framed answer.
    framed: bool,
}

fn args() -> Args {
    let flags = Flags::parse();
    let batch: usize = flags.get("batch", 0);
    Args {
        backends: flags.backends(),
        batches: if batch > 0 {
            vec![batch]
        } else {
            vec![100, 1000]
        },
        messages: flags.get("messages", 200_000),
        consumers: flags.get("consumers", 8),
        partitions: flags.get("partitions", 16),
        group: Some(flags.get("group", String::new())).filter(|g| !g.is_empty()),
        framed: flags.get("framed", 0) != 0,
    }
}

async fn preload(broker: &Broker, args: &Args) {
    let client = reqwest::Client::new();
    let per_request = 1000;
    let requests = args.messages.div_ceil(per_request);
    let mut tasks = tokio::task::JoinSet::new();
    let next = Arc::new(AtomicUsize::new(0));
    for _ in 0..4 {
        let (client, next, url, partitions) = (
            client.clone(),
            next.clone(),
            format!("{}/api/v1/push", broker.http),
            args.partitions,
        );
        tasks.spawn(async move {
            loop {
                let r = next.fetch_add(1, Ordering::Relaxed);
                if r >= requests {
                    break;
                }
                let items: Vec<serde_json::Value> = (0..per_request)
                    .map(|i| {
                        let n = r * per_request + i;
                        serde_json::json!({
                            "queue": "bench",
                            "partition": format!("p{}", r % partitions),
                            "transactionId": format!("bench-{n:012}"),
                            "payload": {
                                "orderId": n,
                                "customer": format!("customer-{:06}", n % 100_000),
                                "amount": 99.5,
                                "currency": "EUR",
                                "note": "a message of about two hundred bytes, as a small business event would be, padded",
                            },
                        })
                    })
                    .collect();
                let response = client
                    .post(&url)
                    .json(&serde_json::json!({ "items": items }))
                    .send()
                    .await
                    .expect("push");
                assert_eq!(response.status().as_u16(), 201, "push failed");
            }
        });
    }
    tasks.join_all().await;
}

/// What acking the messages of a framed answer takes; its payloads are
/// not parsed, as a consumer that hands them on would not.
fn framed_messages(bytes: &[u8]) -> Vec<PoppedMessage> {
    let mut messages = Vec::new();
    let head = support::binary::walk(bytes, |claim, m| {
        messages.push(PoppedMessage {
            transaction_id: m.transaction_id,
            partition_id: claim.partition_id.clone(),
            lease_id: String::new(),
        });
    });
    for m in &mut messages {
        m.lease_id.clone_from(&head.lease);
    }
    messages
}

async fn scenario(backend: &str, batch: usize, args: &Args) {
    let db = fresh_db(backend).await;
    let broker = Broker::start(&db.url, &[]);
    preload(&broker, args).await;
    let total = args.messages.div_ceil(1000) * 1000;

    let client = reqwest::Client::new();
    let consumed = Arc::new(AtomicUsize::new(0));
    let broker_cpu = cpu_seconds(broker.child.id());
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..args.consumers {
        let (client, consumed, base) = (client.clone(), consumed.clone(), broker.http.clone());
        let group = args.group.clone();
        let framed = args.framed;
        tasks.spawn(async move {
            let mut pop_url = format!("{base}/api/v1/pop/queue/bench?batch={batch}&wait=false");
            if let Some(group) = &group {
                pop_url.push_str(&format!("&consumerGroup={group}"));
            }
            if framed {
                pop_url.push_str("&frames=true");
            }
            let ack_url = format!("{base}/api/v1/ack/batch");
            let mut empty = 0;
            while consumed.load(Ordering::Relaxed) < total && empty < 50 {
                let response = client.get(&pop_url).send().await.expect("pop");
                if response.status().as_u16() == 204 {
                    empty += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                    continue;
                }
                empty = 0;
                let messages = if framed {
                    framed_messages(&response.bytes().await.expect("pop answer"))
                } else {
                    let popped: Popped = response.json().await.expect("pop JSON");
                    popped.messages
                };
                ack_completed(&client, &ack_url, group.as_deref(), &messages).await;
                consumed.fetch_add(messages.len(), Ordering::Relaxed);
            }
        });
    }
    tasks.join_all().await;
    let elapsed = started.elapsed().as_secs_f64();
    let broker_cpu = cpu_seconds(broker.child.id()) - broker_cpu;
    let done = consumed.load(Ordering::Relaxed);
    assert_eq!(done, total, "every preloaded message was consumed once");
    // The broker's CPU per message is steadier than the rate on a shared
    // machine, where the client's own work competes for the same cores.
    println!(
        "{backend:8} batch {batch:5}{}, {} consumers, {} partitions: {done} messages popped and acked in {elapsed:6.2} s = {:8.0} msg/s, broker CPU {:5.2} µs/msg, peak RSS {:5.1} MiB",
        if args.framed { " framed" } else { "" },
        args.consumers,
        args.partitions,
        done as f64 / elapsed,
        broker_cpu * 1e6 / done as f64,
        peak_rss_mib(broker.child.id()),
    );
    drop(broker);
}

#[tokio::main]
async fn main() {
    let args = args();
    for backend in args.backends.clone() {
        for &batch in &args.batches {
            scenario(&backend, batch, &args).await;
        }
    }
}
