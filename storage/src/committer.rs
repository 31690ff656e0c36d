//! Group commit: appends from concurrent requests share one database
//! transaction, so durability costs one commit per group, not per request.
//!
//! Appends are sharded by partition id over a few writer tasks; each task
//! takes whatever jobs are waiting, runs them in one transaction with
//! [`crate::append::append`] and answers every job. Jobs of one partition
//! always go to the same task, so they keep their order.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use crate::append::{AppendJob, JobOutcome};
use crate::backend::Store;
use crate::clock::Clock;
use crate::dedup::DedupCache;
use crate::error::{Result, StorageError};
use crate::sealing::Sealer;

/// The most records one group commit takes before it runs.
const MAX_GROUP_RECORDS: usize = 50_000;

struct Pending {
    job: AppendJob,
    reply: oneshot::Sender<Result<JobOutcome>>,
}

/// Resolves to a job's outcome once its group has committed.
pub(crate) type Answer = oneshot::Receiver<Result<JobOutcome>>;

/// A group commit slower than this is logged (at debug level), to tell
/// what held the writer up.
const SLOW_COMMIT: std::time::Duration = std::time::Duration::from_millis(50);

/// The handle to the writer tasks.
#[derive(Debug, Clone)]
pub(crate) struct Committer {
    shards: Vec<mpsc::Sender<Pending>>,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending").field("job", &self.job).finish()
    }
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
        let shards = (0..shards.max(1))
            .map(|_| {
                let (tx, rx) = mpsc::channel(1024);
                let writer = Writer {
                    store: store.clone(),
                    clock: clock.clone(),
                    cache: cache.clone(),
                    sealer: sealer.clone(),
                };
                tokio::spawn(writer.run(rx));
                tx
            })
            .collect();
        Self { shards }
    }

    /// Queues a job; the returned receiver answers once it is committed.
    pub(crate) async fn submit(
        &self,
        job: AppendJob,
    ) -> Result<oneshot::Receiver<Result<JobOutcome>>> {
        let shard = job.partition_id.get().unsigned_abs() as usize % self.shards.len();
        let (reply, answer) = oneshot::channel();
        self.shards[shard]
            .send(Pending { job, reply })
            .await
            .map_err(|_| StorageError::ShuttingDown)?;
        Ok(answer)
    }
}

/// One writer task's share of the engine.
struct Writer {
    store: Store,
    clock: Arc<dyn Clock>,
    cache: Arc<DedupCache>,
    sealer: Arc<Sealer>,
}

impl Writer {
    async fn run(self, mut rx: mpsc::Receiver<Pending>) {
        while let Some(first) = rx.recv().await {
            let mut records = first.job.records.len();
            let mut group = vec![first];
            while records < MAX_GROUP_RECORDS {
                match rx.try_recv() {
                    Ok(next) => {
                        records += next.job.records.len();
                        group.push(next);
                    }
                    Err(_) => break,
                }
            }
            self.commit_group(group).await;
        }
    }

    /// Commits a group; if the shared transaction fails, each job is tried
    /// alone so that one bad job cannot fail its neighbours.
    async fn commit_group(&self, group: Vec<Pending>) {
        let (jobs, replies): (Vec<AppendJob>, Vec<_>) =
            group.into_iter().map(|p| (p.job, p.reply)).unzip();
        match self.append(&jobs).await {
            Ok(outcomes) => {
                for ((reply, outcome), job) in replies.into_iter().zip(outcomes).zip(jobs) {
                    let _ = reply.send(Ok(hand_back(outcome, job)));
                }
            }
            Err(err) if jobs.len() == 1 => {
                tracing::error!(error = %err, "append failed");
                for reply in replies {
                    let _ = reply.send(Err(StorageError::CommitFailed));
                }
            }
            Err(err) => {
                tracing::warn!(error = %err, jobs = jobs.len(), "group commit failed; retrying jobs one by one");
                for (job, reply) in jobs.into_iter().zip(replies) {
                    let result = self
                        .append(std::slice::from_ref(&job))
                        .await
                        .and_then(|mut o| o.pop().ok_or(StorageError::CommitFailed))
                        .map(|outcome| hand_back(outcome, job));
                    if let Err(err) = &result {
                        tracing::error!(error = %err, "append failed");
                    }
                    let _ = reply.send(result.map_err(|_| StorageError::CommitFailed));
                }
            }
        }
    }

    /// Appends in one transaction.
    async fn append(&self, jobs: &[AppendJob]) -> Result<Vec<JobOutcome>> {
        let start = std::time::Instant::now();
        let mut tx = self.store.begin_write().await?;
        let (outcomes, indexes) = crate::append::append(
            &mut tx.conn(),
            jobs,
            self.clock.now_ms(),
            &self.cache,
            &self.sealer,
        )
        .await?;
        tx.commit().await?;
        if start.elapsed() >= SLOW_COMMIT {
            tracing::debug!(
                jobs = jobs.len(),
                held_ms = start.elapsed().as_millis() as u64,
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

/// Gives a job whose partition vanished its records back, for another try.
fn hand_back(outcome: JobOutcome, job: AppendJob) -> JobOutcome {
    match outcome {
        JobOutcome::PartitionGone(_) => JobOutcome::PartitionGone(job.records),
        done => done,
    }
}
