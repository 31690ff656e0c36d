//! Native push: offsets, content, and exact per-partition dedup.

use std::collections::BTreeSet;

use bytes::Bytes;
use storage::{
    Content, Engine, Header, KafkaRecord, PushItem, PushOutcome, PushStatus, QueueOptions, Record,
    StorageError,
};
use uuid::Uuid;

use crate::support::Db;

pub(crate) fn json_item(queue: &str, partition: &str, txn: Option<&str>, json: &str) -> PushItem {
    PushItem {
        queue: queue.to_owned(),
        partition: partition.to_owned(),
        record: Record {
            message_id: storage::new_message_id(),
            transaction_id: txn.map(str::to_owned),
            trace_id: None,
            producer_sub: None,
            content: Content::Json(json.to_owned()),
        },
    }
}

pub(crate) async fn push_one(
    engine: &Engine,
    queue: &str,
    partition: &str,
    txn: Option<&str>,
) -> PushOutcome {
    let mut out = engine
        .push(vec![json_item(queue, partition, txn, r#"{"n":1}"#)])
        .await
        .expect("push");
    assert_eq!(out.len(), 1);
    out.remove(0)
}

pub(crate) async fn configure_window(engine: &Engine, queue: &str, seconds: i64) {
    let options = QueueOptions {
        dedup_window_seconds: seconds,
        ..QueueOptions::default()
    };
    engine
        .configure_queue(queue, &options)
        .await
        .expect("configure");
}

pub(crate) async fn offsets_are_gapless_per_partition(db: &Db) {
    let engine = db.engine().await;
    let items = vec![
        json_item("q", "p1", Some("a"), "1"),
        json_item("q", "p2", Some("a"), "2"),
        json_item("q", "p1", Some("b"), "3"),
        json_item("q", "p1", None, "4"),
        json_item("q", "p2", None, "5"),
    ];
    let out = engine.push(items).await.expect("push");
    let offsets: Vec<i64> = out.iter().map(|o| o.offset).collect();
    assert_eq!(offsets, [0, 0, 1, 2, 1]);
    assert!(out.iter().all(|o| o.status == PushStatus::Queued));
    let more = engine
        .push(vec![json_item("q", "p1", None, "6")])
        .await
        .expect("push");
    assert_eq!(more[0].offset, 3);

    let read = engine.read("q", "p1", 0, 100).await.expect("read");
    let bodies: Vec<(i64, Content)> = read
        .into_iter()
        .map(|m| (m.offset, m.record.content))
        .collect();
    let expected: Vec<(i64, Content)> = [(0, "1"), (1, "3"), (2, "4"), (3, "6")]
        .into_iter()
        .map(|(o, j)| (o, Content::Json(j.to_owned())))
        .collect();
    assert_eq!(bodies, expected);
    let tail = engine.read("q", "p1", 2, 1).await.expect("read");
    assert_eq!(tail.len(), 1);
    assert_eq!(tail[0].offset, 2);
}

pub(crate) async fn content_round_trips(db: &Db) {
    let engine = db.engine().await;
    let trace = Uuid::new_v4();
    let mut json = json_item("q", "p", Some("order-1"), r#"{"a":[1,"é"],"b":null}"#);
    json.record.trace_id = Some(trace);
    let kafka = PushItem {
        queue: "q".into(),
        partition: "p".into(),
        record: Record {
            message_id: storage::new_message_id(),
            transaction_id: None,
            trace_id: None,
            producer_sub: None,
            content: Content::Kafka(KafkaRecord {
                key: Some(Bytes::from_static(&[0xff, 0x00])),
                value: None,
                headers: vec![Header {
                    key: Bytes::from_static(b"h"),
                    value: Some(Bytes::from_static(b"v")),
                }],
                timestamp_ms: 1_234,
                txn: None,
            }),
        },
    };
    let sent = [json.record.clone(), kafka.record.clone()];
    engine.push(vec![json, kafka]).await.expect("push");
    let read = engine.read("q", "p", 0, 10).await.expect("read");
    let got: Vec<Record> = read.iter().map(|m| m.record.clone()).collect();
    assert_eq!(got, sent);
    assert_eq!(read[0].created_at_ms, crate::support::START_MS);
}

pub(crate) async fn duplicate_in_window_answers_the_original(db: &Db) {
    let engine = db.engine().await;
    let first = push_one(&engine, "payments", "customer-42", Some("order-9137-paid")).await;
    assert_eq!(first.status, PushStatus::Queued);
    push_one(&engine, "payments", "customer-42", Some("other")).await;
    db.clock.advance_ms(3_599_000);
    let retry = push_one(&engine, "payments", "customer-42", Some("order-9137-paid")).await;
    assert_eq!(retry.status, PushStatus::Duplicate);
    assert_eq!(retry.message_id, first.message_id);
    assert_eq!(retry.offset, first.offset);
    assert_eq!(retry.transaction_id, "order-9137-paid");
    let stored = engine
        .read("payments", "customer-42", 0, 10)
        .await
        .expect("read");
    assert_eq!(stored.len(), 2, "the duplicate wrote nothing");
    let q = engine
        .queue("payments")
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(q.partitions[0].next_offset, 2, "no offset was allocated");
}

pub(crate) async fn repeat_inside_a_request_is_stored_once(db: &Db) {
    let engine = db.engine().await;
    for (queue, window) in [("windowed", 3600), ("unwindowed", 0)] {
        configure_window(&engine, queue, window).await;
        let out = engine
            .push(vec![
                json_item(queue, "p", Some("a"), "1"),
                json_item(queue, "p", Some("b"), "2"),
                json_item(queue, "p", Some("a"), "3"),
                json_item(queue, "other", Some("a"), "4"),
                // Back to partitions seen before, after another one.
                json_item(queue, "p", Some("b"), "5"),
                json_item(queue, "other", Some("a"), "6"),
            ])
            .await
            .expect("push");
        let statuses: Vec<PushStatus> = out.iter().map(|o| o.status).collect();
        use PushStatus::*;
        assert_eq!(
            statuses,
            [Queued, Queued, Duplicate, Queued, Duplicate, Duplicate],
            "window {window}"
        );
        assert_eq!(out[2].message_id, out[0].message_id);
        assert_eq!(out[2].offset, out[0].offset);
        assert_eq!(out[4].message_id, out[1].message_id);
        assert_eq!(out[5].message_id, out[3].message_id);
        let stored = engine.read(queue, "p", 0, 10).await.expect("read");
        assert_eq!(stored.len(), 2);
        assert_eq!(
            stored[0].record.content,
            Content::Json("1".into()),
            "the first one wins"
        );
    }
}

pub(crate) async fn other_partition_or_queue_is_a_new_message(db: &Db) {
    let engine = db.engine().await;
    let a = push_one(&engine, "q1", "p1", Some("same")).await;
    let b = push_one(&engine, "q1", "p2", Some("same")).await;
    let c = push_one(&engine, "q2", "p1", Some("same")).await;
    for o in [&a, &b, &c] {
        assert_eq!(o.status, PushStatus::Queued);
    }
    assert_ne!(a.message_id, b.message_id);
    assert_ne!(a.partition_id, b.partition_id);
    assert_ne!(a.partition_id, c.partition_id);
}

pub(crate) async fn window_zero_stores_every_push(db: &Db) {
    let engine = db.engine().await;
    configure_window(&engine, "kafkaish", 0).await;
    for i in 0..3 {
        let o = push_one(&engine, "kafkaish", "p", Some("same")).await;
        assert_eq!(o.status, PushStatus::Queued);
        assert_eq!(o.offset, i);
    }
}

pub(crate) async fn duplicate_after_the_window_is_new(db: &Db) {
    let engine = db.engine().await;
    configure_window(&engine, "w", 60).await;
    let first = push_one(&engine, "w", "p", Some("t")).await;
    db.clock.advance_ms(59_999);
    assert_eq!(
        push_one(&engine, "w", "p", Some("t")).await.status,
        PushStatus::Duplicate
    );
    db.clock.advance_ms(2);
    let later = push_one(&engine, "w", "p", Some("t")).await;
    assert_eq!(
        later.status,
        PushStatus::Queued,
        "outside the window the id is new"
    );
    assert_eq!(later.offset, first.offset + 1);
    // The window is measured from the original: the new copy is now the original.
    let again = push_one(&engine, "w", "p", Some("t")).await;
    assert_eq!(again.status, PushStatus::Duplicate);
    assert_eq!(again.message_id, later.message_id);
}

pub(crate) async fn missing_transaction_id_is_the_message_id(db: &Db) {
    let engine = db.engine().await;
    let o = push_one(&engine, "q", "p", None).await;
    assert_eq!(o.transaction_id, o.message_id.to_string());
    assert_eq!(o.message_id.get_version_num(), 7);
    // Pushing that minted id explicitly is a duplicate of it.
    let again = push_one(&engine, "q", "p", Some(&o.transaction_id)).await;
    assert_eq!(again.status, PushStatus::Duplicate);
    assert_eq!(again.message_id, o.message_id);
}

pub(crate) async fn oversized_transaction_id_writes_nothing(db: &Db) {
    let engine = db.engine().await;
    let ok = "t".repeat(storage::MAX_TRANSACTION_ID_BYTES);
    assert_eq!(
        push_one(&engine, "q", "p", Some(&ok)).await.status,
        PushStatus::Queued
    );
    let too_long = "t".repeat(storage::MAX_TRANSACTION_ID_BYTES + 1);
    let err = engine
        .push(vec![
            json_item("q", "p", Some("fine"), "1"),
            json_item("q", "p", Some(&too_long), "2"),
        ])
        .await
        .expect_err("refused");
    assert!(
        matches!(err, StorageError::InvalidInput(ref m) if m.contains("65535")),
        "{err}"
    );
    assert_eq!(
        engine.read("q", "p", 0, 10).await.expect("read").len(),
        1,
        "nothing of the request was written"
    );
}

pub(crate) async fn unreadable_original_answers_the_nil_id(db: &Db) {
    let engine = db.engine().await;
    let first = push_one(&engine, "q", "p", Some("t")).await;
    // What retention does: the segment goes, the dedup index stays.
    db.execute("DELETE FROM segments").await;
    let retry = push_one(&engine, "q", "p", Some("t")).await;
    assert_eq!(retry.status, PushStatus::Duplicate);
    assert_eq!(retry.message_id, Uuid::nil());
    assert_eq!(retry.offset, first.offset);
}

pub(crate) async fn concurrent_pushes_of_one_id_store_it_once(db: &Db) {
    let engine = db.engine().await;
    let outcomes = push_concurrently(&[engine], 50, "one-id").await;
    assert_single_store(&outcomes);
    let stored = db
        .engine()
        .await
        .read("race", "p", 0, 100)
        .await
        .expect("read");
    assert_eq!(stored.len(), 1);
}

pub(crate) async fn two_engines_store_one_id_once(db: &Db) {
    let engines = [db.engine().await, db.engine().await];
    let outcomes = push_concurrently(&engines, 50, "shared-id").await;
    assert_single_store(&outcomes);
    let stored = engines[1].read("race", "p", 0, 100).await.expect("read");
    assert_eq!(stored.len(), 1);
}

async fn push_concurrently(engines: &[Engine], n: usize, txn: &str) -> Vec<PushOutcome> {
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..n {
        let engine = engines[i % engines.len()].clone();
        let txn = txn.to_owned();
        tasks.spawn(async move {
            engine
                .push(vec![json_item("race", "p", Some(&txn), &i.to_string())])
                .await
                .expect("push")
                .remove(0)
        });
    }
    tasks.join_all().await
}

fn assert_single_store(outcomes: &[PushOutcome]) {
    let queued: Vec<&PushOutcome> = outcomes
        .iter()
        .filter(|o| o.status == PushStatus::Queued)
        .collect();
    assert_eq!(queued.len(), 1, "exactly one push stores the id");
    let original = queued[0];
    for o in outcomes {
        assert_eq!(o.message_id, original.message_id);
        assert_eq!(o.offset, original.offset);
    }
}

pub(crate) async fn concurrent_offsets_stay_gapless(db: &Db) {
    let engines = [db.engine().await, db.engine().await];
    let mut tasks = tokio::task::JoinSet::new();
    for t in 0..20 {
        let engine = engines[t % 2].clone();
        tasks.spawn(async move {
            let mut offsets = Vec::new();
            for r in 0..10 {
                let items = (0..5)
                    .map(|i| json_item("gapless", "p", Some(&format!("{t}-{r}-{i}")), "0"))
                    .collect();
                for o in engine.push(items).await.expect("push") {
                    assert_eq!(o.status, PushStatus::Queued);
                    offsets.push(o.offset);
                }
            }
            offsets
        });
    }
    let offsets: Vec<i64> = tasks.join_all().await.into_iter().flatten().collect();
    let unique: BTreeSet<i64> = offsets.iter().copied().collect();
    assert_eq!(offsets.len(), 1000);
    assert_eq!(
        unique,
        (0..1000).collect::<BTreeSet<i64>>(),
        "every offset once, no gap"
    );
    let stored = engines[0]
        .read("gapless", "p", 0, 2000)
        .await
        .expect("read");
    let read_offsets: Vec<i64> = stored.iter().map(|m| m.offset).collect();
    assert_eq!(read_offsets, (0..1000).collect::<Vec<i64>>());
}

pub(crate) async fn a_warm_cache_sees_what_another_engine_stored(db: &Db) {
    let (a, b) = (db.engine().await, db.engine().await);
    let first = push_one(&a, "q", "p", Some("t1")).await; // a's index is now warm
    let second = push_one(&b, "q", "p", Some("t2")).await; // b loads the window cold
    let from_a = push_one(&a, "q", "p", Some("t2")).await;
    assert_eq!(
        from_a.status,
        PushStatus::Duplicate,
        "a reads what b added since"
    );
    assert_eq!(from_a.message_id, second.message_id);
    let from_b = push_one(&b, "q", "p", Some("t1")).await;
    assert_eq!(from_b.status, PushStatus::Duplicate);
    assert_eq!(from_b.message_id, first.message_id);
    assert_eq!(a.read("q", "p", 0, 10).await.expect("read").len(), 2);
}

pub(crate) async fn widening_the_window_finds_older_ids(db: &Db) {
    let engine = db.engine().await;
    configure_window(&engine, "w", 60).await;
    let original = push_one(&engine, "w", "p", Some("t")).await;
    db.clock.advance_ms(120_000);
    push_one(&engine, "w", "p", Some("other")).await; // the cached index drops "t"
    configure_window(&engine, "w", 3600).await;
    let again = push_one(&engine, "w", "p", Some("t")).await;
    assert_eq!(
        again.status,
        PushStatus::Duplicate,
        "t is inside the widened window"
    );
    assert_eq!(again.message_id, original.message_id);
}

pub(crate) async fn a_retried_batch_is_all_duplicates(db: &Db) {
    let engine = db.engine().await;
    let items = |n: usize| -> Vec<PushItem> {
        (0..n)
            .map(|i| json_item("q", "p", Some(&format!("event-{i}")), &i.to_string()))
            .collect()
    };
    let first = engine.push(items(1000)).await.expect("push");
    let retry = engine.push(items(1000)).await.expect("push");
    for (a, b) in first.iter().zip(&retry) {
        assert_eq!(b.status, PushStatus::Duplicate);
        assert_eq!((b.message_id, b.offset), (a.message_id, a.offset));
    }
    // And after a restart (cold cache) the answer is the same.
    let cold = db.engine().await.push(items(1000)).await.expect("push");
    assert!(cold
        .iter()
        .zip(&first)
        .all(|(c, a)| c.status == PushStatus::Duplicate && c.message_id == a.message_id));
    assert_eq!(
        engine.read("q", "p", 0, 5000).await.expect("read").len(),
        1000
    );
}
