//! Users of the Kafka door: SCRAM credentials per user and mechanism,
//! shared by every engine on the database, validated, listed and deleted;
//! and each broker's listeners as clients of one listener see them.

use storage::{ScramCredential, ScramMechanism, UserError};

use crate::support::Db;

fn credential(seed: u8, mechanism: ScramMechanism, iterations: i32) -> ScramCredential {
    ScramCredential {
        salt: vec![seed; 16],
        iterations,
        stored_key: vec![seed.wrapping_add(1); mechanism.key_len()],
        server_key: vec![seed.wrapping_add(2); mechanism.key_len()],
    }
}

pub(crate) async fn credentials_are_shared_replaced_and_deleted(db: &Db) {
    let (a, b) = (db.engine().await, db.engine().await);
    let alice256 = credential(1, ScramMechanism::Sha256, 4096);
    let alice512 = credential(2, ScramMechanism::Sha512, 8192);
    a.put_scram_credential("alice", ScramMechanism::Sha256, &alice256)
        .await
        .expect("put");
    a.put_scram_credential("alice", ScramMechanism::Sha512, &alice512)
        .await
        .expect("put");
    a.put_scram_credential(
        "bob",
        ScramMechanism::Sha256,
        &credential(3, ScramMechanism::Sha256, 4096),
    )
    .await
    .expect("put");
    assert_eq!(
        b.scram_credential("alice", ScramMechanism::Sha512)
            .await
            .expect("get"),
        Some(alice512.clone()),
        "another broker reads the same credential, bytes intact"
    );
    assert_eq!(
        b.scram_credential("carol", ScramMechanism::Sha256)
            .await
            .expect("get"),
        None
    );

    let replaced = credential(9, ScramMechanism::Sha256, 10_000);
    b.put_scram_credential("alice", ScramMechanism::Sha256, &replaced)
        .await
        .expect("replace");
    assert_eq!(
        a.scram_credential("alice", ScramMechanism::Sha256)
            .await
            .expect("get"),
        Some(replaced)
    );

    let users = a.users(None).await.expect("list");
    let listed: Vec<_> = users
        .iter()
        .map(|u| (u.name.as_str(), u.mechanisms.clone()))
        .collect();
    assert_eq!(
        listed,
        [
            (
                "alice",
                vec![
                    (ScramMechanism::Sha256, 10_000),
                    (ScramMechanism::Sha512, 8192)
                ]
            ),
            ("bob", vec![(ScramMechanism::Sha256, 4096)]),
        ]
    );
    let only_bob = a.users(Some(&["bob".to_owned()])).await.expect("list");
    assert_eq!(only_bob.len(), 1);
    assert_eq!(only_bob[0].name, "bob");

    assert!(a
        .delete_scram_credential("alice", ScramMechanism::Sha512)
        .await
        .expect("delete"));
    assert!(!a
        .delete_scram_credential("alice", ScramMechanism::Sha512)
        .await
        .expect("delete again"));
    assert!(b
        .scram_credential("alice", ScramMechanism::Sha512)
        .await
        .expect("get")
        .is_none());
    assert!(
        b.scram_credential("alice", ScramMechanism::Sha256)
            .await
            .expect("get")
            .is_some(),
        "the other mechanism is kept"
    );
    assert!(b.delete_user("alice").await.expect("delete user"));
    assert!(!b.delete_user("alice").await.expect("delete user again"));
    let names: Vec<_> = a
        .users(None)
        .await
        .expect("list")
        .into_iter()
        .map(|u| u.name)
        .collect();
    assert_eq!(names, ["bob"]);
}

pub(crate) async fn malformed_users_and_credentials_are_refused(db: &Db) {
    let engine = db.engine().await;
    let good = credential(1, ScramMechanism::Sha256, 4096);
    for name in ["", "a\nb", &"x".repeat(256)] {
        let refused = engine
            .put_scram_credential(name, ScramMechanism::Sha256, &good)
            .await;
        assert!(
            matches!(refused, Err(UserError::InvalidName(_))),
            "{name:?}: {refused:?}"
        );
    }
    let short_keys = credential(1, ScramMechanism::Sha256, 4096);
    let refused = engine
        .put_scram_credential("alice", ScramMechanism::Sha512, &short_keys)
        .await;
    assert!(
        matches!(refused, Err(UserError::InvalidCredential(_))),
        "SHA-256-sized keys for SCRAM-SHA-512: {refused:?}"
    );
    let mut no_salt = good.clone();
    no_salt.salt.clear();
    let mut no_iterations = good.clone();
    no_iterations.iterations = 0;
    for bad in [no_salt, no_iterations] {
        let refused = engine
            .put_scram_credential("alice", ScramMechanism::Sha256, &bad)
            .await;
        assert!(
            matches!(refused, Err(UserError::InvalidCredential(_))),
            "{refused:?}"
        );
    }
    assert!(
        engine.users(None).await.expect("list").is_empty(),
        "nothing refused was stored"
    );
}

pub(crate) async fn listeners_are_advertised_per_name(db: &Db) {
    let (a, b) = (db.engine().await, db.engine().await);
    let one = a.register_broker("10.0.0.1", 9092).await.expect("register");
    let two = b.register_broker("10.0.0.2", 9092).await.expect("register");
    a.register_listeners(
        one,
        &[
            ("PLAINTEXT".into(), "10.0.0.1".into(), 9092),
            ("SASL_SSL".into(), "kafka-1.example".into(), 9093),
        ],
    )
    .await
    .expect("listeners");
    b.register_listeners(two, &[("PLAINTEXT".into(), "10.0.0.2".into(), 9092)])
        .await
        .expect("listeners");
    let on = |brokers: Vec<storage::BrokerInfo>| {
        brokers
            .into_iter()
            .map(|b| (b.id, b.host, b.port))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        on(b.live_brokers_on(10_000, "SASL_SSL").await.expect("live")),
        [
            (one, "kafka-1.example".to_owned(), 9093),
            (two, "10.0.0.2".to_owned(), 9092)
        ],
        "a broker without the listener keeps its registered address"
    );
    // Re-registering replaces the listeners.
    a.register_listeners(one, &[("SASL_SSL".into(), "kafka-1.example".into(), 9094)])
        .await
        .expect("listeners");
    assert_eq!(
        on(a.live_brokers_on(10_000, "SASL_SSL").await.expect("live"))[0],
        (one, "kafka-1.example".to_owned(), 9094)
    );
    db.clock.advance_ms(20_000);
    b.broker_heartbeat(two).await.expect("heartbeat");
    assert_eq!(
        on(a.live_brokers_on(10_000, "PLAINTEXT").await.expect("live")),
        [(two, "10.0.0.2".to_owned(), 9092)],
        "a silent broker is not live on any listener"
    );
}
