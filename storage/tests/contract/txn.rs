//! Transactions: pushes, acks and KV together, all or nothing, with every
//! rollback reason and the races that must commit exactly once.

use serde_json::json;
use storage::{
    AckItem, AckStatus, Engine, KvExpiry, KvOp, KvRequest, PartitionId, PopRequest, PushStatus,
    StorageError, TxnOp, TxnOpResult, TxnOutcome, TxnRequest, TxnRollback,
};

use crate::kv::{once, req};
use crate::push::{json_item, push_one};
use crate::support::Db;

const GROUP: &str = "workers";

fn push_op(queue: &str, txn: &str) -> TxnOp {
    TxnOp::Push(json_item(queue, "p", Some(txn), r#"{"out":1}"#))
}

fn ack_op(txn: &str, partition_id: PartitionId, lease: Option<&str>) -> TxnOp {
    TxnOp::Ack {
        group: GROUP.to_owned(),
        item: AckItem {
            transaction_id: txn.to_owned(),
            partition_id,
            status: AckStatus::Completed,
            error: None,
            lease_id: lease.map(str::to_owned),
        },
    }
}

/// Pushes `input` to queue "in" and pops it for the group: (partition id, lease).
async fn leased(engine: &Engine, input: &str) -> (PartitionId, String) {
    push_one(engine, "in", "p", Some(input)).await;
    let popped = engine
        .pop(&PopRequest {
            group: GROUP.to_owned(),
            lease_seconds: Some(30),
            ..PopRequest::new("in", 10)
        })
        .await
        .expect("pop");
    let m = popped
        .messages
        .iter()
        .find(|m| m.record.transaction_id() == input)
        .expect("popped the input");
    (m.partition_id, m.lease_id.clone())
}

async fn stored(engine: &Engine, queue: &str) -> usize {
    engine.read(queue, "p", 0, 1000).await.expect("read").len()
}

async fn kv_exists(engine: &Engine, ns: &str, key: &str) -> bool {
    crate::kv::run(engine, vec![req(ns, KvOp::Get { key: key.into() })])
        .await
        .iter()
        .any(|r| matches!(r, storage::KvResult::Get { entry: Some(_), .. }))
}

async fn txn(engine: &Engine, request: TxnRequest) -> TxnOutcome {
    engine.transaction(request).await.expect("transaction")
}

/// The pipeline step: ack the input, push its output, gate on `once`.
fn step(input: &str, partition_id: PartitionId, lease: &str) -> TxnRequest {
    TxnRequest {
        operations: vec![
            ack_op(input, partition_id, Some(lease)),
            push_op("out", &format!("out-{input}")),
        ],
        required_leases: vec![lease.to_owned()],
        kv: vec![once("done", input, 3600)],
    }
}

pub(crate) async fn txn_commits_acks_pushes_and_kv_together(db: &Db) {
    let engine = db.engine().await;
    let (pid, lease) = leased(&engine, "m-0").await;
    let TxnOutcome::Committed { operations, kv } = txn(&engine, step("m-0", pid, &lease)).await
    else {
        panic!("must commit");
    };
    assert_eq!(operations.len(), 2);
    assert!(matches!(&operations[0], TxnOpResult::Ack(a) if a.success()));
    let TxnOpResult::Push(pushed) = &operations[1] else {
        panic!("push result");
    };
    assert_eq!(pushed.status, PushStatus::Queued);
    assert_eq!(pushed.transaction_id, "out-m-0");
    assert_eq!(kv.len(), 1);
    assert!(crate::kv::write(&kv[0]).0);
    assert_eq!(stored(&engine, "out").await, 1);
    assert!(kv_exists(&engine, "done", "m-0").await);
    // The ack applied: nothing is left to pop for the group.
    let again = engine
        .pop(&PopRequest {
            group: GROUP.to_owned(),
            ..PopRequest::new("in", 10)
        })
        .await
        .expect("pop");
    assert!(again.messages.is_empty());

    // Running the same step again changes nothing: its push id rolls it back.
    let outcome = txn(&engine, step("m-0", pid, &lease)).await;
    assert!(
        matches!(
            outcome,
            TxnOutcome::RolledBack(TxnRollback::Duplicate { index: 1, .. })
        ),
        "{outcome:?}"
    );
    assert_eq!(stored(&engine, "out").await, 1);
}

pub(crate) async fn txn_duplicate_push_rolls_back_acks_and_kv(db: &Db) {
    let engine = db.engine().await;
    push_one(&engine, "out", "p", Some("out-m-1")).await;
    let (pid, lease) = leased(&engine, "m-1").await;
    let outcome = txn(&engine, step("m-1", pid, &lease)).await;
    let TxnOutcome::RolledBack(TxnRollback::Duplicate {
        index,
        queue,
        offset,
        ..
    }) = outcome
    else {
        panic!("must roll back as duplicate: {outcome:?}");
    };
    assert_eq!((index, queue.as_str(), offset), (1, "out", 0));
    assert!(
        !kv_exists(&engine, "done", "m-1").await,
        "the marker rolled back"
    );
    assert_eq!(stored(&engine, "out").await, 1);
    // The ack rolled back too: the lease still holds the message.
    let acked = engine
        .ack(
            GROUP,
            vec![AckItem {
                transaction_id: "m-1".into(),
                partition_id: pid,
                status: AckStatus::Completed,
                error: None,
                lease_id: Some(lease),
            }],
        )
        .await
        .expect("ack");
    assert!(acked[0].success() && !acked[0].noop, "{acked:?}");
}

pub(crate) async fn txn_repeated_id_inside_is_stored_once_and_commits(db: &Db) {
    let engine = db.engine().await;
    let outcome = txn(
        &engine,
        TxnRequest {
            operations: vec![
                push_op("out", "same"),
                push_op("out", "same"),
                push_op("out", "other"),
            ],
            ..TxnRequest::default()
        },
    )
    .await;
    let TxnOutcome::Committed { operations, .. } = outcome else {
        panic!("must commit: {outcome:?}");
    };
    let pushes: Vec<_> = operations
        .iter()
        .map(|o| match o {
            TxnOpResult::Push(p) => p.clone(),
            TxnOpResult::Ack(_) => panic!("no acks here"),
        })
        .collect();
    assert_eq!(pushes[0].status, PushStatus::Queued);
    assert_eq!(pushes[1].status, PushStatus::Duplicate);
    assert_eq!(pushes[1].message_id, pushes[0].message_id);
    assert_eq!(pushes[2].offset, 1);
    assert_eq!(stored(&engine, "out").await, 2);
}

pub(crate) async fn txn_ack_on_an_expired_lease_rolls_back_its_pushes(db: &Db) {
    let engine = db.engine().await;
    let (pid, lease) = leased(&engine, "m-2").await;
    db.clock.advance_ms(31_000);
    let outcome = txn(&engine, step("m-2", pid, &lease)).await;
    assert!(
        matches!(
            outcome,
            TxnOutcome::RolledBack(TxnRollback::RejectedAck { index: 0, .. })
        ),
        "{outcome:?}"
    );
    assert_eq!(stored(&engine, "out").await, 0, "the push rolled back");
    assert!(!kv_exists(&engine, "done", "m-2").await);
    // An ack of an unknown message is refused the same way.
    let outcome = txn(
        &engine,
        TxnRequest {
            operations: vec![push_op("out", "x"), ack_op("nope", pid, None)],
            ..TxnRequest::default()
        },
    )
    .await;
    assert!(
        matches!(
            outcome,
            TxnOutcome::RolledBack(TxnRollback::RejectedAck { index: 1, .. })
        ),
        "{outcome:?}"
    );
    assert_eq!(stored(&engine, "out").await, 0);
}

pub(crate) async fn txn_lease_less_ack_borrows_the_single_lease(db: &Db) {
    let engine = db.engine().await;
    let (pid, lease) = leased(&engine, "m-3").await;
    // Two distinct leases named: nothing to borrow, so the ack is judged
    // without one; a wrong lease is refused.
    let outcome = txn(
        &engine,
        TxnRequest {
            operations: vec![ack_op("m-3", pid, Some("not-the-lease"))],
            required_leases: vec![lease.clone()],
            kv: vec![],
        },
    )
    .await;
    assert!(matches!(
        outcome,
        TxnOutcome::RolledBack(TxnRollback::RejectedAck { .. })
    ));
    let outcome = txn(
        &engine,
        TxnRequest {
            operations: vec![ack_op("m-3", pid, None)],
            required_leases: vec![lease.clone()],
            kv: vec![],
        },
    )
    .await;
    let TxnOutcome::Committed { operations, .. } = outcome else {
        panic!("must commit: {outcome:?}");
    };
    assert!(matches!(&operations[0], TxnOpResult::Ack(a) if a.lease_released));
}

pub(crate) async fn txn_kv_precondition_rolls_back_everything(db: &Db) {
    let engine = db.engine().await;
    crate::kv::run(&engine, vec![once("done", "m-4", 60)]).await;
    let (pid, lease) = leased(&engine, "m-4").await;
    let mut request = step("m-4", pid, &lease);
    request.kv.insert(
        0,
        req(
            "side",
            KvOp::Put {
                key: "effect".into(),
                value: json!(1),
                expiry: KvExpiry::Forever,
                expect: None,
            },
        ),
    );
    let outcome = txn(&engine, request).await;
    let TxnOutcome::RolledBack(TxnRollback::KvPrecondition(failed)) = outcome else {
        panic!("must roll back on the gate: {outcome:?}");
    };
    assert_eq!(failed.index, 3, "flat index: 2 operations, then kv op 1");
    assert_eq!(failed.reason, storage::KvReason::Exists);
    assert_eq!(failed.value, json!(true));
    assert_eq!(stored(&engine, "out").await, 0);
    assert!(!kv_exists(&engine, "side", "effect").await);
}

pub(crate) async fn txn_invalid_bundles_are_refused(db: &Db) {
    let engine = db.engine().await;
    let e = engine
        .transaction(TxnRequest::default())
        .await
        .expect_err("empty");
    assert!(matches!(e, StorageError::InvalidInput(_)), "{e:?}");
    let e = engine
        .transaction(TxnRequest {
            kv: vec![KvRequest {
                ns: "n".into(),
                op: KvOp::GetPrefix {
                    prefix: "a".into(),
                    after: None,
                    limit: 10,
                    keys_only: false,
                },
                required: false,
            }],
            ..TxnRequest::default()
        })
        .await
        .expect_err("getPrefix");
    assert!(matches!(e, StorageError::KvBadRequest { .. }), "{e:?}");
    let e = engine
        .transaction(TxnRequest {
            operations: vec![TxnOp::Push(json_item("", "p", None, "1"))],
            ..TxnRequest::default()
        })
        .await
        .expect_err("bad queue");
    assert!(matches!(e, StorageError::InvalidInput(_)), "{e:?}");
}

pub(crate) async fn txn_twenty_concurrent_once_gates_commit_once(db: &Db) {
    let engines = [db.engine().await, db.engine().await];
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..20 {
        let engine = engines[i % 2].clone();
        tasks.spawn(async move {
            let request = TxnRequest {
                operations: vec![push_op(&format!("out-{}", i % 3), &format!("unique-{i}"))],
                required_leases: vec![],
                kv: vec![once("gate", "the-one", 3600)],
            };
            engine.transaction(request).await.expect("transaction")
        });
    }
    let outcomes = tasks.join_all().await;
    let committed = outcomes
        .iter()
        .filter(|o| matches!(o, TxnOutcome::Committed { .. }))
        .count();
    assert_eq!(committed, 1, "exactly one gate wins");
    for o in &outcomes {
        assert!(matches!(
            o,
            TxnOutcome::Committed { .. } | TxnOutcome::RolledBack(TxnRollback::KvPrecondition(_))
        ));
    }
    let mut total = 0;
    for q in 0..3 {
        total += stored(&engines[0], &format!("out-{q}")).await;
    }
    assert_eq!(total, 1, "only the winner's push is stored");
}

pub(crate) async fn txn_twenty_concurrent_same_push_id_commit_once(db: &Db) {
    let engines = [db.engine().await, db.engine().await];
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..20 {
        let engine = engines[i % 2].clone();
        tasks.spawn(async move {
            let request = TxnRequest {
                operations: vec![push_op("out", "deterministic")],
                required_leases: vec![],
                kv: vec![req(
                    "effects",
                    KvOp::Put {
                        key: format!("k-{i}"),
                        value: json!(i),
                        expiry: KvExpiry::Forever,
                        expect: None,
                    },
                )],
            };
            (i, engine.transaction(request).await.expect("transaction"))
        });
    }
    let outcomes = tasks.join_all().await;
    let winners: Vec<usize> = outcomes
        .iter()
        .filter(|(_, o)| matches!(o, TxnOutcome::Committed { .. }))
        .map(|(i, _)| *i)
        .collect();
    assert_eq!(winners.len(), 1, "exactly one commits");
    for (_, o) in &outcomes {
        assert!(matches!(
            o,
            TxnOutcome::Committed { .. } | TxnOutcome::RolledBack(TxnRollback::Duplicate { .. })
        ));
    }
    assert_eq!(stored(&engines[0], "out").await, 1);
    for i in 0..20 {
        assert_eq!(
            kv_exists(&engines[1], "effects", &format!("k-{i}")).await,
            i == winners[0],
            "only the winner's KV write is applied"
        );
    }
}

pub(crate) async fn txn_push_wakes_a_waiting_pop(db: &Db) {
    let engine = db.engine().await;
    engine
        .configure_queue("woken", &storage::QueueOptions::default())
        .await
        .expect("configure");
    let waiter = {
        let engine = engine.clone();
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            let popped = engine
                .pop(&PopRequest {
                    wait: Some(std::time::Duration::from_secs(20)),
                    ..PopRequest::new("woken", 10)
                })
                .await
                .expect("pop");
            (popped, started.elapsed())
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let request = TxnRequest {
        operations: vec![TxnOp::Push(json_item("woken", "Default", Some("w-1"), "1"))],
        ..TxnRequest::default()
    };
    assert!(matches!(
        txn(&engine, request).await,
        TxnOutcome::Committed { .. }
    ));
    let (popped, waited) = waiter.await.expect("waiter");
    assert_eq!(popped.messages.len(), 1);
    assert!(
        waited < std::time::Duration::from_secs(10),
        "woken by the commit, not the timeout: {waited:?}"
    );
}
