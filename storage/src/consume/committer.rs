//! The pops' and acks' group commit: concurrent consumers share one write
//! transaction ([`crate::group_commit`]), so a pop or an ack costs a share
//! of a commit instead of a whole one. Where writes are serialised anyway
//! (SQLite's single writer) this is what lets consumers go faster than
//! commits can.
//!
//! Jobs in one transaction run one after another and see each other's
//! writes, exactly as if they had committed in that order: a pop of a
//! partition another job of the group just claimed finds the lease live
//! and skips it; an ack followed by a pop of the same partition releases
//! before it claims.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::ack::{self, AckItem, AckResult};
use super::pop::{self, PopJob};
use super::PopOutcome;
use crate::backend::Store;
use crate::error::{Result, StorageError};
use crate::group_commit::{GroupCommit, Runner};
use crate::sealing::Sealer;
use crate::sql::segments::Kept;
use crate::tails::Tails;

/// The most pops and acks one transaction takes.
const MAX_GROUP_JOBS: usize = 64;

/// One consumer request's write.
#[derive(Debug)]
pub(crate) enum Job {
    /// A pop of claimable candidates.
    Pop(PopJob),
    /// The acknowledgements of one request.
    Ack {
        group: String,
        items: Vec<AckItem>,
        now: i64,
    },
}

/// What a job did.
pub(crate) enum Done {
    /// The pop's outcome.
    Popped(PopOutcome),
    /// One answer per acknowledgement, and the queues where a lease ended.
    Acked(Vec<AckResult>, Vec<String>),
}

/// The handle to the consumers' writer tasks.
#[derive(Debug)]
pub(crate) struct ConsumeCommitter {
    writers: GroupCommit<Consumer>,
    /// Spreads jobs over the writer tasks: any task may take any job, since
    /// the lease rows, not the task, decide who holds a partition.
    next: AtomicUsize,
}

impl ConsumeCommitter {
    /// Starts as many writer tasks as the store has append writers.
    pub(crate) fn start(store: Store, sealer: Arc<Sealer>, tails: Arc<Tails>) -> Self {
        let tasks = store.writer_shards();
        let consumer = Consumer {
            store,
            sealer,
            tails,
        };
        Self {
            writers: GroupCommit::start(consumer, tasks),
            next: AtomicUsize::new(0),
        }
    }

    /// Runs a pop in the next group to commit.
    pub(crate) async fn pop(&self, job: PopJob) -> Result<PopOutcome> {
        match self.call(Job::Pop(job)).await? {
            Done::Popped(outcome) => Ok(outcome),
            Done::Acked(..) => Err(StorageError::CommitFailed),
        }
    }

    /// Runs the acknowledgements of one request in the next group to
    /// commit: the answers, and the queues where a lease ended.
    pub(crate) async fn ack(
        &self,
        group: String,
        items: Vec<AckItem>,
        now: i64,
    ) -> Result<(Vec<AckResult>, Vec<String>)> {
        match self.call(Job::Ack { group, items, now }).await? {
            Done::Acked(results, woken) => Ok((results, woken)),
            Done::Popped(_) => Err(StorageError::CommitFailed),
        }
    }

    async fn call(&self, job: Job) -> Result<Done> {
        // Pops and acks on tasks of their own where there are several, so
        // that a group of pops is not made to wait for the disk by an ack.
        let turn = self.next.fetch_add(1, Ordering::Relaxed);
        let key = (turn << 1) | usize::from(matches!(job, Job::Ack { .. }));
        self.writers.call(key, job).await
    }
}

/// Runs groups of pops and acks.
#[derive(Debug)]
struct Consumer {
    store: Store,
    sealer: Arc<Sealer>,
    /// Where the segment a pop or an ack stopped inside is kept for the
    /// next one.
    tails: Arc<Tails>,
}

impl Runner for Consumer {
    type Job = Job;
    type Outcome = Done;

    fn max_group_weight(&self, _light_lately: bool) -> usize {
        MAX_GROUP_JOBS
    }

    fn weight(_: &Job) -> usize {
        1
    }

    async fn run(&self, jobs: &[Job]) -> Result<Vec<Done>> {
        let kept = Kept {
            sealer: &self.sealer,
            tails: Some(&self.tails),
        };
        // A pop's lease is soft state: lost in a crash of the database, it
        // only ends early and its messages are delivered again, as when it
        // expires. Acks, and pops that commit at delivery, are durable.
        let lazy = jobs
            .iter()
            .all(|job| matches!(job, Job::Pop(pop) if !pop.auto_ack));
        let mut tx = if lazy {
            self.store.begin_write_lazy().await?
        } else {
            self.store.begin_write().await?
        };
        let mut done = Vec::with_capacity(jobs.len());
        for job in jobs {
            done.push(match job {
                Job::Pop(pop) => Done::Popped(pop::run(&mut tx.conn(), pop, kept).await?),
                Job::Ack { group, items, now } => {
                    let (results, woken) =
                        ack::run(&mut tx.conn(), kept, group, items, *now).await?;
                    Done::Acked(results, woken)
                }
            });
        }
        tx.commit().await?;
        Ok(done)
    }
}
