//! Group commit: jobs from concurrent requests share one database
//! transaction, so durability costs one commit per group, not per request.
//!
//! A few writer tasks each take whatever jobs are waiting, hand them to a
//! [`Runner`] that runs them in one transaction and commits it, and answer
//! every job. When the shared transaction fails, each job is tried alone,
//! so that one bad job cannot fail its neighbours. The caller picks the
//! task of each job (jobs sent to one task keep their order).

use std::future::Future;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use crate::error::{Result, StorageError};

/// Runs a group of jobs in one write transaction.
pub(crate) trait Runner: Send + Sync + 'static {
    /// One request's work.
    type Job: Send + std::fmt::Debug + 'static;
    /// What a job's request is answered.
    type Outcome: Send + 'static;

    /// What the job weighs against [`Runner::MAX_GROUP_WEIGHT`].
    fn weight(job: &Self::Job) -> usize;

    /// The most weight one group takes before it runs.
    const MAX_GROUP_WEIGHT: usize;

    /// Runs `jobs` in one transaction and commits it: one outcome per job,
    /// in order, or an error and nothing committed.
    fn run(&self, jobs: &[Self::Job]) -> impl Future<Output = Result<Vec<Self::Outcome>>> + Send;

    /// The outcome a job gets once its group committed; the job is the
    /// caller's again (an append gives its records back this way).
    fn settle(outcome: Self::Outcome, _job: Self::Job) -> Self::Outcome {
        outcome
    }

    /// The error a job that failed alone is answered with.
    fn failure(err: StorageError) -> StorageError {
        err
    }
}

struct Pending<R: Runner> {
    job: R::Job,
    reply: oneshot::Sender<Result<R::Outcome>>,
}

/// Resolves to a job's outcome once its group has committed.
pub(crate) type Answer<O> = oneshot::Receiver<Result<O>>;

/// The handle to the writer tasks of one runner.
pub(crate) struct GroupCommit<R: Runner> {
    tasks: Vec<mpsc::Sender<Pending<R>>>,
}

impl<R: Runner> Clone for GroupCommit<R> {
    fn clone(&self) -> Self {
        Self {
            tasks: self.tasks.clone(),
        }
    }
}

impl<R: Runner> std::fmt::Debug for GroupCommit<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit")
            .field("tasks", &self.tasks.len())
            .finish()
    }
}

impl<R: Runner> GroupCommit<R> {
    /// Starts `tasks` writer tasks sharing `runner`.
    pub(crate) fn start(runner: R, tasks: usize) -> Self {
        let runner = Arc::new(runner);
        let tasks = (0..tasks.max(1))
            .map(|_| {
                let (tx, rx) = mpsc::channel(1024);
                tokio::spawn(write(runner.clone(), rx));
                tx
            })
            .collect();
        Self { tasks }
    }

    /// Queues a job on task `key % tasks`; the returned receiver answers
    /// once its group is committed.
    pub(crate) async fn submit(&self, key: usize, job: R::Job) -> Result<Answer<R::Outcome>> {
        let (reply, answer) = oneshot::channel();
        self.tasks[key % self.tasks.len()]
            .send(Pending { job, reply })
            .await
            .map_err(|_| StorageError::ShuttingDown)?;
        Ok(answer)
    }

    /// Queues a job and waits for its outcome.
    pub(crate) async fn call(&self, key: usize, job: R::Job) -> Result<R::Outcome> {
        self.submit(key, job)
            .await?
            .await
            .map_err(|_| StorageError::ShuttingDown)?
    }
}

/// One writer task: takes every waiting job, up to the group's weight.
async fn write<R: Runner>(runner: Arc<R>, mut rx: mpsc::Receiver<Pending<R>>) {
    while let Some(first) = rx.recv().await {
        let mut weight = R::weight(&first.job);
        let mut group = vec![first];
        while weight < R::MAX_GROUP_WEIGHT {
            match rx.try_recv() {
                Ok(next) => {
                    weight += R::weight(&next.job);
                    group.push(next);
                }
                Err(_) => break,
            }
        }
        commit_group(&*runner, group).await;
    }
}

/// Commits a group; if the shared transaction fails, each job is tried
/// alone.
async fn commit_group<R: Runner>(runner: &R, group: Vec<Pending<R>>) {
    let (jobs, replies): (Vec<R::Job>, Vec<_>) =
        group.into_iter().map(|p| (p.job, p.reply)).unzip();
    match runner.run(&jobs).await {
        Ok(outcomes) => {
            for ((reply, outcome), job) in replies.into_iter().zip(outcomes).zip(jobs) {
                let _ = reply.send(Ok(R::settle(outcome, job)));
            }
        }
        Err(err) if jobs.len() == 1 => {
            if let Some(reply) = replies.into_iter().next() {
                let _ = reply.send(Err(R::failure(err)));
            }
        }
        Err(err) => {
            tracing::warn!(error = %err, jobs = jobs.len(), "group commit failed; retrying jobs one by one");
            for (job, reply) in jobs.into_iter().zip(replies) {
                let result = runner
                    .run(std::slice::from_ref(&job))
                    .await
                    .and_then(|mut o| o.pop().ok_or(StorageError::CommitFailed))
                    .map(|outcome| R::settle(outcome, job))
                    .map_err(R::failure);
                let _ = reply.send(result);
            }
        }
    }
}
