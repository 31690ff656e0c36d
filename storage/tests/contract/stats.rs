//! What a metrics scrape reads: offsets and sizes per topic or partition,
//! lag per group (Kafka and native alike), the pools, the database size.

use std::collections::BTreeMap;

use storage::offsets::CommittedOffset;
use storage::{AckStatus, Engine, GroupLag, TopicStats};

use crate::consume::{ack, acks, pop, push_n};
use crate::queues::partition_ids;
use crate::support::Db;

fn by_topic(stats: Vec<TopicStats>) -> BTreeMap<(String, Option<String>), TopicStats> {
    stats
        .into_iter()
        .map(|s| ((s.topic.clone(), s.partition.clone()), s))
        .collect()
}

fn lags(lag: Vec<GroupLag>) -> BTreeMap<(String, String, Option<String>), i64> {
    lag.into_iter()
        .map(|l| ((l.group, l.topic, l.partition), l.lag))
        .collect()
}

fn key(group: &str, topic: &str, partition: Option<&str>) -> (String, String, Option<String>) {
    (group.into(), topic.into(), partition.map(Into::into))
}

async fn commit(engine: &Engine, group: &str, partition: storage::PartitionId, offset: i64) {
    let at = CommittedOffset {
        offset,
        metadata: None,
        leader_epoch: None,
    };
    engine
        .commit_offsets(group, &[(partition, at)])
        .await
        .expect("commit");
}

/// The lag of every (group, queue) as the admin API counts it, position by
/// position: what the aggregated statement must agree with.
async fn lag_by_positions(engine: &Engine) -> BTreeMap<(String, String, Option<String>), i64> {
    let mut sums = BTreeMap::new();
    for p in engine
        .consumer_positions(None, None)
        .await
        .expect("positions")
    {
        *sums.entry(key(&p.group, &p.queue, None)).or_insert(0) += p.lag();
    }
    sums
}

pub(crate) async fn topic_stats_sum_partitions_and_estimate_sizes(db: &Db) {
    let engine = db.engine().await;
    push_n(&engine, "q", "a", 0, 10).await;
    push_n(&engine, "q", "b", 0, 5).await;
    push_n(&engine, "r", "Default", 0, 3).await;
    let a = partition_ids(&engine, "q").await[0];
    engine.delete_records(a, 4).await.expect("delete records");

    let topics = by_topic(engine.topic_stats(false).await.expect("stats"));
    assert_eq!(topics.len(), 2, "one row per topic: {topics:?}");
    let q = &topics[&("q".into(), None)];
    assert_eq!(
        (q.partitions, q.high_watermark, q.log_start),
        (2, 15, 4),
        "summed over the partitions"
    );
    let r = &topics[&("r".into(), None)];
    assert_eq!((r.partitions, r.high_watermark, r.log_start), (1, 3, 0));
    // One push of three records is one segment: the estimate is exact.
    let stored = db
        .count(
            "SELECT CAST(SUM(length(s.records)) AS BIGINT) FROM segments s \
             JOIN partitions p ON p.id = s.partition_id JOIN queues q ON q.id = p.queue_id \
             WHERE q.name = 'r'",
        )
        .await;
    assert!(stored > 0);
    assert!(
        (r.stored_bytes_estimate - stored as f64).abs() < 1e-6,
        "estimate {} vs stored {stored}",
        r.stored_bytes_estimate
    );
    assert!(q.stored_bytes_estimate > 0.0);

    let partitions = by_topic(engine.topic_stats(true).await.expect("stats"));
    assert_eq!(partitions.len(), 3, "one row per partition: {partitions:?}");
    let pa = &partitions[&("q".into(), Some("a".into()))];
    assert_eq!((pa.partitions, pa.high_watermark, pa.log_start), (1, 10, 4));
    let pb = &partitions[&("q".into(), Some("b".into()))];
    assert_eq!((pb.high_watermark, pb.log_start), (5, 0));
}

pub(crate) async fn group_lag_counts_kafka_and_native_groups(db: &Db) {
    let engine = db.engine().await;
    push_n(&engine, "q", "a", 0, 10).await;
    push_n(&engine, "q", "b", 0, 5).await;
    let ids = partition_ids(&engine, "q").await;
    let (a, b) = (ids[0], ids[1]);

    // A Kafka group committed 4 on a and everything on b; a native group
    // consumed three messages.
    commit(&engine, "kafka", a, 4).await;
    commit(&engine, "kafka", b, 5).await;
    let held = pop(&engine, "q", "native", 3).await;
    assert_eq!(held.messages.len(), 3);
    assert!(ack(&engine, "native", acks(&held, AckStatus::Completed))
        .await
        .iter()
        .all(|r| r.success()));

    let lag = lags(engine.group_lag(false).await.expect("lag"));
    assert_eq!(lag[&key("kafka", "q", None)], 6);
    assert_eq!(
        lag.get(&key("native", "q", None)).copied().unwrap_or(0),
        12 - lag_outside_popped_partition(&engine, "native").await,
        "{lag:?}"
    );
    assert_eq!(lag, lag_by_positions(&engine).await, "the admin API agrees");
    let per_partition = lags(engine.group_lag(true).await.expect("lag"));
    assert_eq!(per_partition[&key("kafka", "q", Some("a"))], 6);
    assert_eq!(per_partition[&key("kafka", "q", Some("b"))], 0);

    // Below the log start, lag counts from the log start.
    commit(&engine, "late", a, 2).await;
    engine.delete_records(a, 8).await.expect("delete records");
    let lag = lags(engine.group_lag(false).await.expect("lag"));
    assert_eq!(lag[&key("late", "q", None)], 2, "10 - 8, not 10 - 2");

    // Caught up: no lag.
    commit(&engine, "kafka", a, 10).await;
    loop {
        let held = pop(&engine, "q", "native", 100).await;
        if held.messages.is_empty() {
            break;
        }
        ack(&engine, "native", acks(&held, AckStatus::Completed)).await;
    }
    let lag = lags(engine.group_lag(false).await.expect("lag"));
    assert_eq!(lag[&key("kafka", "q", None)], 0);
    assert_eq!(lag[&key("native", "q", None)], 0);
    assert_eq!(lag, lag_by_positions(&engine).await, "the admin API agrees");
}

/// A native group has positions only on the partitions it popped from:
/// the lag of the partitions it has not met yet is not counted.
async fn lag_outside_popped_partition(engine: &Engine, group: &str) -> i64 {
    let met: Vec<String> = engine
        .consumer_positions(Some(group), Some("q"))
        .await
        .expect("positions")
        .into_iter()
        .map(|p| p.partition)
        .collect();
    let info = engine.queue("q").await.expect("read").expect("exists");
    info.partitions
        .iter()
        .filter(|p| !met.contains(&p.name))
        .map(|p| p.next_offset - p.log_start)
        .sum()
}

pub(crate) async fn pools_and_database_size_are_reported(db: &Db) {
    let engine = db.engine().await;
    push_n(&engine, "q", "a", 0, 10).await;
    assert!(engine.database_bytes().await.expect("size") > 0);
    let pools = engine.pool_stats();
    assert!(!pools.is_empty());
    for p in pools {
        assert!(p.max >= 1, "{p:?}");
        assert!(p.in_use <= p.open && p.open <= p.max, "{p:?}");
    }
}
