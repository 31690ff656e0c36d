//! Every string a client sends round-trips byte for byte on both backends,
//! NUL included (PostgreSQL's TEXT refuses it). Names (queues, groups, KV
//! namespaces and keys) refuse NUL on both backends alike.

use serde_json::json;
use storage::producers::ProducerIdentity;
use storage::{AckStatus, KvOp, KvResult, StorageError};

use crate::consume::{ack, acks, dead_letters, pop, txns};
use crate::kv::{one, put, req};
use crate::push::push_one;
use crate::support::Db;

const NUL: &str = "nul\0 and \u{1} and ünï";

pub(crate) async fn strings_with_nul_round_trip(db: &Db) {
    let engine = db.engine().await;

    // A transaction id: stored, deduplicated, delivered, dead-lettered.
    let first = push_one(&engine, "q", "p", Some(NUL)).await;
    let again = push_one(&engine, "q", "p", Some(NUL)).await;
    assert_eq!(again.message_id, first.message_id, "a duplicate");
    let held = pop(&engine, "q", "g", 10).await;
    assert_eq!(txns(&held), vec![NUL.to_owned()]);
    let mut items = acks(&held, AckStatus::Dlq);
    items[0].error = Some(NUL.to_owned());
    assert!(ack(&engine, "g", items).await[0].success());
    let page = dead_letters(&engine, "q").await;
    assert_eq!(page.letters[0].record.transaction_id(), NUL);
    assert_eq!(page.letters[0].error_message.as_deref(), Some(NUL));

    // A KV value; NUL in a namespace or key is refused on both backends.
    one(&engine, "ns", put("k", json!({ "v": NUL }), None)).await;
    match one(&engine, "ns", KvOp::Get { key: "k".into() }).await {
        KvResult::Get { entry, .. } => {
            assert_eq!(entry.expect("stored").value, Some(json!({ "v": NUL })));
        }
        other => panic!("not a get: {other:?}"),
    }
    let refused = engine.kv(vec![req("ns", put(NUL, json!(1), None))]).await;
    assert!(
        matches!(refused, Err(StorageError::KvBadRequest { .. })),
        "{refused:?}"
    );

    // A Kafka transactional id keeps its producer id across inits.
    let ProducerIdentity { id, epoch } = engine
        .init_producer_id(Some(NUL), None)
        .await
        .expect("init");
    let again = engine
        .init_producer_id(Some(NUL), None)
        .await
        .expect("init");
    assert_eq!((again.id, again.epoch), (id, epoch + 1));
}
