//! Acknowledgements of a member's acquired records (ShareFetch and
//! ShareAcknowledge): checked against what the member holds, then applied
//! by the native ack in one transaction per request.
//!
//! The native ack is cumulative on a partition: ACCEPTs move the group's
//! cursor; the lowest RELEASE or REJECT ends the lease, and the records
//! after it under that lease are delivered again (a consumer that
//! acknowledges every record in order sees Kafka's behaviour).

use kafka_protocol::ResponseError;
use storage::{AckItem, AckStatus, PartitionId};

use super::config::ShareConfig;
use crate::broker::Broker;
use crate::groups::share::Held;

/// The acknowledgement types of KIP-932.
pub(crate) const GAP: i8 = 0;
/// The record was processed.
pub(crate) const ACCEPT: i8 = 1;
/// Deliver the record again.
pub(crate) const RELEASE: i8 = 2;
/// The record cannot be processed: dead-letter it.
pub(crate) const REJECT: i8 = 3;

/// The most offsets one acknowledgement batch may cover.
const MAX_BATCH_SPAN: i64 = 100_000;

/// One batch as the wire gives it: first and last offset, types.
pub(crate) type Batch<'a> = (i64, i64, &'a [i8]);

/// The (offset, type) pairs of a partition's batches, or `INVALID_REQUEST`:
/// an empty or reversed range, overlapping batches, a type list that is
/// neither one type nor one per offset, an unknown type.
pub(crate) fn expand(batches: &[Batch<'_>]) -> Result<Vec<(i64, i8)>, ResponseError> {
    let mut out: Vec<(i64, i8)> = Vec::new();
    for &(first, last, types) in batches {
        if first < 0 || last < first || last - first >= MAX_BATCH_SPAN {
            return Err(ResponseError::InvalidRequest);
        }
        if out.last().is_some_and(|(o, _)| *o >= first) {
            return Err(ResponseError::InvalidRequest);
        }
        let n = (last - first + 1) as usize;
        if types.len() != 1 && types.len() != n {
            return Err(ResponseError::InvalidRequest);
        }
        if types.iter().any(|t| !(GAP..=REJECT).contains(t)) {
            return Err(ResponseError::InvalidRequest);
        }
        for i in 0..n {
            let kind = if types.len() == 1 { types[0] } else { types[i] };
            out.push((first + i as i64, kind));
        }
    }
    Ok(out)
}

/// [`expand`] for one partition of a request, refused with the message
/// the client sees.
pub(crate) fn expand_partition(
    partition: i32,
    batches: &[Batch<'_>],
) -> Result<Vec<(i64, i8)>, super::Refusal> {
    expand(batches).map_err(|e| {
        (
            e,
            format!("invalid acknowledgement batches for partition {partition}"),
        )
    })
}

/// The native ack of a record acknowledged with `kind`.
fn item(partition_id: PartitionId, held: &Held, kind: i8, config: &ShareConfig) -> AckItem {
    let (status, error) = if kind == ACCEPT || kind == GAP {
        (AckStatus::Completed, None)
    } else if kind == REJECT {
        (
            AckStatus::Dlq,
            Some("rejected by a Kafka share consumer".to_owned()),
        )
    } else if kind == RELEASE && held.delivery < config.delivery_limit {
        (AckStatus::Retry, None)
    } else {
        // A RELEASE of a record on its last delivery archives it.
        (AckStatus::Dlq, Some(super::EXHAUSTED.to_owned()))
    };
    AckItem {
        transaction_id: held.transaction_id.clone(),
        partition_id,
        status,
        error,
        lease_id: Some(held.lease_id.clone()),
    }
}

/// Acknowledges `offsets` of a partition for `member`. Nothing is applied
/// when one of them is not held by the member (`INVALID_RECORD_STATE`);
/// a record whose lock ended meanwhile is refused the same way.
pub(crate) async fn acknowledge(
    broker: &Broker,
    group: &str,
    member: &str,
    partition_id: PartitionId,
    offsets: &[(i64, i8)],
    config: &ShareConfig,
) -> Result<(), ResponseError> {
    let share = &broker.groups.share;
    let records = share.with_member(group, member, |m, now| {
        m.acknowledgeable(partition_id, offsets, now)
    })?;
    let items: Vec<AckItem> = records
        .iter()
        .map(|(h, kind)| item(partition_id, h, *kind, config))
        .collect();
    let results = broker.engine.ack(group, items).await.map_err(|e| {
        tracing::warn!(group, error = %e, "kafka share group: acknowledging failed");
        ResponseError::UnknownServerError
    })?;
    let mut done = Vec::with_capacity(records.len());
    let mut ended = Vec::new();
    let mut refused = false;
    for ((h, _), r) in records.iter().zip(&results) {
        if r.success() {
            done.push(h.offset);
        } else {
            refused = true;
        }
        if r.lease_released && !ended.contains(&h.lease_id) {
            ended.push(h.lease_id.clone());
        }
    }
    // The member may have left meanwhile: then there is nothing to settle.
    let _ = share.with_member(group, member, |m, _| {
        m.settle(partition_id, &done, &ended);
        Ok(())
    });
    if refused {
        return Err(ResponseError::InvalidRecordState);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_expand_to_one_type_per_offset() {
        let batches: [Batch<'_>; 2] = [(0, 2, &[ACCEPT]), (4, 5, &[RELEASE, REJECT])];
        assert_eq!(
            expand(&batches),
            Ok(vec![(0, 1), (1, 1), (2, 1), (4, 2), (5, 3)])
        );
    }

    #[test]
    fn malformed_batches_are_invalid_requests() {
        let bad: [&[Batch<'_>]; 5] = [
            &[(3, 2, &[ACCEPT])],
            &[(0, 2, &[ACCEPT, ACCEPT])],
            &[(0, 0, &[9])],
            &[(0, 3, &[ACCEPT]), (3, 4, &[ACCEPT])],
            &[(-1, 0, &[ACCEPT])],
        ];
        for batches in bad {
            assert_eq!(
                expand(batches),
                Err(ResponseError::InvalidRequest),
                "{batches:?}"
            );
        }
    }
}
