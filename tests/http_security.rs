//! The HTTP door's security end to end, on both backends: HTTPS with a CA
//! made here, bearer tokens (HS256 with a shared secret, ES256 from a JWKS
//! file), Basic credentials of a user of the store, the `producerSub`
//! they stamp on pushed messages, and the refusals (wrong password,
//! tampered, expired or missing credentials) that read and write nothing.
//! Also the `queen-mq` Python client with a bearer token, and the start-up
//! rules (`--require-auth`, the warning beyond loopback).

mod support;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::{RequestBuilder, StatusCode};
use serde_json::{json, Value};
use support::pki::Pki;
use support::{Broker, TestDb};

const QUEUE: &str = "secure";
const ALICE: (&str, &str) = ("alice", "alice-http-secret");
const SECRET: &str = "an HS256 secret of more than thirty-two bytes";

/// The keys a broker trusts, as files, and tokens made with them.
struct Keys {
    dir: tempfile::TempDir,
    es256: EncodingKey,
}

impl Keys {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        // A trailing newline, as `echo` writes: the broker drops it.
        std::fs::write(dir.path().join("secret"), format!("{SECRET}\n")).expect("secret");
        let key = rcgen::KeyPair::generate().expect("P-256 key");
        // The uncompressed point: 0x04, x, y.
        let point = key.public_key_raw();
        let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
        let jwks = json!({"keys": [
            {"kty": "EC", "crv": "P-256", "kid": "other", "use": "sig",
             "x": b64(&point[1..33]), "y": b64(&point[1..33])},
            {"kty": "EC", "crv": "P-256", "kid": "k1", "use": "sig", "alg": "ES256",
             "x": b64(&point[1..33]), "y": b64(&point[33..65])},
        ]});
        std::fs::write(dir.path().join("jwks.json"), jwks.to_string()).expect("jwks");
        let es256 = EncodingKey::from_ec_pem(key.serialize_pem().as_bytes()).expect("ES256 key");
        Self { dir, es256 }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    /// `--http-auth jwt,basic` with both key files.
    fn flags(&self) -> Vec<String> {
        [
            "--http-auth",
            "jwt,basic",
            "--http-jwt-secret-file",
            &self.path("secret"),
            "--http-jwt-jwks-file",
            &self.path("jwks.json"),
        ]
        .map(str::to_owned)
        .to_vec()
    }
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64
}

/// A token for `sub` that expires `ttl` seconds from now.
fn hs256(sub: &str, ttl: i64) -> String {
    let claims = json!({"sub": sub, "exp": now() + ttl, "iat": now()});
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(SECRET.as_bytes()),
    )
    .expect("HS256 token")
}

fn es256(keys: &Keys, sub: &str) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some("k1".into());
    let claims = json!({"sub": sub, "exp": now() + 600, "nbf": now() - 5});
    jsonwebtoken::encode(&header, &claims, &keys.es256).expect("ES256 token")
}

/// How a request proves who it is.
#[derive(Clone, Copy)]
enum Auth<'a> {
    None,
    Bearer(&'a str),
    Basic(&'a str, &'a str),
}

impl Auth<'_> {
    fn apply(self, request: RequestBuilder) -> RequestBuilder {
        match self {
            Self::None => request,
            Self::Bearer(token) => request.bearer_auth(token),
            Self::Basic(user, password) => request.basic_auth(user, Some(password)),
        }
    }
}

/// An HTTPS client of one broker that trusts only the test CA.
struct Https {
    client: reqwest::Client,
    base: String,
}

impl Https {
    fn new(pki: &Pki, broker: &Broker) -> Self {
        let ca = std::fs::read(pki.path("ca.pem")).expect("CA");
        let client = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&ca).expect("CA PEM"))
            .build()
            .expect("client");
        let port = broker.http.rsplit(':').next().expect("port");
        Self {
            client,
            base: format!("https://localhost:{port}"),
        }
    }

    async fn send(&self, request: RequestBuilder) -> (StatusCode, Value, Vec<String>) {
        let response = request.send().await.expect("HTTPS request");
        let status = response.status();
        let challenges = response
            .headers()
            .get_all("www-authenticate")
            .iter()
            .map(|v| v.to_str().expect("header").to_owned())
            .collect();
        let body = response.json().await.unwrap_or(Value::Null);
        (status, body, challenges)
    }

    async fn get(&self, auth: Auth<'_>, path: &str) -> (StatusCode, Value, Vec<String>) {
        let url = format!("{}{path}", self.base);
        self.send(auth.apply(self.client.get(url))).await
    }

    async fn post(&self, auth: Auth<'_>, path: &str, body: Value) -> (StatusCode, Value) {
        let url = format!("{}{path}", self.base);
        let (status, body, _) = self
            .send(auth.apply(self.client.post(url).json(&body)))
            .await;
        (status, body)
    }

    /// Pushes one message; a `producerSub` in the body must change nothing.
    async fn push(&self, auth: Auth<'_>, n: i64) -> StatusCode {
        let item = json!({"queue": QUEUE, "transactionId": format!("m-{n}"),
                          "payload": {"n": n}, "producerSub": "mallory"});
        self.post(auth, "/api/v1/push", json!({"items": [item]}))
            .await
            .0
    }

    async fn depth(&self, auth: Auth<'_>) -> i64 {
        let (status, body, _) = self
            .get(auth, &format!("/api/v1/resources/queues/{QUEUE}/depth"))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["pending"].as_i64().expect("pending")
    }
}

/// The flags that make the broker serve HTTPS with the test CA's server
/// certificate.
fn https_flags(pki: &Pki) -> [String; 4] {
    [
        "--http-tls-cert".to_owned(),
        pki.path("server.pem"),
        "--http-tls-key".to_owned(),
        pki.path("server.key"),
    ]
}

async fn https_tokens_and_basic(url: &str) {
    let pki = Pki::new();
    let keys = Keys::new();
    support::add_user(url, ALICE.0, ALICE.1);
    let mut flags = keys.flags();
    flags.extend(https_flags(&pki));
    flags.extend(
        [
            "--require-auth",
            "--kafka-listeners",
            "SASL_PLAINTEXT://127.0.0.1:0",
        ]
        .map(str::to_owned),
    );
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let broker = Broker::start(url, &flags);
    let api = Https::new(&pki, &broker);

    // Plain HTTP on the HTTPS port gets no answer.
    let plain = reqwest::get(format!("{}/health", broker.http)).await;
    assert!(plain.is_err(), "plain HTTP was served: {plain:?}");
    // /health stays open; the rest is not.
    let (status, _, _) = api.get(Auth::None, "/health").await;
    assert_eq!(status, StatusCode::OK);

    let token = hs256("svc-orders", 600);
    let es = es256(&keys, "svc-es");
    assert_eq!(api.push(Auth::Bearer(&token), 0).await, StatusCode::CREATED);
    assert_eq!(api.push(Auth::Bearer(&es), 1).await, StatusCode::CREATED);
    assert_eq!(
        api.push(Auth::Basic(ALICE.0, ALICE.1), 2).await,
        StatusCode::CREATED
    );
    let txn = json!({"operations": [{"type": "push", "items": [
        {"queue": QUEUE, "transactionId": "m-3", "payload": {"n": 3}, "producerSub": "mallory"}]}]});
    let (status, body) = api
        .post(Auth::Basic(ALICE.0, ALICE.1), "/api/v1/transaction", txn)
        .await;
    assert_eq!(
        (status, body["success"].clone()),
        (StatusCode::OK, json!(true)),
        "{body}"
    );
    let before = api.depth(Auth::Bearer(&token)).await;
    assert_eq!(before, 4);

    // Refused: 401 in the API's error shape, with a challenge per method.
    let mut tampered = hs256("svc-orders", 600).into_bytes();
    let payload_at = tampered.iter().position(|&b| b == b'.').expect("dot") + 3;
    tampered[payload_at] = if tampered[payload_at] == b'A' {
        b'B'
    } else {
        b'A'
    };
    let tampered = String::from_utf8(tampered).expect("ASCII");
    let expired = hs256("svc-orders", -3600);
    let forged = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &json!({"sub": "svc-orders", "exp": now() + 600}),
        &EncodingKey::from_secret(b"another secret, just as long as the real one"),
    )
    .expect("forged token");
    for (what, auth) in [
        ("no credentials", Auth::None),
        ("wrong password", Auth::Basic(ALICE.0, "not-her-password")),
        ("unknown user", Auth::Basic("mallory", ALICE.1)),
        ("tampered token", Auth::Bearer(&tampered)),
        ("expired token", Auth::Bearer(&expired)),
        ("token of another key", Auth::Bearer(&forged)),
    ] {
        let item = json!({"queue": QUEUE, "transactionId": "refused", "payload": {}});
        let (status, body) = api
            .post(auth, "/api/v1/push", json!({"items": [item]}))
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{what}: {body}");
        assert_eq!(body["code"], "unauthorized", "{what}: {body}");
        assert!(body["error"].as_str().is_some_and(|e| !e.is_empty()));
        let (status, _, challenges) = api
            .get(
                auth,
                &format!("/api/v1/pop/queue/{QUEUE}?batch=10&wait=false"),
            )
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{what}: pop");
        assert!(
            challenges.iter().any(|c| c.starts_with("Bearer"))
                && challenges.iter().any(|c| c.starts_with("Basic")),
            "{what}: {challenges:?}"
        );
        let (status, _, _) = api.get(auth, "/metrics").await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{what}: metrics");
        let (status, body) = api
            .post(
                auth,
                "/api/v1/transaction",
                json!({"operations": [{"type": "push",
                "items": [{"queue": QUEUE, "payload": {}}]}]}),
            )
            .await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "{what}: transaction {body}"
        );
    }
    // Nothing was written, and nothing was leased: the one good pop gets
    // all four, each on its first delivery, stamped with who pushed it.
    assert_eq!(api.depth(Auth::Bearer(&token)).await, before);
    let (status, body, _) = api
        .get(
            Auth::Bearer(&es),
            &format!("/api/v1/pop/queue/{QUEUE}?batch=10&wait=false"),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let messages = body["messages"].as_array().expect("messages");
    let seen: Vec<(i64, &str, i64)> = messages
        .iter()
        .map(|m| {
            (
                m["data"]["n"].as_i64().expect("n"),
                m["producerSub"].as_str().expect("producerSub"),
                m["deliveryAttempt"].as_i64().expect("attempt"),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (0, "svc-orders", 1),
            (1, "svc-es", 1),
            (2, "alice", 1),
            (3, "alice", 1)
        ]
    );
    // The message lookup shows it too.
    let m = &messages[0];
    let (status, body, _) = api
        .get(
            Auth::Bearer(&token),
            &format!(
                "/api/v1/messages/{}/{}",
                m["partitionId"].as_str().expect("partition"),
                m["transactionId"].as_str().expect("txn")
            ),
        )
        .await;
    assert_eq!(
        (status, &body["producerSub"]),
        (StatusCode::OK, &json!("svc-orders"))
    );
    let (status, _, _) = api.get(Auth::Bearer(&token), "/metrics").await;
    assert_eq!(status, StatusCode::OK);
    assert!(broker.terminate().success(), "graceful shutdown over TLS");
}

async fn python_client_with_a_bearer_token(url: &str) {
    let keys = Keys::new();
    let flags = keys.flags();
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let broker = Broker::start(url, &flags);
    let token = hs256("py-producer", 600);
    let bad = hs256("py-producer", -3600);
    tokio::task::block_in_place(|| {
        support::python::run(
            "http_bearer.py",
            &broker,
            &[
                ("QUEEN_TOKEN", &token),
                ("QUEEN_SUB", "py-producer"),
                ("QUEEN_BAD_TOKEN", &bad),
            ],
        )
    });
}

macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = crate::TestDb::sqlite();
                    crate::$name(&db.url).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = crate::TestDb::postgres().await;
                    crate::$name(&db.url).await;
                }
            )*
        }
    };
}

on_both_backends!(https_tokens_and_basic, python_client_with_a_bearer_token);

/// Runs the binary with `args` until it exits (a refusal) or prints its
/// listening line; answers whether it started, and its log.
fn start_or_refuse(args: &[&str]) -> (bool, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_queen"))
        .args(args)
        .env("QUEEN_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("queen");
    let mut line = String::new();
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    std::io::BufRead::read_line(&mut stdout, &mut line).expect("stdout");
    let started = line.starts_with("queen listening");
    let _ = child.kill();
    let _ = child.wait();
    let mut log = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut log)
        .expect("log");
    (started, log)
}

#[test]
fn require_auth_needs_http_authentication_and_an_open_api_is_warned_about() {
    let db = TestDb::sqlite();
    let keys = Keys::new();
    let base = [
        "--database-url",
        &db.url,
        "--kafka-listeners",
        "SASL_PLAINTEXT://127.0.0.1:0",
    ];
    let refused = [&base[..], &["--http-addr", "127.0.0.1:0", "--require-auth"]].concat();
    let (started, log) = start_or_refuse(&refused);
    assert!(!started, "started without HTTP authentication");
    assert!(
        log.contains("--require-auth") && log.contains("HTTP API"),
        "{log}"
    );
    let secret = keys.path("secret");
    let with_auth = [
        &refused[..],
        &["--http-auth", "jwt", "--http-jwt-secret-file", &secret],
    ]
    .concat();
    let (started, log) = start_or_refuse(&with_auth);
    assert!(started, "{log}");
    // A secret too short to be one is refused at start-up.
    let short = keys.path("short");
    std::fs::write(&short, "tiny").expect("short secret");
    let (started, log) = start_or_refuse(
        &[
            &base[..],
            &["--http-auth", "jwt", "--http-jwt-secret-file", &short],
        ]
        .concat(),
    );
    assert!(!started && log.contains("32 bytes"), "{log}");
    // Beyond loopback without authentication: served, with a warning.
    let (started, log) = start_or_refuse(&[&base[..], &["--http-addr", "0.0.0.0:0"]].concat());
    assert!(started, "{log}");
    assert!(
        log.contains("the HTTP API accepts anyone who reaches it"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_refuses_a_client_without_a_certificate() {
    let db = TestDb::sqlite();
    let pki = Pki::new();
    let keys = Keys::new();
    let mut flags = keys.flags();
    flags.extend(https_flags(&pki));
    flags.extend(["--http-tls-client-ca".to_owned(), pki.path("ca.pem")]);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let broker = Broker::start(&db.url, &flags);
    let without = Https::new(&pki, &broker);
    let refused = without
        .client
        .get(format!("{}/health", without.base))
        .send()
        .await;
    assert!(
        refused.is_err(),
        "served without a client certificate: {refused:?}"
    );

    let mut identity = std::fs::read(pki.path("client.pem")).expect("client cert");
    identity.extend(std::fs::read(pki.path("client.key")).expect("client key"));
    let ca = std::fs::read(pki.path("ca.pem")).expect("CA");
    let with = Https {
        client: reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&ca).expect("CA PEM"))
            .identity(reqwest::Identity::from_pem(&identity).expect("identity"))
            .build()
            .expect("client"),
        base: without.base.clone(),
    };
    let (status, _, _) = with.get(Auth::None, "/health").await;
    assert_eq!(status, StatusCode::OK);
    // A certificate is not a credential here: the API still asks for one.
    assert_eq!(with.push(Auth::None, 0).await, StatusCode::UNAUTHORIZED);
    let token = hs256("svc-mtls", 600);
    assert_eq!(
        with.push(Auth::Bearer(&token), 0).await,
        StatusCode::CREATED
    );
}
