//! The data model the engine speaks: what callers push and what they read back.

use uuid::Uuid;

use crate::options::QueueOptions;
use crate::record::Record;

/// The partition a native push lands in when it names none.
pub const DEFAULT_PARTITION: &str = "Default";

/// The longest transaction id accepted, in bytes.
pub const MAX_TRANSACTION_ID_BYTES: usize = 65_535;

/// The longest queue or partition name accepted, in bytes.
pub const MAX_NAME_BYTES: usize = 512;

/// The id of a partition: unique in the database, stable for the
/// partition's life, and never reused for another partition. Kafka names a
/// partition by (topic, index); the engine by this id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, sqlx::Type)]
#[sqlx(transparent)]
pub struct PartitionId(i64);

impl PartitionId {
    /// The id with this number (as [`PartitionId::get`] gave it).
    pub const fn new(id: i64) -> Self {
        Self(id)
    }

    /// The id as a number, as the HTTP API shows it.
    pub const fn get(self) -> i64 {
        self.0
    }
}

impl std::fmt::Display for PartitionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::str::FromStr for PartitionId {
    type Err = std::num::ParseIntError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.trim().parse().map(Self)
    }
}

/// One message to append to a queue partition.
#[derive(Debug, Clone)]
pub struct PushItem {
    /// The queue, created on first push.
    pub queue: String,
    /// The partition name, created on first push.
    pub partition: String,
    /// The message to store; a `None` transaction id is minted from the message id.
    pub record: Record,
}

/// How a pushed item was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushStatus {
    /// Stored at `offset`.
    Queued,
    /// Not stored: the partition already holds this transaction id inside the
    /// window (or an earlier item of the same request carried it).
    Duplicate,
}

/// The answer for one pushed item, in request order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushOutcome {
    /// Queued or duplicate.
    pub status: PushStatus,
    /// The new message's id, or for a duplicate the original's id (the nil
    /// UUID when the original can no longer be read).
    pub message_id: Uuid,
    /// The effective transaction id.
    pub transaction_id: String,
    /// The new offset, or for a duplicate the original's offset.
    pub offset: i64,
    /// The id of the partition the item went to.
    pub partition_id: PartitionId,
}

/// A queue with its options and partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueInfo {
    /// Stable numeric id.
    pub id: i64,
    /// The id of the queue as a Kafka topic.
    pub topic_id: Uuid,
    /// The queue name.
    pub name: String,
    /// The options in force.
    pub options: QueueOptions,
    /// Creation time, ms since the epoch.
    pub created_at_ms: i64,
    /// Its partitions in Kafka index order.
    pub partitions: Vec<PartitionInfo>,
}

/// A queue as the listing shows it: its counts summed over its partitions,
/// for its slowest group (as [`crate::Engine::depth`] counts without one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueSummary {
    /// Stable numeric id.
    pub id: i64,
    /// The queue name.
    pub name: String,
    /// The options in force.
    pub options: QueueOptions,
    /// Creation time, ms since the epoch.
    pub created_at_ms: i64,
    /// How many partitions it has.
    pub partitions: usize,
    /// Messages stored.
    pub total: i64,
    /// Stored, not yet delivered (or delivered under a lease that ended).
    pub pending: i64,
    /// Delivered under a live lease, not yet acknowledged.
    pub processing: i64,
}

impl QueueInfo {
    /// Messages appended to the queue over its lifetime (the sum of the
    /// partitions' next offsets).
    pub fn total_messages(&self) -> i64 {
        self.partitions.iter().map(|p| p.next_offset).sum()
    }
}

/// A partition of a queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInfo {
    /// Stable numeric id, rendered as a decimal string on the wire.
    pub id: PartitionId,
    /// The partition name.
    pub name: String,
    /// The partition's index as a Kafka partition.
    pub kafka_index: i32,
    /// Creation time, ms since the epoch.
    pub created_at_ms: i64,
    /// The offset the next appended message gets (the high watermark).
    pub next_offset: i64,
    /// The first offset still stored.
    pub log_start: i64,
    /// Creation time of the newest message, ms since the epoch (0 if none).
    pub last_created_at_ms: i64,
    /// Creation time of the oldest stored message, if any is stored.
    pub first_created_at_ms: Option<i64>,
}

/// A message read back from a partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMessage {
    /// Its offset in the partition.
    pub offset: i64,
    /// When it was stored, ms since the epoch.
    pub created_at_ms: i64,
    /// What was stored.
    pub record: Record,
}

impl StoredMessage {
    /// The message's timestamp: a Kafka record's own, else its creation time.
    pub fn timestamp_ms(&self) -> i64 {
        self.record.timestamp_ms().unwrap_or(self.created_at_ms)
    }
}

/// A broker sharing the database, as Kafka clients are told about it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct BrokerInfo {
    /// The broker id.
    pub id: i32,
    /// The advertised host.
    pub host: String,
    /// The advertised port.
    pub port: i32,
}
