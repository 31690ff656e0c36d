//! End-to-end tests of the `queen` binary over real sockets: several brokers
//! on one PostgreSQL, bad input on the wire, and shutdown.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{json, Value};
use support::{Broker, TestDb};

async fn push(client: &reqwest::Client, base: &str, body: &Value) -> (u16, Value) {
    let response = client
        .post(format!("{base}/api/v1/push"))
        .json(body)
        .send()
        .await
        .expect("push request");
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON answer"))
}

/// Sends every body at once, the i-th to `bases[i % len]`, and collects the answers in order.
async fn push_concurrently(bases: &[String], bodies: Vec<Value>) -> Vec<(u16, Value)> {
    let client = reqwest::Client::new();
    let mut tasks = tokio::task::JoinSet::new();
    for (i, body) in bodies.into_iter().enumerate() {
        let (client, base) = (client.clone(), bases[i % bases.len()].clone());
        tasks.spawn(async move { (i, push(&client, &base, &body).await) });
    }
    let mut answers = tasks.join_all().await;
    answers.sort_by_key(|(i, _)| *i);
    answers.into_iter().map(|(_, a)| a).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_brokers_on_one_postgres_store_a_contested_id_once() {
    let db = TestDb::postgres().await;
    let brokers = [Broker::start(&db.url, &[]), Broker::start(&db.url, &[])];
    let bases: Vec<String> = brokers.iter().map(|b| b.http.clone()).collect();
    let body = json!({"items": [{"queue": "contested", "partition": "p", "transactionId": "order-1", "payload": {"n": 1}}]});
    let answers = push_concurrently(&bases, vec![body; 50]).await;
    let mut queued = Vec::new();
    for (status, answer) in &answers {
        assert_eq!(*status, 201, "{answer}");
        if answer[0]["status"] == "queued" {
            queued.push(answer[0].clone());
        } else {
            assert_eq!(answer[0]["status"], "duplicate");
        }
    }
    assert_eq!(queued.len(), 1, "exactly one broker stored the id");
    for (_, answer) in &answers {
        assert_eq!(answer[0]["message_id"], queued[0]["message_id"]);
        assert_eq!(answer[0]["offset"], queued[0]["offset"]);
    }
    let client = reqwest::Client::new();
    for broker in &brokers {
        let q: Value = client
            .get(format!("{}/api/v1/resources/queues/contested", broker.http))
            .send()
            .await
            .expect("get queue")
            .json()
            .await
            .expect("JSON");
        assert_eq!(
            q["totals"]["total"], 1,
            "both brokers see one stored message"
        );
    }

    // Offsets stay gapless when both brokers append to one partition at once.
    let items: Vec<Value> = (0..25)
        .map(|n| json!({"queue": "shared", "partition": "p", "payload": n}))
        .collect();
    let mut offsets: Vec<i64> = push_concurrently(&bases, vec![json!({"items": items}); 20])
        .await
        .iter()
        .flat_map(|(_, a)| {
            a.as_array()
                .expect("array")
                .iter()
                .map(|i| i["offset"].as_i64().expect("offset"))
                .collect::<Vec<_>>()
        })
        .collect();
    offsets.sort_unstable();
    assert_eq!(offsets, (0..500).collect::<Vec<i64>>());

    drop(brokers);
}

/// Sends raw bytes to `addr` and returns what came back before the peer closed or went quiet.
fn raw_exchange(addr: &str, bytes: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let _ = stream.write_all(bytes);
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    answer
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_on_the_wire_is_refused_and_the_broker_keeps_serving() {
    let db = TestDb::sqlite();
    let broker = Broker::start(&db.url, &["--max-body-bytes", "4096"]);
    let http_addr = broker.http.trim_start_matches("http://").to_owned();
    let client = reqwest::Client::new();

    // An oversize body: 413 with a JSON error.
    let big = json!({"items": [{"queue": "q", "payload": "x".repeat(10_000)}]});
    let (status, answer) = push(&client, &broker.http, &big).await;
    assert_eq!(status, 413);
    assert_eq!(answer["code"], "payload_too_large");

    // Garbage and truncated HTTP, then garbage, oversize and truncated Kafka frames.
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    raw_exchange(&http_addr, &garbage);
    raw_exchange(
        &http_addr,
        b"POST /api/v1/push HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"items\":",
    );
    raw_exchange(&broker.kafka, &garbage);
    raw_exchange(&broker.kafka, &i32::MAX.to_be_bytes());
    raw_exchange(&broker.kafka, &[0, 0, 0, 20, 0, 18]);
    raw_exchange(
        &broker.kafka,
        &[0, 0, 0, 12, 0, 18, 0, 3, 0, 0, 0, 1, 0, 0, 0, 0],
    );

    // Still serving, and nothing was written by any of it.
    let (status, answer) = push(
        &client,
        &broker.http,
        &json!({"items": [{"queue": "q", "payload": 1}]}),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(answer[0]["offset"], 0, "the refused requests wrote nothing");
}

#[test]
fn sigterm_shuts_the_broker_down_cleanly() {
    let db = TestDb::sqlite();
    let broker = Broker::start(&db.url, &[]);
    let status = broker.terminate();
    assert!(status.success(), "exit status {status}");
    // The database survives the restart.
    let again = Broker::start(&db.url, &[]);
    drop(again);
}

/// Another process opening and closing the SQLite file (`queen user add`)
/// while the broker appends and checkpoints: every record comes back and
/// the file stays sound. Had the broker closed a descriptor of the file
/// (it once opened one for every sync), SQLite's locks would have gone
/// with it, and the other process, believing itself alone, would have
/// deleted the WAL under the broker: "database disk image is malformed"
/// within a few rounds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_process_on_the_sqlite_file_leaves_it_sound() {
    let db = TestDb::sqlite();
    let broker = Broker::start(&db.url, &[]);
    let client = reqwest::Client::new();
    let pad = "x".repeat(4_000);
    let (rounds, per_round) = (16, 50);
    for round in 0..rounds {
        let items: Vec<Value> = (0..per_round)
            .map(|n| json!({"queue": "shared-work", "transactionId": format!("{round}-{n}"), "payload": {"n": n, "pad": pad}}))
            .collect();
        let (status, answer) = push(&client, &broker.http, &json!({ "items": items })).await;
        assert_eq!(status, 201, "round {round}: {answer}");
        let url = db.url.clone();
        tokio::task::spawn_blocking(move || {
            support::add_user(&url, &format!("user-{round}"), "secret")
        })
        .await
        .expect("queen user add");
        // Past a checkpoint round (every 500 ms) now and then.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let mut popped = 0;
    while let Some(answer) = pop(&client, &broker.http, "batch=500&wait=false&autoAck=true").await {
        popped += answer["messages"].as_array().expect("messages").len();
    }
    assert_eq!(popped, rounds * per_round);
}

/// Pops from `base` (waiting briefly); `None` when nothing came.
async fn pop(client: &reqwest::Client, base: &str, query: &str) -> Option<Value> {
    let response = client
        .get(format!("{base}/api/v1/pop/queue/shared-work?{query}"))
        .send()
        .await
        .expect("pop request");
    match response.status().as_u16() {
        204 => None,
        200 => Some(response.json().await.expect("pop JSON")),
        other => panic!("pop answered {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_brokers_on_one_postgres_share_leases_and_wake_each_other() {
    use std::collections::{BTreeMap, HashMap, HashSet};
    use std::sync::{Arc, Mutex};

    let db = TestDb::postgres().await;
    let brokers = [Broker::start(&db.url, &[]), Broker::start(&db.url, &[])];
    let bases: Vec<String> = brokers.iter().map(|b| b.http.clone()).collect();
    let client = reqwest::Client::new();
    let (partitions, per_partition) = (12, 25);
    for p in 0..partitions {
        let items: Vec<Value> = (0..per_partition)
            .map(|n| json!({"queue": "shared-work", "partition": format!("p{p:02}"), "transactionId": format!("{p:02}-{n:03}"), "payload": n}))
            .collect();
        let (status, _) = push(&client, &bases[p % 2], &json!({ "items": items })).await;
        assert_eq!(status, 201);
    }

    // partition id -> consumer holding its lease right now.
    let holders: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    let delivered: Arc<Mutex<Vec<(String, i64, String)>>> = Arc::default();
    let mut consumers = tokio::task::JoinSet::new();
    for consumer in 0..8 {
        let (client, base) = (client.clone(), bases[consumer % 2].clone());
        let (holders, delivered) = (holders.clone(), delivered.clone());
        consumers.spawn(async move {
            let mut idle = 0;
            while idle < 3 {
                let Some(answer) = pop(&client, &base, "batch=4&wait=true&timeout=300").await else {
                    idle += 1;
                    continue;
                };
                idle = 0;
                let messages = answer["messages"].as_array().expect("messages").clone();
                let pid = messages[0]["partitionId"].as_str().expect("pid").to_owned();
                if let Some(other) = holders.lock().expect("lock").insert(pid.clone(), consumer) {
                    panic!("partition {pid} leased to consumers {consumer} and {other} at once");
                }
                delivered.lock().expect("lock").extend(messages.iter().map(|m| {
                    (
                        pid.clone(),
                        m["offset"].as_i64().expect("offset"),
                        m["transactionId"].as_str().expect("txn").to_owned(),
                    )
                }));
                // Forgotten before the ack: the lease is held until it commits.
                holders.lock().expect("lock").remove(&pid);
                let acks: Vec<Value> = messages
                    .iter()
                    .map(|m| json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"], "leaseId": m["leaseId"], "status": "completed"}))
                    .collect();
                let answer: Value = client
                    .post(format!("{base}/api/v1/ack/batch"))
                    .json(&json!({ "acknowledgments": acks }))
                    .send()
                    .await
                    .expect("ack")
                    .json()
                    .await
                    .expect("ack JSON");
                assert!(
                    answer.as_array().expect("array").iter().all(|a| a["success"] == true),
                    "{answer}"
                );
            }
        });
    }
    consumers.join_all().await;
    let delivered = delivered.lock().expect("lock").clone();
    assert_eq!(delivered.len(), partitions * per_partition, "nothing lost");
    let unique: HashSet<&String> = delivered.iter().map(|(_, _, t)| t).collect();
    assert_eq!(unique.len(), delivered.len(), "nothing delivered twice");
    let mut by_partition: BTreeMap<&String, Vec<i64>> = BTreeMap::new();
    for (p, o, _) in &delivered {
        by_partition.entry(p).or_default().push(*o);
    }
    for offsets in by_partition.values() {
        assert_eq!(*offsets, (0..per_partition as i64).collect::<Vec<_>>());
    }

    // A pop waiting on one broker is woken by a push through the other.
    let waiting = {
        let (client, base) = (client.clone(), bases[1].clone());
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            let answer = pop(&client, &base, "wait=true&timeout=20000").await;
            (answer, started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let body = json!({"items": [{"queue": "shared-work", "partition": "late", "payload": 1}]});
    push(&client, &bases[0], &body).await;
    let (answer, waited) = waiting.await.expect("waiting pop");
    assert!(answer.is_some(), "the waiting pop got the message");
    assert!(
        waited < Duration::from_secs(10),
        "woken by the other broker's push, not by its timeout ({waited:?})"
    );

    drop(brokers);
}
