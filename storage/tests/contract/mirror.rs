//! Mirroring a source cluster's topic: appends at source offsets (gaps,
//! rewrites skipped), the progress in the same transaction, local producers
//! refused until the fence, and the status.

// A gap at the end gets a commit marker at its last offset.

use storage::{Content, Engine, MirrorWrite, MirroredRecord, PartitionId, StorageError};

use crate::log::{kafka, one_partition_topic};
use crate::support::{read_messages, Db, START_MS};

const SOURCE: &str = "source:9092";

fn at(offset: i64) -> MirroredRecord {
    MirroredRecord {
        offset,
        record: kafka(&format!("value-{offset}"), START_MS + offset),
    }
}

/// The (offset, value) of every stored record of the partition.
async fn stored(engine: &Engine, id: PartitionId) -> Vec<(i64, String)> {
    read_messages(engine, id, 0, 10_000, usize::MAX)
        .await
        .expect("read")
        .into_iter()
        .map(|m| match m.record.content {
            Content::Kafka(k) if k.txn.is_some_and(|t| t.marker.is_some()) => {
                (m.offset, "marker".to_owned())
            }
            Content::Kafka(k) => (
                m.offset,
                String::from_utf8(k.value.expect("value").to_vec()).expect("utf8"),
            ),
            other => panic!("not a kafka record: {other:?}"),
        })
        .collect()
}

fn values(offsets: &[i64]) -> Vec<(i64, String)> {
    offsets.iter().map(|o| (*o, format!("value-{o}"))).collect()
}

pub(crate) async fn mirrored_records_keep_source_offsets_gaps_and_are_written_once(db: &Db) {
    let engine = db.engine().await;
    let id = one_partition_topic(&engine, "m").await;
    assert!(!engine.register_mirror("m", SOURCE).await.expect("register"));

    let first = engine
        .mirror_append("m", id, [0, 1, 2, 5, 6].map(at).to_vec(), 0)
        .await
        .expect("append");
    assert_eq!((first.written, first.skipped, first.next_offset), (5, 0, 7));
    // The source's position past a gap at the end moves the progress too.
    let advanced = engine
        .mirror_append("m", id, vec![at(6)], 10)
        .await
        .expect("advance");
    assert_eq!(
        (advanced.written, advanced.skipped, advanced.next_offset),
        (0, 1, 10)
    );
    // A restarted mirror sends what it already wrote again: skipped.
    let again = engine
        .mirror_append("m", id, [5, 6, 9, 10, 11].map(at).to_vec(), 0)
        .await
        .expect("again");
    assert_eq!(
        (again.written, again.skipped, again.next_offset),
        (2, 3, 12)
    );
    // The gap at the end of the first appends ends in a commit marker, as
    // in Kafka's log, so readers see the partition end at 10.
    let mut expected = values(&[0, 1, 2, 5, 6]);
    expected.push((9, "marker".to_owned()));
    expected.extend(values(&[10, 11]));
    assert_eq!(stored(&engine, id).await, expected);
    let bounds = engine.log_bounds(id).await.expect("bounds");
    assert_eq!((bounds.log_start, bounds.next_offset), (0, 12));

    // Offsets out of order are refused and change nothing.
    let err = engine
        .mirror_append("m", id, [13, 12].map(at).to_vec(), 0)
        .await
        .expect_err("out of order");
    assert!(matches!(err, StorageError::InvalidInput(_)), "{err}");
    assert_eq!(engine.log_bounds(id).await.expect("bounds").next_offset, 12);
}

pub(crate) async fn a_mirror_starting_past_the_source_log_start_moves_the_local_one(db: &Db) {
    let engine = db.engine().await;
    let id = one_partition_topic(&engine, "late").await;
    engine
        .register_mirror("late", SOURCE)
        .await
        .expect("register");
    engine
        .mirror_append("late", id, [50, 51].map(at).to_vec(), 0)
        .await
        .expect("append");
    let bounds = engine.log_bounds(id).await.expect("bounds");
    assert_eq!((bounds.log_start, bounds.next_offset), (50, 52));
    assert_eq!(stored(&engine, id).await, values(&[50, 51]));
}

pub(crate) async fn partitions_of_one_batch_are_written_together_or_not_at_all(db: &Db) {
    let engine = db.engine().await;
    let a = one_partition_topic(&engine, "ma").await;
    let b = one_partition_topic(&engine, "mb").await;
    let local = one_partition_topic(&engine, "local").await;
    for topic in ["ma", "mb"] {
        engine
            .register_mirror(topic, SOURCE)
            .await
            .expect("register");
    }
    let write = |queue: &str, partition_id, offsets: &[i64], advance_to| MirrorWrite {
        queue: queue.to_owned(),
        partition_id,
        records: offsets.iter().copied().map(at).collect(),
        advance_to,
    };

    let done = engine
        .mirror_append_all(&[write("ma", a, &[0, 1], 0), write("mb", b, &[3], 6)])
        .await
        .expect("both");
    let progress: Vec<(usize, i64)> = done.iter().map(|d| (d.written, d.next_offset)).collect();
    assert_eq!(progress, vec![(2, 2), (1, 6)]);
    assert_eq!(stored(&engine, a).await, values(&[0, 1]));
    let mut with_marker = values(&[3]);
    with_marker.push((5, "marker".to_owned()));
    assert_eq!(stored(&engine, b).await, with_marker);

    // One partition refused (its topic is not mirrored): nothing is written.
    let err = engine
        .mirror_append_all(&[write("ma", a, &[2, 3], 0), write("local", local, &[0], 0)])
        .await
        .expect_err("a partition that is not mirrored");
    assert!(matches!(err, StorageError::InvalidInput(_)), "{err}");
    assert_eq!(engine.log_bounds(a).await.expect("bounds").next_offset, 2);
    assert_eq!(stored(&engine, a).await, values(&[0, 1]));
    assert!(stored(&engine, local).await.is_empty());
}

pub(crate) async fn local_producers_wait_for_the_fence_and_the_mirror_stops_at_it(db: &Db) {
    let engine = db.engine().await;
    let id = one_partition_topic(&engine, "cut").await;
    // Not mirrored: the mirror may not write to it.
    let err = engine
        .mirror_append("cut", id, vec![at(0)], 0)
        .await
        .expect_err("not mirrored");
    assert!(matches!(err, StorageError::InvalidInput(_)), "{err}");

    engine
        .register_mirror("cut", SOURCE)
        .await
        .expect("register");
    engine
        .mirror_append("cut", id, [0, 1, 2].map(at).to_vec(), 0)
        .await
        .expect("append");
    let err = engine
        .append_records("cut", id, vec![kafka("local", START_MS)])
        .await
        .expect_err("local produce before the fence");
    assert!(matches!(err, StorageError::Mirrored(p) if p == id), "{err}");

    // No watermark reported yet: cannot be fenced.
    let err = engine.fence_mirror("cut").await.expect_err("unreported");
    assert!(err.to_string().contains("not reported"), "{err}");
    // Behind the source: cannot be fenced.
    engine
        .report_source_watermarks("cut", &[(0, 5)])
        .await
        .expect("report");
    let err = engine.fence_mirror("cut").await.expect_err("behind");
    assert!(err.to_string().contains("0 at 3 of 5"), "{err}");
    assert!(engine
        .append_records("cut", id, vec![kafka("x", START_MS)])
        .await
        .is_err());
    let status = engine.mirror_status().await.expect("status");
    assert_eq!(status.len(), 1);
    assert!(!status[0].fenced);
    assert_eq!(
        (
            status[0].partitions[0].source_high_watermark,
            status[0].partitions[0].mirrored_offset,
            status[0].partitions[0].lag
        ),
        (5, 3, 2)
    );

    engine
        .mirror_append("cut", id, [3, 4].map(at).to_vec(), 5)
        .await
        .expect("catch up");
    engine.fence_mirror("cut").await.expect("fence");
    // Another broker (engine) sees the fence too.
    let other = db.engine().await;
    assert_eq!(
        other
            .append_records("cut", id, vec![kafka("local", START_MS)])
            .await
            .expect("local produce after the fence"),
        5
    );
    let err = engine
        .mirror_append("cut", id, vec![at(6)], 0)
        .await
        .expect_err("the mirror stops at the fence");
    assert!(err.to_string().contains("fenced"), "{err}");
    // Registering again does not undo the fence.
    assert!(engine
        .register_mirror("cut", SOURCE)
        .await
        .expect("register"));
    let status = engine.mirror_status().await.expect("status");
    assert!(status[0].fenced);
    assert_eq!(status[0].partitions[0].mirrored_offset, 6);
}

pub(crate) async fn errors_are_shown_per_topic_and_cleared(db: &Db) {
    let engine = db.engine().await;
    engine
        .set_mirror_error(
            "never-created",
            SOURCE,
            Some("local topic has 2 partitions, source 4"),
        )
        .await
        .expect("error");
    one_partition_topic(&engine, "fine").await;
    engine
        .register_mirror("fine", SOURCE)
        .await
        .expect("register");
    let status = engine.mirror_status().await.expect("status");
    let names: Vec<(&str, Option<&str>)> = status
        .iter()
        .map(|t| (t.topic.as_str(), t.error.as_deref()))
        .collect();
    assert_eq!(
        names,
        [
            ("fine", None),
            (
                "never-created",
                Some("local topic has 2 partitions, source 4")
            )
        ]
    );
    engine
        .set_mirror_error("never-created", SOURCE, None)
        .await
        .expect("clear");
    assert!(engine.mirror_status().await.expect("status")[1]
        .error
        .is_none());
    let err = engine
        .fence_mirror("absent")
        .await
        .expect_err("not mirrored");
    assert!(err.to_string().contains("not mirrored"), "{err}");

    // A local topic the mirror could not take keeps its local producers;
    // once the mirror can take it (the mismatch mended), it does.
    let id = one_partition_topic(&engine, "taken-later").await;
    engine
        .set_mirror_error("taken-later", SOURCE, Some("another partition count"))
        .await
        .expect("error");
    engine
        .append_records("taken-later", id, vec![kafka("local", START_MS)])
        .await
        .expect("local producers keep writing");
    assert!(!engine
        .register_mirror("taken-later", SOURCE)
        .await
        .expect("register"));
    let err = engine
        .append_records("taken-later", id, vec![kafka("local", START_MS)])
        .await
        .expect_err("mirrored now");
    assert!(matches!(err, StorageError::Mirrored(p) if p == id), "{err}");
}

pub(crate) async fn two_mirrors_of_one_partition_write_each_offset_once(db: &Db) {
    let a = db.engine().await;
    let b = db.engine().await;
    let id = one_partition_topic(&a, "race").await;
    a.register_mirror("race", SOURCE).await.expect("register");
    let batches: Vec<Vec<MirroredRecord>> = (0..20)
        .map(|i| (i * 10..i * 10 + 15).map(at).collect())
        .collect();
    let run = |engine: Engine, batches: Vec<Vec<MirroredRecord>>| {
        tokio::spawn(async move {
            let mut written = 0;
            for batch in batches {
                written += engine
                    .mirror_append("race", id, batch, 0)
                    .await
                    .expect("append")
                    .written;
            }
            written
        })
    };
    let (wa, wb) = tokio::join!(run(a.clone(), batches.clone()), run(b, batches));
    let written = wa.expect("a") + wb.expect("b");
    assert_eq!(written, 205);
    let offsets: Vec<i64> = stored(&a, id).await.into_iter().map(|(o, _)| o).collect();
    assert_eq!(offsets, (0..205).collect::<Vec<_>>());
}

pub(crate) async fn the_refusal_follows_the_topic_through_deletion_and_the_fence(db: &Db) {
    let engine = db.engine().await;
    one_partition_topic(&engine, "again").await;
    engine
        .register_mirror("again", SOURCE)
        .await
        .expect("register");
    // Deleted and created again (by anyone) while mirrored: still the
    // mirror's alone, from its first append on.
    assert!(engine.delete_queue("again").await.expect("delete"));
    let id = one_partition_topic(&engine, "again").await;
    let err = engine
        .append_records("again", id, vec![kafka("local", START_MS)])
        .await
        .expect_err("local produce to a recreated mirrored topic");
    assert!(matches!(err, StorageError::Mirrored(p) if p == id), "{err}");
    engine
        .report_source_watermarks("again", &[(0, 0)])
        .await
        .expect("report");
    engine.fence_mirror("again").await.expect("fence");
    // Fenced: writable, also once deleted and created again.
    assert!(engine.delete_queue("again").await.expect("delete"));
    let id = one_partition_topic(&engine, "again").await;
    assert_eq!(
        engine
            .append_records("again", id, vec![kafka("local", START_MS)])
            .await
            .expect("local produce after the fence"),
        0
    );
    // A topic that is not mirrored is not touched by another's register.
    let other = one_partition_topic(&engine, "other").await;
    engine
        .register_mirror("mirrored-only", SOURCE)
        .await
        .expect("register");
    assert_eq!(
        engine
            .append_records("other", other, vec![kafka("local", START_MS)])
            .await
            .expect("local produce to a topic not mirrored"),
        0
    );
}

pub(crate) async fn one_broker_at_a_time_holds_the_mirror_duty(db: &Db) {
    let a = db.engine().await;
    let b = db.engine().await;
    assert!(a.hold_mirror_duty().await.expect("a asks"));
    assert!(a.hold_mirror_duty().await.expect("a renews"));
    assert!(!b.hold_mirror_duty().await.expect("b asks"));
    // Given up (a broker stopping): the other takes it at once.
    a.release_mirror_duty().await.expect("release");
    assert!(b.hold_mirror_duty().await.expect("b asks again"));
    assert!(!a.hold_mirror_duty().await.expect("a asks again"));
    // Releasing a duty not held changes nothing.
    a.release_mirror_duty().await.expect("release");
    assert!(!a.hold_mirror_duty().await.expect("a still waits"));
}
