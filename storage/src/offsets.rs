//! Committed offsets of consumer groups, as Kafka's OffsetCommit and
//! OffsetFetch use them. They are the same positions native consumer groups
//! keep (`consumer_cursors`): a Kafka commit moves the native group of the
//! same name, and a native ack moves what OffsetFetch answers, so a group
//! can move from one protocol to the other and resume where it stopped.

use crate::error::Result;
use crate::model::PartitionId;
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
    /// Stores committed offsets for `group`: (partition id, position) pairs.
    pub async fn commit_offsets(
        &self,
        group: &str,
        commits: &[(PartitionId, CommittedOffset)],
    ) -> Result<()> {
        crate::validate_name("group name", group)?;
        let now = self.inner.clock.now_ms();
        sql::offsets::commit(&self.inner.store, group, commits, now).await
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
