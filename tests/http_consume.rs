//! Consumption through the HTTP router (no sockets), on both backends:
//! pop shapes (native and Kafka records), acks and their refusals, lease
//! renewal, dead letters, consumer groups, depth and message lookup.

mod support;

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use bytes::Bytes;
use serde_json::{json, Value};
use storage::{Content, Header, KafkaRecord, PushItem, Record};
use support::router::Api;

impl Api {
    async fn push(&self, queue: &str, partition: &str, txns: &[&str]) {
        let items: Vec<Value> = txns
            .iter()
            .map(|t| json!({"queue": queue, "partition": partition, "transactionId": t, "payload": {"t": t}}))
            .collect();
        let (status, _) = self.post("/api/v1/push", json!({"items": items})).await;
        assert_eq!(status, StatusCode::CREATED);
    }
}

router_tests!(
    pop_renders_every_field_and_acks_release,
    kafka_records_pop_with_their_encodings,
    bad_acks_and_pops_are_refused,
    failed_acks_end_in_the_dlq_listing,
    acks_take_ids_and_statuses_in_every_form_clients_send,
    lease_renewal_answers,
    consumer_group_endpoints,
    depth_and_message_lookup,
    a_waiting_pop_is_woken_by_a_push,
);

async fn pop_renders_every_field_and_acks_release(api: &Api) {
    let (status, body) = api.get("/api/v1/pop/queue/q?wait=false").await;
    assert_eq!((status, body), (StatusCode::NO_CONTENT, Value::Null));
    api.push("q", "p1", &["a", "b"]).await;
    let (status, pop) = api
        .get("/api/v1/pop/queue/q?batch=10&wait=true&timeout=1000&autopilot=true")
        .await;
    assert_eq!(status, StatusCode::OK, "{pop}");
    assert_eq!(pop["success"], true);
    assert_eq!(pop["queue"], "q");
    assert_eq!(pop["partition"], "p1");
    assert_eq!(pop["consumerGroup"], "__QUEUE_MODE__");
    assert_eq!(pop["partitionsClaimed"], 1);
    assert_eq!(pop["autopilot"]["batch"], 10);
    let m = &pop["messages"][0];
    for key in [
        "id",
        "transactionId",
        "traceId",
        "data",
        "createdAt",
        "partitionId",
        "partition",
        "queue",
        "leaseId",
        "consumerGroup",
        "deliveryAttempt",
        "offset",
        "retryCount",
        "producerSub",
    ] {
        assert!(m.get(key).is_some(), "message lacks {key}: {m}");
    }
    assert_eq!(m["transactionId"], "a");
    assert_eq!(m["data"], json!({"t": "a"}));
    assert_eq!(m["offset"], 0);
    assert_eq!(m["deliveryAttempt"], 1);
    assert_eq!(m["leaseId"], pop["leaseId"]);
    let pid = m["partitionId"].as_str().expect("partitionId is a string");
    assert!(pid.parse::<u64>().is_ok(), "decimal partition id {pid}");
    assert!(m["createdAt"].as_str().expect("time").ends_with('Z'));
    assert!(
        m.get("key").is_none(),
        "native messages carry no Kafka fields"
    );

    let acks: Vec<Value> = pop["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"], "status": "COMPLETED", "error": null, "leaseId": m["leaseId"]}))
        .collect();
    let (status, answer) = api
        .post(
            "/api/v1/ack/batch",
            json!({"acknowledgments": acks, "consumerGroup": null}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    for (i, a) in answer.as_array().expect("array").iter().enumerate() {
        assert_eq!(a["index"], i);
        assert_eq!(a["success"], true);
        assert_eq!(a["error"], Value::Null);
        assert_eq!(a["leaseReleased"], true);
        assert_eq!(a["queueName"], "q");
        assert_eq!(a["partitionName"], "p1");
    }
    // A single ack repeated after the release is a no-op success.
    let (_, answer) = api
        .post(
            "/api/v1/ack",
            json!({"transactionId": "b", "partitionId": pid, "status": "success", "leaseId": pop["leaseId"]}),
        )
        .await;
    assert_eq!(answer[0]["success"], true, "{answer}");
    assert_eq!(answer[0]["noop"], true);

    // The partition route and commit at delivery.
    api.push("q", "p2", &["c"]).await;
    let (status, pop) = api
        .get("/api/v1/pop/queue/q/partition/p2?batch=5&autoAck=true&consumerGroup=g")
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(pop["leaseId"], "");
    assert_eq!(pop["consumerGroup"], "g");
    assert_eq!(pop["messages"][0]["transactionId"], "c");
    assert_eq!(pop["messages"][0]["leaseId"], "");
    let (status, _) = api
        .get("/api/v1/pop/queue/q/partition/p2?consumerGroup=g")
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);

    // Namespace pops span the queues of the namespace.
    let (status, _) = api
        .post(
            "/api/v1/configure",
            json!({"queue": "ns-a", "namespace": "billing", "options": {}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    api.push("ns-a", "Default", &["n1"]).await;
    let (status, pop) = api
        .get("/api/v1/pop?namespace=billing&batch=10&wait=false")
        .await;
    assert_eq!(status, StatusCode::OK, "{pop}");
    assert_eq!(pop["messages"][0]["queue"], "ns-a");
}

async fn kafka_records_pop_with_their_encodings(api: &Api) {
    let record = |key: Option<&'static [u8]>, value: Option<&'static [u8]>| PushItem {
        queue: "topic".into(),
        partition: "0".into(),
        record: Record {
            message_id: storage::new_message_id(),
            transaction_id: None,
            trace_id: None,
            producer_sub: None,
            content: Content::Kafka(KafkaRecord {
                key: key.map(Bytes::from_static),
                value: value.map(Bytes::from_static),
                headers: vec![
                    Header {
                        key: Bytes::from_static(b"h"),
                        value: Some(Bytes::from_static(b"text")),
                    },
                    Header {
                        key: Bytes::from_static(b"h"),
                        value: Some(Bytes::from_static(&[0xff])),
                    },
                    Header {
                        key: Bytes::from_static(b"nil"),
                        value: None,
                    },
                ],
                timestamp_ms: 1_700_000_000_000,
                txn: None,
            }),
        },
    };
    api.state
        .engine
        .push(vec![
            record(Some(b"k1"), Some(br#"{"n":1}"#)),
            record(None, Some(&[0, 159, 146, 150])),
            record(Some(&[0xc3, 0x28]), None),
        ])
        .await
        .expect("push");
    let (status, pop) = api.get("/api/v1/pop/queue/topic?batch=10").await;
    assert_eq!(status, StatusCode::OK);
    let m = pop["messages"].as_array().expect("messages");
    assert_eq!(m[0]["data"], json!({"n": 1}));
    assert!(m[0].get("dataEncoding").is_none());
    assert_eq!(m[0]["key"], "k1");
    assert_eq!(m[0]["timestamp"], 1_700_000_000_000_i64);
    assert_eq!(
        m[0]["headers"],
        json!([{"key": "h", "value": "text"}, {"key": "h", "value": "/w==", "encoding": "base64"}, {"key": "nil", "value": null}])
    );
    assert_eq!(m[1]["data"], "AJ+Slg==");
    assert_eq!(m[1]["dataEncoding"], "base64");
    assert_eq!(m[1]["key"], Value::Null);
    assert_eq!(m[2]["data"], Value::Null);
    assert_eq!(m[2]["key"], "wyg=");
    assert_eq!(m[2]["keyEncoding"], "base64");
    // A minted transaction id acks like any other.
    let (_, answer) = api
        .post(
            "/api/v1/ack",
            json!({"transactionId": m[1]["transactionId"], "partitionId": m[1]["partitionId"], "leaseId": m[1]["leaseId"]}),
        )
        .await;
    assert_eq!(answer[0]["success"], true, "{answer}");
}

async fn bad_acks_and_pops_are_refused(api: &Api) {
    for (body, error) in [
        (json!({"partitionId": "1"}), "transactionId is required"),
        (
            json!({"transactionId": "t"}),
            "partitionId is required to ensure message uniqueness",
        ),
        (json!([1]), "the body must be a JSON object"),
    ] {
        let (status, answer) = api.post("/api/v1/ack", body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(answer["error"], error);
    }
    let (status, answer) = api.post("/api/v1/ack/batch", json!({})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(answer["error"], "acknowledgments array is required");
    let (status, answer) = api
        .post(
            "/api/v1/ack/batch",
            json!({"acknowledgments": [{"transactionId": "t", "partitionId": "1"}, {"partitionId": "1"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        answer["error"],
        "acknowledgments[1].transactionId is required"
    );

    // Refusals are 200 with success false and the spec's strings.
    api.push("q", "p", &["a"]).await;
    let (_, pop) = api.get("/api/v1/pop/queue/q").await;
    let pid = pop["partitionId"].clone();
    let (status, answer) = api
        .post(
            "/api/v1/ack/batch",
            json!({"acknowledgments": [
                {"transactionId": "a", "partitionId": pid, "leaseId": "someone-else"},
                {"transactionId": "zzz", "partitionId": pid, "leaseId": pop["leaseId"]},
                {"transactionId": "a", "partitionId": "not-a-number"},
                {"transactionId": "a", "partitionId": "987654"},
            ]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer[0]["error"], "invalid or expired lease");
    assert_eq!(
        answer[1]["error"],
        "transaction is unresolvable, already committed, or acknowledgment is stale"
    );
    assert_eq!(answer[2]["error"], "partitionId is not a partition id");
    assert_eq!(answer[3]["error"], "no partition 987654");
    assert!(answer
        .as_array()
        .expect("array")
        .iter()
        .all(|a| a["success"] == false));

    let (status, answer) = api
        .get("/api/v1/pop/queue/q?conflation=true&consumerGroup=g")
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(answer["success"], false);
    assert_eq!(answer["messages"], json!([]));
    let (status, _) = api.get("/api/v1/pop/queue/q?batch=lots").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = api
        .get("/api/v1/pop/queue/q?subscriptionFrom=whenever&consumerGroup=g")
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = api.get("/api/v1/pop").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

async fn failed_acks_end_in_the_dlq_listing(api: &Api) {
    api.post(
        "/api/v1/configure",
        json!({"queue": "risky", "options": {"retryLimit": 1, "retryDelay": 0}}),
    )
    .await;
    api.push("risky", "Default", &["job-1"]).await;
    for attempt in 1..=2 {
        let (status, pop) = api
            .get("/api/v1/pop/queue/risky?batch=1&consumerGroup=workers")
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(pop["messages"][0]["deliveryAttempt"], attempt);
        let m = &pop["messages"][0];
        let (_, answer) = api
            .post(
                "/api/v1/ack",
                json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"], "status": "failed", "error": format!("boom {attempt}"), "consumerGroup": "workers", "leaseId": m["leaseId"]}),
            )
            .await;
        assert_eq!(answer[0]["success"], true);
        assert_eq!(answer[0]["dlq"], attempt == 2);
    }
    let (status, _) = api
        .get("/api/v1/pop/queue/risky?consumerGroup=workers")
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, dlq) = api
        .get("/api/v1/dlq?queue=risky&consumerGroup=workers&limit=10&offset=0")
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(dlq["total"], 1);
    assert_eq!(
        (dlq["limit"].clone(), dlq["offset"].clone()),
        (json!(10), json!(0))
    );
    let letter = &dlq["messages"][0];
    assert_eq!(letter["transactionId"], "job-1");
    assert_eq!(letter["errorMessage"], "boom 2");
    assert_eq!(letter["retryCount"], 1);
    assert_eq!(letter["data"], json!({"t": "job-1"}));
    assert_eq!(letter["consumerGroup"], "workers");
    let (_, none) = api
        .get("/api/v1/dlq?queue=risky&consumerGroup=others")
        .await;
    assert_eq!(none["total"], 0);
    assert_eq!(none["messages"], json!([]));
    let (status, _) = api.get("/api/v1/dlq").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (_, queue) = api.get("/api/v1/resources/queues/risky").await;
    assert_eq!(queue["totals"]["deadLetter"], 1);
    assert_eq!(queue["totals"]["completed"], 1);
}

/// Partition ids as numbers or (padded) text, statuses as names in any
/// case or as booleans: each means what it says, and any other type is
/// refused with the field's name.
async fn acks_take_ids_and_statuses_in_every_form_clients_send(api: &Api) {
    api.post(
        "/api/v1/configure",
        json!({"queue": "loose", "options": {"retryLimit": 3, "retryDelay": 0}}),
    )
    .await;
    api.push("loose", "Default", &["n", "s", "f", "u"]).await;
    let (_, pop) = api
        .get("/api/v1/pop/queue/loose?batch=4&consumerGroup=g")
        .await;
    let lease = pop["leaseId"].clone();
    let text = pop["partitionId"]
        .as_str()
        .expect("partition id text")
        .to_owned();
    let number: i64 = text.parse().expect("a decimal id");
    let ack = |txn: &str, pid: Value, status: Value| json!({"transactionId": txn, "partitionId": pid, "status": status, "leaseId": lease});
    let (status, answer) = api
        .post(
            "/api/v1/ack/batch",
            json!({"consumerGroup": "g", "acknowledgments": [
                ack("n", json!(number), json!(true)),
                ack("s", json!(format!(" {text} ")), json!("COMPLETED")),
                ack("f", json!(text), json!(false)),
                ack("u", json!(number), json!("Failed")),
            ]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let results = answer.as_array().expect("one result per item");
    assert!(results.iter().all(|r| r["success"] == true), "{answer}");
    assert!(
        results.iter().all(|r| r["queueName"] == "loose"),
        "{answer}"
    );
    // `false` and "Failed" failed: both come back, the completed ones not.
    let (_, again) = api
        .get("/api/v1/pop/queue/loose?batch=4&consumerGroup=g")
        .await;
    let redelivered: Vec<&str> = again["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["transactionId"].as_str())
        .collect();
    assert_eq!(redelivered, ["f", "u"]);

    for (field, value, error) in [
        (
            "partitionId",
            json!([number]),
            "acknowledgments[0].partitionId is required to ensure message uniqueness",
        ),
        (
            "partitionId",
            json!(""),
            "acknowledgments[0].partitionId is required to ensure message uniqueness",
        ),
        (
            "status",
            json!(1),
            "acknowledgments[0].status must be a string",
        ),
        (
            "status",
            json!({"s": "failed"}),
            "acknowledgments[0].status must be a string",
        ),
    ] {
        let mut item =
            json!({"transactionId": "f", "partitionId": number, "leaseId": again["leaseId"]});
        item[field] = value;
        let (status, answer) = api
            .post(
                "/api/v1/ack/batch",
                json!({"consumerGroup": "g", "acknowledgments": [item]}),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{field}");
        assert_eq!(answer["error"], error);
    }
}

async fn lease_renewal_answers(api: &Api) {
    api.push("q", "p", &["a"]).await;
    let (_, pop) = api.get("/api/v1/pop/queue/q").await;
    let lease = pop["leaseId"].as_str().expect("lease").to_owned();
    let (status, answer) = api
        .call("POST", &format!("/api/v1/lease/{lease}/extend"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer["success"], true);
    assert_eq!(answer["renewed"], 1);
    assert_eq!(answer["newExpiresAt"], answer["expiresAt"]);
    assert_eq!(answer["lease_expires_at"], answer["expiresAt"]);
    let (_, answer) = api
        .post(
            &format!("/api/v1/lease/{lease}/extend"),
            json!({"seconds": 600}),
        )
        .await;
    assert_eq!(answer["success"], true);
    let (status, answer) = api
        .post("/api/v1/lease/nope/extend", json!({"seconds": 10}))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer["success"], false);
    assert_eq!(answer["renewed"], 0);
    assert_eq!(answer["newExpiresAt"], Value::Null);
    let (status, _) = api
        .post(
            &format!("/api/v1/lease/{lease}/extend"),
            json!({"seconds": "long"}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

async fn consumer_group_endpoints(api: &Api) {
    api.push("orders", "p", &["a", "b", "c"]).await;
    let (_, pop) = api
        .get("/api/v1/pop/queue/orders?batch=1&consumerGroup=billing")
        .await;
    let m = &pop["messages"][0];
    api.post(
        "/api/v1/ack",
        json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"], "consumerGroup": "billing", "leaseId": m["leaseId"]}),
    )
    .await;

    let (status, list) = api.get("/api/v1/consumer-groups").await;
    assert_eq!(status, StatusCode::OK);
    let billing = list
        .as_array()
        .expect("array")
        .iter()
        .find(|g| g["name"] == "billing")
        .expect("billing listed")
        .clone();
    assert_eq!(billing["queueName"], "orders");
    assert_eq!(billing["totalLag"], 2);
    assert_eq!(billing["state"], "Lagging");
    assert_eq!(billing["subscriptionMode"], "all");

    // `lagging` is a route of its own, not a group called "lagging".
    let (status, lagging) = api
        .get("/api/v1/consumer-groups/lagging?minLagSeconds=0")
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(lagging[0]["consumer_group"], "billing");
    assert_eq!(lagging[0]["offset_lag"], 2);

    let (_, described) = api.get("/api/v1/consumer-groups/billing").await;
    assert_eq!(described["orders"]["partitions"][0]["offsetLag"], 2);
    assert_eq!(described["orders"]["partitions"][0]["totalConsumed"], 1);
    let (_, unknown) = api.get("/api/v1/consumer-groups/nobody").await;
    assert_eq!(unknown, json!({}));

    let (status, seek) = api
        .call(
            "POST",
            "/api/v1/consumer-groups/billing/queues/orders/seek",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(seek["seekToEnd"], true);
    assert_eq!(seek["partitionsUpdated"], 1);
    let (status, _) = api
        .get("/api/v1/pop/queue/orders?consumerGroup=billing")
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, seek) = api
        .post(
            "/api/v1/consumer-groups/billing/queues/orders/seek",
            json!({"timestamp": "2000-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(seek["seekToEnd"], false);
    let (_, pop) = api
        .get("/api/v1/pop/queue/orders?batch=10&consumerGroup=billing")
        .await;
    assert_eq!(pop["messages"].as_array().expect("messages").len(), 3);
    let (status, answer) = api
        .post(
            "/api/v1/consumer-groups/billing/queues/orders/seek",
            json!({"toEnd": false}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(answer["error"], "Must specify toEnd=true or a timestamp");
    let (status, _) = api
        .post(
            "/api/v1/consumer-groups/billing/queues/nope/seek",
            json!({"toEnd": true}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (status, sub) = api
        .post(
            "/api/v1/consumer-groups/billing/subscription",
            json!({"subscriptionTimestamp": "2030-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(sub["rowsUpdated"], 1);
    let (status, _) = api
        .post("/api/v1/consumer-groups/billing/subscription", json!({}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, refreshed) = api.call("POST", "/api/v1/stats/refresh", None).await;
    assert_eq!(
        (status, refreshed),
        (StatusCode::OK, json!({"success": true}))
    );

    let (status, deleted) = api
        .call(
            "DELETE",
            "/api/v1/consumer-groups/billing/queues/orders?deleteMetadata=false",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(deleted["deletedPartitions"], 1);
    assert_eq!(deleted["metadataDeleted"], false);
    let (_, deleted) = api
        .call(
            "DELETE",
            "/api/v1/consumer-groups/billing?deleteMetadata=true",
            None,
        )
        .await;
    assert_eq!(deleted["success"], true);
    assert_eq!(deleted["metadataDeleted"], true);
}

async fn depth_and_message_lookup(api: &Api) {
    api.push("q", "p", &["a", "b", "c", "d"]).await;
    let (_, pop) = api.get("/api/v1/pop/queue/q?batch=2").await;
    let (_, queue) = api.get("/api/v1/resources/queues/q").await;
    let stats = &queue["partitions"][0]["stats"];
    assert_eq!(
        (
            stats["total"].clone(),
            stats["pending"].clone(),
            stats["processing"].clone()
        ),
        (json!(4), json!(2), json!(2))
    );
    let (status, depth) = api.get("/api/v1/resources/queues/q/depth").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(depth["pending"], 4);
    assert_eq!(
        depth["partitions"][0],
        json!({"partition": "p", "pending": 4})
    );
    let (status, _) = api.get("/api/v1/resources/queues/nope/depth").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, list) = api.get("/api/v1/resources/queues").await;
    assert_eq!(list["queues"][0]["messages"]["processing"], 2);

    let pid = pop["partitionId"].as_str().expect("pid");
    let (status, m) = api.get(&format!("/api/v1/messages/{pid}/a")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(m["status"], "processing");
    assert_eq!(m["payload"], json!({"t": "a"}));
    assert!(m["leaseExpiresAt"].is_string());
    let (_, m) = api.get(&format!("/api/v1/messages/{pid}/d")).await;
    assert_eq!(m["status"], "pending");
    let (status, _) = api.get(&format!("/api/v1/messages/{pid}/zzz")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = api.get("/api/v1/messages/xyz/a").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

async fn a_waiting_pop_is_woken_by_a_push(api: &Api) {
    let started = Instant::now();
    let (status, _) = api
        .get("/api/v1/pop/queue/slow?wait=true&timeout=300")
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert!(
        started.elapsed() < Duration::from_millis(300),
        "answered before the timeout"
    );
    let waiting = {
        let state = api.state.clone();
        tokio::spawn(async move {
            let api = Api { state };
            api.get("/api/v1/pop/queue/slow?wait=true&timeout=10000")
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    api.push("slow", "p", &["x"]).await;
    let (status, pop) = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("woken well before the timeout")
        .expect("task");
    assert_eq!(status, StatusCode::OK);
    assert_eq!(pop["messages"][0]["transactionId"], "x");
}
