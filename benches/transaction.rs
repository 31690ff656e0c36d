//! Transaction throughput over HTTP: the consume -> transaction pipeline.
//! Inputs are pushed first (16 partitions); then each client pops 10 at a
//! time and commits one transaction per message: ack it, push one output
//! (dedup on), and write a `once` marker (a required `putIfAbsent`). Each
//! backend runs a fresh broker (the release binary) on a fresh database and
//! reports committed transactions/s (pops included) and the broker's peak
//! resident memory.
//!
//! `cargo bench --bench transaction` runs both backends; `-- --backend
//! sqlite`, `--transactions N` and `--clients N` narrow it.

#[path = "../tests/support/mod.rs"]
mod support;

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use common::{fresh_db, peak_rss_mib, Flags};
use serde_json::{json, Value};
use support::Broker;

const PARTITIONS: usize = 16;

async fn scenario(backend: &str, transactions: usize, clients: usize) {
    let db = fresh_db(backend).await;
    let broker = Broker::start(&db.url, &[]);
    let client = reqwest::Client::new();
    for chunk in (0..transactions).collect::<Vec<_>>().chunks(1000) {
        let items: Vec<Value> = chunk
            .iter()
            .map(|i| {
                json!({"queue": "bench-in", "partition": format!("p{}", i % PARTITIONS),
                       "transactionId": format!("in-{i:09}"), "payload": {"order": i, "amount": 99.5}})
            })
            .collect();
        let r = client
            .post(format!("{}/api/v1/push", broker.http))
            .json(&json!({ "items": items }))
            .send()
            .await
            .expect("push inputs");
        assert_eq!(r.status().as_u16(), 201);
    }

    let committed = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..clients {
        let (client, base, committed) = (client.clone(), broker.http.clone(), committed.clone());
        tasks.spawn(async move {
            while committed.load(Ordering::Relaxed) < transactions {
                let response = client
                    .get(format!("{base}/api/v1/pop/queue/bench-in?batch=10&wait=false"))
                    .send()
                    .await
                    .expect("pop");
                if response.status().as_u16() == 204 {
                    tokio::task::yield_now().await;
                    continue;
                }
                let popped: Value = response.json().await.expect("pop json");
                for m in popped["messages"].as_array().cloned().unwrap_or_default() {
                    let txn = m["transactionId"].as_str().unwrap_or_default().to_owned();
                    let bundle = json!({
                        "operations": [
                            {"type": "ack", "transactionId": txn, "partitionId": m["partitionId"],
                             "leaseId": m["leaseId"], "status": "completed"},
                            {"type": "push", "items": [{"queue": "bench-out", "transactionId": format!("out-{txn}"),
                                                        "payload": {"from": txn}}]},
                        ],
                        "requiredLeases": [m["leaseId"]],
                        "kv": [{"op": "putIfAbsent", "ns": "bench-done", "key": txn, "value": true,
                                "ttlSeconds": 3600, "required": true}],
                    });
                    let answer: Value = client
                        .post(format!("{base}/api/v1/transaction"))
                        .json(&bundle)
                        .send()
                        .await
                        .expect("transaction")
                        .json()
                        .await
                        .expect("transaction json");
                    assert_eq!(answer["success"], true, "{answer}");
                    committed.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
    tasks.join_all().await;
    let elapsed = started.elapsed().as_secs_f64();
    let total = committed.load(Ordering::Relaxed);
    println!(
        "{backend:8} ack+push+once: {total} transactions in {elapsed:6.2} s = {:7.0} tx/s, {clients} clients, peak RSS {:5.1} MiB",
        total as f64 / elapsed,
        peak_rss_mib(broker.child.id())
    );
    drop(broker);
}

#[tokio::main]
async fn main() {
    let flags = Flags::parse();
    let transactions = flags.get("transactions", 5_000);
    let clients = flags.get("clients", 8);
    for backend in flags.backends() {
        scenario(&backend, transactions, clients).await;
    }
}
