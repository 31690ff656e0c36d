//! KIP-848 consumer groups (`group.protocol=consumer`) end to end against
//! the running binary, on SQLite and PostgreSQL: librdkafka members (the
//! `rdkafka` crate) joining and leaving while records flow, a raw member
//! that stops heartbeating and whose partitions move only after its
//! session expires, a group moving from the classic protocol to the new one
//! with its offsets, refused heartbeats and commits that change nothing, and
//! (on PostgreSQL) a group outliving its coordinator broker; a subscription
//! by pattern following topics and partitions created later; the `range`
//! assignor giving each member the same range of every topic.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kafka_protocol::messages::consumer_group_describe_response::DescribedGroup;
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    ApiKey, ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, DescribeGroupsRequest,
    DescribeGroupsResponse, GroupId, ListGroupsRequest, ListGroupsResponse, OffsetCommitRequest,
    OffsetCommitResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::Message;
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
use support::kafka::{call, create_topic, produce_numbered};
use support::Broker;

const TIMEOUT: Duration = Duration::from_secs(60);
/// A short session (the broker sets it for this protocol) and quick
/// heartbeats, so members come and go within seconds.
const BROKER_FLAGS: &[&str] = &[
    "--group-consumer-session-timeout-ms",
    "6000",
    "--group-consumer-heartbeat-interval-ms",
    "300",
];

support::broker_scenarios!(
    crate::BROKER_FLAGS;
    three_members_join_and_leave_while_records_flow,
    a_silent_member_keeps_its_partitions_until_its_session_expires,
    a_classic_group_moves_to_the_consumer_protocol_with_its_offsets,
    stale_and_unknown_members_are_refused_and_nothing_changes,
    a_pattern_subscription_follows_new_topics_and_partitions,
    a_static_member_comes_back_to_its_partitions,
    the_range_assignor_gives_each_member_the_same_range_of_every_topic,
);

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_owned())
}

/// A librdkafka member of `group` speaking `protocol` (`consumer` or
/// `classic`), committing by hand.
fn member(bootstrap: &str, group: &str, protocol: &str) -> Arc<BaseConsumer> {
    Arc::new(
        config(bootstrap, group, protocol)
            .create()
            .expect("consumer"),
    )
}

/// The configuration of [`member`].
fn config(bootstrap: &str, group: &str, protocol: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .set("group.id", group)
        .set("group.protocol", protocol)
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", "100")
        .set("topic.metadata.refresh.interval.ms", "1000");
    if protocol == "classic" {
        c.set("session.timeout.ms", "6000")
            .set("heartbeat.interval.ms", "500");
    }
    c
}

/// What the members consumed: every record number with how often it came.
#[derive(Default)]
struct Ledger {
    seen: Mutex<BTreeMap<String, usize>>,
    failed_commits: AtomicUsize,
}

impl Ledger {
    fn distinct(&self) -> usize {
        self.seen.lock().expect("lock").len()
    }
}

/// Polls `consumer` on a thread until `stop`, committing each record
/// synchronously after taking it (so only a record whose commit failed may
/// come again).
fn consume_in_background(
    consumer: Arc<BaseConsumer>,
    ledger: Arc<Ledger>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            if let Some(Ok(m)) = consumer.poll(Duration::from_millis(100)) {
                let body = String::from_utf8_lossy(m.payload().expect("value")).into_owned();
                *ledger.seen.lock().expect("lock").entry(body).or_default() += 1;
                if consumer.commit_message(&m, CommitMode::Sync).is_err() {
                    ledger.failed_commits.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    })
}

/// Waits until `done` holds, failing with `what` after [`TIMEOUT`].
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The partitions `consumer` holds now.
fn held(consumer: &BaseConsumer) -> BTreeSet<i32> {
    consumer
        .assignment()
        .map(|tpl| tpl.elements().iter().map(|e| e.partition()).collect())
        .unwrap_or_default()
}

/// The offsets `group` committed on partitions 0..`partitions` of `topic`,
/// read by a client outside the group.
fn committed(bootstrap: &str, group: &str, topic: &str, partitions: i32) -> Vec<i64> {
    let reader = member(bootstrap, group, "classic");
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition(topic, p);
    }
    let got = reader
        .committed_offsets(tpl, Duration::from_secs(10))
        .expect("committed offsets");
    (0..partitions)
        .map(|p| match got.find_partition(topic, p).map(|e| e.offset()) {
            Some(Offset::Offset(o)) => o,
            _ => -1,
        })
        .collect()
}

/// Produces records `from..to` of the flow, spread over its six partitions
/// (each batch numbered from 0 under its own prefix, so all are distinct).
async fn produce_range(broker: &Broker, from: usize, to: usize) {
    let prefix = format!("batch{from}");
    produce_numbered(&broker.kafka, "flow", &prefix, (to - from) as i32, 6).await;
}

async fn three_members_join_and_leave_while_records_flow(broker: &Broker) {
    create_topic(&broker.kafka, "flow", 6).await;
    let ledger = Arc::new(Ledger::default());
    let start = || {
        let c = member(&broker.kafka, "flowing", "consumer");
        c.subscribe(&["flow"]).expect("subscribe");
        let stop_c = Arc::new(AtomicBool::new(false));
        let t = consume_in_background(c.clone(), ledger.clone(), stop_c.clone());
        (c, stop_c, t)
    };
    let mut produced = 0usize;

    let (a, stop_a, ta) = start();
    wait_for("a to hold all six partitions", || held(&a).len() == 6);
    produce_range(broker, produced, produced + 120).await;
    produced += 120;
    let (b, stop_b, tb) = start();
    produce_range(broker, produced, produced + 120).await;
    produced += 120;
    let (c, stop_c, tc) = start();
    wait_for("three members sharing six partitions", || {
        let (x, y, z) = (held(&a), held(&b), held(&c));
        x.len() == 2
            && y.len() == 2
            && z.len() == 2
            && x.union(&y).chain(z.iter()).collect::<BTreeSet<_>>().len() == 6
    });
    produce_range(broker, produced, produced + 120).await;
    produced += 120;

    // a leaves (closing: epoch -1), then b; c ends with everything.
    stop_a.store(true, Ordering::Relaxed);
    ta.join().expect("a");
    drop(a);
    produce_range(broker, produced, produced + 120).await;
    produced += 120;
    wait_for("b and c sharing six partitions", || {
        held(&b).len() + held(&c).len() == 6 && held(&b).len() >= 2 && held(&c).len() >= 2
    });
    stop_b.store(true, Ordering::Relaxed);
    tb.join().expect("b");
    drop(b);
    produce_range(broker, produced, produced + 120).await;
    produced += 120;
    wait_for("c holding all six partitions", || held(&c).len() == 6);
    wait_for("every record consumed", || ledger.distinct() == produced);
    // Committed progress is the end of every partition.
    wait_for("the commits to reach the end", || {
        committed(&broker.kafka, "flowing", "flow", 6)
            .iter()
            .sum::<i64>()
            == produced as i64
    });
    stop_c.store(true, Ordering::Relaxed);
    tc.join().expect("c");

    let seen = ledger.seen.lock().expect("lock").clone();
    let again: usize = seen.values().map(|n| n - 1).sum();
    let failed = ledger.failed_commits.load(Ordering::Relaxed);
    assert!(
        again <= failed,
        "{again} records came twice though only {failed} commits failed"
    );
}

/// A raw ConsumerGroupHeartbeat v1 of `member` in `group`.
fn heartbeat(
    broker: &Broker,
    group: &str,
    member: &str,
    epoch: i32,
    owned: Option<Vec<TopicPartitions>>,
) -> ConsumerGroupHeartbeatResponse {
    let joining = epoch == 0;
    let request = ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_member_id(s(member))
        .with_member_epoch(epoch)
        .with_rebalance_timeout_ms(if joining { 60_000 } else { -1 })
        .with_subscribed_topic_names(joining.then(|| vec![TopicName(s("quiet"))]))
        .with_topic_partitions(owned);
    call(&broker.kafka, ApiKey::ConsumerGroupHeartbeat, 1, &request)
}

/// The group as ConsumerGroupDescribe shows it.
fn describe(broker: &Broker, group: &str) -> DescribedGroup {
    let request = ConsumerGroupDescribeRequest::default().with_group_ids(vec![GroupId(s(group))]);
    let mut answer: ConsumerGroupDescribeResponse =
        call(&broker.kafka, ApiKey::ConsumerGroupDescribe, 1, &request);
    answer.groups.pop().expect("one group")
}

/// The partitions of a heartbeat answer's assignment.
fn partitions(answer: &ConsumerGroupHeartbeatResponse) -> Option<BTreeSet<i32>> {
    answer.assignment.as_ref().map(|a| {
        a.topic_partitions
            .iter()
            .flat_map(|t| t.partitions.iter().copied())
            .collect()
    })
}

async fn a_silent_member_keeps_its_partitions_until_its_session_expires(broker: &Broker) {
    create_topic(&broker.kafka, "quiet", 6).await;
    // A raw member takes every partition, then never heartbeats again.
    let raw = tokio::task::block_in_place(|| heartbeat(broker, "hush", "raw-member", 0, None));
    assert_eq!(raw.error_code, 0, "{:?}", raw.error_message);
    assert_eq!(partitions(&raw), Some((0..6).collect()));
    let silent_since = Instant::now();

    let c = member(&broker.kafka, "hush", "consumer");
    c.subscribe(&["quiet"]).expect("subscribe");
    produce_numbered(&broker.kafka, "quiet", "q", 60, 6).await;
    // Its share is the raw member's to revoke first, which it never does:
    // nothing moves while the raw member's session lasts.
    let mut got = BTreeSet::new();
    while silent_since.elapsed() < Duration::from_secs(4) {
        if let Some(Ok(m)) = c.poll(Duration::from_millis(100)) {
            got.insert(String::from_utf8_lossy(m.payload().expect("value")).into_owned());
        }
        assert!(
            held(&c).is_empty(),
            "a partition moved before its owner let go"
        );
    }
    assert!(
        got.is_empty(),
        "nothing consumed while the raw member held it all"
    );
    wait_for("the live member to take all six partitions", || {
        if let Some(Ok(m)) = c.poll(Duration::from_millis(100)) {
            got.insert(String::from_utf8_lossy(m.payload().expect("value")).into_owned());
        }
        held(&c).len() == 6
    });
    assert!(
        silent_since.elapsed() >= Duration::from_secs(6),
        "reassigned only after the 6 s session"
    );
    wait_for("every record", || {
        if let Some(Ok(m)) = c.poll(Duration::from_millis(100)) {
            got.insert(String::from_utf8_lossy(m.payload().expect("value")).into_owned());
        }
        got.len() == 60
    });
    let gone = tokio::task::block_in_place(|| heartbeat(broker, "hush", "raw-member", 1, None));
    assert_eq!(gone.error_code, ResponseError::UnknownMemberId.code());
}

async fn a_classic_group_moves_to_the_consumer_protocol_with_its_offsets(broker: &Broker) {
    create_topic(&broker.kafka, "moving", 2).await;
    produce_numbered(&broker.kafka, "moving", "m", 40, 2).await;

    let classic = member(&broker.kafka, "movers", "classic");
    classic.subscribe(&["moving"]).expect("subscribe");
    let mut first = BTreeSet::new();
    wait_for("twenty records over the classic protocol", || {
        if let Some(Ok(m)) = classic.poll(Duration::from_millis(100)) {
            first.insert(String::from_utf8_lossy(m.payload().expect("value")).into_owned());
            classic
                .commit_message(&m, CommitMode::Sync)
                .expect("commit");
        }
        first.len() == 20
    });
    drop(classic); // closes: leaves the classic group
    let before = committed(&broker.kafka, "movers", "moving", 2);
    // (a partition with no commit is -1)
    assert_eq!(before.iter().map(|o| o.max(&0)).sum::<i64>(), 20);

    let modern = member(&broker.kafka, "movers", "consumer");
    modern.subscribe(&["moving"]).expect("subscribe");
    let mut rest = BTreeSet::new();
    wait_for("the other twenty over the consumer protocol", || {
        if let Some(Ok(m)) = modern.poll(Duration::from_millis(100)) {
            let body = String::from_utf8_lossy(m.payload().expect("value")).into_owned();
            assert!(!first.contains(&body), "{body} came again after its commit");
            rest.insert(body);
            modern.commit_message(&m, CommitMode::Sync).expect("commit");
        }
        rest.len() == 20
    });
    wait_for("the commits to reach the end", || {
        committed(&broker.kafka, "movers", "moving", 2)
            .iter()
            .sum::<i64>()
            == 40
    });

    // The HTTP API lists it with its type and member.
    let listed = broker.get("/api/v1/kafka/groups").await;
    let movers = listed["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .find(|g| g["name"] == "movers")
        .unwrap_or_else(|| panic!("movers in {listed}"));
    assert_eq!(movers["type"], "consumer", "{movers}");
    assert_eq!(movers["protocol"], "uniform");
    assert_eq!(movers["members"].as_array().map(Vec::len), Some(1));

    // Kafka 4's views of a group of the new type.
    tokio::task::block_in_place(|| {
        let list = |types: &[&str]| -> Vec<(String, String, String)> {
            let request = ListGroupsRequest::default()
                .with_types_filter(types.iter().map(|t| s(t)).collect());
            let answer: ListGroupsResponse = call(&broker.kafka, ApiKey::ListGroups, 5, &request);
            answer
                .groups
                .into_iter()
                .filter(|g| g.group_id.as_str() == "movers")
                .map(|g| {
                    (
                        g.group_type.to_string(),
                        g.protocol_type.to_string(),
                        g.group_state.to_string(),
                    )
                })
                .collect()
        };
        let listed = list(&["consumer"]);
        assert_eq!(listed.len(), 1, "{listed:?}");
        assert_eq!(
            (listed[0].0.as_str(), listed[0].1.as_str()),
            ("consumer", "consumer")
        );
        assert!(list(&["classic"]).is_empty());

        let request = DescribeGroupsRequest::default().with_groups(vec![GroupId(s("movers"))]);
        let classic_view: DescribeGroupsResponse =
            call(&broker.kafka, ApiKey::DescribeGroups, 5, &request);
        assert_eq!(classic_view.groups[0].group_state.as_str(), "Dead");

        let group = describe(broker, "movers");
        assert_eq!(group.error_code, 0);
        assert_eq!(group.assignor_name.as_str(), "uniform");
        assert_eq!(group.members.len(), 1);
        let assigned: BTreeSet<i32> = group.members[0]
            .assignment
            .topic_partitions
            .iter()
            .flat_map(|t| t.partitions.iter().copied())
            .collect();
        assert_eq!(assigned, (0..2).collect());
        assert_eq!(
            group.members[0].assignment.topic_partitions[0]
                .topic_name
                .as_str(),
            "moving"
        );
    });
}

async fn stale_and_unknown_members_are_refused_and_nothing_changes(broker: &Broker) {
    create_topic(&broker.kafka, "quiet", 6).await;
    tokio::task::block_in_place(|| {
        let joined = heartbeat(broker, "strict", "m1", 0, None);
        assert_eq!(joined.error_code, 0);
        let epoch = joined.member_epoch;
        assert!(epoch > 0);
        let owned: BTreeSet<i32> = partitions(&joined).expect("assignment");
        let before = describe(broker, "strict");

        let fenced = heartbeat(broker, "strict", "m1", epoch + 5, None);
        assert_eq!(fenced.error_code, ResponseError::FencedMemberEpoch.code());
        let unknown = heartbeat(broker, "strict", "nobody", epoch, None);
        assert_eq!(unknown.error_code, ResponseError::UnknownMemberId.code());
        let empty_id = heartbeat(broker, "strict", "", 0, None);
        assert_eq!(empty_id.error_code, ResponseError::InvalidRequest.code());
        let bad_assignor = ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(s("strict")))
            .with_member_id(s("m2"))
            .with_rebalance_timeout_ms(1_000)
            .with_subscribed_topic_names(Some(vec![TopicName(s("quiet"))]))
            .with_server_assignor(Some(s("nonesuch")));
        let refused: ConsumerGroupHeartbeatResponse = call(
            &broker.kafka,
            ApiKey::ConsumerGroupHeartbeat,
            1,
            &bad_assignor,
        );
        assert_eq!(
            refused.error_code,
            ResponseError::UnsupportedAssignor.code()
        );

        // A commit with an old epoch, and one by an unknown member.
        let commit = |member: &str, epoch: i32| -> i16 {
            let request = OffsetCommitRequest::default()
                .with_group_id(GroupId(s("strict")))
                .with_generation_id_or_member_epoch(epoch)
                .with_member_id(s(member))
                .with_topics(vec![OffsetCommitRequestTopic::default()
                    .with_name(TopicName(s("quiet")))
                    .with_partitions(vec![OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(3)])]);
            let answer: OffsetCommitResponse =
                call(&broker.kafka, ApiKey::OffsetCommit, 9, &request);
            answer.topics[0].partitions[0].error_code
        };
        assert_eq!(
            commit("m1", epoch - 1),
            ResponseError::StaleMemberEpoch.code()
        );
        assert_eq!(
            commit("nobody", epoch),
            ResponseError::UnknownMemberId.code()
        );
        assert_eq!(committed(&broker.kafka, "strict", "quiet", 1), vec![-1]);

        let after = describe(broker, "strict");
        assert_eq!(
            (
                after.group_epoch,
                after.assignment_epoch,
                after.members.len()
            ),
            (before.group_epoch, before.assignment_epoch, 1),
            "nothing changed"
        );
        assert_eq!(after.members[0].member_id.as_str(), "m1");
        assert_eq!(after.members[0].member_epoch, epoch);

        // The member itself goes on, commits and leaves.
        let topic_id = joined
            .assignment
            .as_ref()
            .expect("assignment")
            .topic_partitions[0]
            .topic_id;
        let mine = vec![TopicPartitions::default()
            .with_topic_id(topic_id)
            .with_partitions(owned.iter().copied().collect())];
        let ok = heartbeat(broker, "strict", "m1", epoch, Some(mine));
        assert_eq!((ok.error_code, ok.member_epoch), (0, epoch));
        assert_eq!(commit("m1", epoch), 0);
        assert_eq!(committed(&broker.kafka, "strict", "quiet", 1), vec![3]);
        // Offsets of a subscribed topic cannot be deleted while members are in.
        let delete = || -> i16 {
            use kafka_protocol::messages::offset_delete_request::{
                OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
            };
            let request = kafka_protocol::messages::OffsetDeleteRequest::default()
                .with_group_id(GroupId(s("strict")))
                .with_topics(vec![OffsetDeleteRequestTopic::default()
                    .with_name(TopicName(s("quiet")))
                    .with_partitions(vec![
                        OffsetDeleteRequestPartition::default().with_partition_index(0)
                    ])]);
            let answer: kafka_protocol::messages::OffsetDeleteResponse =
                call(&broker.kafka, ApiKey::OffsetDelete, 0, &request);
            assert_eq!(answer.error_code, 0);
            answer.topics[0].partitions[0].error_code
        };
        assert_eq!(delete(), ResponseError::GroupSubscribedToTopic.code());
        assert_eq!(committed(&broker.kafka, "strict", "quiet", 1), vec![3]);
        let left = heartbeat(broker, "strict", "m1", -1, None);
        assert_eq!((left.error_code, left.member_epoch), (0, -1));
        assert_eq!(delete(), 0, "deleted once the group is empty");
        assert_eq!(committed(&broker.kafka, "strict", "quiet", 1), vec![-1]);

        // v0: the coordinator names a member that joins without an id.
        let request = ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(s("named")))
            .with_rebalance_timeout_ms(1_000)
            .with_subscribed_topic_names(Some(vec![TopicName(s("quiet"))]));
        let named: ConsumerGroupHeartbeatResponse =
            call(&broker.kafka, ApiKey::ConsumerGroupHeartbeat, 0, &request);
        assert_eq!(named.error_code, 0);
        let id = named.member_id.expect("a member id");
        assert!(!id.is_empty());
        let request = ConsumerGroupDescribeRequest::default()
            .with_group_ids(vec![GroupId(s("named")), GroupId(s("no-such-group"))]);
        let described: ConsumerGroupDescribeResponse =
            call(&broker.kafka, ApiKey::ConsumerGroupDescribe, 0, &request);
        assert_eq!(described.groups[0].error_code, 0);
        assert_eq!(described.groups[0].members[0].member_id, id);
        assert_eq!(
            described.groups[1].error_code,
            ResponseError::GroupIdNotFound.code()
        );
        assert_eq!(describe(broker, "strict").group_state.as_str(), "Empty");
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_group_continues_when_its_coordinator_broker_dies() {
    let db = support::TestDb::postgres().await;
    let one = Broker::start(&db.url, BROKER_FLAGS);
    let two = Broker::start(&db.url, BROKER_FLAGS);
    let bootstrap = format!("{},{}", one.kafka, two.kafka);
    create_topic(&bootstrap, "failover", 4).await;
    produce_numbered(&bootstrap, "failover", "before", 400, 4).await;

    let ledger = Arc::new(Ledger::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    let mut members = Vec::new();
    for _ in 0..2 {
        let c = member(&bootstrap, "survivors", "consumer");
        c.subscribe(&["failover"]).expect("subscribe");
        threads.push(consume_in_background(
            c.clone(),
            ledger.clone(),
            stop.clone(),
        ));
        members.push(c);
    }
    wait_for("the first records", || ledger.distinct() >= 200);

    let request =
        kafka_protocol::messages::FindCoordinatorRequest::default().with_key(s("survivors"));
    let found: kafka_protocol::messages::FindCoordinatorResponse =
        tokio::task::block_in_place(|| call(&one.kafka, ApiKey::FindCoordinator, 3, &request));
    let port = |b: &Broker| b.kafka.rsplit(':').next().and_then(|p| p.parse().ok());
    let (mut dead, survivor) = if port(&one) == Some(found.port) {
        (one, two)
    } else {
        (two, one)
    };
    dead.child.kill().expect("SIGKILL the coordinator");
    let _ = dead.child.wait();

    produce_numbered(&survivor.kafka, "failover", "after", 400, 4).await;
    wait_for("every record through the new coordinator", || {
        ledger.distinct() == 800
    });
    wait_for("the commits to reach the end", || {
        committed(&survivor.kafka, "survivors", "failover", 4)
            .iter()
            .sum::<i64>()
            == 800
    });
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().expect("member");
    }
    let seen = ledger.seen.lock().expect("lock").clone();
    let again: usize = seen.values().map(|n| n - 1).sum();
    let failed = ledger.failed_commits.load(Ordering::Relaxed);
    assert!(
        again <= failed,
        "{again} records came twice though only {failed} commits failed"
    );
    let group = tokio::task::block_in_place(|| describe(&survivor, "survivors"));
    assert_eq!(
        group.members.len(),
        2,
        "both members joined the new coordinator"
    );
}

async fn a_pattern_subscription_follows_new_topics_and_partitions(broker: &Broker) {
    create_topic(&broker.kafka, "rx-a", 2).await;
    create_topic(&broker.kafka, "other", 1).await;
    produce_numbered(&broker.kafka, "rx-a", "a", 10, 2).await;
    produce_numbered(&broker.kafka, "other", "o", 5, 1).await;

    let c = member(&broker.kafka, "patterns", "consumer");
    c.subscribe(&["^rx-.*"]).expect("subscribe");
    let mut got = BTreeSet::new();
    let take = |c: &BaseConsumer, got: &mut BTreeSet<String>| {
        if let Some(Ok(m)) = c.poll(Duration::from_millis(100)) {
            let body = String::from_utf8_lossy(m.payload().expect("value")).into_owned();
            assert_eq!(&m.topic()[..3], "rx-", "{body} from {}", m.topic());
            got.insert(body);
        }
    };
    wait_for("the matching topic's records", || {
        take(&c, &mut got);
        got.len() == 10
    });

    // A matching topic created later, and a partition added to one.
    create_topic(&broker.kafka, "rx-b", 1).await;
    produce_numbered(&broker.kafka, "rx-b", "b", 5, 1).await;
    let admin: rdkafka::admin::AdminClient<rdkafka::client::DefaultClientContext> =
        ClientConfig::new()
            .set("bootstrap.servers", &broker.kafka)
            .set("broker.address.family", "v4")
            .create()
            .expect("admin");
    for r in admin
        .create_partitions(
            &[rdkafka::admin::NewPartitions::new("rx-a", 3)],
            &rdkafka::admin::AdminOptions::new(),
        )
        .await
        .expect("create partitions")
    {
        r.expect("partition added");
    }
    let producer: rdkafka::producer::FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", &broker.kafka)
        .set("broker.address.family", "v4")
        .create()
        .expect("producer");
    producer
        .send(
            rdkafka::producer::FutureRecord::<[u8], [u8]>::to("rx-a")
                .partition(2)
                .payload(b"a-new"),
            Duration::from_secs(30),
        )
        .await
        .map_err(|(e, _)| e)
        .expect("produced to the new partition");
    wait_for("the new topic's and the new partition's records", || {
        take(&c, &mut got);
        got.len() == 16
    });
    let group = tokio::task::block_in_place(|| describe(broker, "patterns"));
    // librdkafka sends its subscriptions joined as one alternation.
    let regex = group.members[0].subscribed_topic_regex.as_deref();
    assert!(regex.is_some_and(|r| r.contains("^rx-.*")), "{regex:?}");
    let assigned: usize = group.members[0]
        .assignment
        .topic_partitions
        .iter()
        .map(|t| t.partitions.len())
        .sum();
    assert_eq!(assigned, 4, "rx-a's three partitions and rx-b's one");
}

async fn a_static_member_comes_back_to_its_partitions(broker: &Broker) {
    create_topic(&broker.kafka, "quiet", 6).await;
    tokio::task::block_in_place(|| {
        let join = |member: &str| -> ConsumerGroupHeartbeatResponse {
            let request = ConsumerGroupHeartbeatRequest::default()
                .with_group_id(GroupId(s("statics")))
                .with_member_id(s(member))
                .with_instance_id(Some(s("instance-1")))
                .with_rebalance_timeout_ms(60_000)
                .with_subscribed_topic_names(Some(vec![TopicName(s("quiet"))]));
            call(&broker.kafka, ApiKey::ConsumerGroupHeartbeat, 1, &request)
        };
        let first = join("first");
        assert_eq!(first.error_code, 0);
        let owned = partitions(&first).expect("assignment");
        assert_eq!(owned.len(), 6);
        let early = join("second");
        assert_eq!(early.error_code, ResponseError::UnreleasedInstanceId.code());

        let away = heartbeat(broker, "statics", "first", -2, None);
        assert_eq!((away.error_code, away.member_epoch), (0, -2));
        let epoch = describe(broker, "statics").group_epoch;
        let back = join("second");
        assert_eq!(back.error_code, 0);
        assert_eq!(back.member_epoch, first.member_epoch);
        assert_eq!(partitions(&back), Some(owned));
        let group = describe(broker, "statics");
        assert_eq!(group.group_epoch, epoch, "no rebalance");
        let ids: Vec<&str> = group.members.iter().map(|m| m.member_id.as_str()).collect();
        assert_eq!(ids, vec!["second"]);

        // A classic member cannot join a group of the new type meanwhile.
        let classic = kafka_protocol::messages::JoinGroupRequest::default()
            .with_group_id(GroupId(s("statics")))
            .with_session_timeout_ms(10_000)
            .with_rebalance_timeout_ms(10_000)
            .with_protocol_type(s("consumer"))
            .with_protocols(vec![
                kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol::default()
                    .with_name(s("range"))
                    .with_metadata(bytes::Bytes::from_static(&[0, 0])),
            ]);
        let refused: kafka_protocol::messages::JoinGroupResponse =
            call(&broker.kafka, ApiKey::JoinGroup, 5, &classic);
        assert_eq!(
            refused.error_code,
            ResponseError::InconsistentGroupProtocol.code()
        );
        assert_eq!(describe(broker, "statics").members.len(), 1);
    });
}

async fn the_range_assignor_gives_each_member_the_same_range_of_every_topic(broker: &Broker) {
    create_topic(&broker.kafka, "left", 4).await;
    create_topic(&broker.kafka, "right", 4).await;
    let ranged = || -> BaseConsumer {
        let c: BaseConsumer = config(&broker.kafka, "ranged", "consumer")
            .set("group.remote.assignor", "range")
            .create()
            .expect("consumer");
        c.subscribe(&["left", "right"]).expect("subscribe");
        c
    };
    let (a, b) = (ranged(), ranged());
    // What a member holds, by topic.
    let holds = |c: &BaseConsumer| -> BTreeMap<String, BTreeSet<i32>> {
        let mut out: BTreeMap<String, BTreeSet<i32>> = BTreeMap::new();
        if let Ok(tpl) = c.assignment() {
            for e in tpl.elements() {
                out.entry(e.topic().to_owned())
                    .or_default()
                    .insert(e.partition());
            }
        }
        out
    };
    tokio::task::block_in_place(|| {
        wait_for("both members to hold four partitions each", || {
            for c in [&a, &b] {
                let _ = c.poll(Duration::from_millis(50));
            }
            [&a, &b]
                .iter()
                .all(|c| holds(c).values().map(BTreeSet::len).sum::<usize>() == 4)
        });
    });
    // Range: per topic, the first member in member id order takes 0-1, the
    // other 2-3, so each member holds the same range of both topics.
    let group = describe(broker, "ranged");
    assert_eq!(group.error_code, 0);
    assert_eq!(group.assignor_name.as_str(), "range");
    let mut members: Vec<(String, BTreeMap<String, BTreeSet<i32>>)> = group
        .members
        .iter()
        .map(|m| {
            let by_topic = m
                .assignment
                .topic_partitions
                .iter()
                .map(|t| {
                    (
                        t.topic_name.to_string(),
                        t.partitions.iter().copied().collect(),
                    )
                })
                .collect();
            (m.member_id.to_string(), by_topic)
        })
        .collect();
    members.sort();
    let range = |ps: [i32; 2]| -> BTreeMap<String, BTreeSet<i32>> {
        ["left", "right"]
            .into_iter()
            .map(|t| (t.to_owned(), BTreeSet::from(ps)))
            .collect()
    };
    assert_eq!(members.len(), 2);
    assert_eq!(members[0].1, range([0, 1]), "{members:?}");
    assert_eq!(members[1].1, range([2, 3]), "{members:?}");
    // The clients hold what the group assigned them.
    let mut held_by_clients = vec![holds(&a), holds(&b)];
    held_by_clients.sort();
    assert_eq!(held_by_clients, vec![range([0, 1]), range([2, 3])]);
}
