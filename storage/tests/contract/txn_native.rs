//! The native door over a partition written by Kafka transactional
//! producers: pops, acks, dead letters and message lookups see committed
//! records only, stop at an open transaction (the last stable offset) and
//! move past markers and aborted records, as a read_committed Kafka
//! consumer does.

use std::time::Duration;

use storage::{AckItem, AckRefusal, AckStatus, Content, Engine, PartitionId, PopRequest, Record};

use crate::consume::{acks, dead_letters, txns};
use crate::kafka_txn::Writer;
use crate::log::one_partition_topic;
use crate::retention::keyed;
use crate::support::{read_messages, Db};

/// Kafka records without keys whose values are `values`.
fn kafka_records(values: &[&str]) -> Vec<Record> {
    values.iter().map(|v| keyed(None, Some(v))).collect()
}

/// The values of a pop's messages, in order.
fn values(outcome: &storage::PopOutcome) -> Vec<String> {
    outcome
        .messages
        .iter()
        .map(|m| match &m.record.content {
            Content::Kafka(k) => {
                String::from_utf8_lossy(k.value.as_deref().unwrap_or_default()).into_owned()
            }
            Content::Json(j) => j.clone(),
        })
        .collect()
}

fn request(queue: &str, group: &str, auto_ack: bool) -> PopRequest {
    PopRequest {
        group: group.to_owned(),
        auto_ack,
        ..PopRequest::new(queue, 100)
    }
}

/// The stored position of `group` on the queue's one partition.
async fn position(engine: &Engine, group: &str, queue: &str) -> i64 {
    engine
        .consumer_positions(Some(group), Some(queue))
        .await
        .expect("positions")
        .first()
        .map_or(-1, |p| p.committed_offset)
}

/// The transaction id of the record stored at `offset`.
async fn txn_id_at(engine: &Engine, partition: PartitionId, offset: i64) -> String {
    let read = read_messages(engine, partition, offset, 1, 1 << 20)
        .await
        .expect("read");
    assert_eq!(read[0].offset, offset);
    read[0].record.transaction_id()
}

pub(crate) async fn pops_see_committed_records_only(db: &Db) {
    let engine = db.engine().await;
    let queue = "mixed";
    let p = one_partition_topic(&engine, queue).await;
    let mut txn = Writer::new(&engine, queue, p, "app").await;
    // n0 | c1 c2 commit | a1 a2 abort | c3 (open) | n1
    engine
        .append_records(queue, p, kafka_records(&["n0"]))
        .await
        .expect("plain");
    assert_eq!(txn.send(kafka_records(&["c1", "c2"])).await, 1);
    txn.end(true).await;
    assert_eq!(txn.send(kafka_records(&["a1", "a2"])).await, 4);
    txn.end(false).await;
    assert_eq!(txn.send(kafka_records(&["c3"])).await, 7);
    engine
        .append_records(queue, p, kafka_records(&["n1"]))
        .await
        .expect("plain");

    // Up to the open transaction, without the marker and aborted records.
    let first = engine.pop(&request(queue, "g", false)).await.expect("pop");
    assert_eq!(values(&first), ["n0", "c1", "c2"]);
    assert_eq!(
        first.messages.iter().map(|m| m.offset).collect::<Vec<_>>(),
        [0, 1, 2]
    );
    let acked = engine
        .ack("g", acks(&first, AckStatus::Completed))
        .await
        .expect("ack");
    assert!(acked.iter().all(|a| a.success()));
    assert!(acked[2].lease_released, "the last one ends the lease");

    // The group is not blocked by the marker and aborted records: it moves
    // past them and waits at the open transaction's first record.
    let empty = engine.pop(&request(queue, "g", false)).await.expect("pop");
    assert!(empty.messages.is_empty());
    assert_eq!(position(&engine, "g", queue).await, 7);

    // Markers, aborted and open records are not messages of the native door:
    // no lookup finds them, no ack resolves them, no dead letter holds them.
    for offset in [3, 4, 5, 6, 7] {
        let id = txn_id_at(&engine, p, offset).await;
        assert_eq!(
            engine.message(p, &id).await.expect("lookup"),
            None,
            "offset {offset}"
        );
        // A group that has not consumed yet: they lie after its cursor.
        let refused = engine
            .ack(
                "fresh",
                vec![AckItem {
                    transaction_id: id,
                    partition_id: p,
                    status: AckStatus::Dlq,
                    error: None,
                    lease_id: None,
                }],
            )
            .await
            .expect("ack");
        assert_eq!(refused[0].refusal, Some(AckRefusal::Unresolvable));
    }
    assert_eq!(dead_letters(&engine, queue).await.total, 0);
    assert_eq!(position(&engine, "g", queue).await, 7, "nothing moved");
    let c1 = txn_id_at(&engine, p, 1).await;
    let view = engine.message(p, &c1).await.expect("lookup").expect("c1");
    assert_eq!(view.offset, 1);

    // A pop waiting at the open transaction is woken by its commit.
    let waiting = {
        let engine = engine.clone();
        tokio::spawn(async move {
            let request = PopRequest {
                wait: Some(Duration::from_secs(10)),
                ..request(queue, "g", false)
            };
            engine.pop(&request).await.expect("pop")
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiting.is_finished(), "it waits at the open transaction");
    txn.end(true).await;
    let woken = waiting.await.expect("joined");
    assert_eq!(values(&woken), ["c3", "n1"]);

    // A commit at delivery moves past the trailing marker too.
    let all = engine
        .pop(&request(queue, "auto", true))
        .await
        .expect("pop");
    assert_eq!(values(&all), ["n0", "c1", "c2", "c3", "n1"]);
    assert_eq!(txns(&all).len(), 5);
    assert_eq!(
        position(&engine, "auto", queue).await,
        10,
        "past the marker at 9"
    );
}

pub(crate) async fn a_group_shared_with_kafka_continues_past_aborted_records(db: &Db) {
    let engine = db.engine().await;
    let queue = "shared";
    let p = one_partition_topic(&engine, queue).await;
    let mut txn = Writer::new(&engine, queue, p, "writer").await;
    // A whole batch of aborted records, longer than a pop's batch, then
    // committed ones: a pop of 2 skips them all and still delivers.
    for _ in 0..3 {
        txn.send(kafka_records(&["x1", "x2", "x3"])).await;
        txn.end(false).await;
    }
    txn.send(kafka_records(&["k1", "k2", "k3"])).await;
    txn.end(true).await;
    // A Kafka consumer of the group committed inside the aborted records.
    engine
        .commit_offsets(
            "both",
            &[(
                p,
                storage::offsets::CommittedOffset {
                    offset: 1,
                    metadata: None,
                    leader_epoch: None,
                },
            )],
        )
        .await
        .expect("kafka commit");
    let request = PopRequest {
        group: "both".to_owned(),
        ..PopRequest::new(queue, 2)
    };
    let popped = engine.pop(&request).await.expect("pop");
    assert_eq!(values(&popped), ["k1", "k2"]);
    assert_eq!(popped.messages[0].offset, 12);
    assert_eq!(
        position(&engine, "both", queue).await,
        12,
        "the aborted records and markers before it are consumed"
    );
    engine
        .ack("both", acks(&popped, AckStatus::Completed))
        .await
        .expect("ack");
    let rest = engine.pop(&request).await.expect("pop");
    assert_eq!(values(&rest), ["k3"]);
}
