//! Burrow 1.2.1 (Debian's `burrow`), LinkedIn's consumer-lag monitor,
//! run against a broker, with the ZooKeeper it requires for itself
//! (Debian's `zookeeper`: Burrow 1.2 refuses to start without one, though
//! it reads nothing about Kafka from it).

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use super::free_port;

const BURROW: &str = "/usr/bin/Burrow";
const ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";

/// A child process killed when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until `process` listens on `addr`, or panics with the log at
/// `log` when it exits or after 30 s.
fn wait_listening(what: &str, process: &mut Process, addr: &str, log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(addr).is_err() {
        let exited = process.0.try_wait().ok().flatten();
        assert!(
            exited.is_none() && Instant::now() < deadline,
            "{what} is not listening on {addr} ({exited:?}):\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until Burrow listens on `addr`: false when it fails first (it
/// exits, or logs that it failed and stays) or after 30 s.
fn started(burrow: &mut Process, addr: &str, log: &Path) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(addr).is_err() {
        let failed = std::fs::read_to_string(log).is_ok_and(|l| l.contains("Burrow failed"));
        if failed || burrow.0.try_wait().ok().flatten().is_some() || Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    true
}

/// Whether the ZooKeeper on `port` grants a session: it answers a
/// connect request (ZooKeeper's jute encoding: protocol version, last zxid
/// seen, timeout, session id, password, read-only flag) with a session id.
/// Its `srvr` command reports it serving a moment before it does.
fn grants_sessions(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let mut request = Vec::new();
    request.extend(0i32.to_be_bytes()); // protocol version
    request.extend(0i64.to_be_bytes()); // last zxid seen
    request.extend(6_000i32.to_be_bytes()); // session timeout, ms
    request.extend(0i64.to_be_bytes()); // session id: a new session
    request.extend(16i32.to_be_bytes()); // password: 16 zero bytes
    request.extend([0u8; 16]);
    request.push(0); // not read-only
    let mut frame = (request.len() as i32).to_be_bytes().to_vec();
    frame.extend(request);
    // Length, protocol version, timeout, then the session id.
    let mut answer = [0u8; 20];
    stream.write_all(&frame).is_ok()
        && stream.read_exact(&mut answer).is_ok()
        && answer[12..20] != [0u8; 8]
}

/// `path` opened for appending, created if missing: a child's output.
fn log_file(path: &Path) -> std::fs::File {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("log file")
}

/// A running Burrow (and its ZooKeeper) watching one Kafka cluster named
/// `queen`; both are killed when dropped.
pub(crate) struct Burrow {
    /// Burrow's HTTP API, `http://127.0.0.1:PORT`.
    pub http: String,
    _burrow: Process,
    _zookeeper: Process,
    _dir: tempfile::TempDir,
}

impl Burrow {
    /// Starts ZooKeeper, then Burrow on `kafka` with its Kafka cluster and
    /// consumer modules refreshing every second.
    pub(crate) fn start(kafka: &str) -> Self {
        assert!(
            Path::new(BURROW).is_file(),
            "{BURROW} is missing: install burrow (scripts/setup does)"
        );
        assert!(
            Path::new(ZOOKEEPER_JAR).is_file(),
            "{ZOOKEEPER_JAR} is missing: install zookeeper (scripts/setup does)"
        );
        let dir = tempfile::tempdir().expect("temporary directory");
        let zk_port = free_port();
        let zk_log = dir.path().join("zookeeper.log");
        let mut zookeeper = Process(
            Command::new("java")
                .arg("-cp")
                // ZooKeeper's own jar names its dependencies but log4j.
                .arg(format!("{ZOOKEEPER_JAR}:/usr/share/java/log4j-1.2.jar"))
                .arg("org.apache.zookeeper.server.ZooKeeperServerMain")
                .arg(zk_port.to_string())
                .arg(dir.path().join("zookeeper"))
                .stdout(log_file(&zk_log))
                .stderr(log_file(&zk_log))
                .spawn()
                .unwrap_or_else(|e| panic!("cannot run java ({e}): install zookeeper")),
        );
        wait_listening(
            "ZooKeeper",
            &mut zookeeper,
            &format!("127.0.0.1:{zk_port}"),
            &zk_log,
        );

        let http = format!("127.0.0.1:{}", free_port());
        // Burrow's configuration format: /etc/burrow/burrow.toml. Kafka
        // 0.10.2 is the newest protocol Burrow's sarama 1.22 profile names
        // that every part of it speaks.
        let config = format!(
            r#"[general]
pidfile="{dir}/burrow.pid"
[logging]
level="info"
[zookeeper]
servers=["127.0.0.1:{zk_port}"]
timeout=6
root-path="/burrow"
[client-profile.old]
client-id="burrow"
kafka-version="0.10.2"
[cluster.queen]
class-name="kafka"
servers=["{kafka}"]
client-profile="old"
topic-refresh=1
offset-refresh=1
[consumer.queen]
class-name="kafka"
cluster="queen"
servers=["{kafka}"]
client-profile="old"
[httpserver.default]
address="{http}"
[storage.default]
class-name="inmemory"
workers=2
intervals=10
min-distance=1
"#,
            dir = dir.path().display()
        );
        std::fs::write(dir.path().join("burrow.toml"), config).expect("burrow.toml");
        // Burrow gives up when its first ZooKeeper session is refused; in
        // the tests a fresh ZooKeeper sometimes closes Burrow's first
        // session request though it granted the probe's (cause not found:
        // started by hand a second later it is granted). Burrow is
        // started again, as its service manager would.
        let mut attempts = 0;
        let burrow = loop {
            attempts += 1;
            let log = dir.path().join(format!("burrow-{attempts}.log"));
            let mut burrow = Process(
                Command::new(BURROW)
                    .arg("-config-dir")
                    .arg(dir.path())
                    .current_dir(dir.path())
                    .stdout(log_file(&log))
                    .stderr(log_file(&log))
                    .spawn()
                    .expect("Burrow runs"),
            );
            if started(&mut burrow, &http, &log) {
                break burrow;
            }
            assert!(
                attempts < 5,
                "Burrow did not start in {attempts} attempts:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(500));
        };
        Self {
            http: format!("http://{http}"),
            _burrow: burrow,
            _zookeeper: zookeeper,
            _dir: dir,
        }
    }

    /// GETs `path` of Burrow's HTTP API: its JSON answer, which must not
    /// be an error.
    pub(crate) async fn get(&self, path: &str) -> serde_json::Value {
        let answer: serde_json::Value = reqwest::get(format!("{}{path}", self.http))
            .await
            .unwrap_or_else(|e| panic!("GET {path} from Burrow: {e}"))
            .json()
            .await
            .expect("JSON");
        assert_eq!(answer["error"], false, "{path}: {answer}");
        answer
    }
}
