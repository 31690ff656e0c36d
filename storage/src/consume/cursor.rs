//! Where a group's cursor starts on a partition it has not consumed yet.
//!
//! Queue mode starts at the oldest stored message. A named group starts
//! where its subscription (stored per queue at registration) says: `all`
//! at the oldest stored message, `new` and `from` at the first message
//! created at or after the subscription's start time. Registration seeds
//! the existing partitions itself (see `register` in `sql/consume.rs`), so this only
//! decides for partitions created later, or for a group whose
//! subscription was deleted meanwhile (which then follows the request).

use super::{PartitionState, SubscriptionMode, QUEUE_MODE_GROUP};
use crate::backend::Conn;
use crate::error::Result;
use crate::model::PartitionId;
use crate::sql::consume;

/// The committed offset (next to consume) a new cursor starts at.
pub(crate) async fn seed(
    tx: &mut Conn<'_>,
    part: &PartitionState,
    partition_id: PartitionId,
    group: &str,
    requested: SubscriptionMode,
) -> Result<i64> {
    if group == QUEUE_MODE_GROUP {
        return Ok(part.log_start);
    }
    let start = match consume::subscription_start(tx, part.queue_id, group).await? {
        Some(start) => start,
        None => match requested {
            SubscriptionMode::All => None,
            SubscriptionMode::New => return Ok(part.next_offset),
            SubscriptionMode::From(at) => Some(at),
        },
    };
    match start {
        None => Ok(part.log_start),
        Some(at) => Ok(consume::first_offset_at(tx, partition_id, at)
            .await?
            .unwrap_or(part.next_offset)
            .max(part.log_start)),
    }
}
