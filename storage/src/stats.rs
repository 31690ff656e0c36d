//! What a metrics scrape reads from the database: each partition's offsets
//! and size, each group's lag, the pools and the database's size.
//!
//! Every call is one statement on a reader (never the writer), whatever
//! the number of partitions: by default the database aggregates per topic
//! (or per group and topic), so a queue with a million partitions still
//! answers one row.

use crate::error::Result;
use crate::metrics::Pool;
use crate::sql;
use crate::Engine;

/// A topic's (or, per partition, one partition's) offsets and size.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicStats {
    /// The queue or topic.
    pub topic: String,
    /// The partition's name, when counted per partition.
    pub partition: Option<String>,
    /// How many partitions the figures cover.
    pub partitions: i64,
    /// The sum of the partitions' next offsets (high watermarks).
    pub high_watermark: i64,
    /// The sum of the partitions' log-start offsets.
    pub log_start: i64,
    /// The stored bytes, estimated: the records from the log starts on
    /// times the bytes per record of the newest segment (of the topic's
    /// most recently written partition, or of the partition). Summing the
    /// segments' real sizes would read every segment on every scrape.
    pub stored_bytes_estimate: f64,
}

/// How far a group is behind on a topic (or on one partition).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupLag {
    /// The consumer group (Kafka or native; `__QUEUE_MODE__` for pops
    /// without a group).
    pub group: String,
    /// The queue or topic.
    pub topic: String,
    /// The partition's name, when counted per partition.
    pub partition: Option<String>,
    /// Records stored after the group's positions: the sum of
    /// [`crate::GroupPosition::lag`] over the partitions.
    pub lag: i64,
}

/// The stored size of one partition's log, as DescribeLogDirs reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionSize {
    /// The queue or topic.
    pub topic: String,
    /// The partition's Kafka index.
    pub index: i32,
    /// The bytes of its segments that hold records from the log start on.
    pub bytes: i64,
}

/// A connection pool's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Which pool.
    pub pool: Pool,
    /// The most connections it opens.
    pub max: u32,
    /// Connections open now.
    pub open: u32,
    /// Connections taken from it now.
    pub in_use: u32,
}

impl Engine {
    /// Offsets and estimated size per topic, or per partition.
    pub async fn topic_stats(&self, per_partition: bool) -> Result<Vec<TopicStats>> {
        sql::stats::topics(self.inner.store.reader(), per_partition).await
    }

    /// Lag per group and topic, or per group and partition, for every
    /// stored position (Kafka groups and native groups alike).
    pub async fn group_lag(&self, per_partition: bool) -> Result<Vec<GroupLag>> {
        sql::stats::lag(self.inner.store.reader(), per_partition).await
    }

    /// The stored size of every partition, in topic and index order: the
    /// segments from the log start on, summed by the database in one
    /// statement (a scan of the segment index, for an admin request).
    pub async fn partition_sizes(&self) -> Result<Vec<PartitionSize>> {
        sql::stats::partition_sizes(self.inner.store.reader()).await
    }

    /// The state of the connection pools (no database round trip).
    pub fn pool_stats(&self) -> Vec<PoolStats> {
        self.inner.store.pools()
    }

    /// The size of the database in bytes (catalog reads, not a scan).
    pub async fn database_bytes(&self) -> Result<i64> {
        self.inner.store.database_bytes().await
    }
}
