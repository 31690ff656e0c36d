//! Committed offsets are one store for Kafka and native consumer groups.

use storage::offsets::{CommittedOffset, TopicOffset};
use storage::{AckStatus, Engine, PartitionId};

use crate::consume::{ack, acks, pop, push_n, txns};
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
