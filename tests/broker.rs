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
    db.drop_db().await;
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
