//! At-rest encryption: the payloads of a queue with `encryptionEnabled`
//! are sealed in every table that holds them (segments, dead letters) and
//! read back in clear on every path (pop, read by offset, dedup, message
//! lookup, dead letters, compaction); a broker without the key, or with
//! another one, refuses those queues rather than answer ciphertext; a
//! rotated key reads what the retired one sealed and seals it again.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use storage::sealing::{Keyring, PayloadKey, SealError};
use storage::{
    AckStatus, Content, Engine, PopRequest, PushStatus, QueueOptions, StorageError,
    QUEUE_MODE_GROUP,
};

use crate::consume::{ack, acks, dead_letters, pop, push_n, txns};
use crate::push::json_item;
use crate::retention::{compact, compacted_topic, keyed, values};
use crate::support::Db;

/// What the encrypted queue holds: never to be found in the database.
const SECRET: &str = "sealed-payload-7f3a";

/// What a queue in clear holds: found there, so the search can find.
const CLEAR: &str = "clear-payload-51c9";

fn key(byte: u8) -> PayloadKey {
    PayloadKey::new([byte; 32])
}

fn encrypted() -> QueueOptions {
    QueueOptions {
        encryption_enabled: true,
        ..QueueOptions::default()
    }
}

fn payload(i: usize) -> String {
    format!("{{\"data\":\"{SECRET}-{i}\"}}")
}

fn json_of(content: &Content) -> &str {
    match content {
        Content::Json(j) => j,
        Content::Kafka(_) => panic!("a native message"),
    }
}

/// Every stored payload blob, in any table that holds one.
async fn stored_blobs(db: &Db) -> Vec<Vec<u8>> {
    let mut blobs = db.blobs("SELECT records FROM segments").await;
    blobs.extend(db.blobs("SELECT record FROM dead_letters").await);
    blobs
}

fn holds(blobs: &[Vec<u8>], text: &str) -> bool {
    blobs
        .iter()
        .any(|b| b.windows(text.len()).any(|w| w == text.as_bytes()))
}

async fn push_secrets(engine: &Engine, n: usize) {
    push_secrets_from(engine, 0, n).await;
}

/// Pushes `n` secrets numbered from `first`.
async fn push_secrets_from(engine: &Engine, first: usize, n: usize) {
    let items = (first..first + n)
        .map(|i| json_item("secret", "p", Some(&format!("s-{i}")), &payload(i)))
        .collect();
    let out = engine.push(items).await.expect("push");
    assert!(out.iter().all(|o| o.status == PushStatus::Queued));
}

pub(crate) async fn encrypted_payloads_are_sealed_at_rest_and_read_in_clear(db: &Db) {
    let engine = db.engine_with_key(Some(&key(1))).await;
    engine
        .configure_queue("secret", &encrypted())
        .await
        .expect("configure");
    push_secrets(&engine, 3).await;
    let clear = json_item("clear", "p", None, &format!("{{\"data\":\"{CLEAR}\"}}"));
    engine.push(vec![clear]).await.expect("push in clear");

    // A duplicate is recognised: dedup reads the sealed original.
    let again = json_item("secret", "p", Some("s-1"), &payload(1));
    let dup = engine.push(vec![again]).await.expect("push again");
    assert_eq!(dup[0].status, PushStatus::Duplicate);

    // Popped in clear; one message dead-lettered, its payload kept sealed.
    let held = pop(&engine, "secret", "g", 10).await;
    let popped: Vec<&str> = held
        .messages
        .iter()
        .map(|m| json_of(&m.record.content))
        .collect();
    assert_eq!(popped, [payload(0), payload(1), payload(2)]);
    let mut items = acks(&held, AckStatus::Completed);
    items[1].status = AckStatus::Dlq;
    assert!(ack(&engine, "g", items).await.iter().all(|r| r.success()));
    let letters = dead_letters(&engine, "secret").await;
    assert_eq!(json_of(&letters.letters[0].record.content), payload(1));

    // Read by offset (the Kafka door's path) and looked up by id, in clear.
    let read = engine.read("secret", "p", 0, 10).await.expect("read");
    assert_eq!(read.len(), 3);
    assert_eq!(json_of(&read[2].record.content), payload(2));
    let partition_id = held.messages[0].partition_id;
    for txn in ["s-1", "s-2"] {
        let found = engine
            .message(partition_id, txn)
            .await
            .expect("lookup")
            .expect("found");
        assert!(json_of(&found.record.content).contains(SECRET), "{txn}");
    }

    let blobs = stored_blobs(db).await;
    assert!(holds(&blobs, CLEAR), "the search finds a payload in clear");
    assert!(
        !holds(&blobs, SECRET),
        "no encrypted payload is stored in clear"
    );
}

pub(crate) async fn compaction_keeps_sealed_segments_sealed(db: &Db) {
    let engine = db.engine_with_key(Some(&key(1))).await;
    let id = compacted_topic(&engine, "c", &[("cleanup.policy", "compact")]).await;
    engine
        .update_options("c", |o| {
            Ok::<_, std::convert::Infallible>(QueueOptions {
                encryption_enabled: true,
                ..o.clone()
            })
        })
        .await
        .expect("encrypt");
    let value = |i: usize| format!("{SECRET}-{i}");
    for i in 0..4 {
        let records = vec![
            keyed(Some("k"), Some(&value(i))),
            keyed(Some("j"), Some(&value(i))),
        ];
        engine
            .append_records("c", id, records)
            .await
            .expect("append");
    }
    db.clock.advance_ms(1_000);
    compact(&engine).await;
    let left = values(&engine, id, 0).await;
    assert_eq!(left, [(6, Some(value(3))), (7, Some(value(3)))]);
    assert!(!holds(&stored_blobs(db).await, SECRET));
}

pub(crate) async fn a_broker_without_the_key_refuses_encrypted_queues(db: &Db) {
    let keyed_engine = db.engine_with_key(Some(&key(1))).await;
    keyed_engine
        .configure_queue("secret", &encrypted())
        .await
        .expect("configure");
    push_secrets(&keyed_engine, 2).await;
    let clear = json_item("clear", "p", None, r#"{"n":1}"#);
    keyed_engine.push(vec![clear]).await.expect("push in clear");

    let keyless = db.engine().await;
    let no_key =
        |r: Result<_, StorageError>| matches!(r, Err(StorageError::Sealed(SealError::NoKey)));
    assert!(no_key(keyless.read("secret", "p", 0, 10).await.map(drop)));
    let request = storage::PopRequest::new("secret", 10);
    assert!(no_key(keyless.pop(&request).await.map(drop)));
    let push = json_item("secret", "p", Some("s-9"), &payload(9));
    assert!(no_key(keyless.push(vec![push]).await.map(drop)));
    assert!(no_key(
        keyless
            .configure_queue("other", &encrypted())
            .await
            .map(drop)
    ));
    assert!(keyless.queue("other").await.expect("queue").is_none());
    // Other queues are served as ever.
    assert_eq!(
        keyless.read("clear", "p", 0, 10).await.expect("read").len(),
        1
    );

    let wrong = db.engine_with_key(Some(&key(2))).await;
    let read = wrong.read("secret", "p", 0, 10).await;
    assert!(
        matches!(read, Err(StorageError::Sealed(SealError::WrongKey { .. }))),
        "{read:?}"
    );
    // Nothing the refusals touched changed what is stored.
    assert_eq!(
        keyed_engine
            .read("secret", "p", 0, 10)
            .await
            .expect("read")
            .len(),
        2
    );
}

/// The key id a sealed blob names (bytes 1..5), as [`PayloadKey::id`] shows it.
fn sealed_with(blob: &[u8]) -> String {
    blob[1..5].iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) async fn a_rotated_key_reads_old_payloads_and_reseals_them(db: &Db) {
    let (old, new) = (key(1), key(2));
    let before = db.engine_with_key(Some(&old)).await;
    before
        .configure_queue("secret", &encrypted())
        .await
        .expect("configure");
    push_secrets(&before, 3).await;
    let held = pop(&before, "secret", "g", 1).await;
    let mut items = acks(&held, AckStatus::Completed);
    items[0].status = AckStatus::Dlq;
    assert!(ack(&before, "g", items).await.iter().all(|r| r.success()));
    let clear = json_item("clear", "p", None, &format!("{{\"data\":\"{CLEAR}\"}}"));
    before.push(vec![clear]).await.expect("push in clear");

    // The rotated broker reads what the old key sealed, seals with the new.
    let rotated = db
        .engine_with_keys(&Keyring::new(Some(new.clone()), vec![old.clone()]))
        .await;
    push_secrets_from(&rotated, 3, 1).await;
    let read = rotated.read("secret", "p", 0, 10).await.expect("read");
    let payloads: Vec<&str> = read.iter().map(|m| json_of(&m.record.content)).collect();
    assert_eq!(payloads, [payload(0), payload(1), payload(2), payload(3)]);
    let sealed: Vec<String> = stored_blobs(db)
        .await
        .iter()
        .filter(|b| !holds(&[b.to_vec()], CLEAR))
        .map(|b| sealed_with(b))
        .collect();
    assert!(
        sealed.contains(&old.id()) && sealed.contains(&new.id()),
        "{sealed:?}"
    );

    let report = rotated.reseal(|_| {}).await.expect("reseal");
    // The old key's segment and dead letter; not the new key's segment nor
    // the queue in clear.
    assert_eq!((report.segments, report.dead_letters), (1, 1), "{report:?}");
    assert_eq!(report.changed_meanwhile, 0);
    assert_eq!(report.examined, 4);
    let blobs = stored_blobs(db).await;
    assert!(holds(&blobs, CLEAR), "the blob in clear is left in clear");
    for blob in blobs.iter().filter(|b| !holds(&[b.to_vec()], CLEAR)) {
        assert_eq!(sealed_with(blob), new.id());
    }
    assert!(!holds(&blobs, SECRET));
    let again = rotated.reseal(|_| {}).await.expect("reseal again");
    assert_eq!((again.segments, again.dead_letters), (0, 0));

    // The new key alone now opens everything; the old one alone nothing.
    let after = db.engine_with_key(Some(&new)).await;
    let read = after.read("secret", "p", 0, 10).await.expect("read");
    assert_eq!(read.len(), 4);
    let letters = dead_letters(&after, "secret").await;
    assert_eq!(json_of(&letters.letters[0].record.content), payload(0));
    let stale = before.read("secret", "p", 0, 10).await;
    assert!(
        matches!(stale, Err(StorageError::Sealed(SealError::WrongKey { .. }))),
        "{stale:?}"
    );
    // A rotation without a current key is refused.
    let keyless = db.engine().await;
    assert!(matches!(
        keyless.reseal(|_| {}).await,
        Err(StorageError::Sealed(SealError::NoKey))
    ));
}

/// Concurrent pops and acks share commits: a pop that fails (of an
/// encrypted queue, on a broker without the key) fails alone, and every pop
/// and ack committed beside it is served as if it had run by itself.
pub(crate) async fn a_refused_pop_fails_alone_among_concurrent_consumers(db: &Db) {
    let keyed = db.engine_with_key(Some(&key(1))).await;
    keyed
        .configure_queue("secret", &encrypted())
        .await
        .expect("configure");
    push_secrets(&keyed, 5).await;
    let keyless = db.engine().await;
    let (partitions, per_partition) = (8, 30);
    for p in 0..partitions {
        let name = format!("p{p}");
        push_n(&keyless, "clear", &name, p * per_partition, per_partition).await;
    }

    let refusals = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let (engine, refusals) = (keyless.clone(), refusals.clone());
        tasks.spawn(async move {
            for _ in 0..10 {
                match engine.pop(&PopRequest::new("secret", 10)).await {
                    Err(StorageError::Sealed(SealError::NoKey)) => {
                        refusals.fetch_add(1, Ordering::Relaxed);
                    }
                    // Another refused pop held the partition's lease row
                    // meanwhile (PostgreSQL's writers run side by side).
                    Ok(empty) if empty.messages.is_empty() => {}
                    other => panic!("{other:?}"),
                }
            }
            Vec::new()
        });
    }
    for _ in 0..6 {
        let engine = keyless.clone();
        tasks.spawn(async move {
            let (mut delivered, mut empty) = (Vec::new(), 0);
            while empty < 3 {
                let got = engine
                    .pop(&PopRequest::new("clear", 7))
                    .await
                    .expect("a pop beside a refused one");
                if got.messages.is_empty() {
                    empty += 1;
                    tokio::task::yield_now().await;
                    continue;
                }
                empty = 0;
                delivered.extend(txns(&got));
                let acked = ack(&engine, QUEUE_MODE_GROUP, acks(&got, AckStatus::Completed)).await;
                assert!(acked.iter().all(|a| a.success() && a.lease_released));
            }
            delivered
        });
    }
    let delivered: Vec<String> = tasks.join_all().await.into_iter().flatten().collect();
    assert!(refusals.load(Ordering::Relaxed) > 0);
    let unique: std::collections::HashSet<&String> = delivered.iter().collect();
    assert_eq!(delivered.len(), partitions * per_partition, "each once");
    assert_eq!(unique.len(), delivered.len(), "nothing twice");
    // The refused pops took nothing: the broker with the key pops it all.
    let out = pop(&keyed, "secret", QUEUE_MODE_GROUP, 10).await;
    assert_eq!(out.messages.len(), 5);
}
