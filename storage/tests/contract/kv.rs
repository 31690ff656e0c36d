//! The key/value store: every op, versions, preconditions, `required`,
//! TTL expiry on the test's clock, the sweep, validation and races.

use serde_json::{json, Value};
use storage::{Engine, KvExpiry, KvOp, KvOutcome, KvReason, KvRequest, KvResult, StorageError};

use crate::support::Db;

pub(crate) fn req(ns: &str, op: KvOp) -> KvRequest {
    KvRequest {
        ns: ns.to_owned(),
        op,
        required: false,
    }
}

pub(crate) fn put(key: &str, value: Value, expect: Option<i64>) -> KvOp {
    KvOp::Put {
        key: key.to_owned(),
        value,
        expiry: KvExpiry::Forever,
        expect,
    }
}

pub(crate) fn once(ns: &str, key: &str, ttl: i64) -> KvRequest {
    KvRequest {
        ns: ns.to_owned(),
        op: KvOp::PutIfAbsent {
            key: key.to_owned(),
            value: Value::Bool(true),
            expiry: KvExpiry::Ttl(ttl),
        },
        required: true,
    }
}

pub(crate) async fn run(engine: &Engine, ops: Vec<KvRequest>) -> Vec<KvResult> {
    match engine.kv(ops).await.expect("kv call") {
        KvOutcome::Done(results) => results,
        KvOutcome::Aborted(f) => panic!("unexpected abort: {f:?}"),
    }
}

pub(crate) async fn one(engine: &Engine, ns: &str, op: KvOp) -> KvResult {
    run(engine, vec![req(ns, op)]).await.remove(0)
}

/// (applied, reason, value, version) of a write result.
pub(crate) fn write(result: &KvResult) -> (bool, Option<KvReason>, Value, i64) {
    match result {
        KvResult::Write {
            applied,
            reason,
            value,
            version,
            ..
        } => (*applied, *reason, value.clone(), *version),
        other => panic!("not a write result: {other:?}"),
    }
}

async fn get(engine: &Engine, ns: &str, key: &str) -> Option<(Value, i64)> {
    match one(engine, ns, KvOp::Get { key: key.into() }).await {
        KvResult::Get { entry, .. } => entry.map(|e| (e.value.unwrap_or(Value::Null), e.version)),
        other => panic!("not a get: {other:?}"),
    }
}

pub(crate) async fn kv_writes_draw_versions_never_issued_again(db: &Db) {
    let engine = db.engine().await;
    let (applied, _, value, v1) = write(&one(&engine, "n", put("k", json!({"a": 1}), None)).await);
    assert!(applied);
    assert_eq!(value, json!({"a": 1}));
    assert!(v1 > 0);
    assert_eq!(get(&engine, "n", "k").await, Some((json!({"a": 1}), v1)));
    let (_, _, _, v2) = write(&one(&engine, "n", put("k", json!(null), None)).await);
    assert_ne!(v2, v1);
    // A stored null is found, with value null.
    assert_eq!(get(&engine, "n", "k").await, Some((Value::Null, v2)));
    let deleted = write(
        &one(
            &engine,
            "n",
            KvOp::Delete {
                key: "k".into(),
                expect: None,
            },
        )
        .await,
    );
    assert_eq!(deleted, (true, None, Value::Null, 0));
    assert_eq!(get(&engine, "n", "k").await, None);
    // Recreated after a delete, the key gets a version never seen before.
    let (applied, _, _, v3) = write(
        &one(
            &engine,
            "n",
            KvOp::PutIfAbsent {
                key: "k".into(),
                value: json!(3),
                expiry: KvExpiry::Forever,
            },
        )
        .await,
    );
    assert!(applied);
    assert!(v3 != v1 && v3 != v2);
    // Namespaces are separate.
    assert_eq!(get(&engine, "other", "k").await, None);
}

pub(crate) async fn kv_preconditions_answer_the_current_row(db: &Db) {
    let engine = db.engine().await;
    let (_, _, _, v) = write(&one(&engine, "n", put("k", json!("x"), None)).await);
    let pia = |key: &str| KvOp::PutIfAbsent {
        key: key.into(),
        value: json!(true),
        expiry: KvExpiry::Ttl(60),
    };
    assert_eq!(
        write(&one(&engine, "n", pia("k")).await),
        (false, Some(KvReason::Exists), json!("x"), v)
    );
    assert_eq!(
        write(&one(&engine, "n", put("k", json!(1), Some(0))).await),
        (false, Some(KvReason::Exists), json!("x"), v)
    );
    assert_eq!(
        write(&one(&engine, "n", put("k", json!(1), Some(v + 1000))).await),
        (false, Some(KvReason::Version), json!("x"), v)
    );
    assert_eq!(
        write(&one(&engine, "n", put("absent", json!(1), Some(5))).await),
        (false, Some(KvReason::Absent), Value::Null, 0)
    );
    let (applied, _, value, v2) = write(&one(&engine, "n", put("k", json!(1), Some(v))).await);
    assert!(applied && value == json!(1) && v2 != v);
    assert_eq!(
        write(
            &one(
                &engine,
                "n",
                KvOp::Delete {
                    key: "k".into(),
                    expect: Some(v)
                }
            )
            .await
        ),
        (false, Some(KvReason::Version), json!(1), v2)
    );
    assert_eq!(
        write(
            &one(
                &engine,
                "n",
                KvOp::Delete {
                    key: "nope".into(),
                    expect: None
                }
            )
            .await
        ),
        (false, Some(KvReason::Absent), Value::Null, 0)
    );
    // check writes nothing.
    assert_eq!(
        write(
            &one(
                &engine,
                "n",
                KvOp::Check {
                    key: "k".into(),
                    expect: v2
                }
            )
            .await
        ),
        (true, None, json!(1), v2)
    );
    assert_eq!(
        write(
            &one(
                &engine,
                "n",
                KvOp::Check {
                    key: "k".into(),
                    expect: 0
                }
            )
            .await
        ),
        (false, Some(KvReason::Exists), json!(1), v2)
    );
    assert_eq!(
        write(
            &one(
                &engine,
                "n",
                KvOp::Check {
                    key: "free".into(),
                    expect: 0
                }
            )
            .await
        ),
        (true, None, Value::Null, 0)
    );
    assert_eq!(get(&engine, "n", "k").await, Some((json!(1), v2)));

    // incr: absent counts 0; refused beyond min/max; not on a non-integer.
    let incr = |delta, min, max| KvOp::Incr {
        key: "c".into(),
        delta,
        min,
        max,
        expiry: KvExpiry::Forever,
    };
    let (applied, _, value, _) = write(&one(&engine, "n", incr(5, None, Some(6))).await);
    assert!(applied && value == json!(5));
    let (applied, reason, value, _) = write(&one(&engine, "n", incr(2, None, Some(6))).await);
    assert!(!applied && reason == Some(KvReason::Limit) && value == json!(5));
    let (applied, reason, _, _) = write(&one(&engine, "n", incr(-6, Some(0), None)).await);
    assert!(!applied && reason == Some(KvReason::Limit));
    let (applied, _, value, _) = write(&one(&engine, "n", incr(-5, Some(0), None)).await);
    assert!(applied && value == json!(0));
    write(&one(&engine, "n", put("s", json!("text"), None)).await);
    let not_int = KvOp::Incr {
        key: "s".into(),
        delta: 1,
        min: None,
        max: None,
        expiry: KvExpiry::Forever,
    };
    let (applied, reason, _, _) = write(&one(&engine, "n", not_int).await);
    assert!(!applied && reason == Some(KvReason::Type));
}

pub(crate) async fn kv_required_failure_applies_nothing(db: &Db) {
    let engine = db.engine().await;
    write(&one(&engine, "n", put("taken", json!(1), None)).await);
    let mut gate = once("n", "taken", 60);
    gate.ns = "n".into();
    let outcome = engine
        .kv(vec![req("n", put("first", json!("w"), None)), gate])
        .await
        .expect("kv");
    let KvOutcome::Aborted(failed) = outcome else {
        panic!("a required op that lost must abort: {outcome:?}");
    };
    assert_eq!(failed.index, 1);
    assert_eq!(failed.reason, KvReason::Exists);
    assert_eq!(failed.value, json!(1));
    assert!(failed.version > 0);
    assert_eq!(
        get(&engine, "n", "first").await,
        None,
        "the earlier op rolled back"
    );
    // A non-required op that loses only reports it.
    let results = run(
        &engine,
        vec![
            req("n", put("first", json!("w"), None)),
            req("n", put("taken", json!(2), Some(0))),
        ],
    )
    .await;
    assert!(write(&results[0]).0);
    assert_eq!(write(&results[1]).1, Some(KvReason::Exists));
}

pub(crate) async fn kv_reads_many_and_by_prefix(db: &Db) {
    let engine = db.engine().await;
    let ops = (0..5)
        .map(|i| req("p", put(&format!("user:{i}"), json!(i), None)))
        .chain([req("p", put("other", json!("o"), None))])
        .collect();
    run(&engine, ops).await;
    match one(
        &engine,
        "p",
        KvOp::GetMany {
            keys: vec!["user:1".into(), "nope".into(), "other".into()],
        },
    )
    .await
    {
        KvResult::Many { rows, missing } => {
            let keys: Vec<&str> = rows.iter().map(|r| r.key.as_str()).collect();
            assert_eq!(keys, ["user:1", "other"]);
            assert_eq!(missing, ["nope"]);
        }
        other => panic!("{other:?}"),
    }
    let page = |after: Option<&str>, keys_only| KvOp::GetPrefix {
        prefix: "user:".into(),
        after: after.map(str::to_owned),
        limit: 2,
        keys_only,
    };
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let KvResult::Prefix {
            rows,
            truncated,
            next_after,
        } = one(&engine, "p", page(after.as_deref(), seen.is_empty())).await
        else {
            panic!("not a prefix answer");
        };
        assert!(rows.len() <= 2);
        if seen.is_empty() {
            assert!(
                rows.iter().all(|r| r.value.is_none()),
                "keysOnly drops values"
            );
        }
        seen.extend(rows.into_iter().map(|r| r.key));
        if !truncated {
            assert_eq!(next_after, None);
            break;
        }
        after = next_after;
    }
    assert_eq!(seen, ["user:0", "user:1", "user:2", "user:3", "user:4"]);
}

pub(crate) async fn kv_expired_rows_vanish_at_once_and_are_swept(db: &Db) {
    let engine = db.engine().await;
    let ttl = |key: &str, s| KvOp::Put {
        key: key.into(),
        value: json!("v"),
        expiry: KvExpiry::Ttl(s),
        expect: None,
    };
    run(
        &engine,
        vec![req("t", ttl("a", 10)), req("t", ttl("b", 10))],
    )
    .await;
    let counter = KvOp::Incr {
        key: "c".into(),
        delta: 1,
        min: None,
        max: None,
        expiry: KvExpiry::Ttl(10),
    };
    write(&one(&engine, "t", counter.clone()).await);
    db.clock.advance_ms(9_999);
    assert!(get(&engine, "t", "a").await.is_some());
    // A live counter keeps its expiry (TTL applies only at creation).
    assert_eq!(write(&one(&engine, "t", counter.clone()).await).2, json!(2));
    db.clock.advance_ms(1);
    assert_eq!(
        get(&engine, "t", "a").await,
        None,
        "expired before any sweep"
    );
    // An expired row does not exist for preconditions either.
    let gate = KvOp::PutIfAbsent {
        key: "a".into(),
        value: json!(true),
        expiry: KvExpiry::Ttl(10),
    };
    assert!(write(&one(&engine, "t", gate).await).0);
    assert_eq!(
        write(&one(&engine, "t", counter).await).2,
        json!(1),
        "restarts at zero"
    );
    // The sweep removes only expired rows ("b"), in bounded steps.
    let mut swept = 0;
    loop {
        let n = engine.sweep_kv(1).await.expect("sweep");
        assert!(n <= 1);
        if n == 0 {
            break;
        }
        swept += n;
    }
    assert_eq!(swept, 1);
    assert!(get(&engine, "t", "a").await.is_some());
    assert!(get(&engine, "t", "c").await.is_some());
}

pub(crate) async fn kv_invalid_calls_are_refused(db: &Db) {
    let engine = db.engine().await;
    let refused = |ops: Vec<KvRequest>| {
        let engine = engine.clone();
        async move { engine.kv(ops).await.expect_err("must be refused") }
    };
    let e = refused(vec![req("", KvOp::Get { key: "k".into() })]).await;
    assert!(matches!(e, StorageError::KvBadRequest { .. }), "{e:?}");
    let e = refused(vec![req("n", KvOp::Get { key: "a\0b".into() })]).await;
    assert!(
        matches!(
            e,
            StorageError::KvBadRequest {
                reason: "kv_bad_key",
                ..
            }
        ),
        "{e:?}"
    );
    let e = refused(vec![req(
        "n",
        KvOp::Get {
            key: "k".repeat(513),
        },
    )])
    .await;
    assert!(
        matches!(
            e,
            StorageError::KvBadRequest {
                reason: "kv_bad_key",
                ..
            }
        ),
        "{e:?}"
    );
    let e = refused(vec![
        req("n", put("k", json!(1), None)),
        req(
            "n",
            KvOp::Delete {
                key: "k".into(),
                expect: None,
            },
        ),
    ])
    .await;
    assert!(
        matches!(
            e,
            StorageError::KvBadRequest {
                reason: "kv_duplicate_write",
                ..
            }
        ),
        "{e:?}"
    );
    let e = refused(vec![req("n", put("k", json!("x".repeat(70_000)), None))]).await;
    assert!(matches!(e, StorageError::KvValueTooLarge { .. }), "{e:?}");
    let e = refused(
        (0..257)
            .map(|i| req("n", KvOp::Get { key: i.to_string() }))
            .collect(),
    )
    .await;
    assert!(
        matches!(
            e,
            StorageError::KvBadRequest {
                reason: "kv_too_many_ops",
                ..
            }
        ),
        "{e:?}"
    );
    let e = refused(vec![req("n", KvOp::GetMany { keys: vec![] })]).await;
    assert!(matches!(e, StorageError::KvBadRequest { .. }), "{e:?}");
}

pub(crate) async fn kv_concurrent_put_if_absent_applies_once(db: &Db) {
    let engines = [db.engine().await, db.engine().await];
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..20 {
        let engine = engines[i % 2].clone();
        tasks.spawn(async move {
            let op = KvOp::PutIfAbsent {
                key: "gate".into(),
                value: json!(i),
                expiry: KvExpiry::Forever,
            };
            write(&one(&engine, "race", op).await)
        });
    }
    let results = tasks.join_all().await;
    let winners: Vec<_> = results.iter().filter(|r| r.0).collect();
    assert_eq!(winners.len(), 1, "exactly one putIfAbsent applies");
    let (_, _, value, version) = winners[0].clone();
    for loser in results.iter().filter(|r| !r.0) {
        assert_eq!(loser.1, Some(KvReason::Exists));
        assert_eq!(
            (loser.2.clone(), loser.3),
            (value.clone(), version),
            "losers see the winner"
        );
    }
}

pub(crate) async fn kv_sweeps_of_two_engines_keep_live_rows(db: &Db) {
    let engines = [db.engine().await, db.engine().await];
    let ops: Vec<KvRequest> = (0..200)
        .map(|i| {
            req(
                "sweep",
                KvOp::Put {
                    key: format!("k-{i:03}"),
                    value: json!(i),
                    expiry: if i % 2 == 0 {
                        KvExpiry::Ttl(1)
                    } else {
                        KvExpiry::Forever
                    },
                    expect: None,
                },
            )
        })
        .collect();
    run(&engines[0], ops).await;
    db.clock.advance_ms(1_000);
    let mut tasks = tokio::task::JoinSet::new();
    for engine in engines.clone() {
        tasks.spawn(async move {
            let mut swept = 0;
            loop {
                let n = engine.sweep_kv(7).await.expect("sweep");
                assert!(n <= 7, "a step is bounded");
                if n == 0 {
                    return swept;
                }
                swept += n;
            }
        });
    }
    let swept: u64 = tasks.join_all().await.into_iter().sum();
    assert_eq!(swept, 100, "each expired row swept once, by either engine");
    for i in (1..200).step_by(2) {
        assert!(get(&engines[1], "sweep", &format!("k-{i:03}"))
            .await
            .is_some());
    }
}
