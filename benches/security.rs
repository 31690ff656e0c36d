//! What security costs on the Kafka door, against the release binary with
//! a CA made here: librdkafka produces then consumes the same records
//! (100 bytes, acks=all, batches up to 1 MiB, one partition) over
//! PLAINTEXT, SSL and SASL_SSL (SCRAM-SHA-512) listeners of one broker, in
//! the same run, and reports records/s and the share of PLAINTEXT's; then
//! SCRAM-SHA-512 authentications per second (new connection, SaslHandshake,
//! both SaslAuthenticate rounds, as clients do them; the client's PBKDF2 is
//! done once, as a client caching its salted password would).
//!
//! `cargo bench --bench security` (SQLite); `-- --backend postgres`,
//! `--records N`, `--auths N`, `--clients N`, `--repeat N` (median of N
//! timed runs per listener, interleaved). Ends with the broker's peak
//! resident memory.

#[path = "../tests/support/mod.rs"]
mod support;

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use bytes::{Bytes, BytesMut};
use common::{fresh_db, peak_rss_mib, Flags};
use hmac::{Hmac, Mac};
use kafka_protocol::messages::{
    ApiKey, RequestHeader, ResponseHeader, SaslAuthenticateRequest, SaslAuthenticateResponse,
    SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{Message, Offset, TopicPartitionList};
use sha2::{Digest, Sha512};
use support::pki::Pki;
use support::Broker;

const USER: &str = "bench";
const PASSWORD: &str = "bench-secret";
const LISTENERS: [&str; 3] = ["PLAINTEXT", "SSL", "SASL_SSL"];

fn client(broker: &Broker, pki: &Pki, listener: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", broker.listener(listener))
        .set("broker.address.family", "v4")
        .set("security.protocol", listener.to_ascii_lowercase());
    if listener.contains("SSL") {
        c.set("ssl.ca.location", pki.path("ca.pem"));
    }
    if listener.starts_with("SASL") {
        c.set("sasl.mechanism", "SCRAM-SHA-512")
            .set("sasl.username", USER)
            .set("sasl.password", PASSWORD);
    }
    c
}

fn produce(config: &ClientConfig, topic: &str, records: usize) -> f64 {
    let producer: ThreadedProducer<DefaultProducerContext> =
        common::bulk_producer(&mut config.clone())
            .create()
            .expect("producer");
    let payload = [b'x'; 100];
    // Untimed: the connection, the TLS handshake and the authentication.
    producer
        .send(BaseRecord::<(), [u8]>::to(topic).payload(&payload[..]))
        .map_err(|(e, _)| e)
        .expect("warm-up record");
    producer.flush(Duration::from_secs(30)).expect("warm-up");
    let started = Instant::now();
    for _ in 0..records {
        let record = BaseRecord::<(), [u8]>::to(topic).payload(&payload[..]);
        common::send_queued(&producer, record);
    }
    producer.flush(Duration::from_secs(300)).expect("flush");
    started.elapsed().as_secs_f64()
}

fn consume(config: &ClientConfig, topic: &str, records: usize) -> f64 {
    let consumer: BaseConsumer = config
        .clone()
        .set("group.id", "bench-no-commits")
        .set("enable.auto.commit", "false")
        .set("queued.max.messages.kbytes", "1048576")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Beginning)
        .expect("tpl");
    consumer.assign(&tpl).expect("assign");
    // The warm-up record is read untimed with the connection.
    consumer
        .poll(Duration::from_secs(30))
        .expect("first record")
        .expect("message");
    let started = Instant::now();
    let mut seen = 0;
    while seen < records {
        match consumer.poll(Duration::from_secs(10)) {
            Some(m) => {
                let _ = m.expect("message").offset();
                seen += 1;
            }
            None => panic!("consumer stalled after {seen} records"),
        }
    }
    started.elapsed().as_secs_f64()
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// One Kafka request and its answer on `stream`.
fn call<A: Decodable>(
    stream: &mut TcpStream,
    api: ApiKey,
    version: i16,
    body: &impl Encodable,
) -> A {
    let header = RequestHeader::default()
        .with_request_api_key(api as i16)
        .with_request_api_version(version)
        .with_correlation_id(1);
    let mut frame = BytesMut::new();
    header
        .encode(&mut frame, api.request_header_version(version))
        .expect("header");
    body.encode(&mut frame, version).expect("body");
    stream
        .write_all(&(frame.len() as i32).to_be_bytes())
        .and_then(|()| stream.write_all(&frame))
        .expect("send");
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).expect("answer length");
    let mut answer = vec![0u8; i32::from_be_bytes(len) as usize];
    stream.read_exact(&mut answer).expect("answer");
    let mut answer = Bytes::from(answer);
    ResponseHeader::decode(&mut answer, api.response_header_version(version)).expect("header");
    A::decode(&mut answer, version).expect("answer body")
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mac = Hmac::<Sha512>::new_from_slice(key).expect("any key length");
    mac.chain_update(data).finalize().into_bytes().to_vec()
}

/// One SCRAM-SHA-512 authentication on a new connection to `address`.
/// `salted` caches the salted password once the first exchange told the
/// salt and iterations.
fn scram_once(address: &str, salted: &mut Option<Vec<u8>>, nonce: u64) {
    let mut stream = TcpStream::connect(address).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let handshake: SaslHandshakeResponse = call(
        &mut stream,
        ApiKey::SaslHandshake,
        1,
        &SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("SCRAM-SHA-512")),
    );
    assert_eq!(handshake.error_code, 0);
    let bare = format!("n={USER},r=bench{nonce}");
    let first: SaslAuthenticateResponse = call(
        &mut stream,
        ApiKey::SaslAuthenticate,
        2,
        &SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(format!("n,,{bare}"))),
    );
    assert_eq!(first.error_code, 0, "{:?}", first.error_message);
    let server_first = String::from_utf8(first.auth_bytes.to_vec()).expect("text");
    let field = |key: &str| {
        server_first
            .split(',')
            .find_map(|a| a.strip_prefix(key))
            .expect("server-first field")
            .to_owned()
    };
    let (combined, salt, iterations) = (field("r="), field("s="), field("i="));
    let salted = salted.get_or_insert_with(|| {
        let mut out = vec![0u8; 64];
        let salt = B64.decode(&salt).expect("salt");
        let rounds = iterations.parse().expect("iterations");
        pbkdf2::pbkdf2_hmac::<Sha512>(PASSWORD.as_bytes(), &salt, rounds, &mut out);
        out
    });
    let without_proof = format!("c=biws,r={combined}");
    let auth_message = format!("{bare},{server_first},{without_proof}");
    let client_key = hmac(salted, b"Client Key");
    let stored_key = Sha512::digest(&client_key);
    let signature = hmac(&stored_key, auth_message.as_bytes());
    let proof: Vec<u8> = client_key
        .iter()
        .zip(&signature)
        .map(|(k, s)| k ^ s)
        .collect();
    let last: SaslAuthenticateResponse = call(
        &mut stream,
        ApiKey::SaslAuthenticate,
        2,
        &SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(format!(
            "{without_proof},p={}",
            B64.encode(proof)
        ))),
    );
    assert_eq!(last.error_code, 0, "{:?}", last.error_message);
    assert!(last.auth_bytes.starts_with(b"v="));
}

#[tokio::main]
async fn main() {
    let flags = Flags::parse();
    let backend: String = flags.get("backend", "sqlite".to_owned());
    let records: usize = flags.get("records", 200_000);
    let auths: usize = flags.get("auths", 2_000);
    let clients: usize = flags.get("clients", 4).max(1);
    let repeat: usize = flags.get("repeat", 3).max(1);
    let db = fresh_db(&backend).await;
    let pki = Pki::new();
    let broker_flags = pki.flags("none");
    let broker_flags: Vec<&str> = broker_flags.iter().map(String::as_str).collect();
    let broker = Broker::start(&db.url, &broker_flags);
    support::add_user(&db.url, USER, PASSWORD);
    println!(
        "security bench: {backend}, {records} records of 100 bytes per run, median of {repeat}"
    );

    let mut produced = vec![Vec::new(); LISTENERS.len()];
    let mut consumed = vec![Vec::new(); LISTENERS.len()];
    tokio::task::block_in_place(|| {
        // Interleaved, so a noisy neighbour spreads over every listener.
        for run in 0..repeat {
            for (i, listener) in LISTENERS.iter().enumerate() {
                let config = client(&broker, &pki, listener);
                let topic = format!("bench-{listener}-{run}");
                produced[i].push(records as f64 / produce(&config, &topic, records));
                consumed[i].push(records as f64 / consume(&config, &topic, records));
            }
        }
    });
    let base = (median(produced[0].clone()), median(consumed[0].clone()));
    println!("| listener | produce records/s | of PLAINTEXT | consume records/s | of PLAINTEXT |");
    println!("| --- | --- | --- | --- | --- |");
    for (i, listener) in LISTENERS.iter().enumerate() {
        let (p, c) = (median(produced[i].clone()), median(consumed[i].clone()));
        println!(
            "| {listener} | {p:.0} | {:.0}% | {c:.0} | {:.0}% |",
            100.0 * p / base.0,
            100.0 * c / base.1
        );
    }

    let address = broker.listener("SASL_PLAINTEXT");
    let per_client = auths.div_ceil(clients);
    let started = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|c| {
            let address = address.clone();
            std::thread::spawn(move || {
                let mut salted = None;
                for i in 0..per_client {
                    scram_once(&address, &mut salted, (c * per_client + i) as u64);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("authenticating client");
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "SCRAM-SHA-512 authentications: {} in {elapsed:.2} s from {clients} clients = {:.0}/s",
        per_client * clients,
        (per_client * clients) as f64 / elapsed
    );
    println!(
        "broker peak RSS: {:.0} MiB",
        peak_rss_mib(broker.child.id())
    );
}
