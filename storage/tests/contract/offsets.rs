//! Committed offsets are one store for Kafka and native consumer groups.

use storage::offsets::{CommittedOffset, TopicOffset};
use storage::offsets_log::{partition_for, OFFSETS_TOPIC};
use storage::record::Content;
use storage::{
    AckItem, AckStatus, Engine, PartitionId, PopRequest, TxnOp, TxnOutcome, TxnRequest,
    QUEUE_MODE_GROUP,
};

use crate::consume::{ack, acks, pop, push_n, txns};
use crate::push::json_item;
use crate::support::Db;

/// The id of the queue's first partition.
async fn first_partition(engine: &Engine, queue: &str) -> PartitionId {
    engine
        .queue(queue)
        .await
        .expect("read")
        .expect("exists")
        .partitions[0]
        .id
}

pub(crate) async fn kafka_commits_and_native_acks_move_one_position(db: &Db) {
    let engine = db.engine().await;
    push_n(&engine, "q", "p", 0, 10).await;
    let partition = first_partition(&engine, "q").await;

    // A Kafka consumer of group g commits offset 4 (the next to read).
    let commit = CommittedOffset {
        offset: 4,
        metadata: Some("kafka".into()),
        leader_epoch: Some(0),
    };
    engine
        .commit_offsets("g", &[(partition, commit.clone())])
        .await
        .expect("commit");
    assert_eq!(
        engine.committed_offsets("g").await.expect("fetch"),
        [TopicOffset {
            topic: "q".to_owned(),
            partition: 0,
            committed: commit
        }]
    );

    // The native group g continues exactly there.
    let held = pop(&engine, "q", "g", 3).await;
    assert_eq!(
        held.messages[0].offset, 4,
        "the native group resumes at the Kafka commit"
    );
    let results = ack(&engine, "g", acks(&held, AckStatus::Completed)).await;
    assert!(results.iter().all(|r| r.success()));

    // And a native ack moves what Kafka's OffsetFetch answers.
    let fetched = engine.committed_offsets("g").await.expect("fetch");
    assert_eq!(
        fetched[0].committed.offset, 7,
        "the next offset after the acked span"
    );
    assert_eq!(
        fetched[0].committed.metadata, None,
        "a native position carries no Kafka metadata"
    );
    assert_eq!(
        txns(&pop(&engine, "q", "g", 10).await).len(),
        3,
        "7, 8 and 9 remain"
    );
    assert!(engine
        .committed_offsets("other")
        .await
        .expect("fetch")
        .is_empty());
}

pub(crate) async fn groups_are_listed_and_their_offsets_deleted_per_partition(db: &Db) {
    let engine = db.engine().await;
    push_n(&engine, "q", "a", 0, 3).await;
    push_n(&engine, "q", "b", 0, 3).await;
    let partitions = crate::queues::partition_ids(&engine, "q").await;
    let at = |offset| CommittedOffset {
        offset,
        metadata: None,
        leader_epoch: None,
    };
    let commits: Vec<(storage::PartitionId, CommittedOffset)> =
        partitions.iter().map(|&p| (p, at(2))).collect();
    engine.commit_offsets("k", &commits).await.expect("commit");
    // A native group and queue-mode consumption store positions too.
    let held = pop(&engine, "q", "native", 1).await;
    assert_eq!(held.messages.len(), 1);
    let queue_mode = engine
        .pop(&storage::PopRequest::new("q", 1))
        .await
        .expect("pop");
    assert!(!queue_mode.messages.is_empty());

    assert_eq!(
        engine.group_names().await.expect("names"),
        ["k", "native"],
        "every named group, not the queue-mode one"
    );

    let deleted = engine
        .delete_offsets("k", &partitions[..1])
        .await
        .expect("delete");
    assert_eq!(deleted, 1);
    let left = engine.committed_offsets("k").await.expect("fetch");
    assert_eq!(left.len(), 1, "the other partition keeps its offset");
    assert_eq!(
        engine
            .delete_offsets("k", &partitions[..1])
            .await
            .expect("again"),
        0
    );
    engine
        .delete_offsets("k", &partitions[1..])
        .await
        .expect("delete");
    assert_eq!(engine.group_names().await.expect("names"), ["native"]);
}

pub(crate) async fn commit_metadata_round_trips_byte_for_byte(db: &Db) {
    let engine = db.engine().await;
    push_n(&engine, "q", "p", 0, 1).await;
    let partition = first_partition(&engine, "q").await;
    // PostgreSQL's TEXT refuses NUL; Kafka clients may send it.
    let commit = CommittedOffset {
        offset: 1,
        metadata: Some("nul\0, control\u{1}, ünïcödé, and more".into()),
        leader_epoch: None,
    };
    engine
        .commit_offsets("g", &[(partition, commit.clone())])
        .await
        .expect("commit");
    let fetched = engine.committed_offsets("g").await.expect("fetch");
    assert_eq!(fetched[0].committed, commit);
}

/// The records of the offsets log partition holding `group`'s commits:
/// (key, value) pairs.
async fn log_of(engine: &Engine, group: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    let partition = partition_for(group).to_string();
    engine
        .read(OFFSETS_TOPIC, &partition, 0, 1000)
        .await
        .expect("read the log")
        .into_iter()
        .map(|m| match m.record.content {
            Content::Kafka(r) => (
                r.key.expect("a key").to_vec(),
                r.value.expect("a value").to_vec(),
            ),
            Content::Json(j) => panic!("a JSON record in the log: {j}"),
        })
        .collect()
}

/// The record a native position `(topic, partition) = offset` of `group`
/// set at `at` is logged as, in Kafka's schema: OffsetCommitKey v1, then
/// OffsetCommitValue v3 with no metadata and no leader epoch.
fn native_commit(
    group: &str,
    topic: &str,
    partition: i32,
    offset: i64,
    at: i64,
) -> (Vec<u8>, Vec<u8>) {
    let string = |s: &str| {
        let mut b = (s.len() as i16).to_be_bytes().to_vec();
        b.extend(s.as_bytes());
        b
    };
    let mut key = 1i16.to_be_bytes().to_vec();
    key.extend(string(group));
    key.extend(string(topic));
    key.extend(partition.to_be_bytes());
    let mut value = 3i16.to_be_bytes().to_vec();
    value.extend(offset.to_be_bytes());
    value.extend((-1i32).to_be_bytes());
    value.extend(string(""));
    value.extend(at.to_be_bytes());
    (key, value)
}

pub(crate) async fn native_position_moves_are_offsets_log_records(db: &Db) {
    let engine = db.engine().await;
    push_n(&engine, "q", "a", 0, 5).await; // Kafka partition 0
    push_n(&engine, "q", "b", 0, 3).await; // Kafka partition 1
    let mut want = Vec::new();

    // An ack of a named group moves its position: one commit record.
    let first = engine
        .pop(&PopRequest {
            group: "g".to_owned(),
            partition: Some("a".to_owned()),
            ..PopRequest::new("q", 3)
        })
        .await
        .expect("pop");
    assert_eq!(first.messages.len(), 3);
    db.clock.advance_ms(1_000);
    let results = ack(&engine, "g", acks(&first, AckStatus::Completed)).await;
    assert!(results.iter().all(|r| r.success()));
    want.push(native_commit("g", "q", 0, 3, db.clock_now()));
    assert_eq!(log_of(&engine, "g").await, want);

    // What does not move the position logs nothing: a repeat of the ack,
    // an ack naming a lease that is not live, a failure at the position
    // (only its retry counter changes), and queue-mode consumption.
    db.clock.advance_ms(1_000);
    let repeat = ack(&engine, "g", acks(&first, AckStatus::Completed)).await;
    assert!(repeat.iter().all(|r| r.noop));
    let second = engine
        .pop(&PopRequest {
            group: "g".to_owned(),
            partition: Some("a".to_owned()),
            ..PopRequest::new("q", 2)
        })
        .await
        .expect("pop");
    let forged: Vec<AckItem> = acks(&second, AckStatus::Completed)
        .into_iter()
        .map(|a| AckItem {
            lease_id: Some("not-a-lease".to_owned()),
            ..a
        })
        .collect();
    let refused = ack(&engine, "g", forged).await;
    assert!(refused.iter().all(|r| !r.success()));
    let failed = ack(&engine, "g", acks(&second, AckStatus::Failed)[..1].to_vec()).await;
    assert!(failed[0].success());
    let queue_mode = engine.pop(&PopRequest::new("q", 5)).await.expect("pop");
    let done = ack(
        &engine,
        QUEUE_MODE_GROUP,
        acks(&queue_mode, AckStatus::Completed),
    )
    .await;
    assert!(done.iter().all(|r| r.success()));
    assert_eq!(log_of(&engine, "g").await, want, "nothing more logged");
    assert_eq!(
        log_of(&engine, QUEUE_MODE_GROUP).await.len(),
        0,
        "the queue-mode pseudo-group is no consumer group"
    );

    // A commit at delivery is an ack.
    db.clock.advance_ms(1_000);
    let auto = engine
        .pop(&PopRequest {
            group: "g".to_owned(),
            partition: Some("b".to_owned()),
            auto_ack: true,
            ..PopRequest::new("q", 2)
        })
        .await
        .expect("pop");
    assert_eq!(auto.messages.len(), 2);
    want.push(native_commit("g", "q", 1, 2, db.clock_now()));
    assert_eq!(log_of(&engine, "g").await, want);

    // An ack inside a native transaction, with a push to another queue.
    db.clock.advance_ms(1_000);
    let third = engine
        .pop(&PopRequest {
            group: "g".to_owned(),
            partition: Some("b".to_owned()),
            ..PopRequest::new("q", 1)
        })
        .await
        .expect("pop");
    let message = &third.messages[0];
    let outcome = engine
        .transaction(TxnRequest {
            operations: vec![
                TxnOp::Push(json_item("out", "p", Some("t-1"), "{}")),
                TxnOp::Ack {
                    group: "g".to_owned(),
                    item: AckItem {
                        transaction_id: message.record.transaction_id(),
                        partition_id: message.partition_id,
                        status: AckStatus::Completed,
                        error: None,
                        lease_id: Some(message.lease_id.clone()),
                    },
                },
            ],
            ..TxnRequest::default()
        })
        .await
        .expect("transaction");
    assert!(matches!(outcome, TxnOutcome::Committed { .. }));
    want.push(native_commit("g", "q", 1, 3, db.clock_now()));
    assert_eq!(log_of(&engine, "g").await, want);

    // A seek sets every partition of the queue.
    db.clock.advance_ms(1_000);
    assert_eq!(engine.seek("g", "q", None).await.expect("seek"), Some(2));
    let at = db.clock_now();
    let mut seeks = log_of(&engine, "g").await.split_off(want.len());
    seeks.sort();
    let mut expected = vec![
        native_commit("g", "q", 0, 5, at),
        native_commit("g", "q", 1, 3, at),
    ];
    expected.sort();
    assert_eq!(seeks, expected);

    // Kafka's view of the group agrees with the log's last records.
    let committed = engine.committed_offsets("g").await.expect("fetch");
    let offsets: Vec<(i32, i64)> = committed
        .iter()
        .map(|c| (c.partition, c.committed.offset))
        .collect();
    assert_eq!(offsets, [(0, 5), (1, 3)]);
}
