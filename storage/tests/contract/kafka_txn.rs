//! Kafka transactions: the coordinator's state, markers, the last stable
//! offset and aborted ranges, and offsets committed in a transaction, all
//! in the database (a new engine on it answers the same).

use storage::offsets::CommittedOffset;
use storage::producers::{ProducerBatch, ProducerIdentity};
use storage::record::{Marker, TxnMark};
use storage::transactions::{AbortedTxn, TxnError, TxnState};
use storage::{Content, Engine, PartitionId, Record, StorageError};

use crate::log::one_partition_topic;
use crate::support::{read_messages, Db};

/// `records` marked as a transactional producer's.
pub(crate) fn marked(producer: ProducerIdentity, mut records: Vec<Record>) -> Vec<Record> {
    let mark = TxnMark {
        producer_id: producer.id,
        epoch: producer.epoch,
        marker: None,
    };
    for record in &mut records {
        if let Content::Kafka(k) = &mut record.content {
            k.txn = Some(mark);
        }
    }
    records
}

/// Appends a transactional batch of `n` records at sequence `seq`.
async fn send(
    engine: &Engine,
    queue: &str,
    partition: PartitionId,
    producer: ProducerIdentity,
    seq: i32,
    n: usize,
) -> Result<i64, StorageError> {
    let records = marked(producer, crate::producers::records(n));
    send_records(engine, queue, partition, producer, seq, records).await
}

/// Appends `records` as a transactional batch at sequence `seq`.
pub(crate) async fn send_records(
    engine: &Engine,
    queue: &str,
    partition: PartitionId,
    producer: ProducerIdentity,
    seq: i32,
    records: Vec<Record>,
) -> Result<i64, StorageError> {
    let batch = ProducerBatch {
        producer_id: producer.id,
        epoch: producer.epoch,
        base_sequence: seq,
        transactional: true,
    };
    engine
        .start_append(queue, partition, records, Some(batch))
        .await?
        .offset()
        .await
}

/// A transactional producer writing to one partition.
pub(crate) struct Writer<'a> {
    engine: &'a Engine,
    queue: &'a str,
    partition: PartitionId,
    tid: &'a str,
    pub me: ProducerIdentity,
    seq: i32,
}

impl<'a> Writer<'a> {
    pub(crate) async fn new(
        engine: &'a Engine,
        queue: &'a str,
        partition: PartitionId,
        tid: &'a str,
    ) -> Self {
        let me = engine
            .init_transactional_producer(tid, 60_000, None)
            .await
            .expect("init");
        Self {
            engine,
            queue,
            partition,
            tid,
            me,
            seq: 0,
        }
    }

    /// Sends `records` in the ongoing transaction (started if need be);
    /// returns the offset of the first.
    pub(crate) async fn send(&mut self, records: Vec<Record>) -> i64 {
        self.engine
            .add_partitions_to_txn(self.tid, self.me, &[self.partition], false)
            .await
            .expect("added");
        let n = records.len() as i32;
        let offset = send_records(
            self.engine,
            self.queue,
            self.partition,
            self.me,
            self.seq,
            marked(self.me, records),
        )
        .await
        .expect("sent");
        self.seq += n;
        offset
    }

    pub(crate) async fn end(&self, commit: bool) {
        self.engine
            .end_txn(self.tid, self.me, commit)
            .await
            .expect("ended");
    }
}

/// The marker stored at `offset`, if a marker is stored there.
async fn marker_at(engine: &Engine, partition: PartitionId, offset: i64) -> Option<Marker> {
    let read = read_messages(engine, partition, offset, 1, 1 << 20)
        .await
        .expect("read");
    match &read.first()?.record.content {
        Content::Kafka(k) if read[0].offset == offset => k.txn.and_then(|t| t.marker),
        _ => None,
    }
}

async fn stable(engine: &Engine, partition: PartitionId) -> (i64, i64) {
    let bounds = engine.log_bounds(partition).await.expect("bounds");
    (bounds.last_stable, bounds.next_offset)
}

pub(crate) async fn markers_end_transactions_and_move_the_stable_offset(db: &Db) {
    let engine = db.engine().await;
    let a = one_partition_topic(&engine, "txn-a").await;
    let b = one_partition_topic(&engine, "txn-b").await;
    let me = engine
        .init_transactional_producer("app", 60_000, None)
        .await
        .expect("init");
    engine
        .add_partitions_to_txn("app", me, &[a, b], false)
        .await
        .expect("added");
    assert_eq!(send(&engine, "txn-a", a, me, 0, 2).await.expect("a"), 0);
    assert_eq!(send(&engine, "txn-b", b, me, 0, 1).await.expect("b"), 0);
    assert_eq!(
        stable(&engine, a).await,
        (0, 2),
        "open: LSO at its first record"
    );
    let restarted = db.engine().await;
    assert_eq!(stable(&restarted, a).await, (0, 2), "kept in the database");
    let row = restarted
        .kafka_transaction("app")
        .await
        .expect("row")
        .expect("known");
    assert_eq!(row.state, TxnState::Ongoing);
    assert!(row.started_at.is_some());

    restarted.end_txn("app", me, true).await.expect("commit");
    assert_eq!(stable(&engine, a).await, (3, 3), "marker at 2");
    assert_eq!(stable(&engine, b).await, (2, 2), "marker at 1");
    assert_eq!(marker_at(&engine, a, 2).await, Some(Marker::Commit));
    assert_eq!(marker_at(&engine, b, 1).await, Some(Marker::Commit));
    assert_eq!(
        engine.end_txn("app", me, true).await.ok(),
        Some(()),
        "a retried commit answers success"
    );
    assert_eq!(stable(&engine, a).await, (3, 3), "and writes nothing");

    engine
        .add_partitions_to_txn("app", me, &[a], false)
        .await
        .expect("added");
    assert_eq!(send(&engine, "txn-a", a, me, 2, 2).await.expect("a"), 3);
    engine.end_txn("app", me, false).await.expect("abort");
    assert_eq!(marker_at(&engine, a, 5).await, Some(Marker::Abort));
    assert_eq!(stable(&engine, a).await, (6, 6));
    assert_eq!(
        engine.aborted_transactions(a, 0, 6).await.expect("aborted"),
        [AbortedTxn {
            producer_id: me.id,
            first_offset: 3
        }]
    );
    assert!(
        engine
            .aborted_transactions(a, 6, 10)
            .await
            .expect("aborted")
            .is_empty(),
        "only ranges overlapping the read"
    );
    assert!(engine
        .aborted_transactions(b, 0, 10)
        .await
        .expect("aborted")
        .is_empty());
}

pub(crate) async fn a_new_producer_aborts_and_fences_the_old_one(db: &Db) {
    let engine = db.engine().await;
    let a = one_partition_topic(&engine, "fence").await;
    let old = engine
        .init_transactional_producer("app", 60_000, None)
        .await
        .expect("init");
    engine
        .add_partitions_to_txn("app", old, &[a], false)
        .await
        .expect("added");
    send(&engine, "fence", a, old, 0, 2).await.expect("sent");

    let new = engine
        .init_transactional_producer("app", 30_000, None)
        .await
        .expect("init again");
    assert_eq!((new.id, new.epoch), (old.id, old.epoch + 1));
    assert_eq!(marker_at(&engine, a, 2).await, Some(Marker::Abort));
    assert_eq!(stable(&engine, a).await, (3, 3));
    let row = engine
        .kafka_transaction("app")
        .await
        .expect("row")
        .expect("known");
    assert_eq!((row.state, row.timeout_ms), (TxnState::Empty, 30_000));

    let fenced = |r: Result<(), StorageError>| {
        matches!(r, Err(StorageError::Transaction(TxnError::ProducerFenced)))
    };
    assert!(fenced(
        engine
            .add_partitions_to_txn("app", old, &[a], false)
            .await
            .map(|_| ())
    ));
    assert!(fenced(engine.end_txn("app", old, true).await));
    assert!(fenced(
        send(&engine, "fence", a, old, 2, 1).await.map(|_| ())
    ));
    assert!(fenced(
        engine
            .init_transactional_producer("app", 30_000, Some(old))
            .await
            .map(|_| ())
    ));
    assert_eq!(stable(&engine, a).await, (3, 3), "nothing written");
}

pub(crate) async fn refused_requests_change_nothing(db: &Db) {
    let engine = db.engine().await;
    let a = one_partition_topic(&engine, "quiet").await;
    let b = one_partition_topic(&engine, "other").await;
    let stranger = ProducerIdentity { id: 999, epoch: 0 };
    let mapping = |r: Result<(), StorageError>| {
        matches!(
            r,
            Err(StorageError::Transaction(
                TxnError::InvalidProducerIdMapping
            ))
        )
    };
    assert!(mapping(engine.end_txn("nobody", stranger, true).await));
    assert!(mapping(
        engine
            .add_partitions_to_txn("nobody", stranger, &[a], false)
            .await
            .map(|_| ())
    ));
    assert!(mapping(
        send(&engine, "quiet", a, stranger, 0, 1).await.map(|_| ())
    ));

    let me = engine
        .init_transactional_producer("app", 60_000, None)
        .await
        .expect("init");
    assert!(mapping(
        engine
            .add_partitions_to_txn("app", stranger, &[a], false)
            .await
            .map(|_| ())
    ));
    assert!(matches!(
        engine.end_txn("app", me, true).await,
        Err(StorageError::Transaction(TxnError::InvalidState(
            TxnState::Empty
        )))
    ));
    assert!(matches!(
        send(&engine, "quiet", a, me, 0, 1).await,
        Err(StorageError::Transaction(TxnError::InvalidState(_)))
    ));
    engine
        .add_partitions_to_txn("app", me, &[b], false)
        .await
        .expect("added");
    assert!(matches!(
        send(&engine, "quiet", a, me, 0, 1).await,
        Err(StorageError::Transaction(TxnError::PartitionNotAdded))
    ));
    assert_eq!(
        engine
            .add_partitions_to_txn("app", me, &[a, b], true)
            .await
            .expect("verified"),
        [false, true],
        "verify_only answers and adds nothing"
    );
    assert_eq!(stable(&engine, a).await, (0, 0), "nothing written");
    engine.end_txn("app", me, false).await.expect("abort");
    assert!(matches!(
        engine.end_txn("app", me, true).await,
        Err(StorageError::Transaction(TxnError::InvalidState(
            TxnState::CompleteAbort
        )))
    ));
}

pub(crate) async fn offsets_become_visible_on_commit_only(db: &Db) {
    let engine = db.engine().await;
    let input = one_partition_topic(&engine, "input").await;
    let me = engine
        .init_transactional_producer("pipe", 60_000, None)
        .await
        .expect("init");
    let at = |offset| {
        vec![(
            input,
            CommittedOffset {
                offset,
                metadata: Some("m".into()),
                leader_epoch: None,
            },
        )]
    };
    assert!(matches!(
        engine.txn_offset_commit("pipe", me, "g", &at(7)).await,
        Err(StorageError::Transaction(TxnError::InvalidState(
            TxnState::Empty
        )))
    ));
    engine
        .add_offsets_to_txn("pipe", me, "g")
        .await
        .expect("group added");
    engine
        .txn_offset_commit("pipe", me, "g", &at(7))
        .await
        .expect("staged");
    assert!(engine
        .committed_offsets("g")
        .await
        .expect("offsets")
        .is_empty());
    assert_eq!(
        engine.pending_txn_offsets("g").await.expect("pending"),
        [("input".to_owned(), 0)]
    );
    engine.end_txn("pipe", me, true).await.expect("commit");
    let committed = engine.committed_offsets("g").await.expect("offsets");
    assert_eq!(committed.len(), 1);
    assert_eq!(committed[0].committed.offset, 7);
    assert_eq!(committed[0].committed.metadata.as_deref(), Some("m"));
    assert!(engine
        .pending_txn_offsets("g")
        .await
        .expect("pending")
        .is_empty());

    engine
        .add_offsets_to_txn("pipe", me, "g")
        .await
        .expect("group added");
    engine
        .txn_offset_commit("pipe", me, "g", &at(9))
        .await
        .expect("staged");
    engine.end_txn("pipe", me, false).await.expect("abort");
    let committed = engine.committed_offsets("g").await.expect("offsets");
    assert_eq!(committed[0].committed.offset, 7, "dropped with the abort");
    assert!(engine
        .pending_txn_offsets("g")
        .await
        .expect("pending")
        .is_empty());
}

pub(crate) async fn a_transaction_past_its_timeout_is_aborted_and_fenced(db: &Db) {
    let engine = db.engine().await;
    let a = one_partition_topic(&engine, "slow").await;
    let me = engine
        .init_transactional_producer("slow-app", 10_000, None)
        .await
        .expect("init");
    engine
        .add_partitions_to_txn("slow-app", me, &[a], false)
        .await
        .expect("added");
    send(&engine, "slow", a, me, 0, 2).await.expect("sent");
    db.clock.advance_ms(10_000);
    assert_eq!(
        engine.abort_expired_transactions(100).await.expect("swept"),
        0,
        "not past its timeout yet"
    );
    db.clock.advance_ms(1);
    // Another broker's engine sweeps it: the state is in the database.
    let other = db.engine().await;
    assert_eq!(
        other.abort_expired_transactions(100).await.expect("swept"),
        1
    );
    assert_eq!(
        engine.abort_expired_transactions(100).await.expect("swept"),
        0,
        "once"
    );
    assert_eq!(marker_at(&engine, a, 2).await, Some(Marker::Abort));
    assert_eq!(stable(&engine, a).await, (3, 3));
    let row = engine
        .kafka_transaction("slow-app")
        .await
        .expect("row")
        .expect("known");
    assert_eq!(
        (row.state, row.producer_id, row.epoch),
        (TxnState::CompleteAbort, me.id, me.epoch + 1),
        "aborted, and the producer fenced"
    );
    assert!(matches!(
        engine.end_txn("slow-app", me, true).await,
        Err(StorageError::Transaction(TxnError::ProducerFenced))
    ));
}
