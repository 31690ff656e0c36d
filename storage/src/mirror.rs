//! Mirroring a topic from a source Kafka cluster (`queen mirror`): records
//! appended at their source offsets, the topics' fence, and the status.
//!
//! A mirrored topic is written by the mirror only: [`Engine::mirror_append`]
//! keeps each record's source offset (gaps where the source has them) and
//! skips offsets already written, so a mirror restarted anywhere never
//! writes a record twice; its progress is the partition's next offset,
//! moved in the same transaction as the records. Local producers are
//! refused ([`crate::StorageError::Mirrored`]: the append reads the queue's
//! `mirrored` flag, which [`Engine::register_mirror`], the fence and queue
//! creation keep in step with `mirror_topics`) until [`Engine::fence_mirror`]
//! hands the topic over, which it does only once every partition has caught
//! up with the source's high watermark as last reported; from then on the
//! mirror's appends are refused.

use serde::Serialize;

use crate::append::pack;
use crate::error::{Result, StorageError};
use crate::model::PartitionId;
use crate::record::{Marker, Record, TxnMark};
use crate::sql;
use crate::transactions::marker_record;
use crate::Engine;

/// The mirror task's duty in `duties`.
const MIRROR_DUTY: &str = "mirror";

/// A record with the offset it has at the source.
#[derive(Debug, Clone)]
pub struct MirroredRecord {
    /// Its offset at the source, kept here.
    pub offset: i64,
    /// The record.
    pub record: Record,
}

/// What one [`Engine::mirror_append`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MirrorAppend {
    /// Records written.
    pub written: usize,
    /// Records skipped: their offsets were already written.
    pub skipped: usize,
    /// The partition's next offset afterwards: the mirror's progress.
    pub next_offset: i64,
}

/// The status of one mirrored topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MirrorTopicStatus {
    /// The topic.
    pub topic: String,
    /// The source's bootstrap servers.
    pub source: String,
    /// Whether local producers may write (the mirror no longer does).
    pub fenced: bool,
    /// The topic's last error, if it has one now.
    pub error: Option<String>,
    /// Its partitions as last reported by the mirror.
    pub partitions: Vec<MirrorPartitionStatus>,
}

/// The status of one mirrored partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MirrorPartitionStatus {
    /// The Kafka partition index.
    pub partition: i32,
    /// The source's high watermark as last seen.
    pub source_high_watermark: i64,
    /// The local next offset: every source offset below it is mirrored.
    pub mirrored_offset: i64,
    /// How far the mirror is behind (0 when caught up).
    pub lag: i64,
}

impl Engine {
    /// Appends records of a mirrored partition at their source offsets
    /// (strictly increasing), in one transaction: offsets below the
    /// partition's next offset were already written and are skipped, the
    /// others are stored with the gaps between them, and the next offset
    /// moves past the last one, or to `advance_to` (the source's position:
    /// offsets up to it that came with no record are gaps) when higher.
    /// Refused unless the partition's topic is mirrored and not fenced.
    pub async fn mirror_append(
        &self,
        queue: &str,
        partition_id: PartitionId,
        records: Vec<MirroredRecord>,
        advance_to: i64,
    ) -> Result<MirrorAppend> {
        let write = MirrorWrite {
            queue: queue.to_owned(),
            partition_id,
            records,
            advance_to,
        };
        self.mirror_append_all(std::slice::from_ref(&write))
            .await?
            .pop()
            .ok_or(StorageError::PartitionNotFound(partition_id))
    }

    /// [`Engine::mirror_append`] for several partitions (each at most once)
    /// in one transaction, so a batch of the mirror costs one commit
    /// whatever its partitions; if one partition is refused nothing is
    /// written. The answers follow `writes`' order.
    pub async fn mirror_append_all(&self, writes: &[MirrorWrite]) -> Result<Vec<MirrorAppend>> {
        for w in writes {
            check_offsets(&w.records)?;
        }
        let ids: Vec<PartitionId> = writes.iter().map(|w| w.partition_id).collect();
        let now = self.inner.clock.now_ms();
        let mut tx = self.inner.store.begin_write().await?;
        let mut conn = tx.conn();
        let locked = conn.lock_partitions(&ids).await?;
        let mut segments = Vec::new();
        let mut heads = Vec::new();
        let mut answers = Vec::with_capacity(writes.len());
        let mut changed = Vec::new();
        for w in writes {
            let mut head = locked
                .iter()
                .find(|h| h.id == w.partition_id)
                .cloned()
                .ok_or(StorageError::PartitionNotFound(w.partition_id))?;
            if !head.mirrored {
                return Err(StorageError::InvalidInput(format!(
                    "topic {:?} is not mirrored, or is fenced: the mirror no longer writes to it",
                    w.queue
                )));
            }
            let seal = head.encryption_enabled.then_some(&*self.inner.sealer);
            let fresh: Vec<&MirroredRecord> = w
                .records
                .iter()
                .filter(|r| r.offset >= head.next_offset)
                .collect();
            let created_at = now.max(head.last_created_at);
            let next = pack_mirrored(&head, &fresh, w.advance_to, created_at, seal, &mut segments)?;
            answers.push(MirrorAppend {
                written: fresh.len(),
                skipped: w.records.len() - fresh.len(),
                next_offset: next,
            });
            if next == head.next_offset {
                continue;
            }
            changed.push(w);
            let first = fresh.first().map_or(w.advance_to, |r| r.offset);
            sql::mirror::raise_empty_log_start(&mut conn, head.id, first).await?;
            head.next_offset = next;
            head.last_created_at = created_at;
            heads.push(head);
        }
        if heads.is_empty() {
            tx.rollback().await?;
            return Ok(answers);
        }
        conn.write_appends(segments, &[], &heads).await?;
        tx.commit().await?;
        for w in changed {
            // The records have no sidecar rows: the window index is loaded
            // afresh by the next local append (there is none before the fence).
            self.inner.dedup.forget(w.partition_id);
            self.announce(&w.queue);
        }
        Ok(answers)
    }

    /// Registers `topic` as mirrored from `source` (local producers are
    /// refused from now on); a topic registered before keeps its state.
    /// Whether it is fenced already (then the mirror leaves it alone).
    pub async fn register_mirror(&self, topic: &str, source: &str) -> Result<bool> {
        crate::validate_name("topic name", topic)?;
        sql::mirror::register(&self.inner.store, topic, source, self.inner.clock.now_ms()).await
    }

    /// Shows `error` in the status of `topic` (registered with it if it was
    /// not), or clears it with `None`.
    pub async fn set_mirror_error(
        &self,
        topic: &str,
        source: &str,
        error: Option<&str>,
    ) -> Result<()> {
        crate::validate_name("topic name", topic)?;
        let now = self.inner.clock.now_ms();
        sql::mirror::set_error(&self.inner.store, topic, source, error, now).await
    }

    /// Stores the source's high watermarks of `topic`, as (partition index,
    /// offset).
    pub async fn report_source_watermarks(
        &self,
        topic: &str,
        watermarks: &[(i32, i64)],
    ) -> Result<()> {
        let now = self.inner.clock.now_ms();
        sql::mirror::report_watermarks(&self.inner.store, topic, watermarks, now).await
    }

    /// Every mirrored topic with its partitions' watermarks, progress and lag.
    pub async fn mirror_status(&self) -> Result<Vec<MirrorTopicStatus>> {
        let mut out: Vec<MirrorTopicStatus> = Vec::new();
        for row in sql::mirror::status(&self.inner.store).await? {
            if out.last().is_none_or(|t| t.topic != row.topic) {
                out.push(MirrorTopicStatus {
                    topic: row.topic.clone(),
                    source: row.source.clone(),
                    fenced: row.fenced,
                    error: row.error.clone(),
                    partitions: Vec::new(),
                });
            }
            if let (Some(partition), Some(hw), Some(topic)) =
                (row.kafka_index, row.source_high_watermark, out.last_mut())
            {
                let mirrored = row.next_offset.unwrap_or(0);
                topic.partitions.push(MirrorPartitionStatus {
                    partition,
                    source_high_watermark: hw,
                    mirrored_offset: mirrored,
                    lag: (hw - mirrored).max(0),
                });
            }
        }
        Ok(out)
    }

    /// Takes or renews the mirror duty for this broker, unless another
    /// broker holds it (the lease of retention's duties); whether this
    /// broker holds it now: only its holder runs the mirror task.
    pub async fn hold_mirror_duty(&self) -> Result<bool> {
        self.hold_duty(MIRROR_DUTY, self.inner.clock.now_ms()).await
    }

    /// Gives up the mirror duty (when this broker stops mirroring), so
    /// another broker takes it over at once.
    pub async fn release_mirror_duty(&self) -> Result<()> {
        self.release_duty(MIRROR_DUTY).await
    }

    /// Fences mirrored topic `topic`: from now on local producers may write
    /// to it and the mirror may not. Refused, changing nothing, unless every
    /// partition of the topic has caught up with the source's high
    /// watermark as the mirror last reported it.
    pub async fn fence_mirror(&self, topic: &str) -> Result<()> {
        let status = self
            .mirror_status()
            .await?
            .into_iter()
            .find(|t| t.topic == topic)
            .ok_or_else(|| {
                StorageError::InvalidInput(format!("topic {topic:?} is not mirrored"))
            })?;
        let info = self
            .queue(topic)
            .await?
            .ok_or_else(|| StorageError::QueueNotFound(topic.to_owned()))?;
        let unreported: Vec<i32> = info
            .partitions
            .iter()
            .map(|p| p.kafka_index)
            .filter(|i| !status.partitions.iter().any(|s| s.partition == *i))
            .collect();
        if !unreported.is_empty() {
            return Err(StorageError::InvalidInput(format!(
                "the mirror has not reported the source's offsets of {topic:?} partitions {unreported:?}: it cannot be fenced yet"
            )));
        }
        let mut ids: Vec<PartitionId> = info.partitions.iter().map(|p| p.id).collect();
        ids.sort_unstable();
        let mut tx = self.inner.store.begin_write().await?;
        let mut conn = tx.conn();
        // The partitions' locks wait for a mirror append in flight and keep
        // the next one out until the fence is decided.
        conn.lock_partitions(&ids).await?;
        let behind = sql::mirror::fence(&mut conn, topic, self.inner.clock.now_ms()).await?;
        if !behind.is_empty() {
            tx.rollback().await?;
            let list: Vec<String> = behind
                .iter()
                .map(|(i, mirrored, hw)| format!("{i} at {mirrored} of {hw}"))
                .collect();
            return Err(StorageError::InvalidInput(format!(
                "topic {topic:?} has not caught up with the source (partition {}): stop its producers at the source and wait for the mirror",
                list.join(", ")
            )));
        }
        tx.commit().await?;
        Ok(())
    }
}

/// One partition's part of [`Engine::mirror_append_all`].
#[derive(Debug, Clone)]
pub struct MirrorWrite {
    /// The partition's topic.
    pub queue: String,
    /// The partition.
    pub partition_id: PartitionId,
    /// Its records, offsets strictly increasing.
    pub records: Vec<MirroredRecord>,
    /// The source's position: offsets below it that came with no record are gaps.
    pub advance_to: i64,
}

/// Refuses offsets that do not strictly increase, or are negative.
fn check_offsets(records: &[MirroredRecord]) -> Result<()> {
    if let Some(w) = records.windows(2).find(|w| w[1].offset <= w[0].offset) {
        return Err(StorageError::InvalidInput(format!(
            "mirrored offsets must increase: {} follows {}",
            w[1].offset, w[0].offset
        )));
    }
    if records.first().is_some_and(|r| r.offset < 0) {
        return Err(StorageError::InvalidInput(
            "offsets are not negative".into(),
        ));
    }
    Ok(())
}

/// Packs the `fresh` records of the partition at `head` into `segments`:
/// one run of consecutive offsets per segment group (a segment holds
/// consecutive offsets, the gaps lie between segments), and a commit marker
/// at the end of a trailing gap. The partition's next offset afterwards.
fn pack_mirrored(
    head: &crate::append::PartitionHead,
    fresh: &[&MirroredRecord],
    advance_to: i64,
    created_at: i64,
    seal: Option<&crate::sealing::Sealer>,
    segments: &mut Vec<crate::append::NewSegment>,
) -> Result<i64> {
    let mut start = 0;
    for i in 0..fresh.len() {
        let ends = i + 1 == fresh.len() || fresh[i + 1].offset != fresh[i].offset + 1;
        if ends {
            let run: Vec<&Record> = fresh[start..=i].iter().map(|r| &r.record).collect();
            segments.extend(pack(head.id, fresh[start].offset, created_at, &run, seal)?);
            start = i + 1;
        }
    }
    let end = fresh.last().map_or(head.next_offset, |r| r.offset + 1);
    let next = end.max(advance_to).max(head.next_offset);
    if next > end {
        // A gap at the end (the source's readers skipped a transaction
        // marker or aborted records there): a commit marker takes its
        // last offset, as in Kafka's log, so readers see the partition
        // end at `next` rather than waiting inside the gap.
        let mark = TxnMark {
            producer_id: -1,
            epoch: -1,
            marker: Some(Marker::Commit),
        };
        let marker = marker_record(mark, created_at);
        segments.extend(pack(head.id, next - 1, created_at, &[&marker], seal)?);
    }
    Ok(next)
}
