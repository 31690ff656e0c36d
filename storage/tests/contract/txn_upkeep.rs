//! Kafka transactions and the upkeep of a partition: compaction removes
//! aborted records and never takes a marker for a user's keyed record;
//! retention forgets aborted ranges below the log start; deleting a queue
//! forgets its transactions' rows.

use storage::offsets::CommittedOffset;
use storage::transactions::AbortedTxn;
use storage::{Engine, PartitionId};

use crate::kafka_txn::Writer;
use crate::log::one_partition_topic;
use crate::retention::{compact, compacted_topic, keyed, values};
use crate::support::Db;

async fn offsets(engine: &Engine, p: PartitionId) -> Vec<i64> {
    values(engine, p, 0)
        .await
        .into_iter()
        .map(|(o, _)| o)
        .collect()
}

pub(crate) async fn compaction_removes_aborted_records_and_keeps_markers_apart(db: &Db) {
    let engine = db.engine().await;
    let configs = [
        ("cleanup.policy", "compact"),
        ("delete.retention.ms", "1000"),
        ("min.cleanable.dirty.ratio", "0.1"),
    ];
    let p = compacted_topic(&engine, "ct", &configs).await;
    engine
        .append_records("ct", p, vec![keyed(Some("k1"), Some("a"))])
        .await
        .expect("plain");
    let mut w = Writer::new(&engine, "ct", p, "ct-app").await;
    w.send(vec![
        keyed(Some("k1"), Some("b")),
        keyed(Some("k2"), Some("x")),
    ])
    .await;
    w.end(true).await; // marker at 3
    w.send(vec![
        keyed(Some("k1"), Some("z")),
        keyed(Some("k2"), Some("y")),
    ])
    .await;
    w.end(false).await; // marker at 6
    w.send(vec![keyed(Some("k3"), Some("q"))]).await;
    w.end(true).await; // marker at 8
    w.send(vec![keyed(Some("k3"), Some("r"))]).await; // 9, open

    compact(&engine).await;
    // The aborted z and y are gone and replace nothing; the three markers
    // (two commits with one control key) stay; the open r is not cleaned
    // and does not replace q yet.
    assert_eq!(offsets(&engine, p).await, [1, 2, 3, 6, 7, 8, 9]);
    let kept = values(&engine, p, 0).await;
    assert_eq!(kept[0].1.as_deref(), Some("b"));
    assert_eq!(kept[1].1.as_deref(), Some("x"));
    assert_eq!(
        engine
            .aborted_transactions(p, 0, 10)
            .await
            .expect("aborted"),
        [AbortedTxn {
            producer_id: w.me.id,
            first_offset: 4
        }],
        "kept while its marker is"
    );

    // Committed, r replaces q; past delete.retention.ms, the markers
    // cleaned once go, and the abort marker takes its range along.
    w.end(true).await; // marker at 10
    db.clock.advance_ms(2_000);
    compact(&engine).await;
    assert_eq!(offsets(&engine, p).await, [1, 2, 9, 10]);
    assert!(engine
        .aborted_transactions(p, 0, 11)
        .await
        .expect("aborted")
        .is_empty());
    let bounds = engine.log_bounds(p).await.expect("bounds");
    assert_eq!((bounds.last_stable, bounds.next_offset), (11, 11));
}

pub(crate) async fn retention_forgets_aborted_ranges_below_the_log_start(db: &Db) {
    let engine = db.engine().await;
    let p = one_partition_topic(&engine, "kept").await;
    let mut w = Writer::new(&engine, "kept", p, "kept-app").await;
    w.send(vec![keyed(None, Some("a0")), keyed(None, Some("a1"))])
        .await;
    w.end(false).await; // marker at 2
    w.send(vec![keyed(None, Some("a3"))]).await;
    w.end(false).await; // marker at 4
    let rows = "SELECT COUNT(*) FROM kafka_aborted_txns";
    assert_eq!(db.count(rows).await, 2);

    engine.delete_records(p, 3).await.expect("delete records");
    while engine.enforce_retention().await.expect("retention") {}
    assert_eq!(db.count(rows).await, 1, "the range below 3 is forgotten");
    assert_eq!(
        engine.aborted_transactions(p, 0, 5).await.expect("aborted"),
        [AbortedTxn {
            producer_id: w.me.id,
            first_offset: 3
        }],
        "the one the log still holds stays"
    );
}

pub(crate) async fn deleting_a_queue_forgets_its_transactions(db: &Db) {
    let engine = db.engine().await;
    let p = one_partition_topic(&engine, "gone").await;
    let mut w = Writer::new(&engine, "gone", p, "gone-app").await;
    w.send(vec![keyed(None, Some("v"))]).await;
    engine
        .add_offsets_to_txn("gone-app", w.me, "gone-group")
        .await
        .expect("group added");
    let at = CommittedOffset {
        offset: 1,
        metadata: None,
        leader_epoch: None,
    };
    engine
        .txn_offset_commit("gone-app", w.me, "gone-group", &[(p, at)])
        .await
        .expect("staged");
    assert!(engine.delete_queue("gone").await.expect("deleted"));
    for table in [
        "kafka_open_txns",
        "kafka_aborted_txns",
        "kafka_txn_partitions",
        "kafka_txn_offsets",
    ] {
        let sql = format!("SELECT COUNT(*) FROM {table}");
        assert_eq!(db.count(&sql).await, 0, "{table}");
    }
    // The transaction still commits, and publishes nothing to the queue
    // that is gone.
    w.end(true).await;
    assert!(engine
        .committed_offsets("gone-group")
        .await
        .expect("offsets")
        .is_empty());
    assert_eq!(
        db.count("SELECT COUNT(*) FROM consumer_cursors").await,
        0,
        "no position of a deleted partition"
    );
}
