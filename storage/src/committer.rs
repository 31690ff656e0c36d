//! The appends' group commit: appends from concurrent requests share one
//! database transaction ([`crate::group_commit`]).
//!
//! Appends are sharded by partition id over the writer tasks, so jobs of
//! one partition always go to the same task and keep their order; each
//! group runs [`crate::append::append`] in one transaction.

use std::sync::Arc;

use crate::append::{AppendJob, JobOutcome};
use crate::backend::Store;
use crate::clock::Clock;
use crate::dedup::DedupCache;
use crate::error::{Result, StorageError};
use crate::group_commit::{self, GroupCommit, Runner};
use crate::sealing::Sealer;

/// Resolves to a job's outcome once its group has committed.
pub(crate) type Answer = group_commit::Answer<JobOutcome>;

/// The most records one group commit takes.
const GROUP_RECORDS: usize = 50_000;

/// The most records one group commit takes on SQLite while small appends
/// come in: about one client batch (librdkafka's 1 MiB of 100-byte
/// records). Its one writer commits the groups one after another, so a
/// small append waits for the group in progress before its own; groups
/// of up to 50,000 records, five batches of a full-speed producer, made
/// that wait five times as long (end-to-end p50 under load 15-17 ms
/// against 6-9 ms with this bound; README, Performance round 2). Without
/// small appends the bound only costs throughput (a single producer's
/// 1.97M rec/s fell to 1.64M: twice the commits), so it applies only
/// while they come. On PostgreSQL, whose writer tasks commit side by
/// side, it did not move the latency.
const SQLITE_GROUP_RECORDS_BESIDE_LIGHT: usize = 12_000;

/// A group commit slower than this is logged (at debug level), to tell
/// what held the writer up.
const SLOW_COMMIT: std::time::Duration = std::time::Duration::from_millis(50);

/// The handle to the append writer tasks.
#[derive(Debug, Clone)]
pub(crate) struct Committer {
    writers: GroupCommit<Appender>,
}

impl Committer {
    /// Starts `shards` writer tasks on `store`.
    pub(crate) fn start(
        store: Store,
        clock: Arc<dyn Clock>,
        cache: Arc<DedupCache>,
        sealer: Arc<Sealer>,
        shards: usize,
    ) -> Self {
        let appender = Appender {
            store,
            clock,
            cache,
            sealer,
        };
        Self {
            writers: GroupCommit::start(appender, shards),
        }
    }

    /// Queues a job; the returned receiver answers once it is committed.
    pub(crate) async fn submit(&self, job: AppendJob) -> Result<Answer> {
        let shard = job.partition_id.get().unsigned_abs() as usize;
        self.writers.submit(shard, job).await
    }
}

/// Runs groups of appends.
#[derive(Debug)]
struct Appender {
    store: Store,
    clock: Arc<dyn Clock>,
    cache: Arc<DedupCache>,
    sealer: Arc<Sealer>,
}

impl Runner for Appender {
    type Job = AppendJob;
    type Outcome = JobOutcome;

    fn max_group_weight(&self, light_lately: bool) -> usize {
        match (&self.store, light_lately) {
            (Store::Sqlite(_), true) => SQLITE_GROUP_RECORDS_BESIDE_LIGHT,
            _ => GROUP_RECORDS,
        }
    }

    fn weight(job: &AppendJob) -> usize {
        job.records.len()
    }

    /// Appends in one transaction.
    async fn run(&self, jobs: &[AppendJob]) -> Result<Vec<JobOutcome>> {
        let start = std::time::Instant::now();
        let mut tx = self.store.begin_write().await?;
        let begun = start.elapsed();
        let (outcomes, indexes) = crate::append::append(
            &mut tx.conn(),
            jobs,
            self.clock.now_ms(),
            &self.cache,
            &self.sealer,
        )
        .await?;
        let appended = start.elapsed();
        tx.commit().await?;
        if start.elapsed() >= SLOW_COMMIT {
            // Split in three: waiting for the writer (a checkpoint holds
            // it), writing, and the commit's sync.
            tracing::debug!(
                jobs = jobs.len(),
                held_ms = start.elapsed().as_millis() as u64,
                writer_wait_ms = begun.as_millis() as u64,
                commit_ms = (start.elapsed() - appended).as_millis() as u64,
                "append: slow group commit"
            );
        }
        observe_commit(start, jobs);
        // Only what was committed may enter the cache.
        for (partition_id, index) in indexes {
            self.cache.put(partition_id, index);
        }
        Ok(outcomes)
    }

    /// Gives a job whose partition vanished its records back, for another try.
    fn settle(outcome: JobOutcome, job: AppendJob) -> JobOutcome {
        match outcome {
            JobOutcome::PartitionGone(_) => JobOutcome::PartitionGone(job.records),
            done => done,
        }
    }

    /// Clients are told the append may be retried; the cause is logged.
    fn failure(err: StorageError) -> StorageError {
        tracing::error!(error = %err, "append failed");
        StorageError::CommitFailed
    }
}

/// Records a committed group in the storage metrics: once per commit,
/// never per record.
fn observe_commit(start: std::time::Instant, jobs: &[AppendJob]) {
    let metrics = &*crate::metrics::STORAGE;
    metrics.commit_seconds.observe_since(start);
    metrics.group_jobs.observe(jobs.len() as f64);
    let records: usize = jobs.iter().map(|j| j.records.len()).sum();
    metrics.group_records.observe(records as f64);
}
