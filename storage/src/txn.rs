//! Transactions (section 5.4 of the HTTP spec): pushes, acks and KV ops in
//! one storage transaction, all or nothing.
//!
//! Nothing here is a second implementation of a push, an ack or a KV op:
//! [`run`] calls `append::append` (the partition lock and the exact dedup
//! check of every push), `consume::ack::run` and `kv::eval::run` in turn on
//! one backend transaction (`sqlite::Tx` / `postgres::Tx` implement all
//! three statement traits), in the spec's order: pushes, then acks, then
//! KV. The first thing that fails decides the rollback reason. The dedup
//! window indexes the append took from the cache go back after a commit
//! and are dropped after a rollback (they hold ids that were never stored).

use std::collections::{BTreeMap, HashSet};

use crate::append::{append, AppendJob, Indexes, JobOutcome};
use crate::backend::Conn;
use crate::consume::{ack, validate_group, AckItem, AckResult};
use crate::dedup::DedupCache;
use crate::error::{Result, StorageError};
use crate::kv::{self, KvOutcome, KvPreconditionFailed, KvRequest, KvResult, Surface};
use crate::model::{PushItem, PushOutcome, PushStatus};
use crate::sealing::Sealer;
use crate::sql::segments::Kept;
use crate::Engine;

/// One element of a transaction's `operations`.
#[derive(Debug, Clone)]
pub enum TxnOp {
    /// Acknowledge a message for a consumer group.
    Ack {
        /// The consumer group ([`crate::QUEUE_MODE_GROUP`] for queue mode).
        group: String,
        /// The acknowledgement; a `None` lease borrows the bundle's single lease.
        item: AckItem,
    },
    /// Push one message.
    Push(PushItem),
}

/// A transaction as a client sends it.
#[derive(Debug, Clone, Default)]
pub struct TxnRequest {
    /// Acks and pushes, in the client's order.
    pub operations: Vec<TxnOp>,
    /// The lease ids of the acked messages (`requiredLeases`).
    pub required_leases: Vec<String>,
    /// The KV rider, evaluated last.
    pub kv: Vec<KvRequest>,
}

/// The result of one element of `operations`.
#[derive(Debug, Clone)]
pub enum TxnOpResult {
    /// An ack that applied.
    Ack(AckResult),
    /// A pushed message; [`PushStatus::Duplicate`] only for the repeat of
    /// an id pushed earlier in the same transaction.
    Push(PushOutcome),
}

/// Why a transaction rolled back: nothing of it was applied.
#[derive(Debug, Clone)]
pub enum TxnRollback {
    /// A pushed id is already stored in its partition inside the window.
    Duplicate {
        /// The flat index of the push.
        index: usize,
        /// Its queue.
        queue: String,
        /// Its partition.
        partition: String,
        /// The transaction id.
        transaction_id: String,
        /// The offset of the stored original.
        offset: i64,
    },
    /// An ack did not match a live lease, or named an unknown or already
    /// acknowledged message.
    RejectedAck {
        /// The flat index of the ack.
        index: usize,
        /// The acked transaction id.
        transaction_id: String,
        /// Why, for a person.
        detail: String,
    },
    /// A required KV op lost its precondition (`index` is flat).
    KvPrecondition(KvPreconditionFailed),
}

/// What a transaction did.
#[derive(Debug, Clone)]
pub enum TxnOutcome {
    /// Everything applied: one result per operation, then one per KV op.
    Committed {
        /// In `operations` order.
        operations: Vec<TxnOpResult>,
        /// In `kv` order.
        kv: Vec<KvResult>,
    },
    /// Nothing applied.
    RolledBack(TxnRollback),
}

/// A transaction resolved to partitions, ready to run.
#[derive(Debug)]
pub(crate) struct TxnPlan {
    /// One append job per partition pushed to.
    jobs: Vec<AppendJob>,
    /// (queue, partition) of each job.
    targets: Vec<(String, String)>,
    /// Per push: its operation index, job, index in the job, and whether
    /// it repeats an earlier push of this transaction.
    pushes: Vec<(usize, usize, usize, bool)>,
    /// Per group: the acks with their operation indexes.
    acks: BTreeMap<String, Vec<(usize, AckItem)>>,
    kv: Vec<KvRequest>,
    operations: usize,
}

/// What running a plan produced, before commit or rollback.
pub(crate) struct Ran {
    pub outcome: TxnOutcome,
    pub indexes: Indexes,
    /// Queues where a lease ended (their long polls are woken after commit).
    pub woken: Vec<String>,
}

/// Runs a plan inside `tx` at `now`. The caller commits when the outcome is
/// [`TxnOutcome::Committed`] and rolls back otherwise.
async fn run(
    tx: &mut Conn<'_>,
    plan: &TxnPlan,
    now: i64,
    cache: &DedupCache,
    sealer: &Sealer,
) -> Result<Ran> {
    let mut results: Vec<Option<TxnOpResult>> = vec![None; plan.operations];
    let rolled_back = |rollback, indexes| {
        Ok(Ran {
            outcome: TxnOutcome::RolledBack(rollback),
            indexes,
            woken: Vec::new(),
        })
    };

    // Pushes first: the same partition locks and dedup check as any push.
    let mut indexes = Vec::new();
    if !plan.jobs.is_empty() {
        let (outcomes, taken) = append(tx, &plan.jobs, now, cache, sealer).await?;
        indexes = taken;
        let mut answers = Vec::with_capacity(outcomes.len());
        for (outcome, job) in outcomes.into_iter().zip(&plan.jobs) {
            match outcome {
                JobOutcome::Done(a) => answers.push(a),
                JobOutcome::PartitionGone(_) => {
                    return Err(StorageError::PartitionNotFound(job.partition_id))
                }
                // Only Kafka producers' batches are refused; a transaction's
                // jobs carry no producer, so this is not expected.
                JobOutcome::Refused(e) => return Err(e),
            }
        }
        for &(op, j, i, repeat) in &plan.pushes {
            let a = answers[j][i];
            let transaction_id = plan.jobs[j].records[i].transaction_id();
            if !repeat && a.status == PushStatus::Duplicate {
                let (queue, partition) = plan.targets[j].clone();
                return rolled_back(
                    TxnRollback::Duplicate {
                        index: op,
                        queue,
                        partition,
                        transaction_id,
                        offset: a.offset,
                    },
                    Vec::new(),
                );
            }
            results[op] = Some(TxnOpResult::Push(PushOutcome {
                status: if repeat {
                    PushStatus::Duplicate
                } else {
                    PushStatus::Queued
                },
                message_id: a.message_id,
                transaction_id,
                offset: a.offset,
                partition_id: plan.jobs[j].partition_id,
            }));
        }
    }

    // Then acks, group by group, with the ordinary ack logic.
    let mut woken = Vec::new();
    for (group, acks) in &plan.acks {
        let items: Vec<AckItem> = acks.iter().map(|(_, item)| item.clone()).collect();
        // Nothing read here is kept for later reads: the transaction may
        // still roll back segments its own pushes appended.
        let kept = Kept {
            sealer,
            tails: None,
        };
        let (answers, released) = ack::run(tx, kept, group, &items, now).await?;
        for ((op, item), answer) in acks.iter().zip(answers) {
            let detail = match (&answer.refusal, answer.noop) {
                (Some(refusal), _) => Some(refusal.to_string()),
                // A repeat of an applied ack changes nothing, which inside a
                // transaction means the step already ran: refuse it.
                (None, true) => Some("the message is already acknowledged".to_owned()),
                (None, false) => None,
            };
            if let Some(detail) = detail {
                return rolled_back(
                    TxnRollback::RejectedAck {
                        index: *op,
                        transaction_id: item.transaction_id.clone(),
                        detail,
                    },
                    Vec::new(),
                );
            }
            results[*op] = Some(TxnOpResult::Ack(answer));
        }
        woken.extend(released);
    }

    // KV last: its preconditions are judged after the pushes' dedup.
    let kv = match kv::eval::run(tx, &plan.kv, now, plan.operations).await? {
        KvOutcome::Done(kv) => kv,
        KvOutcome::Aborted(failed) => {
            return rolled_back(TxnRollback::KvPrecondition(failed), Vec::new())
        }
    };

    let operations = results
        .into_iter()
        .map(|r| {
            r.ok_or_else(|| StorageError::Corrupt("a transaction operation has no result".into()))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Ran {
        outcome: TxnOutcome::Committed { operations, kv },
        indexes,
        woken,
    })
}

impl Engine {
    /// Runs a transaction plan in one write transaction; commits it
    /// (returning the dedup indexes to the cache) or rolls it back. Also
    /// returns the queues where a lease ended.
    async fn run_plan(&self, plan: &TxnPlan, now: i64) -> Result<(TxnOutcome, Vec<String>)> {
        let cache = &self.inner.dedup;
        let mut tx = self.inner.store.begin_write().await?;
        let ran = run(&mut tx.conn(), plan, now, cache, &self.inner.sealer).await?;
        if matches!(ran.outcome, TxnOutcome::Committed { .. }) {
            tx.commit().await?;
            for (partition_id, index) in ran.indexes {
                cache.put(partition_id, index);
            }
        } else {
            tx.rollback().await?;
        }
        Ok((ran.outcome, ran.woken))
    }

    /// Runs a transaction (section 3.8): its pushes (with the same dedup as
    /// [`Engine::push`]), then its acks, then its KV ops, in one storage
    /// transaction. Either everything applies ([`TxnOutcome::Committed`])
    /// or nothing does ([`TxnOutcome::RolledBack`], with the reason). An
    /// invalid bundle is [`StorageError::InvalidInput`] or a KV error.
    pub async fn transaction(&self, request: TxnRequest) -> Result<TxnOutcome> {
        if request.operations.is_empty() && request.kv.is_empty() {
            return Err(StorageError::InvalidInput(
                "a transaction needs at least one operation".into(),
            ));
        }
        for op in &request.operations {
            match op {
                TxnOp::Push(item) => crate::validate_push_item(item)?,
                TxnOp::Ack { group, .. } => validate_group(group)?,
            }
        }
        kv::validate(&request.kv, Surface::Transaction)?;

        // The distinct leases the bundle names; a lease-less ack borrows
        // the lease only when there is exactly one.
        let leases: HashSet<&str> = request
            .required_leases
            .iter()
            .map(String::as_str)
            .chain(request.operations.iter().filter_map(|op| match op {
                TxnOp::Ack { item, .. } => item.lease_id.as_deref(),
                TxnOp::Push(_) => None,
            }))
            .collect();
        let borrowed = match leases.iter().next() {
            Some(&lease) if leases.len() == 1 => Some(lease.to_owned()),
            _ => None,
        };

        for attempt in 0..2 {
            let plan = self.plan(&request, borrowed.as_deref()).await?;
            let now = self.inner.clock.now_ms();
            match self.run_plan(&plan, now).await {
                // A cached partition id went stale (its queue was deleted
                // meanwhile): resolve the partitions afresh and run again.
                Err(StorageError::PartitionNotFound(_)) if attempt == 0 => {
                    for (queue, _) in &plan.targets {
                        self.inner.partitions.forget_queue(queue);
                    }
                }
                Err(e) => return Err(e),
                Ok((outcome, woken)) => {
                    if matches!(outcome, TxnOutcome::Committed { .. }) {
                        let mut queues: Vec<&str> =
                            plan.targets.iter().map(|(q, _)| q.as_str()).collect();
                        queues.extend(woken.iter().map(String::as_str));
                        queues.sort_unstable();
                        queues.dedup();
                        for queue in queues {
                            self.announce(queue);
                        }
                    }
                    return Ok(outcome);
                }
            }
        }
        Err(StorageError::CommitFailed)
    }

    /// Resolves the pushes to partitions (creating queues and partitions,
    /// as a push does), folds ids repeated inside the bundle, and groups
    /// the acks by consumer group.
    async fn plan(&self, request: &TxnRequest, borrowed: Option<&str>) -> Result<TxnPlan> {
        let mut items = Vec::new();
        let mut push_ops = Vec::new();
        let mut acks: BTreeMap<String, Vec<(usize, AckItem)>> = BTreeMap::new();
        for (op, element) in request.operations.iter().enumerate() {
            match element {
                TxnOp::Push(item) => {
                    items.push(item.clone());
                    push_ops.push(op);
                }
                TxnOp::Ack { group, item } => {
                    let mut item = item.clone();
                    if item.lease_id.is_none() {
                        item.lease_id = borrowed.map(str::to_owned);
                    }
                    acks.entry(group.clone()).or_default().push((op, item));
                }
            }
        }
        let (groups, slots) = crate::fold(items);
        let mut jobs = Vec::with_capacity(groups.len());
        let mut targets = Vec::with_capacity(groups.len());
        for group in groups {
            let partition_id = self.partition_id(&group.queue, &group.partition).await?;
            jobs.push(AppendJob {
                partition_id,
                screened: crate::dedup::screen::screen(
                    &self.inner.dedup,
                    partition_id,
                    &group.records,
                ),
                records: group.records,
                // Native pushes carry no Kafka producer state.
                producer: None,
            });
            targets.push((group.queue, group.partition));
        }
        let pushes = push_ops
            .into_iter()
            .zip(slots)
            .map(|(op, (j, i, repeat))| (op, j, i, repeat))
            .collect();
        Ok(TxnPlan {
            jobs,
            targets,
            pushes,
            acks,
            kv: request.kv.clone(),
            operations: request.operations.len(),
        })
    }
}
