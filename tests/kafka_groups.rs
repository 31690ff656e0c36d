//! Kafka consumer groups end to end with librdkafka (the `rdkafka` crate in
//! process, and `kcat` as a member that can be killed with SIGKILL) against
//! the running binary: commits and resumption, three members over eight
//! partitions losing one, a member leaving, static members coming back,
//! and the coordinator broker dying under a group on PostgreSQL.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kafka_protocol::messages::{ApiKey, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;
use rdkafka::admin::{AdminClient, AdminOptions};
use rdkafka::client::{ClientContext, DefaultClientContext};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use support::kafka::{call, create_topic};
use support::{Broker, TestDb};

const TIMEOUT: Duration = Duration::from_secs(60);
/// Brokers in these tests wait this long for more members of a new group.
const BROKER_FLAGS: &[&str] = &["--group-initial-rebalance-delay-ms", "300"];

/// Records every assignment a member receives.
#[derive(Default)]
struct Recorder {
    assignments: Mutex<Vec<BTreeSet<i32>>>,
}

impl Recorder {
    fn current(&self) -> BTreeSet<i32> {
        self.assignments
            .lock()
            .expect("lock")
            .last()
            .cloned()
            .unwrap_or_default()
    }

    fn rebalances(&self) -> usize {
        self.assignments.lock().expect("lock").len()
    }
}

impl ClientContext for Recorder {}

impl ConsumerContext for Recorder {
    fn post_rebalance(&self, _: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        let mut assignments = self.assignments.lock().expect("lock");
        match rebalance {
            Rebalance::Assign(tpl) => {
                assignments.push(tpl.elements().iter().map(|e| e.partition()).collect())
            }
            Rebalance::Revoke(_) => assignments.push(BTreeSet::new()),
            Rebalance::Error(_) => {}
        }
    }
}

type Member = BaseConsumer<Recorder>;
/// What a member consumed: (partition, number) in arrival order.
type Consumed = Arc<Mutex<Vec<(i32, u32)>>>;

fn member(bootstrap: &str, group: &str, extra: &[(&str, &str)]) -> Arc<Member> {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .set("group.id", group)
        .set("auto.offset.reset", "earliest")
        .set("session.timeout.ms", "6000")
        .set("heartbeat.interval.ms", "500")
        .set("fetch.wait.max.ms", "100")
        .set("topic.metadata.refresh.interval.ms", "1000");
    for (k, v) in extra {
        c.set(*k, *v);
    }
    Arc::new(
        c.create_with_context(Recorder::default())
            .expect("consumer"),
    )
}

/// Polls `member` on a thread until `stop`, collecting (partition, number).
fn poll_in_background(
    member: Arc<Member>,
    stop: Arc<AtomicBool>,
) -> (Consumed, std::thread::JoinHandle<()>) {
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    let handle = std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            if let Some(Ok(m)) = member.poll(Duration::from_millis(100)) {
                sink.lock().expect("lock").push((m.partition(), number(&m)));
            }
        }
    });
    (got, handle)
}

fn number(m: &impl Message) -> u32 {
    std::str::from_utf8(m.payload().expect("value"))
        .expect("utf-8")
        .parse()
        .expect("a number")
}

/// Produces the numbers `range` to `topic`, number n to partition n % `partitions`.
async fn produce(bootstrap: &str, topic: &str, partitions: u32, range: std::ops::Range<u32>) {
    let p: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .set("linger.ms", "5")
        .create()
        .expect("producer");
    let mut pending = Vec::new();
    for n in range {
        let body = n.to_string();
        let record = FutureRecord::<[u8], [u8]>::to(topic)
            .partition((n % partitions) as i32)
            .payload(body.as_bytes());
        // Queued without waiting, so the records share batches.
        match p.send_result(record) {
            Ok(delivery) => pending.push(delivery),
            Err((e, _)) => panic!("queue full or closed: {e}"),
        }
    }
    for delivery in pending {
        delivery
            .await
            .expect("delivered or failed")
            .unwrap_or_else(|(e, _)| panic!("produce failed: {e}"));
    }
}

/// Waits until `done` holds, failing with `what` after [`TIMEOUT`].
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The port of the broker that coordinates `group`, asked of `kafka`.
fn coordinator_port(kafka: &str, group: &str) -> i32 {
    let request =
        FindCoordinatorRequest::default().with_key(StrBytes::from_string(group.to_owned()));
    let response: FindCoordinatorResponse = call(kafka, ApiKey::FindCoordinator, 3, &request);
    assert_eq!(response.error_code, 0);
    response.port
}

support::broker_scenarios!(
    crate::BROKER_FLAGS;
    a_member_resumes_at_its_committed_offset,
    three_members_share_eight_partitions_and_outlive_a_killed_one,
    a_leaving_member_hands_its_partitions_over_at_once,
    static_members_come_back_without_a_rebalance,
    static_members_gone_past_their_session_leave_a_deletable_group,
    groups_are_listed_reset_and_deleted_by_an_admin,
);

async fn a_member_resumes_at_its_committed_offset(broker: &Broker) {
    create_topic(&broker.kafka, "resume", 2).await;
    produce(&broker.kafka, "resume", 2, 0..20).await;

    let first = member(
        &broker.kafka,
        "resumers",
        &[("enable.auto.commit", "false")],
    );
    first.subscribe(&["resume"]).expect("subscribe");
    let mut seen = BTreeSet::new();
    wait_for("the first ten records", || {
        if let Some(Ok(m)) = first.poll(Duration::from_millis(100)) {
            seen.insert(number(&m));
        }
        seen.len() == 10
    });
    first
        .commit_consumer_state(CommitMode::Sync)
        .expect("commit");
    drop(first); // leaves the group

    let second = member(
        &broker.kafka,
        "resumers",
        &[("enable.auto.commit", "false")],
    );
    second.subscribe(&["resume"]).expect("subscribe");
    let mut rest = BTreeSet::new();
    wait_for("the other ten records", || {
        if let Some(Ok(m)) = second.poll(Duration::from_millis(100)) {
            assert!(rest.insert(number(&m)), "a record came twice to one member");
        }
        rest.len() == 10
    });
    assert!(
        seen.is_disjoint(&rest),
        "the second member starts at the commit: {seen:?} / {rest:?}"
    );
    let end = Instant::now() + Duration::from_millis(1_500);
    while Instant::now() < end {
        if let Some(Ok(m)) = second.poll(Duration::from_millis(100)) {
            panic!("nothing else is left, got {}", number(&m));
        }
    }
    assert_eq!(seen.union(&rest).count(), 20);
}

/// A kcat (librdkafka) member of `group` printing "partition number" lines.
struct Kcat {
    child: std::process::Child,
    lines: Arc<Mutex<Vec<(i32, u32)>>>,
}

impl Kcat {
    fn join(bootstrap: &str, group: &str, topic: &str) -> Self {
        let mut child = Command::new("kcat")
            .args(["-b", bootstrap, "-G", group, topic, "-u", "-q"])
            .args(["-f", "%p %s\\n"])
            .args(["-X", "auto.offset.reset=earliest"])
            .args(["-X", "session.timeout.ms=6000"])
            .args(["-X", "heartbeat.interval.ms=500"])
            .args(["-X", "auto.commit.interval.ms=200"])
            .args(["-X", "broker.address.family=v4"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("kcat is needed for this test (apt-get install kcat; .ci/run does): {e}")
            });
        let stdout = child.stdout.take().expect("stdout");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let mut fields = line.split_whitespace();
                if let (Some(p), Some(n)) = (fields.next(), fields.next()) {
                    if let (Ok(p), Ok(n)) = (p.parse(), n.parse()) {
                        sink.lock().expect("lock").push((p, n));
                    }
                }
            }
        });
        Self { child, lines }
    }
}

impl Drop for Kcat {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn three_members_share_eight_partitions_and_outlive_a_killed_one(broker: &Broker) {
    const FIRST: u32 = 4_000;
    create_topic(&broker.kafka, "eight", 8).await;

    let stop = Arc::new(AtomicBool::new(false));
    let a = member(&broker.kafka, "trio", &[("auto.commit.interval.ms", "200")]);
    let b = member(&broker.kafka, "trio", &[("auto.commit.interval.ms", "200")]);
    a.subscribe(&["eight"]).expect("subscribe");
    b.subscribe(&["eight"]).expect("subscribe");
    let mut k = Kcat::join(&broker.kafka, "trio", "eight");
    let (got_a, ta) = poll_in_background(a.clone(), stop.clone());
    let (got_b, tb) = poll_in_background(b.clone(), stop.clone());

    // All three hold partitions (a and b each some, together fewer than
    // eight) before anything is produced: a kcat that joined late, after a
    // and b had read and committed everything, would find nothing to read.
    wait_for("three members sharing the partitions", || {
        let (held_a, held_b) = (a.context().current().len(), b.context().current().len());
        held_a > 0 && held_b > 0 && held_a + held_b < 8
    });
    produce(&broker.kafka, "eight", 8, 0..FIRST).await;
    wait_for("the kcat member to consume", || {
        !k.lines.lock().expect("lock").is_empty()
    });
    let shared = (a.context().current(), b.context().current());
    assert!(
        !shared.0.is_empty() && !shared.1.is_empty(),
        "each member has partitions: {shared:?}"
    );
    std::thread::sleep(Duration::from_millis(500));
    k.child.kill().expect("SIGKILL kcat");
    let _ = k.child.wait();
    let killed: Vec<(i32, u32)> = k.lines.lock().expect("lock").clone();

    // Records produced after the kill must reach the survivors.
    produce(&broker.kafka, "eight", 8, FIRST..2 * FIRST).await;
    let everything = |got_a: &Mutex<Vec<(i32, u32)>>, got_b: &Mutex<Vec<(i32, u32)>>| {
        let mut all: BTreeMap<u32, usize> = BTreeMap::new();
        for (_, n) in got_a
            .lock()
            .expect("lock")
            .iter()
            .chain(got_b.lock().expect("lock").iter())
            .chain(killed.iter())
        {
            *all.entry(*n).or_default() += 1;
        }
        all
    };
    wait_for("every record, after the survivors took over", || {
        everything(&got_a, &got_b).len() == 2 * FIRST as usize
    });
    stop.store(true, Ordering::Relaxed);
    ta.join().expect("poller a");
    tb.join().expect("poller b");

    let after: BTreeSet<i32> = a
        .context()
        .current()
        .union(&b.context().current())
        .copied()
        .collect();
    assert_eq!(
        after,
        (0..8).collect(),
        "the survivors hold every partition"
    );
    // Records seen twice were the killed member's uncommitted tail (kcat
    // commits only when it closes, so that is all it consumed).
    let killed_numbers: BTreeSet<u32> = killed.iter().map(|(_, n)| *n).collect();
    let twice: Vec<u32> = everything(&got_a, &got_b)
        .into_iter()
        .filter(|(_, count)| *count > 1)
        .map(|(n, _)| n)
        .collect();
    assert!(
        twice.iter().all(|n| killed_numbers.contains(n)),
        "only the killed member's records come twice, not {:?}",
        twice
            .iter()
            .filter(|n| !killed_numbers.contains(n))
            .take(10)
            .collect::<Vec<_>>()
    );
    println!(
        "trio: kcat consumed {} before SIGKILL; {} records came twice",
        killed.len(),
        twice.len()
    );
    leave(&a);
    leave(&b);
}

/// Unsubscribes `member` and polls until its partitions are revoked, so
/// that dropping it has no rebalance left to run: rust-rdkafka's drop
/// closes the consumer and serves a revocation arriving meanwhile with a
/// synchronous assign that librdkafka no longer answers, and the drop
/// hangs (seen once on PostgreSQL, when the other member left just before).
fn leave(member: &Member) {
    member.unsubscribe();
    wait_for("the member's partitions to be revoked", || {
        let _ = member.poll(Duration::from_millis(100));
        member.assignment().map_or(true, |a| a.count() == 0)
    });
}

async fn a_leaving_member_hands_its_partitions_over_at_once(broker: &Broker) {
    create_topic(&broker.kafka, "handover", 4).await;
    let slow = [("session.timeout.ms", "30000")];
    let a = member(&broker.kafka, "leavers", &slow);
    let b = member(&broker.kafka, "leavers", &slow);
    a.subscribe(&["handover"]).expect("subscribe");
    b.subscribe(&["handover"]).expect("subscribe");
    wait_for("two members with two partitions each", || {
        a.poll(Duration::from_millis(20));
        b.poll(Duration::from_millis(20));
        a.context().current().len() == 2 && b.context().current().len() == 2
    });
    let left = Instant::now();
    drop(b); // LeaveGroup
    wait_for("the remaining member to hold all four", || {
        a.poll(Duration::from_millis(50));
        a.context().current().len() == 4
    });
    // The session timeout is 30 s: only the LeaveGroup explains a handover
    // well before it.
    assert!(
        left.elapsed() < Duration::from_secs(15),
        "handover took {:?}",
        left.elapsed()
    );
}

async fn static_members_come_back_without_a_rebalance(broker: &Broker) {
    create_topic(&broker.kafka, "statics", 4).await;
    let as_instance = |id| [("group.instance.id", id), ("session.timeout.ms", "30000")];
    let a = member(&broker.kafka, "static", &as_instance("a"));
    let b = member(&broker.kafka, "static", &as_instance("b"));
    a.subscribe(&["statics"]).expect("subscribe");
    b.subscribe(&["statics"]).expect("subscribe");
    wait_for("two static members with two partitions each", || {
        a.poll(Duration::from_millis(20));
        b.poll(Duration::from_millis(20));
        a.context().current().len() == 2 && b.context().current().len() == 2
    });
    let held_by_b = b.context().current();
    let rebalances_of_a = a.context().rebalances();
    drop(b); // a static member sends no LeaveGroup

    let b_again = member(&broker.kafka, "static", &as_instance("b"));
    b_again.subscribe(&["statics"]).expect("subscribe");
    wait_for("b to come back", || {
        a.poll(Duration::from_millis(20));
        b_again.poll(Duration::from_millis(20));
        !b_again.context().current().is_empty()
    });
    assert_eq!(
        b_again.context().current(),
        held_by_b,
        "b gets back what it had"
    );
    let settle = Instant::now() + Duration::from_secs(3);
    while Instant::now() < settle {
        a.poll(Duration::from_millis(50));
        b_again.poll(Duration::from_millis(50));
    }
    assert_eq!(
        a.context().rebalances(),
        rebalances_of_a,
        "a saw no rebalance while b was away and back"
    );
    assert_eq!(a.context().current().len(), 2);
}

/// librdkafka's 0081 test: static members close (sending no LeaveGroup),
/// and once their session has run out the group is Empty and DeleteGroups
/// removes it, as on Kafka.
async fn static_members_gone_past_their_session_leave_a_deletable_group(broker: &Broker) {
    create_topic(&broker.kafka, "statics-gone", 1).await;
    produce(&broker.kafka, "statics-gone", 1, 0..10).await;
    let groups = ["gone-0", "gone-1"];
    let session = Duration::from_millis(6_000);
    let members: Vec<Arc<Member>> = groups
        .iter()
        .map(|group| {
            let settings = [
                ("group.instance.id", *group),
                ("session.timeout.ms", "6000"),
            ];
            let m = member(&broker.kafka, group, &settings);
            m.subscribe(&["statics-gone"]).expect("subscribe");
            m
        })
        .collect();
    for m in &members {
        let mut got = 0;
        wait_for("the static member to consume", || {
            if let Some(Ok(_)) = m.poll(Duration::from_millis(100)) {
                got += 1;
            }
            got == 10
        });
    }
    let closed = Instant::now();
    drop(members); // a static member sends no LeaveGroup on close
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", &broker.kafka)
        .set("broker.address.family", "v4")
        .create()
        .expect("admin client");
    let delete = || async {
        admin
            .delete_groups(&groups, &AdminOptions::new())
            .await
            .expect("delete groups")
            .into_iter()
            .map(|r| r.err().map(|(_, code)| code))
            .collect::<Vec<_>>()
    };
    let busy = Some(rdkafka::types::RDKafkaErrorCode::NonEmptyGroup);
    assert_eq!(delete().await, [busy, busy], "within the session");
    tokio::time::sleep((session + Duration::from_secs(1)).saturating_sub(closed.elapsed())).await;
    assert_eq!(delete().await, [None, None], "after the session ran out");
}

/// What an admin tool does (`kafka-consumer-groups --describe`,
/// `--reset-offsets`, `--delete`): DescribeGroups, OffsetCommit with
/// generation -1 from outside the group, DeleteGroups.
async fn groups_are_listed_reset_and_deleted_by_an_admin(broker: &Broker) {
    create_topic(&broker.kafka, "audit", 2).await;
    let p: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", &broker.kafka)
        .set("broker.address.family", "v4")
        .create()
        .expect("producer");
    for n in 0..10i64 {
        let body = n.to_string();
        p.send(
            FutureRecord::<[u8], [u8]>::to("audit")
                .partition((n % 2) as i32)
                .timestamp(1_000 + n)
                .payload(body.as_bytes()),
            Duration::from_secs(30),
        )
        .await
        .map_err(|(e, _)| e)
        .expect("produced");
    }
    let m = member(&broker.kafka, "audited", &[("enable.auto.commit", "false")]);
    m.subscribe(&["audit"]).expect("subscribe");
    let mut got = 0;
    wait_for("ten records", || {
        if let Some(Ok(_)) = m.poll(Duration::from_millis(100)) {
            got += 1;
        }
        got == 10
    });
    m.commit_consumer_state(CommitMode::Sync).expect("commit");

    let admin_consumer = |group: &str| -> BaseConsumer {
        ClientConfig::new()
            .set("bootstrap.servers", &broker.kafka)
            .set("broker.address.family", "v4")
            .set("group.id", group)
            .set("enable.auto.commit", "false")
            .create()
            .expect("admin consumer")
    };
    let tool = admin_consumer("audited");
    // librdkafka lists the groups (ListGroups) and describes those listed.
    let describe = |state: &str| {
        let list = tool
            .fetch_group_list(Some("audited"), Duration::from_secs(10))
            .expect("describe");
        let Some(g) = list.groups().first() else {
            assert_eq!(state, "Dead", "the group is not listed");
            return Vec::new();
        };
        assert_eq!(g.state(), state, "{}", g.name());
        g.members()
            .iter()
            .map(|m| (m.client_host().to_owned(), m.assignment().map(<[u8]>::len)))
            .collect::<Vec<_>>()
    };
    let members = describe("Stable");
    assert_eq!(members.len(), 1);
    assert!(members[0].0.starts_with("/127.0.0.1"), "{members:?}");
    assert!(members[0].1.unwrap_or(0) > 0, "the assignment is shown");

    let reset = |offsets: [i64; 2]| {
        let mut tpl = rdkafka::TopicPartitionList::new();
        for (p, o) in offsets.iter().enumerate() {
            tpl.add_partition_offset("audit", p as i32, rdkafka::Offset::Offset(*o))
                .expect("tpl");
        }
        tool.commit(&tpl, CommitMode::Sync)
    };
    assert!(
        reset([0, 0]).is_err(),
        "no reset from outside the group while it has members"
    );
    drop(m);
    assert!(describe("Empty").is_empty());

    let committed = || -> Vec<i64> {
        let mut tpl = rdkafka::TopicPartitionList::new();
        tpl.add_partition("audit", 0);
        tpl.add_partition("audit", 1);
        tool.committed_offsets(tpl, Duration::from_secs(10))
            .expect("committed")
            .elements()
            .iter()
            .map(|e| e.offset().to_raw().unwrap_or(-1))
            .collect()
    };
    assert_eq!(committed(), [5, 5]);
    reset([0, 0]).expect("to earliest");
    assert_eq!(committed(), [0, 0]);
    // To a time: the first record at or after 1,005 ms on each partition.
    let mut at = rdkafka::TopicPartitionList::new();
    at.add_partition_offset("audit", 0, rdkafka::Offset::Offset(1_005))
        .expect("tpl");
    at.add_partition_offset("audit", 1, rdkafka::Offset::Offset(1_005))
        .expect("tpl");
    let found: Vec<i64> = tool
        .offsets_for_times(at, Duration::from_secs(10))
        .expect("offsets for times")
        .elements()
        .iter()
        .map(|e| e.offset().to_raw().unwrap_or(-1))
        .collect();
    assert_eq!(found, [3, 2], "numbers 6 and 5");
    reset([found[0], found[1]]).expect("to a time");
    assert_eq!(committed(), [3, 2]);
    let (_, latest) = tool
        .fetch_watermarks("audit", 0, Duration::from_secs(10))
        .expect("watermarks");
    reset([latest, latest]).expect("to latest");
    assert_eq!(committed(), [5, 5]);

    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", &broker.kafka)
        .set("broker.address.family", "v4")
        .create()
        .expect("admin client");
    let busy = member(&broker.kafka, "busy", &[]);
    busy.subscribe(&["audit"]).expect("subscribe");
    wait_for("busy to join", || {
        busy.poll(Duration::from_millis(50));
        !busy.context().current().is_empty()
    });
    let results = admin
        .delete_groups(&["audited", "busy", "never-seen"], &AdminOptions::new())
        .await
        .expect("delete groups");
    let codes: Vec<Option<rdkafka::types::RDKafkaErrorCode>> = results
        .into_iter()
        .map(|r| r.err().map(|(_, code)| code))
        .collect();
    assert_eq!(
        codes,
        [
            None,
            Some(rdkafka::types::RDKafkaErrorCode::NonEmptyGroup),
            Some(rdkafka::types::RDKafkaErrorCode::GroupIdNotFound),
        ]
    );
    assert!(describe("Dead").is_empty(), "deleted");
    assert_eq!(committed(), [-1001, -1001], "no offsets left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_group_continues_when_its_coordinator_broker_dies() {
    let db = TestDb::postgres().await;
    let one = Broker::start(&db.url, BROKER_FLAGS);
    let two = Broker::start(&db.url, BROKER_FLAGS);
    let bootstrap = format!("{},{}", one.kafka, two.kafka);
    create_topic(&bootstrap, "failover", 4).await;
    produce(&bootstrap, "failover", 4, 0..2_000).await;

    let extra = [("enable.auto.commit", "false")];
    let a = member(&bootstrap, "movers", &extra);
    let b = member(&bootstrap, "movers", &extra);
    a.subscribe(&["failover"]).expect("subscribe");
    b.subscribe(&["failover"]).expect("subscribe");
    let mut seen: BTreeMap<u32, usize> = BTreeMap::new();
    let drain = |seen: &mut BTreeMap<u32, usize>| {
        for c in [&a, &b] {
            if let Some(Ok(m)) = c.poll(Duration::from_millis(20)) {
                *seen.entry(number(&m)).or_default() += 1;
            }
        }
    };
    wait_for("the first records", || {
        drain(&mut seen);
        seen.len() >= 1_000
    });
    for c in [&a, &b] {
        if !c.assignment().expect("assignment").elements().is_empty() {
            c.commit_consumer_state(CommitMode::Sync).expect("commit");
        }
    }
    let coordinator = coordinator_port(&one.kafka, "movers");
    let port = |b: &Broker| b.kafka.rsplit(':').next().and_then(|p| p.parse().ok());
    let (mut dead, survivor) = if port(&one) == Some(coordinator) {
        (one, two)
    } else {
        (two, one)
    };
    dead.child.kill().expect("SIGKILL the coordinator");
    let _ = dead.child.wait();

    produce(&survivor.kafka, "failover", 4, 2_000..3_000).await;
    wait_for("every record through the new coordinator", || {
        drain(&mut seen);
        seen.len() == 3_000
    });
    for c in [&a, &b] {
        if !c.assignment().expect("assignment").elements().is_empty() {
            c.commit_consumer_state(CommitMode::Sync).expect("commit");
        }
    }
    assert_ne!(
        coordinator_port(&survivor.kafka, "movers"),
        coordinator,
        "the survivor coordinates now"
    );
    // Every committed offset is there: the group's position is the end.
    assert_eq!(
        committed_total(&survivor, "movers", "failover").await,
        3_000,
        "committed positions add up to every record"
    );
    drop((a, b, survivor));
}

/// The sum of the group's committed offsets on `topic`, read over the HTTP API.
async fn committed_total(broker: &Broker, group: &str, topic: &str) -> i64 {
    let body: serde_json::Value =
        reqwest::get(format!("{}/api/v1/consumer-groups/{group}", broker.http))
            .await
            .expect("GET")
            .json()
            .await
            .expect("JSON");
    body[topic]["partitions"]
        .as_array()
        .unwrap_or_else(|| panic!("no positions on {topic} in {body}"))
        .iter()
        .map(|p| p["committedOffset"].as_i64().expect("an offset"))
        .sum()
}
