//! Consumption: pops, leases, acks, retries, dead letters, groups,
//! subscriptions and seeks. Time moves with the test's clock, never sleeps.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use storage::PartitionId;
use storage::{
    AckItem, AckRefusal, AckResult, AckStatus, DeadLetterPage, DeadLetterQuery, Engine, PopOutcome,
    PopRequest, QueueOptions, SubscriptionMode, QUEUE_MODE_GROUP,
};

use crate::push::json_item;
use crate::support::Db;

pub(crate) async fn push_n(engine: &Engine, queue: &str, partition: &str, from: usize, n: usize) {
    let items = (from..from + n)
        .map(|i| {
            json_item(
                queue,
                partition,
                Some(&format!("m-{i}")),
                &format!("{{\"n\":{i}}}"),
            )
        })
        .collect();
    engine.push(items).await.expect("push");
}

async fn configure(engine: &Engine, queue: &str, options: QueueOptions) {
    engine
        .configure_queue(queue, &options)
        .await
        .expect("configure");
}

fn request(queue: &str, group: &str, batch: usize) -> PopRequest {
    PopRequest {
        group: group.to_owned(),
        ..PopRequest::new(queue, batch)
    }
}

pub(crate) async fn pop(engine: &Engine, queue: &str, group: &str, batch: usize) -> PopOutcome {
    engine
        .pop(&request(queue, group, batch))
        .await
        .expect("pop")
}

pub(crate) fn txns(outcome: &PopOutcome) -> Vec<String> {
    outcome
        .messages
        .iter()
        .map(|m| m.record.transaction_id())
        .collect()
}

fn names(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("m-{i}")).collect()
}

pub(crate) fn acks(outcome: &PopOutcome, status: AckStatus) -> Vec<AckItem> {
    outcome
        .messages
        .iter()
        .map(|m| AckItem {
            transaction_id: m.record.transaction_id(),
            partition_id: m.partition_id,
            status,
            error: Some("boom".into()),
            lease_id: Some(m.lease_id.clone()),
        })
        .collect()
}

/// The first page of a queue's dead letters, all groups.
pub(crate) async fn dead_letters(engine: &Engine, queue: &str) -> DeadLetterPage {
    engine
        .dead_letters(&DeadLetterQuery {
            queue: queue.into(),
            limit: 10,
            ..DeadLetterQuery::default()
        })
        .await
        .expect("dead letters")
}

pub(crate) async fn ack(engine: &Engine, group: &str, items: Vec<AckItem>) -> Vec<AckResult> {
    engine.ack(group, items).await.expect("ack")
}

pub(crate) async fn pop_and_ack_in_order(db: &Db) {
    let engine = db.engine().await;
    push_n(&engine, "q", "p", 0, 10).await;
    let first = pop(&engine, "q", QUEUE_MODE_GROUP, 4).await;
    assert_eq!(txns(&first), names(0..4));
    assert_eq!(first.partitions_claimed, 1);
    assert!(!first.lease_id.is_empty());
    let offsets: Vec<i64> = first.messages.iter().map(|m| m.offset).collect();
    assert_eq!(offsets, [0, 1, 2, 3]);
    assert!(first.messages.iter().all(|m| m.delivery_attempt == 1
        && m.lease_id == first.lease_id
        && m.queue == "q"
        && m.partition == "p"
        && m.created_at_ms == crate::support::START_MS));

    let results = ack(
        &engine,
        QUEUE_MODE_GROUP,
        acks(&first, AckStatus::Completed),
    )
    .await;
    assert!(results
        .iter()
        .all(|r| r.success() && r.lease_released && !r.noop));
    let second = pop(&engine, "q", QUEUE_MODE_GROUP, 100).await;
    assert_eq!(txns(&second), names(4..10));
    assert_ne!(second.lease_id, first.lease_id);
    ack(
        &engine,
        QUEUE_MODE_GROUP,
        acks(&second, AckStatus::Completed),
    )
    .await;
    assert!(pop(&engine, "q", QUEUE_MODE_GROUP, 100)
        .await
        .messages
        .is_empty());

    // The position is stored with Kafka semantics: the next offset to consume.
    let positions = engine
        .consumer_positions(Some(QUEUE_MODE_GROUP), Some("q"))
        .await
        .expect("positions");
    assert_eq!(positions.len(), 1);
    assert_eq!(positions[0].committed_offset, 10);
    assert_eq!(positions[0].lag(), 0);
}

pub(crate) async fn a_partition_is_leased_to_one_consumer_at_a_time(db: &Db) {
    let engine = db.engine().await;
    push_n(&engine, "q", "a", 0, 3).await;
    let held = pop(&engine, "q", QUEUE_MODE_GROUP, 1).await;
    assert_eq!(txns(&held), names(0..1));
    // The rest of partition a stays with the holder until its lease ends.
    assert!(pop(&engine, "q", QUEUE_MODE_GROUP, 10)
        .await
        .messages
        .is_empty());
    // Another group is not affected by that lease.
    assert_eq!(txns(&pop(&engine, "q", "other", 10).await), names(0..3));
    // Another partition is free for a second consumer.
    push_n(&engine, "q", "b", 100, 2).await;
    let second = pop(&engine, "q", QUEUE_MODE_GROUP, 10).await;
    assert_eq!(txns(&second), names(100..102));
    // The partition route only ever claims its partition.
    let mut one = request("q", "third", 10);
    one.partition = Some("b".into());
    let only_b = engine.pop(&one).await.expect("pop");
    assert_eq!(txns(&only_b), names(100..102));
}

pub(crate) async fn an_expired_lease_is_redelivered_with_the_next_attempt(db: &Db) {
    let engine = db.engine().await;
    configure(
        &engine,
        "q",
        QueueOptions {
            lease_time: 10,
            ..QueueOptions::default()
        },
    )
    .await;
    push_n(&engine, "q", "p", 0, 4).await;
    let first = pop(&engine, "q", QUEUE_MODE_GROUP, 4).await;
    // Part of the span is acknowledged before the lease runs out.
    let partial = ack(
        &engine,
        QUEUE_MODE_GROUP,
        acks(&first, AckStatus::Completed)[..1].to_vec(),
    )
    .await;
    assert!(partial[0].success() && !partial[0].lease_released);
    db.clock.advance_ms(9_999);
    assert!(pop(&engine, "q", QUEUE_MODE_GROUP, 4)
        .await
        .messages
        .is_empty());
    db.clock.advance_ms(1);
    let again = pop(&engine, "q", QUEUE_MODE_GROUP, 4).await;
    assert_eq!(txns(&again), names(1..4), "redelivered from the cursor");
    assert!(again.messages.iter().all(|m| m.delivery_attempt == 2));
    // The expired lease can no longer acknowledge.
    let late = ack(
        &engine,
        QUEUE_MODE_GROUP,
        acks(&first, AckStatus::Completed)[1..].to_vec(),
    )
    .await;
    assert!(late
        .iter()
        .all(|r| r.refusal == Some(AckRefusal::InvalidLease)));
    db.clock.advance_ms(10_000);
    let third = pop(&engine, "q", QUEUE_MODE_GROUP, 4).await;
    assert!(third.messages.iter().all(|m| m.delivery_attempt == 3));
    ack(
        &engine,
        QUEUE_MODE_GROUP,
        acks(&third, AckStatus::Completed),
    )
    .await;
    push_n(&engine, "q", "p", 4, 1).await;
    let fresh = pop(&engine, "q", QUEUE_MODE_GROUP, 4).await;
    assert_eq!(fresh.messages[0].delivery_attempt, 1);
}

pub(crate) async fn a_partial_ack_keeps_the_lease(db: &Db) {
    let engine = db.engine().await;
    push_n(&engine, "q", "p", 0, 4).await;
    let held = pop(&engine, "q", QUEUE_MODE_GROUP, 4).await;
    let items = acks(&held, AckStatus::Completed);
    // Acking the third message completes the two before it (cumulative).
    let r = ack(&engine, QUEUE_MODE_GROUP, vec![items[2].clone()]).await;
    assert!(r[0].success() && !r[0].lease_released);
    assert!(pop(&engine, "q", QUEUE_MODE_GROUP, 4)
        .await
        .messages
        .is_empty());
    // A repeat below the cursor is a no-op, not an error.
    let r = ack(&engine, QUEUE_MODE_GROUP, vec![items[0].clone()]).await;
    assert!(r[0].success() && r[0].noop);
    let r = ack(&engine, QUEUE_MODE_GROUP, vec![items[3].clone()]).await;
    assert!(r[0].success() && r[0].lease_released);
    // Repeating it after the release is still recognised as a repeat.
    let r = ack(&engine, QUEUE_MODE_GROUP, vec![items[3].clone()]).await;
    assert!(r[0].success() && r[0].noop, "{r:?}");
}

pub(crate) async fn failed_acks_retry_then_dead_letter(db: &Db) {
    let engine = db.engine().await;
    configure(
        &engine,
        "q",
        QueueOptions {
            retry_limit: 2,
            retry_delay: 1500,
            ..QueueOptions::default()
        },
    )
    .await;
    push_n(&engine, "q", "p", 0, 3).await;
    for attempt in 1..=3 {
        if attempt > 1 {
            // A failed partition rests for retryDelay before it is redelivered.
            db.clock.advance_ms(1499);
            assert!(
                pop(&engine, "q", QUEUE_MODE_GROUP, 10)
                    .await
                    .messages
                    .is_empty(),
                "still resting"
            );
            db.clock.advance_ms(1);
        }
        let held = pop(&engine, "q", QUEUE_MODE_GROUP, 10).await;
        assert_eq!(txns(&held), names(0..3), "attempt {attempt}");
        assert_eq!(held.messages[0].delivery_attempt, attempt);
        assert_eq!(held.messages[0].retry_count, attempt - 1);
        // The first message fails, the second succeeds: the lowest signal wins.
        let mut items = acks(&held, AckStatus::Completed);
        items[0].status = AckStatus::Failed;
        items[0].error = Some(format!("boom {attempt}"));
        let r = ack(&engine, QUEUE_MODE_GROUP, items).await;
        assert!(r.iter().all(AckResult::success));
        assert!(r[0].lease_released);
        assert_eq!(r[0].dlq, attempt == 3, "attempt {attempt}");
    }
    let after = pop(&engine, "q", QUEUE_MODE_GROUP, 10).await;
    assert_eq!(txns(&after), names(1..3), "the dead letter was skipped");
    let page = dead_letters(&engine, "q").await;
    assert_eq!(page.total, 1);
    let letter = &page.letters[0];
    assert_eq!(letter.record.transaction_id(), "m-0");
    assert_eq!(letter.error_message.as_deref(), Some("boom 3"));
    assert_eq!(letter.retry_count, 2);
    assert_eq!(letter.group, QUEUE_MODE_GROUP);
    assert_eq!(letter.offset, 0);
    // Other groups are unaffected by this group's dead letter.
    assert_eq!(txns(&pop(&engine, "q", "g", 10).await), names(0..3));
}

pub(crate) async fn retry_does_not_charge_the_budget(db: &Db) {
    let engine = db.engine().await;
    configure(
        &engine,
        "q",
        QueueOptions {
            retry_limit: 0,
            ..QueueOptions::default()
        },
    )
    .await;
    push_n(&engine, "q", "p", 0, 2).await;
    for attempt in 1..=3 {
        let held = pop(&engine, "q", QUEUE_MODE_GROUP, 10).await;
        assert_eq!(txns(&held), names(0..2));
        assert_eq!(held.messages[0].delivery_attempt, attempt);
        let r = ack(&engine, QUEUE_MODE_GROUP, acks(&held, AckStatus::Retry)).await;
        assert!(r.iter().all(|r| r.success() && !r.dlq && r.lease_released));
    }
    // With a budget of 0 the first `failed` dead-letters at once.
    let held = pop(&engine, "q", QUEUE_MODE_GROUP, 1).await;
    let r = ack(&engine, QUEUE_MODE_GROUP, acks(&held, AckStatus::Failed)).await;
    assert!(r[0].dlq);
}

pub(crate) async fn dlq_status_dead_letters_at_once(db: &Db) {
    let engine = db.engine().await;
    push_n(&engine, "q", "p", 0, 3).await;
    let held = pop(&engine, "q", "g", 10).await;
    let mut items = acks(&held, AckStatus::Completed);
    items[1].status = AckStatus::Dlq;
    items[1].error = Some("malformed".into());
    let r = ack(&engine, "g", items).await;
    assert!(r.iter().all(AckResult::success));
    assert!(r[1].dlq && !r[0].dlq && !r[2].dlq);
    assert!(r[1].lease_released);
    // The completed prefix is kept; the message after the dead letter comes back.
    assert_eq!(txns(&pop(&engine, "q", "g", 10).await), names(2..3));
    let page = engine
        .dead_letters(&DeadLetterQuery {
            queue: "q".into(),
            group: Some("g".into()),
            limit: 10,
            ..DeadLetterQuery::default()
        })
        .await
        .expect("dead letters");
    assert_eq!(page.total, 1);
    assert_eq!(page.letters[0].record.transaction_id(), "m-1");
    assert_eq!(page.letters[0].error_message.as_deref(), Some("malformed"));
}

pub(crate) async fn unresolvable_acks_change_nothing(db: &Db) {
    let engine = db.engine().await;
    push_n(&engine, "q", "p", 0, 3).await;
    let held = pop(&engine, "q", QUEUE_MODE_GROUP, 2).await;
    let pid = held.messages[0].partition_id;
    let lease = Some(held.lease_id.clone());
    let item = |txn: &str, status, lease: Option<String>, pid| AckItem {
        transaction_id: txn.to_owned(),
        partition_id: pid,
        status,
        error: None,
        lease_id: lease,
    };
    let r = ack(
        &engine,
        QUEUE_MODE_GROUP,
        vec![
            item("unknown", AckStatus::Completed, lease.clone(), pid),
            // Stored, but not delivered under this lease.
            item("m-2", AckStatus::Completed, lease.clone(), pid),
            item("m-0", AckStatus::Completed, Some("not-a-lease".into()), pid),
            item(
                "m-0",
                AckStatus::Completed,
                lease.clone(),
                PartitionId::new(999_999),
            ),
        ],
    )
    .await;
    assert_eq!(r[0].refusal, Some(AckRefusal::Unresolvable));
    assert_eq!(r[1].refusal, Some(AckRefusal::Unresolvable));
    assert_eq!(r[2].refusal, Some(AckRefusal::InvalidLease));
    assert_eq!(
        r[3].refusal,
        Some(AckRefusal::NoPartition(PartitionId::new(999_999)))
    );
    assert_eq!(
        r[0].refusal.as_ref().map(ToString::to_string).as_deref(),
        Some("transaction is unresolvable, already committed, or acknowledgment is stale")
    );
    // Nothing moved: the lease still covers both messages.
    let r = ack(
        &engine,
        QUEUE_MODE_GROUP,
        vec![item("m-0", AckStatus::Completed, lease.clone(), pid)],
    )
    .await;
    assert!(r[0].success() && !r[0].noop && !r[0].lease_released);
    // A failure signal below the cursor is stale.
    let r = ack(
        &engine,
        QUEUE_MODE_GROUP,
        vec![item("m-0", AckStatus::Failed, lease.clone(), pid)],
    )
    .await;
    assert_eq!(r[0].refusal, Some(AckRefusal::Unresolvable));
    // Without a lease id the ack is applied without the lease check.
    let r = ack(
        &engine,
        QUEUE_MODE_GROUP,
        vec![item("m-1", AckStatus::Completed, None, pid)],
    )
    .await;
    assert!(r[0].success() && r[0].lease_released);
    // Works on a queue without dedup too: the span's segments are read.
    configure(
        &engine,
        "nodedup",
        QueueOptions {
            dedup_window_seconds: 0,
            ..QueueOptions::default()
        },
    )
    .await;
    push_n(&engine, "nodedup", "p", 0, 2).await;
    let held = pop(&engine, "nodedup", QUEUE_MODE_GROUP, 2).await;
    let r = ack(&engine, QUEUE_MODE_GROUP, acks(&held, AckStatus::Completed)).await;
    assert!(r.iter().all(|r| r.success() && r.lease_released));
}

pub(crate) async fn every_group_sees_every_message(db: &Db) {
    let engine = db.engine().await;
    push_n(&engine, "q", "a", 0, 5).await;
    push_n(&engine, "q", "b", 5, 5).await;
    for group in [QUEUE_MODE_GROUP, "g1", "g2"] {
        let mut seen = Vec::new();
        loop {
            let got = pop(&engine, "q", group, 3).await;
            if got.messages.is_empty() {
                break;
            }
            seen.extend(txns(&got));
            ack(&engine, group, acks(&got, AckStatus::Completed)).await;
        }
        seen.sort();
        let mut all = names(0..10);
        all.sort();
        assert_eq!(seen, all, "group {group}");
    }
}

pub(crate) async fn subscription_modes_choose_where_a_group_starts(db: &Db) {
    let engine = db.engine().await;
    push_n(&engine, "q", "a", 0, 3).await;
    db.clock.advance_ms(1_000);
    let mark = db.clock_now();
    db.clock.advance_ms(1_000);
    push_n(&engine, "q", "a", 3, 2).await;

    let with = |group: &str, mode| PopRequest {
        subscription: mode,
        ..request("q", group, 100)
    };
    let new = engine
        .pop(&with("new", SubscriptionMode::New))
        .await
        .expect("pop");
    assert!(new.messages.is_empty(), "a new group skips the backlog");
    let from = engine
        .pop(&with("from", SubscriptionMode::From(mark)))
        .await
        .expect("pop");
    assert_eq!(txns(&from), names(3..5));
    let all = engine
        .pop(&with("all", SubscriptionMode::All))
        .await
        .expect("pop");
    assert_eq!(txns(&all), names(0..5));

    // Later messages reach the new group, on old and on new partitions;
    // the stored registration wins over what later requests ask.
    push_n(&engine, "q", "a", 5, 1).await;
    push_n(&engine, "q", "b", 6, 1).await;
    let mut seen = Vec::new();
    for _ in 0..2 {
        let got = engine
            .pop(&with("new", SubscriptionMode::All))
            .await
            .expect("pop");
        seen.extend(txns(&got));
    }
    seen.sort();
    assert_eq!(seen, names(5..7));
    let subs = engine.subscriptions(Some("new")).await.expect("subs");
    assert_eq!(subs.len(), 1);
    assert_eq!(subs[0].mode, "new");
}

pub(crate) async fn seek_moves_a_group(db: &Db) {
    let engine = db.engine().await;
    push_n(&engine, "q", "p", 0, 2).await;
    db.clock.advance_ms(5_000);
    let mark = db.clock_now();
    push_n(&engine, "q", "p", 2, 2).await;
    let held = pop(&engine, "q", "g", 100).await;
    assert_eq!(txns(&held), names(0..4));
    // Seeking ends the lease and moves the position.
    let updated = engine.seek("g", "q", Some(mark)).await.expect("seek");
    assert_eq!(updated, Some(1));
    assert_eq!(txns(&pop(&engine, "q", "g", 100).await), names(2..4));
    engine.seek("g", "q", None).await.expect("seek");
    assert!(pop(&engine, "q", "g", 100).await.messages.is_empty());
    assert_eq!(engine.seek("g", "nope", None).await.expect("seek"), None);
    // Deleting the group forgets its position: it starts over.
    let deleted = engine
        .delete_consumer_group("g", Some("q"), true)
        .await
        .expect("delete");
    assert_eq!(deleted, 1);
    assert_eq!(txns(&pop(&engine, "q", "g", 100).await), names(0..4));
}

pub(crate) async fn auto_ack_commits_at_delivery(db: &Db) {
    let engine = db.engine().await;
    push_n(&engine, "q", "p", 0, 3).await;
    let req = PopRequest {
        auto_ack: true,
        ..request("q", QUEUE_MODE_GROUP, 2)
    };
    let got = engine.pop(&req).await.expect("pop");
    assert_eq!(txns(&got), names(0..2));
    assert!(got.lease_id.is_empty());
    assert!(got.messages.iter().all(|m| m.lease_id.is_empty()));
    // No lease is held: the next pop goes on at once.
    assert_eq!(txns(&engine.pop(&req).await.expect("pop")), names(2..3));
    // Acking an auto-acked message again is a harmless repeat.
    let items: Vec<AckItem> = acks(&got, AckStatus::Completed)
        .into_iter()
        .map(|a| AckItem {
            lease_id: None,
            ..a
        })
        .collect();
    assert!(ack(&engine, QUEUE_MODE_GROUP, items)
        .await
        .iter()
        .all(|r| r.success() && r.noop));
}

pub(crate) async fn delayed_processing_and_window_buffer_hold_messages(db: &Db) {
    let engine = db.engine().await;
    configure(
        &engine,
        "delayed",
        QueueOptions {
            delayed_processing: 10,
            ..QueueOptions::default()
        },
    )
    .await;
    push_n(&engine, "delayed", "p", 0, 1).await;
    db.clock.advance_ms(5_000);
    push_n(&engine, "delayed", "p", 1, 1).await;
    assert!(pop(&engine, "delayed", QUEUE_MODE_GROUP, 10)
        .await
        .messages
        .is_empty());
    db.clock.advance_ms(5_000);
    let got = pop(&engine, "delayed", QUEUE_MODE_GROUP, 10).await;
    assert_eq!(txns(&got), names(0..1), "only what is 10 s old");

    configure(
        &engine,
        "window",
        QueueOptions {
            window_buffer: 3,
            ..QueueOptions::default()
        },
    )
    .await;
    push_n(&engine, "window", "p", 0, 1).await;
    db.clock.advance_ms(2_000);
    push_n(&engine, "window", "p", 1, 1).await;
    db.clock.advance_ms(2_000);
    assert!(pop(&engine, "window", QUEUE_MODE_GROUP, 10)
        .await
        .messages
        .is_empty());
    db.clock.advance_ms(1_000);
    let got = pop(&engine, "window", QUEUE_MODE_GROUP, 10).await;
    assert_eq!(txns(&got), names(0..2), "the quiet partition in one go");

    configure(
        &engine,
        "maxwait",
        QueueOptions {
            max_wait_time_seconds: 5,
            ..QueueOptions::default()
        },
    )
    .await;
    push_n(&engine, "maxwait", "p", 0, 1).await;
    db.clock.advance_ms(6_000);
    push_n(&engine, "maxwait", "p", 1, 1).await;
    let got = pop(&engine, "maxwait", QUEUE_MODE_GROUP, 10).await;
    assert_eq!(
        txns(&got),
        names(1..2),
        "the message that waited too long is evicted"
    );
}

pub(crate) async fn lease_extension_never_shortens_or_resurrects(db: &Db) {
    let engine = db.engine().await;
    configure(
        &engine,
        "q",
        QueueOptions {
            lease_time: 60,
            ..QueueOptions::default()
        },
    )
    .await;
    push_n(&engine, "q", "a", 0, 2).await;
    push_n(&engine, "q", "b", 2, 2).await;
    let req = PopRequest {
        max_partitions: 2,
        ..request("q", QUEUE_MODE_GROUP, 10)
    };
    let held = engine.pop(&req).await.expect("pop");
    assert_eq!(held.partitions_claimed, 2);
    let start = db.clock_now();
    let e = engine
        .extend_lease(&held.lease_id, 10)
        .await
        .expect("extend");
    assert_eq!(e.renewed, 2);
    assert_eq!(e.expires_at_ms, Some(start + 60_000), "never shortened");
    let e = engine
        .extend_lease(&held.lease_id, 120)
        .await
        .expect("extend");
    assert_eq!(e.expires_at_ms, Some(start + 120_000));
    db.clock.advance_ms(100_000);
    assert!(engine.pop(&req).await.expect("pop").messages.is_empty());
    db.clock.advance_ms(20_000);
    let e = engine
        .extend_lease(&held.lease_id, 120)
        .await
        .expect("extend");
    assert_eq!((e.renewed, e.expires_at_ms), (0, None), "never resurrected");
    let again = engine.pop(&req).await.expect("pop");
    assert_eq!(again.messages.len(), 4);
    ack(
        &engine,
        QUEUE_MODE_GROUP,
        acks(&again, AckStatus::Completed),
    )
    .await;
    let e = engine
        .extend_lease(&again.lease_id, 120)
        .await
        .expect("extend");
    assert_eq!(e.renewed, 0, "a released lease stays released");
}

pub(crate) async fn two_engines_never_hold_the_same_lease(db: &Db) {
    let engines = [db.engine().await, db.engine().await];
    let partitions = 6;
    let per_partition = 40;
    for p in 0..partitions {
        let items = (0..per_partition)
            .map(|i| {
                json_item(
                    "q",
                    &format!("p{p}"),
                    Some(&format!("p{p}-{i:03}")),
                    &format!("{i}"),
                )
            })
            .collect();
        engines[0].push(items).await.expect("push");
    }
    // partition id -> holder, set while a consumer holds its lease.
    let holders: Arc<Mutex<HashMap<PartitionId, usize>>> = Arc::default();
    let delivered: Arc<Mutex<Vec<(PartitionId, i64, String)>>> = Arc::default();
    let mut tasks = tokio::task::JoinSet::new();
    for worker in 0..8 {
        let engine = engines[worker % 2].clone();
        let (holders, delivered) = (holders.clone(), delivered.clone());
        // Half the workers pop over up to three partitions at once, with a
        // batch the first one seldom fills.
        let pop = match worker % 4 {
            0 | 1 => request("q", QUEUE_MODE_GROUP, 7),
            _ => PopRequest {
                max_partitions: 3,
                ..request("q", QUEUE_MODE_GROUP, 50)
            },
        };
        tasks.spawn(async move {
            let mut empty = 0;
            while empty < 3 {
                let got = engine.pop(&pop).await.expect("pop");
                if got.messages.is_empty() {
                    empty += 1;
                    tokio::task::yield_now().await;
                    continue;
                }
                empty = 0;
                let pids: HashSet<PartitionId> =
                    got.messages.iter().map(|m| m.partition_id).collect();
                assert_eq!(pids.len(), got.partitions_claimed);
                for &pid in &pids {
                    if let Some(other) = holders.lock().expect("lock").insert(pid, worker) {
                        panic!("partition {pid} leased to {worker} while {other} holds it");
                    }
                }
                delivered.lock().expect("lock").extend(
                    got.messages
                        .iter()
                        .map(|m| (m.partition_id, m.offset, m.record.transaction_id())),
                );
                // Released from the map before the ack commits: the leases
                // are still held, so nobody else can have claimed them yet.
                holders
                    .lock()
                    .expect("lock")
                    .retain(|pid, _| !pids.contains(pid));
                let r = engine
                    .ack(QUEUE_MODE_GROUP, acks(&got, AckStatus::Completed))
                    .await
                    .expect("ack");
                assert!(r.iter().all(|r| r.success() && r.lease_released));
            }
        });
    }
    tasks.join_all().await;
    let delivered = delivered.lock().expect("lock").clone();
    assert_eq!(delivered.len(), partitions * per_partition, "each once");
    let unique: HashSet<&String> = delivered.iter().map(|(_, _, t)| t).collect();
    assert_eq!(unique.len(), delivered.len(), "nothing delivered twice");
    // Order is kept per partition.
    let mut by_partition: BTreeMap<PartitionId, Vec<i64>> = BTreeMap::new();
    for (p, o, _) in &delivered {
        by_partition.entry(*p).or_default().push(*o);
    }
    for offsets in by_partition.values() {
        assert!(offsets.windows(2).all(|w| w[0] < w[1]), "{offsets:?}");
    }
}

pub(crate) async fn depth_counts_from_positions_and_leases(db: &Db) {
    let engine = db.engine().await;
    push_n(&engine, "q", "p", 0, 10).await;
    let (_, depth) = engine
        .depth("q", None)
        .await
        .expect("depth")
        .expect("queue");
    assert_eq!((depth[0].total, depth[0].pending), (10, 10));
    let held = pop(&engine, "q", QUEUE_MODE_GROUP, 4).await;
    ack(
        &engine,
        QUEUE_MODE_GROUP,
        acks(&held, AckStatus::Completed)[..1].to_vec(),
    )
    .await;
    let (_, depth) = engine
        .depth("q", None)
        .await
        .expect("depth")
        .expect("queue");
    let d = &depth[0];
    assert_eq!(
        (d.total, d.completed, d.processing, d.pending),
        (10, 1, 3, 6)
    );
    // A group that has not started counts as slowest.
    pop(&engine, "q", "late", 1).await;
    let (_, depth) = engine
        .depth("q", Some(QUEUE_MODE_GROUP))
        .await
        .expect("depth")
        .expect("queue");
    assert_eq!(depth[0].completed, 1);
    let (_, depth) = engine
        .depth("q", None)
        .await
        .expect("depth")
        .expect("queue");
    assert_eq!(depth[0].completed, 0);
    assert!(engine.depth("nope", None).await.expect("depth").is_none());

    // Message lookup by transaction id, with its state.
    let pid = held.messages[0].partition_id;
    let m = engine
        .message(pid, "m-0")
        .await
        .expect("lookup")
        .expect("found");
    assert_eq!(m.offset, 0);
    let m = engine
        .message(pid, "m-9")
        .await
        .expect("lookup")
        .expect("found");
    assert_eq!(m.offset, 9);
    assert!(engine.message(pid, "nope").await.expect("lookup").is_none());
}

/// The summaries of every queue at once (the queue listing) are, queue by
/// queue, the sums of what [`Engine::depth`] answers without a group: with
/// groups at different places on different queues and partitions, leases,
/// dead letters and an untouched queue.
pub(crate) async fn summaries_of_every_queue_match_each_depth(db: &Db) {
    let engine = db.engine().await;
    push_n(&engine, "a", "p0", 0, 6).await;
    push_n(&engine, "a", "p1", 6, 4).await;
    push_n(&engine, "b", "p0", 0, 5).await;
    push_n(&engine, "c", "p0", 0, 3).await;
    // On a: the queue-mode group holds a lease, "g" consumed some and
    // filed a dead letter; "late" started on one partition only (which
    // group is slowest where depends on the partitions each pop chose).
    let held = pop(&engine, "a", QUEUE_MODE_GROUP, 2).await;
    assert_eq!(held.messages.len(), 2);
    let taken = pop(&engine, "a", "g", 3).await;
    let mut items = acks(&taken, AckStatus::Completed);
    items[1].status = AckStatus::Dlq;
    assert!(ack(&engine, "g", items)
        .await
        .iter()
        .all(AckResult::success));
    let late = pop(&engine, "a", "late", 1).await;
    assert!(ack(&engine, "late", acks(&late, AckStatus::Completed))
        .await
        .iter()
        .all(AckResult::success));
    // On b: one group done with everything.
    let all = pop(&engine, "b", "g", 10).await;
    assert!(ack(&engine, "g", acks(&all, AckStatus::Completed))
        .await
        .iter()
        .all(AckResult::success));
    // c is never consumed.

    let listed = engine.summaries().await.expect("summaries");
    let names: Vec<&str> = listed.iter().map(|q| q.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    for summary in &listed {
        let (one, depths) = engine
            .depth(&summary.name, None)
            .await
            .expect("depth")
            .expect("queue");
        let sum = |f: fn(&storage::PartitionDepth) -> i64| depths.iter().map(f).sum::<i64>();
        let expected = storage::QueueSummary {
            id: one.id,
            name: one.name.clone(),
            options: one.options.clone(),
            created_at_ms: one.created_at_ms,
            partitions: one.partitions.len(),
            total: sum(|d| d.total),
            pending: sum(|d| d.pending),
            processing: sum(|d| d.processing),
        };
        assert_eq!(*summary, expected, "queue {}", summary.name);
    }
    let counts = |q: usize| {
        let s = &listed[q];
        (s.partitions, s.total, s.pending, s.processing)
    };
    assert_eq!((counts(0).0, counts(0).1), (2, 10));
    assert_eq!(counts(1), (1, 5, 0, 0));
    assert_eq!(counts(2), (1, 3, 3, 0));
}

/// Pops and acks that stop inside a segment keep it for the next one (the
/// read tails): batches that end mid-segment, redeliveries that go back
/// inside it, and reads by offset of the same partitions in between all
/// see exactly what a read of the database would.
pub(crate) async fn pops_and_acks_in_pieces_of_segments_keep_every_message_in_order(db: &Db) {
    let engine = db.engine().await;
    let (partitions, per_partition) = (3, 200);
    for p in 0..partitions {
        // One push per partition: one segment holding all of it.
        push_n(
            &engine,
            "q",
            &format!("p{p}"),
            p * per_partition,
            per_partition,
        )
        .await;
    }
    let mut completed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut pops = 0;
    loop {
        let got = pop(&engine, "q", QUEUE_MODE_GROUP, 7).await;
        if got.messages.is_empty() {
            break;
        }
        pops += 1;
        let partition = got.messages[0].partition.clone();
        // A read by offset of the same partition, from elsewhere in it.
        let at = (pops * 37) % per_partition;
        let read = engine
            .read("q", &partition, at as i64, 5)
            .await
            .expect("read");
        let first = partition[1..].parse::<usize>().expect("index") * per_partition;
        let expected: Vec<String> = names(first + at..first + (at + 5).min(per_partition));
        let got_read: Vec<String> = read.iter().map(|m| m.record.transaction_id()).collect();
        assert_eq!(got_read, expected, "read at {at} of {partition}");
        // Every fourth batch fails once and comes back from inside the segment.
        let status = if pops % 4 == 0 && got.messages[0].delivery_attempt == 1 {
            AckStatus::Retry
        } else {
            AckStatus::Completed
        };
        let results = ack(&engine, QUEUE_MODE_GROUP, acks(&got, status)).await;
        assert!(results.iter().all(AckResult::success), "{results:?}");
        if status == AckStatus::Completed {
            completed.entry(partition).or_default().extend(txns(&got));
        }
    }
    assert_eq!(completed.len(), partitions);
    for (partition, txns) in completed {
        let first = partition[1..].parse::<usize>().expect("index") * per_partition;
        assert_eq!(txns, names(first..first + per_partition), "{partition}");
    }
}

pub(crate) async fn pops_follow_queue_changes_here_at_once_and_elsewhere_within_a_second(db: &Db) {
    let (here, there) = (db.engine().await, db.engine().await);
    let pop_all = |engine: &Engine| {
        let engine = engine.clone();
        async move {
            let got = pop(&engine, "q", QUEUE_MODE_GROUP, 10).await;
            let done = engine
                .ack(QUEUE_MODE_GROUP, acks(&got, AckStatus::Completed))
                .await
                .expect("ack");
            assert!(done.iter().all(AckResult::success));
            txns(&got)
        }
    };
    configure(&here, "q", QueueOptions::default()).await;
    push_n(&here, "q", "p", 0, 1).await;
    assert_eq!(pop_all(&here).await, names(0..1));

    // A window buffer configured on this engine holds the next message at
    // once, though its pops had just read the queue without one.
    configure(
        &here,
        "q",
        QueueOptions {
            window_buffer: 60,
            ..QueueOptions::default()
        },
    )
    .await;
    push_n(&here, "q", "p", 1, 1).await;
    assert!(pop_all(&here).await.is_empty(), "held by the new buffer");

    // Another engine (another broker) takes the buffer away: seen within
    // a second.
    there
        .configure_keeping_topic_configs("q", &QueueOptions::default())
        .await
        .expect("configure");
    db.clock.advance_ms(1_000);
    assert_eq!(pop_all(&here).await, names(1..2));

    // Deleted and created again by the other engine: a new queue id,
    // found within a second.
    assert!(there.delete_queue("q").await.expect("delete"));
    push_n(&there, "q", "p", 2, 1).await;
    db.clock.advance_ms(1_000);
    assert_eq!(pop_all(&here).await, names(2..3));

    // Deleted and created again here: found at once.
    assert!(here.delete_queue("q").await.expect("delete"));
    push_n(&here, "q", "p", 3, 1).await;
    assert_eq!(pop_all(&here).await, names(3..4));
}

pub(crate) async fn a_pop_over_several_partitions_leaves_the_ones_it_did_not_fill_free(db: &Db) {
    let engine = db.engine().await;
    for (i, p) in ["a", "b", "c", "d"].into_iter().enumerate() {
        push_n(&engine, "q", p, i * 5, 5).await;
    }
    let first = engine
        .pop(&PopRequest {
            max_partitions: 3,
            ..request("q", QUEUE_MODE_GROUP, 7)
        })
        .await
        .expect("pop");
    assert_eq!(first.messages.len(), 7);
    assert_eq!(first.partitions_claimed, 2, "the batch was full after two");
    let held: HashSet<PartitionId> = first.messages.iter().map(|m| m.partition_id).collect();

    // A second consumer finds the two partitions the first did not need.
    let second = engine
        .pop(&PopRequest {
            max_partitions: 4,
            ..request("q", QUEUE_MODE_GROUP, 100)
        })
        .await
        .expect("pop");
    assert_eq!(second.partitions_claimed, 2);
    assert_eq!(second.messages.len(), 10);
    assert!(second
        .messages
        .iter()
        .all(|m| !held.contains(&m.partition_id)));
}
