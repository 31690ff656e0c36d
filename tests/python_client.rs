//! End-to-end tests with the official `queen-mq` Python client against the
//! running binary. The interpreter is `$QUEEN_TEST_PYTHON` (default
//! `python3`) with `tests/python/requirements.txt` installed; the test fails,
//! saying so, when the client is missing.

mod support;

use std::process::Command;

use support::{Broker, TestDb};

fn python() -> String {
    std::env::var("QUEEN_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

fn run_script(script: &str, broker: &Broker) {
    let python = python();
    let probe = Command::new(&python)
        .args(["-c", "import queen, kafka"])
        .status()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    assert!(
        probe.success(),
        "the Python clients (queen-mq, kafka-python) are not installed for {python}: \
         pip install -r tests/python/requirements.txt (scripts/test does it)"
    );
    let path = format!("{}/tests/python/{script}", env!("CARGO_MANIFEST_DIR"));
    let output = Command::new(&python)
        .arg(&path)
        .env("QUEEN_URL", &broker.http)
        .env("QUEEN_KAFKA", &broker.kafka)
        .output()
        .expect("run the python script");
    assert!(
        output.status.success(),
        "{script} failed\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn python_client_pushes_and_sees_duplicates_on_sqlite() {
    let db = TestDb::sqlite();
    let broker = Broker::start(&db.url, &[]);
    run_script("push_dedup.py", &broker);
}

#[tokio::test(flavor = "multi_thread")]
async fn python_client_pushes_and_sees_duplicates_on_postgres() {
    let db = TestDb::postgres().await;
    let broker = Broker::start(&db.url, &[]);
    tokio::task::block_in_place(|| run_script("push_dedup.py", &broker));
    drop(broker);
    db.drop_db().await;
}

#[test]
fn kafka_python_round_trips_on_sqlite() {
    let db = TestDb::sqlite();
    let broker = Broker::start(&db.url, &[]);
    run_script("kafka_roundtrip.py", &broker);
}

#[tokio::test(flavor = "multi_thread")]
async fn kafka_python_round_trips_on_postgres() {
    let db = TestDb::postgres().await;
    let broker = Broker::start(&db.url, &[]);
    tokio::task::block_in_place(|| run_script("kafka_roundtrip.py", &broker));
    drop(broker);
    db.drop_db().await;
}
