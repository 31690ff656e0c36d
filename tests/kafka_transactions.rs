//! Kafka transactions end to end, on SQLite and PostgreSQL: librdkafka's
//! transactional producer (`transactional.id`) commits and aborts across
//! topics and partitions; a `read_committed` consumer sees committed records
//! only and moves past aborted records and markers, a `read_uncommitted`
//! one sees everything written; `send_offsets_to_transaction` makes a
//! group's offsets visible only when the transaction commits; a producer
//! fenced by a newer one with the same transactional id writes nothing;
//! requests from unknown or fenced producers, and a timeout over the
//! maximum, get Kafka's error codes and change nothing; a transaction left
//! open past its timeout is aborted by the broker. kafka-python (a second
//! client family) commits and aborts too.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, ApiKey, DescribeTransactionsRequest,
    DescribeTransactionsResponse, EndTxnRequest, EndTxnResponse, FindCoordinatorRequest,
    FindCoordinatorResponse, GroupId, InitProducerIdRequest, InitProducerIdResponse,
    ListTransactionsRequest, ListTransactionsResponse, OffsetFetchRequest, OffsetFetchResponse,
    ProducerId, TopicName, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::producer::Producer;
use rdkafka::{Offset, TopicPartitionList};
use support::kafka::{call, create_topic};
use support::txn::{client, latest, read_all, send, transactional, TxnProducer, WAIT};
use support::{broker_scenarios, Broker};

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| v.to_string()).collect()
}

/// Runs a blocking scenario (librdkafka's transactional calls block) off
/// the runtime's threads.
async fn blocking(kafka: &str, scenario: fn(&str)) {
    let kafka = kafka.to_owned();
    tokio::task::spawn_blocking(move || scenario(&kafka))
        .await
        .expect("scenario");
}

async fn commit_is_seen_and_abort_is_not(broker: &Broker) {
    create_topic(&broker.kafka, "orders", 2).await;
    create_topic(&broker.kafka, "audit", 1).await;
    blocking(&broker.kafka, |kafka| {
        let producer = transactional(kafka, "orders-app");
        producer.begin_transaction().expect("begin");
        send(&producer, "orders", 0, "c1");
        send(&producer, "orders", 1, "c2");
        send(&producer, "audit", 0, "c3");
        producer.commit_transaction(WAIT).expect("commit");

        producer.begin_transaction().expect("begin");
        send(&producer, "orders", 0, "a1");
        send(&producer, "orders", 1, "a2");
        send(&producer, "audit", 0, "a3");
        producer.flush(WAIT).expect("flushed");
        // Open: read_committed stops at the transaction's first record.
        assert_eq!(latest(kafka, "orders", 0, 1), 2, "LSO: c1, its marker");
        assert_eq!(latest(kafka, "orders", 0, 0), 3, "high watermark");
        let (seen, _) = read_all(kafka, &[("orders", 0)], "read_committed");
        assert_eq!(seen, strings(&["c1"]), "an open transaction is not read");
        producer.abort_transaction(WAIT).expect("abort");

        producer.begin_transaction().expect("begin");
        send(&producer, "orders", 0, "c4");
        producer.commit_transaction(WAIT).expect("commit");

        let all = [("audit", 0), ("orders", 0), ("orders", 1)];
        let (seen, positions) = read_all(kafka, &all, "read_committed");
        assert_eq!(seen, strings(&["c3", "c1", "c4", "c2"]));
        // audit/0: c3, commit, a3, abort. orders/0: c1, commit, a1, abort,
        // c4, commit. orders/1: c2, commit, a2, abort.
        let expected: BTreeMap<(String, i32), i64> = [
            (("audit".to_owned(), 0), 4),
            (("orders".to_owned(), 0), 6),
            (("orders".to_owned(), 1), 4),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            positions, expected,
            "read_committed moves past aborted records and markers"
        );
        assert_eq!(latest(kafka, "orders", 0, 1), 6, "nothing open: LSO = HW");

        let (seen, _) = read_all(kafka, &all, "read_uncommitted");
        assert_eq!(seen, strings(&["c3", "a3", "c1", "a1", "c4", "c2", "a2"]));
    })
    .await;
}

/// OffsetFetch of `group` on `topic`/0: (offset, error code), with or
/// without `require_stable`.
fn committed(kafka: &str, group: &str, topic: &str, require_stable: bool) -> (i64, i16) {
    let request = OffsetFetchRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
        .with_require_stable(require_stable)
        .with_topics(Some(vec![OffsetFetchRequestTopic::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
            .with_partition_indexes(vec![0])]));
    let answer: OffsetFetchResponse = call(kafka, ApiKey::OffsetFetch, 7, &request);
    let p = &answer.topics[0].partitions[0];
    (p.committed_offset, p.error_code)
}

async fn offsets_commit_with_the_transaction(broker: &Broker) {
    create_topic(&broker.kafka, "input", 1).await;
    create_topic(&broker.kafka, "output", 1).await;
    blocking(&broker.kafka, |kafka| {
        let consumer: BaseConsumer = client(kafka)
            .set("group.id", "pipeline")
            .set("enable.auto.commit", "false")
            .create()
            .expect("consumer");
        let metadata = consumer.group_metadata().expect("group metadata");
        let producer = transactional(kafka, "pipeline-app");
        let offsets = |offset: i64| {
            let mut tpl = TopicPartitionList::new();
            tpl.add_partition_offset("input", 0, Offset::Offset(offset))
                .expect("offset");
            tpl
        };

        producer.begin_transaction().expect("begin");
        send(&producer, "output", 0, "out-1");
        producer
            .send_offsets_to_transaction(&offsets(5), &metadata, WAIT)
            .expect("offsets sent");
        assert_eq!(
            committed(kafka, "pipeline", "input", false),
            (-1, 0),
            "not visible before the commit"
        );
        assert_eq!(
            committed(kafka, "pipeline", "input", true).1,
            ResponseError::UnstableOffsetCommit.code(),
            "require_stable: pending"
        );
        producer.commit_transaction(WAIT).expect("commit");
        assert_eq!(committed(kafka, "pipeline", "input", true), (5, 0));

        producer.begin_transaction().expect("begin");
        send(&producer, "output", 0, "out-2");
        producer
            .send_offsets_to_transaction(&offsets(9), &metadata, WAIT)
            .expect("offsets sent");
        producer.abort_transaction(WAIT).expect("abort");
        assert_eq!(
            committed(kafka, "pipeline", "input", true),
            (5, 0),
            "an aborted transaction's offsets are dropped"
        );
        let (seen, _) = read_all(kafka, &[("output", 0)], "read_committed");
        assert_eq!(seen, strings(&["out-1"]));
    })
    .await;
}

async fn a_fenced_producer_writes_nothing(broker: &Broker) {
    create_topic(&broker.kafka, "ledger", 1).await;
    blocking(&broker.kafka, |kafka| {
        let zombie = transactional(kafka, "ledger-app");
        zombie.begin_transaction().expect("begin");
        send(&zombie, "ledger", 0, "zombie-1");
        zombie.flush(WAIT).expect("flushed");

        // The same transactional id again: its open transaction is
        // aborted and the first producer fenced.
        let fresh = transactional(kafka, "ledger-app");
        fresh.begin_transaction().expect("begin");
        send(&fresh, "ledger", 0, "fresh");
        fresh.commit_transaction(WAIT).expect("commit");

        send(&zombie, "ledger", 0, "zombie-2");
        let _ = zombie.flush(Duration::from_secs(5));
        // Its batch is INVALID_PRODUCER_EPOCH, as Kafka's Produce answers:
        // librdkafka then holds the producer fenced, a fatal error.
        match zombie.commit_transaction(WAIT) {
            Err(KafkaError::Transaction(e)) => assert!(e.is_fatal(), "{e}"),
            other => panic!("the fenced producer cannot commit: {other:?}"),
        }

        let (seen, _) = read_all(kafka, &[("ledger", 0)], "read_committed");
        assert_eq!(seen, strings(&["fresh"]));
        let (seen, _) = read_all(kafka, &[("ledger", 0)], "read_uncommitted");
        assert_eq!(
            seen,
            strings(&["zombie-1", "fresh"]),
            "the zombie's late record was never written"
        );
    })
    .await;
}

fn tid(id: &str) -> TransactionalId {
    TransactionalId(StrBytes::from_string(id.to_owned()))
}

async fn bad_requests_change_nothing(broker: &Broker) {
    create_topic(&broker.kafka, "quiet", 1).await;
    blocking(&broker.kafka, |kafka| {
        // A transaction timeout over the maximum (900,000 ms).
        let init = InitProducerIdRequest::default()
            .with_transactional_id(Some(tid("slow")))
            .with_transaction_timeout_ms(900_001)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1);
        let answer: InitProducerIdResponse = call(kafka, ApiKey::InitProducerId, 4, &init);
        assert_eq!(
            answer.error_code,
            ResponseError::InvalidTransactionTimeout.code()
        );

        // AddPartitionsToTxn and EndTxn from a producer nobody handed out.
        let add = |producer_id: i64, epoch: i16, id: &str| {
            AddPartitionsToTxnRequest::default()
                .with_v3_and_below_transactional_id(tid(id))
                .with_v3_and_below_producer_id(ProducerId(producer_id))
                .with_v3_and_below_producer_epoch(epoch)
                .with_v3_and_below_topics(vec![AddPartitionsToTxnTopic::default()
                    .with_name(TopicName(StrBytes::from_static_str("quiet")))
                    .with_partitions(vec![0])])
        };
        let added: AddPartitionsToTxnResponse = call(
            kafka,
            ApiKey::AddPartitionsToTxn,
            3,
            &add(4242, 0, "nobody"),
        );
        assert_eq!(
            added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code,
            ResponseError::InvalidProducerIdMapping.code()
        );
        let end = |producer_id: i64, epoch: i16, id: &str, committed: bool| {
            EndTxnRequest::default()
                .with_transactional_id(tid(id))
                .with_producer_id(ProducerId(producer_id))
                .with_producer_epoch(epoch)
                .with_committed(committed)
        };
        let ended: EndTxnResponse = call(kafka, ApiKey::EndTxn, 3, &end(4242, 0, "nobody", true));
        assert_eq!(
            ended.error_code,
            ResponseError::InvalidProducerIdMapping.code()
        );

        // A real producer: committing an empty transaction is refused; an
        // older epoch is fenced.
        let init = init.with_transaction_timeout_ms(60_000);
        let first: InitProducerIdResponse = call(kafka, ApiKey::InitProducerId, 4, &init);
        assert_eq!(first.error_code, 0);
        let (id, epoch) = (first.producer_id.0, first.producer_epoch);
        let ended: EndTxnResponse = call(kafka, ApiKey::EndTxn, 3, &end(id, epoch, "slow", true));
        assert_eq!(ended.error_code, ResponseError::InvalidTxnState.code());
        let second: InitProducerIdResponse = call(kafka, ApiKey::InitProducerId, 4, &init);
        assert_eq!(
            (second.producer_id.0, second.producer_epoch),
            (id, epoch + 1)
        );
        let added: AddPartitionsToTxnResponse = call(
            kafka,
            ApiKey::AddPartitionsToTxn,
            3,
            &add(id, epoch, "slow"),
        );
        assert_eq!(
            added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code,
            ResponseError::ProducerFenced.code()
        );
        let added: AddPartitionsToTxnResponse = call(
            kafka,
            ApiKey::AddPartitionsToTxn,
            1,
            &add(id, epoch, "slow"),
        );
        assert_eq!(
            added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code,
            ResponseError::InvalidProducerEpoch.code(),
            "clients before KIP-588 get INVALID_PRODUCER_EPOCH"
        );
        let ended: EndTxnResponse = call(kafka, ApiKey::EndTxn, 3, &end(id, epoch, "slow", false));
        assert_eq!(ended.error_code, ResponseError::ProducerFenced.code());

        // FindCoordinator for a transactional id (key type 1); key types
        // Kafka does not know are refused.
        let find = |key_type: i8| {
            let request = FindCoordinatorRequest::default()
                .with_key(StrBytes::from_static_str("slow"))
                .with_key_type(key_type);
            let answer: FindCoordinatorResponse = call(kafka, ApiKey::FindCoordinator, 3, &request);
            (answer.error_code, answer.port)
        };
        let port: i32 = kafka
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("port");
        assert_eq!(find(1), (0, port));
        assert_eq!(find(7).0, ResponseError::InvalidRequest.code());

        assert_eq!(latest(kafka, "quiet", 0, 0), 0, "nothing was written");
    })
    .await;
}

async fn transactions_are_described_and_listed(broker: &Broker) {
    create_topic(&broker.kafka, "seen", 2).await;
    blocking(&broker.kafka, |kafka| {
        let producer = transactional(kafka, "described");
        producer.begin_transaction().expect("begin");
        send(&producer, "seen", 1, "x");
        send(&producer, "seen", 0, "y");
        producer.flush(WAIT).expect("flushed");

        let request = DescribeTransactionsRequest::default()
            .with_transactional_ids(vec![tid("described"), tid("unknown")]);
        let answer: DescribeTransactionsResponse =
            call(kafka, ApiKey::DescribeTransactions, 0, &request);
        let (known, unknown) = (&answer.transaction_states[0], &answer.transaction_states[1]);
        assert_eq!(known.error_code, 0);
        assert_eq!(known.transaction_state.as_str(), "Ongoing");
        assert_eq!(known.transaction_timeout_ms, 60_000);
        assert!(known.transaction_start_time_ms > 0);
        assert_eq!(known.topics.len(), 1);
        assert_eq!(known.topics[0].topic.as_str(), "seen");
        assert_eq!(known.topics[0].partitions, [0, 1]);
        assert_eq!(
            unknown.error_code,
            ResponseError::TransactionalIdNotFound.code()
        );

        // The brokers' batched form (v4+) verifies without adding.
        let verify = |id: &str, partitions: Vec<i32>| {
            AddPartitionsToTxnTransaction::default()
                .with_transactional_id(tid(id))
                .with_producer_id(known.producer_id)
                .with_producer_epoch(known.producer_epoch)
                .with_verify_only(true)
                .with_topics(vec![AddPartitionsToTxnTopic::default()
                    .with_name(TopicName(StrBytes::from_static_str("seen")))
                    .with_partitions(partitions)])
        };
        let request = AddPartitionsToTxnRequest::default().with_transactions(vec![
            verify("described", vec![0, 1]),
            verify("unknown", vec![0]),
        ]);
        let answer: AddPartitionsToTxnResponse =
            call(kafka, ApiKey::AddPartitionsToTxn, 5, &request);
        let codes: Vec<Vec<i16>> = answer
            .results_by_transaction
            .iter()
            .map(|t| {
                t.topic_results[0]
                    .results_by_partition
                    .iter()
                    .map(|p| p.partition_error_code)
                    .collect()
            })
            .collect();
        assert_eq!(
            codes,
            [
                vec![0, 0],
                vec![ResponseError::InvalidProducerIdMapping.code()]
            ]
        );

        let list = |states: &[&str]| {
            let request = ListTransactionsRequest::default()
                .with_duration_filter(-1)
                .with_state_filters(
                    states
                        .iter()
                        .map(|s| StrBytes::from_string(s.to_string()))
                        .collect(),
                );
            let answer: ListTransactionsResponse =
                call(kafka, ApiKey::ListTransactions, 1, &request);
            let ids: Vec<String> = answer
                .transaction_states
                .iter()
                .map(|t| t.transactional_id.to_string())
                .collect();
            let unknown: Vec<String> = answer
                .unknown_state_filters
                .iter()
                .map(|s| s.to_string())
                .collect();
            (ids, unknown)
        };
        assert_eq!(list(&["Ongoing"]), (strings(&["described"]), vec![]));
        assert_eq!(
            list(&["CompleteCommit", "Bogus"]),
            (vec![], strings(&["Bogus"]))
        );
        producer.commit_transaction(WAIT).expect("commit");
        assert_eq!(list(&["CompleteCommit"]).0, strings(&["described"]));

        // v2: the whole id must match the pattern; a bad one is refused.
        let by_pattern = |pattern: &str| {
            let request = ListTransactionsRequest::default()
                .with_duration_filter(-1)
                .with_transactional_id_pattern(Some(StrBytes::from_string(pattern.to_owned())));
            let answer: ListTransactionsResponse =
                call(kafka, ApiKey::ListTransactions, 2, &request);
            let ids: Vec<String> = answer
                .transaction_states
                .iter()
                .map(|t| t.transactional_id.to_string())
                .collect();
            (answer.error_code, ids)
        };
        assert_eq!(by_pattern("desc.*"), (0, strings(&["described"])));
        assert_eq!(by_pattern("desc"), (0, vec![]), "a whole-id match");
        assert_eq!(by_pattern(""), (0, strings(&["described"])), "empty: all");
        assert_eq!(
            by_pattern("(unclosed"),
            (ResponseError::InvalidRegularExpression.code(), vec![])
        );
    })
    .await;
}

async fn the_broker_aborts_a_transaction_past_its_timeout(broker: &Broker) {
    create_topic(&broker.kafka, "late", 1).await;
    blocking(&broker.kafka, |kafka| {
        let producer: TxnProducer = client(kafka)
            .set("transactional.id", "late-app")
            .set("transaction.timeout.ms", "1000")
            .create()
            .expect("producer");
        producer.init_transactions(WAIT).expect("init_transactions");
        producer.begin_transaction().expect("begin");
        send(&producer, "late", 0, "too-late");
        producer.flush(WAIT).expect("flushed");
        assert_eq!(latest(kafka, "late", 0, 1), 0, "open");
        let deadline = Instant::now() + WAIT;
        while latest(kafka, "late", 0, 1) == 0 {
            assert!(Instant::now() < deadline, "never aborted");
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(latest(kafka, "late", 0, 1), 2, "aborted: record, marker");
        assert!(
            producer.commit_transaction(WAIT).is_err(),
            "the producer was fenced"
        );
        let (seen, _) = read_all(kafka, &[("late", 0)], "read_committed");
        assert!(seen.is_empty());
    })
    .await;
}

/// Pops `queue` with queen-mq (acking each batch): it must get exactly
/// `expected` and then nothing.
fn queen_mq_pops(broker: &Broker, queue: &str, expected: &[&str]) {
    let expected = serde_json::to_string(expected).expect("json");
    support::python::run(
        "kafka_txn_native_pop.py",
        broker,
        &[("QUEEN_QUEUE", queue), ("QUEEN_EXPECT", &expected)],
    );
}

async fn queen_mq_pops_committed_records_only(broker: &Broker) {
    create_topic(&broker.kafka, "native-txn", 1).await;
    let kafka = broker.kafka.clone();
    let producer = tokio::task::spawn_blocking(move || {
        let producer = transactional(&kafka, "native-app");
        let v = |v: &str| format!("{{\"v\":\"{v}\"}}");
        for (values, commit) in [
            (["c1", "c2"].as_slice(), true),
            (&["a1", "a2"], false),
            (&["c3"], true),
            (&["a3"], false),
        ] {
            producer.begin_transaction().expect("begin");
            for value in values {
                send(&producer, "native-txn", 0, &v(value));
            }
            if commit {
                producer.commit_transaction(WAIT).expect("commit");
            } else {
                producer.flush(WAIT).expect("flushed");
                producer.abort_transaction(WAIT).expect("abort");
            }
        }
        // Left open while queen-mq pops: it must stop before it.
        producer.begin_transaction().expect("begin");
        send(&producer, "native-txn", 0, &v("o1"));
        producer.flush(WAIT).expect("flushed");
        producer
    })
    .await
    .expect("produced");
    queen_mq_pops(broker, "native-txn", &["c1", "c2", "c3"]);
    let producer = tokio::task::spawn_blocking(move || {
        producer.commit_transaction(WAIT).expect("commit");
    });
    producer.await.expect("committed");
    queen_mq_pops(broker, "native-txn", &["o1"]);
}

async fn kafka_python_commits_and_aborts(broker: &Broker) {
    support::python::run("kafka_transactions.py", broker, &[]);
}

broker_scenarios!(&[];
    queen_mq_pops_committed_records_only,
    kafka_python_commits_and_aborts,
    the_broker_aborts_a_transaction_past_its_timeout,
    transactions_are_described_and_listed,
    commit_is_seen_and_abort_is_not,
    offsets_commit_with_the_transaction,
    a_fenced_producer_writes_nothing,
    bad_requests_change_nothing,
);
