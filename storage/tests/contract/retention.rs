//! Retention: age, size, consumption by every group, eviction and
//! DeleteRecords move a partition's log start; what lies below it is never
//! read again and its segments are deleted; one broker at a time does the
//! work. Every push request below stores one segment per partition.

use std::collections::BTreeMap;

use bytes::Bytes;
use storage::{
    AckStatus, Content, Engine, KafkaRecord, PartitionId, PartitionInfo, PushStatus, QueueOptions,
    Record, StorageError,
};

use crate::consume::{ack, acks, pop, push_n, txns};
use crate::push::json_item;
use crate::support::{read_messages, Db};

/// Runs retention steps until nothing is left to do.
async fn retain(engine: &Engine) {
    let mut steps = 0;
    while engine.enforce_retention().await.expect("retention") {
        steps += 1;
        assert!(steps < 1_000, "retention never settles");
    }
}

/// Runs compaction steps until nothing is left to clean.
pub(crate) async fn compact(engine: &Engine) {
    let mut steps = 0;
    while engine.enforce_compaction().await.expect("compaction") {
        steps += 1;
        assert!(steps < 1_000, "compaction never settles");
    }
}

async fn configure(engine: &Engine, queue: &str, options: QueueOptions) {
    engine
        .configure_queue(queue, &options)
        .await
        .expect("configure");
}

async fn partition(engine: &Engine, queue: &str, name: &str) -> PartitionInfo {
    let info = engine.queue(queue).await.expect("queue").expect("exists");
    info.partitions
        .into_iter()
        .find(|p| p.name == name)
        .expect("partition exists")
}

async fn segments(db: &Db, p: &PartitionInfo) -> i64 {
    db.count(&format!(
        "SELECT COUNT(*) FROM segments WHERE partition_id = {}",
        p.id
    ))
    .await
}

/// The transaction ids a new group reads from the start of the queue.
async fn read_all(engine: &Engine, queue: &str, group: &str) -> Vec<String> {
    txns(&pop(engine, queue, group, 1_000).await)
}

fn names(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("m-{i}")).collect()
}

pub(crate) async fn age_deletes_old_segments_and_readers_continue(db: &Db) {
    let engine = db.engine().await;
    let minute = QueueOptions {
        retention_enabled: true,
        retention_seconds: 60,
        ..QueueOptions::default()
    };
    configure(&engine, "q", minute.clone()).await;
    let off = QueueOptions {
        retention_enabled: false,
        ..minute
    };
    configure(&engine, "kept", off).await;
    push_n(&engine, "q", "p", 0, 10).await;
    push_n(&engine, "q", "p", 10, 10).await;
    push_n(&engine, "kept", "p", 0, 10).await;
    db.clock.advance_ms(30_000);
    push_n(&engine, "q", "p", 20, 10).await;

    db.clock.advance_ms(30_000);
    retain(&engine).await;
    let p = partition(&engine, "q", "p").await;
    assert_eq!(p.log_start, 0, "nothing is older than a minute yet");

    db.clock.advance_ms(1);
    retain(&engine).await;
    let p = partition(&engine, "q", "p").await;
    assert_eq!((p.log_start, p.next_offset), (20, 30));
    assert_eq!(segments(db, &p).await, 1, "the deleted segments are gone");
    assert_eq!(read_all(&engine, "q", "g").await, names(20..30));
    let kept = partition(&engine, "kept", "p").await;
    assert_eq!(kept.log_start, 0, "retentionEnabled is the switch");

    // The ids outlive their messages: a deleted original still makes a
    // duplicate, answered with the nil id at its old offset.
    let again = engine
        .push(vec![
            json_item("q", "p", Some("m-5"), "{}"),
            json_item("q", "p", Some("m-25"), "{}"),
        ])
        .await
        .expect("push");
    assert_eq!(again[0].status, PushStatus::Duplicate);
    assert_eq!(
        (again[0].message_id, again[0].offset),
        (uuid::Uuid::nil(), 5)
    );
    assert_eq!(again[1].status, PushStatus::Duplicate);
    assert_ne!(again[1].message_id, uuid::Uuid::nil());
    assert_eq!(again[1].offset, 25);
}

pub(crate) async fn size_keeps_the_newest_bytes(db: &Db) {
    let engine = db.engine().await;
    configure(&engine, "q", QueueOptions::default()).await;
    for i in 0..4 {
        push_n(&engine, "q", "p", i * 10, 10).await;
    }
    let p = partition(&engine, "q", "p").await;
    let sizes = db
        .count(&format!(
            "SELECT CAST(MAX(length(records)) AS BIGINT) FROM segments WHERE partition_id = {}",
            p.id
        ))
        .await;
    let options = QueueOptions {
        topic_configs: BTreeMap::from([("retention.bytes".into(), (2 * sizes).to_string())]),
        ..QueueOptions::default()
    };
    configure(&engine, "q", options).await;
    retain(&engine).await;
    let p = partition(&engine, "q", "p").await;
    assert_eq!(p.log_start, 20, "two segments' worth stays");
    assert_eq!(segments(db, &p).await, 2);
}

pub(crate) async fn completed_retention_waits_for_every_group(db: &Db) {
    let engine = db.engine().await;
    let options = QueueOptions {
        retention_enabled: true,
        completed_retention_seconds: 60,
        ..QueueOptions::default()
    };
    configure(&engine, "q", options).await;
    push_n(&engine, "q", "p", 0, 10).await;
    push_n(&engine, "q", "p", 10, 10).await;
    let a = pop(&engine, "q", "a", 10).await;
    ack(&engine, "a", acks(&a, AckStatus::Completed)).await;
    let b = pop(&engine, "q", "b", 5).await;
    ack(&engine, "b", acks(&b, AckStatus::Completed)).await;

    retain(&engine).await;
    assert_eq!(partition(&engine, "q", "p").await.log_start, 0, "too young");
    db.clock.advance_ms(60_001);
    retain(&engine).await;
    assert_eq!(
        partition(&engine, "q", "p").await.log_start,
        0,
        "group b is inside the first segment"
    );
    let b = pop(&engine, "q", "b", 5).await;
    assert_eq!(txns(&b), names(5..10));
    ack(&engine, "b", acks(&b, AckStatus::Completed)).await;
    retain(&engine).await;
    let p = partition(&engine, "q", "p").await;
    assert_eq!(
        p.log_start, 10,
        "consumed by both groups; the rest by neither"
    );
    assert_eq!(segments(db, &p).await, 1);
}

pub(crate) async fn eviction_needs_no_retention_switch(db: &Db) {
    let engine = db.engine().await;
    let options = QueueOptions {
        max_wait_time_seconds: 30,
        ..QueueOptions::default()
    };
    configure(&engine, "q", options).await;
    push_n(&engine, "q", "p", 0, 10).await;
    db.clock.advance_ms(30_001);
    push_n(&engine, "q", "p", 10, 5).await;
    retain(&engine).await;
    assert_eq!(partition(&engine, "q", "p").await.log_start, 10);
    assert_eq!(read_all(&engine, "q", "g").await, names(10..15));
}

pub(crate) async fn delete_records_moves_the_log_start(db: &Db) {
    let engine = db.engine().await;
    configure(&engine, "q", QueueOptions::default()).await;
    for i in 0..3 {
        push_n(&engine, "q", "p", i * 10, 10).await;
    }
    let id = partition(&engine, "q", "p").await.id;
    assert_eq!(engine.delete_records(id, 15).await.expect("delete"), 15);
    assert_eq!(read_all(&engine, "q", "g").await, names(15..30));
    assert_eq!(
        engine.delete_records(id, 5).await.expect("delete"),
        15,
        "never back"
    );
    for refused in [31, -2] {
        match engine.delete_records(id, refused).await {
            Err(StorageError::OffsetOutOfRange { .. }) => {}
            other => panic!("deleting to {refused}: {other:?}"),
        }
    }
    let p = partition(&engine, "q", "p").await;
    assert_eq!(p.log_start, 15, "a refused delete changes nothing");
    retain(&engine).await;
    assert_eq!(segments(db, &p).await, 2, "the segment holding 15 stays");

    assert_eq!(engine.delete_records(id, -1).await.expect("delete"), 30);
    retain(&engine).await;
    assert_eq!(segments(db, &p).await, 0);
    assert!(read_all(&engine, "q", "h").await.is_empty());
    let next = engine
        .push(vec![json_item("q", "p", Some("n-0"), "{}")])
        .await
        .expect("push");
    assert_eq!(next[0].offset, 30, "offsets go on from the high watermark");
    assert_eq!(read_all(&engine, "q", "h").await, vec!["n-0".to_owned()]);
}

pub(crate) async fn one_broker_at_a_time_does_the_work(db: &Db) {
    let (first, second) = (db.engine().await, db.engine().await);
    let options = QueueOptions {
        retention_enabled: true,
        retention_seconds: 10,
        ..QueueOptions::default()
    };
    configure(&first, "q", options).await;
    let log_start = || async { partition(&first, "q", "p").await.log_start };

    push_n(&first, "q", "p", 0, 10).await;
    db.clock.advance_ms(11_000);
    retain(&first).await;
    assert_eq!(log_start().await, 10, "the first broker took the duty");

    push_n(&first, "q", "p", 10, 10).await;
    db.clock.advance_ms(11_000);
    assert!(!second.enforce_retention().await.expect("retention"));
    assert_eq!(
        log_start().await,
        10,
        "the second broker waits while the first holds it"
    );
    retain(&first).await;
    assert_eq!(log_start().await, 20);

    // The first broker stops; once its lease has run out the second takes over.
    push_n(&first, "q", "p", 20, 10).await;
    db.clock.advance_ms(31_000);
    retain(&second).await;
    assert_eq!(log_start().await, 30);
    assert!(!first.enforce_retention().await.expect("retention"));
}

pub(crate) async fn the_sidecar_keeps_ids_for_completed_retention(db: &Db) {
    let engine = db.engine().await;
    let options = QueueOptions {
        dedup_window_seconds: 60,
        retention_enabled: true,
        completed_retention_seconds: 2_000,
        ..QueueOptions::default()
    };
    configure(&engine, "q", options).await;
    push_n(&engine, "q", "p", 0, 10).await;
    let sidecar = "SELECT COUNT(*) FROM txn_hashes";
    let before = db.count(sidecar).await;
    assert!(before > 0);
    db.clock.advance_ms(1_000_000);
    while engine.maintain_dedup().await.expect("upkeep") {}
    assert_eq!(
        db.count(sidecar).await,
        before,
        "past the window and the floor"
    );
    db.clock.advance_ms(1_000_001);
    while engine.maintain_dedup().await.expect("upkeep") {}
    assert_eq!(db.count(sidecar).await, 0, "past completed retention");
}

pub(crate) fn keyed(key: Option<&str>, value: Option<&str>) -> Record {
    Record {
        message_id: storage::new_message_id(),
        transaction_id: None,
        trace_id: None,
        producer_sub: None,
        content: Content::Kafka(KafkaRecord {
            key: key.map(|k| Bytes::copy_from_slice(k.as_bytes())),
            value: value.map(|v| Bytes::copy_from_slice(v.as_bytes())),
            headers: Vec::new(),
            timestamp_ms: 1,
            txn: None,
        }),
    }
}

/// The (offset, value) of every record the partition still holds from `from`.
pub(crate) async fn values(
    engine: &Engine,
    id: PartitionId,
    from: i64,
) -> Vec<(i64, Option<String>)> {
    read_messages(engine, id, from, usize::MAX, usize::MAX)
        .await
        .expect("read")
        .into_iter()
        .map(|m| match m.record.content {
            Content::Kafka(k) => (
                m.offset,
                k.value.map(|v| String::from_utf8_lossy(&v).into_owned()),
            ),
            Content::Json(j) => (m.offset, Some(j)),
        })
        .collect()
}

pub(crate) async fn compacted_topic(
    engine: &Engine,
    name: &str,
    configs: &[(&str, &str)],
) -> PartitionId {
    let mut options = QueueOptions::for_kafka_topic();
    options.topic_configs = configs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    engine
        .create_topic(name, 1, &options)
        .await
        .expect("create");
    partition(engine, name, "0").await.id
}

pub(crate) async fn compaction_keeps_the_latest_record_per_key(db: &Db) {
    let engine = db.engine().await;
    let configs = [
        ("cleanup.policy", "compact"),
        ("delete.retention.ms", "1000"),
    ];
    let id = compacted_topic(&engine, "c", &configs).await;
    let append = |records: Vec<Record>| {
        let engine = engine.clone();
        async move {
            engine
                .append_records("c", id, records)
                .await
                .expect("append")
        }
    };
    append(vec![
        keyed(Some("k1"), Some("a")),
        keyed(Some("k2"), Some("b")),
        keyed(Some("k1"), Some("c")),
    ])
    .await;
    append(vec![keyed(Some("k3"), Some("d")), keyed(Some("k2"), None)]).await;
    append(vec![keyed(Some("k1"), Some("e")), keyed(None, Some("f"))]).await;
    compact(&engine).await;
    let s = |v: &str| Some(v.to_owned());
    let expected = vec![(3, s("d")), (4, None), (5, s("e")), (6, s("f"))];
    assert_eq!(
        values(&engine, id, 0).await,
        expected,
        "latest per key, tombstone kept"
    );
    assert_eq!(
        values(&engine, id, 1).await,
        expected,
        "a read from a gap goes on"
    );
    let bounds = engine.log_bounds(id).await.expect("bounds");
    assert_eq!(
        (bounds.log_start, bounds.next_offset),
        (0, 7),
        "offsets never move"
    );

    // Little new: the clean part is larger than the dirty one; not yet.
    db.clock.advance_ms(2_000);
    append(vec![keyed(Some("k3"), Some("g"))]).await;
    compact(&engine).await;
    assert_eq!(values(&engine, id, 0).await.len(), 5);
    // Enough new: cleaned again; the old tombstone goes too.
    append(
        (0..4)
            .map(|i| keyed(Some("k3"), Some(&format!("h{i}"))))
            .collect(),
    )
    .await;
    compact(&engine).await;
    assert_eq!(
        values(&engine, id, 0).await,
        vec![(5, s("e")), (6, s("f")), (11, s("h3"))]
    );
}

pub(crate) async fn compaction_waits_for_the_lag(db: &Db) {
    let engine = db.engine().await;
    let configs = [
        ("cleanup.policy", "compact,delete"),
        ("min.compaction.lag.ms", "60000"),
    ];
    let id = compacted_topic(&engine, "lagged", &configs).await;
    let records = vec![keyed(Some("k"), Some("1")), keyed(Some("k"), Some("2"))];
    engine
        .append_records("lagged", id, records)
        .await
        .expect("append");
    compact(&engine).await;
    assert_eq!(values(&engine, id, 0).await.len(), 2, "too young to clean");
    db.clock.advance_ms(60_001);
    compact(&engine).await;
    assert_eq!(
        values(&engine, id, 0).await,
        vec![(1, Some("2".to_owned()))]
    );
}

pub(crate) async fn compaction_honours_the_dirty_ratio(db: &Db) {
    let engine = db.engine().await;
    let eager = [
        ("cleanup.policy", "compact"),
        ("min.cleanable.dirty.ratio", "0.2"),
    ];
    let topics = [
        ("eager", compacted_topic(&engine, "eager", &eager).await),
        (
            "default",
            compacted_topic(&engine, "default", &[("cleanup.policy", "compact")]).await,
        ),
    ];
    let append = |topic: &'static str, id: PartitionId, keys: Vec<String>| {
        let engine = engine.clone();
        async move {
            let records = keys
                .iter()
                .map(|k| keyed(Some(k), Some("v")))
                .collect::<Vec<_>>();
            engine
                .append_records(topic, id, records)
                .await
                .expect("append");
        }
    };
    for (topic, id) in topics {
        append(topic, id, names(0..10)).await;
    }
    compact(&engine).await;
    // 1 dirty of 11 stored: under both ratios.
    for (topic, id) in topics {
        append(topic, id, names(0..1)).await;
    }
    compact(&engine).await;
    for (_, id) in topics {
        assert_eq!(values(&engine, id, 0).await.len(), 11, "not dirty enough");
    }
    // 3 dirty of 13: past 0.2, not past Kafka's default 0.5.
    for (topic, id) in topics {
        append(topic, id, names(1..3)).await;
    }
    compact(&engine).await;
    assert_eq!(values(&engine, topics[0].1, 0).await.len(), 10, "cleaned");
    assert_eq!(values(&engine, topics[1].1, 0).await.len(), 13, "waits");
}

pub(crate) async fn a_group_below_the_log_start_continues_from_it(db: &Db) {
    let engine = db.engine().await;
    configure(&engine, "q", QueueOptions::default()).await;
    for i in 0..3 {
        push_n(&engine, "q", "p", i * 10, 10).await;
    }
    let first = pop(&engine, "q", "g", 5).await;
    assert_eq!(txns(&first), names(0..5));
    ack(&engine, "g", acks(&first, AckStatus::Completed)).await;
    // A second batch is leased when the log start moves past it.
    let leased = pop(&engine, "q", "g", 5).await;
    assert_eq!(txns(&leased), names(5..10));
    let id = partition(&engine, "q", "p").await.id;
    engine.delete_records(id, 15).await.expect("delete");
    ack(&engine, "g", acks(&leased, AckStatus::Completed)).await;
    assert_eq!(
        txns(&pop(&engine, "q", "g", 100).await),
        names(15..30),
        "the group goes on from the new start"
    );
    assert_eq!(partition(&engine, "q", "p").await.log_start, 15);
}

/// Retention and compaction read only the queues their options give them
/// (a flag of the queue row): one that gains the rules later, through an
/// options change, is found, and one that loses them is left alone.
pub(crate) async fn rules_given_later_are_followed(db: &Db) {
    let engine = db.engine().await;
    configure(&engine, "q", QueueOptions::default()).await;
    push_n(&engine, "q", "p", 0, 10).await;
    let id = compacted_topic(&engine, "c", &[]).await;
    for i in 0..3 {
        let records = vec![keyed(Some("k"), Some(&format!("v{i}")))];
        engine
            .append_records("c", id, records)
            .await
            .expect("append");
    }
    db.clock.advance_ms(120_000);
    retain(&engine).await;
    compact(&engine).await;
    assert_eq!(partition(&engine, "q", "p").await.log_start, 0);
    assert_eq!(values(&engine, id, 0).await.len(), 3, "not compacted yet");

    let change = |f: fn(&mut QueueOptions)| {
        move |o: &QueueOptions| {
            let mut o = o.clone();
            f(&mut o);
            Ok::<_, std::convert::Infallible>(o)
        }
    };
    engine
        .update_options(
            "q",
            change(|o| {
                o.retention_enabled = true;
                o.retention_seconds = 60;
            }),
        )
        .await
        .expect("retention on");
    engine
        .update_options(
            "c",
            change(|o| {
                o.topic_configs
                    .insert("cleanup.policy".into(), "compact".into());
            }),
        )
        .await
        .expect("compaction on");
    retain(&engine).await;
    compact(&engine).await;
    assert_eq!(partition(&engine, "q", "p").await.log_start, 10);
    assert_eq!(values(&engine, id, 0).await, [(2, Some("v2".to_owned()))]);

    // Rules taken away: nothing more is deleted.
    engine
        .update_options("q", change(|o| o.retention_enabled = false))
        .await
        .expect("retention off");
    push_n(&engine, "q", "p", 10, 5).await;
    db.clock.advance_ms(120_000);
    retain(&engine).await;
    assert_eq!(partition(&engine, "q", "p").await.log_start, 10);
}
