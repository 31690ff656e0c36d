//! The broker's log as an operator keeps it: stderr redirected to a file
//! holds no terminal escape codes, and `--log-format json` writes one JSON
//! object per line.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::Value;
use support::TestDb;

/// Runs the broker with stderr in a file and `extra` flags, sends it a
/// frame it refuses, stops it and answers the file's text.
fn log_of(extra: &[&str]) -> String {
    let db = TestDb::sqlite();
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("queen.log");
    let log = std::fs::File::create(&path).expect("log file");
    let mut child = Command::new(env!("CARGO_BIN_EXE_queen"))
        .args(["--http-addr", "127.0.0.1:0", "--kafka-addr", "127.0.0.1:0"])
        .args(["--database-url", &db.url])
        .args(extra)
        .env("QUEEN_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .expect("spawn queen");
    let stdout = child.stdout.take().expect("stdout");
    let listening = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find(|l| l.starts_with("queen listening"))
        .expect("the broker starts");
    let kafka = listening
        .split_whitespace()
        .find_map(|w| w.strip_prefix("kafka="))
        .expect("kafka address")
        .to_owned();
    // An unknown API key: the broker closes that connection.
    let mut conn = std::net::TcpStream::connect(&kafka).expect("connect");
    std::io::Write::write_all(&mut conn, &[0, 0, 0, 8, 0x7f, 0x7f, 0, 0, 0, 0, 0, 1])
        .expect("send");
    let mut answer = Vec::new();
    let _ = std::io::Read::read_to_end(&mut conn, &mut answer);
    // Stopping logs its own line.
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
    std::fs::read_to_string(&path).expect("read the log")
}

#[test]
fn a_log_file_holds_no_escape_codes() {
    let text = log_of(&[]);
    assert!(text.contains("listening"), "{text}");
    assert!(text.contains("shutting down"), "{text}");
    assert!(
        !text.contains('\x1b'),
        "escape codes in the log file:\n{text}"
    );
}

#[test]
fn json_logs_are_one_object_per_line() {
    let text = log_of(&["--log-format", "json"]);
    assert!(text.lines().count() >= 2, "{text}");
    assert!(!text.contains('\x1b'), "{text}");
    for line in text.lines() {
        let entry: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(entry["level"].is_string(), "{line}");
        assert!(entry["timestamp"].is_string(), "{line}");
        assert!(entry["fields"].is_object(), "{line}");
    }
}
