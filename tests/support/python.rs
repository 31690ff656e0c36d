//! Runs a script of `tests/python/` with the official Python clients
//! against a running broker. The interpreter is `$QUEEN_TEST_PYTHON`
//! (default `python3`) with `tests/python/requirements.txt` installed; a
//! missing client fails the test, saying so.

use std::process::Command;

use super::Broker;

fn python() -> String {
    std::env::var("QUEEN_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

/// Runs `script` with `QUEEN_URL` and `QUEEN_KAFKA` naming `broker`, and
/// `env` besides; fails the test with its output if the script fails.
pub(crate) fn run(script: &str, broker: &Broker, env: &[(&str, &str)]) {
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
        .envs(env.iter().copied())
        .output()
        .expect("run the python script");
    // Shown with `--nocapture`: the scripts print what they measured.
    print!("{}", String::from_utf8_lossy(&output.stdout));
    assert!(
        output.status.success(),
        "{script} failed\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
