//! Giving records back to the queue: a member left, its session closed,
//! or it acquired records it can no longer hold. Each lease is released
//! with a native `retry` of its lowest record, which frees the lease and
//! redelivers the span from there (the records below were acknowledged).

use std::collections::BTreeMap;

use storage::{AckItem, AckStatus, PartitionId};

use crate::broker::Broker;
use crate::groups::share::Held;

/// Releases `held` records of `group`. Leases that ended meanwhile are
/// skipped by the engine; a failure is logged (the locks end anyway).
pub(crate) async fn release(broker: &Broker, group: &str, held: Vec<(PartitionId, Held)>) {
    let mut lowest: BTreeMap<(PartitionId, String), Held> = BTreeMap::new();
    for (partition, h) in held {
        let key = (partition, h.lease_id.clone());
        match lowest.get(&key) {
            Some(l) if l.offset <= h.offset => {}
            _ => {
                lowest.insert(key, h);
            }
        }
    }
    if lowest.is_empty() {
        return;
    }
    let items = lowest
        .into_iter()
        .map(|((partition_id, lease_id), h)| AckItem {
            transaction_id: h.transaction_id,
            partition_id,
            status: AckStatus::Retry,
            error: None,
            lease_id: Some(lease_id),
        })
        .collect();
    if let Err(e) = broker.engine.ack(group, items).await {
        tracing::warn!(group, error = %e, "kafka share group: releasing records failed");
    }
}
