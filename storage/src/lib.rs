//! The storage engine of the queen broker: one API, two backends.
//!
//! Both front doors (the HTTP API in the binary, the Kafka facade) call the
//! [`Engine`]; nothing above it knows which database is underneath.
//!
//! Where things live (a call from a front door reaches SQL through at most
//! two layers: an `impl Engine` method, then a function of `sql/`):
//! - [`model`]: what callers push and read back; [`options`]: queue options;
//!   [`record`]: the stored form of a message and of a segment.
//! - The engine's logic per concern, each with its `impl Engine` block:
//!   `append` (dedup and offset allocation under the partition lock) with
//!   `dedup` (the in-window index of transaction-id hashes) and `committer`
//!   (group commit); `topics`, `log`, `brokers` (what the Kafka facade needs
//!   besides pushes); `partitions` (the partition-id cache by name and by
//!   Kafka index); `tails` (the segment a read ended inside, for the next
//!   read); [`offsets`], [`producers`]; `consume/` (pops, acks,
//!   leases, cursors, groups, dead letters, long-poll wake-ups); [`kv`];
//!   `txn` (acks, pushes and KV ops in one transaction); [`users`] (SCRAM
//!   credentials of the Kafka door); [`acls`] (Kafka ACLs and the
//!   authorizer both doors ask).
//! - [`offsets_log`]: the `__consumer_offsets` topic each Kafka commit is
//!   also appended to; [`resource_configs`]: configs of brokers and groups.
//! - [`metrics`]: the engine's Prometheus families (group commits, waits
//!   for a connection, retention's work); `stats`: what a scrape reads from
//!   the database (offsets, sizes, lag), one aggregated statement each.
//! - `sql/<concern>.rs`: every statement of that concern, written once for
//!   both backends, rows decoded into `FromRow` structs.
//! - `backend`: what differs between SQLite and PostgreSQL, as named
//!   operations (row locks, lease try-locks, key locks, KV versions, bulk
//!   appends, cross-broker wake-ups), and the handles statements run on.
//! - `sqlite/`, `postgres/`: connection set-up, that backend's bulk
//!   statements, and its own maintenance (SQLite's WAL checkpoints,
//!   PostgreSQL's `LISTEN`/`NOTIFY`).
//!
//! A push flows: [`Engine::push`] validates, folds ids repeated inside the
//! request, resolves (and creates) partitions, and hands one job per
//! partition to the committer; a writer task takes every waiting job, runs
//! `append::append` in one transaction, commits, and answers each job.

pub mod acls;
mod append;
mod backend;
mod brokers;
pub mod clock;
mod committer;
mod consume;
mod dedup;
mod error;
mod group_commit;
mod ids;
pub mod kv;
mod log;
pub mod metrics;
pub mod mirror;
pub mod model;
pub mod offsets;
pub mod offsets_log;
pub mod options;
mod partitions;
mod postgres;
pub mod producers;
pub mod record;
mod reseal;
pub mod resource_configs;
mod retention;
pub mod sealing;
mod sql;
mod sqlite;
mod stats;
mod tails;
pub mod topic_configs;
mod topics;
pub mod transactions;
mod txn;
pub mod users;
mod vacuum;

use std::collections::HashMap;
use std::sync::Arc;

pub use acls::{
    Access, AclBinding, AclError, AclFilter, AclOperation, AclPermission, Authorizer,
    AuthorizerConfig, PatternFilter, PatternType, ResourceType, CLUSTER_NAME,
};
pub use clock::{Clock, ManualClock, SystemClock};
pub use consume::{
    AckItem, AckRefusal, AckResult, AckStatus, DeadLetter, DeadLetterPage, DeadLetterQuery,
    GroupPosition, LeaseExtension, MessageState, MessageView, PartitionDepth, PopOutcome,
    PopRequest, PoppedMessage, Subscription, SubscriptionMode, QUEUE_MODE_GROUP,
};
pub use error::{DatabaseError, Result, StorageError};
pub use ids::{new_message_id, new_message_ids};
pub use kv::{
    KvEntry, KvExpiry, KvOp, KvOutcome, KvPreconditionFailed, KvReason, KvRequest, KvResult,
};
pub use log::{LogBounds, PendingAppend, TimestampedOffset};
pub use mirror::{
    MirrorAppend, MirrorPartitionStatus, MirrorTopicStatus, MirrorWrite, MirroredRecord,
};
pub use model::{
    BrokerInfo, PartitionId, PartitionInfo, PushItem, PushOutcome, PushStatus, QueueInfo,
    QueueSummary, StoredMessage, DEFAULT_PARTITION, MAX_NAME_BYTES, MAX_TRANSACTION_ID_BYTES,
};
pub use options::QueueOptions;
pub use record::{
    BodyView, Content, Header, HeaderViews, KafkaRecord, KafkaView, Record, RecordView,
    StoredRecords,
};
pub use reseal::ResealReport;
pub use stats::{GroupLag, PartitionSize, PoolStats, TopicStats};
pub use topics::TopicCreation;
pub use txn::{TxnOp, TxnOpResult, TxnOutcome, TxnRequest, TxnRollback};
pub use users::{ScramCredential, ScramMechanism, UserError, UserInfo};

use append::{AppendJob, JobOutcome};
use backend::Store;
use committer::Committer;

/// The memory the dedup indexes of all partitions share unless
/// [`Engine::set_dedup_memory`] says otherwise: about 16 bits per windowed
/// id, plus up to 0.7 MiB per busy partition's tail. Past it, idle
/// partitions' indexes go and busy ones' filters are folded
/// ([`dedup::DedupCache`]).
pub const DEFAULT_DEDUP_MEMORY_BYTES: usize = 64 << 20;

/// The storage engine. Cheap to clone; every clone shares one connection pool
/// and one set of writer tasks.
#[derive(Debug, Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    store: Store,
    committer: Committer,
    clock: Arc<dyn Clock>,
    /// The dedup window indexes shared by the committer and transactions.
    dedup: Arc<dedup::DedupCache>,
    consume: consume::ConsumeState,
    /// Partition ids by name and by Kafka index.
    partitions: partitions::PartitionCache,
    /// Permits for the dedup merges this broker runs at once.
    merging: Arc<tokio::sync::Semaphore>,
    /// Notified when a dedup merge of this broker ends.
    merge_ended: Arc<tokio::sync::Notify>,
    /// This engine's name as the holder of a duty (`retention`, `compaction`).
    instance: String,
    /// Rows the background tasks deleted since they last vacuumed.
    vacuum: vacuum::Debt,
    /// The duties (retention, compaction) this engine holds, and until when.
    duties: retention::HeldDuties,
    /// Seals and opens the payloads of encrypted queues.
    sealer: Arc<sealing::Sealer>,
    /// The segments reads ended inside, for the reads that go on from there.
    tails: Arc<tails::Tails>,
}

/// The items of one request that go to one partition.
struct Group {
    queue: String,
    partition: String,
    records: Vec<Record>,
    /// The effective transaction id of each record.
    txns: Vec<String>,
}

impl Engine {
    /// Connects to `url` (`sqlite:…` or `postgres://…`) on the wall clock.
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_with_clock(url, Arc::new(SystemClock)).await
    }

    /// Connects to `url`, measuring every window with `clock`.
    pub async fn connect_with_clock(url: &str, clock: Arc<dyn Clock>) -> Result<Self> {
        Self::open(url, clock, &sealing::Keyring::default()).await
    }

    /// Connects to `url`, measuring every window with `clock`; the
    /// payloads of queues with `encryptionEnabled` are sealed under the
    /// current key of `keys` and opened with whichever of its keys sealed
    /// them. Without a key, such queues refuse pushes and reads with
    /// [`sealing::SealError::NoKey`].
    pub async fn open(url: &str, clock: Arc<dyn Clock>, keys: &sealing::Keyring) -> Result<Self> {
        let store = Store::connect(url).await?;
        let cache = Arc::new(dedup::DedupCache::new(DEFAULT_DEDUP_MEMORY_BYTES));
        let sealer = Arc::new(sealing::Sealer::new(keys));
        let committer = Committer::start(
            store.clone(),
            clock.clone(),
            cache.clone(),
            sealer.clone(),
            store.writer_shards(),
        );
        let tails = Arc::new(tails::Tails::default());
        let consume = consume::ConsumeState::new(
            store.start_wake(),
            store.clone(),
            sealer.clone(),
            tails.clone(),
        );
        Ok(Self {
            inner: Arc::new(Inner {
                store,
                committer,
                clock,
                dedup: cache,
                consume,
                partitions: Default::default(),
                merging: Arc::new(tokio::sync::Semaphore::new(dedup::maintain::MAX_MERGES)),
                merge_ended: Default::default(),
                instance: uuid::Uuid::new_v4().to_string(),
                vacuum: Default::default(),
                duties: Default::default(),
                sealer,
                tails,
            }),
        })
    }

    /// Sets the memory the dedup indexes of all partitions share, in bytes.
    pub fn set_dedup_memory(&self, bytes: usize) {
        self.inner.dedup.set_budget(bytes);
    }

    /// The clock the engine measures time with.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.inner.clock
    }

    /// Creates the queue, or replaces all its options; its `Default`
    /// partition is created if missing. Messages and partitions are kept.
    pub async fn configure_queue(&self, name: &str, options: &QueueOptions) -> Result<QueueInfo> {
        validate_name("queue name", name)?;
        self.check_sealable(options)?;
        let now = self.inner.clock.now_ms();
        sql::catalog::configure(&self.inner.store, name, options, now).await?;
        self.inner.partitions.forget_queue(name);
        self.queue(name)
            .await?
            .ok_or_else(|| StorageError::QueueNotFound(name.to_owned()))
    }

    /// Refuses options that ask for encryption on a broker without a key:
    /// its queue would then refuse every push.
    fn check_sealable(&self, options: &QueueOptions) -> Result<()> {
        if options.encryption_enabled && !self.inner.sealer.has_key() {
            return Err(sealing::SealError::NoKey.into());
        }
        Ok(())
    }

    /// The queue with its partitions, if it exists.
    pub async fn queue(&self, name: &str) -> Result<Option<QueueInfo>> {
        sql::catalog::queue(&self.inner.store, name).await
    }

    /// The name of the queue whose Kafka topic id is `topic_id`.
    pub async fn topic_name(&self, topic_id: uuid::Uuid) -> Result<Option<String>> {
        sql::catalog::name_of_topic(&self.inner.store, topic_id).await
    }

    /// Every queue, by name.
    pub async fn queues(&self) -> Result<Vec<QueueInfo>> {
        sql::catalog::queues(&self.inner.store).await
    }

    /// Deletes a queue with everything in it; returns whether it existed.
    /// The broker's internal topics (`__…`) are refused, whichever door asks.
    pub async fn delete_queue(&self, name: &str) -> Result<bool> {
        if offsets_log::is_reserved(name) {
            return Err(StorageError::Reserved(name.to_owned()));
        }
        let existed = sql::catalog::delete_queue(&self.inner.store, name).await?;
        self.inner.partitions.forget_queue(name);
        Ok(existed)
    }

    /// Appends native messages, creating queues and partitions on first use.
    ///
    /// Answers one outcome per item, in order. Inside a partition, a
    /// transaction id already stored within the queue's dedup window is a
    /// duplicate and writes nothing; so is an id repeated inside this
    /// request (whatever the window). Nothing is written if any item is
    /// invalid.
    pub async fn push(&self, items: Vec<PushItem>) -> Result<Vec<PushOutcome>> {
        for item in &items {
            validate_push_item(item)?;
        }
        let (mut groups, slots) = fold(items);

        // Every partition's job goes to the writers at once, so a request
        // that spans partitions shares their group commits.
        let mut pending = Vec::with_capacity(groups.len());
        for group in &mut groups {
            let records = std::mem::take(&mut group.records);
            pending.push(self.submit(group, records).await?);
        }
        let mut answers = Vec::with_capacity(groups.len());
        for (group, (partition_id, answer)) in groups.iter().zip(pending) {
            answers.push(self.settle(group, partition_id, answer).await?);
        }
        for group in &groups {
            self.announce(&group.queue);
        }
        Ok(slots
            .into_iter()
            .map(|(g, i, repeat)| {
                let (partition_id, appended) = &answers[g];
                let a = appended[i];
                PushOutcome {
                    status: if repeat {
                        PushStatus::Duplicate
                    } else {
                        a.status
                    },
                    message_id: a.message_id,
                    transaction_id: groups[g].txns[i].clone(),
                    offset: a.offset,
                    partition_id: *partition_id,
                }
            })
            .collect())
    }

    /// Hands a group's records to the writers.
    async fn submit(
        &self,
        group: &Group,
        records: Vec<Record>,
    ) -> Result<(PartitionId, committer::Answer)> {
        let partition_id = self.partition_id(&group.queue, &group.partition).await?;
        let screened = dedup::screen::screen(&self.inner.dedup, partition_id, &records);
        let job = AppendJob {
            partition_id,
            records,
            producer: None,
            screened,
        };
        Ok((partition_id, self.inner.committer.submit(job).await?))
    }

    /// Waits for a group's append; if the cached partition id turned out
    /// stale (the queue was deleted and pushed to again), resolves it afresh
    /// and appends once more.
    async fn settle(
        &self,
        group: &Group,
        mut partition_id: PartitionId,
        mut answer: committer::Answer,
    ) -> Result<(PartitionId, Vec<append::Appended>)> {
        for attempt in 0..2 {
            match answer.await.map_err(|_| StorageError::ShuttingDown)?? {
                JobOutcome::Done(appended) => return Ok((partition_id, appended)),
                JobOutcome::Refused(e) => return Err(e),
                JobOutcome::PartitionGone(records) => {
                    tracing::debug!(attempt, queue = %group.queue, "partition vanished; resolving again");
                    self.inner.partitions.forget_queue(&group.queue);
                    (partition_id, answer) = self.submit(group, records).await?;
                }
            }
        }
        Err(StorageError::CommitFailed)
    }

    /// The id of a partition, creating the queue and partition if missing.
    async fn partition_id(&self, queue: &str, partition: &str) -> Result<PartitionId> {
        if let Some(id) = self.inner.partitions.by_name(queue, partition) {
            return Ok(id);
        }
        let now = self.inner.clock.now_ms();
        let id = sql::catalog::ensure_partition(
            &self.inner.store,
            queue,
            partition,
            &QueueOptions::default(),
            now,
        )
        .await?;
        self.inner.partitions.put(queue, partition, id);
        Ok(id)
    }

    /// The id of partition `index` of topic `topic`, `None` when there is
    /// no such partition (or topic).
    pub async fn kafka_partition(&self, topic: &str, index: i32) -> Result<Option<PartitionId>> {
        if let Some(id) = self.inner.partitions.by_index(topic, index) {
            return Ok(Some(id));
        }
        let Some(info) = self.queue(topic).await? else {
            return Ok(None);
        };
        self.inner.partitions.put_queue(&info);
        Ok(info
            .partitions
            .iter()
            .find(|p| p.kafka_index == index)
            .map(|p| p.id))
    }

    /// Up to `max` messages of a partition from offset `from` on, in order.
    /// An unknown queue or partition reads as empty.
    pub async fn read(
        &self,
        queue: &str,
        partition: &str,
        from: i64,
        max: usize,
    ) -> Result<Vec<StoredMessage>> {
        let Some(info) = self.queue(queue).await? else {
            return Ok(Vec::new());
        };
        let Some(p) = info.partitions.iter().find(|p| p.name == partition) else {
            return Ok(Vec::new());
        };
        let stored = sql::segments::read(
            &self.inner.store,
            &self.inner.sealer,
            &self.inner.tails,
            p.id,
            from,
            max,
            usize::MAX,
        )
        .await?;
        stored.iter().flat_map(StoredRecords::decode).collect()
    }

    /// Checks that the database answers.
    pub async fn ping(&self) -> Result<()> {
        self.inner.store.ping().await
    }

    /// Which backend this engine runs on: `"sqlite"` or `"postgres"`.
    pub fn backend(&self) -> &'static str {
        self.inner.store.name()
    }

    /// Closes the database connections. Appends still queued fail.
    pub async fn close(&self) {
        self.inner.store.close().await;
    }
}

/// Checks a pushed item: its names, and the length of its transaction id.
fn validate_push_item(item: &PushItem) -> Result<()> {
    validate_name("queue name", &item.queue)?;
    validate_name("partition name", &item.partition)?;
    if let Some(txn) = &item.record.transaction_id {
        if txn.len() > MAX_TRANSACTION_ID_BYTES {
            return Err(StorageError::InvalidInput(format!(
                "transactionId is {} bytes; at most {MAX_TRANSACTION_ID_BYTES} are allowed",
                txn.len()
            )));
        }
    }
    Ok(())
}

/// Folds a request's items into groups per partition. `slots[i]` says
/// where item i's answer comes from (group, record in the group) and
/// whether it repeats an earlier item of the request, which is stored once.
fn fold(items: Vec<PushItem>) -> (Vec<Group>, Vec<(usize, usize, bool)>) {
    let mut groups: Vec<Group> = Vec::new();
    let mut group_of: HashMap<(String, String), usize> = HashMap::new();
    let mut leader_of: Vec<dedup::TxnMap<usize>> = Vec::new();
    let mut slots = Vec::with_capacity(items.len());
    let mut last = None;
    for item in items {
        // Items mostly come in runs for one partition: the last item's
        // group is tried first, without copying and hashing its names.
        let same = |g: &usize| {
            let group: &Group = &groups[*g];
            group.queue == item.queue && group.partition == item.partition
        };
        let g = match last.filter(same) {
            Some(g) => g,
            None => *group_of
                .entry((item.queue.clone(), item.partition.clone()))
                .or_insert_with(|| {
                    groups.push(Group {
                        queue: item.queue.clone(),
                        partition: item.partition.clone(),
                        records: Vec::new(),
                        txns: Vec::new(),
                    });
                    leader_of.push(dedup::TxnMap::default());
                    groups.len() - 1
                }),
        };
        last = Some(g);
        let txn = dedup::TxnKey {
            hash: item.record.txn_hash(),
            id: item.record.transaction_id(),
        };
        if let Some(&leader) = leader_of[g].get(&txn) {
            slots.push((g, leader, true));
        } else {
            let index = groups[g].records.len();
            groups[g].records.push(item.record);
            groups[g].txns.push(txn.id.clone());
            leader_of[g].insert(txn, index);
            slots.push((g, index, false));
        }
    }
    (groups, slots)
}

/// Checks a queue or partition name: non-empty, bounded, and free of the
/// characters that could not travel in a URL path.
pub fn validate_name(what: &'static str, name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(StorageError::InvalidInput(format!(
            "{what} must not be empty"
        )));
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(StorageError::NameTooLong {
            what,
            limit: MAX_NAME_BYTES,
        });
    }
    if let Some(c) = name
        .chars()
        .find(|c| matches!(c, '/' | '?' | '#') || c.is_control())
    {
        return Err(StorageError::InvalidInput(format!(
            "{what} {name:?} contains {c:?}, which cannot appear in a name"
        )));
    }
    Ok(())
}
