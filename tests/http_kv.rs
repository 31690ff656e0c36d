//! `POST /api/v1/kv` and `POST /api/v1/transaction` through the router, on
//! both backends: the wire shapes, status codes and error envelopes.

mod support;

use axum::http::StatusCode;
use serde_json::json;
use support::router::Api;

router_tests!(
    kv_answers_index_aligned_results,
    kv_required_failure_answers_ok_false,
    kv_bad_calls_answer_the_kv_envelope,
    transaction_answers_flat_results_and_rollbacks,
    transaction_refuses_bad_bundles_and_timers,
);

async fn kv_answers_index_aligned_results(api: &Api) {
    let (status, body) = api
        .post(
            "/api/v1/kv",
            json!({"operations": [
                {"op": "putIfAbsent", "ns": "n", "key": "k", "value": {"a": 1}, "ttlSeconds": 60},
                {"op": "putIfAbsent", "ns": "n", "key": "k2", "value": true, "forever": true},
                {"op": "get", "ns": "n", "key": "k"},
                {"op": "get", "ns": "n", "key": "missing"},
                {"op": "getMany", "ns": "n", "keys": ["k", "zz"]},
                {"op": "getPrefix", "ns": "n", "prefix": "k", "limit": 1, "keysOnly": true},
                {"op": "incr", "ns": "n", "key": "c", "delta": 2, "forever": true},
                {"op": "check", "ns": "n", "key": "none", "expect": 0},
            ]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let r = body["results"].as_array().expect("results");
    assert_eq!(r.len(), 8);
    assert_eq!(r[0]["op"], "putIfAbsent");
    assert_eq!(r[0]["applied"], true);
    assert_eq!(r[0]["value"], json!({"a": 1}));
    assert!(r[0]["version"].as_i64().unwrap_or(0) > 0);
    assert_eq!(r[2]["found"], true);
    assert_eq!(r[2]["version"], r[0]["version"]);
    assert!(r[2]["expiresAt"].is_string());
    assert!(r[2]["updatedAt"].is_string());
    assert_eq!(
        r[3],
        json!({"index": 3, "op": "get", "found": false, "key": "missing"})
    );
    assert_eq!(r[4]["rows"][0]["key"], "k");
    assert_eq!(r[4]["missing"], json!(["zz"]));
    assert_eq!(r[4]["truncated"], false);
    assert_eq!(r[5]["rows"].as_array().map(Vec::len), Some(1));
    assert!(r[5]["rows"][0].get("value").is_none());
    assert_eq!(r[5]["truncated"], true);
    assert_eq!(r[5]["nextAfter"], "k");
    assert_eq!(r[6]["value"], 2);
    assert_eq!(r[7]["applied"], true);

    // A bare array is accepted; a lost race answers the current row.
    let (status, body) = api
        .post(
            "/api/v1/kv",
            json!([{"op": "putIfAbsent", "ns": "n", "key": "k", "value": 9, "ttlSeconds": 5}]),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let lost = &body["results"][0];
    assert_eq!(lost["applied"], false);
    assert_eq!(lost["reason"], "exists");
    assert_eq!(lost["value"], json!({"a": 1}));
    assert_eq!(lost["version"], r[0]["version"]);
}

async fn kv_required_failure_answers_ok_false(api: &Api) {
    let ops = json!({"operations": [
        {"op": "put", "ns": "n", "key": "other", "value": 1, "forever": true},
        {"op": "putIfAbsent", "ns": "n", "key": "gate", "value": true, "ttlSeconds": 60, "required": true},
    ]});
    let (status, first) = api.post("/api/v1/kv", ops.clone()).await;
    assert_eq!(status, StatusCode::OK);
    let version = first["results"][1]["version"].clone();
    let (status, body) = api.post("/api/v1/kv", ops).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({"ok": false, "reason": "kv_precondition", "failedIndex": 1,
               "kvReason": "exists", "version": version, "value": true})
    );
}

async fn kv_bad_calls_answer_the_kv_envelope(api: &Api) {
    let cases = [
        (
            json!([{"op": "put", "ns": "n", "key": "k", "value": 1}]),
            StatusCode::BAD_REQUEST,
            "kv_expiry_not_specified",
        ),
        (
            json!([{"op": "get", "ns": "", "key": "k"}]),
            StatusCode::BAD_REQUEST,
            "kv_bad_ns",
        ),
        (
            json!([{"op": "get", "ns": "n"}]),
            StatusCode::BAD_REQUEST,
            "kv_bad_key",
        ),
        (
            json!([{"op": "frob", "ns": "n", "key": "k"}]),
            StatusCode::BAD_REQUEST,
            "kv_unknown_op",
        ),
        (
            json!([{"op": "put", "ns": "n", "key": "k", "value": 1, "forever": true},
                   {"op": "delete", "ns": "n", "key": "k"}]),
            StatusCode::BAD_REQUEST,
            "kv_duplicate_write",
        ),
        (
            json!([{"op": "put", "ns": "n", "key": "k", "value": "x".repeat(70_000), "forever": true}]),
            StatusCode::PAYLOAD_TOO_LARGE,
            "kv_value_too_large",
        ),
        (
            json!({"operations": 3}),
            StatusCode::BAD_REQUEST,
            "kv_bad_body",
        ),
    ];
    for (body, status, reason) in cases {
        let (got, answer) = api.post("/api/v1/kv", body.clone()).await;
        assert_eq!(got, status, "{body} -> {answer}");
        assert_eq!(answer["reason"], reason, "{answer}");
        let code = if status == StatusCode::BAD_REQUEST {
            "kv_bad_request"
        } else {
            "payload_too_large"
        };
        assert_eq!(answer["error"], code);
        assert!(answer["detail"].is_string());
    }
}

async fn transaction_answers_flat_results_and_rollbacks(api: &Api) {
    let (status, _) = api
        .post(
            "/api/v1/push",
            json!({"items": [{"queue": "tin", "transactionId": "in-1", "payload": {"n": 1}}]}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, popped) = api.get("/api/v1/pop/queue/tin?batch=1&wait=false").await;
    assert_eq!(status, StatusCode::OK, "{popped}");
    let m = &popped["messages"][0];
    let lease = m["leaseId"].clone();
    let bundle = |push_id: &str| {
        json!({
            "operations": [
                {"type": "ack", "transactionId": "in-1", "partitionId": m["partitionId"], "status": "completed"},
                {"type": "push", "items": [
                    {"queue": "tout", "payload": {"a": 1}, "transactionId": push_id},
                    {"queue": "tout", "payload": {"a": 1}, "transactionId": push_id},
                ]},
            ],
            "requiredLeases": [lease],
            "kv": [{"op": "putIfAbsent", "ns": "done", "key": "in-1", "value": true, "ttlSeconds": 600, "required": true}],
        })
    };
    let (status, body) = api.post("/api/v1/transaction", bundle("out-1")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["success"], true, "{body}");
    let r = body["results"].as_array().expect("results");
    assert_eq!(
        r.len(),
        4,
        "one per ack, per pushed item, per kv op: {body}"
    );
    assert_eq!(r[0]["type"], "ack");
    assert_eq!(r[0]["transactionId"], "in-1");
    assert_eq!(r[1]["type"], "push");
    assert_eq!(r[1]["queueName"], "tout");
    assert!(r[1].get("duplicate").is_none());
    assert_eq!(r[2]["duplicate"], true, "a repeat inside the bundle");
    assert_eq!(r[2]["messageId"], r[1]["messageId"]);
    assert_eq!(
        (
            r[3]["index"].clone(),
            r[3]["type"].clone(),
            r[3]["opIndex"].clone(),
            r[3]["applied"].clone()
        ),
        (json!(3), json!("kv"), json!(0), json!(true))
    );

    // Again: the stored push id rolls everything back.
    let (status, body) = api.post("/api/v1/transaction", bundle("out-1")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["success"], false);
    assert_eq!(body["reason"], "duplicate");
    assert!(
        body["error"]
            .as_str()
            .is_some_and(|e| e.contains("duplicate")),
        "{body}"
    );
    assert_eq!(body["results"], json!([]));

    // With a fresh push id the ack is refused first (already acknowledged).
    let (_, body) = api.post("/api/v1/transaction", bundle("out-2")).await;
    assert_eq!(body["reason"], "rejected_ack", "{body}");

    // Only the gate: kv_precondition with the flat index and the current row.
    let (_, body) = api
        .post(
            "/api/v1/transaction",
            json!({"operations": [{"type": "push", "queue": "tout", "payload": 1, "transactionId": "out-3"}],
                   "kv": [{"op": "putIfAbsent", "ns": "done", "key": "in-1", "value": true, "ttlSeconds": 600, "required": true}]}),
        )
        .await;
    assert_eq!(body["success"], false);
    assert_eq!(body["reason"], "kv_precondition");
    assert_eq!(body["failedIndex"], 1);
    assert_eq!(body["kvReason"], "exists");
    assert_eq!(body["value"], true);
    assert!(body["version"].as_i64().is_some_and(|v| v > 0));
    let (_, queue) = api.get("/api/v1/resources/queues/tout").await;
    assert_eq!(
        queue["totals"]["total"], 1,
        "only the first bundle's push is stored: {queue}"
    );
}

async fn transaction_refuses_bad_bundles_and_timers(api: &Api) {
    let cases = [
        json!({}),
        json!({"operations": [{"type": "kv", "op": "get"}]}),
        json!({"operations": [{"type": "ack", "transactionId": "t", "partitionId": "abc"}]}),
        json!({"operations": [{"type": "push", "queue": "q", "payload": 1}],
               "timers": [{"op": "schedule", "queue": "q", "timerKey": "k", "delayMs": 10}]}),
        json!({"kv": [{"op": "getPrefix", "ns": "n", "prefix": "a"}]}),
        json!({"kv": [{"op": "put", "ns": "n", "key": "k", "value": 1}]}),
    ];
    for bundle in cases {
        let (status, body) = api.post("/api/v1/transaction", bundle.clone()).await;
        assert_eq!(status, StatusCode::OK, "{bundle}");
        assert_eq!(body["success"], false, "{bundle} -> {body}");
        assert_eq!(body["reason"], "bad_request", "{bundle} -> {body}");
        assert!(body["error"].is_string());
    }
    // The timers bundle pushed nothing.
    let (status, _) = api.get("/api/v1/resources/queues/q").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
