//! The Kafka door's security end to end, against the running binary with a
//! CA made here: users added with `queen user`, librdkafka over SASL_SSL
//! (SCRAM-SHA-512) and SASL_PLAINTEXT (PLAIN), kafka-python over SASL_SSL
//! (SCRAM-SHA-256) and the SCRAM admin APIs, kcat over SSL with a client
//! certificate, raw requests for what clients never send (skipping
//! authentication, v0 raw tokens, re-authentication), and every refusal
//! followed by a check, through an authenticated client, that nothing was
//! read or written. On SQLite and PostgreSQL; users shared by two brokers
//! on PostgreSQL.

mod support;

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, CreateTopicsRequest, DescribeClusterRequest,
    DescribeClusterResponse, FetchRequest, FindCoordinatorRequest, FindCoordinatorResponse,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord};
use support::pki::Pki;
use support::security::{
    add_user, client, plain_token, produce, queen_user, read_all, start, Raw, TIMEOUT,
};
use support::{Broker, TestDb};

const ALICE: (&str, &str) = ("alice", "alice-secret");
const BOB: (&str, &str) = ("bob", "bob-secret");

/// The topics an authenticated client sees (blocking).
fn topics(config: &ClientConfig) -> Vec<String> {
    let consumer: BaseConsumer = config.create().expect("client");
    let metadata = consumer.fetch_metadata(None, TIMEOUT).expect("metadata");
    metadata
        .topics()
        .iter()
        .map(|t| t.name().to_owned())
        .collect()
}

support::url_scenarios!(
    librdkafka_scram_sha512_over_sasl_ssl_and_plain_over_sasl_plaintext,
    refused_clients_read_and_write_nothing,
    raw_exchanges_v0_tokens_and_reauthentication,
    kcat_over_ssl_with_a_client_certificate,
    kafka_python_scram_sha256_and_the_scram_admin_apis,
);

async fn librdkafka_scram_sha512_over_sasl_ssl_and_plain_over_sasl_plaintext(url: &str) {
    let pki = Pki::new();
    let broker = start(url, &pki, &[]);
    add_user(url, ALICE.0, ALICE.1, false, &[]);
    add_user(url, BOB.0, BOB.1, true, &["--mechanisms", "SCRAM-SHA-256"]);
    let listed = queen_user(url, &["list"]);
    assert_eq!(
        String::from_utf8_lossy(&listed.stdout),
        "alice SCRAM-SHA-256(iterations=8192) SCRAM-SHA-512(iterations=8192)\n\
         bob SCRAM-SHA-256(iterations=8192)\n"
    );

    let scram = client(&broker, &pki, "SASL_SSL", Some(("SCRAM-SHA-512", ALICE)));
    produce(&scram, "secured", &["one", "two"])
        .await
        .expect("SCRAM-SHA-512 over SASL_SSL");
    // Bob has only a SHA-256 credential; PLAIN checks his password through it.
    let plain = client(&broker, &pki, "SASL_PLAINTEXT", Some(("PLAIN", BOB)));
    produce(&plain, "secured", &["three"])
        .await
        .expect("PLAIN over SASL_PLAINTEXT");
    let (scram_read, plain_read) =
        tokio::task::block_in_place(|| (read_all(&scram, "secured"), read_all(&plain, "secured")));
    assert_eq!(scram_read, ["one", "two", "three"]);
    assert_eq!(plain_read, scram_read);

    // Metadata answers each listener's own address: the client reconnects
    // to what it is told, so the produce above already depended on it.
    let advertised = tokio::task::block_in_place(|| {
        let consumer: BaseConsumer = scram.create().expect("client");
        let metadata = consumer.fetch_metadata(None, TIMEOUT).expect("metadata");
        metadata
            .brokers()
            .iter()
            .map(|b| format!("{}:{}", b.host(), b.port()))
            .collect::<Vec<_>>()
    });
    assert_eq!(advertised, [broker.listener("SASL_SSL")]);
}

async fn refused_clients_read_and_write_nothing(url: &str) {
    let pki = Pki::new();
    let broker = start(url, &pki, &[]);
    add_user(url, ALICE.0, ALICE.1, false, &[]);
    let alice = client(&broker, &pki, "SASL_SSL", Some(("SCRAM-SHA-512", ALICE)));
    produce(&alice, "kept", &["original"])
        .await
        .expect("alice produces");

    // A wrong password, with either mechanism family, and an unknown user.
    for (listener, mechanism, who) in [
        ("SASL_SSL", "SCRAM-SHA-512", (ALICE.0, "wrong")),
        ("SASL_SSL", "SCRAM-SHA-256", ("mallory", "anything")),
        ("SASL_PLAINTEXT", "PLAIN", (ALICE.0, "wrong")),
    ] {
        let config = client(&broker, &pki, listener, Some((mechanism, who)));
        let refused = produce(&config, "kept", &["forged"]).await;
        assert!(refused.is_err(), "{mechanism} as {who:?} was let in");
    }
    // No credentials at all: a plaintext client on the SASL port.
    let mut anonymous = client(&broker, &pki, "SASL_PLAINTEXT", None);
    anonymous.set("security.protocol", "plaintext");
    assert!(produce(&anonymous, "kept", &["forged"]).await.is_err());

    tokio::task::block_in_place(|| {
        let address = broker.listener("SASL_PLAINTEXT");
        // Skipping authentication: ApiVersions is answered, then a
        // Metadata that would create a topic closes the connection unanswered.
        let mut raw = Raw::connect(&address);
        let versions: ApiVersionsResponse = raw
            .call(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default())
            .expect("ApiVersions before authentication");
        assert!(versions
            .api_keys
            .iter()
            .any(|k| k.api_key == ApiKey::SaslAuthenticate as i16 && k.max_version == 2));
        assert!(
            raw.metadata("sneaky").is_none(),
            "Metadata before authentication"
        );
        // A CreateTopics or a Fetch, first thing on a connection: closed.
        let mut raw = Raw::connect(&address);
        let create = CreateTopicsRequest::default().with_topics(vec![
            kafka_protocol::messages::create_topics_request::CreatableTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("sneaky2")))
                .with_num_partitions(1)
                .with_replication_factor(1),
        ]);
        raw.send(ApiKey::CreateTopics, 7, &create);
        assert!(raw.closed(), "CreateTopics before authentication");
        let mut raw = Raw::connect(&address);
        raw.send(ApiKey::Fetch, 12, &FetchRequest::default());
        assert!(raw.closed(), "Fetch before authentication");
        // After a handshake but before SaslAuthenticate: still closed.
        let mut raw = Raw::connect(&address);
        assert_eq!(raw.handshake(1, "PLAIN").error_code, 0);
        assert!(raw.metadata("sneaky3").is_none(), "Metadata mid-handshake");
        // A wrong password is answered SASL_AUTHENTICATION_FAILED with a
        // message, then the connection closes.
        let mut raw = Raw::connect(&address);
        assert_eq!(raw.handshake(1, "PLAIN").error_code, 0);
        let failed = raw
            .authenticate(2, &plain_token(ALICE.0, "wrong"))
            .expect("the failure is answered");
        assert_eq!(failed.error_code, 58, "SASL_AUTHENTICATION_FAILED");
        assert!(
            failed
                .error_message
                .as_deref()
                .is_some_and(|m| !m.is_empty()),
            "{failed:?}"
        );
        assert!(raw.closed());
        // An unknown mechanism: UNSUPPORTED_SASL_MECHANISM with the list.
        let mut raw = Raw::connect(&address);
        let unsupported = raw.handshake(1, "GSSAPI");
        assert_eq!(unsupported.error_code, 33);
        assert_eq!(
            unsupported
                .mechanisms
                .iter()
                .map(|m| m.as_str())
                .collect::<Vec<_>>(),
            ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"]
        );
        assert!(raw.closed());
        // A malformed SCRAM message and an oversize frame: closed, no panic.
        let mut raw = Raw::connect(&address);
        assert_eq!(raw.handshake(1, "SCRAM-SHA-256").error_code, 0);
        let failed = raw
            .authenticate(2, b"p=tls-unique,,n=alice,r=x")
            .expect("answered");
        assert_eq!(failed.error_code, 58);
        let mut raw = Raw::connect(&address);
        raw.send_raw(&vec![0u8; 600 * 1024]);
        assert!(raw.closed(), "a 600 KiB frame before authentication");

        // Read back through an authenticated client: nothing was written.
        assert_eq!(read_all(&alice, "kept"), ["original"]);
        let seen = topics(&alice);
        for sneaky in ["sneaky", "sneaky2", "sneaky3"] {
            assert!(
                !seen.iter().any(|t| t == sneaky),
                "{sneaky} was created: {seen:?}"
            );
        }
    });
}

async fn raw_exchanges_v0_tokens_and_reauthentication(url: &str) {
    let pki = Pki::new();
    let broker = start(url, &pki, &["--kafka-sasl-session-lifetime-ms", "3000"]);
    add_user(url, ALICE.0, ALICE.1, false, &[]);
    add_user(url, BOB.0, BOB.1, false, &[]);
    tokio::task::block_in_place(|| {
        let address = broker.listener("SASL_PLAINTEXT");
        // SaslHandshake v0: raw length-prefixed tokens follow; PLAIN's
        // success is an empty token, and requests are served after it.
        let mut raw = Raw::connect(&address);
        assert_eq!(raw.handshake(0, "PLAIN").error_code, 0);
        raw.send_raw(&plain_token(ALICE.0, ALICE.1));
        assert_eq!(raw.frame().expect("raw answer").len(), 0);
        let metadata = raw.metadata("after-v0").expect("served after v0 PLAIN");
        assert_eq!(metadata.topics[0].error_code, 0);
        // Every address this listener's clients are given is its own.
        let endpoint = |host: &StrBytes, port: i32| format!("{host}:{port}");
        let brokers = &metadata.brokers;
        assert_eq!(endpoint(&brokers[0].host, brokers[0].port), address);
        let coordinator: FindCoordinatorResponse = raw
            .call(
                ApiKey::FindCoordinator,
                4,
                &FindCoordinatorRequest::default()
                    .with_coordinator_keys(vec![StrBytes::from_static_str("a-group")]),
            )
            .expect("FindCoordinator");
        let found = &coordinator.coordinators[0];
        assert_eq!(
            (found.error_code, endpoint(&found.host, found.port)),
            (0, address.clone())
        );
        let cluster: DescribeClusterResponse = raw
            .call(
                ApiKey::DescribeCluster,
                1,
                &DescribeClusterRequest::default(),
            )
            .expect("DescribeCluster");
        let listed = &cluster.brokers[0];
        assert_eq!(endpoint(&listed.host, listed.port), address);
        // A wrong raw token closes without an answer (there is no frame
        // to carry an error in, as in Kafka).
        let mut raw = Raw::connect(&address);
        assert_eq!(raw.handshake(0, "PLAIN").error_code, 0);
        raw.send_raw(&plain_token(ALICE.0, "wrong"));
        assert!(raw.closed());

        // KIP-368: the lifetime is told, re-authentication on the same
        // connection works, another principal is refused.
        let mut raw = Raw::connect(&address);
        assert_eq!(raw.handshake(1, "PLAIN").error_code, 0);
        let done = raw
            .authenticate(1, &plain_token(ALICE.0, ALICE.1))
            .expect("answered");
        assert_eq!((done.error_code, done.session_lifetime_ms), (0, 3000));
        assert_eq!(
            raw.handshake(1, "PLAIN").error_code,
            0,
            "re-authentication starts"
        );
        let again = raw
            .authenticate(1, &plain_token(ALICE.0, ALICE.1))
            .expect("answered");
        assert_eq!(again.error_code, 0);
        assert!(raw.metadata("after-reauth").is_some());
        assert_eq!(raw.handshake(1, "PLAIN").error_code, 0);
        let switched = raw
            .authenticate(1, &plain_token(BOB.0, BOB.1))
            .expect("answered");
        assert_eq!(
            switched.error_code, 58,
            "another principal on re-authentication"
        );
        assert!(raw.closed());
        // A session past its lifetime serves nothing but re-authentication.
        let mut raw = Raw::connect(&address);
        assert_eq!(raw.handshake(1, "PLAIN").error_code, 0);
        assert_eq!(
            raw.authenticate(2, &plain_token(ALICE.0, ALICE.1))
                .expect("answered")
                .error_code,
            0
        );
        std::thread::sleep(Duration::from_millis(3200));
        assert!(raw.metadata("expired").is_none(), "served after expiry");
    });
    // librdkafka re-authenticates by itself across several lifetimes.
    let config = client(&broker, &pki, "SASL_SSL", Some(("SCRAM-SHA-512", ALICE)));
    let producer: FutureProducer = config
        .clone()
        .set("linger.ms", "0")
        .create()
        .expect("producer");
    for i in 0..4 {
        producer
            .send(
                FutureRecord::<(), _>::to("reauth").payload(&format!("m{i}")),
                TIMEOUT,
            )
            .await
            .unwrap_or_else(|(e, _)| panic!("produce {i} across re-authentication: {e}"));
        tokio::time::sleep(Duration::from_millis(1500)).await;
    }
    let read = tokio::task::block_in_place(|| read_all(&config, "reauth"));
    assert_eq!(read, ["m0", "m1", "m2", "m3"]);
}

/// Runs kcat with `args`, feeding `input`; its exit status and stdout.
fn kcat(args: &[&str], input: &str) -> (bool, String) {
    let mut child = Command::new("kcat")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("kcat is needed for this test (scripts/setup installs it): {e}")
        });
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("kcat input");
    let out = child.wait_with_output().expect("kcat");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

async fn kcat_over_ssl_with_a_client_certificate(url: &str) {
    let pki = Pki::new();
    // Client certificates required: the SSL listener authenticates.
    let mut flags = pki.flags("required");
    // --require-auth covers the HTTP API too: it authenticates with Basic.
    flags.extend([
        "--require-auth".into(),
        "--http-auth".into(),
        "basic".into(),
    ]);
    flags[1] = "SSL://127.0.0.1:0".into();
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let broker = Broker::start(url, &flags);
    let address = broker.listener("SSL");
    let tls = [
        "-X",
        "security.protocol=ssl",
        "-X",
        &format!("ssl.ca.location={}", pki.path("ca.pem")),
    ];
    let with_cert = [
        "-X",
        &format!("ssl.certificate.location={}", pki.path("client.pem")),
        "-X",
        &format!("ssl.key.location={}", pki.path("client.key")),
    ];
    tokio::task::block_in_place(|| {
        let mut produce = vec!["-b", &address, "-t", "tls-topic", "-P", "-m", "10"];
        produce.extend(tls.iter().chain(&with_cert).map(|s| &**s));
        let (ok, _) = kcat(&produce, "first\nsecond\n");
        assert!(ok, "kcat produce over SSL with a client certificate");
        // Without a certificate the handshake is refused: nothing written.
        let mut refused = vec!["-b", &address, "-t", "tls-topic", "-P", "-m", "10"];
        refused.extend(tls.iter().map(|s| &**s));
        refused.extend(["-X", "message.timeout.ms=5000"]);
        let (ok, _) = kcat(&refused, "forged\n");
        assert!(!ok, "kcat without a client certificate was let in");
        let mut consume = vec![
            "-b",
            &address,
            "-t",
            "tls-topic",
            "-C",
            "-e",
            "-o",
            "beginning",
            "-m",
            "10",
        ];
        consume.extend(tls.iter().chain(&with_cert).map(|s| &**s));
        let (ok, out) = kcat(&consume, "");
        assert!(ok, "kcat consume over SSL");
        assert_eq!(out, "first\nsecond\n");
    });
    // The principal is the certificate's subject, as Kafka writes it.
    let principal = facade::tls::certificate_principal(&pki.client_der).expect("subject");
    assert_eq!(principal.as_str(), "User:CN=client,O=queen-tests");
}

fn python() -> String {
    std::env::var("QUEEN_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

async fn kafka_python_scram_sha256_and_the_scram_admin_apis(url: &str) {
    let pki = Pki::new();
    let broker = start(url, &pki, &[]);
    add_user(url, ALICE.0, ALICE.1, false, &[]);
    let script = format!(
        "{}/tests/python/kafka_sasl_scram.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = tokio::task::block_in_place(|| {
        Command::new(python())
            .arg(&script)
            .env("QUEEN_KAFKA_SASL_SSL", broker.listener("SASL_SSL"))
            .env("QUEEN_KAFKA_PLAINTEXT", broker.listener("PLAINTEXT"))
            .env("QUEEN_CA", pki.path("ca.pem"))
            .env("QUEEN_USER", ALICE.0)
            .env("QUEEN_PASSWORD", ALICE.1)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", python()))
    });
    print!("{}", String::from_utf8_lossy(&out.stdout));
    assert!(
        out.status.success(),
        "kafka_sasl_scram.py failed (needs tests/python/requirements.txt)\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The user made through AlterUserScramCredentials is in the database.
    let listed = queen_user(url, &["list"]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("carol SCRAM-SHA-256(iterations=4096)"),
        "{}",
        String::from_utf8_lossy(&listed.stdout)
    );
    let deleted = queen_user(url, &["delete", "carol"]);
    assert!(deleted.status.success());
    let again = queen_user(url, &["delete", "carol"]);
    assert!(!again.status.success(), "deleting a missing user fails");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_and_listeners_are_shared_by_two_brokers_on_postgres() {
    let db = TestDb::postgres().await;
    let pki = Pki::new();
    let (one, two) = (start(&db.url, &pki, &[]), start(&db.url, &pki, &[]));
    add_user(&db.url, ALICE.0, ALICE.1, false, &[]);
    // Authenticated by the second broker from the user the first one's
    // database holds; Metadata through SASL_SSL lists both brokers at
    // their SASL_SSL addresses.
    let config = client(&two, &pki, "SASL_SSL", Some(("SCRAM-SHA-512", ALICE)));
    produce(&config, "shared", &["via-two"])
        .await
        .expect("second broker");
    let on_one = client(&one, &pki, "SASL_PLAINTEXT", Some(("PLAIN", ALICE)));
    let (read, mut advertised) = tokio::task::block_in_place(|| {
        let consumer: BaseConsumer = config.create().expect("client");
        let deadline = Instant::now() + TIMEOUT;
        let advertised = loop {
            let metadata = consumer.fetch_metadata(None, TIMEOUT).expect("metadata");
            let brokers: Vec<String> = metadata
                .brokers()
                .iter()
                .map(|b| format!("{}:{}", b.host(), b.port()))
                .collect();
            if brokers.len() == 2 || Instant::now() > deadline {
                break brokers;
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        (read_all(&on_one, "shared"), advertised)
    });
    assert_eq!(read, ["via-two"]);
    advertised.sort();
    let mut expected = vec![one.listener("SASL_SSL"), two.listener("SASL_SSL")];
    expected.sort();
    assert_eq!(advertised, expected);
}

#[test]
fn require_auth_refuses_an_open_listener_and_an_exposed_one_is_warned_about() {
    let db = TestDb::sqlite();
    let refused = Command::new(env!("CARGO_BIN_EXE_queen"))
        .args(["--database-url", &db.url, "--http-addr", "127.0.0.1:0"])
        .args(["--kafka-addr", "127.0.0.1:0", "--require-auth"])
        .env("QUEEN_LOG", "warn")
        .output()
        .expect("queen");
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("--require-auth") && stderr.contains("PLAINTEXT"),
        "{stderr}"
    );
    // Without the flag, an open listener beyond loopback starts with a warning.
    let mut child = Command::new(env!("CARGO_BIN_EXE_queen"))
        .args(["--database-url", &db.url, "--http-addr", "127.0.0.1:0"])
        .args(["--kafka-addr", "0.0.0.0:0"])
        .env("QUEEN_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("queen");
    let mut stderr = child.stderr.take().expect("stderr");
    let mut line = String::new();
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    std::io::BufRead::read_line(&mut stdout, &mut line).expect("listening line");
    assert!(line.starts_with("queen listening"), "{line}");
    let _ = child.kill();
    let _ = child.wait();
    let mut log = String::new();
    stderr.read_to_string(&mut log).expect("log");
    assert!(
        log.contains("no authentication on a non-loopback address"),
        "{log}"
    );
}
