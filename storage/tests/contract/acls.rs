//! Kafka ACLs: created once and seen by every engine on the database,
//! described and deleted by filter, refused when malformed; the authorizer
//! sees this engine's changes at once and another's once it refreshes.

use std::time::Duration;

use storage::{
    AclBinding, AclError, AclFilter, AclOperation, AclPermission, Authorizer, AuthorizerConfig,
    PatternFilter, PatternType, ResourceType,
};

use crate::support::Db;

fn binding(
    resource_type: ResourceType,
    name: &str,
    pattern: PatternType,
    principal: &str,
    operation: AclOperation,
    permission: AclPermission,
) -> AclBinding {
    AclBinding {
        resource_type,
        resource_name: name.into(),
        pattern,
        principal: principal.into(),
        host: "*".into(),
        operation,
        permission,
    }
}

fn samples() -> Vec<AclBinding> {
    use AclOperation::*;
    use AclPermission::*;
    use PatternType::*;
    use ResourceType::*;
    vec![
        binding(Topic, "orders", Literal, "User:alice", Write, Allow),
        binding(Topic, "orders-", Prefixed, "User:alice", Read, Allow),
        binding(Topic, "*", Literal, "User:bob", Read, Deny),
        binding(Group, "billing", Literal, "User:alice", Read, Allow),
        binding(Cluster, "kafka-cluster", Literal, "User:ops", Alter, Allow),
        binding(TransactionalId, "tx-", Prefixed, "User:*", Write, Allow),
    ]
}

pub(crate) async fn acls_are_shared_described_and_deleted_by_filter(db: &Db) {
    let (a, b) = (db.engine().await, db.engine().await);
    let before = b.acl_version().await.expect("version");
    a.create_acls(&samples()).await.expect("create");
    // Creating again changes nothing but is no error, as in Kafka.
    a.create_acls(&samples()[..1]).await.expect("create again");
    assert!(b.acl_version().await.expect("version") > before);
    let mut all = b.acls(&AclFilter::any()).await.expect("describe");
    all.sort();
    let mut want = samples();
    want.sort();
    assert_eq!(all, want, "another engine reads every binding, once");

    let topics = AclFilter {
        resource_type: Some(ResourceType::Topic),
        ..AclFilter::any()
    };
    assert_eq!(b.acls(&topics).await.expect("describe").len(), 3);
    // MATCH: what applies to topic "orders-eu": its prefix and the wildcard.
    let applying = AclFilter {
        resource_type: Some(ResourceType::Topic),
        resource_name: Some("orders-eu".into()),
        pattern: PatternFilter::Match,
        ..AclFilter::any()
    };
    let mut names: Vec<String> = b
        .acls(&applying)
        .await
        .expect("describe")
        .into_iter()
        .map(|b| b.resource_name)
        .collect();
    names.sort();
    assert_eq!(names, ["*", "orders-"]);
    let literal_only = AclFilter {
        pattern: PatternFilter::Exactly(PatternType::Literal),
        principal: Some("User:alice".into()),
        ..AclFilter::any()
    };
    assert_eq!(b.acls(&literal_only).await.expect("describe").len(), 2);

    let version = a.acl_version().await.expect("version");
    let deleted = b
        .delete_acls(&[
            AclFilter {
                principal: Some("User:alice".into()),
                operation: Some(AclOperation::Read),
                ..AclFilter::any()
            },
            AclFilter {
                resource_type: Some(ResourceType::Group),
                ..AclFilter::any()
            },
        ])
        .await
        .expect("delete");
    assert_eq!(deleted[0].len(), 2, "alice's READ on orders- and billing");
    assert_eq!(deleted[1].len(), 1, "the group binding, listed again");
    assert!(a.acl_version().await.expect("version") > version);
    assert_eq!(a.acls(&AclFilter::any()).await.expect("describe").len(), 4);

    let version = a.acl_version().await.expect("version");
    let none = a
        .delete_acls(&[AclFilter {
            principal: Some("User:nobody".into()),
            ..AclFilter::any()
        }])
        .await
        .expect("delete nothing");
    assert_eq!(none, vec![Vec::<AclBinding>::new()]);
    assert_eq!(
        a.acl_version().await.expect("version"),
        version,
        "deleting nothing is no change"
    );
}

pub(crate) async fn malformed_acls_are_refused_and_change_nothing(db: &Db) {
    let engine = db.engine().await;
    let good = &samples()[0];
    let bad = [
        AclBinding {
            resource_name: String::new(),
            ..good.clone()
        },
        AclBinding {
            principal: "alice".into(),
            ..good.clone()
        },
        AclBinding {
            host: String::new(),
            ..good.clone()
        },
        AclBinding {
            resource_type: ResourceType::Cluster,
            resource_name: "other".into(),
            ..good.clone()
        },
        AclBinding {
            resource_name: "*".into(),
            pattern: PatternType::Prefixed,
            ..good.clone()
        },
        AclBinding {
            principal: "User:a\nb".into(),
            ..good.clone()
        },
    ];
    for b in bad {
        let refused = engine.create_acls(&[good.clone(), b.clone()]).await;
        assert!(
            matches!(refused, Err(AclError::Invalid(_))),
            "{b:?}: {refused:?}"
        );
    }
    assert!(
        engine
            .acls(&AclFilter::any())
            .await
            .expect("describe")
            .is_empty(),
        "a refused request stores none of its bindings"
    );
}

pub(crate) async fn the_authorizer_sees_changes_of_every_broker(db: &Db) {
    let (a, b) = (db.engine().await, db.engine().await);
    let config = |refresh| AuthorizerConfig {
        enabled: true,
        super_users: vec!["User:admin".into()],
        refresh,
        ..AuthorizerConfig::default()
    };
    // A long interval: only this authorizer's own changes are seen at once.
    let mine = Authorizer::new(a, config(Duration::from_secs(3600)));
    let other = Authorizer::new(b, config(Duration::ZERO));
    let read =
        |access: &storage::Access| access.allows(AclOperation::Read, ResourceType::Topic, "orders");

    assert!(
        !read(&mine.access("User:alice", "/127.0.0.1").await),
        "no ACL: denied"
    );
    assert!(
        read(&mine.access("User:admin", "/127.0.0.1").await),
        "super user"
    );
    assert!(!read(&other.access("User:alice", "/127.0.0.1").await));

    let allow = binding(
        ResourceType::Topic,
        "orders",
        PatternType::Literal,
        "User:alice",
        AclOperation::Read,
        AclPermission::Allow,
    );
    mine.create(std::slice::from_ref(&allow))
        .await
        .expect("create");
    assert!(
        read(&mine.access("User:alice", "/127.0.0.1").await),
        "own change: at once"
    );
    assert!(
        read(&other.access("User:alice", "/127.0.0.1").await),
        "another broker's, after a refresh"
    );
    assert!(!read(&other.access("User:bob", "/127.0.0.1").await));

    other
        .delete(&[AclFilter {
            principal: Some("User:alice".into()),
            ..AclFilter::any()
        }])
        .await
        .expect("delete");
    assert!(!read(&other.access("User:alice", "/127.0.0.1").await));
    assert!(
        read(&mine.access("User:alice", "/127.0.0.1").await),
        "within its hour, the first authorizer still decides by its cache"
    );

    let off = Authorizer::new(db.engine().await, AuthorizerConfig::default());
    assert!(
        read(&off.access("User:anyone", "/10.0.0.1").await),
        "off: everything is allowed"
    );
}

pub(crate) async fn everyone_is_allowed_where_no_acl_is_found_if_configured(db: &Db) {
    use AclOperation::*;
    let engine = db.engine().await;
    let open = Authorizer::new(
        engine.clone(),
        AuthorizerConfig {
            enabled: true,
            allow_if_no_acl: true,
            ..AuthorizerConfig::default()
        },
    );
    let strict = Authorizer::new(
        engine,
        AuthorizerConfig {
            enabled: true,
            ..AuthorizerConfig::default()
        },
    );
    let bob = open.access("User:bob", "/127.0.0.1").await;
    assert!(
        bob.allows(Write, ResourceType::Topic, "orders"),
        "no ACL names it"
    );
    assert!(bob.allows_any(Write, ResourceType::Topic));
    let strict_bob = strict.access("User:bob", "/127.0.0.1").await;
    assert!(
        !strict_bob.allows(Write, ResourceType::Topic, "orders"),
        "off by default"
    );

    // An ACL of another principal and operation names the topic: from
    // then on only the bindings decide, for it and what its prefix covers.
    open.create(&[binding(
        ResourceType::Topic,
        "ord",
        PatternType::Prefixed,
        "User:alice",
        Read,
        AclPermission::Allow,
    )])
    .await
    .expect("create");
    let bob = open.access("User:bob", "/127.0.0.1").await;
    assert!(!bob.allows(Write, ResourceType::Topic, "orders"));
    assert!(!bob.allows(Describe, ResourceType::Topic, "orders"));
    assert!(
        bob.allows(Write, ResourceType::Topic, "payments"),
        "still unnamed"
    );
    assert!(
        bob.allows(Read, ResourceType::Group, "billing"),
        "other types too"
    );
    let alice = open.access("User:alice", "/127.0.0.1").await;
    assert!(alice.allows(Read, ResourceType::Topic, "orders"));
    assert!(!alice.allows(Write, ResourceType::Topic, "orders"));

    // A binding naming every topic leaves no topic unnamed.
    open.create(&[binding(
        ResourceType::Topic,
        "*",
        PatternType::Literal,
        "User:alice",
        Write,
        AclPermission::Allow,
    )])
    .await
    .expect("create");
    let bob = open.access("User:bob", "/127.0.0.1").await;
    assert!(!bob.allows(Write, ResourceType::Topic, "payments"));
    assert!(!bob.allows_any(Write, ResourceType::Topic));
}
