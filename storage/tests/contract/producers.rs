//! Kafka idempotent producers: ids, epochs and the sequence state machine,
//! stored with the appends so every engine (restart, other broker) answers
//! a retry the same way.

use bytes::Bytes;
use storage::producers::{ProducerBatch, ProducerError, ProducerIdentity};
use storage::{Content, Engine, KafkaRecord, Record, StorageError};

use crate::log::one_partition_topic;
use crate::support::Db;

/// `n` Kafka records with values `0`, `1`, …
pub(crate) fn records(n: usize) -> Vec<Record> {
    (0..n)
        .map(|i| Record {
            message_id: storage::new_message_id(),
            transaction_id: None,
            trace_id: None,
            producer_sub: None,
            content: Content::Kafka(KafkaRecord {
                key: None,
                value: Some(Bytes::from(i.to_string())),
                headers: Vec::new(),
                timestamp_ms: 1,
                txn: None,
            }),
        })
        .collect()
}

async fn send(
    engine: &Engine,
    partition: storage::PartitionId,
    producer_id: i64,
    epoch: i16,
    seq: i32,
    n: usize,
) -> Result<i64, StorageError> {
    let batch = ProducerBatch {
        transactional: false,
        producer_id,
        epoch,
        base_sequence: seq,
    };
    engine
        .start_append("idem", partition, records(n), Some(batch))
        .await?
        .offset()
        .await
}

pub(crate) async fn sequences_dedup_retries_and_refuse_gaps(db: &Db) {
    let engine = db.engine().await;
    let p = one_partition_topic(&engine, "idem").await;
    let ProducerIdentity { id, epoch } = engine
        .init_producer_id(None, None)
        .await
        .expect("producer id");
    let mut bases = Vec::new();
    for k in 0..6 {
        bases.push(send(&engine, p, id, epoch, k * 2, 2).await.expect("append"));
    }
    assert_eq!(bases, [0, 2, 4, 6, 8, 10]);
    // A retry of each of the last five batches answers its original offset.
    for k in 1..6 {
        let again = send(&engine, p, id, epoch, k * 2, 2).await.expect("retry");
        assert_eq!(again, bases[k as usize], "batch {k}");
    }
    assert_eq!(
        engine.log_bounds(p).await.expect("bounds").next_offset,
        12,
        "retries wrote nothing"
    );
    // After a restart (a new engine on the same database) the answer is the same.
    let restarted = db.engine().await;
    assert_eq!(
        send(&restarted, p, id, epoch, 10, 2).await.expect("retry"),
        10
    );
    // A gap, a stale epoch, a new epoch not starting at 0.
    let gap = send(&engine, p, id, epoch, 13, 1).await.expect_err("gap");
    assert!(
        matches!(
            gap,
            StorageError::Producer(ProducerError::OutOfOrderSequence {
                got: 13,
                expected: 12
            })
        ),
        "{gap}"
    );
    let bumped = send(&engine, p, id, epoch + 1, 5, 1)
        .await
        .expect_err("new epoch must start at 0");
    assert!(matches!(
        bumped,
        StorageError::Producer(ProducerError::OutOfOrderSequence { .. })
    ));
    assert_eq!(
        send(&engine, p, id, epoch + 1, 0, 1)
            .await
            .expect("new epoch"),
        12
    );
    let stale = send(&engine, p, id, epoch, 12, 1)
        .await
        .expect_err("stale epoch");
    assert!(matches!(
        stale,
        StorageError::Producer(ProducerError::StaleEpoch { .. })
    ));
    assert_eq!(
        engine.log_bounds(p).await.expect("bounds").next_offset,
        13,
        "refusals wrote nothing"
    );

    let described = engine.producers(p).await.expect("describe");
    assert_eq!(described.len(), 1);
    assert_eq!(
        (
            described[0].producer_id,
            described[0].epoch,
            described[0].last_sequence
        ),
        (id, epoch + 1, 0)
    );
}

pub(crate) async fn sequences_wrap_at_two_to_the_31(db: &Db) {
    let engine = db.engine().await;
    let p = one_partition_topic(&engine, "idem").await;
    let ProducerIdentity { id, epoch } = engine
        .init_producer_id(None, None)
        .await
        .expect("producer id");
    // A producer the partition has no state for may start anywhere.
    assert_eq!(
        send(&engine, p, id, epoch, i32::MAX - 1, 3)
            .await
            .expect("append"),
        0
    );
    assert_eq!(
        send(&engine, p, id, epoch, 1, 1)
            .await
            .expect("after the wrap"),
        3
    );
    assert_eq!(
        send(&engine, p, id, epoch, i32::MAX - 1, 3)
            .await
            .expect("retry"),
        0
    );
}

pub(crate) async fn producer_ids_are_unique_and_epochs_fence(db: &Db) {
    let (a, b) = (db.engine().await, db.engine().await);
    let mut ids = std::collections::BTreeSet::new();
    for engine in [&a, &b, &a, &b] {
        let ProducerIdentity { id, epoch } = engine.init_producer_id(None, None).await.expect("id");
        assert_eq!(epoch, 0);
        assert!(ids.insert(id), "ids are unique across engines");
    }
    let ProducerIdentity { id: t1, epoch: e1 } = a
        .init_producer_id(Some("orders-tx"), None)
        .await
        .expect("txn id");
    let ProducerIdentity { id: t2, epoch: e2 } = b
        .init_producer_id(Some("orders-tx"), None)
        .await
        .expect("again");
    assert_eq!((t2, e2), (t1, e1 + 1), "the same id, the epoch bumped");
    // An idempotent producer bumps its own epoch by naming it.
    let ProducerIdentity { id, epoch } = a.init_producer_id(None, None).await.expect("id");
    assert_eq!(
        a.init_producer_id(None, Some(ProducerIdentity { id, epoch }))
            .await
            .expect("bump"),
        ProducerIdentity {
            id,
            epoch: epoch + 1
        }
    );
    let fenced = a
        .init_producer_id(None, Some(ProducerIdentity { id, epoch }))
        .await
        .expect_err("an old epoch is fenced");
    assert!(matches!(
        fenced,
        StorageError::Producer(ProducerError::Fenced)
    ));
}

pub(crate) async fn idle_producer_state_expires(db: &Db) {
    let engine = db.engine().await;
    let p = one_partition_topic(&engine, "idem").await;
    let ProducerIdentity { id, epoch } = engine.init_producer_id(None, None).await.expect("id");
    send(&engine, p, id, epoch, 0, 1).await.expect("append");
    db.clock.advance_ms(1000);
    assert_eq!(engine.expire_producers(5000, 100).await.expect("expire"), 0);
    db.clock.advance_ms(5000);
    assert_eq!(engine.expire_producers(5000, 100).await.expect("expire"), 1);
    assert!(engine.producers(p).await.expect("describe").is_empty());
    // Without state the producer may continue anywhere, as in Kafka.
    assert_eq!(send(&engine, p, id, epoch, 7, 1).await.expect("append"), 1);
}
