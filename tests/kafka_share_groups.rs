//! KIP-932 share groups end to end against the running binary, on SQLite
//! and PostgreSQL. The `rdkafka` crate has no share consumer, so the
//! members are raw-protocol clients (`support::share`). A share group is
//! the native consumer group of the same name: two Kafka share consumers
//! and one HTTP consumer (`consumerGroup`) work one queue, each record to
//! one of them; RELEASE redelivers, REJECT and exhausted deliveries land
//! in the dead-letter queue that `GET /api/v1/dlq` lists, an ended lock
//! redelivers; stale epochs, foreign or unacquired records and unknown
//! groups are refused with Kafka's codes and change nothing.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use kafka_protocol::messages::{
    ApiKey, GroupId, ListGroupsRequest, ListGroupsResponse, ShareFetchRequest, ShareFetchResponse,
    ShareGroupDescribeRequest, ShareGroupDescribeResponse,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use serde_json::{json, Value};
use support::kafka::{call, create_topic};
use support::share::{all, each, set_group_configs, ShareConsumer, ACCEPT, REJECT, RELEASE};
use support::share_offsets::{alter_offsets, delete_offsets, describe_offsets, starts};
use support::Broker;

const TIMEOUT: Duration = Duration::from_secs(60);

support::broker_scenarios!(
    &[];
    two_share_consumers_and_an_http_consumer_take_each_record_once,
    release_redelivers_and_reject_and_exhaustion_dead_letter,
    an_ended_lock_redelivers_to_another_member,
    bad_requests_are_refused_and_change_nothing,
    start_offsets_are_described_altered_and_deleted,
    a_waiting_share_fetch_wakes_when_a_record_arrives,
);

/// Pushes `count` JSON records `{"n": i}` over HTTP, spread over the
/// partitions named `"0"`..`partitions`.
async fn push(broker: &Broker, queue: &str, from: i64, count: i64, partitions: i64) {
    let items: Vec<Value> = (from..from + count)
        .map(|n| json!({"queue": queue, "partition": (n % partitions).to_string(), "payload": {"n": n}}))
        .collect();
    let answer = broker.post("/api/v1/push", json!({ "items": items })).await;
    assert_eq!(
        answer.as_array().map(Vec::len),
        Some(count as usize),
        "{answer}"
    );
}

/// The record number of a value `{"n": i}`.
fn number(value: &[u8]) -> i64 {
    let v: Value = serde_json::from_slice(value).expect("a JSON value");
    v["n"].as_i64().expect("a number")
}

/// The dead letters of `queue` for `group`, as `(offset, error)`.
async fn dead_letters(broker: &Broker, queue: &str, group: &str) -> Vec<(i64, String)> {
    let page = broker
        .get(&format!("/api/v1/dlq?queue={queue}&consumerGroup={group}"))
        .await;
    let mut out: Vec<(i64, String)> = page["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            (
                m["offset"].as_i64().expect("offset"),
                m["errorMessage"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    out.sort();
    out
}

async fn two_share_consumers_and_an_http_consumer_take_each_record_once(broker: &Broker) {
    const RECORDS: i64 = 120;
    create_topic(&broker.kafka, "work", 2).await;
    let kafka = broker.kafka.clone();
    let (mut a, mut b) = tokio::task::block_in_place(|| {
        set_group_configs(&kafka, "crew", &[("share.auto.offset.reset", "earliest")]);
        (
            ShareConsumer::join(&kafka, "crew", &["work"]),
            ShareConsumer::join(&kafka, "crew", &["work"]),
        )
    });
    assert_eq!(a.assigned.len(), 2, "every partition to every member");
    push(broker, "work", 0, RECORDS, 2).await;

    let mut seen: BTreeMap<i64, usize> = BTreeMap::new();
    let mut by = [0usize; 3];
    let (mut a_held, mut b_held) = (Vec::new(), Vec::new());
    let deadline = Instant::now() + TIMEOUT;
    while seen.len() < RECORDS as usize && Instant::now() < deadline {
        // Each round: the Kafka members acknowledge what they hold, the
        // HTTP consumer pops and acknowledges, then the members fetch.
        tokio::task::block_in_place(|| {
            for (member, held) in [(&mut a, &mut a_held), (&mut b, &mut b_held)] {
                if !held.is_empty() {
                    let answer = member.acknowledge(&all(held, ACCEPT));
                    assert_eq!(answer.error_code, 0);
                    for t in &answer.responses {
                        assert!(t.partitions.iter().all(|p| p.error_code == 0));
                    }
                    held.clear();
                }
            }
        });
        let (status, popped) = broker
            .get_answer("/api/v1/pop/queue/work?consumerGroup=crew&batch=7")
            .await;
        if status == reqwest::StatusCode::OK {
            let mut acks = Vec::new();
            for m in popped["messages"].as_array().expect("messages") {
                *seen.entry(m["data"]["n"].as_i64().expect("n")).or_default() += 1;
                by[2] += 1;
                acks.push(json!({
                    "transactionId": m["transactionId"],
                    "partitionId": m["partitionId"],
                    "leaseId": m["leaseId"],
                    "status": "completed",
                }));
            }
            let acked = broker
                .post(
                    "/api/v1/ack/batch",
                    json!({"consumerGroup": "crew", "acknowledgments": acks}),
                )
                .await;
            assert!(
                acked
                    .as_array()
                    .expect("results")
                    .iter()
                    .all(|r| r["success"] == true),
                "{acked}"
            );
        }
        tokio::task::block_in_place(|| {
            for (i, (member, held)) in [(&mut a, &mut a_held), (&mut b, &mut b_held)]
                .into_iter()
                .enumerate()
            {
                let got = member.fetch(&BTreeMap::new(), 7, 50);
                for r in &got {
                    assert_eq!(r.delivery, 1, "nothing is redelivered when all accept");
                    *seen.entry(number(&r.value)).or_default() += 1;
                    by[i] += 1;
                }
                *held = got;
            }
        });
    }
    tokio::task::block_in_place(|| {
        for (member, held) in [(&mut a, &a_held), (&mut b, &b_held)] {
            if !held.is_empty() {
                assert_eq!(member.acknowledge(&all(held, ACCEPT)).error_code, 0);
            }
        }
    });
    assert_eq!(
        seen.len(),
        RECORDS as usize,
        "every record, by consumer {by:?}"
    );
    assert!(
        seen.values().all(|n| *n == 1),
        "each exactly once: {seen:?}"
    );
    assert!(
        by.iter().all(|n| *n > 0),
        "all three consumers took records: {by:?}"
    );
    // Nothing is left for anyone.
    let (status, _) = broker
        .get_answer("/api/v1/pop/queue/work?consumerGroup=crew&batch=10")
        .await;
    assert_eq!(status, reqwest::StatusCode::NO_CONTENT);
    let left = tokio::task::block_in_place(|| a.fetch(&BTreeMap::new(), 10, 0));
    assert!(left.is_empty(), "{left:?}");
}

async fn release_redelivers_and_reject_and_exhaustion_dead_letter(broker: &Broker) {
    create_topic(&broker.kafka, "jobs", 1).await;
    let kafka = broker.kafka.clone();
    let mut a = tokio::task::block_in_place(|| {
        set_group_configs(
            &kafka,
            "picky",
            &[
                ("share.auto.offset.reset", "earliest"),
                ("share.delivery.count.limit", "3"),
            ],
        );
        ShareConsumer::join(&kafka, "picky", &["jobs"])
    });
    push(broker, "jobs", 0, 4, 1).await;
    tokio::task::block_in_place(|| {
        let first = a.fetch(&BTreeMap::new(), 10, 1000);
        let offsets: Vec<(i64, i16)> = first.iter().map(|r| (r.offset, r.delivery)).collect();
        assert_eq!(offsets, vec![(0, 1), (1, 1), (2, 1), (3, 1)]);
        // ACCEPT 0, RELEASE 1: 1 and what follows it come back.
        let acks = each(&[(&first[0], ACCEPT), (&first[1], RELEASE)]);
        let again = a.fetch(&acks, 10, 1000);
        let offsets: Vec<(i64, i16)> = again.iter().map(|r| (r.offset, r.delivery)).collect();
        assert_eq!(
            offsets,
            vec![(1, 2), (2, 2), (3, 2)],
            "released, delivered again"
        );
        // REJECT 1: dead-lettered. As in the native engine, an acquisition
        // ends at its first RELEASE or REJECT: 2 and 3 come back.
        let answer = a.acknowledge(&each(&[(&again[0], REJECT)]));
        assert_eq!(answer.error_code, 0);
        assert_eq!(answer.responses[0].partitions[0].error_code, 0);
        let third = a.fetch(&BTreeMap::new(), 10, 1000);
        let offsets: Vec<(i64, i16)> = third.iter().map(|r| (r.offset, r.delivery)).collect();
        assert_eq!(offsets, vec![(2, 3), (3, 3)]);
        // ACCEPT 2; RELEASE 3 on its last delivery (the limit is 3):
        // dead-lettered as exhausted instead of delivered a fourth time.
        let answer = a.acknowledge(&each(&[(&third[0], ACCEPT), (&third[1], RELEASE)]));
        assert_eq!(answer.error_code, 0);
        assert_eq!(answer.responses[0].partitions[0].error_code, 0);
    });
    let letters = dead_letters(broker, "jobs", "picky").await;
    assert_eq!(letters.len(), 2, "{letters:?}");
    assert_eq!(letters[0].0, 1);
    assert!(letters[0].1.contains("rejected"), "{letters:?}");
    assert_eq!(letters[1].0, 3);
    assert!(letters[1].1.contains("delivery count"), "{letters:?}");
    let rest = tokio::task::block_in_place(|| a.fetch(&BTreeMap::new(), 10, 200));
    assert!(rest.is_empty(), "nothing left: {rest:?}");
}

async fn an_ended_lock_redelivers_to_another_member(broker: &Broker) {
    create_topic(&broker.kafka, "slow", 1).await;
    let kafka = broker.kafka.clone();
    let (mut a, mut b) = tokio::task::block_in_place(|| {
        set_group_configs(
            &kafka,
            "sleepy",
            &[
                ("share.auto.offset.reset", "earliest"),
                ("share.record.lock.duration.ms", "1000"),
                ("share.delivery.count.limit", "2"),
            ],
        );
        (
            ShareConsumer::join(&kafka, "sleepy", &["slow"]),
            ShareConsumer::join(&kafka, "sleepy", &["slow"]),
        )
    });
    push(broker, "slow", 0, 1, 1).await;
    tokio::task::block_in_place(|| {
        let got = a.fetch(&BTreeMap::new(), 10, 1000);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].delivery, 1);
        let none = b.fetch(&BTreeMap::new(), 10, 0);
        assert!(none.is_empty(), "locked by the other member");
        std::thread::sleep(Duration::from_millis(1500));
        let again = b.fetch(&BTreeMap::new(), 10, 1000);
        assert_eq!(again.len(), 1, "the lock ended: delivered again");
        assert_eq!((again[0].offset, again[0].delivery), (0, 2));
        // The first member's lock is gone: its acknowledgement is refused.
        let late = a.acknowledge(&all(&got, ACCEPT));
        assert_eq!(
            late.responses[0].partitions[0].error_code,
            ResponseError::InvalidRecordState.code()
        );
        // The second lock ends too: past the limit of 2 deliveries the
        // record is dead-lettered instead of delivered a third time.
        std::thread::sleep(Duration::from_millis(1500));
        let third = a.fetch(&BTreeMap::new(), 10, 200);
        assert!(third.is_empty(), "{third:?}");
    });
    let letters = dead_letters(broker, "slow", "sleepy").await;
    assert_eq!(letters.len(), 1, "{letters:?}");
    assert!(letters[0].1.contains("delivery count"), "{letters:?}");
}

async fn bad_requests_are_refused_and_change_nothing(broker: &Broker) {
    create_topic(&broker.kafka, "strict", 1).await;
    let kafka = broker.kafka.clone();
    let (mut a, mut b) = tokio::task::block_in_place(|| {
        set_group_configs(
            &kafka,
            "careful",
            &[("share.auto.offset.reset", "earliest")],
        );
        (
            ShareConsumer::join(&kafka, "careful", &["strict"]),
            ShareConsumer::join(&kafka, "careful", &["strict"]),
        )
    });
    push(broker, "strict", 0, 3, 1).await;
    tokio::task::block_in_place(|| {
        // Heartbeats: a stale epoch is fenced, an unknown group or member unknown.
        let fenced = a.heartbeat(a.epoch + 7);
        assert_eq!(fenced.error_code, ResponseError::FencedMemberEpoch.code());
        let stranger = ShareConsumer {
            group: "nobody-here".into(),
            ..ShareConsumer::join(&kafka, "careful", &["strict"])
        };
        let unknown = stranger.heartbeat(1);
        assert_eq!(unknown.error_code, ResponseError::UnknownMemberId.code());

        let held = a.fetch(&BTreeMap::new(), 10, 1000);
        assert_eq!(held.len(), 3);
        // A wrong session epoch: refused, the session stays where it was.
        let session = a.session;
        a.session = session + 5;
        let wrong = a.fetch_raw(&all(&held, ACCEPT), 10, 0);
        assert_eq!(
            wrong.error_code,
            ResponseError::InvalidShareSessionEpoch.code()
        );
        a.session = session;
        // An unknown member's fetch, and a fetch to an unknown group.
        let request = ShareFetchRequest::default()
            .with_group_id(Some(GroupId(StrBytes::from_static_str("careful"))))
            .with_member_id(Some(StrBytes::from_static_str("nobody")))
            .with_share_session_epoch(0);
        let answer: ShareFetchResponse = call(&kafka, ApiKey::ShareFetch, 1, &request);
        assert_eq!(answer.error_code, ResponseError::UnknownMemberId.code());
        let request = request.with_group_id(Some(GroupId(StrBytes::from_static_str("nonesuch"))));
        let answer: ShareFetchResponse = call(&kafka, ApiKey::ShareFetch, 1, &request);
        assert_eq!(answer.error_code, ResponseError::UnknownMemberId.code());
        // Acknowledgements cannot open a session.
        let mut fresh = ShareConsumer::join(&kafka, "careful", &["strict"]);
        let opening = fresh.fetch_raw(&all(&held, ACCEPT), 10, 0);
        assert_eq!(opening.error_code, ResponseError::InvalidRequest.code());

        // B acknowledges A's records, and an offset nobody acquired.
        b.fetch(&BTreeMap::new(), 10, 0);
        let foreign = b.acknowledge(&all(&held, ACCEPT));
        assert_eq!(foreign.error_code, 0);
        assert_eq!(
            foreign.responses[0].partitions[0].error_code,
            ResponseError::InvalidRecordState.code()
        );
        let mut never = all(&held[..1], ACCEPT);
        never.values_mut().for_each(|v| v[0].0 = 99);
        let answer = a.acknowledge(&never);
        assert_eq!(
            answer.responses[0].partitions[0].error_code,
            ResponseError::InvalidRecordState.code()
        );
        // A ShareAcknowledge at epoch 0 is refused.
        let zero = a.acknowledge_at(&all(&held, ACCEPT), 0);
        assert_eq!(
            zero.error_code,
            ResponseError::InvalidShareSessionEpoch.code()
        );

        // Nothing changed: A still holds all three and accepts them.
        let answer = a.acknowledge(&all(&held, ACCEPT));
        assert_eq!(answer.error_code, 0);
        assert_eq!(answer.responses[0].partitions[0].error_code, 0);

        // Described and listed as a share group; an unknown one is not found.
        let described: ShareGroupDescribeResponse = call(
            &kafka,
            ApiKey::ShareGroupDescribe,
            1,
            &ShareGroupDescribeRequest::default().with_group_ids(vec![
                GroupId(StrBytes::from_static_str("careful")),
                GroupId(StrBytes::from_static_str("nonesuch")),
            ]),
        );
        assert_eq!(described.groups[0].error_code, 0);
        assert_eq!(described.groups[0].group_state.as_str(), "Stable");
        assert_eq!(described.groups[0].members.len(), 4);
        assert_eq!(
            described.groups[1].error_code,
            ResponseError::GroupIdNotFound.code()
        );
        let listed: ListGroupsResponse = call(
            &kafka,
            ApiKey::ListGroups,
            5,
            &ListGroupsRequest::default()
                .with_types_filter(vec![StrBytes::from_static_str("share")]),
        );
        let names: BTreeSet<&str> = listed.groups.iter().map(|g| g.group_id.as_str()).collect();
        assert_eq!(names, BTreeSet::from(["careful"]));
        assert_eq!(listed.groups[0].group_type.as_str(), "share");
    });
    let (status, _) = broker
        .get_answer("/api/v1/pop/queue/strict?consumerGroup=careful&batch=10")
        .await;
    assert_eq!(
        status,
        reqwest::StatusCode::NO_CONTENT,
        "all three were accepted once"
    );
}

async fn start_offsets_are_described_altered_and_deleted(broker: &Broker) {
    create_topic(&broker.kafka, "ledger", 2).await;
    let kafka = broker.kafka.clone();
    let mut a = tokio::task::block_in_place(|| {
        set_group_configs(&kafka, "rewind", &[("share.auto.offset.reset", "earliest")]);
        ShareConsumer::join(&kafka, "rewind", &["ledger"])
    });
    // Partition 0 holds 0, 2, 4 and partition 1 holds 1, 3, 5, at offsets 0..3.
    push(broker, "ledger", 0, 6, 2).await;
    tokio::task::block_in_place(|| {
        let got = a.fetch(&BTreeMap::new(), 10, 1000);
        assert_eq!(got.len(), 6, "{got:?}");
        assert_eq!(a.acknowledge(&all(&got, ACCEPT)).error_code, 0);

        // Every partition the group has a start offset on, then those asked.
        let all_of = describe_offsets(&kafka, "rewind", None);
        assert_eq!(all_of.error_code, 0, "{:?}", all_of.error_message);
        assert_eq!(
            starts(&all_of),
            vec![("ledger".into(), 0, 3, 0), ("ledger".into(), 1, 3, 0)]
        );
        let asked = describe_offsets(
            &kafka,
            "rewind",
            Some(&[("ledger", &[1, 7]), ("nowhere", &[0])]),
        );
        let unknown = ResponseError::UnknownTopicOrPartition.code();
        assert_eq!(
            starts(&asked),
            vec![
                ("ledger".into(), 1, 3, 0),
                ("ledger".into(), 7, -1, unknown),
                ("nowhere".into(), 0, -1, unknown)
            ]
        );
        assert_eq!(asked.topics[0].topic_id, a.assigned[0].0);

        // Refused while the group has a member: nothing moves.
        let busy = alter_offsets(&kafka, "rewind", &[("ledger", &[(0, 0)])]);
        assert_eq!(busy.error_code, ResponseError::NonEmptyGroup.code());
        let busy = delete_offsets(&kafka, "rewind", &["ledger"]);
        assert_eq!(busy.error_code, ResponseError::NonEmptyGroup.code());
        assert_eq!(starts(&describe_offsets(&kafka, "rewind", None))[0].2, 3);
        assert_eq!(a.heartbeat(-1).error_code, 0);

        // Bad partitions, topics and offsets are refused one by one and change nothing.
        let bad = alter_offsets(
            &kafka,
            "rewind",
            &[("ledger", &[(9, 0), (0, -4)]), ("nowhere", &[(0, 0)])],
        );
        assert_eq!(bad.error_code, 0);
        let codes: Vec<i16> = bad
            .responses
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect();
        assert_eq!(
            codes,
            vec![unknown, ResponseError::InvalidRequest.code(), unknown]
        );
        assert_eq!(
            starts(&describe_offsets(&kafka, "rewind", None)),
            vec![("ledger".into(), 0, 3, 0), ("ledger".into(), 1, 3, 0)]
        );

        // Moved back: a share consumer acquires from the new start offsets.
        let moved = alter_offsets(&kafka, "rewind", &[("ledger", &[(0, 1), (1, 0)])]);
        assert_eq!(moved.error_code, 0, "{:?}", moved.error_message);
        assert!(moved.responses[0]
            .partitions
            .iter()
            .all(|p| p.error_code == 0));
        assert_eq!(
            starts(&describe_offsets(&kafka, "rewind", None)),
            vec![("ledger".into(), 0, 1, 0), ("ledger".into(), 1, 0, 0)]
        );
        let mut b = ShareConsumer::join(&kafka, "rewind", &["ledger"]);
        let again = b.fetch(&BTreeMap::new(), 10, 1000);
        let mut at: Vec<(i32, i64, i64)> = again
            .iter()
            .map(|r| (r.partition.1, r.offset, number(&r.value)))
            .collect();
        at.sort();
        assert_eq!(
            at,
            vec![(0, 1, 2), (0, 2, 4), (1, 0, 1), (1, 1, 3), (1, 2, 5)]
        );
        assert_eq!(b.acknowledge(&all(&again, ACCEPT)).error_code, 0);
        assert_eq!(b.heartbeat(-1).error_code, 0);
        let moved = alter_offsets(&kafka, "rewind", &[("ledger", &[(0, 2)])]);
        assert_eq!(moved.error_code, 0, "{:?}", moved.error_message);
    });
    // An HTTP consumer of the group starts there too.
    let popped = broker
        .get("/api/v1/pop/queue/ledger/partition/0?consumerGroup=rewind&batch=10")
        .await;
    let numbers: Vec<i64> = popped["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["data"]["n"].as_i64().expect("n"))
        .collect();
    assert_eq!(numbers, vec![4], "{popped}");
    let m = &popped["messages"][0];
    let acked = broker
        .post(
            "/api/v1/ack",
            json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                   "leaseId": m["leaseId"], "consumerGroup": "rewind", "status": "completed"}),
        )
        .await;
    assert_eq!(acked[0]["success"], true, "{acked}");

    tokio::task::block_in_place(|| {
        // Deleted: no start offsets left, and the group starts over by
        // share.auto.offset.reset (earliest).
        let deleted = delete_offsets(&kafka, "rewind", &["ledger", "nowhere"]);
        assert_eq!(deleted.error_code, 0, "{:?}", deleted.error_message);
        let codes: Vec<i16> = deleted.responses.iter().map(|t| t.error_code).collect();
        assert_eq!(
            codes,
            vec![0, ResponseError::UnknownTopicOrPartition.code()]
        );
        let described = describe_offsets(&kafka, "rewind", None);
        assert_eq!(described.error_code, 0, "the group outlives its offsets");
        assert!(starts(&described).is_empty(), "{described:?}");
        assert_eq!(
            starts(&describe_offsets(
                &kafka,
                "rewind",
                Some(&[("ledger", &[0, 1])])
            )),
            vec![("ledger".into(), 0, -1, 0), ("ledger".into(), 1, -1, 0)]
        );
        let mut c = ShareConsumer::join(&kafka, "rewind", &["ledger"]);
        let over = c.fetch(&BTreeMap::new(), 10, 1000);
        assert_eq!(over.len(), 6, "from the start again: {over:?}");
        assert_eq!(c.heartbeat(-1).error_code, 0);

        // Unknown groups: not found, and not created.
        let unknown = describe_offsets(&kafka, "nonesuch", None);
        assert_eq!(unknown.error_code, ResponseError::GroupIdNotFound.code());
        let unknown = delete_offsets(&kafka, "nonesuch", &["ledger"]);
        assert_eq!(unknown.error_code, ResponseError::GroupIdNotFound.code());
        let unknown = describe_offsets(&kafka, "nonesuch", None);
        assert_eq!(unknown.error_code, ResponseError::GroupIdNotFound.code());
    });
}

async fn a_waiting_share_fetch_wakes_when_a_record_arrives(broker: &Broker) {
    create_topic(&broker.kafka, "bell", 1).await;
    let kafka = broker.kafka.clone();
    let mut a = tokio::task::block_in_place(|| {
        set_group_configs(&kafka, "ears", &[("share.auto.offset.reset", "earliest")]);
        let mut a = ShareConsumer::join(&kafka, "ears", &["bell"]);
        assert!(a.fetch(&BTreeMap::new(), 10, 0).is_empty(), "nothing yet");
        a
    });
    // The fetch waits up to 5 s; the record lands half a second in.
    let waiting = tokio::task::spawn_blocking(move || {
        let start = Instant::now();
        let got = a.fetch(&BTreeMap::new(), 10, 5000);
        (got, start.elapsed())
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    push(broker, "bell", 0, 1, 1).await;
    let (got, waited) = waiting.await.expect("the fetch");
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(number(&got[0].value), 0);
    assert!(
        waited < Duration::from_secs(4),
        "woken by the record, not by the 5 s max wait: {waited:?}"
    );
}
