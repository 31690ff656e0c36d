//! Native dedup at scale: the index seals its tail into runs, merges them
//! in the background and drops them past the window; through all of it a
//! duplicate is found exactly and a fresh id is never called one.

use std::collections::BTreeMap;

use storage::{Engine, PushOutcome, PushStatus};

use crate::push::{configure_window as configure, json_item};
use crate::support::Db;

/// Enough ids for several sealed runs (a run seals at 16,384) and a merge.
const IDS: usize = 100_000;

/// Ids per push request.
const PER_PUSH: usize = 2_000;

/// Pushes the ids `range` (as `id-<n>`) in requests of [`PER_PUSH`].
pub(crate) async fn push_ids(
    engine: &Engine,
    queue: &str,
    range: std::ops::Range<usize>,
) -> Vec<PushOutcome> {
    let mut out = Vec::with_capacity(range.len());
    let ids: Vec<usize> = range.collect();
    for chunk in ids.chunks(PER_PUSH) {
        let items = chunk
            .iter()
            .map(|n| json_item(queue, "p", Some(&format!("id-{n}")), "{}"))
            .collect();
        out.extend(engine.push(items).await.expect("push"));
    }
    out
}

/// Runs the background upkeep until it has nothing left to do; returns how
/// many steps reported work done.
async fn upkeep(engine: &Engine) -> usize {
    let mut busy = 0;
    while engine.maintain_dedup().await.expect("upkeep") {
        busy += 1;
        assert!(busy < 10_000, "upkeep never settles");
    }
    busy
}

/// Re-pushes a spread of the stored ids (every one is a duplicate answering
/// its original) and as many fresh ones (every one is stored).
async fn check(
    engine: &Engine,
    queue: &str,
    stored: &BTreeMap<usize, PushOutcome>,
    fresh_from: usize,
    label: &str,
) -> usize {
    let last = *stored.keys().next_back().expect("something stored");
    let sample: Vec<usize> = (0..=40)
        .map(|i| i * last / 40)
        .chain([1, last - 1])
        .collect();
    let items = sample
        .iter()
        .map(|n| json_item(queue, "p", Some(&format!("id-{n}")), "{}"))
        .chain(
            (0..40).map(|i| json_item(queue, "p", Some(&format!("id-{}", fresh_from + i)), "{}")),
        )
        .collect();
    let answers = engine.push(items).await.expect("push");
    for (n, answer) in sample.iter().zip(&answers) {
        let original = &stored[n];
        assert_eq!(
            answer.status,
            PushStatus::Duplicate,
            "{label}: id-{n} was not found"
        );
        assert_eq!(
            (answer.message_id, answer.offset),
            (original.message_id, original.offset),
            "{label}: id-{n} answered another original"
        );
    }
    for answer in &answers[sample.len()..] {
        assert_eq!(
            answer.status,
            PushStatus::Queued,
            "{label}: a fresh id was called a duplicate"
        );
    }
    fresh_from + 40
}

fn by_id(outcomes: Vec<PushOutcome>, from: usize) -> BTreeMap<usize, PushOutcome> {
    outcomes
        .into_iter()
        .enumerate()
        .inspect(|(_, o)| {
            assert_eq!(
                o.status,
                PushStatus::Queued,
                "a fresh id was called a duplicate"
            )
        })
        .map(|(i, o)| (from + i, o))
        .collect()
}

pub(crate) async fn duplicates_are_found_at_every_window_population(db: &Db) {
    let engine = db.engine().await;
    configure(&engine, "big", 3600).await;
    let mut stored = BTreeMap::new();
    let mut fresh = 10_000_000;
    for (from, to) in [(0, 1_000), (1_000, 20_000), (20_000, IDS)] {
        stored.extend(by_id(push_ids(&engine, "big", from..to).await, from));
        fresh = check(&engine, "big", &stored, fresh, &format!("{to} ids, hot")).await;
    }
    assert!(upkeep(&engine).await > 0, "the sealed runs were merged");
    fresh = check(&engine, "big", &stored, fresh, "after merging").await;

    // A restarted broker starts cold: it reads run filters and one tail.
    engine.close().await;
    let cold = db.engine().await;
    fresh = check(&cold, "big", &stored, fresh, "cold").await;

    // A second broker on the same database sees what the first stores,
    // and the first sees what it stores (both keep warm indexes).
    let other = db.engine().await;
    let more = by_id(push_ids(&other, "big", IDS..IDS + 20_000).await, IDS);
    stored.extend(more);
    fresh = check(&cold, "big", &stored, fresh, "stored by another broker").await;
    upkeep(&other).await;
    check(&cold, "big", &stored, fresh, "merged by another broker").await;
}

pub(crate) async fn runs_past_the_window_expire_and_their_ids_are_new(db: &Db) {
    let engine = db.engine().await;
    configure(&engine, "short", 60).await;
    let old = by_id(push_ids(&engine, "short", 0..40_000).await, 0);
    db.clock.advance_ms(59_000);
    check(&engine, "short", &old, 50_000_000, "inside the window").await;
    db.clock.advance_ms(2_000);
    let again = push_ids(&engine, "short", 0..10).await;
    assert!(
        again.iter().all(|o| o.status == PushStatus::Queued),
        "past the window an id is new"
    );
    upkeep(&engine).await;
    assert_eq!(
        db.count("SELECT count(*) FROM dedup_runs").await,
        0,
        "expired runs are gone"
    );
    assert_eq!(
        db.count("SELECT count(*) FROM dedup_pages").await,
        0,
        "with their pages"
    );
    // The sidecar outlives the window up to 15 minutes (message lookups use it).
    db.clock.advance_ms(900_001);
    upkeep(&engine).await;
    assert_eq!(
        db.count("SELECT count(*) FROM txn_hashes").await,
        0,
        "the sidecar is purged"
    );
    let later = push_ids(&engine, "short", 0..10).await;
    assert!(later.iter().all(|o| o.status == PushStatus::Queued));
    let dup = push_ids(&engine, "short", 0..1).await;
    assert_eq!(dup[0].status, PushStatus::Duplicate);
    assert_eq!(dup[0].message_id, later[0].message_id);
}

pub(crate) async fn a_sealed_id_is_found_by_message_lookup(db: &Db) {
    let engine = db.engine().await;
    configure(&engine, "look", 3600).await;
    let stored = push_ids(&engine, "look", 0..40_000).await;
    upkeep(&engine).await;
    for n in [0, 17_000, 39_999] {
        let view = engine
            .message(stored[n].partition_id, &format!("id-{n}"))
            .await
            .expect("lookup")
            .expect("found");
        assert_eq!(view.offset, stored[n].offset);
        assert_eq!(view.record.message_id, stored[n].message_id);
    }
    assert!(engine
        .message(stored[0].partition_id, "never-pushed")
        .await
        .expect("lookup")
        .is_none());
}

pub(crate) async fn deleting_a_queue_deletes_its_runs(db: &Db) {
    let engine = db.engine().await;
    configure(&engine, "gone", 3600).await;
    push_ids(&engine, "gone", 0..40_000).await;
    assert!(db.count("SELECT count(*) FROM dedup_pages").await > 0);
    assert!(engine.delete_queue("gone").await.expect("delete"));
    upkeep(&engine).await;
    assert_eq!(db.count("SELECT count(*) FROM dedup_runs").await, 0);
    assert_eq!(db.count("SELECT count(*) FROM dedup_pages").await, 0);
    configure(&engine, "gone", 3600).await;
    let fresh = push_ids(&engine, "gone", 0..10).await;
    assert!(
        fresh.iter().all(|o| o.status == PushStatus::Queued),
        "a recreated queue starts empty"
    );
}

pub(crate) async fn a_starved_memory_budget_changes_no_answer(db: &Db) {
    let engine = db.engine().await;
    // Far less than the indexes need: filters are folded and indexes
    // dropped and reloaded; every answer must stay the same.
    engine.set_dedup_memory(64 << 10);
    configure(&engine, "tight", 3600).await;
    let stored = by_id(push_ids(&engine, "tight", 0..60_000).await, 0);
    let fresh = check(&engine, "tight", &stored, 20_000_000, "starved").await;
    upkeep(&engine).await;
    check(&engine, "tight", &stored, fresh, "starved, merged").await;
}

pub(crate) async fn top_level_runs_are_not_merged_further(db: &Db) {
    // Pushes of 2,000 seal a run at every 18,000 ids (the first push past
    // 16,384), so each batch below seals exactly four.
    const BATCH: usize = 4 * 18_000;
    let engine = db.engine().await;
    configure(&engine, "top", 3600).await;
    let live =
        |level: i64| format!("SELECT count(*) FROM dedup_runs WHERE state = 1 AND level = {level}");
    // Four sealed runs, relabelled as runs of the top level (4): without the
    // cap they are the next merge's inputs.
    let mut stored = by_id(push_ids(&engine, "top", 0..BATCH).await, 0);
    assert_eq!(db.count(&live(0)).await, 4);
    db.execute("UPDATE dedup_runs SET level = 4").await;
    // Four more level-0 runs, which are merged as before.
    stored.extend(by_id(
        push_ids(&engine, "top", BATCH..2 * BATCH).await,
        BATCH,
    ));
    upkeep(&engine).await;
    assert_eq!(
        db.count(&live(4)).await,
        4,
        "top-level runs stay as they are"
    );
    assert_eq!(
        db.count(&live(5)).await,
        0,
        "nothing is merged above the top"
    );
    assert_eq!(db.count(&live(1)).await, 1, "lower levels are merged");
    let fresh = check(&engine, "top", &stored, 30_000_000, "top level, warm").await;
    engine.close().await;
    let cold = db.engine().await;
    check(&cold, "top", &stored, fresh, "top level, cold").await;
}

pub(crate) async fn concurrent_pushes_beside_merges_stay_exact(db: &Db) {
    // Pushes look at a partition's runs before they join a group commit;
    // with several pushers and the upkeep at work, runs are sealed, merged
    // and retired between that look and the append. Each pusher re-sends
    // its previous request's ids, which another pusher's append has often
    // sealed into a run meanwhile: every one must answer its original.
    const PUSHERS: usize = 4;
    const ROUNDS: usize = 25;
    const PER_ROUND: usize = 1_000;
    let engine = db.engine().await;
    configure(&engine, "race", 3600).await;
    by_id(push_ids(&engine, "race", 0..40_000).await, 0);
    let background = {
        let engine = engine.clone();
        tokio::spawn(async move {
            loop {
                if !engine.maintain_dedup().await.expect("upkeep") {
                    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                }
            }
        })
    };
    let pushers: Vec<_> = (0..PUSHERS)
        .map(|p| {
            let engine = engine.clone();
            tokio::spawn(async move {
                let mut previous: Vec<(String, PushOutcome)> = Vec::new();
                for round in 0..ROUNDS {
                    let base = 1_000_000 * (p + 1) + round * PER_ROUND;
                    let fresh: Vec<String> = (base..base + PER_ROUND)
                        .map(|n| format!("id-{n}"))
                        .collect();
                    let items = fresh
                        .iter()
                        .chain(previous.iter().map(|(id, _)| id))
                        .map(|id| json_item("race", "p", Some(id), "{}"))
                        .collect();
                    let answers = engine.push(items).await.expect("push");
                    for (id, answer) in fresh.iter().zip(&answers) {
                        assert_eq!(answer.status, PushStatus::Queued, "{id} called a duplicate");
                    }
                    for ((id, original), answer) in previous.iter().zip(&answers[PER_ROUND..]) {
                        assert_eq!(answer.status, PushStatus::Duplicate, "{id} not found");
                        assert_eq!(
                            (answer.message_id, answer.offset),
                            (original.message_id, original.offset),
                            "{id} answered another original"
                        );
                    }
                    previous = fresh.into_iter().zip(answers).collect();
                }
            })
        })
        .collect();
    for pusher in pushers {
        pusher.await.expect("pusher");
    }
    background.abort();
    upkeep(&engine).await;
    assert!(
        db.count("SELECT count(*) FROM dedup_runs WHERE level > 0 AND state = 1")
            .await
            > 0,
        "runs were merged"
    );
}
