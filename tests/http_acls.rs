//! Kafka ACLs on the HTTP door, against the running binary with
//! `--authorizer acl --http-auth basic`: every ACL is created over Kafka
//! (CreateAcls on the SASL_PLAINTEXT listener, as the super user `admin`),
//! and the HTTP routes obey it. The matrix: a principal the ACLs allow
//! (alice) and one they do not (bob) on push, pop, ack, lease renewal,
//! configure, delete, dead letters, message lookup, consumer groups,
//! transaction and KV; each 403 is followed by a check, through alice or
//! the super user, that nothing was written, leased or acknowledged. On
//! SQLite and PostgreSQL; without `--http-auth` the principal is
//! `User:ANONYMOUS` and the ACL's host is the client's address; on
//! PostgreSQL an ACL created through one broker is enforced by another's
//! HTTP door; the `queen-mq` Python client sees a 403 as an error.

mod support;

use std::time::{Duration, Instant};

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::{ApiKey, CreateAclsRequest, CreateAclsResponse};
use kafka_protocol::protocol::StrBytes;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use support::pki::Pki;
use support::security::{add_user, Raw};
use support::{Broker, TestDb};

const ADMIN: (&str, &str) = ("admin", "admin-secret");
const ALICE: (&str, &str) = ("alice", "alice-secret");
const BOB: (&str, &str) = ("bob", "bob-secret");

// Kafka's codes.
const TOPIC: i8 = 2;
const GROUP: i8 = 3;
const CLUSTER: i8 = 4;
const LITERAL: i8 = 3;
const PREFIXED: i8 = 4;
const READ: i8 = 3;
const WRITE: i8 = 4;
const CREATE: i8 = 5;
const DELETE: i8 = 6;
const ALTER_CONFIGS: i8 = 11;
const ALLOW: i8 = 3;

/// One binding to create: `principal` from `host` is allowed `operation`
/// on the resource `(type, name, pattern)`.
fn allow(resource: (i8, &str, i8), principal: &str, host: &str, operation: i8) -> AclCreation {
    let text = |s: &str| StrBytes::from_string(s.to_owned());
    AclCreation::default()
        .with_resource_type(resource.0)
        .with_resource_name(text(resource.1))
        .with_resource_pattern_type(resource.2)
        .with_principal(text(principal))
        .with_host(text(host))
        .with_operation(operation)
        .with_permission_type(ALLOW)
}

/// Creates `acls` with Kafka's CreateAcls, as the super user, through the
/// SASL_PLAINTEXT listener of `broker`.
fn create_acls(broker: &Broker, acls: Vec<AclCreation>) {
    let mut raw = Raw::plain(&broker.listener("SASL_PLAINTEXT"), ADMIN);
    let answer: CreateAclsResponse = raw
        .call(
            ApiKey::CreateAcls,
            3,
            &CreateAclsRequest::default().with_creations(acls),
        )
        .expect("CreateAcls answered");
    for r in answer.results {
        assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    }
}

/// What alice may do: everything a producer and a consumer of the queues
/// `acl-*` do, in group `workers`, and KV.
fn alices_acls() -> Vec<AclCreation> {
    let queues = (TOPIC, "acl-", PREFIXED);
    let mut acls: Vec<AclCreation> = [WRITE, READ, CREATE, DELETE, ALTER_CONFIGS]
        .into_iter()
        .map(|op| allow(queues, "User:alice", "*", op))
        .collect();
    acls.push(allow((GROUP, "workers", LITERAL), "User:alice", "*", READ));
    for op in [READ, WRITE] {
        acls.push(allow(
            (CLUSTER, "kafka-cluster", LITERAL),
            "User:alice",
            "*",
            op,
        ));
    }
    acls
}

/// What bob may do: read in group `workers` (never on alice's queues), and
/// write to the queues `bob-*`, without creating them.
fn bobs_acls() -> Vec<AclCreation> {
    vec![
        allow((GROUP, "workers", LITERAL), "User:bob", "*", READ),
        allow((TOPIC, "bob-", PREFIXED), "User:bob", "*", WRITE),
    ]
}

/// ACLs on, `admin` the super user, Basic authentication, every Kafka
/// listener (CreateAcls goes through SASL_PLAINTEXT).
fn secured(url: &str, pki: &Pki, http_auth: bool) -> Broker {
    let mut flags = pki.flags("none");
    flags.extend(
        ["--authorizer", "acl", "--super-users", "User:admin"]
            .into_iter()
            .map(str::to_owned),
    );
    if http_auth {
        flags.extend(["--http-auth", "basic"].into_iter().map(str::to_owned));
    }
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    Broker::start(url, &flags)
}

/// The HTTP API of a broker as one user (or nobody).
struct As {
    base: String,
    user: Option<(&'static str, &'static str)>,
    client: reqwest::Client,
}

impl As {
    fn new(broker: &Broker, user: Option<(&'static str, &'static str)>) -> Self {
        Self {
            base: broker.http.clone(),
            user,
            client: reqwest::Client::new(),
        }
    }

    /// The status and JSON answer (`null` when none) of a request.
    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        if let Some((user, password)) = self.user {
            request = request.basic_auth(user, Some(password));
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("HTTP request");
        let status = response.status();
        let text = response.text().await.expect("body");
        let value = serde_json::from_str(&text).unwrap_or(Value::Null);
        (status, value)
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::GET, path, None).await
    }

    async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::POST, path, Some(body)).await
    }

    async fn delete(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::DELETE, path, None).await
    }

    /// The answer of a request that must succeed.
    async fn ok(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        let (status, answer) = self.call(method, path, body).await;
        assert!(status.is_success(), "{path}: {status} {answer}");
        answer
    }

    /// Pushes `n` messages to `queue`, ids `{queue}-{i}`.
    async fn push(&self, queue: &str, n: usize) -> (StatusCode, Value) {
        let items: Vec<Value> = (0..n)
            .map(|i| json!({"queue": queue, "payload": {"i": i}, "transactionId": format!("{queue}-{i}")}))
            .collect();
        self.post("/api/v1/push", json!({ "items": items })).await
    }

    /// The messages of `queue` no group has consumed (`None`: no queue).
    async fn depth(&self, queue: &str) -> Option<i64> {
        let (status, body) = self
            .get(&format!("/api/v1/resources/queues/{queue}/depth"))
            .await;
        match status {
            StatusCode::NOT_FOUND => None,
            StatusCode::OK => body["pending"].as_i64(),
            other => panic!("depth of {queue}: {other} {body}"),
        }
    }
}

/// Asserts a 403 refusal naming `operation` on `resource`.
fn forbidden(what: &str, (status, body): (StatusCode, Value), operation: &str, resource: &str) {
    assert_eq!(status, StatusCode::FORBIDDEN, "{what}: {body}");
    assert_eq!(body["error"], "forbidden", "{what}: {body}");
    assert_eq!(body["operation"], operation, "{what}: {body}");
    assert_eq!(body["resourceName"], resource, "{what}: {body}");
}

/// The transaction ids of a pop's answer.
fn ids(pop: &Value) -> Vec<String> {
    pop["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .map(|m| m["transactionId"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

support::url_scenarios!(
    the_acl_matrix_on_the_http_door,
    anonymous_callers_are_matched_by_principal_and_host,
    the_python_client_sees_a_refusal_as_an_error
);

async fn the_acl_matrix_on_the_http_door(url: &str) {
    let pki = Pki::new();
    let broker = secured(url, &pki, true);
    for (name, password) in [ADMIN, ALICE, BOB] {
        add_user(url, name, password, false, &[]);
    }
    let admin = As::new(&broker, Some(ADMIN));
    let alice = As::new(&broker, Some(ALICE));
    let bob = As::new(&broker, Some(BOB));
    let queue = "acl-orders";

    // Before any ACL, alice may do nothing either; /health stays open.
    forbidden(
        "alice before any ACL",
        alice.push(queue, 1).await,
        "WRITE",
        queue,
    );
    assert_eq!(
        admin.depth(queue).await,
        None,
        "the refused push created nothing"
    );
    let nobody = As::new(&broker, None);
    assert_eq!(nobody.get("/health").await.0, StatusCode::OK);
    create_acls(&broker, alices_acls());
    create_acls(&broker, bobs_acls());

    // Configure: CREATE for a new queue, ALTER_CONFIGS for an existing one.
    let configure = json!({"queue": queue, "options": {"namespace": "ns-acl", "leaseTime": 60}});
    forbidden(
        "bob creates",
        bob.post("/api/v1/configure", configure.clone()).await,
        "CREATE",
        queue,
    );
    assert_eq!(admin.depth(queue).await, None, "bob created nothing");
    alice
        .ok(Method::POST, "/api/v1/configure", Some(configure.clone()))
        .await;
    forbidden(
        "bob reconfigures",
        bob.post("/api/v1/configure", configure.clone()).await,
        "ALTER_CONFIGS",
        queue,
    );
    alice
        .ok(Method::POST, "/api/v1/configure", Some(configure))
        .await;

    // Push: WRITE on every queue of the request, all or nothing.
    forbidden("bob pushes", bob.push(queue, 2).await, "WRITE", queue);
    let (status, body) = alice.push(queue, 3).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let mixed = json!({"items": [
        {"queue": queue, "payload": 1, "transactionId": "mixed-1"},
        {"queue": "secret-q", "payload": 2, "transactionId": "mixed-2"},
    ]});
    forbidden(
        "alice pushes to a queue of hers and another",
        alice.post("/api/v1/push", mixed).await,
        "WRITE",
        "secret-q",
    );
    assert_eq!(admin.depth(queue).await, Some(3), "only alice's three");
    assert_eq!(
        admin.depth("secret-q").await,
        None,
        "the refused push created nothing"
    );
    // WRITE without CREATE: bob may push to an existing queue of his only.
    forbidden(
        "bob creates by pushing",
        bob.push("bob-new", 1).await,
        "CREATE",
        "bob-new",
    );
    assert_eq!(admin.depth("bob-new").await, None);
    admin
        .ok(
            Method::POST,
            "/api/v1/configure",
            Some(json!({"queue": "bob-txn"})),
        )
        .await;
    assert_eq!(bob.push("bob-txn", 1).await.0, StatusCode::CREATED);

    // Pop: READ on the queue and on the named group.
    let pop = format!("/api/v1/pop/queue/{queue}?batch=10&wait=false");
    forbidden("bob pops in queue mode", bob.get(&pop).await, "READ", queue);
    forbidden(
        "bob pops in his group",
        bob.get(&format!("{pop}&consumerGroup=workers")).await,
        "READ",
        queue,
    );
    forbidden(
        "alice pops in a group not hers",
        alice.get(&format!("{pop}&consumerGroup=others")).await,
        "READ",
        "others",
    );
    // A pop by namespace considers only the queues alice may READ.
    admin
        .ok(
            Method::POST,
            "/api/v1/configure",
            Some(json!({"queue": "secret-q", "options": {"namespace": "ns-acl", "priority": 9}})),
        )
        .await;
    assert_eq!(admin.push("secret-q", 1).await.0, StatusCode::CREATED);
    let popped = alice
        .ok(
            Method::GET,
            "/api/v1/pop?namespace=ns-acl&batch=10&partitions=5&wait=false&consumerGroup=workers",
            None,
        )
        .await;
    assert_eq!(
        ids(&popped),
        ["acl-orders-0", "acl-orders-1", "acl-orders-2"],
        "alice's queue only, though secret-q has the higher priority"
    );
    assert!(
        popped["messages"]
            .as_array()
            .is_some_and(|m| m.iter().all(|m| m["deliveryAttempt"] == 1)),
        "the refused pops leased nothing: {popped}"
    );
    assert_eq!(admin.depth("secret-q").await, Some(1), "secret-q untouched");
    let lease = popped["leaseId"].as_str().expect("lease id").to_owned();
    let partition_id = popped["messages"][0]["partitionId"]
        .as_str()
        .expect("partition id")
        .to_owned();

    // Lease renewal: READ on the lease's queue and group.
    let extend = format!("/api/v1/lease/{lease}/extend");
    forbidden(
        "bob renews alice's lease",
        bob.post(&extend, json!({"seconds": 120})).await,
        "READ",
        queue,
    );
    let renewed = alice
        .ok(Method::POST, &extend, Some(json!({"seconds": 120})))
        .await;
    assert_eq!(renewed["renewed"], 1, "{renewed}");

    // Ack: READ on the group and on the message's queue.
    let ack = |id: &str| {
        json!({"transactionId": id, "partitionId": partition_id, "leaseId": lease,
               "consumerGroup": "workers", "status": "completed"})
    };
    forbidden(
        "bob acks alice's message",
        bob.post("/api/v1/ack", ack("acl-orders-0")).await,
        "READ",
        queue,
    );
    let batch = json!({"consumerGroup": "workers", "acknowledgments": [
        {"transactionId": "acl-orders-0", "partitionId": partition_id, "leaseId": lease}
    ]});
    forbidden(
        "bob acks a batch",
        bob.post("/api/v1/ack/batch", batch).await,
        "READ",
        queue,
    );
    let acked = alice
        .ok(Method::POST, "/api/v1/ack", Some(ack("acl-orders-0")))
        .await;
    assert_eq!(
        (&acked[0]["success"], &acked[0]["noop"]),
        (&json!(true), &json!(false)),
        "bob's refused acks acknowledged nothing: {acked}"
    );

    // Transaction: each operation checked before any runs. bob may push to
    // bob-txn, not ack on alice's queue: nothing of it is applied.
    let txn = json!({"operations": [
        {"type": "push", "items": [{"queue": "bob-txn", "payload": {"x": 1}, "transactionId": "bob-t1"}]},
        {"type": "ack", "transactionId": "acl-orders-1", "partitionId": partition_id,
         "leaseId": lease, "consumerGroup": "workers"},
    ]});
    forbidden(
        "bob's transaction",
        bob.post("/api/v1/transaction", txn).await,
        "READ",
        queue,
    );
    assert_eq!(
        admin.depth("bob-txn").await,
        Some(1),
        "the push of the refused transaction was not applied"
    );
    let txn_kv = json!({"operations": [
        {"type": "push", "items": [{"queue": "bob-txn", "payload": {"x": 2}, "transactionId": "bob-t2"}]},
    ], "kv": [{"op": "put", "ns": "n", "key": "k", "value": 1, "forever": true}]});
    forbidden(
        "bob's transaction with KV",
        bob.post("/api/v1/transaction", txn_kv).await,
        "WRITE",
        "kafka-cluster",
    );
    assert_eq!(admin.depth("bob-txn").await, Some(1));
    let own = json!({"operations": [
        {"type": "push", "items": [{"queue": "bob-txn", "payload": {"x": 3}, "transactionId": "bob-t3"}]},
    ]});
    let done = bob.ok(Method::POST, "/api/v1/transaction", Some(own)).await;
    assert_eq!(done["success"], true, "{done}");
    let alices = json!({"operations": [
        {"type": "ack", "transactionId": "acl-orders-1", "partitionId": partition_id,
         "leaseId": lease, "consumerGroup": "workers"},
        {"type": "push", "items": [{"queue": queue, "payload": {"y": 1}, "transactionId": "alice-t1"}]},
    ]});
    let done = alice
        .ok(Method::POST, "/api/v1/transaction", Some(alices))
        .await;
    assert_eq!(done["success"], true, "{done}");

    // KV: the cluster's READ and WRITE.
    let put = json!({"operations": [{"op": "put", "ns": "acl", "key": "k", "value": "bob", "forever": true}]});
    forbidden(
        "bob writes KV",
        bob.post("/api/v1/kv", put).await,
        "WRITE",
        "kafka-cluster",
    );
    let get = json!({"operations": [{"op": "get", "ns": "acl", "key": "k"}]});
    forbidden(
        "bob reads KV",
        bob.post("/api/v1/kv", get.clone()).await,
        "READ",
        "kafka-cluster",
    );
    let read = alice
        .ok(Method::POST, "/api/v1/kv", Some(get.clone()))
        .await;
    assert_eq!(
        read["results"][0]["found"], false,
        "bob wrote nothing: {read}"
    );
    let put = json!({"operations": [{"op": "put", "ns": "acl", "key": "k", "value": "alice", "forever": true}]});
    alice.ok(Method::POST, "/api/v1/kv", Some(put)).await;
    let read = alice.ok(Method::POST, "/api/v1/kv", Some(get)).await;
    assert_eq!(read["results"][0]["value"], "alice", "{read}");

    // Message lookup and dead letters: READ on the queue.
    let lookup = format!("/api/v1/messages/{partition_id}/acl-orders-2");
    forbidden(
        "bob looks a message up",
        bob.get(&lookup).await,
        "READ",
        queue,
    );
    let message = alice.ok(Method::GET, &lookup, None).await;
    assert_eq!(message["payload"], json!({"i": 2}));
    let dlq = format!("/api/v1/dlq?queue={queue}");
    forbidden("bob lists dead letters", bob.get(&dlq).await, "READ", queue);
    alice.ok(Method::GET, &dlq, None).await;

    // Queue listings show what the caller may describe.
    let names = |v: &Value| -> Vec<String> {
        v["queues"]
            .as_array()
            .map(|q| {
                q.iter()
                    .filter_map(|q| q["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (_, listed) = bob.get("/api/v1/resources/queues").await;
    assert_eq!(
        names(&listed),
        ["bob-txn"],
        "bob sees his queue only: {listed}"
    );
    forbidden(
        "bob describes alice's queue",
        bob.get(&format!("/api/v1/resources/queues/{queue}")).await,
        "DESCRIBE",
        queue,
    );

    // Consumer groups: filtered as Kafka's ListGroups and OffsetFetch.
    let entries = |v: &Value| -> Vec<(String, String)> {
        v.as_array()
            .map(|l| {
                l.iter()
                    .map(|e| {
                        (
                            e["name"].as_str().unwrap_or_default().to_owned(),
                            e["queueName"].as_str().unwrap_or_default().to_owned(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let all = admin.ok(Method::GET, "/api/v1/consumer-groups", None).await;
    assert!(
        entries(&all).contains(&("workers".into(), queue.into())),
        "{all}"
    );
    let mine = alice.ok(Method::GET, "/api/v1/consumer-groups", None).await;
    assert_eq!(
        entries(&mine),
        [("workers".to_owned(), queue.to_owned())],
        "{mine}"
    );
    let bobs = bob.ok(Method::GET, "/api/v1/consumer-groups", None).await;
    assert_eq!(
        entries(&bobs),
        [],
        "bob may not describe acl-orders: {bobs}"
    );
    let described = bob
        .ok(Method::GET, "/api/v1/consumer-groups/workers", None)
        .await;
    assert_eq!(described, json!({}), "the group, without alice's queue");
    forbidden(
        "bob describes another group",
        bob.get("/api/v1/consumer-groups/others").await,
        "DESCRIBE",
        "others",
    );
    forbidden(
        "bob deletes the group",
        bob.delete("/api/v1/consumer-groups/workers").await,
        "DELETE",
        "workers",
    );
    forbidden(
        "bob seeks the group",
        bob.post(
            &format!("/api/v1/consumer-groups/workers/queues/{queue}/seek"),
            json!({"toEnd": true}),
        )
        .await,
        "READ",
        queue,
    );
    let (_, after) = alice
        .get(&format!(
            "/api/v1/resources/queues/{queue}/depth?group=workers"
        ))
        .await;
    assert_eq!(after["pending"], 2, "bob moved no position: {after}");

    forbidden(
        "bob forgets the group on the queue",
        bob.delete(&format!("/api/v1/consumer-groups/workers/queues/{queue}"))
            .await,
        "DELETE",
        "workers",
    );
    forbidden(
        "bob rewrites the subscription of a group on alice's queue",
        bob.post(
            "/api/v1/consumer-groups/workers/subscription",
            json!({"subscriptionTimestamp": "2020-01-01T00:00:00Z"}),
        )
        .await,
        "READ",
        queue,
    );
    let (_, after) = alice
        .get(&format!(
            "/api/v1/resources/queues/{queue}/depth?group=workers"
        ))
        .await;
    assert_eq!(
        after["pending"], 2,
        "bob's refused calls moved no position: {after}"
    );
    forbidden(
        "bob's depth of alice's queue",
        bob.get(&format!(
            "/api/v1/resources/queues/{queue}/depth?group=workers"
        ))
        .await,
        "DESCRIBE",
        queue,
    );
    forbidden(
        "alice's dead letters of another group",
        alice
            .get(&format!("/api/v1/dlq?queue={queue}&consumerGroup=others"))
            .await,
        "DESCRIBE",
        "others",
    );
    let lagging = "/api/v1/consumer-groups/lagging?minLagSeconds=0";
    let lag = alice.ok(Method::GET, lagging, None).await;
    assert!(
        lag.as_array().is_some_and(|l| !l.is_empty()),
        "alice sees her group's lag: {lag}"
    );
    assert_eq!(bob.ok(Method::GET, lagging, None).await, json!([]));
    forbidden(
        "bob pops a partition",
        bob.get(&format!(
            "/api/v1/pop/queue/{queue}/partition/Default?wait=false"
        ))
        .await,
        "READ",
        queue,
    );

    // The dashboard's data and the metrics: DESCRIBE on the cluster.
    forbidden(
        "bob scrapes",
        bob.get("/metrics").await,
        "DESCRIBE",
        "kafka-cluster",
    );
    forbidden(
        "bob lists brokers",
        bob.get("/api/v1/brokers").await,
        "DESCRIBE",
        "kafka-cluster",
    );
    for path in ["/api/v1/throughput", "/api/v1/kafka/groups"] {
        forbidden(path, bob.get(path).await, "DESCRIBE", "kafka-cluster");
    }
    forbidden(
        "bob refreshes stats",
        bob.post("/api/v1/stats/refresh", json!({})).await,
        "DESCRIBE",
        "kafka-cluster",
    );
    alice
        .ok(Method::POST, "/api/v1/stats/refresh", Some(json!({})))
        .await;
    assert_eq!(
        bob.get("/").await.0,
        StatusCode::OK,
        "the page holds no data"
    );
    assert_eq!(admin.get("/metrics").await.0, StatusCode::OK);
    assert_eq!(
        alice.get("/api/v1/brokers").await.0,
        StatusCode::OK,
        "READ on the cluster implies DESCRIBE"
    );

    // Delete: DELETE on the queue.
    forbidden(
        "bob deletes",
        bob.delete(&format!("/api/v1/resources/queues/{queue}"))
            .await,
        "DELETE",
        queue,
    );
    assert_eq!(
        admin.depth(queue).await,
        Some(2),
        "still there, as workers left it"
    );
    let deleted = alice
        .ok(
            Method::DELETE,
            &format!("/api/v1/resources/queues/{queue}"),
            None,
        )
        .await;
    assert_eq!(deleted["deleted"], true);
    assert_eq!(admin.depth(queue).await, None);
}

async fn anonymous_callers_are_matched_by_principal_and_host(url: &str) {
    let pki = Pki::new();
    let broker = secured(url, &pki, false);
    add_user(url, ADMIN.0, ADMIN.1, false, &[]);
    let anonymous = As::new(&broker, None);
    forbidden(
        "no ACL yet",
        anonymous.push("anon-q", 1).await,
        "WRITE",
        "anon-q",
    );
    // A binding for another host does not apply to a client on 127.0.0.1.
    create_acls(
        &broker,
        vec![
            allow(
                (TOPIC, "anon-q", LITERAL),
                "User:ANONYMOUS",
                "10.9.9.9",
                WRITE,
            ),
            allow(
                (TOPIC, "anon-q", LITERAL),
                "User:ANONYMOUS",
                "10.9.9.9",
                CREATE,
            ),
        ],
    );
    forbidden(
        "another host's ACL",
        anonymous.push("anon-q", 1).await,
        "WRITE",
        "anon-q",
    );
    create_acls(
        &broker,
        vec![
            allow(
                (TOPIC, "anon-q", LITERAL),
                "User:ANONYMOUS",
                "127.0.0.1",
                WRITE,
            ),
            allow(
                (TOPIC, "anon-q", LITERAL),
                "User:ANONYMOUS",
                "127.0.0.1",
                CREATE,
            ),
        ],
    );
    let (status, body) = anonymous.push("anon-q", 2).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    forbidden(
        "reading was not granted",
        anonymous.get("/api/v1/pop/queue/anon-q?wait=false").await,
        "READ",
        "anon-q",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acls_created_through_one_broker_apply_to_another_brokers_http_door() {
    let db = TestDb::postgres().await;
    let pki = Pki::new();
    let one = secured(&db.url, &pki, true);
    let two = secured(&db.url, &pki, true);
    for (name, password) in [ADMIN, ALICE] {
        add_user(&db.url, name, password, false, &[]);
    }
    let alice_on_two = As::new(&two, Some(ALICE));
    forbidden(
        "broker two, before the ACL",
        alice_on_two.push("acl-shared", 1).await,
        "WRITE",
        "acl-shared",
    );
    create_acls(&one, alices_acls());
    let granted = Instant::now();
    loop {
        let (status, body) = alice_on_two.push("acl-shared", 1).await;
        if status == StatusCode::CREATED {
            break;
        }
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert!(
            granted.elapsed() < Duration::from_secs(5),
            "broker two never applied the ACL created through broker one"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "ACL created through broker one enforced by broker two's HTTP door after {} ms",
        granted.elapsed().as_millis()
    );
    let admin_on_one = As::new(&one, Some(ADMIN));
    assert_eq!(
        admin_on_one.depth("acl-shared").await,
        Some(1),
        "one push, the allowed one"
    );
}

async fn the_python_client_sees_a_refusal_as_an_error(url: &str) {
    let pki = Pki::new();
    let broker = secured(url, &pki, true);
    for (name, password) in [ADMIN, ALICE, BOB] {
        add_user(url, name, password, false, &[]);
    }
    create_acls(&broker, alices_acls());
    let account = |(name, password): (&str, &str)| format!("{name}:{password}");
    tokio::task::block_in_place(|| {
        support::python::run(
            "http_acls.py",
            &broker,
            &[
                ("QUEEN_ALLOWED", &account(ALICE)),
                ("QUEEN_DENIED", &account(BOB)),
            ],
        )
    });
    let admin = As::new(&broker, Some(ADMIN));
    assert_eq!(
        admin.depth("acl-py").await,
        Some(0),
        "bob's push wrote nothing, alice consumed hers"
    );
}
