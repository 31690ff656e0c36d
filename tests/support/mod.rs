//! Helpers for end-to-end tests: fresh databases and the real `queen` binary.

#![allow(dead_code)]

pub(crate) mod kafka;
pub(crate) mod pki;
pub(crate) mod router;
pub(crate) mod security;

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
            .env("QUEEN_LOG", "warn")
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn queen");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.starts_with("queen listening") {
                    let _ = tx.send(line);
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
