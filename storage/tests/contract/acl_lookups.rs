//! What the HTTP door's authorization reads before a request runs: the
//! queue of a partition id, the queues and groups of a lease id, and a
//! pop by namespace that only considers the queues the caller may READ.

use storage::{
    AclBinding, AclOperation, AclPermission, Authorizer, AuthorizerConfig, Engine, PartitionId,
    PatternType, PopRequest, QueueOptions, ResourceType,
};

use crate::consume::{push_n, txns};
use crate::support::Db;

async fn in_namespace(engine: &Engine, queue: &str, priority: i64) {
    let options = QueueOptions {
        namespace: "ns".into(),
        priority,
        ..QueueOptions::default()
    };
    engine
        .configure_queue(queue, &options)
        .await
        .expect("configure");
}

fn by_namespace(group: &str) -> PopRequest {
    PopRequest {
        group: group.to_owned(),
        max_partitions: 10,
        ..PopRequest::new("", 100)
    }
}

pub(crate) async fn partition_and_lease_ids_name_their_queues_and_groups(db: &Db) {
    let engine = db.engine().await;
    for queue in ["a", "b"] {
        in_namespace(&engine, queue, 0).await;
        push_n(&engine, queue, "p", 0, 2).await;
    }
    let popped = engine
        .pop_matching(
            Some("ns"),
            None,
            &by_namespace("g"),
            &storage::Access::everything(),
        )
        .await
        .expect("pop");
    assert_eq!(popped.messages.len(), 4, "both queues, one lease");
    let mut holders = engine
        .lease_holders(&popped.lease_id)
        .await
        .expect("holders");
    holders.sort();
    assert_eq!(
        holders,
        [
            ("a".to_owned(), "g".to_owned()),
            ("b".to_owned(), "g".to_owned())
        ]
    );
    assert_eq!(
        engine
            .lease_holders("no-such-lease")
            .await
            .expect("holders"),
        []
    );
    for m in &popped.messages {
        assert_eq!(
            engine
                .partition_queue(m.partition_id)
                .await
                .expect("lookup")
                .as_deref(),
            Some(m.queue.as_str())
        );
    }
    let unknown: PartitionId = "987654321".parse().expect("id");
    assert_eq!(engine.partition_queue(unknown).await.expect("lookup"), None);
}

pub(crate) async fn a_pop_by_namespace_considers_only_readable_queues(db: &Db) {
    let engine = db.engine().await;
    // The secret queue comes first by priority: only the ACL keeps it out.
    in_namespace(&engine, "open", 0).await;
    in_namespace(&engine, "secret", 9).await;
    push_n(&engine, "open", "p", 0, 2).await;
    push_n(&engine, "secret", "p", 10, 2).await;
    let authorizer = Authorizer::new(
        engine.clone(),
        AuthorizerConfig {
            enabled: true,
            ..AuthorizerConfig::default()
        },
    );
    authorizer
        .create(&[AclBinding {
            resource_type: ResourceType::Topic,
            resource_name: "open".into(),
            pattern: PatternType::Literal,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: AclOperation::Read,
            permission: AclPermission::Allow,
        }])
        .await
        .expect("grant");
    let alice = authorizer.access("User:alice", "127.0.0.1").await;
    let popped = engine
        .pop_matching(Some("ns"), None, &by_namespace("g"), &alice)
        .await
        .expect("pop");
    assert_eq!(txns(&popped), ["m-0", "m-1"], "the readable queue only");
    let bob = authorizer.access("User:bob", "127.0.0.1").await;
    let nothing = engine
        .pop_matching(Some("ns"), None, &by_namespace("h"), &bob)
        .await
        .expect("pop");
    assert!(
        nothing.messages.is_empty(),
        "nothing readable, nothing leased"
    );
    // The secret queue's messages are untouched in both groups.
    for group in ["g", "h"] {
        let rest = engine
            .pop_matching(
                Some("ns"),
                None,
                &by_namespace(group),
                &storage::Access::everything(),
            )
            .await
            .expect("pop");
        assert!(
            txns(&rest).starts_with(&["m-10".to_owned(), "m-11".to_owned()]),
            "{group}: {:?}",
            txns(&rest)
        );
    }
}
