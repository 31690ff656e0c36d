//! The HTTP API through its router (no sockets), on both backends: shapes,
//! status codes and the answers to bad input.

mod support;

use axum::http::StatusCode;
use serde_json::{json, Value};
use support::router::Api;

router_tests!(
    configure_answers_the_full_option_set,
    push_answers_per_item_in_order,
    bad_push_bodies_are_refused_and_write_nothing,
    queue_resources_list_get_delete,
    health_and_unknown_routes,
);

async fn configure_answers_the_full_option_set(api: &Api) {
    // Exactly what the 2.6.0 Python client sends.
    let body = json!({
        "queue": "orders", "namespace": null, "task": null,
        "options": {"leaseTime": 300, "retryLimit": 3, "priority": 0, "delayedProcessing": 0,
                    "windowBuffer": 0, "maxSize": 0, "retentionSeconds": 0,
                    "completedRetentionSeconds": 0, "encryptionEnabled": false,
                    "dedupWindowSeconds": 86400, "somethingNew": 1}
    });
    let (status, answer) = api.post("/api/v1/configure", body).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer["configured"], true);
    assert_eq!(answer["queue"], "orders");
    assert_eq!(answer["options"]["dedupWindowSeconds"], 86400);
    assert_eq!(answer["options"]["maxQueueSize"], 0);
    assert!(answer.get("error").is_none());

    // Full replace: a later configure without the window restores 3600.
    let (_, answer) = api
        .post(
            "/api/v1/configure",
            json!({"queue": "orders", "options": {"leaseTime": 5}}),
        )
        .await;
    assert_eq!(answer["options"]["dedupWindowSeconds"], 3600);
    assert_eq!(answer["options"]["leaseTime"], 5);

    // Options at the top level, as raw callers send them.
    let (_, answer) = api
        .post(
            "/api/v1/configure",
            json!({"queue": "raw", "dedupWindowSeconds": 0, "namespace": "ns"}),
        )
        .await;
    assert_eq!(answer["options"]["dedupWindowSeconds"], 0);
    assert_eq!(answer["namespace"], "ns");

    for (body, message) in [
        (json!({"options": {}}), "queue is required"),
        (json!({"queue": null}), "queue is required"),
        (json!({"queue": 7}), "queue is required"),
        (
            json!({"queue": "q", "options": {"dedupWindowSeconds": "1h"}}),
            "dedupWindowSeconds must be an integer",
        ),
        (
            json!({"queue": "q", "options": []}),
            "options must be an object",
        ),
    ] {
        let (status, answer) = api.post("/api/v1/configure", body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(answer["error"], message);
    }
    let (_, listed) = api.call("GET", "/api/v1/resources/queues", None).await;
    let names: Vec<&str> = listed["queues"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|q| q["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["orders", "raw"],
        "refused configures created nothing"
    );
}

async fn push_answers_per_item_in_order(api: &Api) {
    let body = json!({"items": [
        {"queue": "payments", "partition": "customer-42", "payload": {"orderId": 9137, "amount": 99.5}, "transactionId": "order-9137-paid"},
        {"queue": "payments", "payload": "any JSON value"},
        {"queue": "payments", "partition": "customer-42", "payload": 1, "transactionId": "order-9137-paid"},
        {"queue": "payments", "partition": "", "payload": null, "traceId": "not-a-uuid"},
    ]});
    let (status, answer) = api.post("/api/v1/push", body.clone()).await;
    assert_eq!(status, StatusCode::CREATED);
    let items = answer.as_array().expect("array");
    assert_eq!(items.len(), 4);
    for (i, item) in items.iter().enumerate() {
        assert_eq!(item["index"], i);
        assert_eq!(item["queueName"], "payments");
    }
    assert_eq!(items[0]["status"], "queued");
    assert_eq!(items[0]["offset"], 0);
    assert_eq!(items[1]["status"], "queued");
    assert_eq!(
        items[1]["transaction_id"], items[1]["message_id"],
        "a missing id is the message id"
    );
    assert_eq!(items[2]["status"], "duplicate");
    assert_eq!(items[2]["message_id"], items[0]["message_id"]);
    assert_eq!(items[3]["offset"], 1, "an empty partition name is Default");

    // The retry of the whole request: the given id is a duplicate with the
    // original id and offset; the items without an id are new.
    let (_, again) = api.post("/api/v1/push", body).await;
    assert_eq!(again[0]["status"], "duplicate");
    assert_eq!(again[0]["message_id"], items[0]["message_id"]);
    assert_eq!(again[0]["offset"], 0);
    assert_eq!(again[1]["status"], "queued");
    assert_eq!(again[1]["offset"], 2);

    let (status, empty) = api.post("/api/v1/push", json!({"items": []})).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(empty, json!([]));
}

async fn bad_push_bodies_are_refused_and_write_nothing(api: &Api) {
    let cases: Vec<(Vec<u8>, StatusCode, &str)> = vec![
        (
            b"{\"items\": [".to_vec(),
            StatusCode::BAD_REQUEST,
            "malformed JSON",
        ),
        (
            b"not json".to_vec(),
            StatusCode::BAD_REQUEST,
            "malformed JSON",
        ),
        (
            b"{}".to_vec(),
            StatusCode::BAD_REQUEST,
            "items array is required",
        ),
        (
            b"{\"items\": {}}".to_vec(),
            StatusCode::BAD_REQUEST,
            "items",
        ),
        (
            b"{\"items\": [{\"queue\": \"ok\"}, {\"partition\": \"p\"}]}".to_vec(),
            StatusCode::BAD_REQUEST,
            "items[1].queue is required",
        ),
        (
            b"{\"items\": [{\"queue\": 5}]}".to_vec(),
            StatusCode::BAD_REQUEST,
            "items[0].queue",
        ),
        (
            b"{\"items\": [{\"queue\": \"ok\", \"transactionId\": 12}]}".to_vec(),
            StatusCode::BAD_REQUEST,
            "items[0].transactionId",
        ),
        (
            b"{\"items\": [{\"queue\": \"a/b\"}]}".to_vec(),
            StatusCode::BAD_REQUEST,
            "cannot appear in a name",
        ),
        (
            json!({"items": [{"queue": "ok"}, {"queue": "x".repeat(600)}]})
                .to_string()
                .into_bytes(),
            StatusCode::PAYLOAD_TOO_LARGE,
            "longer than 512 bytes",
        ),
        (
            json!({"items": [{"queue": "ok", "transactionId": "t".repeat(65_536)}]})
                .to_string()
                .into_bytes(),
            StatusCode::BAD_REQUEST,
            "at most 65535",
        ),
        (
            json!({"items": [{"queue": "ok", "payload": "x".repeat(2 * 1024 * 1024)}]})
                .to_string()
                .into_bytes(),
            StatusCode::PAYLOAD_TOO_LARGE,
            "exceeds the limit",
        ),
    ];
    for (body, status, message) in cases {
        let (got, answer) = api.call("POST", "/api/v1/push", Some(body)).await;
        assert_eq!(got, status, "{answer}");
        let error = answer["error"].as_str().expect("error message");
        assert!(
            error.contains(message),
            "{error:?} should mention {message:?}"
        );
    }
    let (_, listed) = api.call("GET", "/api/v1/resources/queues", None).await;
    assert_eq!(listed["queues"], json!([]), "nothing was written");
}

async fn queue_resources_list_get_delete(api: &Api) {
    let (status, answer) = api
        .call("GET", "/api/v1/resources/queues/missing", None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(answer["error"], "Queue not found");

    api.post(
        "/api/v1/configure",
        json!({"queue": "q", "options": {"dedupWindowSeconds": 10}}),
    )
    .await;
    let items: Vec<Value> = (0..3)
        .map(|i| json!({"queue": "q", "partition": "p", "payload": i}))
        .collect();
    api.post("/api/v1/push", json!({"items": items})).await;

    let (status, q) = api.call("GET", "/api/v1/resources/queues/q", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(q["name"], "q");
    assert_eq!(q["options"]["dedupWindowSeconds"], 10);
    let parts = q["partitions"].as_array().expect("partitions");
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[0]["name"], "Default");
    assert_eq!(parts[0]["stats"]["total"], 0);
    assert_eq!(parts[0]["oldestMessage"], Value::Null);
    assert_eq!(parts[1]["name"], "p");
    assert_eq!(parts[1]["kafkaIndex"], 1);
    assert_eq!(parts[1]["stats"]["total"], 3);
    assert!(parts[1]["newestMessage"]
        .as_str()
        .expect("time")
        .ends_with('Z'));
    assert_eq!(q["totals"]["total"], 3);

    let (_, listed) = api.call("GET", "/api/v1/resources/queues", None).await;
    assert_eq!(listed["queues"][0]["partitions"], 2);
    assert_eq!(listed["queues"][0]["messages"]["total"], 3);

    // Names in paths are percent-decoded.
    api.post("/api/v1/push", json!({"items": [{"queue": "with space"}]}))
        .await;
    let (status, _) = api
        .call("GET", "/api/v1/resources/queues/with%20space", None)
        .await;
    assert_eq!(status, StatusCode::OK);

    let (status, deleted) = api.call("DELETE", "/api/v1/resources/queues/q", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        deleted,
        json!({"deleted": true, "existed": true, "queue": "q"})
    );
    let (status, deleted) = api.call("DELETE", "/api/v1/resources/queues/q", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(deleted["existed"], false);
}

async fn health_and_unknown_routes(api: &Api) {
    let (status, health) = api.call("GET", "/health", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(health["status"], "healthy");
    let (status, answer) = api.call("GET", "/api/v1/nothing-here", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        answer,
        json!({"error": "not found", "code": "no_such_route"})
    );
}
