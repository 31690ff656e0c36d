//! Kafka idempotent producers end to end: librdkafka with
//! `enable.idempotence=true` keeps producing while the broker is killed with
//! SIGKILL and restarted, or loses the answers to its produce requests and
//! sends the batches again, and every record is stored exactly once, in
//! order; a replayed produce request answers its original offset and writes
//! nothing.

mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ApiKey, ProduceRequest, ProduceResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Message, Offset, TopicPartitionList};
use support::kafka::{call, create_topic};
use support::{free_port, Broker, TestDb};

const RECORDS: usize = 100_000;
const PARTITIONS: i32 = 4;

fn client(kafka: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", kafka)
        .set("broker.address.family", "v4");
    c
}

/// Produces RECORDS numbered records while the broker is killed and
/// restarted twice, then checks every number arrived once, in order.
/// With `second_broker`, a second broker shares the database and the first
/// stays dead after the first kill, so the producer's traffic moves over
/// (once the dead broker's heartbeat lapses) and comes back at the restart.
async fn survive_kills(db: &TestDb, second_broker: bool) {
    let (http, first) = (
        format!("127.0.0.1:{}", free_port()),
        format!("127.0.0.1:{}", free_port()),
    );
    let mut broker = Broker::start_on(&db.url, &http, &first, &[]);
    let other = second_broker.then(|| Broker::start(&db.url, &[]));
    let kafka = match &other {
        Some(b) => format!("{first},{}", b.kafka),
        None => first.clone(),
    };
    create_topic(&kafka, "numbers", PARTITIONS).await;
    let producer = idempotent_producer(&kafka);
    let sent = Arc::new(AtomicUsize::new(0));
    let sending = {
        let sent = sent.clone();
        // About 6 seconds in all, so the kills land mid-stream.
        tokio::spawn(async move {
            send_numbers(&producer, RECORDS, 500, Duration::from_millis(30), &sent).await
        })
    };
    for at in [RECORDS / 3, 2 * RECORDS / 3] {
        while sent.load(Ordering::Relaxed) < at {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        broker.child.kill().expect("SIGKILL");
        broker.child.wait().expect("reaped");
        // With a second broker, stay dead past the liveness timeout so the
        // producer moves its partitions over, then come back.
        let down = if second_broker {
            Duration::from_secs(12)
        } else {
            Duration::from_millis(300)
        };
        tokio::time::sleep(down).await;
        broker = Broker::start_on(&db.url, &http, &first, &[]);
    }
    sending
        .await
        .expect("every record was acknowledged in the end");

    assert_each_number_once(&kafka, RECORDS);
    drop((broker, other));
}

/// An idempotent producer that reconnects and retries quickly.
fn idempotent_producer(kafka: &str) -> FutureProducer {
    client(kafka)
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("linger.ms", "5")
        .set("message.timeout.ms", "120000")
        .set("reconnect.backoff.ms", "20")
        .set("reconnect.backoff.max.ms", "100")
        .set("retry.backoff.ms", "20")
        .create()
        .expect("producer")
}

/// Sends the numbers 0..`count` (n to partition n % PARTITIONS), pausing
/// `pause` after every `every` records, and waits until each one is
/// acknowledged; `sent` counts the records queued so far.
async fn send_numbers(
    producer: &FutureProducer,
    count: usize,
    every: usize,
    pause: Duration,
    sent: &AtomicUsize,
) {
    let mut deliveries = Vec::with_capacity(count);
    for n in 0..count {
        let payload = (n as u64).to_be_bytes();
        let record = FutureRecord::<[u8], [u8]>::to("numbers")
            .partition((n % PARTITIONS as usize) as i32)
            .payload(&payload);
        deliveries.push(
            producer
                .send_result(record)
                .map_err(|(e, _)| e)
                .expect("queued"),
        );
        sent.store(n + 1, Ordering::Relaxed);
        if n % every == every - 1 {
            tokio::time::sleep(pause).await;
        }
    }
    for d in deliveries {
        d.await
            .expect("delivery")
            .unwrap_or_else(|(e, _)| panic!("a record failed: {e}"));
    }
}

/// Reads every partition of `numbers` from the start and checks each of the
/// `records` numbers (number n on partition n % PARTITIONS) arrived exactly
/// once, in order, with nothing after them.
fn assert_each_number_once(kafka: &str, records: usize) {
    let consumer: BaseConsumer = client(kafka)
        .set("group.id", "unused")
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        tpl.add_partition_offset("numbers", p, Offset::Beginning)
            .expect("tpl");
    }
    consumer.assign(&tpl).expect("assign");
    let mut seen: BTreeMap<i32, Vec<u64>> = BTreeMap::new();
    let mut total = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    while total < records {
        assert!(Instant::now() < deadline, "consumed only {total} records");
        if let Some(m) = consumer.poll(Duration::from_millis(500)) {
            let m = m.expect("message");
            let n = u64::from_be_bytes(m.payload().expect("payload").try_into().expect("8 bytes"));
            seen.entry(m.partition()).or_default().push(n);
            total += 1;
        }
    }
    // Nothing more than the records sent: no duplicate slipped in.
    assert!(
        consumer.poll(Duration::from_secs(1)).is_none(),
        "more records than were produced"
    );
    for (p, numbers) in &seen {
        let expected: Vec<u64> = (0..records as u64)
            .filter(|n| n % PARTITIONS as u64 == *p as u64)
            .collect();
        assert_eq!(
            numbers, &expected,
            "partition {p}: every number once, in order, no gap"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idempotent_producer_survives_broker_kills_on_sqlite() {
    let db = TestDb::sqlite();
    survive_kills(&db, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idempotent_producer_survives_broker_kills_on_postgres() {
    let db = TestDb::postgres().await;
    survive_kills(&db, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idempotent_producer_moves_between_two_brokers_on_postgres() {
    let db = TestDb::postgres().await;
    survive_kills(&db, true).await;
}

/// A Produce request carrying one idempotent batch of `n` records.
fn produce_request(producer_id: i64, epoch: i16, sequence: i32, n: usize) -> ProduceRequest {
    let values = (0..n)
        .map(|i| bytes::Bytes::from(format!("r{i}")))
        .collect();
    let batch = support::kafka::record_batch(producer_id, epoch, sequence, values);
    ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_static_str("replayed")))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(batch))])])
}

/// Sends the request as Produce v9 and returns the partition's (error
/// code, base offset).
fn exchange(kafka: &str, request: &ProduceRequest) -> (i16, i64) {
    let response: ProduceResponse = call(kafka, ApiKey::Produce, 9, request);
    let p = &response.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replayed_batch_answers_its_original_offset_and_writes_nothing() {
    let db = TestDb::sqlite();
    let broker = Broker::start(&db.url, &[]);
    let kafka = broker.kafka.clone();
    tokio::task::spawn_blocking(move || {
        assert_eq!(
            exchange(&kafka, &produce_request(-1, -1, -1, 3)).0,
            0,
            "creates the topic"
        );
        let first = produce_request(42, 0, 0, 2);
        assert_eq!(exchange(&kafka, &first), (0, 3));
        assert_eq!(exchange(&kafka, &produce_request(42, 0, 2, 1)), (0, 5));
        // The exact same request again: the original base offset, nothing appended.
        assert_eq!(exchange(&kafka, &first), (0, 3));
        // A gap is refused: OUT_OF_ORDER_SEQUENCE_NUMBER.
        assert_eq!(exchange(&kafka, &produce_request(42, 0, 9, 1)).0, 45);
        // The next in sequence lands right after the last real append.
        assert_eq!(exchange(&kafka, &produce_request(42, 0, 3, 1)), (0, 6));
    })
    .await
    .expect("exchanges");
    let consumer: BaseConsumer = client(&broker.kafka)
        .set("group.id", "unused")
        .create()
        .expect("consumer");
    let (low, high) = consumer
        .fetch_watermarks("replayed", 0, Duration::from_secs(10))
        .expect("watermarks");
    assert_eq!((low, high), (0, 7), "the replay and the gap wrote nothing");
}

/// Forwards Kafka connections to `upstream`, and closes the client's
/// connection instead of forwarding every `every`-th Produce answer: the
/// batch is stored, the producer never hears of it and sends it again with
/// the same sequence numbers. Counts the answers it swallowed.
async fn lossy_proxy(
    listener: tokio::net::TcpListener,
    upstream: String,
    every: usize,
    dropped: Arc<AtomicUsize>,
) {
    let produced = Arc::new(AtomicUsize::new(0));
    while let Ok((client, _)) = listener.accept().await {
        let Ok(server) = tokio::net::TcpStream::connect(&upstream).await else {
            continue;
        };
        let (produced, dropped) = (produced.clone(), dropped.clone());
        tokio::spawn(async move {
            let (client_read, client_write) = client.into_split();
            let (server_read, server_write) = server.into_split();
            // Answers come back in request order: the API of each request
            // in flight, oldest first.
            let (apis, in_flight) = tokio::sync::mpsc::unbounded_channel::<i16>();
            let requests = tokio::spawn(forward_requests(client_read, server_write, apis));
            let lossy = Lossy {
                every,
                produced,
                dropped,
            };
            let _ = forward_answers(server_read, client_write, in_flight, &lossy).await;
            requests.abort();
        });
    }
}

/// When the proxy swallows a Produce answer.
struct Lossy {
    every: usize,
    produced: Arc<AtomicUsize>,
    dropped: Arc<AtomicUsize>,
}

/// Reads one length-prefixed frame.
async fn read_frame(from: &mut tokio::net::tcp::OwnedReadHalf) -> std::io::Result<Vec<u8>> {
    use tokio::io::AsyncReadExt;
    let mut len = [0u8; 4];
    from.read_exact(&mut len).await?;
    let mut frame = len.to_vec();
    frame.resize(4 + i32::from_be_bytes(len).max(0) as usize, 0);
    from.read_exact(&mut frame[4..]).await?;
    Ok(frame)
}

async fn forward_requests(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    apis: tokio::sync::mpsc::UnboundedSender<i16>,
) -> std::io::Result<()> {
    use tokio::io::AsyncWriteExt;
    loop {
        let frame = read_frame(&mut from).await?;
        let _ = apis.send(i16::from_be_bytes([frame[4], frame[5]]));
        to.write_all(&frame).await?;
    }
}

async fn forward_answers(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut in_flight: tokio::sync::mpsc::UnboundedReceiver<i16>,
    lossy: &Lossy,
) -> std::io::Result<()> {
    use tokio::io::AsyncWriteExt;
    loop {
        let frame = read_frame(&mut from).await?;
        if in_flight.recv().await == Some(ApiKey::Produce as i16)
            && lossy.produced.fetch_add(1, Ordering::Relaxed) % lossy.every == lossy.every - 1
        {
            lossy.dropped.fetch_add(1, Ordering::Relaxed);
            return Ok(()); // the client's connection closes unanswered
        }
        to.write_all(&frame).await?;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn batches_resent_after_lost_answers_are_stored_once_on_sqlite() {
    resend_after_lost_answers(&TestDb::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn batches_resent_after_lost_answers_are_stored_once_on_postgres() {
    let db = TestDb::postgres().await;
    resend_after_lost_answers(&db).await;
}

/// librdkafka's retries after lost answers are duplicates the broker must
/// recognise: every other Produce answer never reaches the producer, which
/// sends those batches again; every number is still stored exactly once. (A
/// broker that appended duplicates fails this every time; the kill tests
/// above rarely land between a commit and its answer.)
async fn resend_after_lost_answers(db: &TestDb) {
    const SENT: usize = 20_000;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("proxy port");
    let proxy = listener.local_addr().expect("address").to_string();
    let broker = Broker::start(&db.url, &["--advertised-kafka-addr", &proxy]);
    let dropped = Arc::new(AtomicUsize::new(0));
    let proxying = tokio::spawn(lossy_proxy(
        listener,
        broker.kafka.clone(),
        2,
        dropped.clone(),
    ));
    create_topic(&proxy, "numbers", PARTITIONS).await;
    // Paced, so that the records travel in a few hundred requests.
    let sent = AtomicUsize::new(0);
    send_numbers(
        &idempotent_producer(&proxy),
        SENT,
        50,
        Duration::from_millis(5),
        &sent,
    )
    .await;
    let lost = dropped.load(Ordering::Relaxed);
    assert!(
        lost >= 5,
        "only {lost} answers were lost: the test proves little"
    );
    let kafka = broker.kafka.clone();
    tokio::task::spawn_blocking(move || assert_each_number_once(&kafka, SENT))
        .await
        .expect("checked");
    println!("{lost} produce answers lost and their batches resent; every number stored once");
    proxying.abort();
    drop(broker);
}
