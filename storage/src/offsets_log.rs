//! The `__consumer_offsets` topic: every Kafka offset commit is also a
//! record there, in Kafka's own key and value schema, so tools that read
//! committed offsets from that log (Burrow, Kafka's
//! `kafka-console-consumer --formatter OffsetsMessageFormatter`, lag
//! exporters) see the groups.
//!
//! The record is appended in the same database transaction that moves the
//! positions, under the offsets partition's row lock like any append: its
//! order in the log is the commits' order across brokers, and a commit
//! never stands without its record nor the record without its commit.
//! Reading the log is then an ordinary Fetch. Native acks move positions
//! without a record: they are far more frequent than Kafka commits, and
//! their positions are in `GET /api/v1/consumer-groups` and the metrics.
//!
//! Like Kafka's, the topic is compacted (`cleanup.policy=compact`): the
//! last commit of each (group, topic, partition) stays. A group goes to
//! partition `abs(javaHash(group)) % 50`, as Kafka places it.

use bytes::{BufMut, Bytes, BytesMut};

use crate::append::{append, AppendJob, Indexes, JobOutcome};
use crate::backend::Conn;
use crate::error::{Result, StorageError};
use crate::model::PartitionId;
use crate::offsets::CommittedOffset;
use crate::options::QueueOptions;
use crate::record::{Content, KafkaRecord, Record};
use crate::topic_configs::CLEANUP_POLICY;
use crate::topics::TopicCreation;
use crate::Engine;

/// The topic's name, as Kafka names it.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// Its partitions: Kafka's default `offsets.topic.num.partitions`.
pub const OFFSETS_PARTITIONS: i32 = 50;

/// The largest commit metadata Kafka stores (`offset.metadata.max.bytes`);
/// a longer one is `OFFSET_METADATA_TOO_LARGE`.
pub const MAX_METADATA_BYTES: usize = 4096;

/// The prefix of the names reserved for the broker's internal topics.
pub const RESERVED_PREFIX: &str = "__";

/// Whether `name` is reserved for the broker's internal topics: no client
/// creates, writes, configures or deletes such a topic through either door.
pub fn is_reserved(name: &str) -> bool {
    name.starts_with(RESERVED_PREFIX)
}

/// Whether `topic` is one of the broker's internal topics, which clients
/// may read but never write to, create or delete.
pub fn is_internal(topic: &str) -> bool {
    topic == OFFSETS_TOPIC
}

/// The partition of [`OFFSETS_TOPIC`] a group's commits go to: Kafka's
/// `Utils.abs(groupId.hashCode()) % partitions`, with Java's string hash
/// over UTF-16 code units.
pub fn partition_for(group: &str) -> i32 {
    let hash = group.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    });
    let abs = if hash == i32::MIN { 0 } else { hash.abs() };
    abs % OFFSETS_PARTITIONS
}

/// One committed offset as Kafka logs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitEntry<'a> {
    /// The group.
    pub group: &'a str,
    /// The committed partition's topic.
    pub topic: &'a str,
    /// The committed partition's Kafka index.
    pub partition: i32,
    /// What was committed.
    pub committed: &'a CommittedOffset,
    /// When, in ms since the epoch.
    pub commit_timestamp_ms: i64,
}

/// Appends a Kafka schema string (INT16 length, then the bytes).
fn put_string(buf: &mut BytesMut, what: &str, s: &str) -> Result<()> {
    let len = i16::try_from(s.len()).map_err(|_| {
        StorageError::InvalidInput(format!("{what} of {} bytes is too long to log", s.len()))
    })?;
    buf.put_i16(len);
    buf.put_slice(s.as_bytes());
    Ok(())
}

impl OffsetCommitEntry<'_> {
    /// The key: `OffsetCommitKey` version 1 (group, topic, partition).
    pub fn key(&self) -> Result<Bytes> {
        let mut buf = BytesMut::with_capacity(10 + self.group.len() + self.topic.len());
        buf.put_i16(1);
        put_string(&mut buf, "group", self.group)?;
        put_string(&mut buf, "topic", self.topic)?;
        buf.put_i32(self.partition);
        Ok(buf.freeze())
    }

    /// The value: `OffsetCommitValue` version 3 (offset, leader epoch or
    /// -1, metadata or "", commit timestamp), what Kafka 2.1+ writes.
    pub fn value(&self) -> Result<Bytes> {
        let metadata = self.committed.metadata.as_deref().unwrap_or("");
        let mut buf = BytesMut::with_capacity(26 + metadata.len());
        buf.put_i16(3);
        buf.put_i64(self.committed.offset);
        buf.put_i32(self.committed.leader_epoch.unwrap_or(-1));
        put_string(&mut buf, "metadata", metadata)?;
        buf.put_i64(self.commit_timestamp_ms);
        Ok(buf.freeze())
    }

    /// The record appended to [`OFFSETS_TOPIC`].
    fn record(&self) -> Result<Record> {
        Ok(Record {
            message_id: crate::new_message_id(),
            transaction_id: None,
            trace_id: None,
            producer_sub: None,
            content: Content::Kafka(KafkaRecord {
                key: Some(self.key()?),
                value: Some(self.value()?),
                headers: Vec::new(),
                timestamp_ms: self.commit_timestamp_ms,
                txn: None,
            }),
        })
    }
}

/// What logging commits took from the dedup cache, to give back once the
/// transaction committed; and whether the offsets partition vanished (its
/// topic was deleted meanwhile), so the caller tries again.
pub(crate) enum Logged {
    Done(Indexes),
    PartitionGone,
}

impl Engine {
    /// The id of the offsets topic's partition for `group`, creating the
    /// topic (compacted, [`OFFSETS_PARTITIONS`] partitions) if missing.
    pub(crate) async fn offsets_partition(&self, group: &str) -> Result<PartitionId> {
        let index = partition_for(group);
        if let Some(id) = self.kafka_partition(OFFSETS_TOPIC, index).await? {
            return Ok(id);
        }
        self.ensure_offsets_topic().await?;
        self.kafka_partition(OFFSETS_TOPIC, index)
            .await?
            .ok_or(StorageError::CommitFailed)
    }

    /// Creates [`OFFSETS_TOPIC`] unless this engine knows it exists.
    pub(crate) async fn ensure_offsets_topic_cached(&self) -> Result<()> {
        self.offsets_partition("").await.map(drop)
    }

    /// Creates [`OFFSETS_TOPIC`] if it does not exist (Kafka creates it on
    /// the first commit or the first Metadata request naming it).
    pub async fn ensure_offsets_topic(&self) -> Result<()> {
        let mut options = QueueOptions::for_kafka_topic();
        options
            .topic_configs
            .insert(CLEANUP_POLICY.to_owned(), "compact".to_owned());
        if self
            .create_topic(OFFSETS_TOPIC, OFFSETS_PARTITIONS, &options)
            .await?
            == TopicCreation::Created
        {
            tracing::info!(topic = OFFSETS_TOPIC, "created the offsets topic");
        }
        Ok(())
    }

    /// Appends `entries` (all of one group) to the offsets partition
    /// `partition_id` inside `conn`.
    pub(crate) async fn log_commits(
        &self,
        conn: &mut Conn<'_>,
        partition_id: PartitionId,
        entries: &[OffsetCommitEntry<'_>],
        now: i64,
    ) -> Result<Logged> {
        if entries.is_empty() {
            return Ok(Logged::Done(Vec::new()));
        }
        let records = entries
            .iter()
            .map(OffsetCommitEntry::record)
            .collect::<Result<Vec<_>>>()?;
        let job = AppendJob {
            partition_id,
            records,
            producer: None,
            screened: None,
        };
        let (mut outcomes, indexes) =
            append(conn, &[job], now, &self.inner.dedup, &self.inner.sealer).await?;
        match outcomes.pop() {
            Some(JobOutcome::Done(_)) => Ok(Logged::Done(indexes)),
            Some(JobOutcome::PartitionGone(_)) => Ok(Logged::PartitionGone),
            Some(JobOutcome::Refused(e)) => Err(e),
            None => Err(StorageError::CommitFailed),
        }
    }

    /// After a transaction that logged commits committed: gives the dedup
    /// indexes back and wakes the offsets topic's readers.
    pub(crate) fn after_logging(&self, indexes: Indexes) {
        for (partition_id, index) in indexes {
            self.inner.dedup.put(partition_id, index);
        }
        self.announce(OFFSETS_TOPIC);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_land_where_kafka_puts_them() {
        // Java: Math.abs("console-consumer-1".hashCode()) % 50, and friends.
        let java_hash = |s: &str| {
            s.encode_utf16()
                .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)))
        };
        assert_eq!(java_hash("a"), 97);
        assert_eq!(java_hash("ab"), 97 * 31 + 98);
        assert_eq!(partition_for("a"), 97 % 50);
        assert_eq!(partition_for(""), 0);
        // "polygenelubricants".hashCode() is Integer.MIN_VALUE: abs is 0.
        assert_eq!(java_hash("polygenelubricants"), i32::MIN);
        assert_eq!(partition_for("polygenelubricants"), 0);
        for g in ["group", "ledger", "é", "🙂 group"] {
            assert!((0..OFFSETS_PARTITIONS).contains(&partition_for(g)));
        }
    }

    #[test]
    fn key_and_value_follow_kafkas_schema() {
        let committed = CommittedOffset {
            offset: 42,
            metadata: Some("m\0".to_owned()),
            leader_epoch: None,
        };
        let entry = OffsetCommitEntry {
            group: "g",
            topic: "t1",
            partition: 3,
            committed: &committed,
            commit_timestamp_ms: 0x0102_0304_0506,
        };
        let key = entry.key().expect("key");
        assert_eq!(&key[..], b"\x00\x01\x00\x01g\x00\x02t1\x00\x00\x00\x03");
        let value = entry.value().expect("value");
        let mut want = vec![0, 3];
        want.extend(42i64.to_be_bytes());
        want.extend((-1i32).to_be_bytes());
        want.extend([0, 2, b'm', 0]);
        want.extend(0x0102_0304_0506i64.to_be_bytes());
        assert_eq!(&value[..], &want[..]);
    }

    #[test]
    fn metadata_too_long_for_the_schema_is_an_error() {
        let committed = CommittedOffset {
            offset: 1,
            metadata: Some("x".repeat(40_000)),
            leader_epoch: Some(2),
        };
        let entry = OffsetCommitEntry {
            group: "g",
            topic: "t",
            partition: 0,
            committed: &committed,
            commit_timestamp_ms: 0,
        };
        assert!(entry.value().is_err());
    }
}
