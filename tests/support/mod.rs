//! Helpers for end-to-end tests: fresh databases and the real `queen` binary.

#![allow(dead_code)]

pub(crate) mod binary;
pub(crate) mod burrow;
pub(crate) mod go;
pub(crate) mod kafka;
pub(crate) mod pki;
pub(crate) mod python;
pub(crate) mod router;
pub(crate) mod security;
pub(crate) mod share;
pub(crate) mod share_offsets;
pub(crate) mod txn;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub(crate) use test_support::TestDb;

/// Instantiates each scenario `name(&Broker)` of the test file once per
/// backend, each on a fresh database and a broker started with `flags`.
#[allow(unused_macros)] // not every test binary has broker scenarios
macro_rules! broker_scenarios {
    ($flags:expr; $($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = crate::support::TestDb::sqlite();
                    let broker = crate::support::Broker::start(&db.url, $flags);
                    crate::$name(&broker).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = crate::support::TestDb::postgres().await;
                    let broker = crate::support::Broker::start(&db.url, $flags);
                    crate::$name(&broker).await;
                }
            )*
        }
    };
}
#[allow(unused_imports)]
pub(crate) use broker_scenarios;

/// Instantiates each scenario `name(&url)` of the test file once per
/// backend, each on a fresh database (the scenario starts its brokers).
#[allow(unused_macros)] // not every test binary has such scenarios
macro_rules! url_scenarios {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = crate::support::TestDb::sqlite();
                    crate::$name(&db.url).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = crate::support::TestDb::postgres().await;
                    crate::$name(&db.url).await;
                }
            )*
        }
    };
}
#[allow(unused_imports)]
pub(crate) use url_scenarios;

/// A running `queen` process, killed when dropped.
pub(crate) struct Broker {
    pub child: Child,
    pub http: String,
    pub kafka: String,
    /// The line the broker printed when it started listening.
    pub listening: String,
}

impl Broker {
    /// Starts the binary on `database_url` with free ports and waits until it listens.
    pub(crate) fn start(database_url: &str, extra: &[&str]) -> Self {
        Self::start_on(database_url, "127.0.0.1:0", "127.0.0.1:0", extra)
    }

    /// Starts the binary on the given addresses (to restart a broker where
    /// its clients expect it) and waits until it listens.
    pub(crate) fn start_on(database_url: &str, http: &str, kafka: &str, extra: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_queen"))
            .args(["--http-addr", http, "--kafka-addr", kafka])
            .args(["--database-url", database_url])
            .args(extra)
            // QUEEN_BENCH_LOG sets the broker's log filter (warnings
            // otherwise) and copies its log to stderr, to see inside a run.
            .env(
                "QUEEN_LOG",
                std::env::var("QUEEN_BENCH_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn queen");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.starts_with("queen listening") {
                    let _ = tx.send(line);
                } else if std::env::var_os("QUEEN_BENCH_LOG").is_some() {
                    eprintln!("{line}");
                }
            }
        });
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("queen did not start listening within 30 s");
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(&format!("{name}=")))
                .expect("address in the listening line")
                .to_owned()
        };
        Self {
            http: format!("http://{}", field("http")),
            kafka: field("kafka"),
            listening: line.clone(),
            child,
        }
    }

    /// The bound address of the Kafka listener named `name` (as
    /// `kafka.NAME=` in the listening line).
    pub(crate) fn listener(&self, name: &str) -> String {
        let prefix = format!("kafka.{name}=");
        self.listening
            .split_whitespace()
            .find_map(|w| w.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("no {name} listener in {:?}", self.listening))
            .to_owned()
    }

    /// POSTs `body` as JSON to `path` and returns the JSON answer, which
    /// must be a success.
    pub(crate) async fn post(&self, path: &str, body: serde_json::Value) -> serde_json::Value {
        success(path, self.post_answer(path, body).await)
    }

    /// GETs `path` and returns the JSON answer, which must be a success.
    pub(crate) async fn get(&self, path: &str) -> serde_json::Value {
        success(path, self.get_answer(path).await)
    }

    /// POSTs `body` as JSON to `path`: the status and the JSON answer
    /// (`null` when there is none), whatever the status.
    pub(crate) async fn post_answer(
        &self,
        path: &str,
        body: serde_json::Value,
    ) -> (reqwest::StatusCode, serde_json::Value) {
        let response = reqwest::Client::new()
            .post(format!("{}{path}", self.http))
            .json(&body)
            .send()
            .await
            .expect("POST");
        answer(response).await
    }

    /// GETs `path`: the status and the JSON answer (`null` when there is
    /// none), whatever the status.
    pub(crate) async fn get_answer(&self, path: &str) -> (reqwest::StatusCode, serde_json::Value) {
        let response = reqwest::get(format!("{}{path}", self.http))
            .await
            .expect("GET");
        answer(response).await
    }

    /// GETs `path`: the status, the content type and the body as text.
    pub(crate) async fn fetch(&self, path: &str) -> (reqwest::StatusCode, String, String) {
        let (status, content_type, body) = self.fetch_bytes(path).await;
        let text = String::from_utf8(body).expect("a text body");
        (status, content_type, text)
    }

    /// GETs `path`: the status, the content type and the body's bytes.
    pub(crate) async fn fetch_bytes(&self, path: &str) -> (reqwest::StatusCode, String, Vec<u8>) {
        let response = reqwest::get(format!("{}{path}", self.http))
            .await
            .expect("GET");
        let status = response.status();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        (
            status,
            content_type,
            response.bytes().await.expect("body").to_vec(),
        )
    }

    /// Sends SIGTERM and waits for the exit status.
    pub(crate) fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill");
        let status = self.child.wait().expect("wait");
        std::mem::forget(self);
        status
    }
}

/// `queen user add NAME` on `database_url`, the password given through
/// the environment; fails the test if the command fails.
pub(crate) fn add_user(database_url: &str, name: &str, password: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_queen"))
        .args(["--database-url", database_url, "user", "add", name])
        .env("QUEEN_USER_PASSWORD", password)
        .env("QUEEN_LOG", "warn")
        .stdin(Stdio::null())
        .output()
        .expect("queen user add");
    assert!(
        out.status.success(),
        "queen user add {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The status of an answer and its JSON body (`null` when there is none).
async fn answer(response: reqwest::Response) -> (reqwest::StatusCode, serde_json::Value) {
    let status = response.status();
    (
        status,
        response.json().await.unwrap_or(serde_json::Value::Null),
    )
}

/// The JSON body of the answer to `path`, which must be a success.
fn success(
    path: &str,
    (status, body): (reqwest::StatusCode, serde_json::Value),
) -> serde_json::Value {
    assert!(status.is_success(), "{path}: {status} {body}");
    body
}

/// A port free on 127.0.0.1 right now.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
