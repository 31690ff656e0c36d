//! The binary forms of the native API (spec section 4) over real sockets,
//! on both backends: binary push bodies answer as the JSON push does,
//! malformed ones are refused and change nothing, framed pops carry what
//! JSON pops do (and fall back to JSON when they cannot), and binary
//! transactions answer their head's operations first.

mod support;

use reqwest::StatusCode;
use serde_json::{json, Value};
use support::binary::{self, Group};
use support::Broker;

/// A 1 MiB body limit, so that the zstd bomb test stays small.
const LIMIT: usize = 1 << 20;

support::broker_scenarios!(&["--max-body-bytes", "1048576"];
    binary_push_answers_as_the_json_push,
    bad_binary_bodies_answer_400_and_change_nothing,
    framed_pops_carry_what_json_pops_do,
    binary_transactions_answer_their_head_first,
);

fn group<'a>(queue: &'a str, partition: &'a str, items: &[(&str, &str)]) -> Group<'a> {
    Group {
        queue,
        partition,
        items: items
            .iter()
            .map(|(t, p)| ((*t).to_owned(), (*p).to_owned()))
            .collect(),
    }
}

/// POSTs `body` as a binary body: the status and the JSON answer.
async fn post_binary(broker: &Broker, path: &str, body: Vec<u8>) -> (StatusCode, Value) {
    let response = reqwest::Client::new()
        .post(format!("{}{path}", broker.http))
        .header("content-type", binary::PUSH_TYPE)
        .body(body)
        .send()
        .await
        .expect("POST");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn binary_push_answers_as_the_json_push(broker: &Broker) {
    let first = broker
        .post(
            "/api/v1/push",
            json!({"items": [{"queue": "b", "partition": "p", "payload": {"n": 0}, "transactionId": "t0"}]}),
        )
        .await;
    let original = &first[0];
    assert_eq!(original["offset"], 0);

    // Flag 4: per-item transaction ids, "" minted by the broker.
    let (status, answer) = post_binary(
        broker,
        "/api/v1/push",
        binary::push_body(
            &[
                group(
                    "b",
                    "p",
                    &[("t0", r#"{"n":0}"#), ("t1", r#"{ "n" : 1 }"#), ("", "2")],
                ),
                group("b", "", &[("t2", "null")]),
            ],
            4,
        ),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let answer = answer.as_array().expect("a list").clone();
    assert_eq!(answer.len(), 4);
    // The same keys as the JSON push's answer, element for element.
    let keys = |v: &Value| {
        let mut k: Vec<String> = v.as_object().expect("object").keys().cloned().collect();
        k.sort();
        k
    };
    for a in &answer {
        assert_eq!(keys(a), keys(original), "{a}");
    }
    assert_eq!(answer[0]["status"], "duplicate");
    assert_eq!(answer[0]["message_id"], original["message_id"]);
    assert_eq!(answer[0]["offset"], 0);
    assert_eq!(answer[1]["status"], "queued");
    assert_eq!(answer[1]["offset"], 1);
    assert_eq!(answer[1]["transaction_id"], "t1");
    assert_eq!(answer[2]["offset"], 2);
    assert_eq!(
        answer[2]["transaction_id"], answer[2]["message_id"],
        "minted"
    );
    assert_eq!(answer[3]["offset"], 0, "partition Default");
    assert_eq!(answer[3]["queueName"], "b");
    assert_ne!(answer[3]["partitionId"], answer[1]["partitionId"]);
    for (i, a) in answer.iter().enumerate() {
        assert_eq!(a["index"], i);
    }

    // Flag 0: no transaction ids at all.
    let (status, answer) = post_binary(
        broker,
        "/api/v1/push",
        binary::push_body(&[group("b", "p", &[("", r#""x""#)])], 0),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(answer[0]["transaction_id"], answer[0]["message_id"]);
    assert_eq!(answer[0]["offset"], 3);

    // Flag 1|4: compressed, a duplicate of t1.
    let (_, answer) = post_binary(
        broker,
        "/api/v1/push",
        binary::push_body(&[group("b", "p", &[("t1", "1"), ("t3", "[3]")])], 5),
    )
    .await;
    assert_eq!(answer[0]["status"], "duplicate");
    assert_eq!(answer[0]["offset"], 1);
    assert_eq!(answer[1]["status"], "queued");
    assert_eq!(answer[1]["offset"], 4);

    // Flag 8 (frames), then 9 (frames in a compressed body).
    let (_, answer) = post_binary(
        broker,
        "/api/v1/push",
        binary::push_body(&[group("b", "p", &[("t4", r#"{"f":8}"#), ("t3", "0")])], 8),
    )
    .await;
    assert_eq!(answer[0]["status"], "queued");
    assert_eq!(answer[0]["offset"], 5);
    assert_eq!(answer[1]["status"], "duplicate");
    assert_eq!(answer[1]["offset"], 4);
    let id: uuid::Uuid = answer[0]["message_id"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("uuid");
    assert_eq!(id.get_version_num(), 7, "the client's minted id");
    let (_, answer) = post_binary(
        broker,
        "/api/v1/push",
        binary::push_body(&[group("b", "p", &[("", "9")])], 9),
    )
    .await;
    assert_eq!(answer[0]["offset"], 6);
    assert_eq!(answer[0]["transaction_id"], answer[0]["message_id"]);

    // Flag 2: the counts only.
    let (status, answer) = post_binary(
        broker,
        "/api/v1/push",
        binary::push_body(&[group("b", "p", &[("t4", "0"), ("t5", "5")])], 6),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(
        answer,
        json!({"count": 2, "queued": 1, "duplicate": 1, "error": 0})
    );

    // What was stored is what the JSON push stores: compact JSON.
    let popped = broker
        .get("/api/v1/pop/queue/b/partition/p?batch=100&wait=false")
        .await;
    let data: Vec<Value> = popped["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["data"].clone())
        .collect();
    assert_eq!(
        data,
        vec![
            json!({"n": 0}),
            json!({"n": 1}),
            json!(2),
            json!("x"),
            json!([3]),
            json!({"f": 8}),
            json!(9),
            json!(5)
        ]
    );
    assert_eq!(popped["messages"][5]["id"], id.to_string());
}

async fn bad_binary_bodies_answer_400_and_change_nothing(broker: &Broker) {
    let good = binary::push_body(&[group("q", "p", &[("t", "1"), ("", "2")])], 4);
    let mut bad: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("short magic", b"QPB".to_vec()),
        ("wrong magic", b"QPB2\x04\x00\x00\x00\x00".to_vec()),
        ("unknown flag", [&b"QPB1\x10"[..], &good[5..]].concat()),
        ("flags 4 and 8", [&b"QPB1\x0c"[..], &good[5..]].concat()),
        ("trailing byte", [&good[..], &[0]].concat()),
        ("huge group count", b"QPB1\x04\xff\xff\xff\xff".to_vec()),
        (
            "huge item count",
            b"QPB1\x04\x01\x00\x00\x00\x01\x00q\x01\x00p\xff\xff\xff\xff".to_vec(),
        ),
        (
            "payload not JSON",
            binary::push_body(&[group("q", "p", &[("t", "{")])], 4),
        ),
        (
            "empty payload",
            binary::push_body(&[group("q", "p", &[("t", "")])], 4),
        ),
        (
            "queue not UTF-8",
            b"QPB1\x00\x01\x00\x00\x00\x01\x00\xff\x01\x00p\x01\x00\x00\x00\x01\x00\x00\x001"
                .to_vec(),
        ),
    ];
    for end in [5, 9, 12, 15, 19, 22, good.len() - 1] {
        bad.push(("truncated", good[..end].to_vec()));
    }
    // Compressed: raw_len that differs, bytes that are not zstd, and a
    // bomb (a tiny frame declaring twice the body limit).
    let raw = &good[5..];
    let z = zstd::bulk::compress(raw, 1).expect("compress");
    let compressed = |raw_len: usize, frame: &[u8]| {
        [&b"QPB1\x05"[..], &(raw_len as u32).to_le_bytes(), frame].concat()
    };
    bad.push(("raw_len differs", compressed(raw.len() + 1, &z)));
    bad.push(("not zstd", compressed(raw.len(), b"not a zstd frame")));
    let bomb = zstd::bulk::compress(&vec![0u8; 2 * LIMIT], 1).expect("compress");
    assert!(bomb.len() < 1024);
    bad.push(("zstd bomb", compressed(2 * LIMIT, &bomb)));
    // Frames: a wrong count, a frame with flags, a version-4 id.
    let frames_body = |n: u32, frames: Vec<u8>| {
        let z = zstd::bulk::compress(&frames, 1).expect("compress");
        [
            &b"QPB1\x08\x01\x00\x00\x00\x01\x00q\x01\x00p"[..],
            &n.to_le_bytes(),
            &(z.len() as u32).to_le_bytes(),
            &z,
        ]
        .concat()
    };
    let mut one = Vec::new();
    binary::frame(&mut one, uuid::Uuid::now_v7(), "t", "1");
    bad.push(("frame count", frames_body(2, one.clone())));
    let mut flagged = one.clone();
    flagged[4] = 4;
    bad.push(("frame flags", frames_body(1, flagged)));
    let mut v4 = Vec::new();
    binary::frame(&mut v4, uuid::Uuid::new_v4(), "t", "1");
    bad.push(("frame id", frames_body(1, v4)));
    let frame_bomb = zstd::bulk::compress(&vec![0u8; 2 * LIMIT], 1).expect("compress");
    bad.push((
        "frame bomb",
        [
            &b"QPB1\x08\x01\x00\x00\x00\x01\x00q\x01\x00p\x01\x00\x00\x00"[..],
            &(frame_bomb.len() as u32).to_le_bytes(),
            &frame_bomb,
        ]
        .concat(),
    ));

    for (what, body) in bad {
        let (status, answer) = post_binary(broker, "/api/v1/push", body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{what}: {answer}");
        let error = answer["error"].as_str().unwrap_or_default();
        assert!(error.starts_with("binary body"), "{what}: {answer}");
    }
    for (what, body) in [
        ("garbage", b"QTB1garbage".to_vec()),
        ("push magic", good.clone()),
        ("head past the end", b"QTB1\x00\xff\x00\x00\x00{}".to_vec()),
        (
            "unknown flag",
            b"QTB1\x01\x02\x00\x00\x00{}\x00\x00\x00\x00".to_vec(),
        ),
    ] {
        let (status, answer) = post_binary(broker, "/api/v1/transaction", body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{what}: {answer}");
    }
    let (status, answer) = post_binary(
        broker,
        "/api/v1/transaction",
        binary::transaction_body(
            &json!("not an object"),
            &[group("q", "p", &[("t", "1")])],
            0,
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer["reason"], "bad_request");

    // Over the body limit: 413, as a JSON body.
    let big = binary::push_body(
        &[group(
            "q",
            "p",
            &[("t", &format!("\"{}\"", "x".repeat(LIMIT)))],
        )],
        4,
    );
    let (status, _) = post_binary(broker, "/api/v1/push", big).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    // The reserved-topic rule holds for binary bodies too.
    let (status, answer) = post_binary(
        broker,
        "/api/v1/push",
        binary::push_body(&[group("__consumer_offsets", "p", &[("t", "1")])], 4),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(answer["code"], "reserved_topic", "{answer}");

    // Nothing was created by any of them.
    let listed = broker.get("/api/v1/resources/queues").await;
    let names: Vec<&str> = listed["queues"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|q| q["name"].as_str())
        .filter(|n| !n.starts_with("__"))
        .collect();
    assert!(names.is_empty(), "{listed}");
    // And the good body is accepted.
    let (status, _) = post_binary(broker, "/api/v1/push", good).await;
    assert_eq!(status, StatusCode::CREATED);
}

async fn framed_pops_carry_what_json_pops_do(broker: &Broker) {
    let trace = uuid::Uuid::new_v4().to_string();
    let mut items = vec![
        json!({"queue": "f", "partition": "p1", "payload": {"k": "é"}, "transactionId": "a", "traceId": trace}),
    ];
    for i in 0..4 {
        items.push(json!({"queue": "f", "partition": "p1", "payload": i}));
    }
    items.push(json!({"queue": "f", "partition": "p1", "payload": null, "transactionId": "n"}));
    broker.post("/api/v1/push", json!({"items": items})).await;
    broker
        .post(
            "/api/v1/push",
            json!({"items": [{"queue": "f", "partition": "p2", "payload": "two"}]}),
        )
        .await;

    let path = |group: &str, frames: bool| {
        format!(
            "/api/v1/pop/queue/f?batch=10&partitions=2&wait=false&consumerGroup={group}{}",
            if frames { "&frames=true" } else { "" }
        )
    };
    let (status, content_type, bytes) = broker.fetch_bytes(&path("framed", true)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(content_type, "application/x-queen-pop");
    let mut framed = binary::decode_pop(&bytes);
    let mut plain = binary::comparable(broker.get(&path("plain", false)).await);
    assert_eq!(framed["messages"].as_array().map(Vec::len), Some(7));
    // Leases and groups differ by construction; everything else is equal.
    for answer in [&mut framed, &mut plain] {
        answer["leaseId"] = Value::Null;
        answer["consumerGroup"] = Value::Null;
        for m in answer["messages"].as_array_mut().expect("messages") {
            m["leaseId"] = Value::Null;
            m["consumerGroup"] = Value::Null;
        }
    }
    assert_eq!(framed, plain);
    assert_eq!(framed["messages"][0]["traceId"], trace);

    // The framed messages ack as the JSON ones do; then the pop is empty,
    // a bodiless 204.
    let (_, _, bytes) = broker
        .fetch_bytes(
            "/api/v1/pop/queue/f?batch=10&partitions=2&wait=false&frames=true&autopilot=true",
        )
        .await;
    let popped = binary::decode_pop(&bytes);
    assert_eq!(bytes[4], 1, "version 1 with the autopilot echo");
    assert!(popped["autopilot"].is_object(), "{popped}");
    let acks: Vec<Value> = popped["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                        "leaseId": m["leaseId"], "status": "completed"})
        })
        .collect();
    assert_eq!(acks.len(), 7);
    broker
        .post("/api/v1/ack/batch", json!({"acknowledgments": acks}))
        .await;
    let (status, _, bytes) = broker
        .fetch_bytes("/api/v1/pop/queue/f?wait=false&frames=true")
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert!(bytes.is_empty());

    // A Kafka record has fields a frame cannot carry: the answer is JSON.
    support::kafka::create_topic(&broker.kafka, "k", 1).await;
    support::kafka::produce_numbered(&broker.kafka, "k", "v", 2, 1).await;
    let (status, _, bytes) = broker
        .fetch_bytes("/api/v1/pop/queue/k?batch=10&wait=false&frames=true")
        .await;
    assert_eq!(status, StatusCode::OK);
    let answer: Value = serde_json::from_slice(&bytes).expect("a JSON answer");
    assert_eq!(answer["messages"][0]["dataEncoding"], "base64");
}

async fn binary_transactions_answer_their_head_first(broker: &Broker) {
    broker
        .post(
            "/api/v1/push",
            json!({"items": [{"queue": "src", "payload": 1, "transactionId": "job"}]}),
        )
        .await;
    let popped = broker.get("/api/v1/pop/queue/src?wait=false").await;
    let m = &popped["messages"][0];
    let head = json!({
        "operations": [{"type": "ack", "transactionId": m["transactionId"],
                        "partitionId": m["partitionId"], "leaseId": m["leaseId"],
                        "status": "completed"}],
        "requiredLeases": [m["leaseId"]],
    });
    let (status, answer) = post_binary(
        broker,
        "/api/v1/transaction",
        binary::transaction_body(
            &head,
            &[group(
                "dst",
                "Default",
                &[("x1", r#"{"a":1}"#), ("x2", "2")],
            )],
            0,
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer["success"], true, "{answer}");
    let results = answer["results"].as_array().expect("results");
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["type"], "ack");
    assert_eq!(results[0]["index"], 0);
    assert_eq!(results[1]["type"], "push");
    assert_eq!(results[1]["transactionId"], "x1");
    assert_eq!(results[1]["index"], 1);
    assert_eq!(results[2]["transactionId"], "x2");
    assert_eq!(results[2]["offset"], 1);

    // A pushed transaction id already stored rolls everything back.
    let (_, answer) = post_binary(
        broker,
        "/api/v1/transaction",
        binary::transaction_body(
            &json!({}),
            &[group("dst", "Default", &[("x3", "3"), ("x1", "1")])],
            0,
        ),
    )
    .await;
    assert_eq!(answer["success"], false);
    assert_eq!(answer["reason"], "duplicate");

    // Flag 2: counts, and an empty head.
    let body = [
        &b"QTB1\x02\x00\x00\x00\x00"[..],
        &binary::transaction_body(&json!({}), &[group("dst", "Default", &[("x3", "3")])], 0)[11..],
    ]
    .concat();
    let (_, answer) = post_binary(broker, "/api/v1/transaction", body).await;
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(answer["pushed"], 1);
    assert_eq!(answer["duplicate"], 0);
    assert_eq!(answer["acked"], 0);
    assert_eq!(answer["results"], json!([]));

    let stored = broker
        .get("/api/v1/pop/queue/dst?batch=10&wait=false")
        .await;
    let data: Vec<&Value> = stored["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| &m["data"])
        .collect();
    assert_eq!(data, vec![&json!({"a": 1}), &json!(2), &json!(3)]);
}
