//! Read-only lookups that authorization needs before a request runs: the
//! queue and groups a partition id or a lease id stands for. An HTTP ack
//! names only a partition id and a lease renewal only a lease id, yet the
//! ACLs are about queue and group names, and a refused request must change
//! nothing, so the names are read first.

use crate::backend::on_db;
use crate::error::Result;
use crate::model::PartitionId;
use crate::Engine;

impl Engine {
    /// The name of the queue partition `id` belongs to, if it exists (the
    /// lookup message reads use).
    pub async fn partition_queue(&self, id: PartitionId) -> Result<Option<String>> {
        Ok(crate::sql::consume::partition_ref(&self.inner.store, id)
            .await?
            .map(|p| p.queue))
    }

    /// The queue and consumer group of every partition lease held under
    /// `lease_id`, live or not, without repeats.
    pub async fn lease_holders(&self, lease_id: &str) -> Result<Vec<(String, String)>> {
        Ok(on_db!(self.inner.store.reader(), pool => sqlx::query_as(
            "SELECT DISTINCT q.name, l.consumer_group FROM consumer_leases l \
             JOIN partitions p ON p.id = l.partition_id \
             JOIN queues q ON q.id = p.queue_id WHERE l.lease_id = $1",
        )
        .bind(lease_id)
        .fetch_all(pool)
        .await?))
    }
}
