//! Crash safety of transactions: a pipeline of transactions (ack the input,
//! push its output, write a `once` marker) runs while the broker is killed
//! with SIGKILL again and again and restarted on the same database. In the
//! end every input has produced exactly one output and one marker, and
//! every input is acknowledged.

mod support;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{Broker, TestDb};

/// Inputs pushed before the pipeline starts.
const INPUTS: usize = 400;
/// How many times the broker is killed.
const KILLS: usize = 6;
/// The lease of a pop: short, so inputs whose step a kill cut off come back soon.
const LEASE_SECONDS: u64 = 2;

#[test]
fn sqlite_pipeline_survives_sigkill() {
    let db = TestDb::sqlite();
    pipeline_survives_sigkill(&db.url);
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_pipeline_survives_sigkill() {
    let db = TestDb::postgres().await;
    let url = db.url.clone();
    tokio::task::spawn_blocking(move || pipeline_survives_sigkill(&url))
        .await
        .expect("pipeline");
}

fn pipeline_survives_sigkill(database_url: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut broker = Broker::start(database_url, &[]);
    let url = Arc::new(Mutex::new(broker.http.clone()));
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("http client");
    runtime.block_on(async {
        let items: Vec<Value> = (0..INPUTS)
            .map(|i| json!({"queue": "crash-in", "transactionId": format!("in-{i}"), "payload": {"i": i}}))
            .collect();
        let pushed = http
            .post(format!("{}/api/v1/push", broker.http))
            .json(&json!({ "items": items }))
            .send()
            .await
            .expect("push inputs");
        assert!(pushed.status().is_success());
    });

    // Two workers run the pipeline while this thread kills and restarts.
    let workers: Vec<_> = (0..2)
        .map(|_| runtime.spawn(worker(http.clone(), url.clone())))
        .collect();
    let mut kills_mid_pipeline = 0;
    for kill in 0..KILLS {
        std::thread::sleep(Duration::from_millis(150 + 50 * kill as u64));
        if workers.iter().any(|w| !w.is_finished()) {
            kills_mid_pipeline += 1;
        }
        drop(broker); // SIGKILL, then reap
        broker = Broker::start(database_url, &[]);
        *url.lock().expect("url") = broker.http.clone();
    }
    let (outputs, markers, pending) = runtime.block_on(async {
        for w in workers {
            w.await.expect("worker");
        }
        let base = broker.http.clone();
        let outputs = drain(&http, &base, "crash-out").await;
        let markers = markers(&http, &base).await;
        let input = get(&http, &format!("{base}/api/v1/resources/queues/crash-in")).await;
        (outputs, markers, input["totals"]["pending"].clone())
    });
    assert!(
        kills_mid_pipeline >= KILLS / 2,
        "only {kills_mid_pipeline} kills hit the running pipeline"
    );
    let expected: Vec<String> = (0..INPUTS).map(|i| format!("in-{i}")).collect();
    let outputs_of: Vec<String> = outputs
        .iter()
        .map(|o| o.trim_start_matches("out-").to_owned())
        .collect();
    assert_eq!(outputs.len(), INPUTS, "one output per input: {outputs:?}");
    assert_eq!(
        outputs_of.iter().cloned().collect::<BTreeSet<_>>(),
        expected.iter().cloned().collect::<BTreeSet<_>>()
    );
    assert_eq!(
        markers,
        expected.into_iter().collect::<BTreeSet<_>>(),
        "one marker per input"
    );
    assert_eq!(pending, json!(0), "every input is acknowledged");
}

/// Runs the pipeline until every input has its marker, riding out the
/// broker's deaths: a failed request is simply tried again later.
async fn worker(http: reqwest::Client, url: Arc<Mutex<String>>) {
    let started = Instant::now();
    loop {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the pipeline did not finish"
        );
        let base = url.lock().expect("url").clone();
        match run_once(&http, &base).await {
            Ok(true) => {}
            Ok(false) => {
                if markers_done(&http, &base).await {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// Pops a few inputs and runs their steps; `false` when nothing was popped.
async fn run_once(http: &reqwest::Client, base: &str) -> Result<bool, reqwest::Error> {
    let response = http
        .get(format!(
            "{base}/api/v1/pop/queue/crash-in?batch=3&wait=false&leaseSeconds={LEASE_SECONDS}"
        ))
        .send()
        .await?;
    if response.status() == reqwest::StatusCode::NO_CONTENT {
        return Ok(false);
    }
    let popped: Value = response.json().await?;
    let messages = popped["messages"].as_array().cloned().unwrap_or_default();
    if messages.is_empty() {
        return Ok(false);
    }
    for m in messages {
        let txn = m["transactionId"].as_str().unwrap_or_default().to_owned();
        let ack = json!({"type": "ack", "transactionId": txn, "partitionId": m["partitionId"],
                         "leaseId": m["leaseId"], "status": "completed"});
        let bundle = json!({
            "operations": [ack, {"type": "push", "items": [
                {"queue": "crash-out", "transactionId": format!("out-{txn}"), "payload": {"from": txn}}
            ]}],
            "requiredLeases": [m["leaseId"]],
            "kv": [{"op": "putIfAbsent", "ns": "crash-done", "key": txn, "value": true,
                    "forever": true, "required": true}],
        });
        let answer: Value = http
            .post(format!("{base}/api/v1/transaction"))
            .json(&bundle)
            .send()
            .await?
            .json()
            .await?;
        if answer["success"] == false
            && (answer["reason"] == "duplicate" || answer["reason"] == "kv_precondition")
        {
            // The step already ran (its answer was lost to a kill): only
            // the acknowledgement is left to do.
            http.post(format!("{base}/api/v1/ack"))
                .json(
                    &json!({"transactionId": txn, "partitionId": m["partitionId"],
                              "leaseId": m["leaseId"], "status": "completed"}),
                )
                .send()
                .await?;
        }
    }
    Ok(true)
}

async fn get(http: &reqwest::Client, url: &str) -> Value {
    for _ in 0..100 {
        if let Ok(r) = http.get(url).send().await {
            if let Ok(v) = r.json::<Value>().await {
                return v;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{url} did not answer");
}

/// The inputs with a `once` marker.
async fn markers(http: &reqwest::Client, base: &str) -> BTreeSet<String> {
    let answer: Value = http
        .post(format!("{base}/api/v1/kv"))
        .json(&json!([{"op": "getPrefix", "ns": "crash-done", "prefix": "in-", "limit": 1000, "keysOnly": true}]))
        .send()
        .await
        .expect("kv")
        .json()
        .await
        .expect("kv json");
    answer["results"][0]["rows"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .filter_map(|r| r["key"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

async fn markers_done(http: &reqwest::Client, base: &str) -> bool {
    let done = async {
        let answer: Value = http
            .post(format!("{base}/api/v1/kv"))
            .json(&json!([{"op": "getPrefix", "ns": "crash-done", "prefix": "in-", "limit": 1000, "keysOnly": true}]))
            .send()
            .await?
            .json()
            .await?;
        let input: Value = http
            .get(format!("{base}/api/v1/resources/queues/crash-in"))
            .send()
            .await?
            .json()
            .await?;
        Ok::<bool, reqwest::Error>(
            answer["results"][0]["rows"].as_array().map(Vec::len) == Some(INPUTS)
                && input["totals"]["pending"] == 0
                && input["totals"]["processing"] == 0,
        )
    };
    done.await.unwrap_or(false)
}

/// Every output's transaction id, read with a group of its own.
async fn drain(http: &reqwest::Client, base: &str, queue: &str) -> Vec<String> {
    let page = get(
        http,
        &format!("{base}/api/v1/pop/queue/{queue}?batch=1000&wait=false&consumerGroup=check&autoAck=true"),
    )
    .await;
    page["messages"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .filter_map(|m| m["transactionId"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}
