//! The two backends behind one type. Everything above this module is
//! backend-agnostic; everything below it is SQL.

use crate::append::{AppendJob, JobOutcome};
use crate::dedup::DedupCache;
use crate::error::Result;
use crate::model::{BrokerInfo, QueueInfo, StoredMessage};
use crate::options::QueueOptions;
use crate::postgres::PgStore;
use crate::sqlite::SqliteStore;

/// A connected backend, chosen by the database URL.
#[derive(Debug, Clone)]
pub(crate) enum Store {
    Sqlite(SqliteStore),
    Postgres(PgStore),
}

/// Calls the same method on whichever backend this is.
macro_rules! on_backend {
    ($self:ident, $s:ident => $call:expr) => {
        match $self {
            Store::Sqlite($s) => $call,
            Store::Postgres($s) => $call,
        }
    };
}

pub(crate) use on_backend;

impl Store {
    /// Connects to `url` (`sqlite:` or `postgres:`) and applies the migrations.
    pub(crate) async fn connect(url: &str) -> Result<Self> {
        if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Ok(Self::Postgres(PgStore::connect(url).await?))
        } else if url.starts_with("sqlite:") {
            Ok(Self::Sqlite(SqliteStore::connect(url).await?))
        } else {
            Err(crate::StorageError::InvalidInput(format!(
                "unsupported database URL {url:?}: use sqlite:… or postgres://…"
            )))
        }
    }

    /// How many writer tasks suit this backend: SQLite has one writer.
    pub(crate) fn writer_shards(&self) -> usize {
        match self {
            Self::Sqlite(_) => 1,
            Self::Postgres(_) => 4,
        }
    }

    pub(crate) async fn append(
        &self,
        jobs: &[AppendJob],
        now_ms: i64,
        cache: &DedupCache,
    ) -> Result<Vec<JobOutcome>> {
        on_backend!(self, s => s.append(jobs, now_ms, cache).await)
    }

    pub(crate) async fn kv(
        &self,
        ops: &[crate::kv::KvRequest],
        now: i64,
    ) -> Result<crate::kv::KvOutcome> {
        on_backend!(self, s => s.kv(ops, now).await)
    }

    pub(crate) async fn kv_sweep(&self, now: i64, limit: i64) -> Result<u64> {
        on_backend!(self, s => s.kv_sweep(now, limit).await)
    }

    pub(crate) async fn transaction(
        &self,
        plan: &crate::txn::TxnPlan,
        now: i64,
        cache: &DedupCache,
    ) -> Result<(crate::txn::TxnOutcome, Vec<String>)> {
        on_backend!(self, s => s.transaction(plan, now, cache).await)
    }

    pub(crate) async fn configure(
        &self,
        name: &str,
        options: &QueueOptions,
        now_ms: i64,
    ) -> Result<i64> {
        on_backend!(self, s => s.configure(name, options, now_ms).await)
    }

    pub(crate) async fn ensure_partition(
        &self,
        queue: &str,
        partition: &str,
        options_if_new: &QueueOptions,
        now_ms: i64,
    ) -> Result<i64> {
        on_backend!(self, s => s.ensure_partition(queue, partition, options_if_new, now_ms).await)
    }

    pub(crate) async fn queue(&self, name: &str) -> Result<Option<QueueInfo>> {
        on_backend!(self, s => s.queue(name).await)
    }

    pub(crate) async fn queues(&self) -> Result<Vec<QueueInfo>> {
        on_backend!(self, s => s.queues().await)
    }

    pub(crate) async fn delete_queue(&self, name: &str) -> Result<bool> {
        on_backend!(self, s => s.delete_queue(name).await)
    }

    pub(crate) async fn read(
        &self,
        partition_id: i64,
        from: i64,
        max_messages: usize,
        max_bytes: usize,
    ) -> Result<Vec<StoredMessage>> {
        on_backend!(self, s => s.read(partition_id, from, max_messages, max_bytes).await)
    }

    pub(crate) async fn partition_state(&self, partition_id: i64) -> Result<Option<(i64, i64)>> {
        on_backend!(self, s => s.partition_state(partition_id).await)
    }

    pub(crate) async fn offset_for_timestamp(
        &self,
        partition_id: i64,
        timestamp: i64,
    ) -> Result<Option<(i64, i64)>> {
        on_backend!(self, s => s.offset_for_timestamp(partition_id, timestamp).await)
    }

    pub(crate) async fn max_timestamp_offset(
        &self,
        partition_id: i64,
    ) -> Result<Option<(i64, i64)>> {
        on_backend!(self, s => s.max_timestamp_offset(partition_id).await)
    }

    pub(crate) async fn create_queue(
        &self,
        name: &str,
        options: &QueueOptions,
        partitions: &[String],
        now_ms: i64,
    ) -> Result<bool> {
        on_backend!(self, s => s.create_queue(name, options, partitions, now_ms).await)
    }

    pub(crate) async fn register_broker(&self, host: &str, port: i32, now_ms: i64) -> Result<i32> {
        on_backend!(self, s => s.register_broker(host, port, now_ms).await)
    }

    pub(crate) async fn broker_heartbeat(&self, id: i32, now_ms: i64) -> Result<()> {
        on_backend!(self, s => s.broker_heartbeat(id, now_ms).await)
    }

    pub(crate) async fn live_brokers(&self, since_ms: i64) -> Result<Vec<BrokerInfo>> {
        on_backend!(self, s => s.live_brokers(since_ms).await)
    }

    pub(crate) async fn init_producer_id(
        &self,
        transactional_id: Option<&str>,
        current: Option<(i64, i16)>,
        now_ms: i64,
    ) -> Result<(i64, i16)> {
        on_backend!(self, s => s.init_producer_id(transactional_id, current, now_ms).await)
    }

    pub(crate) async fn producers(
        &self,
        partition_id: i64,
    ) -> Result<Vec<crate::producers::ProducerInfo>> {
        on_backend!(self, s => s.producers(partition_id).await)
    }

    pub(crate) async fn expire_producers(&self, before_ms: i64, limit: i64) -> Result<u64> {
        on_backend!(self, s => s.expire_producers(before_ms, limit).await)
    }

    pub(crate) async fn commit_offsets(
        &self,
        group: &str,
        commits: &[(i64, crate::offsets::CommittedOffset)],
        now_ms: i64,
    ) -> Result<()> {
        on_backend!(self, s => s.commit_offsets(group, commits, now_ms).await)
    }

    pub(crate) async fn committed_offsets(
        &self,
        group: &str,
    ) -> Result<Vec<(String, i32, crate::offsets::CommittedOffset)>> {
        on_backend!(self, s => s.committed_offsets(group).await)
    }

    pub(crate) async fn group_names(&self) -> Result<Vec<String>> {
        on_backend!(self, s => s.group_names().await)
    }

    pub(crate) async fn delete_offsets(&self, group: &str, partition_ids: &[i64]) -> Result<u64> {
        on_backend!(self, s => s.delete_offsets(group, partition_ids).await)
    }

    pub(crate) async fn cluster_id(&self) -> Result<String> {
        on_backend!(self, s => s.cluster_id().await)
    }

    pub(crate) async fn ping(&self) -> Result<()> {
        on_backend!(self, s => s.ping().await)
    }

    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "sqlite",
            Self::Postgres(_) => "postgres",
        }
    }

    pub(crate) async fn close(&self) {
        on_backend!(self, s => s.close().await)
    }
}
