//! The consumption methods of [`Store`], dispatched to whichever backend it is.

use std::sync::Arc;

use super::dlq::DeadLetterRow;
use super::pop::{CandidateFilter, PopJob};
use super::wake::Wake;
use super::{
    AckItem, AckResult, DeadLetterQuery, GroupPosition, LeaseExtension, PopOutcome, Subscription,
    SubscriptionMode,
};
use crate::backend::{on_db, Store};
use crate::error::Result;
use crate::options::QueueOptions;

impl Store {
    /// The wake-ups of an engine on this store: on PostgreSQL they are
    /// shared with the other brokers through `LISTEN`/`NOTIFY`.
    pub(crate) fn start_wake(&self) -> Arc<Wake> {
        match self {
            Self::Sqlite(_) => Wake::local(),
            Self::Postgres(s) => {
                let (wake, kicks) = Wake::shared();
                s.start_wake(&wake, kicks);
                wake
            }
        }
    }

    pub(crate) async fn queue_ref(&self, name: &str) -> Result<Option<(i64, QueueOptions)>> {
        on_db!(self, s => s.queue_ref(name).await)
    }

    pub(crate) async fn register(
        &self,
        queue_id: i64,
        group: &str,
        mode: SubscriptionMode,
        now: i64,
    ) -> Result<bool> {
        on_db!(self, s => s.register(queue_id, group, mode, now).await)
    }

    pub(crate) async fn candidates(
        &self,
        filter: &CandidateFilter<'_>,
    ) -> Result<Vec<(i64, bool)>> {
        on_db!(self, s => s.candidates(filter).await)
    }

    /// Creates missing lease rows before a pop locks them; only PostgreSQL
    /// needs them to exist (to skip locked rows), SQLite's upsert creates them.
    pub(crate) async fn create_lease_rows(&self, partition_ids: &[i64], group: &str) -> Result<()> {
        match self {
            Self::Sqlite(_) => Ok(()),
            Self::Postgres(s) => s.create_lease_rows(partition_ids, group).await,
        }
    }

    pub(crate) async fn next_expiry(
        &self,
        queue_id: i64,
        group: &str,
        now: i64,
    ) -> Result<Option<i64>> {
        on_db!(self, s => s.next_expiry(queue_id, group, now).await)
    }

    pub(crate) async fn pop(&self, job: &PopJob<'_>) -> Result<PopOutcome> {
        on_db!(self, s => s.pop(job).await)
    }

    pub(crate) async fn ack(
        &self,
        group: &str,
        items: &[AckItem],
        now: i64,
    ) -> Result<(Vec<AckResult>, Vec<String>)> {
        on_db!(self, s => s.ack(group, items, now).await)
    }

    pub(crate) async fn extend_lease(
        &self,
        lease_id: &str,
        until: i64,
        now: i64,
    ) -> Result<LeaseExtension> {
        on_db!(self, s => s.extend_lease(lease_id, until, now).await)
    }

    pub(crate) async fn positions(
        &self,
        group: Option<&str>,
        queue: Option<&str>,
        now: i64,
    ) -> Result<Vec<GroupPosition>> {
        on_db!(self, s => s.positions(group, queue, now).await)
    }

    pub(crate) async fn subscriptions(&self, group: Option<&str>) -> Result<Vec<Subscription>> {
        on_db!(self, s => s.subscriptions(group).await)
    }

    pub(crate) async fn delete_group(
        &self,
        group: &str,
        queue: Option<&str>,
        metadata: bool,
    ) -> Result<u64> {
        on_db!(self, s => s.delete_group(group, queue, metadata).await)
    }

    pub(crate) async fn seek(
        &self,
        group: &str,
        queue: &str,
        at: Option<i64>,
        now: i64,
    ) -> Result<Option<u64>> {
        on_db!(self, s => s.seek(group, queue, at, now).await)
    }

    pub(crate) async fn set_subscription_start(&self, group: &str, at: i64) -> Result<u64> {
        on_db!(self, s => s.set_subscription_start(group, at).await)
    }

    pub(crate) async fn dead_letter_counts(
        &self,
        queue_id: i64,
        group: Option<&str>,
    ) -> Result<Vec<(i64, i64)>> {
        on_db!(self, s => s.dead_letter_counts(queue_id, group).await)
    }

    pub(crate) async fn dead_letters(
        &self,
        query: &DeadLetterQuery,
    ) -> Result<(Vec<DeadLetterRow>, i64)> {
        on_db!(self, s => s.dead_letters(query).await)
    }

    pub(crate) async fn dead_letters_of(
        &self,
        partition_id: i64,
        transaction_id: &str,
    ) -> Result<Vec<DeadLetterRow>> {
        on_db!(self, s => s.dead_letters_of(partition_id, transaction_id).await)
    }

    pub(crate) async fn partition_ref(
        &self,
        partition_id: i64,
    ) -> Result<Option<(String, String, i64, i64)>> {
        on_db!(self, s => s.partition_ref(partition_id).await)
    }
}
