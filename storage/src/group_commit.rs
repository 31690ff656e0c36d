//! Group commit: jobs from concurrent requests share one database
//! transaction, so durability costs one commit per group, not per request.
//!
//! A few writer tasks each take whatever jobs are waiting, hand them to a
//! [`Runner`] that runs them in one transaction and commits it, and answer
//! every job. When the shared transaction fails, each job is tried alone,
//! so that one bad job cannot fail its neighbours. The caller picks the
//! task of each job by its key; jobs of one key keep their order.
//!
//! A task serves its keys in turn, not first come first served, and light
//! jobs ahead of heavy ones (see `Backlog::group`): a latency-bound
//! producer's few records wait for the group being committed, then commit
//! in a small group of their own, instead of behind (or together with) the
//! megabyte batches a bulk producer queued before them on another
//! partition. On SQLite, whose one writer commits a bulk batch in tens of
//! milliseconds, that is most of a small append's latency under load;
//! while light jobs come in, a runner may also bound its groups tighter
//! ([`Runner::max_group_weight`]), so that the group in progress when a
//! light job arrives is a short one.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use crate::error::{Result, StorageError};

/// Runs a group of jobs in one write transaction.
pub(crate) trait Runner: Send + Sync + 'static {
    /// One request's work.
    type Job: Send + std::fmt::Debug + 'static;
    /// What a job's request is answered.
    type Outcome: Send + 'static;

    /// What the job weighs against [`Runner::max_group_weight`].
    fn weight(job: &Self::Job) -> usize;

    /// The most weight one group takes before it runs. `light_lately`
    /// says whether light jobs came in lately (within [`LIGHT_LATELY`]):
    /// each of them waits for the group in progress, which a smaller
    /// bound keeps short.
    fn max_group_weight(&self, light_lately: bool) -> usize;

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
    key: usize,
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
            .send(Pending { key, job, reply })
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

/// A job weighing at most this is light; it is also what one key adds to
/// a group in one turn (at least one job, then more while its share of the
/// turn weighs less).
const LIGHT_WEIGHT: usize = 1024;

/// How long after a light job came in a task's traffic still counts as
/// latency-bound ([`Runner::max_group_weight`]): a latency-bound producer
/// sends several a second, while a bulk stream's occasional short batch
/// (its first, its last) does not bound its groups for long.
const LIGHT_LATELY: Duration = Duration::from_millis(100);

/// Jobs a task has taken off its channel and not yet grouped, by key.
struct Backlog<R: Runner> {
    /// Each key's waiting jobs, in order.
    jobs: HashMap<usize, VecDeque<Pending<R>>>,
    /// The keys with waiting jobs, in the order they are served.
    turns: VecDeque<usize>,
    len: usize,
    /// Whether the last group was of light jobs only: the next one is not,
    /// so heavy jobs are never put off twice in a row.
    light_last: bool,
    /// When the last light job came in.
    light_at: Option<Instant>,
}

impl<R: Runner> Backlog<R> {
    /// The most jobs taken off the channel ahead of their group: as many
    /// again as the channel holds.
    const MAX_JOBS: usize = 1024;

    fn new() -> Self {
        Self {
            jobs: HashMap::new(),
            turns: VecDeque::new(),
            len: 0,
            light_last: false,
            light_at: None,
        }
    }

    fn push(&mut self, pending: Pending<R>) {
        if is_light::<R>(&pending) {
            self.light_at = Some(Instant::now());
        }
        let key = pending.key;
        let queue = self.jobs.entry(key).or_default();
        if queue.is_empty() {
            self.turns.push_back(key);
        }
        queue.push_back(pending);
        self.len += 1;
    }

    /// Whether a light job came in within [`LIGHT_LATELY`].
    fn light_lately(&self) -> bool {
        self.light_at.is_some_and(|at| at.elapsed() < LIGHT_LATELY)
    }

    /// Takes whatever the channel holds, up to [`Self::MAX_JOBS`].
    fn fill(&mut self, rx: &mut mpsc::Receiver<Pending<R>>) {
        while self.len < Self::MAX_JOBS {
            match rx.try_recv() {
                Ok(pending) => self.push(pending),
                Err(_) => break,
            }
        }
    }

    /// The next group. While light and heavy jobs both wait, every other
    /// group takes only the light jobs at the heads of their keys, so that
    /// they commit right after the group being committed and not in one
    /// that a heavy job makes long. Otherwise each key in turn adds up to
    /// [`LIGHT_WEIGHT`], until the next job would take the group past
    /// `max_weight` (a job heavier than that goes alone) or nothing waits.
    fn group(&mut self, max_weight: usize) -> Vec<Pending<R>> {
        let heads = || self.jobs.values().filter_map(|q| q.front());
        let light_only = !self.light_last
            && heads().any(|p| is_light::<R>(p))
            && heads().any(|p| !is_light::<R>(p));
        self.light_last = light_only;
        let mut group = Vec::new();
        let mut weight = 0;
        let mut full = false;
        // A group of light jobs passes over the keys once.
        let mut turns_left = if light_only {
            self.turns.len()
        } else {
            usize::MAX
        };
        while !full && turns_left > 0 {
            turns_left -= 1;
            let Some(key) = self.turns.pop_front() else {
                break;
            };
            let Some(queue) = self.jobs.get_mut(&key) else {
                continue;
            };
            // A turn takes one job, then more while its share is under
            // LIGHT_WEIGHT; a group of light jobs takes only light ones.
            let mut turn = 0;
            while let Some(next) = queue.front() {
                let next_weight = R::weight(&next.job);
                if !group.is_empty() && weight + turn + next_weight > max_weight {
                    full = true;
                    break;
                }
                let turn_open = turn == 0 || light_only || turn < LIGHT_WEIGHT;
                if !turn_open || light_only && !is_light::<R>(next) {
                    break;
                }
                let Some(pending) = queue.pop_front() else {
                    break;
                };
                self.len -= 1;
                turn += next_weight;
                group.push(pending);
            }
            weight += turn;
            if queue.is_empty() {
                self.jobs.remove(&key);
            } else if turn == 0 && full {
                // It had no turn: it goes first in the next group.
                self.turns.push_front(key);
            } else {
                self.turns.push_back(key);
            }
        }
        group
    }
}

fn is_light<R: Runner>(pending: &Pending<R>) -> bool {
    R::weight(&pending.job) <= LIGHT_WEIGHT
}

/// One writer task: groups the waiting jobs (see the module doc) and
/// commits each group.
async fn write<R: Runner>(runner: Arc<R>, mut rx: mpsc::Receiver<Pending<R>>) {
    let mut backlog = Backlog::<R>::new();
    loop {
        if backlog.len == 0 {
            match rx.recv().await {
                Some(first) => backlog.push(first),
                None => return,
            }
        }
        backlog.fill(&mut rx);
        let max_weight = runner.max_group_weight(backlog.light_lately());
        commit_group(&*runner, backlog.group(max_weight)).await;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Jobs that are their own weight.
    struct Weights;

    /// The weight of a full group in these tests.
    const MAX_WEIGHT: usize = 50_000;

    impl Runner for Weights {
        type Job = usize;
        type Outcome = ();

        fn weight(job: &usize) -> usize {
            *job
        }

        fn max_group_weight(&self, _: bool) -> usize {
            MAX_WEIGHT
        }

        async fn run(&self, jobs: &[usize]) -> Result<Vec<()>> {
            Ok(vec![(); jobs.len()])
        }
    }

    /// A backlog of (key, weight) jobs, queued in that order.
    fn backlog(jobs: &[(usize, usize)]) -> Backlog<Weights> {
        let mut backlog = Backlog::new();
        for &(key, job) in jobs {
            let (reply, _) = oneshot::channel();
            backlog.push(Pending { key, job, reply });
        }
        backlog
    }

    fn take(backlog: &mut Backlog<Weights>) -> Vec<(usize, usize)> {
        backlog
            .group(MAX_WEIGHT)
            .into_iter()
            .map(|p| (p.key, p.job))
            .collect()
    }

    #[test]
    fn light_jobs_commit_apart_from_heavy_ones_queued_before_them() {
        let mut b = backlog(&[(1, 20_000), (1, 20_000), (2, 3), (1, 20_000), (2, 5)]);
        assert_eq!(take(&mut b), [(2, 3), (2, 5)]);
        // Heavy jobs are never put off twice in a row.
        b.push(Pending {
            key: 2,
            job: 7,
            reply: oneshot::channel().0,
        });
        assert_eq!(take(&mut b), [(1, 20_000), (2, 7), (1, 20_000)]);
        // A group never weighs more than the bound.
        assert_eq!(take(&mut b), [(1, 20_000)]);
        assert!(take(&mut b).is_empty());
    }

    #[test]
    fn only_a_light_job_marks_the_traffic_latency_bound() {
        let mut b = backlog(&[(1, 20_000), (1, 30_000)]);
        assert!(!b.light_lately(), "heavy jobs alone keep full groups");
        b.push(Pending {
            key: 2,
            job: 3,
            reply: oneshot::channel().0,
        });
        assert!(b.light_lately());
    }

    #[test]
    fn a_key_keeps_its_order_and_a_light_job_behind_a_heavy_one_waits_for_it() {
        let mut b = backlog(&[(1, 20_000), (1, 3), (2, 4)]);
        assert_eq!(take(&mut b), [(2, 4)]);
        assert_eq!(take(&mut b), [(1, 20_000), (1, 3)]);
    }

    #[test]
    fn light_jobs_alone_share_one_group_up_to_the_weight() {
        let jobs: Vec<(usize, usize)> = (0..120).map(|i| (i % 3, 1_000)).collect();
        let mut b = backlog(&jobs);
        let first = take(&mut b);
        let weight: usize = first.iter().map(|&(_, w)| w).sum();
        assert_eq!(weight, MAX_WEIGHT, "a full group, not one key's turn");
        assert_eq!(take(&mut b).len(), 50);
        assert_eq!(take(&mut b).len(), 20);
    }

    #[test]
    fn every_job_is_grouped_once_in_its_keys_order_within_the_bound() {
        // Weights cycling through light and heavy, on five keys.
        let jobs: Vec<(usize, usize)> = (0..500)
            .map(|i| (i * 7 % 5, [1, 900, 5_000, 30_000, 40][i % 5] + i))
            .collect();
        let mut b = backlog(&jobs);
        let mut seen = Vec::new();
        loop {
            let group = take(&mut b);
            if group.is_empty() {
                break;
            }
            let weight: usize = group.iter().map(|&(_, w)| w).sum();
            assert!(
                group.len() == 1 || weight <= MAX_WEIGHT,
                "only a job alone may weigh more than the bound: {group:?}"
            );
            seen.extend(group);
        }
        assert_eq!(seen.len(), jobs.len());
        for key in 0..5 {
            let sent: Vec<_> = jobs.iter().filter(|j| j.0 == key).collect();
            let got: Vec<_> = seen.iter().filter(|j| j.0 == key).collect();
            assert_eq!(sent, got, "key {key}");
        }
    }
}
