//! Consumption: consumer groups, cursors, leases, acknowledgements and dead
//! letters, written once for both backends.
//!
//! Where things live:
//! - `cursor`: where a group starts on a partition (subscriptions, seeks);
//! - `lease`: the per-(partition, group) lease row, claimed with a
//!   conditional upsert, and lease renewal;
//! - `pop`: the pop transaction (claim, read from the cursor, record the span);
//! - `ack`: the ack transaction (resolve transaction ids in the leased span,
//!   move the cursor, retry or dead-letter);
//! - `dlq`: dead letters; `groups`: the admin views (positions, depth, seek,
//!   delete); `wake`: waking long polls on this broker and, through
//!   PostgreSQL `LISTEN`/`NOTIFY`, on the others;
//! - `sql`: the statements, the same on both backends, expanded inside
//!   `sqlite/consume.rs` and `postgres/consume.rs`.
//!
//! A pop flows: [`Engine::pop`] registers a named group's subscription the
//! first time it meets the queue, lists the claimable partitions (pending
//! messages, no live lease for the group) on a reader, then runs one write
//! transaction that claims each candidate's lease row, reads the messages
//! after the group's cursor and records the leased span. With `wait`, an
//! empty pop sleeps until a push (or a released lease) on the queue wakes it.
//!
//! Positions live in `consumer_cursors` with Kafka semantics
//! (`committed_offset` = the next offset to consume), so Kafka consumer
//! groups share them; everything native-only (leases, delivery attempts)
//! lives beside them in `consumer_leases`.

pub(crate) mod ack;
mod committer;
pub(crate) mod cursor;
pub(crate) mod dlq;
pub(crate) mod groups;
pub(crate) mod lease;
pub(crate) mod pop;
pub(crate) mod wake;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::error::{Result, StorageError};
use crate::model::PartitionId;
use crate::options::QueueOptions;
use crate::record::Record;
use crate::Engine;

pub use ack::{AckItem, AckRefusal, AckResult, AckStatus};
pub use dlq::{DeadLetter, DeadLetterPage, DeadLetterQuery};
pub use groups::{GroupPosition, MessageState, MessageView, PartitionDepth, Subscription};
pub use lease::LeaseExtension;

/// The built-in group of consumers that name none ("queue mode").
pub const QUEUE_MODE_GROUP: &str = "__QUEUE_MODE__";

/// The lease length when neither the request nor the queue gives one, in seconds.
pub(crate) const DEFAULT_LEASE_SECONDS: i64 = 60;

/// The most messages one pop returns, whatever the request asks.
pub(crate) const MAX_POP_BATCH: usize = 10_000;

/// The most partitions one pop claims.
pub(crate) const MAX_POP_PARTITIONS: usize = 1_000;

/// How far past the cursor an ack without a lease id looks for its
/// transaction ids, in messages: the search is bounded, so an ack never
/// reads a whole partition.
pub(crate) const UNLEASED_ACK_SPAN: i64 = 10_000;

/// How far below the cursor an ack without a lease id looks, in messages,
/// to recognise a repeat of an acknowledgement already applied.
pub(crate) const UNLEASED_ACK_BELOW: i64 = 1_000;

/// Where a named consumer group starts when it first meets a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubscriptionMode {
    /// From the oldest stored message (the backlog is processed).
    All,
    /// After the messages stored at registration: only later ones.
    New,
    /// From the first message created at or after this time (ms).
    From(i64),
}

impl SubscriptionMode {
    /// Reads a mode name as the HTTP API and the configuration spell it:
    /// `new` (or `new-only`, `new_only`, `newonly`) is [`Self::New`];
    /// anything else is [`Self::All`].
    pub fn from_name(name: &str) -> Self {
        match name.to_ascii_lowercase().as_str() {
            "new" | "new-only" | "new_only" | "newonly" => Self::New,
            _ => Self::All,
        }
    }

    /// The name stored with a subscription.
    pub fn name(self) -> &'static str {
        match self {
            Self::All => "all",
            Self::New => "new",
            Self::From(_) => "from",
        }
    }
}

/// One pop, as a consumer asks for it.
#[derive(Debug, Clone)]
pub struct PopRequest {
    /// The queue.
    pub queue: String,
    /// Only this partition, or any partition of the queue.
    pub partition: Option<String>,
    /// The consumer group; [`QUEUE_MODE_GROUP`] for queue mode.
    pub group: String,
    /// The most messages to return, across every claimed partition.
    pub batch: usize,
    /// The most partitions to claim.
    pub max_partitions: usize,
    /// The lease length in seconds; `None` takes the queue's `leaseTime`.
    pub lease_seconds: Option<i64>,
    /// Commit at delivery: the cursor moves past the returned messages and
    /// no lease is held (at-most-once).
    pub auto_ack: bool,
    /// Where a named group starts the first time it meets the queue.
    pub subscription: SubscriptionMode,
    /// Hold an empty pop this long for messages to arrive.
    pub wait: Option<Duration>,
}

impl PopRequest {
    /// A pop of up to `batch` messages from one partition of `queue` in
    /// queue mode, without waiting.
    pub fn new(queue: &str, batch: usize) -> Self {
        Self {
            queue: queue.to_owned(),
            partition: None,
            group: QUEUE_MODE_GROUP.to_owned(),
            batch,
            max_partitions: 1,
            lease_seconds: None,
            auto_ack: false,
            subscription: SubscriptionMode::All,
            wait: None,
        }
    }
}

/// A message handed to a consumer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoppedMessage {
    /// The queue it belongs to.
    pub queue: String,
    /// The partition name.
    pub partition: String,
    /// The partition id (a decimal string on the wire).
    pub partition_id: PartitionId,
    /// Its offset in the partition.
    pub offset: i64,
    /// When it was stored, ms since the epoch.
    pub created_at_ms: i64,
    /// What was stored.
    pub record: Record,
    /// 1 on first delivery to the group, +1 per redelivery.
    pub delivery_attempt: i64,
    /// `failed` acks already charged against this message.
    pub retry_count: i64,
    /// The lease it was delivered under; empty after a commit at delivery.
    pub lease_id: String,
}

/// What a pop returned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PopOutcome {
    /// The lease shared by every claimed partition; empty for a commit at
    /// delivery or an empty pop.
    pub lease_id: String,
    /// The messages, in offset order per partition.
    pub messages: Vec<PoppedMessage>,
    /// How many partitions delivered messages.
    pub partitions_claimed: usize,
}

/// Per-engine state of consumption: the long-poll wake-ups, the writers
/// that group-commit pops and acks, and the subscriptions this engine
/// knows to be registered.
#[derive(Debug)]
pub(crate) struct ConsumeState {
    pub(crate) wake: Arc<wake::Wake>,
    writers: committer::ConsumeCommitter,
    /// (queue id, group) pairs whose subscription row exists: saves a write
    /// transaction per pop. Only an optimisation; the pop transaction
    /// copes with a row deleted meanwhile.
    registered: Mutex<HashSet<(i64, String)>>,
}

impl ConsumeState {
    pub(crate) fn new(
        wake: Arc<wake::Wake>,
        store: crate::backend::Store,
        sealer: Arc<crate::sealing::Sealer>,
        tails: Arc<crate::tails::Tails>,
    ) -> Self {
        Self {
            wake,
            writers: committer::ConsumeCommitter::start(store, sealer, tails),
            registered: Mutex::new(HashSet::new()),
        }
    }

    fn registered(&self) -> std::sync::MutexGuard<'_, HashSet<(i64, String)>> {
        self.registered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// A partition with its queue, as consumption needs it.
#[derive(Debug, Clone)]
pub(crate) struct PartitionState {
    pub queue_id: i64,
    pub queue: String,
    pub partition: String,
    pub next_offset: i64,
    pub log_start: i64,
    /// Where a read stops: the first record of an open Kafka transaction.
    pub last_stable: i64,
    pub options: QueueOptions,
}

/// The stored position of a group on a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CursorRow {
    pub committed_offset: i64,
    pub retry_count: i64,
}

/// The lease row of a (partition, group).
#[derive(Debug, Clone, PartialEq, Eq, Default, sqlx::FromRow)]
pub(crate) struct LeaseRow {
    pub lease_id: Option<String>,
    pub expires_at: i64,
    pub span_start: i64,
    pub span_end: i64,
    pub delivered_to: i64,
    pub attempts: i64,
}

impl LeaseRow {
    /// Whether `lease_id` is the live lease at `now`.
    pub(crate) fn is_live(&self, lease_id: &str, now: i64) -> bool {
        self.expires_at > now && self.lease_id.as_deref() == Some(lease_id)
    }
}

/// A dead letter about to be filed.
#[derive(Debug)]
pub(crate) struct NewDeadLetter<'a> {
    pub queue_id: i64,
    pub partition_id: PartitionId,
    pub group: &'a str,
    pub offset: i64,
    pub transaction_id: String,
    pub error: Option<&'a str>,
    pub retry_count: i64,
    pub created_at: i64,
    pub failed_at: i64,
    pub record: Vec<u8>,
}

/// Checks a consumer-group name: non-empty and bounded.
pub(crate) fn validate_group(group: &str) -> Result<()> {
    if group.is_empty() {
        return Err(StorageError::InvalidInput(
            "consumer group must not be empty".into(),
        ));
    }
    if group.len() > crate::MAX_NAME_BYTES {
        return Err(StorageError::NameTooLong {
            what: "consumer group",
            limit: crate::MAX_NAME_BYTES,
        });
    }
    Ok(())
}

/// The lease length of a pop, in seconds: the request's, the queue's, or
/// the default; never below one second.
pub(crate) fn lease_seconds(requested: Option<i64>, options: &QueueOptions) -> i64 {
    requested
        .filter(|s| *s > 0)
        .or((options.lease_time > 0).then_some(options.lease_time))
        .unwrap_or(DEFAULT_LEASE_SECONDS)
        .max(1)
}

impl Engine {
    /// Pops messages for a consumer: claims up to `max_partitions`
    /// partitions of the queue that hold messages after the group's cursor
    /// and have no live lease for the group, and returns up to `batch`
    /// messages in offset order. With `wait`, an empty pop waits for a push
    /// (on this broker or another sharing the database) until the deadline.
    /// An unknown queue or partition is empty.
    pub async fn pop(&self, request: &PopRequest) -> Result<PopOutcome> {
        pop::pop(self, request).await
    }

    /// Pops from every queue whose namespace and task match (an empty
    /// selector matches anything) and that `access` may READ, higher
    /// `priority` first. One lease id covers every claimed partition.
    pub async fn pop_matching(
        &self,
        namespace: Option<&str>,
        task: Option<&str>,
        request: &PopRequest,
        access: &crate::Access,
    ) -> Result<PopOutcome> {
        pop::pop_matching(self, namespace, task, request, access).await
    }

    /// Acknowledges messages for `group`: one answer per item, in order.
    /// Items of one partition are applied together (Section 5.7 of the
    /// HTTP spec): cumulative `completed`, `failed` with its retry budget
    /// and dead-lettering, `retry`, `dlq`.
    pub async fn ack(&self, group: &str, items: Vec<AckItem>) -> Result<Vec<AckResult>> {
        validate_group(group)?;
        let now = self.inner.clock.now_ms();
        // Partitions in ascending id order within the request.
        let (results, woken) = self
            .inner
            .consume
            .writers
            .ack(group.to_owned(), items, now)
            .await?;
        for queue in woken {
            self.inner.consume.wake.announce(&queue);
        }
        Ok(results)
    }

    /// Extends every live lease held under `lease_id` to at least
    /// `now + seconds`; never shortens one, never revives an expired or
    /// released one.
    pub async fn extend_lease(&self, lease_id: &str, seconds: i64) -> Result<LeaseExtension> {
        let now = self.inner.clock.now_ms();
        let until = now.saturating_add(seconds.max(0).saturating_mul(1000));
        crate::sql::consume::extend_lease(&self.inner.store, lease_id, until, now).await
    }

    /// Wakes the long polls waiting on `queue`, here and on other brokers.
    pub(crate) fn announce(&self, queue: &str) {
        self.inner.consume.wake.announce(queue);
    }
}
