//! Queues and partitions: configure, Kafka indexes, delete, names.

use storage::PartitionId;
use storage::{QueueOptions, StorageError, DEFAULT_PARTITION};

use crate::push::{json_item, push_one};
use crate::support::Db;

/// The ids of an existing queue's partitions, in Kafka index order.
pub(crate) async fn partition_ids(engine: &storage::Engine, queue: &str) -> Vec<PartitionId> {
    let info = engine.queue(queue).await.expect("read").expect("exists");
    info.partitions.iter().map(|p| p.id).collect()
}

pub(crate) async fn configure_is_a_full_replace(db: &Db) {
    let engine = db.engine().await;
    let day = QueueOptions {
        dedup_window_seconds: 86_400,
        lease_time: 10,
        ..QueueOptions::default()
    };
    let q = engine
        .configure_queue("orders", &day)
        .await
        .expect("configure");
    assert_eq!(q.options.dedup_window_seconds, 86_400);
    assert_eq!(q.partitions.len(), 1);
    assert_eq!(q.partitions[0].name, DEFAULT_PARTITION);

    let partial = QueueOptions {
        lease_time: 20,
        ..QueueOptions::default()
    };
    let q2 = engine
        .configure_queue("orders", &partial)
        .await
        .expect("reconfigure");
    assert_eq!(q2.id, q.id, "same queue");
    assert_eq!(q2.options.lease_time, 20);
    assert_eq!(
        q2.options.dedup_window_seconds, 3600,
        "omitted option returns to its default"
    );
    assert_eq!(q2.partitions.len(), 1, "Default is not created twice");
}

pub(crate) async fn partitions_get_kafka_indexes_in_creation_order(db: &Db) {
    let engine = db.engine().await;
    push_one(&engine, "q", "b", Some("1")).await;
    push_one(&engine, "q", "a", Some("1")).await;
    push_one(&engine, "q", "c", Some("1")).await;
    push_one(&engine, "q", "a", Some("2")).await;
    let q = engine.queue("q").await.expect("read").expect("exists");
    let names: Vec<(&str, i32)> = q
        .partitions
        .iter()
        .map(|p| (p.name.as_str(), p.kafka_index))
        .collect();
    assert_eq!(names, [("b", 0), ("a", 1), ("c", 2)]);
    assert_eq!(q.total_messages(), 4);
}

pub(crate) async fn delete_removes_everything(db: &Db) {
    let engine = db.engine().await;
    push_one(&engine, "gone", "p", Some("t1")).await;
    push_one(&engine, "kept", "p", Some("t1")).await;
    assert!(engine.delete_queue("gone").await.expect("delete"));
    assert!(
        !engine.delete_queue("gone").await.expect("delete again"),
        "second delete finds nothing"
    );
    assert!(engine.queue("gone").await.expect("read").is_none());
    assert!(engine
        .read("gone", "p", 0, 10)
        .await
        .expect("read")
        .is_empty());

    // A push recreates the queue from scratch: offsets restart, the old id is forgotten.
    let again = push_one(&engine, "gone", "p", Some("t1")).await;
    assert_eq!(again.status, storage::PushStatus::Queued);
    assert_eq!(again.offset, 0);
    let kept = engine.read("kept", "p", 0, 10).await.expect("read");
    assert_eq!(kept.len(), 1, "other queues are untouched");
}

pub(crate) async fn invalid_names_are_refused(db: &Db) {
    let engine = db.engine().await;
    for bad in ["", "a/b", "a?b", "a#b", "a\nb"] {
        let err = engine
            .push(vec![json_item(bad, "p", None, "1")])
            .await
            .expect_err("refused");
        assert!(
            matches!(err, StorageError::InvalidInput(_)),
            "{bad:?}: {err}"
        );
        let err = engine
            .push(vec![json_item("q", bad, None, "1")])
            .await
            .expect_err("refused");
        assert!(
            matches!(err, StorageError::InvalidInput(_)),
            "{bad:?}: {err}"
        );
    }
    let long = "x".repeat(storage::MAX_NAME_BYTES + 1);
    let err = engine
        .push(vec![json_item(&long, "p", None, "1")])
        .await
        .expect_err("refused");
    assert!(matches!(err, StorageError::NameTooLong { .. }));
    assert!(
        engine.queues().await.expect("list").is_empty(),
        "nothing was created"
    );
}

pub(crate) async fn a_queue_deleted_by_another_engine_is_recreated(db: &Db) {
    let (a, b) = (db.engine().await, db.engine().await);
    push_one(&a, "q", "p", Some("t")).await; // a caches the partition id
    assert!(b.delete_queue("q").await.expect("delete"));
    let again = push_one(&a, "q", "p", Some("t")).await;
    assert_eq!(
        again.status,
        storage::PushStatus::Queued,
        "the old id went with the queue"
    );
    assert_eq!(again.offset, 0);
    let q = b.queue("q").await.expect("read").expect("recreated");
    assert_eq!(q.partitions.len(), 1);
    assert_eq!(q.partitions[0].id, again.partition_id);
}

pub(crate) async fn kafka_indexes_resolve_and_follow_a_recreated_topic(db: &Db) {
    let (a, b) = (db.engine().await, db.engine().await);
    let options = QueueOptions::for_kafka_topic();
    a.create_topic("t", 2, &options).await.expect("create");
    let ids = partition_ids(&a, "t").await;
    assert_eq!(
        a.kafka_partition("t", 1).await.expect("resolve"),
        Some(ids[1])
    );
    assert_eq!(a.kafka_partition("t", 2).await.expect("resolve"), None);
    assert_eq!(a.kafka_partition("nope", 0).await.expect("resolve"), None);

    // Deleted and created again on this engine: new ids at once.
    assert!(a.delete_queue("t").await.expect("delete"));
    assert_eq!(a.kafka_partition("t", 0).await.expect("resolve"), None);
    a.create_topic("t", 2, &options)
        .await
        .expect("create again");
    let fresh = a.kafka_partition("t", 0).await.expect("resolve");
    assert!(fresh.is_some() && fresh != Some(ids[0]), "{fresh:?}");

    // Through another engine: the stale id fails one append, then resolves anew.
    assert!(b.delete_queue("t").await.expect("delete"));
    b.create_topic("t", 3, &options).await.expect("create on b");
    let stale = a
        .kafka_partition("t", 0)
        .await
        .expect("resolve")
        .expect("cached");
    let record = crate::log::kafka("v", crate::support::START_MS);
    let refused = a.append_records("t", stale, vec![record.clone()]).await;
    assert!(
        matches!(refused, Err(StorageError::PartitionNotFound(_))),
        "{refused:?}"
    );
    let now = a
        .kafka_partition("t", 0)
        .await
        .expect("resolve")
        .expect("exists");
    assert_ne!(now, stale);
    assert!(a.kafka_partition("t", 2).await.expect("resolve").is_some());
    assert_eq!(
        a.append_records("t", now, vec![record])
            .await
            .expect("append"),
        0
    );
}

/// Kafka topic configs and native options are two views of one set: each
/// door's change shows through the other, and a refused change writes
/// nothing.
pub(crate) async fn topic_configs_and_native_options_are_one_set(db: &Db) {
    use storage::options::OptionsUpdate;
    use storage::topic_configs::{self, ConfigOp};

    let engine = db.engine().await;
    let configs = [
        ("retention.ms".to_owned(), Some("86400123".to_owned())),
        (
            "cleanup.policy".to_owned(),
            Some("compact,delete".to_owned()),
        ),
    ];
    let options = topic_configs::for_new_topic(&configs).expect("valid configs");
    engine.create_topic("t", 1, &options).await.expect("create");
    let stored = engine
        .queue("t")
        .await
        .expect("read")
        .expect("exists")
        .options;
    assert!(stored.retention_enabled);
    assert_eq!(
        stored.retention_seconds, 86_401,
        "the native view, rounded up"
    );
    assert_eq!(
        topic_configs::retention_ms(&stored),
        Some(86_400_123),
        "exact"
    );

    // A native configure replaces the native options, keeps the Kafka-only
    // configs and drops the retention.ms it makes stale.
    let native = QueueOptions {
        retention_enabled: true,
        retention_seconds: 60,
        ..QueueOptions::default()
    };
    let info = engine
        .configure_keeping_topic_configs("t", &native)
        .await
        .expect("configure");
    assert_eq!(topic_configs::retention_ms(&info.options), Some(60_000));
    assert!(topic_configs::cleanup_policy(&info.options).compact);
    assert_eq!(info.options.dedup_window_seconds, 3_600);

    // A Kafka change leaves the native options as they are.
    let set = [("retention.bytes".to_owned(), ConfigOp::Set("1000".into()))];
    let updated = engine
        .update_options("t", |o| topic_configs::alter(o, &set))
        .await
        .expect("update");
    let OptionsUpdate::Updated(after) = updated else {
        panic!("refused: {updated:?}");
    };
    assert_eq!(topic_configs::retention_bytes(&after), Some(1_000));
    assert_eq!(after.retention_seconds, 60);

    let bad = [("retention.bytes".to_owned(), ConfigOp::Set("lots".into()))];
    let refused = engine
        .update_options("t", |o| topic_configs::alter(o, &bad))
        .await
        .expect("update");
    assert!(matches!(refused, OptionsUpdate::Refused(_)), "{refused:?}");
    let kept = engine
        .queue("t")
        .await
        .expect("read")
        .expect("exists")
        .options;
    assert_eq!(kept, *after, "a refused change writes nothing");
}
