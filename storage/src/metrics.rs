//! The storage engine's own metrics: group commits, waits for a database
//! connection, and the work retention and compaction did. Updated where it
//! happens (a few atomic adds per transaction, never per record); what is
//! read from the database at scrape time is in [`crate::stats`].

use std::sync::{LazyLock, OnceLock};
use std::time::Instant;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use telemetry::{buckets, Histogram};

/// The label set naming a connection pool.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct PoolLabel {
    pool: &'static str,
}

/// A connection pool, by its `pool` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pool {
    /// SQLite's one writer connection.
    Writer,
    /// SQLite's read-only connections.
    Reader,
    /// PostgreSQL's pool, for reads and writes.
    Postgres,
}

impl Pool {
    /// The label value.
    pub fn name(self) -> &'static str {
        match self {
            Self::Writer => "writer",
            Self::Reader => "reader",
            Self::Postgres => "postgres",
        }
    }
}

/// The storage families of this process.
#[derive(Debug)]
pub struct StorageMetrics {
    /// A group commit's transaction, from taking the writer to the commit.
    pub(crate) commit_seconds: Histogram,
    /// Records per group commit.
    pub(crate) group_records: Histogram,
    /// Appends (requests' partition batches) per group commit.
    pub(crate) group_jobs: Histogram,
    acquire: Family<PoolLabel, Histogram, fn() -> Histogram>,
    /// The acquire histograms of [`Pool::Writer`], [`Pool::Reader`] and
    /// [`Pool::Postgres`], resolved on first use (so that only the pools
    /// of the backend in use become series).
    acquire_by_pool: [OnceLock<Histogram>; 3],
    /// Records retention dropped by moving log starts.
    pub(crate) retention_records: Counter,
    /// Segment rows retention deleted below log starts.
    pub(crate) retention_segments: Counter,
    /// Records compaction removed (superseded keys, old tombstones).
    pub(crate) compaction_records: Counter,
    /// Dedup: fresh ids' probes of sealed runs' filters.
    pub(crate) dedup_probes: Counter,
    /// Dedup: the probes a filter answered "maybe".
    pub(crate) dedup_maybes: Counter,
    /// Dedup: run pages appends read to resolve "maybe"s.
    pub(crate) dedup_pages_read: Counter,
    /// Dedup: entries merges wrote into new runs.
    pub(crate) dedup_merged_entries: Counter,
}

/// The storage metrics of this process (every engine of it feeds them).
pub static STORAGE: LazyLock<StorageMetrics> = LazyLock::new(|| StorageMetrics {
    commit_seconds: Histogram::new(buckets::SECONDS),
    group_records: Histogram::new(buckets::RECORDS),
    group_jobs: Histogram::new(buckets::RECORDS),
    acquire: Family::new_with_constructor(|| Histogram::new(buckets::SECONDS)),
    acquire_by_pool: Default::default(),
    retention_records: Counter::default(),
    retention_segments: Counter::default(),
    compaction_records: Counter::default(),
    dedup_probes: Counter::default(),
    dedup_maybes: Counter::default(),
    dedup_pages_read: Counter::default(),
    dedup_merged_entries: Counter::default(),
});

/// Awaits `acquire`, recording how long it took in `pool`'s histogram.
pub(crate) async fn timed_acquire<T>(
    pool: Pool,
    acquire: impl std::future::Future<Output = T>,
) -> T {
    let start = Instant::now();
    let conn = acquire.await;
    let metrics = &*STORAGE;
    metrics.acquire_by_pool[pool as usize]
        .get_or_init(|| {
            metrics
                .acquire
                .get_or_create_owned(&PoolLabel { pool: pool.name() })
        })
        .observe_since(start);
    conn
}

/// Registers the storage families into `registry` (prefixed `queen`).
pub fn register(registry: &mut Registry) {
    let m = &*STORAGE;
    registry.register(
        "storage_commit_duration_seconds",
        "Duration of a group commit's transaction (appends), from taking the writer to the commit",
        m.commit_seconds.clone(),
    );
    registry.register(
        "storage_group_commit_records",
        "Records per group commit",
        m.group_records.clone(),
    );
    registry.register(
        "storage_group_commit_appends",
        "Appends (one partition's batch of one request each) per group commit",
        m.group_jobs.clone(),
    );
    registry.register(
        "db_pool_acquire_duration_seconds",
        "Time spent waiting for a pooled database connection (write transactions and multi-statement reads)",
        m.acquire.clone(),
    );
    registry.register(
        "retention_records_deleted",
        "Records retention dropped by moving partitions' log starts",
        m.retention_records.clone(),
    );
    registry.register(
        "retention_segments_deleted",
        "Segment rows retention deleted below partitions' log starts",
        m.retention_segments.clone(),
    );
    registry.register(
        "compaction_records_removed",
        "Records log compaction removed (superseded keys and expired tombstones)",
        m.compaction_records.clone(),
    );
    registry.register(
        "dedup_filter_probes",
        "Probes of sealed dedup runs' filters by appended transaction ids (one per id and live run)",
        m.dedup_probes.clone(),
    );
    registry.register(
        "dedup_filter_maybes",
        "Dedup filter probes answered \"maybe\" (a false positive unless the id is a duplicate)",
        m.dedup_maybes.clone(),
    );
    registry.register(
        "dedup_pages_read",
        "Dedup run pages appends read to resolve filters' \"maybe\"s",
        m.dedup_pages_read.clone(),
    );
    registry.register(
        "dedup_merged_entries",
        "Entries (transaction-id hashes) dedup merges wrote into new runs",
        m.dedup_merged_entries.clone(),
    );
}
