//! Helpers for tests of the secured Kafka door: a broker with every
//! listener (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), users made with
//! `queen user`, librdkafka settings per listener and user, and a
//! produce and a read through them.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, MetadataRequest, MetadataResponse, RequestHeader, ResponseHeader,
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
    TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};

use super::pki::Pki;
use super::Broker;

/// How long a client waits for the broker.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(20);

/// Starts a broker with every listener on `url`.
pub(crate) fn start(url: &str, pki: &Pki, extra: &[&str]) -> Broker {
    let mut flags = pki.flags("requested");
    flags.extend(extra.iter().map(|s| (*s).to_owned()));
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    Broker::start(url, &flags)
}

/// `queen user add NAME` with the password from the environment or stdin.
pub(crate) fn add_user(url: &str, name: &str, password: &str, through_stdin: bool, extra: &[&str]) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_queen"));
    command
        .args(["--database-url", url, "user", "add", name])
        .args(extra)
        .env("QUEEN_LOG", "warn")
        .env_remove("QUEEN_USER_PASSWORD")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if !through_stdin {
        command.env("QUEEN_USER_PASSWORD", password);
    }
    let mut child = command.spawn().expect("spawn queen user add");
    if through_stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(format!("{password}\n").as_bytes())
            .expect("password on stdin");
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().expect("queen user add");
    assert!(
        out.status.success(),
        "queen user add {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub(crate) fn queen_user(url: &str, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_queen"))
        .args(["--database-url", url, "user"])
        .args(args)
        .env("QUEEN_LOG", "warn")
        .output()
        .expect("queen user")
}

/// librdkafka settings for `listener` of `broker` as `user` with `mechanism`.
pub(crate) fn client(
    broker: &Broker,
    pki: &Pki,
    listener: &str,
    auth: Option<(&str, (&str, &str))>,
) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", broker.listener(listener))
        .set("broker.address.family", "v4")
        .set("security.protocol", listener.to_ascii_lowercase())
        .set("message.timeout.ms", "8000")
        .set("socket.timeout.ms", "8000");
    if listener.contains("SSL") {
        c.set("ssl.ca.location", pki.path("ca.pem"));
    }
    if let Some((mechanism, (user, password))) = auth {
        c.set("sasl.mechanism", mechanism)
            .set("sasl.username", user)
            .set("sasl.password", password);
    }
    c
}

pub(crate) async fn produce(
    config: &ClientConfig,
    topic: &str,
    values: &[&str],
) -> Result<(), String> {
    let producer: FutureProducer = config
        .clone()
        .set("linger.ms", "5")
        .set("acks", "all")
        .create()
        .map_err(|e| e.to_string())?;
    for v in values {
        producer
            .send(FutureRecord::<(), _>::to(topic).payload(*v), TIMEOUT)
            .await
            .map_err(|(e, _)| e.to_string())?;
    }
    Ok(())
}

/// Every value of partition 0 of `topic`, read from the start (blocking).
pub(crate) fn read_all(config: &ClientConfig, topic: &str) -> Vec<String> {
    let consumer: BaseConsumer = config
        .clone()
        .set("group.id", "security-reader")
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", "100")
        .create()
        .expect("consumer");
    let (_, high) = consumer
        .fetch_watermarks(topic, 0, TIMEOUT)
        .expect("watermarks");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Beginning)
        .expect("partition");
    consumer.assign(&tpl).expect("assign");
    let deadline = Instant::now() + TIMEOUT;
    let (mut values, mut last_error) = (Vec::new(), None);
    while (values.len() as i64) < high {
        assert!(
            Instant::now() < deadline,
            "read {values:?} of {high}; last error {last_error:?}"
        );
        // Errors are retried until the deadline: right after a restart the
        // broker that stopped may still be listed for a while.
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                values.push(String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned())
            }
            Some(Err(e)) => last_error = Some(e),
            None => {}
        }
    }
    values
}

/// A connection speaking the protocol by hand, for what no client sends.
pub(crate) struct Raw {
    stream: TcpStream,
    correlation: i32,
}

impl Raw {
    /// A connection authenticated with SASL PLAIN as `user`.
    pub(crate) fn plain(address: &str, (user, password): (&str, &str)) -> Self {
        let mut raw = Self::connect(address);
        assert_eq!(raw.handshake(1, "PLAIN").error_code, 0);
        let answer = raw
            .authenticate(2, &plain_token(user, password))
            .expect("authentication answered");
        assert_eq!(answer.error_code, 0, "{user} authenticates");
        raw
    }

    pub(crate) fn connect(address: &str) -> Self {
        let stream = TcpStream::connect(address).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        Self {
            stream,
            correlation: 0,
        }
    }

    pub(crate) fn send(&mut self, api: ApiKey, version: i16, request: &impl Encodable) {
        self.correlation += 1;
        let header = RequestHeader::default()
            .with_request_api_key(api as i16)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation)
            .with_client_id(Some(StrBytes::from_static_str("raw")));
        let mut body = BytesMut::new();
        header
            .encode(&mut body, api.request_header_version(version))
            .expect("header");
        request.encode(&mut body, version).expect("body");
        self.send_raw(&body);
    }

    pub(crate) fn send_raw(&mut self, body: &[u8]) {
        // One write: a length prefix sent alone would hold the body back
        // (Nagle) until the broker's delayed ACK, up to 40 ms per request.
        let mut frame = Vec::with_capacity(4 + body.len());
        frame.extend_from_slice(&(body.len() as i32).to_be_bytes());
        frame.extend_from_slice(body);
        // The broker may already have closed: a failed write shows as EOF.
        let _ = self.stream.write_all(&frame);
    }

    /// The next frame, or `None` when the broker closed the connection.
    pub(crate) fn frame(&mut self) -> Option<Bytes> {
        let mut len = [0u8; 4];
        match self.stream.read_exact(&mut len) {
            Ok(()) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
                ) =>
            {
                return None
            }
            Err(e) => panic!("reading an answer: {e}"),
        }
        let mut frame = vec![0u8; i32::from_be_bytes(len) as usize];
        self.stream.read_exact(&mut frame).expect("frame");
        Some(Bytes::from(frame))
    }

    pub(crate) fn answer<A: Decodable>(&mut self, api: ApiKey, version: i16) -> Option<A> {
        let mut frame = self.frame()?;
        let header = ResponseHeader::decode(&mut frame, api.response_header_version(version))
            .expect("response header");
        assert_eq!(header.correlation_id, self.correlation);
        Some(A::decode(&mut frame, version).expect("answer body"))
    }

    pub(crate) fn call<A: Decodable>(
        &mut self,
        api: ApiKey,
        version: i16,
        request: &impl Encodable,
    ) -> Option<A> {
        self.send(api, version, request);
        self.answer(api, version)
    }

    pub(crate) fn handshake(&mut self, version: i16, mechanism: &str) -> SaslHandshakeResponse {
        let request = SaslHandshakeRequest::default()
            .with_mechanism(StrBytes::from_string(mechanism.to_owned()));
        self.call(ApiKey::SaslHandshake, version, &request)
            .expect("handshake answered")
    }

    pub(crate) fn authenticate(
        &mut self,
        version: i16,
        token: &[u8],
    ) -> Option<SaslAuthenticateResponse> {
        let request =
            SaslAuthenticateRequest::default().with_auth_bytes(Bytes::copy_from_slice(token));
        self.call(ApiKey::SaslAuthenticate, version, &request)
    }

    pub(crate) fn metadata(&mut self, topic: &str) -> Option<MetadataResponse> {
        let request = MetadataRequest::default()
            .with_topics(Some(vec![
                kafka_protocol::messages::metadata_request::MetadataRequestTopic::default()
                    .with_name(Some(TopicName(StrBytes::from_string(topic.to_owned())))),
            ]))
            .with_allow_auto_topic_creation(true);
        self.call(ApiKey::Metadata, 12, &request)
    }

    /// Whether the broker closed the connection without answering.
    pub(crate) fn closed(&mut self) -> bool {
        self.frame().is_none()
    }
}

pub(crate) fn plain_token(user: &str, password: &str) -> Vec<u8> {
    format!("\0{user}\0{password}").into_bytes()
}
