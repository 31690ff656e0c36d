//! The partition log as the Kafka facade uses it: topics, appends, reads by
//! offset and bytes, offsets by time, the append signal, the broker registry.

use bytes::Bytes;
use storage::PartitionId;
use storage::{Content, KafkaRecord, QueueOptions, Record, TimestampedOffset, TopicCreation};

use crate::push::push_one;
use crate::support::{read_messages, Db, START_MS};

pub(crate) fn kafka(value: &str, timestamp_ms: i64) -> Record {
    Record {
        message_id: storage::new_message_id(),
        transaction_id: None,
        trace_id: None,
        producer_sub: None,
        content: Content::Kafka(KafkaRecord {
            key: None,
            value: Some(Bytes::copy_from_slice(value.as_bytes())),
            headers: Vec::new(),
            timestamp_ms,
            txn: None,
        }),
    }
}

/// What a lookup by time answers.
fn at_ts(offset: i64, timestamp_ms: i64) -> TimestampedOffset {
    TimestampedOffset {
        offset,
        timestamp_ms,
    }
}

async fn partition_id(engine: &storage::Engine, topic: &str, index: i32) -> PartitionId {
    let q = engine
        .queue(topic)
        .await
        .expect("read")
        .expect("topic exists");
    q.partitions
        .iter()
        .find(|p| p.kafka_index == index)
        .expect("partition")
        .id
}

/// Creates Kafka topic `name` with one partition; returns that partition's id.
pub(crate) async fn one_partition_topic(engine: &storage::Engine, name: &str) -> PartitionId {
    engine
        .create_topic(name, 1, &QueueOptions::for_kafka_topic())
        .await
        .expect("create");
    partition_id(engine, name, 0).await
}

pub(crate) async fn topics_are_created_once_with_numbered_partitions(db: &Db) {
    let engine = db.engine().await;
    let kafka_options = QueueOptions::for_kafka_topic();
    assert_eq!(
        engine
            .create_topic("t", 3, &kafka_options)
            .await
            .expect("create"),
        TopicCreation::Created
    );
    assert_eq!(
        engine
            .create_topic("t", 5, &kafka_options)
            .await
            .expect("again"),
        TopicCreation::AlreadyExists
    );
    let q = engine.queue("t").await.expect("read").expect("exists");
    assert_eq!(
        q.options.dedup_window_seconds, 0,
        "a Kafka topic has no dedup window"
    );
    let parts: Vec<(String, i32)> = q
        .partitions
        .iter()
        .map(|p| (p.name.clone(), p.kafka_index))
        .collect();
    assert_eq!(
        parts,
        [
            ("0".to_owned(), 0),
            ("1".to_owned(), 1),
            ("2".to_owned(), 2)
        ]
    );

    engine.create_partitions("t", 5).await.expect("grow");
    assert_eq!(
        engine
            .queue("t")
            .await
            .expect("read")
            .expect("exists")
            .partitions
            .len(),
        5
    );
    assert!(
        engine.create_partitions("t", 5).await.is_err(),
        "the count must grow"
    );
    assert!(engine.create_partitions("missing", 2).await.is_err());
    assert!(engine.create_topic("bad", 0, &kafka_options).await.is_err());

    // A queue created natively keeps its options when seen as a topic.
    push_one(&engine, "native", "Default", Some("x")).await;
    assert_eq!(
        engine
            .create_topic("native", 1, &kafka_options)
            .await
            .expect("create"),
        TopicCreation::AlreadyExists
    );
    let native = engine.queue("native").await.expect("read").expect("exists");
    assert_eq!(native.options.dedup_window_seconds, 3600);
    assert_eq!(native.topic_id.get_version_num(), 4);
    // Topic ids name their queues (Fetch and Produce v13+), and only those.
    let t = engine.queue("t").await.expect("read").expect("exists");
    for (id, name) in [(native.topic_id, "native"), (t.topic_id, "t")] {
        assert_eq!(
            engine.topic_name(id).await.expect("lookup").as_deref(),
            Some(name)
        );
    }
    let unknown = uuid::Uuid::new_v4();
    assert_eq!(engine.topic_name(unknown).await.expect("lookup"), None);
}

pub(crate) async fn appends_and_reads_by_offset_and_bytes(db: &Db) {
    let engine = db.engine().await;
    let p = one_partition_topic(&engine, "log").await;
    let appended = engine.appended_anywhere();
    let notified = appended.notified();
    tokio::pin!(notified);
    notified.as_mut().enable();
    assert_eq!(
        engine
            .append_records("log", p, vec![kafka("a", 1), kafka("b", 2)])
            .await
            .expect("append"),
        0
    );
    tokio::time::timeout(std::time::Duration::from_secs(5), notified)
        .await
        .expect("a committed append wakes long polls");
    assert_eq!(
        engine
            .append_records("log", p, vec![kafka("c", 3)])
            .await
            .expect("append"),
        2
    );
    for i in 0..10 {
        engine
            .append_records("log", p, vec![kafka(&"x".repeat(100), 10 + i)])
            .await
            .expect("append");
    }
    let bounds = engine.log_bounds(p).await.expect("bounds");
    assert_eq!((bounds.log_start, bounds.next_offset), (0, 13));

    let all = read_messages(&engine, p, 0, usize::MAX, usize::MAX)
        .await
        .expect("read");
    assert_eq!(
        all.iter().map(|m| m.offset).collect::<Vec<_>>(),
        (0..13).collect::<Vec<_>>()
    );
    let mid = read_messages(&engine, p, 1, 2, usize::MAX)
        .await
        .expect("read");
    assert_eq!(mid.iter().map(|m| m.offset).collect::<Vec<_>>(), [1, 2]);
    // A byte budget stops before the message that would cross it, but
    // always returns something.
    let small = read_messages(&engine, p, 3, usize::MAX, 1)
        .await
        .expect("read");
    assert_eq!(small.len(), 1);
    let some = read_messages(&engine, p, 3, usize::MAX, 1000)
        .await
        .expect("read");
    assert!(
        some.len() >= 2 && some.len() < 10,
        "{} messages",
        some.len()
    );
    assert!(read_messages(&engine, p, 13, 10, 1000)
        .await
        .expect("read")
        .is_empty());
    assert!(
        engine
            .append_records("log", PartitionId::new(i64::MAX), vec![kafka("z", 1)])
            .await
            .is_err(),
        "an unknown partition is an error"
    );
}

/// A read whose byte budget ends inside a segment returns the prefix that
/// fits, and the read from there returns the rest of that segment and goes
/// on into the next ones: a fetch resuming mid-segment is never answered
/// with the segment's tail alone.
pub(crate) async fn reads_resume_inside_a_segment(db: &Db) {
    let engine = db.engine().await;
    let p = one_partition_topic(&engine, "mid").await;
    for segment in 0..3 {
        let records = (0..100)
            .map(|i| kafka(&"v".repeat(100), segment * 100 + i))
            .collect();
        engine
            .append_records("mid", p, records)
            .await
            .expect("append");
    }
    let whole = read_messages(&engine, p, 0, usize::MAX, usize::MAX)
        .await
        .expect("read");
    assert_eq!(whole.len(), 300);
    // Each record is stored in 120-130 bytes: 15,000 of them hold one
    // segment and part of the next.
    let first = read_messages(&engine, p, 0, usize::MAX, 15_000)
        .await
        .expect("read");
    assert!(
        (100..150).contains(&first.len()),
        "a budget of about 1.5 segments read {} messages",
        first.len()
    );
    let from = first.len() as i64;
    let second = read_messages(&engine, p, from, usize::MAX, 15_000)
        .await
        .expect("read");
    // The budget holds more than the rest of the segment it resumes in.
    assert!(
        second.len() > 200 - first.len(),
        "resuming at {from} read {} messages: only the segment's tail",
        second.len()
    );
    let offsets: Vec<i64> = first.iter().chain(&second).map(|m| m.offset).collect();
    assert_eq!(offsets, (0..offsets.len() as i64).collect::<Vec<_>>());
    // The records read in pieces are the records read whole.
    for (piece, all) in first.iter().chain(&second).zip(&whole) {
        assert_eq!(piece.record, all.record);
    }
}

/// Reads in small pieces, round-robin over more partitions than the engine
/// keeps read tails for, return exactly what whole reads do; so does a read
/// that goes back inside a segment another read ended in.
pub(crate) async fn reads_in_pieces_over_many_partitions_match_whole_reads(db: &Db) {
    let engine = db.engine().await;
    let partitions = 20;
    engine
        .create_topic("pieces", partitions, &QueueOptions::for_kafka_topic())
        .await
        .expect("create");
    let mut ids = Vec::new();
    for index in 0..partitions {
        let p = partition_id(&engine, "pieces", index).await;
        for segment in 0..3 {
            let records = (0..50)
                .map(|i| kafka(&format!("{index}-{segment}-{i}"), segment * 50 + i))
                .collect();
            engine
                .append_records("pieces", p, records)
                .await
                .expect("append");
        }
        ids.push(p);
    }
    let mut wholes = Vec::new();
    for &p in &ids {
        let whole = read_messages(&engine, p, 0, usize::MAX, usize::MAX)
            .await
            .expect("read");
        assert_eq!(whole.len(), 150);
        wholes.push(whole);
    }
    // Budgets of about 7 records end inside segments of 50.
    let mut pieces: Vec<Vec<storage::model::StoredMessage>> = vec![Vec::new(); ids.len()];
    loop {
        let mut read_any = false;
        for (i, &p) in ids.iter().enumerate() {
            let from = pieces[i].len() as i64;
            let got = read_messages(&engine, p, from, usize::MAX, 200)
                .await
                .expect("read");
            read_any |= !got.is_empty();
            pieces[i].extend(got);
        }
        if !read_any {
            break;
        }
    }
    for (piece, whole) in pieces.iter().zip(&wholes) {
        assert_eq!(piece, whole);
    }
    // Back inside the segment the last read of partition 0 ended in, and
    // then into the next segment.
    let p = ids[0];
    let end_inside = read_messages(&engine, p, 60, 5, usize::MAX)
        .await
        .expect("read");
    assert_eq!(end_inside[..], wholes[0][60..65]);
    let back = read_messages(&engine, p, 52, 60, usize::MAX)
        .await
        .expect("read");
    assert_eq!(back[..], wholes[0][52..112]);
}

pub(crate) async fn offsets_are_found_by_timestamp(db: &Db) {
    let engine = db.engine().await;
    let p = one_partition_topic(&engine, "times").await;
    assert_eq!(
        engine.offset_for_timestamp(p, 0).await.expect("lookup"),
        None,
        "empty"
    );
    engine
        .append_records("times", p, vec![kafka("a", 1000), kafka("b", 3000)])
        .await
        .expect("append");
    engine
        .append_records(
            "times",
            p,
            vec![kafka("c", 2000), kafka("d", 5000), kafka("e", 4000)],
        )
        .await
        .expect("append");
    let at = |ts| {
        let engine = engine.clone();
        async move { engine.offset_for_timestamp(p, ts).await.expect("lookup") }
    };
    assert_eq!(at(0).await, Some(at_ts(0, 1000)));
    assert_eq!(at(1000).await, Some(at_ts(0, 1000)));
    assert_eq!(at(1001).await, Some(at_ts(1, 3000)));
    assert_eq!(at(3500).await, Some(at_ts(3, 5000)));
    assert_eq!(at(5001).await, None);
    assert_eq!(
        engine.max_timestamp_offset(p).await.expect("max"),
        Some(at_ts(3, 5000))
    );

    // Native messages are stamped with their creation time.
    push_one(&engine, "native", "p", None).await;
    let q = engine.queue("native").await.expect("read").expect("exists");
    let np = q.partitions[0].id;
    assert_eq!(
        engine
            .offset_for_timestamp(np, START_MS)
            .await
            .expect("lookup"),
        Some(at_ts(0, START_MS))
    );
}

pub(crate) async fn brokers_register_and_expire(db: &Db) {
    let (a, b) = (db.engine().await, db.engine().await);
    let id1 = a
        .register_broker("127.0.0.1", 9092)
        .await
        .expect("register");
    let id2 = b
        .register_broker("127.0.0.1", 9093)
        .await
        .expect("register");
    assert_ne!(id1, id2);
    assert_eq!(
        a.register_broker("127.0.0.1", 9092).await.expect("again"),
        id1,
        "stable per address"
    );
    let live = a.live_brokers(10_000).await.expect("live");
    assert_eq!(
        live.iter().map(|b| b.port).collect::<Vec<_>>(),
        [9092, 9093]
    );
    db.clock.advance_ms(20_000);
    a.broker_heartbeat(id1).await.expect("heartbeat");
    let live = b.live_brokers(10_000).await.expect("live");
    assert_eq!(
        live.iter().map(|b| b.id).collect::<Vec<_>>(),
        [id1],
        "a silent broker is not live"
    );
    let cluster = a.cluster_id().await.expect("cluster id");
    assert_eq!(cluster.len(), 22);
    assert_eq!(
        b.cluster_id().await.expect("cluster id"),
        cluster,
        "one cluster id per database"
    );
}

pub(crate) async fn large_appends_are_split_into_bounded_segments(db: &Db) {
    let engine = db.engine().await;
    let p = one_partition_topic(&engine, "large").await;
    let records: Vec<Record> = (0..30_000)
        .map(|i| kafka(&format!("{i:0>100}"), i))
        .collect();
    assert_eq!(
        engine
            .append_records("large", p, records)
            .await
            .expect("append"),
        0
    );
    // A small read returns one segment's worth from the asked offset, not the whole append.
    let some = read_messages(&engine, p, 15_000, usize::MAX, 1)
        .await
        .expect("read");
    assert_eq!(some.first().map(|m| m.offset), Some(15_000));
    assert!(
        some.len() < 15_000,
        "one bounded segment, not {} messages",
        some.len()
    );
    let all = read_messages(&engine, p, 0, usize::MAX, usize::MAX)
        .await
        .expect("read");
    assert_eq!(all.len(), 30_000);
    assert!(all
        .iter()
        .enumerate()
        .all(|(i, m)| m.offset == i as i64 && m.timestamp_ms() == i as i64));
    assert_eq!(
        engine
            .offset_for_timestamp(p, 29_999)
            .await
            .expect("lookup"),
        Some(at_ts(29_999, 29_999))
    );
}
