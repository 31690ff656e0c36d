//! Old Go Kafka clients (Debian's sarama 1.22 and kafka-go 0.2): building
//! the programs of `tests/go/` against the packaged sources, and checking
//! which protocol versions they spoke.

use std::path::PathBuf;

use super::Broker;

/// Builds the Go program `tests/go/{name}` against Debian's packaged
/// sources in GOPATH mode (no module download); `package` is the Debian
/// package holding `sources`, named when they are missing.
pub(crate) fn go_program(name: &str, sources: &str, package: &str) -> PathBuf {
    let sources = format!("/usr/share/gocode/src/{sources}");
    assert!(
        std::path::Path::new(&sources).is_dir(),
        "{sources} is missing: install golang-go and {package} (scripts/setup does)"
    );
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("legacy-go");
    // One binary per call: `cargo test` runs a file's tests (both
    // backends) as threads of one process, which must not build into, or
    // run from, the same path at once.
    static BUILDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let build = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let binary = out.join(format!("{name}-{}-{build}", std::process::id()));
    let built = std::process::Command::new("go")
        .args(["build", "-o"])
        .arg(&binary)
        .arg(".")
        .current_dir(format!("{}/tests/go/{name}", env!("CARGO_MANIFEST_DIR")))
        .env("GO111MODULE", "off")
        .env("GOPATH", "/usr/share/gocode")
        .env("GOCACHE", out.join("cache"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run go ({e}): install golang-go (scripts/setup does)"));
    assert!(
        built.status.success(),
        "building {name} failed:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    binary
}

/// Whether the broker counted a request of `api` at `version`.
pub(crate) async fn spoken(broker: &Broker, api: &str, version: i16) -> bool {
    let metrics = reqwest::get(format!("{}/metrics", broker.http))
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    let series = format!("queen_kafka_requests_total{{api=\"{api}\",version=\"{version}\"}}");
    metrics.lines().any(|l| l.starts_with(&series))
}
