//! Push throughput over HTTP: JSON messages of about 200 bytes in requests of
//! 1,000, with dedup on (window 3600) and off, to 1 and to 16 partitions, on
//! SQLite and PostgreSQL. Each scenario runs a fresh broker (the release
//! binary) on a fresh database and reports messages/s and the broker's peak
//! resident memory (VmHWM).
//!
//! `cargo bench --bench push` runs everything; `-- --backend sqlite`,
//! `--messages N` and `--clients N` narrow it. `-- --encrypted 1` runs the
//! same scenarios on queues with `encryptionEnabled` (payloads sealed at
//! rest), against the broker given a key file.

#[path = "../tests/support/mod.rs"]
mod support;

mod common;

use std::time::Instant;

use bytes::Bytes;
use common::{configure_queue_with, fresh_db, peak_rss_mib, Flags};
use support::Broker;

struct Args {
    backends: Vec<String>,
    messages: usize,
    clients: usize,
    encrypted: bool,
    /// The binary body's flags, or `None` for JSON.
    binary: Option<u8>,
}

fn args() -> Args {
    let flags = Flags::parse();
    Args {
        backends: flags.backends(),
        messages: flags.get("messages", 200_000),
        clients: flags.get("clients", 8),
        encrypted: flags.get("encrypted", 0) != 0,
        binary: (flags.get("binary", 0) != 0).then(|| {
            if flags.get("compress", 0) != 0 {
                8
            } else {
                4
            }
        }),
    }
}

/// One request body of `per_request` messages of about 200 bytes each, every
/// one with a unique transaction id: JSON, or binary with `binary` flags.
fn request_body(
    queue: &str,
    partition: &str,
    request: usize,
    per_request: usize,
    binary: Option<u8>,
) -> Bytes {
    let items: Vec<(String, serde_json::Value)> = (0..per_request)
        .map(|i| {
            let n = request * per_request + i;
            let payload = serde_json::json!({
                "orderId": n,
                "customer": format!("customer-{:06}", n % 100_000),
                "amount": 99.5,
                "currency": "EUR",
                "note": "a message of about two hundred bytes, as a small business event would be, padded to size",
            });
            (format!("bench-{n:012}"), payload)
        })
        .collect();
    if let Some(flags) = binary {
        let group = support::binary::Group {
            queue,
            partition,
            items: items
                .into_iter()
                .map(|(txn, payload)| (txn, payload.to_string()))
                .collect(),
        };
        return Bytes::from(support::binary::push_body(&[group], flags));
    }
    let items: Vec<serde_json::Value> = items
        .into_iter()
        .map(|(txn, payload)| {
            serde_json::json!({
                "queue": queue, "partition": partition, "transactionId": txn, "payload": payload,
            })
        })
        .collect();
    Bytes::from(serde_json::json!({ "items": items }).to_string())
}

async fn scenario(backend: &str, window: i64, partitions: usize, args: &Args) {
    let db = fresh_db(backend).await;
    let key_dir = tempfile::tempdir().expect("tempdir");
    let key_file = key_dir.path().join("payload.key");
    std::fs::write(&key_file, "42".repeat(32)).expect("key file");
    let key_flag = [
        "--encryption-key-file",
        key_file.to_str().expect("utf-8 path"),
    ];
    let broker = Broker::start(&db.url, if args.encrypted { &key_flag } else { &[] });
    let client = reqwest::Client::new();
    let queue = "bench";
    let options =
        serde_json::json!({"dedupWindowSeconds": window, "encryptionEnabled": args.encrypted});
    configure_queue_with(&broker.http, queue, options).await;

    let per_request = 1000;
    let requests = args.messages.div_ceil(per_request);
    let bodies: Vec<Bytes> = (0..requests)
        .map(|r| {
            let partition = format!("p{}", r % partitions);
            request_body(queue, &partition, r, per_request, args.binary)
        })
        .collect();
    let content_type = match args.binary {
        Some(_) => support::binary::PUSH_TYPE,
        None => "application/json",
    };
    let bodies = std::sync::Arc::new(std::sync::Mutex::new(bodies));

    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..args.clients {
        let (client, bodies, url) = (
            client.clone(),
            bodies.clone(),
            format!("{}/api/v1/push", broker.http),
        );
        tasks.spawn(async move {
            loop {
                let Some(body) = bodies.lock().expect("lock").pop() else {
                    break;
                };
                let response = client
                    .post(&url)
                    .header("content-type", content_type)
                    .body(body)
                    .send()
                    .await
                    .expect("push");
                assert_eq!(response.status().as_u16(), 201, "push failed");
                response.bytes().await.expect("answer");
            }
        });
    }
    tasks.join_all().await;
    let elapsed = started.elapsed().as_secs_f64();
    let total = requests * per_request;
    let rss = peak_rss_mib(broker.child.id());
    println!(
        "{backend:8} dedup {:3} partitions {partitions:2}{}{}: {total} messages in {elapsed:6.2} s = {:8.0} msg/s, peak RSS {:5.1} MiB",
        if window > 0 { "on" } else { "off" },
        if args.encrypted { " encrypted" } else { "" },
        match args.binary {
            Some(8) => " binary+zstd",
            Some(_) => " binary",
            None => "",
        },
        total as f64 / elapsed,
        rss
    );
    drop(broker);
}

#[tokio::main]
async fn main() {
    let args = args();
    for backend in args.backends.clone() {
        for window in [3600, 0] {
            for partitions in [1, 16] {
                scenario(&backend, window, partitions, &args).await;
            }
        }
    }
}
