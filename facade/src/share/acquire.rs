//! Acquiring records for a member: a native pop of the group on one
//! partition, leased for the group's lock duration. A record delivered
//! more often than `share.delivery.count.limit` allows is dead-lettered
//! instead of being handed out (its lock ended without an acknowledgement
//! once too often).

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::share_fetch_response::AcquiredRecords;
use storage::{AckItem, AckStatus, PopRequest, PoppedMessage, StorageError, StoredMessage};

use super::config::ShareConfig;
use super::target::Target;
use crate::broker::Broker;
use crate::groups::share::{Held, Ms};
use crate::records::TimestampType;

/// How many exhausted records one acquisition dead-letters before it
/// gives up for this fetch (each is one transaction).
const MAX_EXHAUSTED_PER_FETCH: usize = 64;

/// Records acquired on one partition, ready for the response.
#[derive(Debug)]
pub(crate) struct Acquired {
    /// The records as one uncompressed batch.
    pub(crate) records: Bytes,
    /// The acquired ranges with their delivery counts.
    pub(crate) ranges: Vec<AcquiredRecords>,
    /// What the member now holds.
    pub(crate) held: Vec<Held>,
}

/// Acquires up to `max` records of `target` for `group`; `None` when the
/// partition has nothing to give (or another consumer holds it).
pub(crate) async fn acquire(
    broker: &Broker,
    group: &str,
    target: &Target,
    max: usize,
    config: &ShareConfig,
    now: Ms,
) -> Result<Option<Acquired>, StorageError> {
    let request = PopRequest {
        queue: target.queue.clone(),
        partition: Some(target.partition.clone()),
        group: group.to_owned(),
        batch: max.max(1),
        max_partitions: 1,
        lease_seconds: Some(config.lease_seconds()),
        auto_ack: false,
        subscription: config.start,
        wait: None,
    };
    for _ in 0..MAX_EXHAUSTED_PER_FETCH {
        let outcome = broker.engine.pop(&request).await?;
        let Some(first) = outcome.messages.first() else {
            return Ok(None);
        };
        if first.delivery_attempt > i64::from(config.delivery_limit) {
            dead_letter(broker, group, first).await?;
            continue;
        }
        let times = broker.produce_rules(&target.queue).await?.timestamp_type();
        return Ok(Some(package(outcome.messages, times, config, now)));
    }
    Ok(None)
}

/// Files an exhausted record in the dead-letter queue (ending its lease).
async fn dead_letter(
    broker: &Broker,
    group: &str,
    message: &PoppedMessage,
) -> Result<(), StorageError> {
    tracing::debug!(
        group,
        queue = message.queue,
        offset = message.offset,
        "kafka share group: delivery count exhausted, dead-lettered"
    );
    broker
        .engine
        .ack(
            group,
            vec![AckItem {
                transaction_id: message.record.transaction_id(),
                partition_id: message.partition_id,
                status: AckStatus::Dlq,
                error: Some(super::EXHAUSTED.to_owned()),
                lease_id: Some(message.lease_id.clone()),
            }],
        )
        .await?;
    Ok(())
}

/// The response parts and the held records of popped messages.
fn package(
    messages: Vec<PoppedMessage>,
    times: TimestampType,
    config: &ShareConfig,
    now: Ms,
) -> Acquired {
    let expires_at = now.saturating_add(config.lock_ms);
    let mut ranges: Vec<AcquiredRecords> = Vec::new();
    let mut held = Vec::with_capacity(messages.len());
    let mut stored = Vec::with_capacity(messages.len());
    for m in messages {
        let delivery = i16::try_from(m.delivery_attempt).unwrap_or(i16::MAX);
        match ranges.last_mut() {
            Some(r) if r.last_offset + 1 == m.offset && r.delivery_count == delivery => {
                r.last_offset = m.offset;
            }
            _ => ranges.push(
                AcquiredRecords::default()
                    .with_first_offset(m.offset)
                    .with_last_offset(m.offset)
                    .with_delivery_count(delivery),
            ),
        }
        held.push(Held {
            offset: m.offset,
            lease_id: m.lease_id.clone(),
            transaction_id: m.record.transaction_id(),
            delivery,
            expires_at,
        });
        stored.push(StoredMessage {
            offset: m.offset,
            created_at_ms: m.created_at_ms,
            record: m.record,
        });
    }
    let mut buf = BytesMut::new();
    crate::records::encode_batch(&stored, times, &mut buf);
    Acquired {
        records: buf.freeze(),
        ranges,
        held,
    }
}
