//! At-rest encryption end to end, against the running binary on SQLite and
//! PostgreSQL: payloads of queues with `encryptionEnabled` (pushed over HTTP
//! or produced with librdkafka) are read back in clear through both doors,
//! and the database (the SQLite files, a `pg_dump` of PostgreSQL) holds none
//! of them in clear. A broker restarted without the key refuses those
//! queues with a clear error, writes nothing, and serves the others. A key
//! rotation (`--encryption-retired-key-files`, `queen reseal`) keeps every
//! payload readable and ends with none under the retired key.

mod support;

use std::path::Path;
use std::process::Command;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use reqwest::StatusCode;
use serde_json::{json, Value};
use support::{security, Broker, TestDb};
use test_support::Backend;

/// What the encrypted queues hold: never to be found in the database.
const SECRET: &str = "sealed-payload-7f3a";

/// What a queue in clear holds: found in the database, so the search works.
const CLEAR: &str = "clear-payload-51c9";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite() {
    let db = TestDb::sqlite();
    encrypted_queues_end_to_end(&db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres() {
    let db = TestDb::postgres().await;
    encrypted_queues_end_to_end(&db).await;
}

async fn encrypted_queues_end_to_end(db: &TestDb) {
    let dir = tempfile::tempdir().expect("tempdir");
    let key_file = dir.path().join("payload.key");
    std::fs::write(&key_file, format!("{}\n", "5a".repeat(32))).expect("key file");
    let key_flag = [
        "--encryption-key-file",
        key_file.to_str().expect("utf-8 path"),
    ];

    let broker = Broker::start(&db.url, &key_flag);
    configure(&broker, "secret", true).await;
    configure(&broker, "clear", false).await;
    assert_eq!(
        push(&broker, "secret", "s-0", SECRET).await,
        StatusCode::CREATED
    );
    assert_eq!(
        push(&broker, "clear", "c-0", CLEAR).await,
        StatusCode::CREATED
    );
    create_encrypted_topic(&broker, "ksecret").await;
    produce(&broker, "ksecret", 3).await.expect("produce");

    // Read in clear through both doors.
    let (status, popped) = pop(&broker, "secret").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(popped["messages"][0]["data"]["data"], SECRET, "{popped}");
    assert_eq!(consume(&broker, "ksecret"), kafka_values(3));
    // Left for the restarts below.
    assert_eq!(
        push(&broker, "secret", "s-1", SECRET).await,
        StatusCode::CREATED
    );
    broker.terminate();

    assert_nothing_in_clear(db).await;

    // Without the key: refused, clearly; nothing written; the rest served.
    let keyless = Broker::start(&db.url, &[]);
    let (status, body) = pop(&keyless, "secret").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["code"], "encryption_key_unavailable");
    assert!(
        body["error"]
            .as_str()
            .is_some_and(|e| e.contains("--encryption-key-file")),
        "{body}"
    );
    assert_eq!(
        push(&keyless, "secret", "s-2", SECRET).await,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert!(produce(&keyless, "ksecret", 1).await.is_err());
    assert_eq!(pop(&keyless, "clear").await.0, StatusCode::OK);
    keyless.terminate();

    // With the key again: everything is there, and nothing more.
    let broker = Broker::start(&db.url, &key_flag);
    assert_eq!(consume(&broker, "ksecret"), kafka_values(3));
    let (status, popped) = pop(&broker, "secret").await;
    assert_eq!(status, StatusCode::OK);
    let messages = popped["messages"].as_array().expect("messages");
    assert_eq!(
        messages.len(),
        1,
        "the refused push wrote nothing: {popped}"
    );
    assert_eq!(messages[0]["transactionId"], "s-1");
    assert_eq!(messages[0]["data"]["data"], SECRET);
    assert_eq!(
        push(&broker, "secret", "s-2", SECRET).await,
        StatusCode::CREATED
    );
    broker.terminate();

    rotate_key(db, &key_file).await;
}

/// A key rotation: a broker given a new key and the old one as retired
/// reads everything and seals with the new key; `queen reseal`, run while
/// it serves, seals the old key's payloads again; then the new key alone
/// reads everything.
async fn rotate_key(db: &TestDb, old_key: &Path) {
    let dir = tempfile::tempdir().expect("tempdir");
    let new_key = dir.path().join("new.key");
    std::fs::write(&new_key, format!("{}\n", "a7".repeat(32))).expect("key file");
    let (old_key, new_key) = (
        old_key.to_str().expect("utf-8 path"),
        new_key.to_str().expect("utf-8 path"),
    );
    let rotated = [
        "--encryption-key-file",
        new_key,
        "--encryption-retired-key-files",
        old_key,
    ];
    let broker = Broker::start(&db.url, &rotated);
    assert_eq!(consume(&broker, "ksecret"), kafka_values(3));
    assert_eq!(
        push(&broker, "secret", "s-3", SECRET).await,
        StatusCode::CREATED
    );
    let out = Command::new(env!("CARGO_BIN_EXE_queen"))
        .args(["reseal", "--database-url", &db.url])
        .args(rotated)
        .env("QUEEN_LOG", "warn")
        .output()
        .expect("queen reseal");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "queen reseal: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The topic's three segments (one record each) and the queue's s-0,
    // s-1 and s-2; not s-3's, sealed under the new key.
    assert!(
        stdout.contains("resealed 6 segments and 0 dead letters"),
        "{stdout}"
    );
    broker.terminate();
    assert_nothing_in_clear(db).await;

    let after = Broker::start(&db.url, &["--encryption-key-file", new_key]);
    assert_eq!(consume(&after, "ksecret"), kafka_values(3));
    let (status, popped) = pop(&after, "secret").await;
    assert_eq!(status, StatusCode::OK, "{popped}");
    let txns: Vec<&Value> = popped["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| &m["transactionId"])
        .collect();
    assert_eq!(txns, ["s-2", "s-3"], "{popped}");
}

/// Fails unless no payload of an encrypted queue is stored in clear (as
/// text, or hex-encoded as `pg_dump` writes a `bytea`), while the clear
/// queue's payload is found the same way.
async fn assert_nothing_in_clear(db: &TestDb) {
    let stored = match db.backend() {
        Backend::Sqlite => sqlite_files(&db.url),
        Backend::Postgres => pg_dump(&db.url),
    };
    let hex = |s: &str| s.bytes().map(|b| format!("{b:02x}")).collect::<String>();
    let holds = |text: &str| {
        let found = |needle: &[u8]| stored.windows(needle.len()).any(|w| w == needle);
        found(text.as_bytes()) || found(hex(text).as_bytes())
    };
    assert!(holds(CLEAR), "the search finds a payload in clear");
    assert!(!holds(SECRET), "an encrypted payload is stored in clear");
}

/// Every byte of the SQLite database's files (main file, WAL, shared memory).
fn sqlite_files(url: &str) -> Vec<u8> {
    let path = url.trim_start_matches("sqlite://");
    let dir = Path::new(path).parent().expect("database directory");
    let mut bytes = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir") {
        bytes.extend(std::fs::read(entry.expect("entry").path()).expect("read file"));
    }
    bytes
}

/// The data of the PostgreSQL database, as `pg_dump` writes it.
fn pg_dump(url: &str) -> Vec<u8> {
    let out = Command::new("pg_dump")
        .args(["--data-only", "--dbname", url])
        .output()
        .expect("pg_dump (installed with PostgreSQL by scripts/setup)");
    assert!(
        out.status.success(),
        "pg_dump: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

async fn configure(broker: &Broker, queue: &str, encrypted: bool) {
    let body = json!({"queue": queue, "options": {"encryptionEnabled": encrypted}});
    broker.post("/api/v1/configure", body).await;
}

async fn push(broker: &Broker, queue: &str, txn: &str, data: &str) -> StatusCode {
    let item =
        json!({"queue": queue, "partition": "p", "transactionId": txn, "payload": {"data": data}});
    let body = json!({"items": [item]});
    broker.post_answer("/api/v1/push", body).await.0
}

async fn pop(broker: &Broker, queue: &str) -> (StatusCode, Value) {
    let path = format!("/api/v1/pop/queue/{queue}?batch=10&wait=false&autoAck=true");
    broker.get_answer(&path).await
}

fn kafka_config(broker: &Broker) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", &broker.kafka)
        .set("broker.address.family", "v4");
    c
}

async fn create_encrypted_topic(broker: &Broker, topic: &str) {
    let admin: AdminClient<DefaultClientContext> = kafka_config(broker).create().expect("admin");
    let new =
        NewTopic::new(topic, 1, TopicReplication::Fixed(1)).set("queen.encryptionEnabled", "true");
    let created = admin
        .create_topics([&new], &AdminOptions::new())
        .await
        .expect("create topics");
    assert!(created.iter().all(Result::is_ok), "{created:?}");
}

fn kafka_values(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{SECRET}-k{i}")).collect()
}

/// Produces `n` records to `topic`; the first failure, if any (after 5 s).
async fn produce(broker: &Broker, topic: &str, n: usize) -> Result<(), String> {
    let values = kafka_values(n);
    let values: Vec<&str> = values.iter().map(String::as_str).collect();
    let config = kafka_config(broker)
        .set("message.timeout.ms", "5000")
        .clone();
    security::produce(&config, topic, &values).await
}

/// Every value of partition 0 of `topic`.
fn consume(broker: &Broker, topic: &str) -> Vec<String> {
    security::read_all(&kafka_config(broker), topic)
}
