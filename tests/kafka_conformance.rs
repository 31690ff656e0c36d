//! Where the Kafka door used to differ from Kafka, each case as Kafka
//! answers it, against the running binary on SQLite and PostgreSQL: the
//! request-level `max_bytes` of a Fetch (KIP-74), what wakes a long poll,
//! illegal topic names, strings with a NUL byte, the states and kinds of
//! classic groups, the internal topics no client deletes, and the admin
//! APIs about where partitions live (DescribeLogDirs, ElectLeaders,
//! reassignments).

mod support;

use std::time::Duration;

use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, CreateTopicsResponse, DeleteGroupsRequest, DeleteGroupsResponse,
    DescribeClusterRequest, DescribeClusterResponse, DescribeGroupsRequest, DescribeGroupsResponse,
    FetchRequest, FetchResponse, GroupId, JoinGroupRequest, JoinGroupResponse, ListGroupsRequest,
    ListGroupsResponse, MetadataRequest, MetadataResponse, SyncGroupRequest, SyncGroupResponse,
    TopicName,
};
use kafka_protocol::records::RecordBatchDecoder;
use kafka_protocol::ResponseError;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::RDKafkaErrorCode;
use rdkafka::message::Timestamp;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};
use support::kafka::{call, create_topic};
use support::Broker;

const TIMEOUT: Duration = Duration::from_secs(20);

fn config(broker: &Broker) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", &broker.kafka)
        .set("broker.address.family", "v4");
    c
}

/// Sends `count` records of `size` bytes to each of `partitions`.
async fn fill(broker: &Broker, topic: &str, partitions: i32, count: usize, size: usize) {
    let producer: FutureProducer = config(broker)
        .set("linger.ms", "20")
        .create()
        .expect("producer");
    let payload = vec![b'x'; size];
    // Queued all at once, so they travel in batches; then awaited.
    let mut deliveries = Vec::new();
    for partition in 0..partitions {
        for _ in 0..count {
            let record = FutureRecord::<[u8], [u8]>::to(topic)
                .partition(partition)
                .payload(&payload);
            let queued = producer.send_result(record);
            deliveries.push(queued.unwrap_or_else(|(e, _)| panic!("queue full: {e}")));
        }
    }
    for delivery in deliveries {
        let delivered = tokio::time::timeout(TIMEOUT, delivery).await;
        let delivered = delivered
            .expect("delivered in time")
            .expect("not cancelled");
        delivered.unwrap_or_else(|(e, _)| panic!("produce failed: {e}"));
    }
}

/// A Fetch from offset 0 of each of `partitions`, each allowed
/// `partition_max` bytes, the whole answer `max_bytes`.
fn fetch(
    kafka: &str,
    topic: &str,
    partitions: i32,
    partition_max: i32,
    max_bytes: i32,
) -> FetchResponse {
    fetch_from(kafka, topic, partitions, 0, (partition_max, max_bytes))
}

/// A Fetch from offset `from` of each of `partitions`, with the limits
/// (`partition_max_bytes`, `max_bytes`).
fn fetch_from(
    kafka: &str,
    topic: &str,
    partitions: i32,
    from: i64,
    limits: (i32, i32),
) -> FetchResponse {
    let request = fetch_request(topic, partitions, from, limits);
    call(kafka, ApiKey::Fetch, 12, &request)
}

/// The Fetch [`fetch_from`] sends: at least 1 byte, waiting up to 100 ms.
fn fetch_request(
    topic: &str,
    partitions: i32,
    from: i64,
    (partition_max, max_bytes): (i32, i32),
) -> FetchRequest {
    FetchRequest::default()
        .with_replica_id(kafka_protocol::messages::BrokerId(-1))
        .with_max_wait_ms(100)
        .with_min_bytes(1)
        .with_max_bytes(max_bytes)
        .with_topics(vec![FetchTopic::default()
            .with_topic(TopicName(topic.to_owned().into()))
            .with_partitions(
                (0..partitions)
                    .map(|p| {
                        FetchPartition::default()
                            .with_partition(p)
                            .with_fetch_offset(from)
                            .with_partition_max_bytes(partition_max)
                    })
                    .collect(),
            )])
}

/// The record bytes and the number of records of each partition's answer.
fn sizes(answer: &FetchResponse) -> Vec<(usize, usize)> {
    answer.responses[0]
        .partitions
        .iter()
        .map(|p| {
            assert_eq!(p.error_code, 0, "partition {}", p.partition_index);
            let mut records = p.records.clone().unwrap_or_default();
            let bytes = records.len();
            let count = if bytes == 0 {
                0
            } else {
                RecordBatchDecoder::decode(&mut records)
                    .expect("a readable batch")
                    .records
                    .len()
            };
            (bytes, count)
        })
        .collect()
}

support::broker_scenarios!(&[];
    a_fetch_stays_within_its_max_bytes,
    a_fetch_resuming_inside_a_batch_fills_its_budget,
    a_long_poll_of_one_topic_wakes_for_its_own_records,
    illegal_topic_names_are_refused_and_nothing_is_created,
    a_group_whose_members_left_is_empty_and_can_be_deleted,
    authorized_operations_are_every_operation_without_an_authorizer,
    an_old_client_joins_a_group_with_join_group_v0,
    internal_topics_cannot_be_deleted,
    partition_admin_calls_answer_as_a_single_broker_kafka,
    every_version_of_the_partition_admin_apis_is_answered,
    a_log_append_time_topic_stamps_records_with_the_broker_time,
);

async fn a_fetch_stays_within_its_max_bytes(broker: &Broker) {
    create_topic(&broker.kafka, "wide", 3).await;
    fill(broker, "wide", 3, 20, 100_000).await;
    let kafka = broker.kafka.clone();
    let (capped, tiny) = tokio::task::spawn_blocking(move || {
        (
            sizes(&fetch(&kafka, "wide", 3, 20_000_000, 1_000_000)),
            sizes(&fetch(&kafka, "wide", 3, 20_000_000, 50_000)),
        )
    })
    .await
    .expect("fetch");

    // Each partition holds 2 MB and may send 20 MB; the answer may not.
    let total: usize = capped.iter().map(|(bytes, _)| bytes).sum();
    assert!(total <= 1_000_000, "{total} bytes answered: {capped:?}");
    assert!(capped[0].1 >= 9, "the first partition fills it: {capped:?}");

    // A record larger than the whole limit still comes, alone (KIP-74).
    assert_eq!(tiny[0].1, 1, "{tiny:?}");
    assert_eq!(&tiny[1..], &[(0, 0), (0, 0)], "{tiny:?}");
}

/// The broker keeps every fetch within its in-flight budget, whatever the
/// client asks: a fetch's records are held twice (read and written) until
/// its answer is written, and that charge is at most a quarter of the
/// budget, so an answer holds at most an eighth of it (KIP-74 lets a
/// broker's own limit cut an answer). A real consumer still reads every
/// record, over more fetches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_answers_no_more_than_the_in_flight_budget_allows() {
    let db = support::TestDb::sqlite();
    // 1 MiB, of which an eighth is the small requests' reserve: a fetch
    // answers at most 896 KiB / 8 = 112 KiB of records.
    let broker = Broker::start(&db.url, &["--max-kafka-in-flight-bytes", "1048576"]);
    const LIMIT: usize = 112 * 1024;
    create_topic(&broker.kafka, "budgeted", 4).await;
    // 200 kB in each partition, 800 kB in all, which the client allows.
    fill(&broker, "budgeted", 4, 200, 1_000).await;
    let kafka = broker.kafka.clone();
    let answer = tokio::task::spawn_blocking(move || {
        sizes(&fetch(&kafka, "budgeted", 4, 1_000_000, 50_000_000))
    })
    .await
    .expect("fetch");
    let total: usize = answer.iter().map(|(bytes, _)| bytes).sum();
    assert!(total <= LIMIT, "{total} bytes answered: {answer:?}");
    assert!(
        answer[0].1 >= 100,
        "the first partition fills the limit: {answer:?}"
    );

    // A `min_bytes` above what the broker answers is met by a full answer,
    // at once rather than at the end of `max_wait_ms`.
    let kafka = broker.kafka.clone();
    let (waited, answer) = tokio::task::spawn_blocking(move || {
        let request = fetch_request("budgeted", 1, 0, (1_000_000, 50_000_000))
            .with_max_wait_ms(10_000)
            .with_min_bytes(10_000_000);
        let started = std::time::Instant::now();
        let answer: FetchResponse = call(&kafka, ApiKey::Fetch, 12, &request);
        (started.elapsed(), sizes(&answer))
    })
    .await
    .expect("fetch");
    assert!(answer[0].1 >= 100, "{answer:?}");
    assert!(
        waited < Duration::from_secs(5),
        "a full answer waited {waited:?} for a min_bytes it cannot reach"
    );

    let consumer: BaseConsumer = config(&broker)
        .set("group.id", "budgeted")
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let mut assignment = TopicPartitionList::new();
    for p in 0..4 {
        assignment
            .add_partition_offset("budgeted", p, Offset::Beginning)
            .expect("assignable");
    }
    let read = tokio::task::spawn_blocking(move || {
        consumer.assign(&assignment).expect("assign");
        let deadline = std::time::Instant::now() + TIMEOUT;
        let mut read = 0;
        while read < 800 && std::time::Instant::now() < deadline {
            match consumer.poll(Duration::from_millis(200)) {
                Some(Ok(_)) => read += 1,
                Some(Err(e)) => panic!("consume failed: {e}"),
                None => {}
            }
        }
        read
    })
    .await
    .expect("consume");
    assert_eq!(read, 800, "every record is read, over more fetches");
}

/// The offsets of the records of the first partition's answer.
fn offsets(answer: &FetchResponse) -> Vec<i64> {
    let partition = &answer.responses[0].partitions[0];
    assert_eq!(partition.error_code, 0);
    let mut records = partition.records.clone().unwrap_or_default();
    let mut offsets = Vec::new();
    while !records.is_empty() {
        let batch = RecordBatchDecoder::decode(&mut records).expect("a readable batch");
        offsets.extend(batch.records.iter().map(|r| r.offset));
    }
    offsets
}

/// A partition budget that ends inside a stored batch answers the records
/// that fit; the fetch from the next offset gets the batch's rest and what
/// follows up to the same budget, not the rest alone (which once made
/// every other fetch of a consumer a short one).
async fn a_fetch_resuming_inside_a_batch_fills_its_budget(broker: &Broker) {
    create_topic(&broker.kafka, "resume", 1).await;
    // Two rounds, so at least two stored batches of 400 records of 1 kB.
    fill(broker, "resume", 1, 400, 1_000).await;
    fill(broker, "resume", 1, 400, 1_000).await;
    let kafka = broker.kafka.clone();
    let limits = (300_000, 50_000_000);
    let (first, second) = tokio::task::spawn_blocking(move || {
        let first = offsets(&fetch_from(&kafka, "resume", 1, 0, limits));
        let next = first.last().map_or(0, |o| o + 1);
        let answer = fetch_from(&kafka, "resume", 1, next, limits);
        let bytes = answer.responses[0].partitions[0]
            .records
            .as_ref()
            .map_or(0, |r| r.len());
        assert!(bytes <= 300_000, "{bytes} bytes for a 300,000 budget");
        (first, offsets(&answer))
    })
    .await
    .expect("fetch");
    assert!(
        (200..=300).contains(&first.len()),
        "300 kB hold 200-300 records of 1 kB: {}",
        first.len()
    );
    assert!(
        second.len() >= 200,
        "the fetch resuming at {} got {} records",
        first.len(),
        second.len()
    );
    let all: Vec<i64> = first.iter().chain(&second).copied().collect();
    assert_eq!(all, (0..all.len() as i64).collect::<Vec<_>>());
}

/// A long poll of one topic sleeps on that topic's appends alone: records
/// produced to another topic leave it waiting, and a record of its own
/// answers it at once, long before its `max_wait_ms`.
async fn a_long_poll_of_one_topic_wakes_for_its_own_records(broker: &Broker) {
    create_topic(&broker.kafka, "polled", 1).await;
    create_topic(&broker.kafka, "elsewhere", 1).await;
    let kafka = broker.kafka.clone();
    let poll = tokio::task::spawn_blocking(move || {
        let request =
            fetch_request("polled", 1, 0, (1_000_000, 1_000_000)).with_max_wait_ms(20_000);
        let started = std::time::Instant::now();
        let answer: FetchResponse = call(&kafka, ApiKey::Fetch, 12, &request);
        (started.elapsed(), sizes(&answer))
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    fill(broker, "elsewhere", 1, 20, 100).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !poll.is_finished(),
        "records of another topic answered the poll"
    );
    fill(broker, "polled", 1, 1, 100).await;
    let (waited, answer) = poll.await.expect("fetch");
    assert_eq!(answer[0].1, 1, "the poll answers its record: {answer:?}");
    assert!(
        waited < Duration::from_secs(10),
        "the poll waited {waited:?}: its topic's record did not wake it"
    );
}

/// The names of the topics Metadata lists.
fn topic_names(kafka: &str) -> Vec<String> {
    let all: MetadataResponse = call(
        kafka,
        ApiKey::Metadata,
        9,
        &MetadataRequest::default().with_topics(None),
    );
    all.topics
        .iter()
        .filter_map(|t| t.name.as_ref().map(|n| n.to_string()))
        .collect()
}

async fn illegal_topic_names_are_refused_and_nothing_is_created(broker: &Broker) {
    let kafka = broker.kafka.clone();
    tokio::task::spawn_blocking(move || {
        let illegal = [
            " with spaces".to_owned(),
            ".".to_owned(),
            "..".to_owned(),
            "*".to_owned(),
            "tópico".to_owned(),
            "x".repeat(250),
        ];
        let topic = |name: &str| {
            CreatableTopic::default()
                .with_name(TopicName(name.to_owned().into()))
                .with_num_partitions(1)
                .with_replication_factor(1)
        };
        let request = CreateTopicsRequest::default()
            .with_timeout_ms(5_000)
            .with_topics(
                illegal
                    .iter()
                    .map(|n| topic(n))
                    .chain([topic("legal.name_1-x")])
                    .collect(),
            );
        let created: CreateTopicsResponse = call(&kafka, ApiKey::CreateTopics, 5, &request);
        for (name, result) in illegal.iter().zip(&created.topics) {
            assert_eq!(
                result.error_code,
                ResponseError::InvalidTopicException.code(),
                "CreateTopics {name:?}"
            );
        }
        assert_eq!(created.topics[illegal.len()].error_code, 0, "the legal one");

        // Metadata that may auto-create: refused the same way.
        let request = MetadataRequest::default()
            .with_allow_auto_topic_creation(true)
            .with_topics(Some(
                illegal
                    .iter()
                    .map(|n| {
                        MetadataRequestTopic::default().with_name(Some(TopicName(n.clone().into())))
                    })
                    .collect(),
            ));
        let answer: MetadataResponse = call(&kafka, ApiKey::Metadata, 9, &request);
        for (name, t) in illegal.iter().zip(&answer.topics) {
            assert_eq!(
                t.error_code,
                ResponseError::InvalidTopicException.code(),
                "Metadata {name:?}"
            );
        }
        assert_eq!(topic_names(&kafka), vec!["legal.name_1-x".to_owned()]);
    })
    .await
    .expect("requests");
}

/// A group's (state, protocol type) as ListGroups and as DescribeGroups
/// answer them.
fn group_views(kafka: &str, group: &str) -> (Option<(String, String)>, (String, String)) {
    let listed: ListGroupsResponse =
        call(kafka, ApiKey::ListGroups, 4, &ListGroupsRequest::default());
    let listed = listed
        .groups
        .iter()
        .find(|g| g.group_id.as_str() == group)
        .map(|g| (g.group_state.to_string(), g.protocol_type.to_string()));
    let request =
        DescribeGroupsRequest::default().with_groups(vec![GroupId(group.to_owned().into())]);
    let described: DescribeGroupsResponse = call(kafka, ApiKey::DescribeGroups, 5, &request);
    let d = &described.groups[0];
    assert_eq!(d.error_code, 0, "DescribeGroups {group}");
    (
        listed,
        (d.group_state.to_string(), d.protocol_type.to_string()),
    )
}

fn delete_group(kafka: &str, group: &str) -> i16 {
    let request =
        DeleteGroupsRequest::default().with_groups_names(vec![GroupId(group.to_owned().into())]);
    let answer: DeleteGroupsResponse = call(kafka, ApiKey::DeleteGroups, 2, &request);
    answer.results[0].error_code
}

async fn a_group_whose_members_left_is_empty_and_can_be_deleted(broker: &Broker) {
    create_topic(&broker.kafka, "grouped", 2).await;
    fill(broker, "grouped", 2, 3, 10).await;
    // One group commits, one never does: both exist once their member left.
    for (group, commits) in [("committing", true), ("reading", false)] {
        let consumer: BaseConsumer = config(broker)
            .set("group.id", group)
            .set("enable.auto.commit", "false")
            .set("auto.offset.reset", "earliest")
            .create()
            .expect("consumer");
        consumer.subscribe(&["grouped"]).expect("subscribe");
        let deadline = std::time::Instant::now() + TIMEOUT;
        let message = loop {
            assert!(
                std::time::Instant::now() < deadline,
                "no record for {group}"
            );
            if let Some(m) = consumer.poll(Duration::from_millis(100)) {
                break m.expect("consume");
            }
        };
        if commits {
            consumer
                .commit_message(&message, CommitMode::Sync)
                .expect("commit");
        }
        drop(message);
        let kafka = broker.kafka.clone();
        let with_member = tokio::task::spawn_blocking(move || group_views(&kafka, group))
            .await
            .expect("views");
        let stable = ("Stable".to_owned(), "consumer".to_owned());
        assert_eq!(with_member, (Some(stable.clone()), stable), "{group}");

        drop(consumer); // closes: LeaveGroup
        let kafka = broker.kafka.clone();
        let (after, deleted, gone) = tokio::task::spawn_blocking(move || {
            let after = group_views(&kafka, group);
            let deleted = delete_group(&kafka, group);
            (after, deleted, group_views(&kafka, group))
        })
        .await
        .expect("views");
        let empty = ("Empty".to_owned(), "consumer".to_owned());
        assert_eq!(after, (Some(empty.clone()), empty), "{group} after close");
        assert_eq!(deleted, 0, "{group} deleted right after close");
        assert_eq!(gone, (None, ("Dead".to_owned(), String::new())), "{group}");
    }
}

/// The ACL operation codes set in a KIP-430 bit field.
fn operations(bits: i32) -> Vec<u8> {
    (0..32).filter(|op| bits & (1 << op) != 0).collect()
}

async fn authorized_operations_are_every_operation_without_an_authorizer(broker: &Broker) {
    create_topic(&broker.kafka, "described", 1).await;
    let kafka = broker.kafka.clone();
    tokio::task::spawn_blocking(move || {
        let asked = MetadataRequest::default()
            .with_topics(Some(vec![MetadataRequestTopic::default()
                .with_name(Some(TopicName("described".to_owned().into())))]))
            .with_include_cluster_authorized_operations(true)
            .with_include_topic_authorized_operations(true);
        let answer: MetadataResponse = call(&kafka, ApiKey::Metadata, 10, &asked);
        // READ WRITE CREATE DELETE ALTER DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS
        let topic_ops = vec![3, 4, 5, 6, 7, 8, 10, 11];
        assert_eq!(
            operations(answer.topics[0].topic_authorized_operations),
            topic_ops
        );
        // CREATE ALTER DESCRIBE CLUSTER_ACTION DESCRIBE_CONFIGS ALTER_CONFIGS IDEMPOTENT_WRITE
        let cluster_ops = vec![5, 7, 8, 9, 10, 11, 12];
        assert_eq!(
            operations(answer.cluster_authorized_operations),
            cluster_ops
        );

        let not_asked = MetadataRequest::default().with_topics(None);
        let answer: MetadataResponse = call(&kafka, ApiKey::Metadata, 10, &not_asked);
        assert_eq!(answer.topics[0].topic_authorized_operations, i32::MIN);

        let request =
            DescribeClusterRequest::default().with_include_cluster_authorized_operations(true);
        let cluster: DescribeClusterResponse = call(&kafka, ApiKey::DescribeCluster, 0, &request);
        assert_eq!(
            operations(cluster.cluster_authorized_operations),
            cluster_ops
        );

        let request = DescribeGroupsRequest::default()
            .with_groups(vec![GroupId("any".to_owned().into())])
            .with_include_authorized_operations(true);
        let groups: DescribeGroupsResponse = call(&kafka, ApiKey::DescribeGroups, 5, &request);
        // READ DELETE DESCRIBE
        assert_eq!(
            operations(groups.groups[0].authorized_operations),
            vec![3, 6, 8]
        );
    })
    .await
    .expect("requests");
}

async fn an_old_client_joins_a_group_with_join_group_v0(broker: &Broker) {
    let kafka = broker.kafka.clone();
    tokio::task::spawn_blocking(move || {
        // sarama 1.22 and kafka-go 0.2 join with v0 (no rebalance timeout).
        let join = JoinGroupRequest::default()
            .with_group_id(GroupId("old".to_owned().into()))
            .with_session_timeout_ms(10_000)
            .with_member_id("".into())
            .with_protocol_type("consumer".into())
            .with_protocols(vec![JoinGroupRequestProtocol::default()
                .with_name("range".into())
                .with_metadata(bytes::Bytes::from_static(b"subscription"))]);
        let joined: JoinGroupResponse = call(&kafka, ApiKey::JoinGroup, 0, &join);
        assert_eq!(joined.error_code, 0);
        assert_eq!(joined.generation_id, 1);
        assert!(!joined.member_id.is_empty());
        assert_eq!(joined.leader, joined.member_id, "the only member leads");
        assert_eq!(joined.protocol_name.as_deref(), Some("range"));
        assert_eq!(joined.members.len(), 1);

        let sync = SyncGroupRequest::default()
            .with_group_id(GroupId("old".to_owned().into()))
            .with_generation_id(joined.generation_id)
            .with_member_id(joined.member_id.clone())
            .with_assignments(vec![SyncGroupRequestAssignment::default()
                .with_member_id(joined.member_id.clone())
                .with_assignment(bytes::Bytes::from_static(b"assignment"))]);
        let synced: SyncGroupResponse = call(&kafka, ApiKey::SyncGroup, 0, &sync);
        assert_eq!(synced.error_code, 0);
        assert_eq!(&synced.assignment[..], b"assignment");
        let (listed, described) = group_views(&kafka, "old");
        let stable = ("Stable".to_owned(), "consumer".to_owned());
        assert_eq!((listed, described), (Some(stable.clone()), stable));
    })
    .await
    .expect("requests");
}

async fn internal_topics_cannot_be_deleted(broker: &Broker) {
    // A commit writes the offsets log, so `__consumer_offsets` exists.
    create_topic(&broker.kafka, "kept", 1).await;
    let consumer: BaseConsumer = config(broker)
        .set("group.id", "keeper")
        .create()
        .expect("consumer");
    let mut positions = rdkafka::TopicPartitionList::new();
    positions
        .add_partition_offset("kept", 0, rdkafka::Offset::Offset(0))
        .expect("position");
    consumer
        .commit(&positions, CommitMode::Sync)
        .expect("committed");
    let internal = ["__consumer_offsets", "__transaction_state"];
    assert!(topic_names_async(broker)
        .await
        .contains(&internal[0].to_owned()));

    let admin: AdminClient<DefaultClientContext> = config(broker).create().expect("admin");
    let deleted = admin
        .delete_topics(&internal, &AdminOptions::new())
        .await
        .expect("answered");
    for (name, result) in internal.iter().zip(&deleted) {
        assert_eq!(
            result,
            &Err(((*name).to_owned(), RDKafkaErrorCode::InvalidTopic)),
            "{name}"
        );
    }
    // Still there, with the commit in it.
    assert!(topic_names_async(broker)
        .await
        .contains(&internal[0].to_owned()));
    let committed = consumer
        .committed_offsets(positions, TIMEOUT)
        .expect("committed offsets");
    let offset = committed.find_partition("kept", 0).map(|p| p.offset());
    assert_eq!(offset, Some(rdkafka::Offset::Offset(0)));
}

/// [`topic_names`] off the async runtime's threads.
async fn topic_names_async(broker: &Broker) -> Vec<String> {
    let kafka = broker.kafka.clone();
    tokio::task::spawn_blocking(move || topic_names(&kafka))
        .await
        .expect("metadata")
}

async fn partition_admin_calls_answer_as_a_single_broker_kafka(broker: &Broker) {
    tokio::task::block_in_place(|| support::python::run("kafka_partition_admin.py", broker, &[]));
}

async fn every_version_of_the_partition_admin_apis_is_answered(broker: &Broker) {
    use kafka_protocol::messages::{
        describe_log_dirs_request, elect_leaders_request, AlterPartitionReassignmentsRequest,
        AlterPartitionReassignmentsResponse, DescribeLogDirsRequest, DescribeLogDirsResponse,
        ElectLeadersRequest, ElectLeadersResponse, ListPartitionReassignmentsRequest,
        ListPartitionReassignmentsResponse,
    };
    create_topic(&broker.kafka, "placed", 2).await;
    let kafka = broker.kafka.clone();
    tokio::task::spawn_blocking(move || {
        let name = || TopicName("placed".to_owned().into());
        for version in 1..=4 {
            let request = DescribeLogDirsRequest::default().with_topics(Some(vec![
                describe_log_dirs_request::DescribableLogDirTopic::default()
                    .with_topic(name())
                    .with_partitions(vec![1, 5]),
            ]));
            let answer: DescribeLogDirsResponse =
                call(&kafka, ApiKey::DescribeLogDirs, version, &request);
            assert_eq!(answer.error_code, 0, "v{version}");
            let [dir] = &answer.results[..] else {
                panic!("one log dir at v{version}: {answer:?}");
            };
            let listed: Vec<_> = dir
                .topics
                .iter()
                .flat_map(|t| {
                    t.partitions
                        .iter()
                        .map(|p| (t.name.to_string(), p.partition_index))
                })
                .collect();
            assert_eq!(listed, vec![("placed".to_owned(), 1)], "v{version}");
        }
        for version in 0..=2 {
            let request = ElectLeadersRequest::default().with_topic_partitions(Some(vec![
                elect_leaders_request::TopicPartitions::default()
                    .with_topic(name())
                    .with_partitions(vec![0, 2]),
            ]));
            let answer: ElectLeadersResponse =
                call(&kafka, ApiKey::ElectLeaders, version, &request);
            let codes: Vec<i16> = answer.replica_election_results[0]
                .partition_result
                .iter()
                .map(|p| p.error_code)
                .collect();
            let expected = vec![
                ResponseError::ElectionNotNeeded.code(),
                ResponseError::UnknownTopicOrPartition.code(),
            ];
            assert_eq!(codes, expected, "v{version}");
        }
        // For all partitions (a null list) Kafka lists each topic without
        // the partitions that need no election.
        let request = ElectLeadersRequest::default().with_topic_partitions(None);
        let answer: ElectLeadersResponse = call(&kafka, ApiKey::ElectLeaders, 2, &request);
        let placed: Vec<_> = answer
            .replica_election_results
            .iter()
            .filter(|r| r.topic.as_str() == "placed")
            .map(|r| r.partition_result.len())
            .collect();
        assert_eq!((answer.error_code, placed), (0, vec![0]));
        // An election type Kafka does not know refuses the whole request.
        let request = ElectLeadersRequest::default()
            .with_election_type(7)
            .with_topic_partitions(None);
        let answer: ElectLeadersResponse = call(&kafka, ApiKey::ElectLeaders, 2, &request);
        assert_eq!(answer.error_code, ResponseError::InvalidRequest.code());
        for version in 0..=1 {
            let answer: AlterPartitionReassignmentsResponse = call(
                &kafka,
                ApiKey::AlterPartitionReassignments,
                version,
                &AlterPartitionReassignmentsRequest::default(),
            );
            assert_eq!(answer.error_code, 0, "v{version}");
        }
        let answer: ListPartitionReassignmentsResponse = call(
            &kafka,
            ApiKey::ListPartitionReassignments,
            0,
            &ListPartitionReassignmentsRequest::default().with_topics(None),
        );
        assert_eq!((answer.error_code, answer.topics.len()), (0, 0));
    })
    .await
    .expect("requests");
}

/// The timestamps of the first `count` records of partition 0 of `topic`,
/// as rdkafka reports them (with their type).
fn timestamps(broker: &Broker, topic: &str, count: usize) -> Vec<Timestamp> {
    use rdkafka::message::Message;
    let consumer: BaseConsumer = config(broker)
        .set("group.id", format!("{topic}-reader"))
        .create()
        .expect("consumer");
    let mut assignment = rdkafka::TopicPartitionList::new();
    assignment
        .add_partition_offset(topic, 0, rdkafka::Offset::Beginning)
        .expect("assignment");
    consumer.assign(&assignment).expect("assigned");
    let deadline = std::time::Instant::now() + TIMEOUT;
    let mut seen = Vec::new();
    while seen.len() < count {
        assert!(
            std::time::Instant::now() < deadline,
            "read {seen:?} of {topic}"
        );
        if let Some(message) = consumer.poll(Duration::from_millis(200)) {
            seen.push(message.expect("a record").timestamp());
        }
    }
    seen
}

/// A LogAppendTime topic: each record takes the broker's time when
/// appended, and the produce answer and fetched batches say so, so clients
/// report `LogAppendTime` with each record's own append time.
async fn a_log_append_time_topic_stamps_records_with_the_broker_time(broker: &Broker) {
    let admin: AdminClient<DefaultClientContext> = config(broker).create().expect("admin");
    let topics = [
        NewTopic::new("stamped", 1, TopicReplication::Fixed(1))
            .set("message.timestamp.type", "LogAppendTime"),
        NewTopic::new("as-produced", 1, TopicReplication::Fixed(1)),
    ];
    for created in admin
        .create_topics(&topics, &AdminOptions::new())
        .await
        .expect("answered")
    {
        created.expect("created");
    }
    let producer: FutureProducer = config(broker).create().expect("producer");
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_millis() as i64
    };
    let before = now();
    let mut delivered = Vec::new();
    // Two produces to each topic, far enough apart to be appended at
    // different times.
    for round in 0..2 {
        for topic in ["stamped", "as-produced"] {
            let record = FutureRecord::<[u8], [u8]>::to(topic)
                .partition(0)
                .payload(b"x")
                .timestamp(1_000 + round);
            let delivery = producer
                .send(record, TIMEOUT)
                .await
                .unwrap_or_else(|(e, _)| panic!("produce to {topic}: {e}"));
            delivered.push((topic, delivery.timestamp));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let after = now();
    let stamped: Vec<Timestamp> = delivered
        .iter()
        .filter(|(topic, _)| *topic == "stamped")
        .map(|&(_, t)| t)
        .collect();
    for t in &stamped {
        let Timestamp::LogAppendTime(ms) = *t else {
            panic!("the produce answer's log_append_time_ms is reported, got {t:?}");
        };
        assert!(
            (before..=after).contains(&ms),
            "the broker's time {ms} is within {before}..={after}"
        );
    }
    assert_ne!(stamped[0], stamped[1], "two appends, two times");
    tokio::task::block_in_place(|| {
        assert_eq!(
            timestamps(broker, "stamped", 2),
            stamped,
            "fetched as LogAppendTime, each record at its own append time"
        );
        assert_eq!(
            timestamps(broker, "as-produced", 2),
            [Timestamp::CreateTime(1_000), Timestamp::CreateTime(1_001)],
            "CreateTime keeps the producer's"
        );
    });
}
