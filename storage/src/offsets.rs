//! Committed offsets of consumer groups, as Kafka's OffsetCommit and
//! OffsetFetch use them. They are the same positions native consumer groups
//! keep (`consumer_cursors`): a Kafka commit moves the native group of the
//! same name, and a native ack moves what OffsetFetch answers, so a group
//! can move from one protocol to the other and resume where it stopped.

use crate::error::{Result, StorageError};
use crate::model::PartitionId;
use crate::offsets_log::{Logged, OffsetCommitEntry, OFFSETS_TOPIC};
use crate::sql;
use crate::Engine;

/// A committed position: the next offset to consume, with Kafka's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedOffset {
    /// The next offset the group consumes.
    pub offset: i64,
    /// The committer's metadata string (`None` when set natively).
    pub metadata: Option<String>,
    /// The leader epoch the committer saw (`None` when unknown).
    pub leader_epoch: Option<i32>,
}

/// A group's committed position on one Kafka partition of a topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicOffset {
    /// The topic (queue) name.
    pub topic: String,
    /// The partition's Kafka index.
    pub partition: i32,
    /// The position.
    pub committed: CommittedOffset,
}

impl Engine {
    /// Stores committed offsets for `group`: (partition id, position) pairs,
    /// each also appended to the `__consumer_offsets` log in the same
    /// transaction ([`crate::offsets_log`]).
    pub async fn commit_offsets(
        &self,
        group: &str,
        commits: &[(PartitionId, CommittedOffset)],
    ) -> Result<()> {
        crate::validate_name("group name", group)?;
        // The log's partition may vanish under a cached id (its topic
        // deleted): resolved afresh, the commit is tried once more.
        for _ in 0..2 {
            let log_partition = self.offsets_partition(group).await?;
            let now = self.inner.clock.now_ms();
            let mut tx = self.inner.store.begin_write().await?;
            sql::offsets::commit(&mut tx.conn(), group, commits, now).await?;
            let mut named = Vec::with_capacity(commits.len());
            for (partition_id, committed) in commits {
                if let Some(at) =
                    sql::offsets::topic_partition(&mut tx.conn(), *partition_id).await?
                {
                    named.push((at, committed));
                }
            }
            let entries: Vec<OffsetCommitEntry> = named
                .iter()
                .map(|((topic, partition), committed)| OffsetCommitEntry {
                    group,
                    topic,
                    partition: *partition,
                    committed,
                    commit_timestamp_ms: now,
                })
                .collect();
            match self
                .log_commits(&mut tx.conn(), log_partition, &entries, now)
                .await?
            {
                Logged::Done(indexes) => {
                    tx.commit().await?;
                    self.after_logging(indexes);
                    return Ok(());
                }
                Logged::PartitionGone => {
                    drop(tx);
                    self.inner.partitions.forget_queue(OFFSETS_TOPIC);
                }
            }
        }
        Err(StorageError::CommitFailed)
    }

    /// Every committed position of `group`, by topic and Kafka partition.
    pub async fn committed_offsets(&self, group: &str) -> Result<Vec<TopicOffset>> {
        sql::offsets::of_group(&self.inner.store, group).await
    }

    /// Every consumer group with a stored position (Kafka or native), by
    /// name; the queue-mode pseudo-group is not one.
    pub async fn group_names(&self) -> Result<Vec<String>> {
        sql::offsets::group_names(&self.inner.store).await
    }

    /// Deletes the committed offsets of `group` on these partitions (Kafka's
    /// OffsetDelete); returns how many there were.
    pub async fn delete_offsets(&self, group: &str, partition_ids: &[PartitionId]) -> Result<u64> {
        crate::validate_name("group name", group)?;
        sql::offsets::delete(&self.inner.store, group, partition_ids).await
    }
}
